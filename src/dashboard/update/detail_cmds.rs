//! The detail pane's own commands: its motions scroll it. What it shows is
//! the selected claim, so the claim verbs work here as in the table.

use super::handled::Handled;
use super::rows::motion;
use super::rows::move_by;
use crate::dashboard::keys::Cmd;
use crate::dashboard::model::App;

/// A command while the detail pane has the focus.
pub(super) fn command(app: &mut App, cmd: Cmd) -> Handled {
    match cmd {
        Cmd::Up | Cmd::Down | Cmd::PageUp | Cmd::PageDown | Cmd::Top | Cmd::Bottom => {
            Handled::Done(move_by(app, motion(app, cmd)))
        }
        _ => Handled::Pass,
    }
}
