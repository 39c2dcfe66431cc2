//! The mirror: one store's claims and hazards, classified, and kept current
//! from the store's change feed — the one incremental classifier every
//! face that follows a store reads (the dashboard, `metrics --listen`, the
//! publisher).
//!
//! - It starts from a listing ([`Mirror::list`]), takes the store's
//!   [`Change`]s ([`Mirror::apply`]) and re-reads the keys they name
//!   through the store's own verbs ([`Mirror::settle`]): it never opens a
//!   lockfile itself, so a file root and etcd are mirrored alike.
//! - Once a second ([`Mirror::tick`]) it judges again what time alone
//!   changes: a holder's pid gone (one `kill(pid, 0)` per distinct live
//!   pid, see [`judge`]), a TTL crossing the clock, a lease that should
//!   have run out, a mutex or temp file coming of age.
//! - A slow full re-list is the safety net for lost notifications, spaced
//!   by what a listing costs so it never takes more than a sliver of a core.
//! - Counts and hazards are one function of it ([`Mirror::tally`]): the
//!   same item and entry verdicts `list` and `doctor` use, each hazard
//!   counted once (a claim's by its row, an entry's by its latest look).
//!
//! What changed since a face last asked comes as a [`Delta`]: rows shared
//! (`Arc`), not copied, so a face that keeps every row costs no second copy.

mod apart;
mod clock;
mod follow;
pub mod judge;
mod listing;

use super::backend::Claims;
use super::{Change, Cursor, OriginIx, StoreError, Tenure};
use crate::claims::entry::Entry;
use crate::claims::root::RootProblem;
use crate::claims::{
    own_hazards, ClaimState, Classifier, Counts, Hazard, ItemRules, Loc, OwnHazards, Stamp, Status,
};
use judge::{Judge, PidFacts};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

/// The safety net's shortest spacing.
pub const RELIST_EVERY_MS: i64 = 60_000;
/// ...and how many times a listing's own cost it waits at least: a
/// listing of 100 000 lockfiles costs over a second of CPU, which once a
/// minute would be 2 % of a core; this keeps it under half a percent.
const RELIST_COST_FACTOR: i64 = 200;
/// Every this many safety nets one lists whatever the store's mark says:
/// a lockfile written in place, which moves no mark of its directory,
/// is found within this many nets even where no notification told of it.
pub const NET_LISTS_EVERY: u32 = 10;
/// Why a listing is owed.
#[derive(Debug, Clone, PartialEq)]
enum Due {
    /// The slow safety net's: the store's mark may stand in for it.
    Net,
    /// Something only a listing reads (a misnamed lockfile, an operator's
    /// ask, a listing that lost a claim): listed, no notice.
    Asked,
    /// The feed lost track, and says why (a notice for the face).
    Resync(String),
}

/// One row as a face receives it: shared with the mirror.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub path: Loc,
    /// State Free: the row is gone.
    pub status: Arc<Status>,
    /// What etcd adds (None on a file root).
    pub tenure: Option<Tenure>,
}

/// A store's counts and hazards at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub counts: Counts,
    /// Every hazard, each once, sorted by path.
    pub hazards: Arc<Vec<Hazard>>,
}

/// A listing that replaced every row.
#[derive(Debug, Clone, PartialEq)]
pub struct Whole {
    /// Why it was read again (None: the first, or the periodic re-read).
    pub resync: Option<String>,
    /// Only the first rows in key order (a big store's first screen); the
    /// whole listing follows.
    pub partial: bool,
    /// The store revision it was read at (etcd).
    pub revision: Option<i64>,
}

/// What changed since the last [`Mirror::take_delta`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Delta {
    /// Set when `rows` is every row: the face replaces what it had.
    pub whole: Option<Whole>,
    /// Rows that changed, as they are now (state Free: gone).
    pub rows: Vec<Row>,
    /// Pid facts learned or moved: the face words the claim it shows in
    /// full from them ([`judge::words_at`]).
    pub pids: PidFacts,
    /// The counts and hazards, when they moved.
    pub tally: Option<Tally>,
    /// What keeps a file root from being read as a normal one, when that
    /// moved (`Some(None)`: nothing any more).
    pub problem: Option<Option<RootProblem>>,
    /// The clock the mirror judged at, epoch ms.
    pub at: i64,
}

