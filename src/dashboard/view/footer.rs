//! The two bottom lines: the status message, and the keys that work here.

use super::cells::{safe, state_label, Theme};
use crate::claims::words::count;
use crate::claims::ClaimState;
use crate::dashboard::keys;
use crate::dashboard::model::{App, Level, Overlay};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

pub fn draw_status(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let line = if let Some(p) = &app.prompt {
        let mut spans = vec![Span::styled(" :", theme.key())];
        spans.extend(super::cells::cursor_spans(&p.input, true, theme));
        if let Some(e) = &p.error {
            spans.push(Span::styled(format!("  ✖ {}", safe(e)), theme.error()));
        } else if !p.offers.is_empty() {
            let shown: Vec<&str> = p.offers.iter().take(12).map(String::as_str).collect();
            let more = p.offers.len().saturating_sub(shown.len());
            let mut text = format!("  {}", shown.join(" "));
            if more > 0 {
                text.push_str(&format!(" … {more} more"));
            }
            spans.push(Span::styled(safe(&text).into_owned(), theme.dim()));
        }
        Line::from(spans)
    } else if let Some(text) = &app.table.filter_input {
        let mut spans = vec![Span::styled(" filter: ", theme.key())];
        spans.extend(super::cells::cursor_spans(text, true, theme));
        match &app.table.filter.problem {
            Some(p) => spans.push(Span::styled(format!("  ✖ {}", safe(p)), theme.error())),
            None => spans.push(Span::styled(
                format!(
                    "  {} of {}",
                    app.table.rows.len(),
                    count(app.shown().len(), "claim")
                ),
                theme.dim(),
            )),
        }
        Line::from(spans)
    } else if let Some(msg) = &app.status {
        let style = match msg.level {
            Level::Info => ratatui::style::Style::new(),
            Level::Ok => theme.ok(),
            Level::Error => theme.error(),
        };
        Line::from(vec![Span::raw(" "), Span::styled(safe(&msg.text), style)])
    } else if let Some(e) = &app.events.error {
        Line::from(vec![
            Span::styled(" events log: ", theme.error()),
            Span::styled(safe(e), theme.error()),
        ])
    } else if !app.seen_help {
        // A first look: what the symbols mean, until the help has been seen.
        let mut spans = vec![Span::raw(" ")];
        for (state, what) in [
            (ClaimState::Live, "holder alive"),
            (ClaimState::Suspect, "TTL runs, holder gone"),
            (ClaimState::Stale, "reclaimable"),
            (ClaimState::Corrupted, "not a claim"),
            (ClaimState::Unreadable, "may be held"),
        ] {
            spans.push(Span::styled(state_label(state), theme.state(state)));
            spans.push(Span::styled(format!(": {what}  "), theme.dim()));
        }
        spans.push(Span::styled("? explains", theme.key()));
        Line::from(spans)
    } else {
        Line::from(vec![
            Span::styled(" you are ", theme.dim()),
            Span::styled(safe(&app.operator), theme.dim()),
        ])
    };
    frame.render_widget(Paragraph::new(line), area);
}

pub fn draw_keys(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let pairs: Vec<(&str, &str)> = if app.overlays.dialog.is_some() {
        vec![("Enter", "confirm"), ("Esc", "cancel"), ("Ctrl-C", "quit")]
    } else if app.prompt.is_some() {
        vec![
            ("Tab", "complete"),
            ("↑/↓", "history"),
            ("Enter", "run"),
            ("Esc", "close"),
        ]
    } else if app.table.filter_input.is_some() {
        vec![
            ("state:", "live|suspect|stale|corrupted|unreadable"),
            ("holder:", "…"),
            ("harness:", "…"),
            ("Enter", "keep filter"),
            ("Esc", "clear filter"),
        ]
    } else if let Some(ov) = app.overlays.open {
        let mut v = vec![("Esc", "close"), ("j/k", "scroll")];
        match ov {
            Overlay::Claim => v.push(("y", "copy key")),
            Overlay::Hazards if !app.read_only => v.push(("x", "clean")),
            _ => {}
        }
        v.push(("q", "quit"));
        v
    } else {
        // Zoomed, the way back leads: the other panes are out of sight.
        let back = app.zoomed.then_some(("z", "all panes"));
        back.into_iter()
            .chain(
                keys::footer(app.focus, app.read_only)
                    .map(|b| (app.key_overrides.label_of(b), b.short)),
            )
            .collect()
    };
    let pairs = fit(pairs, area.width as usize);
    let mut spans = vec![Span::raw(" ")];
    for (k, what) in pairs {
        spans.push(Span::styled(k, theme.key()));
        spans.push(Span::raw(" "));
        spans.push(Span::raw(what));
        spans.push(Span::raw("  "));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// Drop keys from the middle until the line fits, keeping the last two
/// (help and quit): those are the ones a lost operator looks for.
fn fit<'a>(mut pairs: Vec<(&'a str, &'a str)>, width: usize) -> Vec<(&'a str, &'a str)> {
    let len = |ps: &[(&str, &str)]| -> usize {
        1 + ps
            .iter()
            .map(|(k, w)| k.chars().count() + w.chars().count() + 3)
            .sum::<usize>()
    };
    while len(&pairs) > width && pairs.len() > 2 {
        let drop = pairs.len() - 3;
        pairs.remove(drop);
    }
    pairs
}
