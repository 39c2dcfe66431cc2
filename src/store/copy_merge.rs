//! A fleet's copies put in `list --json`'s order while they are read.
//!
//! Each root of each host is one lane: its copies come from the store in
//! the order of their stored names (`claims/<encoded-key>`), a page at a
//! time. That is not always the document's order within the lane (key,
//! host, root: [`super::fleet::list_order`]): an escaped byte is written
//! `%XX`, which sorts before every byte written as it is (`a/1` is
//! `a%2F1`, before `a-b`, though `a-b` comes first as a key). So a lane
//! first names every key it holds (the names alone, a tenth of the
//! bytes): from then on the lowest key it has not handed over yet is
//! known, and no copy of it can go before that ([`Merge::arrive`]).
//!
//! Every copy read goes into one heap; the lowest goes out as soon as no
//! lane can still bring a lower one (a k-way merge whose lanes may hand
//! their copies over out of order). The first claim goes out once every
//! lane has named its keys and handed over its first copies, not after
//! the last page; what is held is what was read and not yet written.
//!
//! The order is the one a stable sort of every copy gives (the copies
//! kept as their bytes first, then the parsed ones, each host after the
//! host before in the order found, each root's in the order read): the
//! same bytes as [`super::fleet::FleetState::into_listed`]. A copy whose
//! `"key"` is not the key its name encodes (no publisher writes one) is
//! put in its place while that place is still to come, and written at
//! once after it otherwise.

use super::fleet::{FleetItem, FleetRest, PublishedRoot};
use super::raw_copy::{CopyRoot, ListCopy, RawCopy};
use super::StoreError;
use crate::claims::census::count_copies;
use crate::claims::Counts;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::Arc;

/// One stored copy as `list --json` writes it: kept as its bytes where
/// they print as they stand, parsed otherwise; None when it is not JSON
/// (left out, as a whole reading leaves it out).
pub fn list_copy(
    root: &Arc<CopyRoot>,
    hostname: &str,
    published: &PublishedRoot,
    bytes: Vec<u8>,
) -> Option<ListCopy> {
    match RawCopy::of(root, bytes) {
        Ok(raw) => Some(ListCopy::Raw(raw)),
        Err(bytes) => {
            let item = serde_json::from_slice(&bytes).ok()?;
            Some(ListCopy::of_item(FleetItem {
                host_id: root.host_id.clone(),
                hostname: hostname.to_string(),
                root: published.clone(),
                item,
            }))
        }
    }
}

/// A place in the document: key, host id, root id, as bytes.
pub type Place<'a> = (&'a [u8], &'a [u8], &'a [u8]);

/// A fleet's copies for `list --json`, merged while a store reads them.
pub trait CopyFeed: Send {
    /// Whether any host publishes into the store (once every host is
    /// found): without one, the document is the store's alone.
    fn any_hosts(&mut self) -> Result<bool, StoreError>;

