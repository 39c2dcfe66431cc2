//! The claims table's model: its columns, the sort, the widths the
//! free-text columns keep, and which rows are shown where.

use super::row_id::RowId;
use crate::claims::{ItemRules, Locality, OwnHazards, Status};
use std::cmp::Ordering;

/// A table column, in display (and `s` cycling) order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    State,
    Key,
    Holder,
    Pid,
    Machine,
    Age,
    Ttl,
    Harness,
    Reason,
    /// Which root the claim lives in: shown, sorted and cycled only when the
    /// dashboard watches several (so a one-root table is as it always was).
    Root,
    /// Time left on the claim's etcd lease: shown over a store only, and
    /// not in [`Column::ALL`], so the file dashboard's columns and `s`
    /// cycle stay as they were.
    Lease,
    /// The host a claim is held on, and whether the store keeps it or a
    /// host publishes it: shown over a store only while hosts publish into
    /// it, and kept out of [`Column::ALL`] like the lease.
    Host,
    Source,
}

impl Column {
    pub const ALL: [Column; 9] = [
        Column::State,
        Column::Key,
        Column::Holder,
        Column::Pid,
        Column::Machine,
        Column::Age,
        Column::Ttl,
        Column::Harness,
        Column::Reason,
    ];

    /// Every column, the store's and the several roots' too.
    pub const EVERY: [Column; 13] = [
        Column::State,
        Column::Root,
        Column::Key,
        Column::Holder,
        Column::Pid,
        Column::Machine,
        Column::Age,
        Column::Ttl,
        Column::Lease,
        Column::Host,
        Column::Source,
        Column::Harness,
        Column::Reason,
    ];

    /// The column titled `name` (any case).
    pub fn named(name: &str) -> Option<Column> {
        Column::EVERY
            .into_iter()
            .find(|c| c.title().eq_ignore_ascii_case(name.trim()))
    }

    pub fn next(self) -> Column {
        let i = Column::ALL.iter().position(|c| *c == self).unwrap_or(0);
        Column::ALL[(i + 1) % Column::ALL.len()]
    }

    /// The `s` cycle over several roots: the root column comes right after
    /// the state, where the table shows it.
    pub fn next_of_several(self) -> Column {
        match self {
            Column::State => Column::Root,
            Column::Root => Column::Key,
            c => c.next(),
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Column::State => "state",
            Column::Key => "key",
            Column::Holder => "holder",
            Column::Pid => "pid",
            Column::Machine => "machine",
            Column::Age => "age",
            Column::Ttl => "ttl",
            Column::Harness => "harness",
            Column::Reason => "reason",
            Column::Root => "root",
            Column::Lease => "lease",
            Column::Host => "host",
            Column::Source => "source",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    pub column: Column,
    pub reverse: bool,
}

impl Default for Sort {
    /// What needs a human first: severity, then key.
    fn default() -> Sort {
        Sort {
            column: Column::State,
            reverse: false,
        }
    }
}

/// Compare two claims by `col`; ties (and every column's fallback) go by
/// severity then key, so the order never depends on hash-map iteration.
pub fn compare(col: Column, (ia, a): (&RowId, &Status), (ib, b): (&RowId, &Status)) -> Ordering {
    fn opt_str<'a>(
        s: &'a Status,
        f: impl Fn(&'a crate::claims::ClaimRecord) -> Option<&'a str>,
    ) -> Option<&'a str> {
        s.record.as_ref().and_then(f)
    }
    // Missing values sort after present ones whichever the column.
    fn some_first<T: Ord>(a: Option<T>, b: Option<T>) -> Ordering {
        match (a, b) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        }
    }
    let primary = match col {
        Column::State => Ordering::Equal,
        Column::Key => a.key.cmp(&b.key),
        Column::Holder => some_first(
            opt_str(a, |r| Some(r.holder.as_str())),
            opt_str(b, |r| Some(r.holder.as_str())),
        ),
        Column::Pid => some_first(
            a.record.as_ref().map(|r| r.pid),
            b.record.as_ref().map(|r| r.pid),
        ),
        Column::Machine => some_first(a.locality.map(loc_rank), b.locality.map(loc_rank)),
        // Youngest first: the age column grows downwards.
        Column::Age => some_first(
            a.record.as_ref().map(|r| std::cmp::Reverse(r.acquired_at)),
            b.record.as_ref().map(|r| std::cmp::Reverse(r.acquired_at)),
        ),
        // Soonest deadline first; PID-bound (no deadline) after. A lease
        // is granted for the claim's TTL, so it runs out in the same order.
        Column::Ttl | Column::Lease => some_first(
            a.record.as_ref().and_then(|r| r.expires_at),
            b.record.as_ref().and_then(|r| r.expires_at),
        ),
        Column::Harness => some_first(
            opt_str(a, |r| r.harness.as_deref()),
            opt_str(b, |r| r.harness.as_deref()),
        ),
        Column::Reason => some_first(
            opt_str(a, |r| r.reason.as_deref()),
            opt_str(b, |r| r.reason.as_deref()),
        ),
        // Grouped by root, in the order of the roots' paths.
        Column::Root => a.file.parent().cmp(&b.file.parent()),
        // The record's host is the publishing host's for a copy, too.
        Column::Host => some_first(
            opt_str(a, |r| Some(r.host.as_str())),
            opt_str(b, |r| Some(r.host.as_str())),
        ),
        // The store's own claims first, then the copies, grouped by host.
        Column::Source => ia.is_copy().cmp(&ib.is_copy()),
    };
    primary
        .then(a.state.severity().cmp(&b.state.severity()))
        .then_with(|| a.key.cmp(&b.key))
        .then_with(|| a.file.cmp(&b.file))
        .then_with(|| ia.cmp(ib))
}

