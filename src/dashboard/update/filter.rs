//! Keys while the `/` filter is typed: applied as typed, remembered on
//! Enter, recalled with the arrows.

use super::rows::scroll_into_view;
use crate::dashboard::model::{App, Filter, Layer};
use ratatui::crossterm::event::{KeyCode, KeyEvent};

/// Most filters remembered for ↑/↓.
pub(super) const FILTER_HISTORY: usize = 50;

/// `/` in the table: the filter's input opens with the filter applied now.
pub(super) fn open(app: &mut App) -> bool {
    app.modes
        .push(Layer::Filter(app.table.filter.text.as_str().into()));
    app.table.history_pos = None;
    true
}

/// A key while the filter is typed; the input stays on top until Enter
/// keeps the filter or Esc clears it.
pub(super) fn filter_key(app: &mut App, ev: KeyEvent) -> bool {
    let Some(Layer::Filter(mut text)) = app.modes.pop_if(|l| matches!(l, Layer::Filter(_))) else {
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
            app.modes.push(Layer::Filter(text));
        }
        _ => {
            if !text.key(&ev) {
                app.modes.push(Layer::Filter(text));
                return false;
            }
            t.filter = Filter::parse(&text);
            app.modes.push(Layer::Filter(text));
        }
    }
    app.rebuild_rows();
    scroll_into_view(app);
    true
}