    /// The next copy if it goes before a store's own claim at `before`
    /// (with none, the next at all); None when the claim goes first (or
    /// every copy is out). Waits while a lane may still bring one.
    fn next_before(&mut self, before: Option<Place<'_>>) -> Result<Option<ListCopy>, StoreError>;

    /// What the fleet adds after the claims (its counts, hazards, last
    /// known copies and hosts), once every copy is out.
    fn finish(&mut self) -> Result<FleetRest, StoreError>;
}

/// One copy read, with what breaks ties as the whole sort breaks them.
#[derive(Debug)]
struct Held {
    copy: ListCopy,
    lane: usize,
    /// Parsed copies follow those kept as their bytes among equals.
    parsed: bool,
    /// Its host's place among the hosts found, its root's among the
    /// host's roots, its own among the lane's names.
    at: (usize, usize, usize),
}

impl Held {
    fn key(&self) -> (Place<'_>, bool, (usize, usize, usize)) {
        (self.copy.order_bytes(), self.parsed, self.at)
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Held {}

impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Held {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// One root of one host.
#[derive(Debug)]
struct Lane {
    host_id: String,
    root_id: String,
    host_ix: usize,
    root_ix: usize,
    /// Every key its names decode to, lowest first, each with its place
    /// among the names; None until named.
    keys: Option<Vec<(String, usize)>>,
    arrived: Vec<bool>,
    /// The first of `keys` not handed over yet.
    next: usize,
    /// Copies of this lane in the heap.
    held: usize,
    done: bool,
}

impl Lane {
    /// The lowest place this lane may still bring: None when it can bring
    /// none; Some(None) when it has not named its keys yet (any place).
    fn lowest(&self) -> Option<Option<Place<'_>>> {
        if self.done {
            return None;
        }
        let Some(keys) = &self.keys else {
            return Some(None);
        };
        let (key, _) = keys.get(self.next)?;
        Some(Some((
            key.as_bytes(),
            self.host_id.as_bytes(),
            self.root_id.as_bytes(),
        )))
    }
}

/// What [`Merge::next_before`] found.
#[derive(Debug)]
pub enum Next {
    /// The next copy in the document.
    Copy(ListCopy),
    /// What was asked about goes first (or, asked about nothing, every
    /// copy is out).
    Passed,
    /// A lane still being read may bring a copy that goes first.
    Wait,
}

/// The copies of every lane, merged.
#[derive(Debug, Default)]
pub struct Merge {
    lanes: Vec<Lane>,
    heap: BinaryHeap<Reverse<Held>>,
    /// Whether every lane is known (every host found).
    all_lanes: bool,
    /// The copies' states, counted as an online host's.
    counts: Counts,
}

impl Merge {
    /// A lane for root `root_ix` of host `host_ix` (in the order found).
    pub fn add_lane(
        &mut self,
        host_id: &str,
        root_id: &str,
        host_ix: usize,
        root_ix: usize,
    ) -> usize {
        self.lanes.push(Lane {
            host_id: host_id.to_string(),
            root_id: root_id.to_string(),
            host_ix,
            root_ix,
            keys: None,
            arrived: Vec::new(),
            next: 0,
            held: 0,
            done: false,
        });
        self.lanes.len() - 1
    }

    /// No lane will be added.
    pub fn all_lanes(&mut self) {
        self.all_lanes = true;
    }

    /// The keys lane `lane`'s names decode to, in the order of the names
    /// (the order its copies will come in).
    pub fn name(&mut self, lane: usize, keys: Vec<String>) {
        let Some(l) = self.lanes.get_mut(lane) else {
            return;
        };
        let n = keys.len();
        let mut sorted: Vec<(String, usize)> = keys.into_iter().zip(0..).collect();
        // Stable: one key named twice keeps the order of its names.
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        l.keys = Some(sorted);
        l.arrived = vec![false; n];
        l.next = 0;
    }

    /// The `at`th name of `lane` came: its copy, or None when its value
    /// is no copy (not JSON: left out).
    pub fn arrive(&mut self, lane: usize, at: usize, copy: Option<ListCopy>) {
        let Some(l) = self.lanes.get_mut(lane) else {
            return;
        };
        if let Some(seen) = l.arrived.get_mut(at) {
            *seen = true;
        }
        if let Some(keys) = &l.keys {
            while keys.get(l.next).is_some_and(|(_, i)| l.arrived[*i]) {
                l.next += 1;
            }
        }
        let Some(copy) = copy else {
            return;
        };
        self.counts += count_copies(std::iter::once(copy.state()), true);
        l.held += 1;
        let parsed = matches!(copy, ListCopy::Json(..));
        let at = (l.host_ix, l.root_ix, at);
        self.heap.push(Reverse(Held {
            copy,
            lane,
            parsed,
            at,
        }));
    }

    /// `lane` brings nothing more.
    pub fn lane_done(&mut self, lane: usize) {
        if let Some(l) = self.lanes.get_mut(lane) {
            l.done = true;
        }
    }

    /// The lowest place a lane may still bring, by lane (None: none can
    /// bring any; Some(None): one may bring any).
    fn lowest_pending(&self) -> Option<Option<Place<'_>>> {
        let mut low: Option<Place<'_>> = None;
        for l in &self.lanes {
            match l.lowest() {
                None => {}
                Some(None) => return Some(None),
                Some(Some(p)) => low = Some(low.map_or(p, |q| q.min(p))),
            }
        }
        low.map(Some)
    }

    /// The next copy if it goes before a store's own claim at `before`
    /// (a copy at the same place goes after it); with no `before`, the
    /// next copy at all.
    pub fn next_before(&mut self, before: Option<Place<'_>>) -> Next {
        if !self.all_lanes {
            return Next::Wait;
        }
        let pending = self.lowest_pending();
        if let Some(Reverse(top)) = self.heap.peek() {
            let place = top.copy.order_bytes();
            if before.is_none_or(|b| place < b) {
                // Strictly below every lane's lowest: a copy of the same
                // place still to come may go first (kept as bytes).
                let safe = match pending {
                    None => true,
                    Some(None) => false,
                    Some(Some(low)) => low > place,
                };
                if !safe {
                    return Next::Wait;
                }
                let Some(Reverse(held)) = self.heap.pop() else {
                    return Next::Wait;
                };
                if let Some(l) = self.lanes.get_mut(held.lane) {
                    l.held = l.held.saturating_sub(1);
                }
                return Next::Copy(held.copy);
            }
        }
        match (pending, before) {
            (None, _) => Next::Passed,
            (Some(Some(low)), Some(b)) if low >= b => Next::Passed,
            _ => Next::Wait,
        }
    }

    /// Which lane to read next, if any should be: the one with the lowest
    /// place still to come (one not named yet first), among those not
    /// `busy` and holding fewer than `ahead` copies, or holding back the
    /// lowest copy read.
    pub fn to_read(&self, busy: &[bool], ahead: usize) -> Option<usize> {
        let top = self.heap.peek().map(|Reverse(h)| h.copy.order_bytes());
        let mut best: Option<(Option<Place<'_>>, usize)> = None;
        for (i, l) in self.lanes.iter().enumerate() {
            if busy.get(i).copied().unwrap_or(false) {
                continue;
            }
            let Some(low) = l.lowest() else {
                continue;
            };
            let holds_back = match (low, top) {
                (None, _) | (_, None) => true,
                (Some(low), Some(top)) => low <= top,
            };
            if l.held >= ahead && !holds_back {
                continue;
            }
            if best.is_none_or(|(b, _)| low < b) {
                best = Some((low, i));
            }
        }
        best.map(|(_, i)| i)
    }

    /// Whether every lane is known and read to its end.
    pub fn read_all(&self) -> bool {
        self.all_lanes && self.lanes.iter().all(|l| l.done)
    }

    /// How many lanes there are.
    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// The states of every copy handed over, counted as an online host's.
    pub fn counts(&self) -> Counts {
        self.counts
    }
}

#[cfg(test)]
#[path = "copy_merge_tests.rs"]
mod tests;
