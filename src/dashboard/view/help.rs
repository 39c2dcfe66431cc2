//! The `?` help (generated from the keymap) and the `h` hazards list.

use super::cells::{safe, safe_path, state_label, Theme};
use super::layout::{centered, wrapped_height};
use crate::claims::words::count;
use crate::claims::ClaimState;
use crate::dashboard::keys::{Pane, Scope, KEYMAP};
use crate::dashboard::model::{App, Overlay};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

fn scope_words(s: Scope) -> String {
    match s {
        Scope::Global => String::new(),
        Scope::Panes(ps) => {
            let names: Vec<&str> = ps.iter().map(|p| Pane::title(*p)).collect();
            format!(" ({} pane)", names.join(", "))
        }
        Scope::Timeline => " (timeline)".into(),
    }
}

pub fn draw_help(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let lines = help_lines(app, theme, overlay_width(area));
    overlay(
        frame,
        area,
        " help — Esc or ? closes ",
        lines,
        app.modes.overlay_scroll(),
        theme,
    );
}

/// What each state means, with its symbol and colour: the legend of `?`
/// (the status line carries a one-line version for a first look).
pub const LEGEND: [(ClaimState, &str); 6] = [
    (
        ClaimState::Live,
        "green: the holder's process is verifiably alive here (even past its TTL)",
    ),
    (
        ClaimState::Suspect,
        "yellow: the TTL still runs but the holder's pid is gone or cannot be checked; \
         the key stays blocked until the TTL ends",
    ),
    (
        ClaimState::Stale,
        "red: the holder is gone and nothing protects the claim; the next acquire reclaims it",
    ),
    (
        ClaimState::Corrupted,
        "magenta: the lockfile cannot be parsed; the key is blocked until it is force-released (F)",
    ),
    (
        ClaimState::Unreadable,
        "magenta: the lockfile cannot be read here (too big, too costly to parse, no \
         permission), so it may be a live claim: counted as held, force-released only with \
         its key typed",
    ),
    (
        ClaimState::LastKnown,
        "grey: what an offline publishing host last said of a claim; nobody can vouch for it \
         now, so it is counted apart, never as live, and nothing can be done to it (D forgets \
         the host)",
    ),
];

/// One entry: `label` in its own column, `text` wrapped under itself.
fn entry(
    lines: &mut Vec<Line<'static>>,
    label: Span<'static>,
    text: &str,
    style: Style,
    room: usize,
) {
    for (i, piece) in super::detail::wrap(text, room).into_iter().enumerate() {
        let head = if i == 0 {
            label.clone()
        } else {
            Span::raw(" ".repeat(LABEL + 2))
        };
        lines.push(Line::from(vec![
            head,
            Span::styled(piece.to_string(), style),
        ]));
    }
}

/// Width of the key column of the help.
const LABEL: usize = 11;

fn help_lines(app: &App, theme: &Theme, width: u16) -> Vec<Line<'static>> {
    let room = (width.saturating_sub(2) as usize).saturating_sub(LABEL + 2);
    let mut lines = Vec::new();
    // The legend first: what a colour on screen means is what a first
    // look at the help is for, and the keys follow on later pages.
    lines.push(Line::styled(" What the states mean", theme.label()));
    for (state, what) in LEGEND {
        let label = Span::styled(
            format!(" {:<LABEL$} ", state_label(state)),
            theme.state(state),
        );
        entry(&mut lines, label, what, Style::new(), room);
    }
    let label = Span::styled(format!(" {:<LABEL$} ", "⚠ hazard"), theme.error());
    entry(
        &mut lines,
        label,
        "something under the root that needs a human: a mutex corpse, temp litter, a \
         corrupted, unreadable or foreign claim, a claim whose record names another key \
         (marked ⚠ after its key) (h lists them and can clean what is abandoned)",
        Style::new(),
        room,
    );
    lines.push(Line::raw(""));
    lines.push(Line::styled(" Keys", theme.label()));
    for b in KEYMAP {
        let disabled = app.read_only && b.cmd.mutates();
        let text = format!(
            "{}{}{}",
            b.help,
            scope_words(b.scope),
            if disabled {
                " — disabled: read-only"
            } else {
                ""
            }
        );
        let shown = app.key_overrides.label_of(b);
        let label = Span::styled(format!(" {shown:<LABEL$} "), theme.key());
        let style = if disabled {
            theme.error()
        } else {
            Style::new()
        };
        entry(&mut lines, label, &text, style, room);
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        " Commands (:) — and every key above by its name (:timeline, :hazards); Tab completes",
        theme.label(),
    ));
    for v in crate::dashboard::keys::VERBS {
        let label = Span::styled(format!(" :{:<w$} ", v.name, w = LABEL - 1), theme.key());
        let text = format!("{} {}", v.args, v.help);
        entry(&mut lines, label, &text, Style::new(), room);
    }
    lines.push(Line::raw(""));
    let roots_note = super::roots::help_note(app);
    let fleet_note = super::store::help_note(app);
    for text in roots_note
        .iter()
        .chain(fleet_note.iter())
        .map(String::as_str)
        .chain([
            "Filter terms: a bare word matches key, holder or reason; field:value matches one \
         field (state: holder: harness: key: reason: root: host:). The same field twice means either \
         (state:stale state:corrupted); different fields must all match.",
            "In a text input: ←/→ Home/End move, Backspace/Delete, Ctrl-U/Ctrl-K/Ctrl-W cut, \
         ↑/↓ recall earlier filters; Tab moves between fields, Enter confirms, Esc cancels.",
        ])
    {
        for piece in super::detail::wrap(text, width.saturating_sub(4) as usize) {
            lines.push(Line::styled(format!(" {piece}"), theme.dim()));
        }
    }
    lines
}

