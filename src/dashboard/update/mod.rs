//! Model transitions. No terminal and no I/O here: every function takes the
//! model and a message and says whether the screen must be redrawn. What
//! the disk and the process table say arrives as data (see `collect`); the
//! clock comes in with `Tick`.

pub(crate) mod asof;
mod bulk;
mod commands;
mod dialogs;
mod effects;
mod filter;
mod fleet;
mod ingest;
mod mouse;
mod overlays;
mod prompt;
pub mod roots;
mod rows;
mod store;
pub mod whole_log;

pub use crate::dashboard::action::Action;
use crate::dashboard::keys::{self, Cmd, Pane};
use crate::dashboard::model::{App, Dialog, Level, Overlay};
use crate::dashboard::view::layout;
pub use commands::command;
use commands::request_quit;
use dialogs::dialog_key;
pub use effects::Effects;
use filter::filter_key;
use ingest::on_op_result;
pub use ingest::{on_events, on_mirror, on_tick, visible_signature};
use mouse::on_mouse;
use overlays::overlay_key;
pub use prompt::run as run_command_line;
use ratatui::crossterm::event::{KeyEvent, KeyEventKind};
pub use rows::scroll_into_view;
use whole_log as logview;

/// Apply one message; true when something visible changed.
pub fn update(app: &mut App, action: Action) -> Effects {
    let mut fx = Effects::default();
    fx.redraw = step(app, action, &mut fx);
    // The browse view records what it asked (to know a page is on its
    // way); the asks themselves leave with the effects.
    fx.log.append(&mut app.events.browse.out);
    fx
}

/// One message's transition; true when something visible changed.
fn step(app: &mut App, action: Action, fx: &mut Effects) -> bool {
    match action {
        Action::Key(ev) => {
            let redraw = on_key(app, ev, fx);
            if redraw {
                app.refresh_selected_why();
            }
            redraw
        }
        Action::Mouse(m) => {
            let redraw = on_mouse(app, m);
            if redraw {
                app.refresh_selected_why();
            }
            redraw
        }
        Action::Mirror { root, delta } => on_mirror(app, root, *delta),
        Action::EventsAppended(lines) => {
            let tail = on_events(app, &lines);
            logview::on_lines(app, &lines) || tail
        }
        Action::Log(reply) => {
            let asof = asof::on_reply(app, &reply);
            logview::on_log(app, *reply) || asof
        }
        Action::EventsReset => {
            logview::on_reset(app);
            app.events.ring.clear();
            app.events.view.scroll = 0;
            app.events.view.new_while_scrolled = 0;
            !app.paused()
        }
        Action::EventsError(e) => {
            let changed = app.events.error.as_deref() != Some(e.as_str());
            app.events.error = Some(e);
            changed
        }
        Action::Tick(now) => {
            let table = on_tick(app, now);
            logview::on_tick(app, now) || table
        }
        Action::Resize(w, h) => {
            app.size = (w, h);
            scroll_into_view(app);
            true
        }
        Action::OpResult(r) => on_op_result(app, r, fx),
        Action::Warning(w) => {
            app.say(Level::Error, w);
            true
        }
        Action::Quit => {
            fx.quit = true;
            false
        }
        Action::InRoot(i, inner) => match roots::in_root(app, i, *inner) {
            Ok(redraw) => redraw,
            Err(other) => step(app, other, fx),
        },
        Action::Store(msg) => store::on_store(app, *msg),
    }
}

// ---------------------------------------------------------------- data

pub fn on_key(app: &mut App, ev: KeyEvent, fx: &mut Effects) -> bool {
    // Key releases (kitty protocol) are not presses.
    if ev.kind == KeyEventKind::Release {
        return false;
    }
    if keys::is_interrupt(&ev) {
        fx.quit = true;
        return false;
    }
    if !layout::fits(app.size) {
        return too_small_key(app, ev, fx);
    }
    if app.overlays.dialog.is_some() {
        return dialog_key(app, ev, fx);
    }
    if app.prompt.is_some() {
        return prompt::prompt_key(app, &ev, fx);
    }
    if app.table.filter_input.is_some() {
        return filter_key(app, ev);
    }
    if app.events.browse.input.is_some() {
        return logview::search_input_key(app, &ev);
    }
    if let Some(ov) = app.overlays.open {
        return overlay_key(app, ov, ev, fx);
    }
    match keys::lookup(app.focus, &ev, &app.key_overrides) {
        Some(cmd) => command(app, cmd, fx),
        None => false,
    }
}

/// The screen cannot show the table: nothing may act unseen. Only quit, the
/// help (drawn over the whole small screen) and the quit question itself
/// take keys; resizes arrive as their own action.
fn too_small_key(app: &mut App, ev: KeyEvent, fx: &mut Effects) -> bool {
    if matches!(app.overlays.dialog, Some(Dialog::Quit(_))) {
        return dialog_key(app, ev, fx);
    }
    // The help gets the whole small screen: it scrolls and closes with the
    // keys its title names, as it does at any size, or only its first
    // lines could ever be read.
    if app.overlays.open == Some(Overlay::Help) {
        return overlay_key(app, Overlay::Help, ev, fx);
    }
    match keys::lookup(Pane::Table, &ev, &app.key_overrides) {
        Some(Cmd::Quit) => request_quit(app, fx),
        Some(Cmd::Help) => {
            app.overlays.open = match app.overlays.open {
                Some(Overlay::Help) => None,
                _ => Some(Overlay::Help),
            };
            app.overlays.scroll = 0;
            true
        }
        _ => false,
    }
}
