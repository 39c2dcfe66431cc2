//! The claims the mirrors reported: one moment's set, its counts per
//! root, the frozen copy `p` keeps, and the tallies (counts and hazards)
//! each root's mirror made.

use super::row_id::RowId;
use crate::claims::{ClaimState, ItemRules, LocalIdentity, Status};
use crate::store::mirror::Tally;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The claims of one moment.
///
/// Each status is shared with its lane's mirror (`Arc`): the model
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

/// The claims part of the model: what the lanes' mirrors reported.
pub struct Claims {
    pub(super) identity: LocalIdentity,
    pub live: ClaimSet,
    /// Set while paused: what the view keeps showing.
    pub frozen: Option<Frozen>,
    /// Holder pids and their start times, as the mirror last knew them:
    /// what the selected claim's reason is worded by.
    pub pids: HashMap<i32, Option<i64>>,
}

impl Claims {
    pub(super) fn new(identity: LocalIdentity) -> Claims {
        Claims {
            identity,
            live: ClaimSet::default(),
            frozen: None,
            pids: HashMap::new(),
        }
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

    /// The claims the view shows: the frozen ones while paused.
    pub fn shown(&self) -> &ClaimSet {
        self.frozen.as_ref().map_or(&self.live, |f| &f.claims)
    }
}
