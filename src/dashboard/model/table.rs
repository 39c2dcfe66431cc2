//! The claims table's model: the sort, the widths the free-text columns
//! keep, and what the columns ask of the model (where a row comes from,
//! the lease behind it). The columns themselves are `crate::columns`.

use super::claims::ClaimSet;
use super::row_id::RowId;
use super::store::StoreView;
use crate::claims::Status;
use crate::columns::{
    Avail, CellCtx, ColumnId, Face, HostName, Places, RootName, RowView, COLUMNS,
};
use crate::dashboard::roots::ShownRoots;
use std::cmp::Ordering;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    pub column: ColumnId,
    pub reverse: bool,
}

impl Default for Sort {
    /// What needs a human first: severity, then key.
    fn default() -> Sort {
        Sort {
            column: ColumnId::State,
            reverse: false,
        }
    }
}

/// What the view has, for the columns: the one place the dashboard says
/// it (several roots, a store with leases, hosts publishing into it).
pub fn avail(roots: &ShownRoots, store: Option<&StoreView>) -> Avail {
    Avail {
        several: roots.is_several(),
        leases: store.is_some(),
        fleet: store.is_some_and(|v| v.fleet.is_active()),
    }
}

/// The model's answers to what the cells ask.
pub struct TablePlaces<'a> {
    pub roots: &'a ShownRoots,
    pub store: Option<&'a StoreView>,
}

impl Places for TablePlaces<'_> {
    fn root(&self, s: &Status) -> Option<RootName<'_>> {
        let i = self.roots.of(s);
        Some(RootName {
            label: self.roots.label(i),
            path: &self.roots.get(i)?.root,
        })
    }

    fn host(&self, host_id: &str) -> Option<HostName<'_>> {
        let h = self.store?.fleet.host(host_id)?;
        Some(HostName {
            label: &h.label,
            online: h.online,
            last_seen_ms: h.last_seen_ms,
        })
    }

    fn lease_ms(&self, s: &Status, now: i64) -> Option<i64> {
        self.store?.held(&s.file).map(|h| h.remaining_ms(now))
    }
}

/// The screen's cells at `now`, answered by `places`.
pub fn screen_ctx<'a>(now: i64, local_time: bool, places: &'a dyn Places) -> CellCtx<'a> {
    CellCtx {
        now,
        local_time,
        face: Face::Screen,
        places,
    }
}

/// Row `id` of `set` as its cells see it.
pub fn row_view<'a>(set: &ClaimSet, id: &'a RowId, s: &'a Status) -> RowView<'a> {
    RowView {
        status: s,
        rules: set.rules_of(id),
        copy_of: match id {
            RowId::Copy(c) => Some(c.host_id.as_str()),
            RowId::Claim(_) => None,
        },
    }
}

/// Compare two rows by `col`; ties (and every column's fallback) go by
/// severity then key, so the order never depends on hash-map iteration.
pub fn compare(
    col: ColumnId,
    ctx: &CellCtx<'_>,
    (ia, a): (&RowId, &RowView<'_>),
    (ib, b): (&RowId, &RowView<'_>),
) -> Ordering {
    (col.spec().sort)(ctx, a, b)
        .then(a.status.state.severity().cmp(&b.status.state.severity()))
        .then_with(|| a.status.key.cmp(&b.status.key))
        .then_with(|| a.status.file.cmp(&b.status.file))
        .then_with(|| ia.cmp(ib))
}

/// The widest cell of each steady column (see [`crate::columns::Width`])
/// among the rows, in characters: the table sizes those columns from it,
/// so they hold still while scrolling and a frame never measures every row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Widest([u16; COLUMNS.len()]);

impl Default for Widest {
    fn default() -> Widest {
        Widest([0; COLUMNS.len()])
    }
}

fn chars(s: &str) -> u16 {
    s.chars().count().min(u16::MAX as usize) as u16
}

impl Widest {
    /// Widen to fit `row`'s cells.
    pub fn fit(&mut self, ctx: &CellCtx<'_>, row: &RowView<'_>) {
        for spec in COLUMNS.iter().filter(|s| s.screen && s.width.steady()) {
            let w = &mut self.0[spec.id as usize];
            *w = (*w).max(chars(&(spec.text)(ctx, row)));
        }
    }

    /// Would taking `row` away leave a column wider than its widest row?
    /// (Then the widths must be measured again over every row.)
    pub fn held_by(&self, ctx: &CellCtx<'_>, row: &RowView<'_>) -> bool {
        let mut one = Widest::default();
        one.fit(ctx, row);
        one.0
            .iter()
            .zip(&self.0)
            .any(|(mine, widest)| *mine > 0 && mine >= widest)
    }

    /// The width kept for `c`, for the steady columns.
    pub fn of(&self, c: ColumnId) -> Option<u16> {
        c.spec().width.steady().then_some(self.0[c as usize])
    }
}
