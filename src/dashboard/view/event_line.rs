//! One line of the events log as the panes show it: its time (with the
//! date when the log spans days), its kind in short, its fields.

use super::cells::{safe, Theme};
use crate::dashboard::model::EventRow;
use crate::events::kind::{short_of, Typed};
use ratatui::text::{Line, Span};
use std::borrow::Cow;

/// `12:34:56` out of the envelope's `2026-11-30T12:34:56Z`; anything else is
/// shown as written (escaped).
pub fn short_ts(ts: &str) -> Cow<'_, str> {
    let b = ts.as_bytes();
    let time = (b.len() == 20 && b[10] == b'T' && b[19] == b'Z')
        .then(|| ts.get(11..19))
        .flatten();
    if let Some(t) = time {
        safe(t)
    } else if ts.is_empty() {
        Cow::Borrowed("--:--:--")
    } else {
        safe(ts)
    }
}

/// `12-01 08:00:00Z` out of `2026-12-01T08:00:00Z`: for a pane whose lines
/// span more than one day, where a bare time would be ambiguous.
pub fn dated_ts(ts: &str) -> Cow<'_, str> {
    match envelope_date(ts) {
        Some(_) => Cow::Owned(format!("{} {}Z", &ts[5..10], &ts[11..19])),
        None => short_ts(ts),
    }
}

/// The `2026-12-01` of an envelope timestamp, if `ts` is one.
fn envelope_date(ts: &str) -> Option<&str> {
    let b = ts.as_bytes();
    (b.len() == 20 && b[4] == b'-' && b[10] == b'T' && b[19] == b'Z' && ts.is_ascii())
        .then(|| &ts[..10])
}

/// Do these lines need their dates: do they span more than one day, or
/// lie on another day than `today` (`YYYY-MM-DD`)?
pub fn needs_dates<'a>(mut ts: impl Iterator<Item = &'a str>, today: &str) -> bool {
    ts.any(|t| envelope_date(t).is_some_and(|d| d != today))
}

/// The type in short, escaped when another writer named it.
pub fn short_kind(kind: &Typed) -> Cow<'_, str> {
    safe(short_of(kind))
}

pub(super) fn row<'a>(ev: &'a EventRow, theme: &Theme, dated: bool) -> Line<'a> {
    if let Some(err) = &ev.error {
        return Line::from(vec![
            Span::styled("!! unparseable line: ", theme.error()),
            Span::styled(safe(err), theme.error()),
            Span::raw(" │ "),
            Span::styled(safe(&ev.detail), theme.dim()),
        ]);
    }
    let kind = short_kind(&ev.kind);
    let pad = 15usize.saturating_sub(kind.chars().count());
    Line::from(vec![
        Span::styled(
            if dated {
                dated_ts(&ev.ts)
            } else {
                short_ts(&ev.ts)
            },
            theme.dim(),
        ),
        Span::raw(" "),
        Span::styled(kind, theme.event(&ev.kind)),
        Span::raw(" ".repeat(pad + 1)),
        Span::raw(ev.key.as_deref().map(safe).unwrap_or(Cow::Borrowed("-"))),
        Span::raw("  "),
        Span::raw(ev.holder.as_deref().map(safe).unwrap_or_default()),
        Span::raw("  "),
        Span::styled(safe(&ev.detail), theme.dim()),
    ])
}