impl Delta {
    pub fn is_empty(&self) -> bool {
        self.whole.is_none()
            && self.rows.is_empty()
            && self.pids.is_empty()
            && self.tally.is_none()
            && self.problem.is_none()
    }
}

/// What the mirror owes its face.
#[derive(Default)]
struct Owed {
    whole: Option<Whole>,
    changed: HashSet<Loc>,
    /// Rows that went, with their keys.
    gone: Vec<(Loc, String)>,
    pids: PidFacts,
    problem: bool,
}

/// One store, mirrored. The store itself stays with the caller, who
/// hands it to each call that reads ([`Mirror::list`], [`Mirror::settle`]):
/// a face may own it, share it, or borrow it for as long as it mirrors.
pub struct Mirror {
    /// Judges claims by this machine's pids (a file root). None where the
    /// store's own verdict stands (leases: etcd judges its claims).
    judge: Option<Judge>,
    /// Keep each judged claim's reason in words. A face that words only
    /// the claim it shows in full ([`judge::words_at`]) keeps none: over
    /// 100 000 claims that is a tenth of what each row costs.
    words: bool,
    now: i64,
    /// The member its rows come from, stamped into each row's place.
    origin: u16,
    /// How its rows are judged: the census each one is counted by.
    rules: ItemRules,
    rows: HashMap<Loc, Arc<Status>>,
    tenures: HashMap<Loc, Tenure>,
    /// The stamp each row was listed at, where its store gives one (a
    /// lockfile's `lstat`): the next listing skips what has not changed
    /// since. 8 bytes a row, its key shared with the row's.
    stamps: HashMap<Loc, Stamp>,
    counts: Counts,
    /// The rows that are hazards by themselves, and how many hazards they
    /// are. Worded only when tallied: the tally's list is the one copy of
    /// the words (a kept copy as well was 45 bytes a claim over 100 000
    /// lockfiles, one in seven of them a hazard).
    row_hazards: BTreeSet<Loc>,
    row_hazard_count: usize,
    /// Entries that are not claims, by their latest look, with the hazard
    /// each is (worded when it became one).
    entries: HashMap<PathBuf, (Entry, Option<Hazard>)>,
    /// Young entries coming of age, soonest first.
    aging: BinaryHeap<Reverse<(i64, PathBuf)>>,
    /// The last listing's hazards that belong to no row and no entry (a
    /// claims dir that cannot be listed).
    listed: Vec<Hazard>,
    /// TTL edges (judged here) or lease ends (leased), soonest first.
    edges: BinaryHeap<Reverse<(i64, Loc)>>,
    /// A leased store's live claims held by processes of this machine: how
    /// many each pid holds. The tick asks each pid whether it is still
    /// there, and walks the rows only for one that has gone (100 000 rows
    /// a second was most of an idle dashboard's CPU; a map of every such
    /// row, 30 bytes a claim).
    local_live: HashMap<i32, u32>,
    /// Keys to read again, and those whose read failed (the store away).
    dirty: BTreeSet<String>,
    /// The keys a mirror of named keys follows (see `follow`); None: the
    /// whole store.
    followed: Option<BTreeSet<String>>,
    /// A listing is due, and why.
    relist: Option<Due>,
    /// The slow safety re-list runs (see [`Mirror::with_safety_net`]).
    safety_net: bool,
    /// The store's mark at the last listing, taken before it was read.
    mark: Option<Stamp>,
    /// Safety nets the mark stood in for since the last listing.
    nets_skipped: u32,
    revision: Option<i64>,
    resume: Option<Cursor>,
    problem: Option<RootProblem>,
    tally: Tally,
    tally_dirty: bool,
    owed: Owed,
    listed_at: i64,
    list_cost_ms: i64,
    /// Listings read since start (benches assert a change re-read one key).
    pub listings: u64,
    /// Safety nets the store's mark stood in for, since start.
    pub stood_in: u64,
    /// Keys read since start.
    pub reads: u64,
    /// Claims listings read since start; those they found unchanged and
    /// did not read are not among them.
    pub listed_reads: u64,
}

