//! The top two lines: counts, hazards, clock and badges; then where the
//! data comes from.

use super::cells::{clock, safe_path, state_label, Theme};
use crate::claims::words::count;
use crate::claims::ClaimState;
use crate::dashboard::model::App;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    // Narrow terminals get single gaps, so the hazard count still fits at 80.
    let gap = if area.width < 100 { " " } else { "  " };
    let mut spans = vec![
        Span::styled(" claimtop ", theme.title(true)),
        Span::raw(" "),
    ];
    // The clock and the badges first: on a narrow terminal the end of the
    // line is what gets cut.
    spans.push(Span::styled(
        clock(app.shown_now(), app.local_time, "%H:%M:%S"),
        theme.dim(),
    ));
    spans.push(Span::raw(gap));
    // Paused, the view says what it is missing: each claim that changed
    // since is one more (the events pane counts its own lines).
    let paused = app.claims.frozen.as_ref().map(|f| match f.news {
        0 => " PAUSED ".to_string(),
        n => format!(" PAUSED · {n} new "),
    });
    for (on, badge) in [
        (app.read_only, " READ-ONLY "),
        (paused.is_some(), paused.as_deref().unwrap_or("")),
        (app.demo, " DEMO "),
    ] {
        if on {
            spans.push(Span::styled(badge.to_string(), theme.badge()));
            spans.push(Span::raw(" "));
        }
    }
    if let Some(asof) = super::asof::badge(app) {
        spans.push(Span::styled(asof, theme.badge()));
        spans.push(Span::raw(" "));
    }
    let head: usize = spans.iter().map(Span::width).sum();
    let counts = counts_spans(app, theme, gap, true);
    let fits = head + counts.iter().map(Span::width).sum::<usize>() <= usize::from(area.width);
    spans.extend(if fits {
        counts
    } else {
        counts_spans(app, theme, gap, false)
    });

    // Several origins: each one's label and counts; a site among them
    // adds its link after them. One site alone: its store line.
    if app.origins.several() {
        let mut line = super::roots::header_line(app, theme, area.width);
        if let Some(store) = &app.store {
            super::store::link_spans(&mut line, app, store, theme, area.width);
        }
        frame.render_widget(Paragraph::new(vec![Line::from(spans), line]), area);
        return;
    }
    if let Some(store) = &app.store {
        let line = super::store::header_line(app, store, theme);
        frame.render_widget(Paragraph::new(vec![Line::from(spans), line]), area);
        return;
    }
    let mut where_ = vec![
        Span::styled(" claims ", theme.label()),
        Span::raw(safe_path(&app.root.claims_dir())),
        Span::styled("  events ", theme.label()),
        Span::raw(safe_path(&app.root.events_file())),
    ];
    // Said beside the log itself: a count alone would not tell that the
    // audit trail is what is being lost.
    if app.events_log_broken() {
        where_.push(Span::styled(" ⚠ broken: events lost", theme.error()));
    }
    let where_ = Line::from(where_);
    frame.render_widget(Paragraph::new(vec![Line::from(spans), where_]), area);
}

/// Each state's count, then the hazards — the census's sums, the same
/// `list` prints. Unreadable claims are held as far as anyone can tell, so
/// they are counted whenever there are any. Without `words` (a narrow
/// terminal) only the symbols stay, which the legend and `?` explain.
/// Over the as-of table the counts are its own (the keys held then): a
/// live count beside "as of" would read as the past's.
fn counts_spans(app: &App, theme: &Theme, gap: &str, words: bool) -> Vec<Span<'static>> {
    if let Some(v) = app.modes.asof() {
        let text = match &v.rows {
            Some(rows) => format!("{} held then", count(rows.len(), "key")),
            None => "reading the events log…".to_string(),
        };
        return vec![Span::styled(text, theme.dim())];
    }
    let c = app.counted();
    let mut spans = Vec::new();
    for (state, n) in [
        (ClaimState::Live, c.live),
        (ClaimState::Suspect, c.suspect),
        (ClaimState::Stale, c.stale),
        (ClaimState::Corrupted, c.corrupted),
        (ClaimState::Unreadable, c.unreadable),
        (ClaimState::LastKnown, c.last_known),
    ] {
        // Said only while an offline host's copies are on screen.
        if matches!(state, ClaimState::Unreadable | ClaimState::LastKnown) && n == 0 {
            continue;
        }
        let (sym, word) = state_label(state).split_once(' ').unwrap_or(("", ""));
        let text = if words {
            format!("{sym} {n} {word}")
        } else {
            format!("{sym} {n}")
        };
        spans.push(Span::styled(text, theme.state(state)));
        spans.push(Span::raw(gap.to_string()));
    }
    let hz = app.hazard_count();
    let hz_style = if hz > 0 { theme.error() } else { theme.dim() };
    spans.push(Span::styled(
        format!("⚠ {hz} hazard{}", if hz == 1 { "" } else { "s" }),
        hz_style,
    ));
    spans
}
