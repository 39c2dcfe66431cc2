//! Each column's cell and order, and the words the table's cells share
//! (the state's symbol, coarse durations, the TTL's countdown).

use super::{CellCtx, Face, RowView};
use crate::claims::census::why_with_hazards;
use crate::claims::{ClaimRecord, ClaimState, ItemRules, Locality, OwnHazards, Status};
use crate::sanitize::sanitize;
use crate::store::fleet::{SOURCE_PUBLISHED, SOURCE_STORE};
use crate::time::{clock, human_ms};
use std::borrow::Cow;
use std::cmp::Ordering;

/// Symbol and word: the state reads without colour.
pub fn state_label(s: ClaimState) -> &'static str {
    match s {
        ClaimState::Live => "● live",
        ClaimState::Suspect => "◐ suspect",
        ClaimState::Stale => "✖ stale",
        ClaimState::Corrupted => "‼ corrupted",
        ClaimState::Unreadable => "? unreadable",
        ClaimState::LastKnown => "◌ last known",
        ClaimState::Free => "○ free",
    }
}

/// A duration as the table shows it: `45s`, `12m`, `3h05m`, `2d4h`.
pub fn coarse(ms: i64) -> String {
    let (unit, v) = bucket(ms.max(0));
    match unit {
        0 => format!("{v}s"),
        1 => format!("{v}m"),
        2 => format!("{}h{:02}m", v / 60, v % 60),
        _ => format!("{}d{}h", v / 24, v % 24),
    }
}

/// The value [`coarse`] shows, as (unit, count): equal buckets print the
/// same text.
fn bucket(ms: i64) -> (u8, i64) {
    let s = ms / 1000;
    match s {
        i64::MIN..=59 => (0, s.max(0)),
        60..=3599 => (1, s / 60),
        3600..=86_399 => (2, s / 60),
        _ => (3, s / 3600),
    }
}

/// What a relative time cell shows, for change detection without
/// formatting: (still in the future, unit, count).
pub fn time_bucket(ms: i64) -> (bool, u8, i64) {
    let (u, v) = bucket(ms.abs());
    (ms > 0, u, v)
}

/// The TTL cell: `in 12m`, `expired 3m ago`, `pid-bound`.
pub fn ttl_cell(expires_at: Option<i64>, now: i64) -> String {
    match expires_at {
        None => "pid-bound".into(),
        Some(e) if e > now => format!("in {}", coarse(e - now)),
        Some(e) => format!("expired {} ago", coarse(now - e)),
    }
}

/// The key as its row shows it: marked `⚠` when the claim is a hazard its
/// state and its why do not already say (its record names another key),
/// so a claim that reads healthy never hides one.
pub fn key_cell(s: &Status, rules: ItemRules) -> Cow<'_, str> {
    let key = sanitize(&s.key);
    if OwnHazards::of(s, rules).unsaid().next().is_some() {
        Cow::Owned(format!("{key} ⚠"))
    } else {
        key
    }
}

/// What a cell shows where nothing is known: blank on the screen, `-` in
/// a text table (so its columns still split on whitespace).
fn unknown<'a>(ctx: &CellCtx<'_>) -> Cow<'a, str> {
    Cow::Borrowed(match ctx.face {
        Face::Screen => "",
        Face::Text => "-",
    })
}

fn record<'a>(row: &RowView<'a>) -> Option<&'a ClaimRecord> {
    row.status.record.as_ref()
}

/// Present values first, whichever way the column sorts.
fn some_first<T: Ord>(a: Option<T>, b: Option<T>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

fn text_or_none<'a>(v: Option<&'a str>) -> Cow<'a, str> {
    v.map_or(Cow::Borrowed(""), sanitize)
}

pub(super) fn no_order(_: &CellCtx<'_>, _: &RowView<'_>, _: &RowView<'_>) -> Ordering {
    Ordering::Equal
}

pub(super) fn state<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    let s = row.status.state;
    Cow::Borrowed(match ctx.face {
        Face::Text => s.as_str(),
        // The column is 11 wide: the row says "◌ offline", and its source
        // cell when it was last known.
        Face::Screen if s == ClaimState::LastKnown => "◌ offline",
        Face::Screen => state_label(s),
    })
}

