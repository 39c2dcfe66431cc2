//! Marked rows. A mark is set on one tenure of a claim: when the claim is
//! released, or taken again by someone else, the mark goes with the tenure
//! it was set on, so F over the marks never reaches a holder the operator
//! did not see when marking.

use super::{App, RowId};
use std::collections::HashMap;

/// Which tenure of a claim a row shows: who took it, and when. A fencing
/// store adds its token (etcd's create revision), strictly increasing
/// across tenures of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenureId {
    /// None: no readable record (a corrupted claim is no tenure).
    pub acquired_at: Option<i64>,
    pub holder: Option<String>,
    pub fence: Option<i64>,
}

impl TenureId {
    /// Is `now` the tenure this one names? A fence learnt after the mark
    /// (etcd's tenures arrive with their own delta) does not end it; two
    /// different fences do.
    pub fn same(&self, now: &TenureId) -> bool {
        let fences_agree = match (self.fence, now.fence) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        self.acquired_at == now.acquired_at && self.holder == now.holder && fences_agree
    }
}

/// The marked rows, each with the tenure it was marked in.
#[derive(Debug, Clone, Default)]
pub struct Marks(HashMap<RowId, TenureId>);

impl Marks {
    pub fn contains(&self, id: &RowId) -> bool {
        self.0.contains_key(id)
    }

    pub fn iter(&self) -> impl Iterator<Item = &RowId> {
        self.0.keys()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn insert(&mut self, id: RowId, tenure: TenureId) {
        self.0.insert(id, tenure);
    }

    /// Mark `id` in `tenure`, or unmark it; true when it is marked now.
    pub fn toggle(&mut self, id: RowId, tenure: TenureId) -> bool {
        if self.0.remove(&id).is_some() {
            return false;
        }
        self.0.insert(id, tenure);
        true
    }

    /// Drop the marks whose claim is gone or holds another tenure now
    /// (`now` says which tenure a row shows); how many went.
    pub fn keep_tenures(&mut self, now: impl Fn(&RowId) -> Option<TenureId>) -> usize {
        let before = self.0.len();
        self.0
            .retain(|id, marked| now(id).is_some_and(|t| marked.same(&t)));
        before - self.0.len()
    }
}

impl App {
    /// The tenure the shown claim of row `id` is in, if the row is there.
    pub fn tenure_id(&self, id: &RowId) -> Option<TenureId> {
        let s = self.shown().get(id)?;
        let rec = s.record.as_ref();
        let fence = match id {
            RowId::Claim(p) => self
                .store
                .as_ref()
                .and_then(|v| v.held(p))
                .map(|h| h.revision),
            RowId::Copy(_) => None,
        };
        Some(TenureId {
            acquired_at: rec.map(|r| r.acquired_at),
            holder: rec.map(|r| r.holder.clone()),
            fence,
        })
    }

    /// The marked rows the table's filter hides now.
    pub fn marks_hidden(&self) -> usize {
        if self.table.marked.is_empty() {
            return 0;
        }
        let shown: std::collections::HashSet<&RowId> = self.table.rows.iter().collect();
        self.table
            .marked
            .iter()
            .filter(|id| !shown.contains(id))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(at: i64, holder: &str, fence: Option<i64>) -> TenureId {
        TenureId {
            acquired_at: Some(at),
            holder: Some(holder.into()),
            fence,
        }
    }

    #[test]
    fn a_tenure_is_its_start_and_holder_and_a_fence_learnt_later_does_not_end_it() {
        assert!(t(1, "a", None).same(&t(1, "a", Some(7))));
        assert!(!t(1, "a", Some(6)).same(&t(1, "a", Some(7))));
        assert!(!t(1, "a", None).same(&t(2, "a", None)));
        assert!(!t(1, "a", None).same(&t(1, "b", None)));
    }

    #[test]
    fn marks_whose_tenure_ended_are_dropped_and_counted() {
        let id = |k: &str| RowId::claim(std::path::Path::new(k));
        let mut m = Marks::default();
        assert!(m.toggle(id("kept"), t(1, "a", None)));
        m.insert(id("retaken"), t(1, "a", None));
        m.insert(id("gone"), t(1, "a", None));
        let dropped = m.keep_tenures(|r| {
            if *r == id("kept") {
                Some(t(1, "a", None))
            } else if *r == id("retaken") {
                Some(t(9, "b", None))
            } else {
                None
            }
        });
        assert_eq!(dropped, 2);
        assert!(m.contains(&id("kept")) && m.len() == 1);
        assert!(!m.toggle(id("kept"), t(1, "a", None)), "toggled off");
        assert!(m.is_empty());
    }
}
