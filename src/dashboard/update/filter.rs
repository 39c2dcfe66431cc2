//! Keys while the `/` filter is typed: applied as typed, remembered on
//! Enter, recalled with the arrows.

use super::rows::scroll_into_view;
use crate::dashboard::model::{App, Filter};
use ratatui::crossterm::event::{KeyCode, KeyEvent};

/// Most filters remembered for ↑/↓.
pub(super) const FILTER_HISTORY: usize = 50;

pub(super) fn filter_key(app: &mut App, ev: KeyEvent) -> bool {
    let Some(mut text) = app.table.filter_input.take() else {
        return false;
    };
    let t = &mut app.table;
    match ev.code {
        KeyCode::Enter => {
            // Applied as typed already; Enter keeps it and remembers it.
            let v = text.value().trim().to_string();
            if !v.is_empty() && t.filter_history.last() != Some(&v) {
                t.filter_history.push(v);
                if t.filter_history.len() > FILTER_HISTORY {
                    t.filter_history.remove(0);
                }
            }
            return true;
        }
        KeyCode::Esc => {
            t.filter = Filter::default();
        }
        KeyCode::Up | KeyCode::Down => {
            let n = t.filter_history.len();
            let pos = match (ev.code, t.history_pos) {
                (KeyCode::Up, None) => n.checked_sub(1),
                (KeyCode::Up, Some(i)) => Some(i.saturating_sub(1)),
                (_, Some(i)) if i + 1 < n => Some(i + 1),
                _ => None,
            };
            t.history_pos = pos;
            text = pos
                .and_then(|i| t.filter_history.get(i))
                .map_or_else(|| "".into(), |h| h.as_str().into());
            t.filter = Filter::parse(&text);
            t.filter_input = Some(text);
        }
        _ => {
            if !text.key(&ev) {
                t.filter_input = Some(text);
                return false;
            }
            t.filter = Filter::parse(&text);
            t.filter_input = Some(text);
        }
    }
    app.rebuild_rows();
    scroll_into_view(app);
    true
}