pub fn draw_claim(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let (title, lines) = claim_lines(app, theme, overlay_width(area));
    overlay(
        frame,
        area,
        &title,
        lines,
        app.modes.overlay_scroll(),
        theme,
    );
}

/// The selected claim in full: the record exactly as the lockfile holds
/// it (escaped), the verdict and why, the file, and every event of the key
/// in the tail.
fn claim_lines(app: &App, theme: &Theme, width: u16) -> (String, Vec<Line<'static>>) {
    let room = (width.saturating_sub(2) as usize).saturating_sub(LABEL + 2);
    let mut lines = Vec::new();
    let Some(s) = app.selected_status() else {
        return (
            " claim ".into(),
            vec![Line::styled(" no claim selected", theme.dim())],
        );
    };
    let field = |lines: &mut Vec<Line<'static>>, name: &str, text: &str, style: Style| {
        let label = Span::styled(format!(" {name:<LABEL$} "), theme.label());
        entry(lines, label, text, style, room);
    };
    field(
        &mut lines,
        "state",
        state_label(s.state),
        theme.state(s.state),
    );
    field(&mut lines, "why", &safe(&s.why), Style::new());
    field(&mut lines, "file", &safe_path(&s.file), Style::new());
    lines.push(Line::raw(""));
    match &s.record {
        Some(r) => {
            lines.push(Line::styled(
                " record (YAML, as the lockfile holds it)",
                theme.label(),
            ));
            let yaml = r
                .to_yaml()
                .unwrap_or_else(|e| format!("(cannot be written as YAML: {e})"));
            for l in yaml.lines() {
                for piece in super::detail::wrap(&safe(l), width.saturating_sub(6) as usize) {
                    lines.push(Line::raw(format!("   {piece}")));
                }
            }
        }
        None => {
            let error = s.error.as_deref().map(safe).unwrap_or_default();
            field(
                &mut lines,
                "error",
                &error,
                theme.state(ClaimState::Corrupted),
            );
            let head = crate::sanitize::sanitize_bytes(&s.head);
            field(&mut lines, "first bytes", &head, Style::new());
        }
    }
    lines.push(Line::raw(""));
    let history: Vec<_> = app
        .events
        .ring
        .rows
        .iter()
        .filter(|e| e.key.as_deref() == Some(s.key.as_str()))
        .collect();
    lines.push(Line::styled(
        format!(
            " history ({} of this key in the tail)",
            count(history.len(), "event")
        ),
        theme.label(),
    ));
    for ev in history {
        let text = format!(
            "{} {} {}",
            super::event_line::short_kind(&ev.kind),
            ev.holder.as_deref().map(safe).unwrap_or_default(),
            safe(&ev.detail)
        );
        let label = Span::styled(
            format!(" {:<LABEL$} ", super::event_line::short_ts(&ev.ts)),
            theme.dim(),
        );
        entry(&mut lines, label, &text, theme.event(&ev.kind), room);
    }
    let title = format!(
        " {} — Esc or Enter closes · y copies the key ",
        safe(&s.key)
    );
    (title, lines)
}

pub fn draw_messages(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let (title, lines) = super::messages::lines(app, theme);
    let max = max_scroll(app, area);
    overlay(
        frame,
        area,
        &title,
        lines,
        app.modes.overlay_scroll().min(max),
        theme,
    );
}

pub fn draw_hazards(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let (title, lines) = super::hazards::lines(app, theme, overlay_width(area));
    overlay(
        frame,
        area,
        &title,
        lines,
        app.modes.overlay_scroll(),
        theme,
    );
}

/// How far the open overlay can scroll on a screen of `area`.
pub fn max_scroll(app: &App, area: Rect) -> u16 {
    let theme = Theme { color: false };
    let lines = match app.modes.overlay() {
        Some(Overlay::Help) => help_lines(app, &theme, overlay_width(area)),
        Some(Overlay::Hazards) => super::hazards::lines(app, &theme, overlay_width(area)).1,
        Some(Overlay::Claim) => claim_lines(app, &theme, overlay_width(area)).1,
        Some(Overlay::Messages) => super::messages::lines(app, &theme).1,
        // Not a scrolled text: it moves its own cursor and rows.
        Some(Overlay::Timeline) | None => return 0,
    };
    let rect = overlay_rect(area, &lines);
    let w = rect.width;
    wrapped_height(&lines, w).saturating_sub(rect.height.saturating_sub(2))
}

/// The box an overlay of `lines` takes on `area`.
fn overlay_rect(area: Rect, lines: &[Line]) -> Rect {
    let w = overlay_width(area);
    // One spare row: word wrapping may need it.
    let h = (wrapped_height(lines, w) + 3).min(area.height.saturating_sub(2));
    centered(area, w, h)
}

fn overlay_width(area: Rect) -> u16 {
    area.width.saturating_sub(4).min(110)
}

pub(super) fn overlay(
    frame: &mut Frame,
    area: Rect,
    title: &str,
    lines: Vec<Line>,
    scroll: u16,
    theme: &Theme,
) {
    let rect = overlay_rect(area, &lines);
    frame.render_widget(Clear, rect);
    let p = Paragraph::new(lines)
        .block(
            Block::new()
                .borders(Borders::ALL)
                .title(Span::styled(title.to_string(), theme.title(true))),
        )
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0));
    frame.render_widget(p, rect);
}
