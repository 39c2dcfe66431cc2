//! A listing taken into the mirror: every row replaced (a row found
//! unchanged keeps its shared status), the claims stamped with the
//! member's origin, the hazards that belong to no row kept apart.

use super::apart;
use super::judge::rejudge;
use super::{fresh, Due, Mirror, Owed, Whole, NET_LISTS_EVERY};
use crate::claims::root::RootProblem;
use crate::claims::{Classifier, Counts, Hazard, Loc};
use crate::claims::{Stamp, Status};
use crate::store::backend::{list_head, list_whole_held, Claims, MemberListing};
use crate::store::{Cursor, StoreError, Tenure};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

impl Mirror {
    /// List everything and replace every row (the first listing, a resync,
    /// the safety net). `resync` says why, for a face's notice.
    pub fn list(
        &mut self,
        store: &dyn Claims,
        now: i64,
        resync: Option<String>,
    ) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        let mark = store.mark();
        let mut c = self.classifier(now);
        let held = |p: &Path| self.stamp_of(p);
        let listing = list_whole_held(store, &mut c, Some(&held), &mut |_| {})?;
        self.took(listing, c, started, store, now, resync);
        self.marked(mark);
        Ok(())
    }

    /// [`Mirror::list`], the listing read on a thread of its own, so that
    /// none of it lies among the rows kept (see `apart`).
    pub fn list_apart(
        &mut self,
        store: &dyn Claims,
        now: i64,
        resync: Option<String>,
    ) -> Result<(), StoreError> {
        self.list_apart_paged(store, now, resync, &mut |_| {})
    }

    /// [`Mirror::list_apart`], each page shown to `on_page` (on the
    /// listing's thread) as it comes: a first screen that fills in while
    /// the rest is read.
    pub fn list_apart_paged(
        &mut self,
        store: &dyn Claims,
        now: i64,
        resync: Option<String>,
        on_page: &mut (dyn FnMut(&MemberListing) + Send),
    ) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        let mark = store.mark();
        let held = |p: &Path| self.stamp_of(p);
        let (listing, c) = apart::read(store, self.classifier(now), Some(&held), on_page);
        self.took(listing?, c, started, store, now, resync);
        self.marked(mark);
        Ok(())
    }

    /// A listing was taken whole, `mark` the store's mark before it was
    /// read: a change during the listing moved the mark after it.
    fn marked(&mut self, mark: Option<Stamp>) {
        self.mark = mark;
        self.nets_skipped = 0;
    }

    /// The safety net may stand on the store's mark rather than list: it
    /// is as it was before the last listing was read, so that listing
    /// names every claim there is now (and none of them moved by rename).
    /// Every [`NET_LISTS_EVERY`]th net lists all the same.
    pub(super) fn net_stands_in(&mut self, store: &dyn Claims) -> bool {
        if self.nets_skipped + 1 >= NET_LISTS_EVERY {
            return false;
        }
        let stands = self.mark.is_some() && store.mark() == self.mark;
        self.nets_skipped += stands as u32;
        stands
    }

    /// The stamp the row at `place` was listed at: a listing skips the
    /// claim when its store finds it unchanged since (and stamps every
    /// claim it reads, the first listing's too).
    fn stamp_of(&self, place: &Path) -> Option<Stamp> {
        let loc = Loc::new(self.origin, self.rules(), place);
        self.stamps.get(&loc).copied()
    }

    /// Take in a whole listing, read since `started`.
    fn took(
        &mut self,
        listing: MemberListing,
        c: Classifier,
        started: std::time::Instant,
        store: &dyn Claims,
        now: i64,
        resync: Option<String>,
    ) {
        self.list_cost_ms = started.elapsed().as_millis() as i64;
        self.listings += 1;
        self.relist = None;
        self.dirty.clear();
        let problem = store.problem();
        self.listed_at = now;
        // The safety net over an idle root: every lockfile found unchanged
        // by its stamp, none gone, none new. The rows stand as they are, so
        // nothing is rebuilt and no face is handed every row to compare
        // (at 2 000 claims that was most of what a publisher's idle minute
        // cost); a listing asked for a reason is still taken whole.
        if resync.is_none() && self.unchanged_by(&listing, now, problem.as_ref()) {
            return;
        }
        self.take_listing(listing, c, now, resync, false, problem);
    }

    /// Take in `listing` without rebuilding anything when it found every
    /// row unchanged (read none, kept exactly the rows there are): the
    /// rows a TTL edge passed are judged again, the hazards that belong to
    /// no row and the root's problem updated. False (nothing done)
    /// otherwise: the listing is to be taken whole.
    fn unchanged_by(
        &mut self,
        listing: &MemberListing,
        now: i64,
        problem: Option<&RootProblem>,
    ) -> bool {
        let all_kept = self.judge.is_some()
            && listing.sweep.claims.is_empty()
            && listing.tenures.is_empty()
            && listing.end.at.is_none()
            && !listing.kept.is_empty()
            && listing.kept.len() == self.rows.len()
            && listing.kept.iter().all(|place| {
                self.rows
                    .contains_key(&Loc::new(self.origin, self.rules(), place))
            });
        if !all_kept {
            return false;
        }
        self.now = now;
        let due = self.pop_due(now);
        self.rejudge(due, now);
        let listed = self.apart_hazards(&listing.sweep.hazards);
        if listed != self.listed {
            self.listed = listed;
            self.tally_dirty = true;
        }
        if problem != self.problem.as_ref() {
            self.problem = problem.cloned();
            self.owed.problem = true;
        }
        true
    }

    /// The hazards of a listing that belong to no row and no entry (a
    /// claims dir that cannot be listed).
    fn apart_hazards(&self, hazards: &[Hazard]) -> Vec<Hazard> {
        let rules = self.rules();
        let mut listed: Vec<Hazard> = hazards
            .iter()
            .filter(|h| {
                !self
                    .rows
                    .contains_key(&Loc::new(self.origin, rules, h.path()))
            })
            .filter(|h| !self.entries.contains_key(h.path()))
            .cloned()
            .collect();
        listed.shrink_to_fit();
        listed
    }

    /// The first `n` rows in key order, where the store can list them
    /// sooner than everything (a big store's first screen): true when it
    /// could. The full listing must follow.
    pub fn list_head(
        &mut self,
        store: &dyn Claims,
        n: usize,
        now: i64,
    ) -> Result<bool, StoreError> {
        let mut c = self.classifier(now);
        match list_head(store, n, &mut c)? {
            Some(head) => {
                let problem = store.problem();
                self.take_listing(head, c, now, None, true, problem);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Take a listing in, judged once: with `c`, the classifier the
    /// backend judged it with, whose pid facts the judge keeps.
    fn take_listing(
        &mut self,
        listing: MemberListing,
        c: Classifier,
        now: i64,
        resync: Option<String>,
        partial: bool,
        problem: Option<RootProblem>,
    ) {
        self.now = now;
        let MemberListing {
            sweep,
            tenures,
            end,
            stamps,
            kept,
            ..
        } = listing;
        // A cursor that is one number is the store's revision, which a
        // header shows and a re-list's notice names.
        let revision = end.at.as_ref().and_then(Cursor::as_u64).map(|r| r as i64);
        self.revision = revision.or(self.revision);
        if end.at.is_some() {
            self.resume = end.at;
        }
        // A row a listing finds unchanged keeps its shared status: the face
        // holding it keeps one copy, and the listing's is freed at once.
        let mut old = std::mem::take(&mut self.rows);
        // Kept only where a row the listing did not read needs them.
        let mut old_tenures = match kept.is_empty() {
            true => {
                self.tenures.clear();
                HashMap::new()
            }
            false => std::mem::take(&mut self.tenures),
        };
        self.row_hazards.clear();
        self.row_hazard_count = 0;
        self.edges.clear();
        self.local_live.clear();
        self.counts = Counts::default();
        self.owed = Owed {
            whole: Some(Whole {
                resync,
                partial,
                revision,
            }),
            problem: self.owed.problem,
            ..Owed::default()
        };
        let rules = self.rules();
        // The pids the rows name: what the judge keeps facts of.
        let mut named: HashSet<i32> = HashSet::new();
        let mut tenures = tenures.into_iter();
        let mut claims = sweep.claims;
        let mut stamps = stamps.into_iter();
        self.listed_reads += claims.len() as u64;
        self.rows.reserve(claims.len() + kept.len());
        // What the listing found unchanged keeps its row, judged again.
        let mut c = c;
        let lost = !self.keep_unchanged(kept, &mut old, &mut old_tenures, &mut c);
        for r in self.rows.values().filter_map(|s| s.record.as_ref()) {
            named.insert(r.pid);
        }
        // The listing's own values are freed on another thread (`apart`).
        let mut spent = apart::Freer::start();
        // Taken from the back, the vector shrunk as it empties: its buffer
        // and the rows are never both at full size (a big listing's peak).
        while let Some(mut s) = claims.pop() {
            let tenure = tenures.next_back().flatten();
            let stamp = stamps.next_back().flatten();
            if let Some(r) = &s.record {
                named.insert(r.pid);
            }
            // Words the row does not keep are set aside, not freed here.
            let unkept = (!self.words && s.record.is_some()).then(|| std::mem::take(&mut s.why));
            // A fresh copy, not the listing's own: the listing's strings lie
            // among its buffers and its discarded words, and the pages they
            // held go back whole to the system once freed; the copies lie
            // together, sized exactly. The row's key is its status's own
            // path, so each path is kept once.
            s.file = s.file.stamped(self.origin, rules);
            let (path, shared) = match old.remove_entry(&s.file) {
                Some((p, was)) if *was == s => (p, was),
                Some((p, _)) => (p.clone(), Arc::new(fresh(&s, p))),
                None => {
                    let p = s.file.fresh();
                    (p.clone(), Arc::new(fresh(&s, p)))
                }
            };
            match stamp {
                Some(st) => self.stamps.insert(path.clone(), st),
                None => self.stamps.remove(&path),
            };
            self.insert(path, shared, tenure, true);
            if let Some(why) = unkept {
                s.why = why;
            }
            spent.free(s);
            if claims.capacity() > 1024 && claims.len() < claims.capacity() / 2 {
                claims.shrink_to_fit();
            }
        }
        spent.finish();
        if lost {
            // Named unchanged, yet not held: list again soon, every claim
            // read.
            self.stamps.clear();
            self.owe(Due::Asked);
        }
        // The stamps of rows gone with this listing go too.
        let rows = &self.rows;
        self.stamps.retain(|p, _| rows.contains_key(p));
        if let Some(j) = self.judge.as_mut() {
            // The listing names the pids that matter now.
            self.owed.pids = j.relearn(&c, |pid| named.contains(&pid), now);
        }
        self.edges.shrink_to_fit();
        // A claim's hazards are its row's; an entry's, its latest look's.
        self.listed = self.apart_hazards(&sweep.hazards);
        apart::free(sweep.hazards);
        if problem != self.problem {
            self.problem = problem;
            self.owed.problem = true;
        }
        self.tally_dirty = true;
    }

    /// Put back the rows of `kept` (places a listing found unchanged since
    /// they were stamped; their stamps stay), each judged again with `c` where time or a pid
    /// moved its state; false when one is not among the `old` rows.
    fn keep_unchanged(
        &mut self,
        kept: Vec<PathBuf>,
        old: &mut HashMap<Loc, Arc<Status>>,
        old_tenures: &mut HashMap<Loc, Tenure>,
        c: &mut Classifier,
    ) -> bool {
        let mut all = true;
        for place in kept {
            let loc = Loc::new(self.origin, self.rules(), &place);
            let Some((path, mut shared)) = old.remove_entry(&loc) else {
                all = false;
                continue;
            };
            // Time and pids may have moved its state since it was judged;
            // a row whose state stands is shared on, not copied.
            let moved = match (&self.judge, &shared.record) {
                (Some(_), Some(rec)) => {
                    let (state, locality) = c.state(rec);
                    state != shared.state || Some(locality) != shared.locality
                }
                _ => false,
            };
            if moved {
                let mut next = (*shared).clone();
                rejudge(c, &mut next);
                self.keep(&mut next);
                shared = Arc::new(next);
            }
            // Its stamp stays as it is.
            let tenure = old_tenures.remove(&path);
            self.insert(path, shared, tenure, true);
        }
        all
    }
}