pub(super) fn root<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    if let Some(named) = row.origin {
        return Cow::Borrowed(named);
    }
    ctx.places
        .root(row.status)
        .map_or_else(|| unknown(ctx), |r| sanitize(r.label))
}

/// A root is found by its whole path (its label is the path's end).
pub(super) fn root_path<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    ctx.places
        .root(row.status)
        .map_or(Cow::Borrowed(""), |r| r.path.to_string_lossy())
}

/// Grouped by root, in the order of the roots' paths.
pub(super) fn root_order(_: &CellCtx<'_>, a: &RowView<'_>, b: &RowView<'_>) -> Ordering {
    a.status.file.parent().cmp(&b.status.file.parent())
}

/// A copy's publishing host as the fleet names it; the record's own host
/// for the store's claims.
pub(super) fn host<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    match row.copy_of {
        Some(id) => sanitize(ctx.places.host(id).map_or(id, |h| h.label)),
        None => record(row).map_or_else(|| unknown(ctx), |r| sanitize(&r.host)),
    }
}

pub(super) fn host_order<'a>(ctx: &CellCtx<'a>, a: &RowView<'a>, b: &RowView<'a>) -> Ordering {
    let shown = |r: &RowView<'a>| Some(host(ctx, r)).filter(|h| !h.is_empty());
    some_first(shown(a), shown(b))
}

/// As `list --json` says it; a last known row says when it was last known
/// (its state cell, that its host is offline).
pub(super) fn source<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    let Some(id) = row.copy_of else {
        return Cow::Borrowed(SOURCE_STORE);
    };
    let seen = ctx.places.host(id).map(|h| h.last_seen_ms);
    match seen {
        Some(at) if ctx.face == Face::Screen && row.status.state == ClaimState::LastKnown => {
            Cow::Owned(format!(
                "last known at {}",
                clock(at, ctx.local_time, "%H:%M:%S")
            ))
        }
        _ => Cow::Borrowed(SOURCE_PUBLISHED),
    }
}

/// The store's own claims first, then the copies.
pub(super) fn source_order(_: &CellCtx<'_>, a: &RowView<'_>, b: &RowView<'_>) -> Ordering {
    a.copy_of.is_some().cmp(&b.copy_of.is_some())
}

pub(super) fn key<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    match ctx.face {
        Face::Screen => key_cell(row.status, row.rules),
        Face::Text => sanitize(&row.status.key),
    }
}

/// A key is found by itself, not by its mark.
pub(super) fn key_found<'a>(_: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    sanitize(&row.status.key)
}

pub(super) fn key_order(_: &CellCtx<'_>, a: &RowView<'_>, b: &RowView<'_>) -> Ordering {
    a.status.key.cmp(&b.status.key)
}

pub(super) fn holder<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    match (record(row), ctx.face) {
        (Some(r), _) => sanitize(&r.holder),
        (None, Face::Screen) => Cow::Borrowed("(no record)"),
        (None, Face::Text) => Cow::Borrowed("-"),
    }
}

/// Only a record names a holder.
pub(super) fn holder_found<'a>(_: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    text_or_none(record(row).map(|r| r.holder.as_str()))
}

pub(super) fn holder_order(_: &CellCtx<'_>, a: &RowView<'_>, b: &RowView<'_>) -> Ordering {
    some_first(
        record(a).map(|r| r.holder.as_str()),
        record(b).map(|r| r.holder.as_str()),
    )
}

pub(super) fn pid<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    record(row).map_or_else(|| unknown(ctx), |r| Cow::Owned(r.pid.to_string()))
}

pub(super) fn pid_order(_: &CellCtx<'_>, a: &RowView<'_>, b: &RowView<'_>) -> Ordering {
    some_first(record(a).map(|r| r.pid), record(b).map(|r| r.pid))
}

pub(super) fn machine<'a>(_: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    Cow::Borrowed(match row.status.locality {
        Some(Locality::Local) => "local",
        Some(Locality::Other) => "other",
        Some(Locality::Unknown) => "local?",
        None => "",
    })
}

