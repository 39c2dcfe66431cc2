//! Where a key goes. Ctrl-C first, wherever the operator is; then, on a
//! screen too small for the table, only quit and help; then the layer on
//! top of [`Modes`](crate::dashboard::model::Modes) — a dialog, a text
//! input or an overlay takes the key whole. Otherwise the keymap names the
//! command, and the layers that take commands (the table as of an instant,
//! the events pane browsing the log) see it top first before the focused
//! pane does. Each layer's handler lives with its feature; this is the one
//! match that reaches them.

use super::effects::Effects;
use super::{asof, commands, dialogs, events_cmds, filter, overlays, prompt, quit};
use crate::dashboard::keys::{self, Cmd, Pane};
use crate::dashboard::model::{App, Dialog, Layer, Level, Overlay};
use crate::dashboard::view::layout;
use ratatui::crossterm::event::{KeyEvent, KeyEventKind};

/// What a layer did with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// Taken; true when something visible changed.
    Done(bool),
    /// Not this layer's: the one below (at last the pane) gets it.
    Pass,
}

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

/// Run a command as its key means it now (also what `:` runs): refused
/// when a layer refuses it, else the command-taking layers top first, then
/// the focused pane.
pub fn run(app: &mut App, cmd: Cmd, fx: &mut Effects) -> bool {
    if let Some(why) = refusal(app, cmd) {
        app.say(Level::Error, why);
        return true;
    }
    for i in (0..app.modes.len()).rev() {
        let handled = match app.modes.get(i).map(kind) {
            Some(Kind::AsOf) => asof::command(app, cmd),
            Some(Kind::Browse) => events_cmds::browse_command(app, cmd, fx),
            // A modal layer under the top one waits for it to close.
            _ => Handled::Pass,
        };
        if let Handled::Done(redraw) = handled {
            return redraw;
        }
    }
    commands::command(app, cmd, fx)
}

/// Why `cmd` may not run now, in words: `--read-only` refuses what
/// writes, and a layer may refuse what it cannot mean (the table as of an
/// instant refuses every verb on a claim, wherever the focus is).
pub fn refusal(app: &App, cmd: Cmd) -> Option<String> {
    if cmd.mutates() && app.read_only {
        return Some("read-only: a, r, n and F are disabled (started with --read-only)".into());
    }
    let refusing = app
        .modes
        .layers()
        .rev()
        .find(|l| l.refuses(cmd, app.focus))?;
    match refusing {
        Layer::AsOf(v) => Some(asof::refusal(app, v, cmd)),
        _ => Some(format!(
            "{} does nothing here",
            cmd.name().unwrap_or("that key")
        )),
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

/// A layer's kind, without its data: what the dispatch matches on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dialog,
    Prompt,
    Filter,
    Search,
    Overlay,
    Browse,
    AsOf,
}

fn kind(l: &Layer) -> Kind {
    match l {
        Layer::Dialog(_) => Kind::Dialog,
        Layer::Prompt(_) => Kind::Prompt,
        Layer::Filter(_) => Kind::Filter,
        Layer::Search(_) => Kind::Search,
        Layer::Overlay { .. } => Kind::Overlay,
        Layer::Browse => Kind::Browse,
        Layer::AsOf(_) => Kind::AsOf,
    }
}
