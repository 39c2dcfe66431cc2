//! The two bottom lines: the status message (or the text being typed),
//! and the keys that work here — the top layer's, else the focused pane's
//! from the keymap.

use super::cells::{safe, state_label, Theme};
use crate::claims::words::count;
use crate::claims::ClaimState;
use crate::dashboard::keys::{self, Cmd};
use crate::dashboard::model::{App, Layer, Level, Overlay};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

pub fn draw_status(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let line = if let Some(p) = app.modes.prompt() {
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
    } else if let Some(text) = app.modes.filter_input() {
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
    let pairs = fit(layer_keys(app), area.width as usize);
    let mut spans = vec![Span::raw(" ")];
    for (k, what) in pairs {
        spans.push(Span::styled(k, theme.key()));
        spans.push(Span::raw(" "));
        spans.push(Span::raw(what));
        spans.push(Span::raw("  "));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The keys the layer on top owns (a modal one: only those work), or the
/// focused pane's, led by what the layers under the keys add.
fn layer_keys(app: &App) -> Vec<(&str, &str)> {
    let quit = quit_label(app);
    match app.modes.top() {
        Some(Layer::Dialog(_)) => {
            return vec![("Enter", "confirm"), ("Esc", "cancel"), ("Ctrl-C", "quit")]
        }
        Some(Layer::Prompt(_)) => {
            return vec![
                ("Tab", "complete"),
                ("↑/↓", "history"),
                ("Enter", "run"),
                ("Esc", "close"),
            ]
        }
        Some(Layer::Filter(_)) => {
            return vec![
                ("state:", "live|suspect|stale|corrupted|unreadable"),
                ("holder:", "…"),
                ("harness:", "…"),
                ("Enter", "keep filter"),
                ("Esc", "clear filter"),
            ]
        }
        Some(Layer::Search(_)) => return vec![("Enter", "search"), ("Esc", "cancel")],
        Some(Layer::Overlay { which, .. }) => {
            let mut v = vec![("Esc", "close"), ("j/k", "scroll")];
            match which {
                Overlay::Claim => v.push(("y", "copy key")),
                Overlay::Hazards if !app.read_only => v.push(("x", "clean")),
                _ => {}
            }
            v.push((quit, "quit"));
            return v;
        }
        _ => {}
    }
    // Zoomed, the way back leads: the other panes are out of sight; over
    // the past, so does the way back to now.
    let back = app.zoomed.then_some(("z", "all panes"));
    let now = app.modes.asof().map(|_| ("G/Esc", "back to now"));
    let refused = |cmd| app.modes.layers().any(|l| l.refuses(cmd, app.focus));
    back.into_iter()
        .chain(now)
        .chain(
            keys::footer(app.focus, app.read_only)
                // What a layer refuses here (verbs over the past) goes.
                .filter(move |b| !refused(b.cmd))
                .map(|b| (app.key_overrides.label_of(b), b.short)),
        )
        .collect()
}

/// How the quit key is spelled, rebound or not.
fn quit_label(app: &App) -> &str {
    keys::KEYMAP
        .iter()
        .find(|b| b.cmd == Cmd::Quit)
        .map_or("q", |b| app.key_overrides.label_of(b))
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
