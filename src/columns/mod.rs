//! The claims table's columns, one spec each: its title, how wide it may
//! be, at which widths it shows, what it needs the view to have, what its
//! cell says, how it sorts, what the `/` filter finds in it and how it is
//! styled. The dashboard draws, sorts and filters by these specs, and
//! `list` prints its text table by them: a new column is its id and spec
//! (`specs.rs`) and its cell (`cells.rs`). No terminal code: the view gives
//! each style role its colours.

mod cells;
mod specs;

pub use cells::{coarse, key_cell, state_label, time_bucket, ttl_cell};
pub use specs::{ColumnId, COLUMNS};

use crate::claims::{ItemRules, Status};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::path::Path;

/// How wide a column may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// Always this wide (the state's symbol and word).
    Fixed(u16),
    /// As wide as its cells in the window, within bounds; room beyond its
    /// minimum goes by the spec's `fill` order.
    Fit { min: u16, max: u16 },
    /// As [`Width::Fit`], but its cells are its floor: a number cut short
    /// reads as another number.
    Number { min: u16, max: u16 },
    /// Free text sized from every row (the model keeps the widest), so it
    /// holds still while scrolling; within bounds.
    Text { min: u16, max: u16 },
    /// What an operator scans for (key, holder): sized from every row, no
    /// cap, and the room shared between them by need before anything else.
    Main { min: u16 },
    /// Free text that takes whatever room is left (the reason).
    Rest { min: u16 },
}

impl Width {
    /// The narrowest and the widest it may be.
    pub fn bounds(self) -> (u16, u16) {
        match self {
            Width::Fixed(n) => (n, n),
            Width::Fit { min, max } | Width::Number { min, max } | Width::Text { min, max } => {
                (min, max)
            }
            Width::Main { min } | Width::Rest { min } => (min, u16::MAX),
        }
    }

    /// Sized from every row rather than the window's.
    pub fn steady(self) -> bool {
        matches!(
            self,
            Width::Text { .. } | Width::Main { .. } | Width::Rest { .. }
        )
    }
}

/// How wide the table is, in three steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Narrow,
    Medium,
    Full,
}

/// Table widths below this keep only what an operator scans first.
const NARROW_BELOW: u16 = 76;
/// From this width every column shows.
const FULL_FROM: u16 = 90;
/// With several roots the full table needs this much more: the root
/// column's labels.
const SEVERAL_ROOM: u16 = 10;

impl Tier {
    pub fn of(width: u16, avail: Avail) -> Tier {
        let full = FULL_FROM + if avail.several { SEVERAL_ROOM } else { 0 };
        if width >= full {
            Tier::Full
        } else if width < NARROW_BELOW {
            Tier::Narrow
        } else {
            Tier::Medium
        }
    }
}

/// The tiers at which a column shows by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiers(u8);

impl Tiers {
    pub const NONE: Tiers = Tiers(0);
    pub const ALL: Tiers = Tiers(0b111);
    pub const FROM_MEDIUM: Tiers = Tiers(0b110);
    pub const FULL: Tiers = Tiers(0b100);

    pub fn has(self, t: Tier) -> bool {
        let bit = match t {
            Tier::Narrow => 0b001,
            Tier::Medium => 0b010,
            Tier::Full => 0b100,
        };
        self.0 & bit != 0
    }
}

/// What a column needs the view to have before it can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    Always,
    /// Rows from several roots.
    Several,
    /// A store that keeps each claim on a lease.
    Leases,
    /// Hosts publishing into the store.
    Fleet,
}

/// What the view has: asked of the origins, never of a store's kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Avail {
    pub several: bool,
    pub leases: bool,
    pub fleet: bool,
}

impl Avail {
    pub fn has(self, n: Needs) -> bool {
        match n {
            Needs::Always => true,
            Needs::Several => self.several,
            Needs::Leases => self.leases,
            Needs::Fleet => self.fleet,
        }
    }
}

/// Where `list`'s text table shows a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    No,
    /// First, before the state: where a row lives, which `sort` and
    /// `grep` read first.
    Lead,
    Yes,
}

/// How a cell is styled; the view maps each role to its theme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Plain,
    /// In the state's colour.
    State,
    /// Warned once its deadline has passed.
    Deadline,
    /// Dimmed when the claim has no record to say it.
    Absent,
    /// The read error's colour when the claim has no record.
    Failure,
}

/// Who reads the cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Face {
    /// The dashboard: symbols, blanks where nothing is known.
    Screen,
    /// `list`'s text table: words, `-` where nothing is known.
    Text,
}

/// One row as its cells see it.
#[derive(Debug, Clone, Copy)]
pub struct RowView<'a> {
    pub status: &'a Status,
    /// How its own hazards are judged (the key's mark, `list`'s why).
    pub rules: ItemRules,
    /// The machine id of the host whose copy it is, for a published copy.
    pub copy_of: Option<&'a str>,
    /// Where the row lives, as a view that names it itself says it
    /// (`list`: a root's path or a store's URL, escaped); else the
    /// root [`Places`] gives.
    pub origin: Option<&'a str>,
}

