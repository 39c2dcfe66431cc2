//! The `h` list: every hazard the view counts, most urgent kind first —
//! its own (root by root when there are several) and then what publishing
//! hosts found in theirs, under a line naming the host and root. Every
//! part is escaped: a host wrote a published one. `x` cleans only this
//! machine's: a published hazard is a file on another machine.

use super::cells::{safe, Theme};
use crate::claims::Hazard;
use crate::dashboard::model::App;
use ratatui::text::{Line, Span};

/// Where a hazard's path and detail start.
const INDENT: &str = "                  ";

/// The overlay's title and lines, its text wrapped to `width`.
pub fn lines(app: &App, theme: &Theme, width: u16) -> (String, Vec<Line<'static>>) {
    let mut own = app.claims.hazards();
    let several = app.roots.is_several();
    if several {
        // Root by root (stable: each root's keep their severity order).
        own.sort_by_key(|h| app.roots.of_path(h.path()));
    }
    let mut published: Vec<&Hazard> = app.fleet_hazards().iter().collect();
    published.sort_by_key(|h| h.copy().map(|c| (&c.host_id, &c.root)));
    let mut lines = Vec::new();
    if own.is_empty() && published.is_empty() {
        lines.push(Line::styled(" no hazards under this root", theme.dim()));
    }
    // Wrapped here, under their own column: the paragraph's own wrapping
    // would start continuation lines at the left border.
    let room = (width.saturating_sub(2) as usize).saturating_sub(INDENT.len());
    let mut place_shown = None;
    for h in own.iter().chain(published.iter().copied()) {
        if let Some(place) = place(app, h, several) {
            if place_shown.as_ref() != Some(&place) {
                lines.push(Line::styled(place.clone(), theme.label()));
                place_shown = Some(place);
            }
        }
        let path = safe(&h.path().to_string_lossy()).into_owned();
        let kind = safe(h.kind.name()).into_owned();
        for (i, piece) in super::detail::wrap(&path, room).into_iter().enumerate() {
            let label = if i == 0 { kind.as_str() } else { "" };
            lines.push(Line::from(vec![
                Span::styled(format!(" {label:<16} "), theme.error()),
                Span::raw(piece.to_string()),
            ]));
        }
        for piece in super::detail::wrap(&safe(&h.detail), room) {
            lines.push(Line::from(vec![
                Span::raw(INDENT),
                Span::styled(piece.to_string(), theme.dim()),
            ]));
        }
    }
    let title = format!(
        " hazards ({}) — Esc or h closes · x cleans what is abandoned ",
        own.len() + published.len()
    );
    (title, lines)
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
        let name = app.roots.of_path(h.path()).map_or_else(
            || "(no root)".into(),
            |i| super::roots::detail_value(app, i),
        );
        format!(" root {name}")
    })
}