fn loc_rank(l: Locality) -> u8 {
    match l {
        Locality::Local => 0,
        Locality::Unknown => 1,
        Locality::Other => 2,
    }
}

/// The widest value of each free-text column among the rows, in
/// characters: the table sizes those columns from it, so they hold still
/// while scrolling and a frame never measures every row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Widest {
    pub key: u16,
    pub holder: u16,
    pub harness: u16,
    pub reason: u16,
}

/// The key as its row shows it: marked `⚠` when the claim is a hazard its
/// state and its why do not already say (its record names another key),
/// so a claim that reads healthy never hides one.
pub fn key_cell(s: &Status, rules: ItemRules) -> String {
    let key = crate::sanitize::sanitize(&s.key);
    if key_marked(s, rules) {
        format!("{key} ⚠")
    } else {
        key.into_owned()
    }
}

fn key_marked(s: &Status, rules: ItemRules) -> bool {
    OwnHazards::of(s, rules).unsaid().next().is_some()
}

impl Widest {
    fn chars(s: &str) -> u16 {
        s.chars().count().min(u16::MAX as usize) as u16
    }

    /// Widen to fit `s`, judged by `rules` (whose mark its key cell carries).
    pub fn fit(&mut self, s: &Status, rules: ItemRules) {
        let w = |v: &mut u16, text: &str| *v = (*v).max(Widest::chars(text));
        let mark = if key_marked(s, rules) { 2 } else { 0 };
        self.key = self.key.max(Widest::chars(&s.key).saturating_add(mark));
        match &s.record {
            Some(r) => {
                w(&mut self.holder, &r.holder);
                w(&mut self.harness, r.harness.as_deref().unwrap_or(""));
                w(&mut self.reason, r.reason.as_deref().unwrap_or(""));
            }
            None => {
                w(&mut self.holder, "(no record)");
                w(&mut self.reason, s.error.as_deref().unwrap_or(""));
            }
        }
    }

    /// Would taking `s` away leave a column wider than its widest row?
    /// (Then the widths must be measured again over every row.)
    pub fn held_by(&self, s: &Status, rules: ItemRules) -> bool {
        let mut one = Widest::default();
        one.fit(s, rules);
        [
            (one.key, self.key),
            (one.holder, self.holder),
            (one.harness, self.harness),
            (one.reason, self.reason),
        ]
        .iter()
        .any(|(mine, widest)| *mine > 0 && mine >= widest)
    }

    /// The width kept for `c`, for the free-text columns.
    pub fn of(&self, c: Column) -> Option<u16> {
        match c {
            Column::Key => Some(self.key),
            Column::Holder => Some(self.holder),
            Column::Harness => Some(self.harness),
            Column::Reason => Some(self.reason),
            _ => None,
        }
    }
}