/// A root as the rows name it.
#[derive(Debug, Clone, Copy)]
pub struct RootName<'a> {
    /// The shortest end of its path that tells it from the others.
    pub label: &'a str,
    pub path: &'a Path,
}

/// A publishing host as the rows name it.
#[derive(Debug, Clone, Copy)]
pub struct HostName<'a> {
    /// Its hostname, with its machine id's start when another host shares it.
    pub label: &'a str,
    pub last_seen_ms: i64,
}

/// What the cells ask beyond the claim itself: where a row comes from and
/// the lease behind it. The dashboard answers from its model, `list` from
/// its listing.
pub trait Places {
    /// The root `s` lives in, when known.
    fn root(&self, s: &Status) -> Option<RootName<'_>>;
    /// The host publishing as `host_id`, when known.
    fn host(&self, host_id: &str) -> Option<HostName<'_>>;
    /// Time left on the lease behind `s` at `now`, in ms, when its store
    /// keeps one.
    fn lease_ms(&self, s: &Status, now: i64) -> Option<i64>;
}

/// A view with no roots, hosts or leases to name.
pub struct Unplaced;

impl Places for Unplaced {
    fn root(&self, _: &Status) -> Option<RootName<'_>> {
        None
    }
    fn host(&self, _: &str) -> Option<HostName<'_>> {
        None
    }
    fn lease_ms(&self, _: &Status, _: i64) -> Option<i64> {
        None
    }
}

/// What every cell of one drawing shares.
pub struct CellCtx<'a> {
    /// The clock the view shows (epoch ms).
    pub now: i64,
    pub local_time: bool,
    pub face: Face,
    pub places: &'a dyn Places,
}

/// A cell's text (sanitized: untrusted text is escaped in it).
pub type TextFn = for<'a> fn(&CellCtx<'a>, &RowView<'a>) -> Cow<'a, str>;
/// An order of rows by a column, before the severity and key tie-break.
pub type SortFn = for<'a> fn(&CellCtx<'a>, &RowView<'a>, &RowView<'a>) -> Ordering;

/// What the `/` filter finds in a column.
#[derive(Clone, Copy)]
pub struct Find {
    /// The field of `name:TEXT`.
    pub name: &'static str,
    /// A bare word looks here too.
    pub any: bool,
    /// What is searched when it is not the cell's text (a root's whole
    /// path, not its label; a holder, not "(no record)").
    pub text: Option<TextFn>,
}

/// Every fact about one column.
pub struct ColumnSpec {
    pub id: ColumnId,
    /// Its header (`list`'s in capitals), and its name in `:sort`,
    /// `:columns` and the settings.
    pub title: &'static str,
    pub width: Width,
    /// The order in which room beyond the minimums goes to the columns
    /// that are neither [`Width::Main`] nor [`Width::Rest`] (lowest first),
    /// once key and holder have had theirs.
    pub fill: u8,
    /// The tiers it shows at by default, given what the view has: a column
    /// gives way where another says the same or matters more there.
    pub tiers: fn(Avail) -> Tiers,
    pub needs: Needs,
    /// On the dashboard at all.
    pub screen: bool,
    pub cli: Cli,
    pub text: TextFn,
    pub sort: SortFn,
    pub filter: Option<Find>,
    pub role: Role,
}

impl ColumnId {
    pub fn spec(self) -> &'static ColumnSpec {
        &COLUMNS[self as usize]
    }

    pub fn title(self) -> &'static str {
        self.spec().title
    }

    /// The dashboard column titled `name` (any case).
    pub fn named(name: &str) -> Option<ColumnId> {
        on_screen().find(|c| c.title().eq_ignore_ascii_case(name.trim()))
    }

    /// The next column the view has, for the `s` cycle.
    pub fn next(self, avail: Avail) -> ColumnId {
        let cycle: Vec<ColumnId> = on_screen().filter(|c| avail.has(c.spec().needs)).collect();
        let i = cycle.iter().position(|c| *c == self).unwrap_or(0);
        cycle
            .get((i + 1) % cycle.len().max(1))
            .copied()
            .unwrap_or(self)
    }
}

/// Every dashboard column, in the table's order.
pub fn on_screen() -> impl Iterator<Item = ColumnId> {
    COLUMNS.iter().filter(|s| s.screen).map(|s| s.id)
}

/// The columns a table `width` wide shows when nobody chose them.
pub fn default_columns(width: u16, avail: Avail) -> Vec<ColumnId> {
    let tier = Tier::of(width, avail);
    COLUMNS
        .iter()
        .filter(|s| s.screen && avail.has(s.needs) && (s.tiers)(avail).has(tier))
        .map(|s| s.id)
        .collect()
}

