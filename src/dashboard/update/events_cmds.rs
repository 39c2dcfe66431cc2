//! The events pane's commands. Following the tail, the motions scroll it
//! and going up opens the whole log; browsing the log (a layer of its own,
//! so Esc and `G` leave it before anything under it), they move a cursor
//! through it, `/` searches it, `n`/`N` step through the matches, Enter
//! goes to a line's claim in the table and `v` shows its raw JSON. With the `f` key filter on, the motions stay in
//! the (filtered) tail.

use super::effects::Effects;
use super::handled::Handled;
use super::rows::motion;
use super::rows::move_by;
use super::whole_log as logview;
use crate::dashboard::keys::{Cmd, Pane};
use crate::dashboard::model::{App, Layer, Level, PAGE};
use crate::dashboard::view::layout;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

/// A command while the pane browses the whole log; only while the pane has
/// the focus (elsewhere the browse window just stays on screen).
pub(super) fn browse_command(app: &mut App, cmd: Cmd, fx: &mut Effects) -> Handled {
    if app.focus != Pane::Events {
        return Handled::Pass;
    }
    let page = layout::events_capacity(app.size, app.look()).clamp(1, PAGE) as isize;
    let b = &mut app.events.browse;
    let asks = &mut fx.log;
    match cmd {
        Cmd::Up => b.move_by(-1, asks),
        Cmd::Down => b.move_by(1, asks),
        Cmd::PageUp => b.move_by(-page, asks),
        Cmd::PageDown => b.move_by(page, asks),
        Cmd::Top => b.top(asks),
        // Back to following the tail, at its end.
        Cmd::Bottom => {
            close(app);
            move_by(app, isize::MAX / 2);
        }
        Cmd::Filter => app.modes.push(Layer::Search(Default::default())),
        Cmd::SearchOlder | Cmd::SearchNewer => return find(app, cmd == Cmd::SearchOlder, fx),
        Cmd::RawEvent => b.raw = !b.raw,
        Cmd::Close | Cmd::GoToClaim if b.raw => b.raw = false,
        Cmd::GoToClaim => {
            // A line of the logs read as one is its log's origin's; else
            // the whole log is one root's, and its lines that root's.
            let Some(selected) = b.selected() else {
                return Handled::Done(false);
            };
            let mut ev = selected.row.clone();
            let of_set = crate::events::history::unpack_mark(selected.line.offset).0;
            ev.root = match b.set.get(of_set).filter(|_| b.reads_a_set()) {
                Some(log) => log.origin,
                None => app.log_root,
            };
            return Handled::Done(super::event_verbs::go_to_claim(app, &ev, fx));
        }
        Cmd::Close if b.search.is_some() => b.clear_search(asks),
        Cmd::Close => close(app),
        _ => return Handled::Pass,
    }
    Handled::Done(true)
}

/// A command in the pane while it follows the tail.
pub(super) fn command(app: &mut App, cmd: Cmd, fx: &mut Effects) -> Handled {
    let keyed = app.events.view.narrowed();
    match cmd {
        Cmd::Up | Cmd::PageUp | Cmd::Top if !keyed => open(app, cmd == Cmd::Top, fx),
        Cmd::Filter => {
            // Searching is browsing: the matches are shown in the file.
            open(app, false, fx);
            app.modes.push(Layer::Search(Default::default()));
        }
        Cmd::RawEvent => {
            open(app, false, fx);
            app.events.browse.raw = true;
        }
        // Narrowed, the newest line shown is the one meant.
        Cmd::GoToClaim if keyed => {
            let Some(ev) = app.shown_events().next_back().cloned() else {
                return Handled::Done(false);
            };
            return Handled::Done(super::event_verbs::go_to_claim(app, &ev, fx));
        }
        // Following, no line is under a cursor yet: put one on the newest.
        Cmd::GoToClaim => open(app, false, fx),
        Cmd::SearchOlder | Cmd::SearchNewer => return find(app, cmd == Cmd::SearchOlder, fx),
        Cmd::Close if app.events.browse.search.is_some() => {
            app.events.browse.clear_search(&mut fx.log)
        }
        Cmd::Up | Cmd::Down | Cmd::PageUp | Cmd::PageDown | Cmd::Top | Cmd::Bottom => {
            return Handled::Done(move_by(app, motion(app, cmd)))
        }
        _ => return Handled::Pass,
    }
    Handled::Done(true)
}

/// `n` / `N`: the next match, browsing from wherever the pane is.
fn find(app: &mut App, older: bool, fx: &mut Effects) -> Handled {
    if app.events.browse.search.is_none() {
        app.say(Level::Info, "no search yet: / searches the whole log");
        return Handled::Done(true);
    }
    enter(app);
    app.events.browse.find(older, &mut fx.log);
    Handled::Done(true)
}

/// Start browsing the log the selected row's events are in, from its end
/// (`from_start`: its first line).
fn open(app: &mut App, from_start: bool, fx: &mut Effects) {
    if !app.modes.browsing() && app.events.view.key.is_none() {
        logview::log_of_selected_row(app, fx);
        // Among several origins, the log of the selected row's origin, as
        // `t` reads it: a search on a row of A after `t` on a row of B
        // reads A's log, not B's (its note says whose).
        logview::log_of_selected_root(app, fx);
    }
    enter(app);
    app.events.browse.open(from_start, &mut fx.log);
}

/// The browse layer, pushed once.
pub(super) fn enter(app: &mut App) {
    if !app.modes.browsing() {
        app.events.browse.new_lines = 0;
        app.modes.push(Layer::Browse);
    }
}

/// Back to following the tail: the window is dropped.
pub(super) fn close(app: &mut App) {
    app.modes.remove(|l| matches!(l, Layer::Browse));
    app.events.browse.close();
}

/// A key typed into the events pane's search.
pub(super) fn search_key(app: &mut App, ev: &KeyEvent, fx: &mut Effects) -> bool {
    let Some(Layer::Search(mut input)) = app.modes.pop_if(|l| matches!(l, Layer::Search(_))) else {
        return false;
    };
    match ev.code {
        KeyCode::Enter => {
            enter(app);
            let shown = crate::dashboard::model::events::shown_by(app.local_time);
            app.events
                .browse
                .submit_input(input.value(), shown, &mut fx.log);
        }
        KeyCode::Esc => {}
        _ => {
            let typed = input.key(ev);
            app.modes.push(Layer::Search(input));
            return typed;
        }
    }
    true
}

/// The wheel over the events pane: as `k`/`j` there (up opens browsing).
pub(super) fn wheel(app: &mut App, delta: isize, fx: &mut Effects) -> Option<bool> {
    if app.events.view.narrowed() {
        return None;
    }
    if app.modes.browsing() {
        app.events.browse.move_by(delta, &mut fx.log);
    } else if delta < 0 {
        open(app, false, fx);
    } else {
        return None;
    }
    Some(true)
}