impl Mirror {
    /// A mirror of the member `origin`, whose rows are judged by `rules`,
    /// empty until [`Mirror::list`]. `judge` judges claims by this
    /// machine's pids, where the member's rows are judged so (a root's
    /// lockfiles); a store's keys and a host's copies keep the verdict they
    /// are read with.
    pub fn new(origin: OriginIx, rules: ItemRules, judge: Option<Judge>, now: i64) -> Mirror {
        let judge = match rules {
            ItemRules::Lockfile => judge,
            ItemRules::StoreKey | ItemRules::Copy => None,
        };
        Mirror {
            judge,
            words: true,
            now,
            origin: origin.0,
            rules,
            rows: HashMap::new(),
            tenures: HashMap::new(),
            stamps: HashMap::new(),
            counts: Counts::default(),
            row_hazards: BTreeSet::new(),
            row_hazard_count: 0,
            entries: HashMap::new(),
            aging: BinaryHeap::new(),
            listed: Vec::new(),
            edges: BinaryHeap::new(),
            local_live: HashMap::new(),
            dirty: BTreeSet::new(),
            followed: None,
            relist: None,
            safety_net: true,
            mark: None,
            nets_skipped: 0,
            revision: None,
            resume: None,
            problem: None,
            tally: Tally::default(),
            tally_dirty: true,
            owed: Owed::default(),
            listed_at: now,
            list_cost_ms: 0,
            listings: 0,
            stood_in: 0,
            reads: 0,
            listed_reads: 0,
        }
    }

    /// The same mirror keeping no reasons in words for the claims it
    /// judges (their state, locality and record stay; an unreadable or
    /// corrupted file keeps its words, which no clock changes).
    pub fn wordless(self) -> Mirror {
        Mirror {
            words: self.judge.is_none(),
            ..self
        }
    }

    /// The same mirror with its slow safety re-list on (as made) or off:
    /// off, what its feed says is all it learns, so a lost notification
    /// stays lost (a test that proves none is lost turns it off).
    pub fn with_safety_net(self, on: bool) -> Mirror {
        Mirror {
            safety_net: on,
            ..self
        }
    }

    /// A status as the mirror keeps it.
    fn keep(&self, s: &mut Status) {
        if !self.words && s.record.is_some() {
            s.why = String::new();
        } else {
            // Worded into a buffer sized for the longest reason; a row is
            // kept for as long as the claim lasts.
            s.why.shrink_to_fit();
        }
    }

    pub fn now(&self) -> i64 {
        self.now
    }

    /// The revision the mirror is complete at (etcd's last listing).
    pub fn revision(&self) -> Option<i64> {
        self.revision
    }

    /// Where a feed resumes so that nothing after the last listing is
    /// missed (None: from now).
    pub fn resume_at(&self) -> Option<&Cursor> {
        self.resume.as_ref()
    }