/// The columns an operator named, in the table's order, with the state
/// and the key, which a row means little without.
pub fn choose(named: &[ColumnId]) -> Vec<ColumnId> {
    on_screen()
        .filter(|c| matches!(c, ColumnId::State | ColumnId::Key) || named.contains(c))
        .collect()
}

/// The chosen columns less what the view has no data for.
pub fn chosen_columns(chosen: &[ColumnId], avail: Avail) -> Vec<ColumnId> {
    (chosen.iter().copied())
        .filter(|c| avail.has(c.spec().needs))
        .collect()
}

/// `list`'s text columns: where a row lives first, then what it is.
pub fn cli_columns(avail: Avail) -> Vec<ColumnId> {
    let shown = |cli: Cli| {
        COLUMNS
            .iter()
            .filter(move |s| s.cli == cli && avail.has(s.needs))
            .map(|s| s.id)
    };
    shown(Cli::Lead).chain(shown(Cli::Yes)).collect()
}

/// The names `name:TEXT` accepts: `state`, then each column's.
pub fn filter_fields() -> impl Iterator<Item = &'static str> {
    std::iter::once("state").chain(COLUMNS.iter().filter_map(|s| s.filter.map(|f| f.name)))
}

/// The column `name:TEXT` searches.
pub fn filtered_by(name: &str) -> Option<ColumnId> {
    COLUMNS
        .iter()
        .find(|s| s.filter.is_some_and(|f| f.name == name))
        .map(|s| s.id)
}

/// What the filter searches in `col` of `row`.
pub fn find_text<'a>(col: ColumnId, ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    let spec = col.spec();
    match spec.filter.and_then(|f| f.text) {
        Some(text) => text(ctx, row),
        None => (spec.text)(ctx, row),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spec_sits_at_its_ids_place_and_titles_are_distinct() {
        for (i, s) in COLUMNS.iter().enumerate() {
            assert_eq!(s.id as usize, i, "{:?}", s.id);
        }
        let mut titles: Vec<_> = COLUMNS.iter().map(|s| s.title).collect();
        titles.sort_unstable();
        titles.dedup();
        assert_eq!(titles.len(), COLUMNS.len());
    }

    #[test]
    fn each_view_shows_at_each_width_what_it_did_when_the_lists_were_written_out() {
        use ColumnId::*;
        let plain = Avail::default();
        let several = Avail {
            several: true,
            ..Avail::default()
        };
        let store = Avail {
            leases: true,
            ..Avail::default()
        };
        let fleet = Avail {
            leases: true,
            fleet: true,
            ..Avail::default()
        };
        let cases: [(Avail, u16, &[ColumnId]); 12] = [
            (plain, 60, &[State, Key, Holder, Age, Ttl]),
            (plain, 80, &[State, Key, Holder, Pid, Age, Ttl]),
            (
                plain,
                90,
                &[State, Key, Holder, Pid, Machine, Age, Ttl, Harness, Reason],
            ),
            (several, 60, &[State, Root, Key, Holder, Ttl]),
            (several, 95, &[State, Root, Key, Holder, Age, Ttl]),
            (
                several,
                100,
                &[
                    State, Root, Key, Holder, Pid, Machine, Age, Ttl, Harness, Reason,
                ],
            ),
            (store, 60, &[State, Key, Holder, Age, Lease]),
            (store, 80, &[State, Key, Holder, Pid, Age, Ttl, Lease]),
            (
                store,
                90,
                &[
                    State, Key, Holder, Pid, Machine, Age, Ttl, Lease, Harness, Reason,
                ],
            ),
            (fleet, 60, &[State, Host, Key, Holder, Age]),
            (fleet, 80, &[State, Host, Source, Key, Holder, Age, Ttl]),
            (
                fleet,
                90,
                &[
                    State, Host, Source, Key, Holder, Pid, Age, Ttl, Lease, Reason,
                ],
            ),
        ];
        for (avail, width, want) in cases {
            assert_eq!(default_columns(width, avail), want, "{avail:?} at {width}");
        }
    }

    #[test]
    fn list_shows_where_a_row_lives_first_and_its_why_last() {
        use ColumnId::*;
        assert_eq!(
            cli_columns(Avail::default()),
            [State, Key, Holder, Pid, Why]
        );
        let several = Avail {
            several: true,
            ..Avail::default()
        };
        assert_eq!(cli_columns(several), [Root, State, Key, Holder, Pid, Why]);
    }

    #[test]
    fn the_sort_cycle_goes_through_the_columns_the_view_has() {
        let plain = Avail::default();
        assert_eq!(ColumnId::State.next(plain), ColumnId::Key);
        assert_eq!(ColumnId::Reason.next(plain), ColumnId::State);
        let several = Avail {
            several: true,
            ..plain
        };
        assert_eq!(ColumnId::State.next(several), ColumnId::Root);
        assert_eq!(ColumnId::Root.next(several), ColumnId::Key);
        assert_eq!(ColumnId::named("WHY"), None, "list's alone");
        assert_eq!(ColumnId::named(" Lease "), Some(ColumnId::Lease));
    }
}
