//! The claims table's own commands: its motions, its filter and sort, and
//! the marks.

use super::bulk;
use super::handled::Handled;
use super::rows::motion;
use super::rows::{move_by, scroll_into_view};
use crate::dashboard::keys::Cmd;
use crate::dashboard::model::App;

/// A command while the table has the focus.
pub(super) fn command(app: &mut App, cmd: Cmd) -> Handled {
    Handled::Done(match cmd {
        Cmd::Up | Cmd::Down | Cmd::PageUp | Cmd::PageDown | Cmd::Top | Cmd::Bottom => {
            move_by(app, motion(app, cmd))
        }
        Cmd::Filter | Cmd::SortNext | Cmd::SortReverse => table_only(app, cmd),
        Cmd::Mark | Cmd::MarkAll | Cmd::ClearMarks => marks(app, cmd),
        _ => return Handled::Pass,
    })
}

/// The filter and the sort (also typed as `:sort-next` from any pane).
pub(super) fn table_only(app: &mut App, cmd: Cmd) -> bool {
    match cmd {
        Cmd::Filter => return super::filter::open(app),
        Cmd::SortNext => {
            let col = app.table.sort.column;
            app.table.sort.column = col.next(app.avail());
            app.table.sort.reverse = false;
        }
        Cmd::SortReverse => app.table.sort.reverse = !app.table.sort.reverse,
        _ => return false,
    }
    app.rebuild_rows();
    scroll_into_view(app);
    true
}

/// space, Ctrl-Space, Ctrl-\ (and U): mark one, mark every row shown,
/// drop every mark.
pub(super) fn marks(app: &mut App, cmd: Cmd) -> bool {
    match cmd {
        Cmd::Mark => bulk::toggle_mark(app),
        Cmd::MarkAll => bulk::mark_all_shown(app),
        _ => bulk::clear_marks(app),
    }
}
