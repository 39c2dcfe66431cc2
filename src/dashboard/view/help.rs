//! The `?` help (generated from the keymap) and the `h` hazards list.

use super::layout::{centered, wrapped_height};
use super::{safe, safe_path, Theme};
use crate::dashboard::app::App;
use crate::dashboard::keys::{Pane, Scope, KEYMAP};
use ratatui::layout::Rect;
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
    }
}

pub fn draw_help(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let mut lines = Vec::new();
    for b in KEYMAP {
        let disabled = app.read_only && b.cmd.mutates();
        lines.push(Line::from(vec![
            Span::styled(format!(" {:<8}", b.label), theme.key()),
            Span::raw(b.help),
            Span::styled(scope_words(b.scope), theme.dim()),
            Span::styled(
                if disabled {
                    " — disabled: read-only"
                } else {
                    ""
                },
                theme.error(),
            ),
        ]));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        " Filter terms combine (all must match): a bare word matches key, holder or reason;",
        theme.dim(),
    ));
    lines.push(Line::styled(
        " state:live|suspect|stale|corrupted  holder:TEXT  harness:TEXT",
        theme.dim(),
    ));
    lines.push(Line::styled(
        " In a dialog: type, Backspace, Tab moves between fields, Enter confirms, Esc cancels.",
        theme.dim(),
    ));
    overlay(
        frame,
        area,
        " help — Esc or ? closes ",
        lines,
        app.overlay_scroll,
        theme,
    );
}

pub fn draw_hazards(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let hazards = app.hazards();
    let mut lines = Vec::new();
    if hazards.is_empty() {
        lines.push(Line::styled(" no hazards under this root", theme.dim()));
    }
    for h in &hazards {
        lines.push(Line::from(vec![
            Span::styled(format!(" {:<16}", h.kind.as_str()), theme.error()),
            Span::raw(safe_path(&h.path)),
        ]));
        lines.push(Line::from(vec![
            Span::raw("                  "),
            Span::styled(safe(&h.detail).into_owned(), theme.dim()),
        ]));
    }
    let title = format!(" hazards ({}) — Esc or h closes ", hazards.len());
    overlay(frame, area, &title, lines, app.overlay_scroll, theme);
}

pub(super) fn overlay(
    frame: &mut Frame,
    area: Rect,
    title: &str,
    lines: Vec<Line>,
    scroll: u16,
    theme: &Theme,
) {
    let w = area.width.saturating_sub(4).min(110);
    // One spare row: word wrapping may need it.
    let h = (wrapped_height(&lines, w) + 3).min(area.height.saturating_sub(2));
    let rect = centered(area, w, h);
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
