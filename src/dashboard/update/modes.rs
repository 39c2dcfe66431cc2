//! Where a key goes. Ctrl-C first, wherever the operator is; then, on a
//! screen too small for the table, only quit and help; then the layer on
//! top of [`Modes`](crate::dashboard::model::Modes) — a dialog, a text
//! input or an overlay takes the key whole. Otherwise the keymap names the
//! command, and the layers that take commands (the table as of an instant,
//! the events pane browsing the log) see it top first before the focused
//! pane does. Each layer's handler lives with its feature; this is the one
//! match that reaches them.

use super::effects::Effects;
use super::run_cmd::{kind, run, Kind};
use super::{dialogs, events_cmds, filter, overlays, prompt, quit};
use crate::dashboard::keys::{self, Cmd, Pane};
use crate::dashboard::model::{App, Dialog, Layer, Overlay};
use crate::dashboard::view::layout;
use ratatui::crossterm::event::{KeyEvent, KeyEventKind};

/// A key press; true when something visible changed.
pub fn on_key(app: &mut App, ev: KeyEvent, fx: &mut Effects) -> bool {
    // Key releases (kitty protocol) are not presses.
    if ev.kind == KeyEventKind::Release {
        return false;
    }
    if keys::is_interrupt(&ev) {
        // No stamp came with it (a test's key): the model's clock.
        return quit::interrupt(app, app.now, fx);
    }
    if !layout::fits(app.size) {
        return too_small_key(app, ev, fx);
    }
    let modal = app.modes.top().filter(|l| l.is_modal()).map(kind);
    match modal {
        Some(Kind::Dialog) => dialogs::dialog_key(app, ev, fx),
        Some(Kind::Prompt) => prompt::prompt_key(app, &ev, fx),
        Some(Kind::Filter) => filter::filter_key(app, ev),
        Some(Kind::Search) => events_cmds::search_key(app, &ev, fx),
        Some(Kind::Overlay) => overlays::overlay_key(app, ev, fx),
        _ => match keys::lookup(app.focus, &ev, &app.key_overrides) {
            Some(cmd) => run(app, cmd, fx),
            None => false,
        },
    }
}

/// The screen cannot show the table: nothing may act unseen. Only quit, the
/// help (drawn over the whole small screen) and the quit question itself
/// take keys; resizes arrive as their own action.
fn too_small_key(app: &mut App, ev: KeyEvent, fx: &mut Effects) -> bool {
    match app.modes.top() {
        Some(Layer::Dialog(Dialog::Quit(_))) => return dialogs::dialog_key(app, ev, fx),
        // The help gets the whole small screen: it scrolls and closes with
        // the keys its title names, as it does at any size, or only its
        // first lines could ever be read.
        Some(Layer::Overlay {
            which: Overlay::Help,
            ..
        }) => return overlays::overlay_key(app, ev, fx),
        _ => {}
    }
    match keys::lookup(Pane::Table, &ev, &app.key_overrides) {
        Some(Cmd::Quit) => quit::request_quit(app, fx),
        Some(Cmd::Help) => {
            app.modes.open_overlay(Overlay::Help);
            true
        }
        _ => false,
    }
}
