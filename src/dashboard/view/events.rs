//! The tail of the events log: follows new lines, pauses when scrolled up.

use super::cells::{safe, Theme};
use super::event_line::{clock_for, row};
use crate::dashboard::keys::Pane;
use crate::dashboard::model::{App, EventRow};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let focused = app.focus == Pane::Events;
    if app.modes.browsing() {
        let b = &app.events.browse;
        let pane = super::browse::Pane {
            focused,
            paused: app.paused(),
            clock: clock_for(app, b.rows.iter().map(|r| &r.row)),
            typing: app.modes.search_input(),
        };
        super::browse::draw(frame, area, &app.events.browse, pane, theme);
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
    if !view.filter.is_empty() {
        title.push(Span::raw(" · "));
        title.push(Span::styled(safe(&view.filter.text), theme.key()));
        title.push(Span::styled(" (:events clears)", theme.dim()));
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
    let several = app.origins.several();
    let clock = clock_for(app, window.iter().copied());
    let mut lines: Vec<Line> = window
        .into_iter()
        .map(|e| {
            let mut line = row(e, theme, &clock);
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
                None if !view.filter.is_empty() => "no events in the tail pass the filter",
                None => "no events yet",
            },
            theme.dim(),
        ));
    }
    let p =
        Paragraph::new(lines).block(Block::new().borders(Borders::TOP).title(Line::from(title)));
    frame.render_widget(p, area);
}