pub(super) fn machine_order(_: &CellCtx<'_>, a: &RowView<'_>, b: &RowView<'_>) -> Ordering {
    let rank = |l: Locality| match l {
        Locality::Local => 0,
        Locality::Unknown => 1,
        Locality::Other => 2,
    };
    some_first(a.status.locality.map(rank), b.status.locality.map(rank))
}

pub(super) fn age<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    record(row).map_or(Cow::Borrowed(""), |r| {
        Cow::Owned(coarse(ctx.now - r.acquired_at))
    })
}

/// Youngest first: the age column grows downwards.
pub(super) fn age_order(_: &CellCtx<'_>, a: &RowView<'_>, b: &RowView<'_>) -> Ordering {
    let at = |r: &RowView<'_>| record(r).map(|x| std::cmp::Reverse(x.acquired_at));
    some_first(at(a), at(b))
}

pub(super) fn ttl<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    record(row).map_or(Cow::Borrowed(""), |r| {
        Cow::Owned(ttl_cell(r.expires_at, ctx.now))
    })
}

/// Soonest deadline first; PID-bound (no deadline) after. A lease is
/// granted for the claim's TTL, so it runs out in the same order.
pub(super) fn deadline_order(_: &CellCtx<'_>, a: &RowView<'_>, b: &RowView<'_>) -> Ordering {
    some_first(
        record(a).and_then(|r| r.expires_at),
        record(b).and_then(|r| r.expires_at),
    )
}

pub(super) fn lease<'a>(ctx: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    ctx.places
        .lease_ms(row.status, ctx.now)
        .map_or(Cow::Borrowed(""), |ms| Cow::Owned(human_ms(ms)))
}

pub(super) fn harness<'a>(_: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    text_or_none(record(row).and_then(|r| r.harness.as_deref()))
}

pub(super) fn harness_order(_: &CellCtx<'_>, a: &RowView<'_>, b: &RowView<'_>) -> Ordering {
    let h = |r: &RowView<'_>| record(r).and_then(|x| x.harness.clone());
    some_first(h(a), h(b))
}

/// The record's reason, or why there is no record.
pub(super) fn reason<'a>(_: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    match record(row) {
        Some(r) => text_or_none(r.reason.as_deref()),
        None => text_or_none(row.status.error.as_deref()),
    }
}

/// Only a record gives a reason.
pub(super) fn reason_found<'a>(_: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    text_or_none(record(row).and_then(|r| r.reason.as_deref()))
}

pub(super) fn reason_order(_: &CellCtx<'_>, a: &RowView<'_>, b: &RowView<'_>) -> Ordering {
    let r = |v: &RowView<'_>| record(v).and_then(|x| x.reason.clone());
    some_first(r(a), r(b))
}

/// The verdict in words, and after it each hazard the claim is that its
/// verdict does not say.
pub(super) fn why<'a>(_: &CellCtx<'a>, row: &RowView<'a>) -> Cow<'a, str> {
    let s = row.status;
    match (&s.error, why_with_hazards(s, row.rules)) {
        (Some(e), _) => sanitize(e),
        (None, Cow::Borrowed(why)) => sanitize(why),
        (None, Cow::Owned(why)) => Cow::Owned(sanitize(&why).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn countdowns_read_coarsely_and_say_which_way() {
        assert_eq!(ttl_cell(Some(12 * 60_000 + 30_000), 0), "in 12m");
        assert_eq!(ttl_cell(Some(0), 3 * 60_000), "expired 3m ago");
        assert_eq!(ttl_cell(None, 0), "pid-bound");
        assert_eq!(coarse(45_000), "45s");
        assert_eq!(coarse(2 * 3_600_000 + 5 * 60_000), "2h05m");
        assert_eq!(coarse(50 * 3_600_000), "2d2h");
    }

    #[test]
    fn equal_buckets_mean_equal_text() {
        for (a, b) in [(61_000, 119_000), (3_600_000, 3_659_000), (5_000, 5_999)] {
            assert_eq!(time_bucket(a), time_bucket(b));
            assert_eq!(coarse(a), coarse(b));
        }
        assert_ne!(time_bucket(5_000), time_bucket(-5_000));
    }
}
