//! The claims table's model: its rows (filtered, sorted, and the widths
//! the steady columns keep, rebuilt when the claims, the filter or the sort
//! change), and what the columns ask of the model (where a row comes from,
//! the lease behind it). The columns themselves are `crate::columns`.

use super::claims::ClaimSet;
use super::row_id::RowId;
use super::store::StoreView;
use super::App;
use crate::claims::Status;
use crate::columns::{
    Avail, CellCtx, ColumnId, Face, HostName, Places, RootName, RowView, COLUMNS,
};
use crate::dashboard::model::Origins;
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
pub fn avail(origins: &Origins, store: Option<&StoreView>) -> Avail {
    Avail {
        several: origins.several(),
        leases: origins.leases(),
        fleet: store.is_some_and(|v| v.fleet.is_active()),
    }
}

/// The model's answers to what the cells ask.
pub struct TablePlaces<'a> {
    pub roots: &'a Origins,
    pub store: Option<&'a StoreView>,
}

impl Places for TablePlaces<'_> {
    fn root(&self, s: &Status) -> Option<RootName<'_>> {
        let o = self.roots.origin(self.roots.of(s))?;
        Some(RootName {
            label: &o.label,
            path: &o.place,
        })
    }

    fn host(&self, host_id: &str) -> Option<HostName<'_>> {
        let h = self.store?.fleet.host(host_id)?;
        Some(HostName {
            label: &h.label,
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
        instants: false,
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
        origin: None,
    }
}

impl App {
    /// What the view has, for the columns.
    pub fn avail(&self) -> Avail {
        avail(&self.origins, self.store.as_ref())
    }

    /// Is row `id` (as `s`) as wide as a steady column's widest? Then
    /// taking it away means measuring every row again.
    pub fn holds_a_width(&self, id: &RowId, s: &Status) -> bool {
        let places = self.places();
        let ctx = screen_ctx(self.now, self.local_time, &places);
        let row = row_view(&self.claims.live, id, s);
        self.table.widest.held_by(&ctx, &row)
    }

    /// What the columns ask of the model: where rows come from, leases.
    pub fn places(&self) -> TablePlaces<'_> {
        TablePlaces {
            roots: &self.origins,
            store: self.store.as_ref(),
        }
    }

    pub fn paused(&self) -> bool {
        self.claims.frozen.is_some()
    }

    /// Rebuild the rows from the shown claims, keeping the selection on the
    /// same lockfile when it is still there.
    pub fn rebuild_rows(&mut self) {
        let t = &mut self.table;
        let keep = t.rows.get(t.selected).cloned();
        let shown = self.claims.shown();
        let places = TablePlaces {
            roots: &self.origins,
            store: self.store.as_ref(),
        };
        let now = self.claims.frozen.as_ref().map_or(self.now, |f| f.now);
        let ctx = screen_ctx(now, self.local_time, &places);
        // Sized for every row: the table's order is this buffer (collected
        // in place below, so its elements are a row id's size: a wider
        // element would leave the order in a buffer that much too big), and
        // grown by doubling it kept a third more than 100 000 rows need.
        let mut rows: Vec<(&RowId, &Status)> = Vec::with_capacity(shown.by_row.len());
        rows.extend(
            shown
                .by_row
                .iter()
                .map(|(p, s)| (p, &**s))
                .filter(|(p, s)| t.filter.matches(&ctx, &row_view(shown, p, s))),
        );
        let col = t.sort.column;
        rows.sort_by(|(ia, a), (ib, b)| {
            let (va, vb) = (row_view(shown, ia, a), row_view(shown, ib, b));
            compare(col, &ctx, (ia, &va), (ib, &vb))
        });
        if t.sort.reverse {
            rows.reverse();
        }
        let mut widest = Widest::default();
        for (p, s) in &rows {
            widest.fit(&ctx, &row_view(shown, p, s));
        }
        t.widest = widest;
        t.rows = rows.into_iter().map(|(p, _)| p.clone()).collect();
        if let Some(p) = keep {
            if let Some(i) = t.rows.iter().position(|r| *r == p) {
                t.selected = i;
            }
        }
        self.clamp_selection();
    }

    /// Move just these claims to their sorted places, when only they changed
    /// (a TTL crossing): a full rebuild re-sorts every row, which over
    /// 10 000 claims costs milliseconds a tick.
    pub fn reposition_rows(&mut self, moved: &[RowId]) {
        if self.paused() {
            return;
        }
        let t = &mut self.table;
        let keep = t.rows.get(t.selected).cloned();
        t.rows.retain(|p| !moved.contains(p));
        let (col, reverse) = (t.sort.column, t.sort.reverse);
        let live = &self.claims.live;
        let places = TablePlaces {
            roots: &self.origins,
            store: self.store.as_ref(),
        };
        let ctx = screen_ctx(self.now, self.local_time, &places);
        for p in moved {
            let Some(row) = live
                .get(p)
                .map(|s| row_view(live, p, s))
                .filter(|r| t.filter.matches(&ctx, r))
            else {
                continue;
            };
            let pos = t.rows.partition_point(|r| {
                live.get(r).is_some_and(|other| {
                    let ord = compare(col, &ctx, (r, &row_view(live, r, other)), (p, &row));
                    if reverse {
                        ord == Ordering::Greater
                    } else {
                        ord == Ordering::Less
                    }
                })
            });
            t.rows.insert(pos, p.clone());
            t.widest.fit(&ctx, &row);
        }
        if let Some(p) = keep {
            if let Some(i) = t.rows.iter().position(|r| *r == p) {
                t.selected = i;
            }
        }
        self.clamp_selection();
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
