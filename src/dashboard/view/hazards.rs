//! The `h` list: every hazard the view counts, most urgent kind first —
//! its own (root by root when there are several) and then what publishing
//! hosts found in theirs, under a line naming the host and root. Every
//! part is escaped: a host wrote a published one. One entry is selected:
//! Enter goes to its row, `x` cleans it (only this machine's: a published
//! hazard is a file on another machine).

use super::cells::{safe, Theme};
use crate::claims::Hazard;
use crate::dashboard::model::App;
use ratatui::text::{Line, Span};

/// Where a hazard's path and detail start.
const INDENT: &str = "                  ";

/// The overlay's title and lines, its text wrapped to `width`.
pub fn lines(app: &App, theme: &Theme, width: u16) -> (String, Vec<Line<'static>>) {
    let (title, lines, _) = entries(app, theme, width);
    (title, lines)
}

/// The line the selected entry starts on (to scroll it into view).
pub fn selected_line(app: &App, width: u16) -> usize {
    let (_, _, starts) = entries(app, &Theme { color: false }, width);
    starts.get(app.hazard_cursor).copied().unwrap_or(0)
}

/// The title, the lines, and the line each entry starts on. The selected
/// entry is drawn reversed, its kind behind a `▶`.
fn entries(app: &App, theme: &Theme, width: u16) -> (String, Vec<Line<'static>>, Vec<usize>) {
    let all = app.hazard_entries();
    let several = app.origins.several();
    let mut lines = Vec::new();
    let mut starts = Vec::with_capacity(all.len());
    if all.is_empty() {
        lines.push(Line::styled(" no hazards under this root", theme.dim()));
    }
    // Wrapped here, under their own column: the paragraph's own wrapping
    // would start continuation lines at the left border.
    let room = (width.saturating_sub(2) as usize).saturating_sub(INDENT.len());
    let mut place_shown = None;
    for (n, h) in all.iter().enumerate() {
        if let Some(place) = place(app, h, several) {
            if place_shown.as_ref() != Some(&place) {
                lines.push(Line::styled(place.clone(), theme.label()));
                place_shown = Some(place);
            }
        }
        starts.push(lines.len());
        let first = lines.len();
        let path = safe(&h.path().to_string_lossy()).into_owned();
        let kind = safe(h.kind.name()).into_owned();
        let selected = n == app.hazard_cursor;
        for (i, piece) in super::detail::wrap(&path, room).into_iter().enumerate() {
            let label = if i == 0 { kind.as_str() } else { "" };
            let mark = if selected && i == 0 { '▶' } else { ' ' };
            lines.push(Line::from(vec![
                Span::styled(format!("{mark}{label:<16} "), theme.error()),
                Span::raw(piece.to_string()),
            ]));
        }
        for piece in super::detail::wrap(&safe(&h.detail), room) {
            lines.push(Line::from(vec![
                Span::raw(INDENT),
                Span::styled(piece.to_string(), theme.dim()),
            ]));
        }
        if selected {
            for l in &mut lines[first..] {
                *l = std::mem::take(l).patch_style(theme.selected());
            }
        }
    }
    let title = format!(
        " hazards ({}) — Enter: its row · x cleans litter · Esc closes ",
        all.len()
    );
    (title, lines, starts)
}

/// The line a hazard is listed under: its host (named as the host column
/// names it) and root when a host published it, its root when the view
/// shows several, else none.
fn place(app: &App, h: &Hazard, several: bool) -> Option<String> {
    if let Some(c) = h.copy() {
        let host = app
            .store
            .as_ref()
            .and_then(|v| v.fleet.host(&c.host_id))
            .map_or(c.host_id.as_str(), |i| i.label.as_str());
        return Some(format!(" host {}  root {}", safe(host), safe(&c.root)));
    }
    several.then(|| {
        let name = app.origins.of_path(h.path()).map_or_else(
            || "(no root)".into(),
            |i| super::roots::detail_value(app, i),
        );
        format!(" root {name}")
    })
}
