//! The mouse: a click selects or sorts, the wheel scrolls what is under
//! the pointer.

use super::effects::Effects;
use super::overlays::scroll_overlay;
use super::rows::{move_by, scroll_into_view};
use crate::dashboard::keys::Pane;
use crate::dashboard::model::{App, Layer};
use crate::dashboard::view::layout;
use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};

/// Lines one wheel notch scrolls.
pub(super) const WHEEL: isize = 3;

/// A click selects a row or a pane, a click on a column title sorts by it
/// (again: reversed), the wheel scrolls what is under the pointer.
pub fn on_mouse(app: &mut App, m: MouseEvent, fx: &mut Effects) -> bool {
    if !layout::fits(app.size) {
        return false;
    }
    let wheel = match m.kind {
        MouseEventKind::ScrollUp => -WHEEL,
        MouseEventKind::ScrollDown => WHEEL,
        MouseEventKind::Down(MouseButton::Left) => 0,
        _ => return false,
    };
    // A modal layer on top keeps the mouse off the panes: an overlay
    // scrolls under the wheel, a dialog or a text input takes none of it.
    match app.modes.top() {
        Some(Layer::Overlay { .. }) => return wheel != 0 && scroll_overlay(app, wheel as i32),
        Some(Layer::Dialog(_)) => return false,
        _ => {}
    }
    let Some(a) = layout::areas_of(app.size, app.look()) else {
        return false;
    };
    let at = ratatui::layout::Position {
        x: m.column,
        y: m.row,
    };
    let Some(pane) = [
        (Pane::Table, a.table),
        (Pane::Detail, a.detail),
        (Pane::Events, a.events),
    ]
    .into_iter()
    .find(|(_, r)| r.contains(at))
    .map(|(p, _)| p) else {
        return false;
    };
    if wheel != 0 {
        if pane == Pane::Events {
            if let Some(redraw) = super::events_cmds::wheel(app, wheel, fx) {
                return redraw;
            }
        }
        let before = app.focus;
        app.focus = pane;
        let moved = move_by(app, wheel);
        app.focus = before;
        return moved;
    }
    let focus_moved = app.focus != pane;
    app.focus = pane;
    if pane == Pane::Table {
        // The focus may have resized the table: hit-test the layout now.
        let area = layout::areas_of(app.size, app.look()).map_or(a.table, |a| a.table);
        match crate::dashboard::view::table::hit(app, area, m.column, m.row) {
            Some(crate::dashboard::view::table::Hit::Title(col)) => {
                if app.table.sort.column == col {
                    app.table.sort.reverse = !app.table.sort.reverse;
                } else {
                    app.table.sort = crate::dashboard::model::Sort {
                        column: col,
                        reverse: false,
                    };
                }
                app.rebuild_rows();
                scroll_into_view(app);
                return true;
            }
            Some(crate::dashboard::view::table::Hit::Row(i)) => {
                if app.table.selected != i {
                    app.table.selected = i;
                    app.table.detail_scroll = 0;
                }
                scroll_into_view(app);
                return true;
            }
            None => {}
        }
    }
    if focus_moved {
        scroll_into_view(app);
    }
    focus_moved
}
