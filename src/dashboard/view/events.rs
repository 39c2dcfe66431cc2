//! The tail of the events log: follows new lines, pauses when scrolled up.

use super::{safe, Theme};
use crate::dashboard::keys::Pane;
use crate::dashboard::model::{App, EventRow};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
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

/// The type without the `claim_` every claim event shares.
pub fn short_kind(kind: &str) -> Cow<'_, str> {
    match kind {
        "claim_idempotent_reacquired" => Cow::Borrowed("reacquired"),
        k => safe(k.strip_prefix("claim_").unwrap_or(k)),
    }
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

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let focused = app.focus == Pane::Events;
    if app.events.browse.active {
        super::browse::draw(frame, area, &app.events.browse, focused, &today(app), theme);
        return super::roots::log_root_note(frame, area, app, theme);
    }
    let cap = area.height.saturating_sub(1) as usize;
    let view = &app.events.view;
    // Newest last; only the window is collected.
    let mut window: Vec<&EventRow> = app
        .shown_events()
        .rev()
        .skip(view.scroll)
        .take(cap)
        .collect();
    window.reverse();
    let mut title = vec![Span::styled(
        format!("{}events", if focused { "» " } else { "" }),
        theme.title(focused),
    )];
    if let Some(k) = &view.key {
        title.push(Span::raw(" · key "));
        title.push(Span::styled(safe(k), theme.key()));
        title.push(Span::styled(" (f: all)", theme.dim()));
    }
    if view.scroll > 0 {
        title.push(Span::styled(" · scrolled, not following", theme.key()));
        if view.new_while_scrolled > 0 {
            title.push(Span::styled(
                format!(" · +{} new", view.new_while_scrolled),
                theme.key(),
            ));
        }
        title.push(Span::styled(" · G resumes", theme.dim()));
    } else if app.paused() {
        title.push(Span::styled(" · paused", theme.key()));
        let missed = app.events_since_pause();
        if missed > 0 {
            title.push(Span::styled(format!(" · {missed} new"), theme.key()));
        }
        title.push(Span::styled(" (p resumes)", theme.dim()));
    } else {
        title.push(Span::styled(" · following", theme.dim()));
    }
    let several = app.roots.is_several();
    let dated = needs_dates(window.iter().map(|e| e.ts.as_str()), &today(app));
    let mut lines: Vec<Line> = window
        .into_iter()
        .map(|e| {
            let mut line = row(e, theme, dated);
            if several {
                line.spans
                    .insert(0, super::roots::event_root(app, e.root, theme));
            }
            line
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::styled(
            match &app.events.error {
                Some(_) => "the events log cannot be read (see the status line)",
                None if view.key.is_some() => "no events for this key in the tail",
                None => "no events yet",
            },
            theme.dim(),
        ));
    }
    let p =
        Paragraph::new(lines).block(Block::new().borders(Borders::TOP).title(Line::from(title)));
    frame.render_widget(p, area);
}

/// The shown clock's date, as the envelope writes dates (UTC).
pub(super) fn today(app: &App) -> String {
    crate::time::utc_hms(app.shown_now())[..10].to_string()
}