    /// A classifier at `now` that knows what the judge knows (a fresh one
    /// where the store judges its own rows).
    fn classifier(&self, now: i64) -> Classifier {
        match &self.judge {
            Some(j) => j.classifier(now),
            None => Classifier::new(now),
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Every row, in no order.
    pub fn rows(&self) -> impl Iterator<Item = &Status> + '_ {
        self.rows.values().map(|s| &**s)
    }

    /// The row at `path` and its tenure.
    pub fn row(&self, path: &Loc) -> Option<(&Status, Option<&Tenure>)> {
        let s = self.rows.get(path)?;
        Some((s, self.tenures.get(path)))
    }

    pub fn problem(&self) -> Option<&RootProblem> {
        self.problem.as_ref()
    }

    /// List everything again at the next [`Mirror::settle`], keeping what
    /// the feed said of the entries (a repair under the root, which the
    /// feed reports entry by entry). A mirror of named keys reads its keys
    /// again instead: it never lists.
    pub fn relist_soon(&mut self) {
        match self.followed {
            Some(_) => self.reread_followed(),
            None => self.owe(Due::Asked),
        }
    }

    /// The safety net is due: list at the next [`Mirror::settle`], unless
    /// the store's mark says no claim was made, replaced or removed since
    /// the last listing (see [`Claims::mark`]). A mirror of named keys
    /// reads its keys again.
    pub fn net_soon(&mut self) {
        match self.followed {
            Some(_) => self.reread_followed(),
            None => self.owe(Due::Net),
        }
    }

    /// Owe a listing for `due`: a resync's reason replaces any other, any
    /// reason outranks the net's, and one owed already stands.
    fn owe(&mut self, due: Due) {
        let stands = match (&self.relist, &due) {
            (None, _) | (_, Due::Resync(_)) => false,
            (Some(_), Due::Net) => true,
            (Some(was), Due::Asked) => matches!(was, Due::Resync(_)),
        };
        if !stands {
            self.relist = Some(due);
        }
    }

    /// Some listing is owed (a resync, a misnamed lockfile, the safety net).
    pub fn wants_listing(&self) -> bool {
        self.relist.is_some()
    }

    /// Keys named but not read yet (the store stopped answering).
    pub fn has_unread(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Put `s` at `path` (a new row, or one replacing its old self).
    /// `edge`: note when time changes it (not for a row judged again on
    /// the edges already noted).
    fn insert(&mut self, path: Loc, s: Arc<Status>, tenure: Option<Tenure>, edge: bool) {
        self.count(&path, &s, true);
        if edge {
            self.expect_edge(&path, &s, tenure.as_ref());
        }
        match tenure {
            Some(t) => self.tenures.insert(path.clone(), t),
            None => self.tenures.remove(&path),
        };
        if self.owed.whole.is_none() {
            self.owed.changed.insert(path.clone());
        }
        self.rows.insert(path, s);
    }

    /// Count `s` in (or out of) the tally: its state and its own hazards,
    /// by the same item verdicts `list` uses.
    fn count(&mut self, path: &Loc, s: &Status, add: bool) {
        self.note_local_live(s, add);
        let own = OwnHazards::of(s, self.rules()).len();
        if add {
            self.counts.add(s.state);
            if own > 0 && self.row_hazards.insert(path.clone()) {
                self.row_hazard_count += own;
            }
        } else {
            self.counts.remove(s.state);
            if self.row_hazards.remove(path) {
                self.row_hazard_count -= own;
            }
        }
        self.tally_dirty = true;
    }

    /// One census for every face: a root's lockfiles, a store's keys
    /// (judged by its layout and its leases), a host's copies (whose
    /// hazards are their host's).
    fn rules(&self) -> ItemRules {
        self.rules
    }

    /// Replace the row at `s.file` with `s` (drop it when free).
    fn put(&mut self, mut s: Status, tenure: Option<Tenure>) -> bool {
        // The row's key and its status share one place.
        s.file = s.file.stamped(self.origin, self.rules());
        let path: Loc = match self.rows.get_key_value(&s.file) {
            Some((k, _)) => {
                s.file = k.clone();
                k.clone()
            }
            None => s.file.clone(),
        };
        if let Some(old) = self.rows.get(&path) {
            if **old == s && self.tenures.get(&path) == tenure.as_ref() {
                return false;
            }
        }
        if let Some(old) = self.rows.remove(&path) {
            self.count(&path, &old, false);
            self.tenures.remove(&path);
            // Read through the verb, unstamped: the next listing reads it.
            self.stamps.remove(&path);
        }
        if s.state == ClaimState::Free {
            self.owed.changed.remove(&path);
            self.owed.gone.push((path, s.key));
            return true;
        }
        self.insert(path, Arc::new(s), tenure, true);
        true
    }

    /// Take one change in. Changes the mirror does not keep (a store's ups
    /// and downs, its hosts) are handed back for the face.
    pub fn apply(&mut self, change: Change) -> Option<Change> {
        if self.followed.is_some() {
            return self.apply_followed(change);
        }
        match change {
            Change::Claim { key } => {
                self.dirty.insert(key);
                None
            }
            // Only a listing reads a file whose name is not its key's.
            Change::Relist { why: None } => {
                self.owe(Due::Asked);
                None
            }
            Change::Entry { path, entry } => {
                self.listed.retain(|h| h.path() != path);
                match entry {
                    Some(e) => self.look(path, e),
                    None => {
                        self.entries.remove(&path);
                    }
                }
                self.tally_dirty = true;
                None
            }
            Change::Relist { why: Some(why) } => {
                // The feed says what the entries are now, right after.
                self.entries.clear();
                self.aging.clear();
                self.tally_dirty = true;
                self.owe(Due::Resync(why));
                None
            }
            other => Some(other),
        }
    }

    /// Keep a look at an entry, with the hazard it is now.
    fn look(&mut self, path: PathBuf, e: Entry) {
        let hazard = e.hazard_at(&path, self.now);
        // Coming of age may make a hazard of it, or change the one it is.
        if let Some(at) = e.comes_of_age().filter(|at| *at > self.now) {
            self.aging.push(Reverse((at, path.clone())));
        }
        self.entries.insert(path, (e, hazard));
    }

    /// Read what the changes named (a listing instead, when one is owed).
    /// A failed read leaves its keys named for the next round.
    pub fn settle(&mut self, store: &dyn Claims, now: i64) -> Result<(), StoreError> {
        self.now = now;
        if let Some(due) = self.relist.take() {
            if due == Due::Net && self.net_stands_in(store) {
                self.listed_at = now;
                self.stood_in += 1;
                return Ok(());
            }
            let resync = match due {
                Due::Resync(why) => Some(why),
                Due::Net | Due::Asked => None,
            };
            return self
                .list(store, now, resync)
                .inspect_err(|_| self.owe(Due::Asked));
        }
        if self.dirty.is_empty() {
            // Nothing named: an idle round makes no classifier.
            return Ok(());
        }
        let keys = std::mem::take(&mut self.dirty);
        let mut keys = keys.into_iter();
        let mut c = self.classifier(now);
        let mut failed = None;
        for key in keys.by_ref() {
            // Judged once, with what the judge knows of its pids.
            match store.status(&key, &mut c) {
                Ok(f) => {
                    self.reads += 1;
                    let mut s = f.outcome;
                    self.keep(&mut s);
                    self.put(s, f.tenure);
                }
                Err(e) => {
                    // The store stopped answering: no timeout per key.
                    self.dirty.insert(key);
                    failed = Some(e);
                    break;
                }
            }
        }
        self.dirty.extend(keys);
        if let Some(j) = self.judge.as_mut() {
            let learned = j.learn(&c, now);
            self.owed.pids.extend(learned);
        }
        failed.map_or(Ok(()), Err)
    }

    /// The counts and hazards now: one function over the mirror.
    pub fn tally(&mut self) -> Tally {
        if !std::mem::take(&mut self.tally_dirty) {
            return self.tally.clone();
        }
        let mut hazards: Vec<Hazard> = Vec::with_capacity(
            self.listed.len()
                + self.entries.values().filter(|(_, h)| h.is_some()).count()
                + self.row_hazard_count,
        );
        hazards.extend(self.listed.iter().cloned());
        hazards.extend(self.entries.values().filter_map(|(_, h)| h.clone()));
        let rules = self.rules();
        for path in &self.row_hazards {
            if let Some(s) = self.rows.get(path) {
                own_hazards(s, rules, &mut hazards);
            }
        }
        // A sweep sorts by path, stably: one path's hazards keep their order.
        hazards.sort_by(|a, b| a.path().cmp(b.path()));
        // The same list stays the same Arc, so whether it moved is a
        // pointer's compare for everyone after (a root with 15 000 hazards
        // compared them all each second).
        if *self.tally.hazards != hazards {
            self.tally.hazards = Arc::new(hazards);
        }
        self.tally.counts = self.counts;
        self.tally.clone()
    }

    /// What changed since the last call, or None.
    pub fn take_delta(&mut self) -> Option<Delta> {
        let before = self.tally.clone();
        let tally = self.tally();
        let owed = std::mem::take(&mut self.owed);
        let moved = tally.counts != before.counts || !Arc::ptr_eq(&tally.hazards, &before.hazards);
        let mut d = Delta {
            tally: (moved || owed.whole.is_some()).then_some(tally),
            pids: owed.pids,
            problem: owed.problem.then(|| self.problem.clone()),
            at: self.now,
            ..Delta::default()
        };
        match owed.whole {
            Some(whole) => {
                d.rows = self
                    .rows
                    .iter()
                    .map(|(p, s)| Row {
                        path: p.clone(),
                        status: Arc::clone(s),
                        tenure: self.tenures.get(p).copied(),
                    })
                    .collect();
                d.whole = Some(whole);
            }
            None => {
                for path in owed.changed {
                    if let Some(s) = self.rows.get(&path) {
                        d.rows.push(Row {
                            status: Arc::clone(s),
                            tenure: self.tenures.get(&path).copied(),
                            path,
                        });
                    }
                }
                for (path, key) in owed.gone {
                    if self.rows.contains_key(&path) {
                        continue;
                    }
                    let gone = Status::free(key, path.clone(), String::new());
                    d.rows.push(Row {
                        path,
                        status: Arc::new(gone),
                        tenure: None,
                    });
                }
            }
        }
        (!d.is_empty()).then_some(d)
    }
}

/// `s` as a row keeps it: a copy of its own, sharing `path` (the row's
/// key, the same place).
fn fresh(s: &Status, path: Loc) -> Status {
    let mut f = s.clone();
    f.file = path;
    f
}

#[cfg(test)]
mod tests;
