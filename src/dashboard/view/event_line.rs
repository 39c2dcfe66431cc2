//! One line of the events log as the panes show it: its time in the
//! chosen zone (with the date when the lines span days, or as a span from
//! now), its kind in short, its fields. The words are the model's
//! ([`EventRow::shown`]), which the search matches too; this adds style.

use super::cells::{safe, Theme};
use crate::dashboard::model::events::{EventClock, Part};
use crate::dashboard::model::{App, EventRow};
use crate::events::kind::{short_of, Typed};
use ratatui::text::{Line, Span};
use std::borrow::Cow;

/// Do these instants need their dates: does any lie on another day than
/// `now`, in the chosen zone?
pub fn needs_dates(mut ats: impl Iterator<Item = Option<i64>>, now: i64, local: bool) -> bool {
    let day = |ms| crate::time::bare_clock(ms, local, "%Y-%m-%d");
    let today = day(now);
    ats.any(|at| at.is_some_and(|t| day(t) != today))
}

/// How the lines of a window word their instants.
pub fn clock_for<'a>(app: &App, window: impl Iterator<Item = &'a EventRow>) -> EventClock {
    let now = app.shown_now();
    let relative = app.flip_times;
    EventClock {
        now,
        local: app.local_time,
        relative,
        dated: !relative && needs_dates(window.map(|e| e.at), now, app.local_time),
    }
}

/// The type in short, escaped when another writer named it.
pub fn short_kind(kind: &Typed) -> Cow<'_, str> {
    safe(short_of(kind))
}

pub(super) fn row<'a>(ev: &'a EventRow, theme: &Theme, clock: &EventClock) -> Line<'a> {
    let spans: Vec<Span<'a>> = ev
        .shown(clock)
        .into_iter()
        .map(|(text, part)| match part {
            Part::Time => Span::styled(text, theme.dim()),
            Part::Kind => Span::styled(text, theme.event(&ev.kind)),
            Part::Plain => Span::raw(text),
            Part::Detail => Span::styled(text, theme.dim()),
            Part::Error => Span::styled(text, theme.error()),
        })
        .collect();
    Line::from(spans)
}
