//! The claims the mirrors reported: one moment's set, its counts per
//! root, the frozen copy `p` keeps, and the tallies (counts and hazards)
//! each root's mirror made.

use super::row_id::RowId;
use crate::claims::hazard::EVENTS_LOG_BROKEN;
use crate::claims::{ClaimState, Counts, Hazard, ItemRules, LocalIdentity, Status};
use crate::dashboard::action::RootProblem;
use crate::store::mirror::Tally;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The claims of one moment.
///
/// Each status is shared with the collector's mirror (`Arc`): the model
/// holds every row without a second copy of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimSet {
    pub by_row: HashMap<RowId, Arc<Status>>,
    /// The claims come from a store whose keys are not lockfiles (etcd):
    /// a claim's own hazards are judged by the store's rules.
    pub store_keys: bool,
}

impl ClaimSet {
    /// How the census judges the own hazards of row `id` here: as its
    /// place says (a mirror stamps it), a copy by its host's hazard list.
    pub fn rules_of(&self, id: &RowId) -> ItemRules {
        match id {
            RowId::Copy(_) => ItemRules::Copy,
            RowId::Claim(l) if l.rules() != ItemRules::Lockfile => l.rules(),
            // A row fed by hand over a store names no rules of its own.
            RowId::Claim(_) if self.store_keys => ItemRules::StoreKey,
            RowId::Claim(_) => ItemRules::Lockfile,
        }
    }

    pub fn get(&self, id: &RowId) -> Option<&Status> {
        self.by_row.get(id).map(|s| &**s)
    }

    /// The claim at `path` (a lockfile, or a store's key).
    pub fn get_path(&self, path: &Path) -> Option<&Status> {
        self.get(&RowId::claim(path))
    }

    /// Store (or drop, when free) the claim at `path`; true when it
    /// changed. The counts are the members' tallies, not the rows'.
    pub fn put(&mut self, path: &RowId, s: Arc<Status>) -> bool {
        if s.state == ClaimState::Free {
            return self.by_row.remove(path).is_some();
        }
        match self.by_row.get_mut(path) {
            Some(old) if **old == *s => false,
            Some(old) => {
                *old = s;
                true
            }
            None => {
                self.by_row.insert(path.clone(), s);
                true
            }
        }
    }

    pub fn len(&self) -> usize {
        self.by_row.len()
    }

    /// [`ClaimSet::put`], and the row's path (the set's own) when
    /// something changed.
    pub fn put_counted(&mut self, path: &RowId, s: Arc<Status>) -> Option<RowId> {
        if !self.put(path, s) {
            return None;
        }
        Some(
            self.by_row
                .get_key_value(path)
                .map_or_else(|| path.clone(), |(k, _)| k.clone()),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.by_row.is_empty()
    }
}

/// What the view showed when `p` was pressed.
#[derive(Debug, Clone)]
pub struct Frozen {
    pub claims: ClaimSet,
    /// Each root's counts and hazards as they were.
    pub tallies: Vec<Tally>,
    pub now: i64,
    /// Events with a larger sequence number arrived after the freeze.
    pub events_seq: u64,
    /// Claims changed since (each change once): what the view is missing.
    pub news: usize,
}

/// The claims part of the model: what the collectors' mirrors reported.
pub struct Claims {
    pub(super) identity: LocalIdentity,
    pub live: ClaimSet,
    /// Set while paused: what the view keeps showing.
    pub frozen: Option<Frozen>,
    /// Each root's (or the store's) counts and hazards, by root, as its
    /// mirror last tallied them: the one count `list` and `doctor` make.
    pub tallies: Vec<Tally>,
    /// Holder pids and their start times, as the mirror last knew them:
    /// what the selected claim's reason is worded by.
    pub pids: HashMap<i32, Option<i64>>,
    /// Why the root is not a normal one.
    pub problem: Option<RootProblem>,
    /// With several roots: each root's problem, by root (`problem` stays
    /// the first root's).
    pub problems: Vec<Option<RootProblem>>,
    /// By root: how many claims its first screen shows while its whole
    /// listing is still being read (a big root's head).
    pub partial: Vec<Option<usize>>,
}

impl Claims {
    pub(super) fn new(identity: LocalIdentity) -> Claims {
        Claims {
            identity,
            live: ClaimSet::default(),
            frozen: None,
            tallies: Vec::new(),
            pids: HashMap::new(),
            problem: None,
            problems: Vec::new(),
            partial: Vec::new(),
        }
    }

    /// While some root shows only its head: how many claims so far.
    pub fn listing_head(&self) -> Option<usize> {
        let heads: Vec<usize> = self.partial.iter().flatten().copied().collect();
        (!heads.is_empty()).then(|| heads.iter().sum())
    }

    pub fn identity(&self) -> &LocalIdentity {
        &self.identity
    }

    /// Take in pid facts; true when one moved.
    pub fn learn(&mut self, facts: &[(i32, Option<i64>)]) -> bool {
        let mut moved = false;
        for (pid, started) in facts {
            moved |= self.pids.insert(*pid, *started) != Some(*started);
        }
        moved
    }

    /// Root `i`'s tally is `t` now; true when it moved.
    pub fn set_tally(&mut self, i: usize, t: Tally) -> bool {
        if self.tallies.len() <= i {
            self.tallies.resize(i + 1, Tally::default());
        }
        let was = &self.tallies[i];
        // The mirror keeps an unchanged list as the same Arc: a compare of
        // the lists themselves only when it made a new one.
        let moved = was.counts != t.counts
            || (!Arc::ptr_eq(&was.hazards, &t.hazards) && was.hazards != t.hazards);
        self.tallies[i] = t;
        moved
    }

    /// The claims the view shows: the frozen ones while paused.
    pub fn shown(&self) -> &ClaimSet {
        self.frozen.as_ref().map_or(&self.live, |f| &f.claims)
    }

    /// The tallies the view shows: the frozen ones while paused.
    pub fn shown_tallies(&self) -> &[Tally] {
        self.frozen.as_ref().map_or(&self.tallies, |f| &f.tallies)
    }

    /// Every claim the shown tallies count, by state: the sum of each
    /// member's own count (counted once, by its mirror), the one `list`
    /// prints.
    pub fn counted(&self) -> Counts {
        let mut c = Counts::default();
        for t in self.shown_tallies() {
            c += t.counts;
        }
        c
    }

    /// Every hazard the mirrors count.
    pub fn hazard_count(&self) -> usize {
        self.shown_tallies().iter().map(|t| t.hazards.len()).sum()
    }

    /// Whether the events log is unappendable.
    pub fn events_log_broken(&self) -> bool {
        self.tallies
            .iter()
            .flat_map(|t| t.hazards.iter())
            .any(|h| h.kind == EVENTS_LOG_BROKEN)
    }

    /// The full hazard list, built on demand by the census `list` and
    /// `doctor` count through (the `h` list, `x`'s offer), most urgent
    /// kind first.
    pub fn hazards(&self) -> Vec<Hazard> {
        let mut out: Vec<Hazard> = self
            .shown_tallies()
            .iter()
            .flat_map(|t| t.hazards.iter().cloned())
            .collect();
        out.sort_by(|a, b| {
            (a.kind.rank().cmp(&b.kind.rank())).then_with(|| a.path().cmp(b.path()))
        });
        out
    }
}
