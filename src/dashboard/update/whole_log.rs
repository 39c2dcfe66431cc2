//! Model transitions of the two whole-log views: the events pane browsing
//! the log (search, raw JSON, position) and the timeline. Pure like the
//! rest of `update`: the events service's replies come in as
//! [`Action::Log`](super::Action::Log), and requests leave in the
//! effects (`fx.log`).

use super::effects::Effects;
use crate::dashboard::keys::{self, Cmd};
use crate::dashboard::model::{App, Level, Overlay};
use crate::dashboard::view::timeline::{bar_width, visible_rows};
use crate::events::history::Log;
use crate::events::service::{Reply, Request};
use crate::events::tail::Line;
use ratatui::crossterm::event::KeyEvent;

/// A reply of the events service; true when something visible changed.
pub fn on_log(app: &mut App, mut reply: Reply, fx: &mut Effects) -> bool {
    let timeline_open = app.modes.overlay() == Some(Overlay::Timeline);
    let browsing = app.modes.browsing();
    let b = &mut app.events.browse;
    match &reply {
        // "As of" takes its own reply (`super::asof::on_reply`).
        Reply::Page(_) | Reply::Search { .. } | Reply::Error(_) | Reply::AsOf { .. } => {}
        Reply::Matches(m) => b.on_matches(*m),
        Reply::Progress(p) => b.on_progress(*p),
        Reply::Indexed { lines, end, .. } | Reply::Lines { lines, end } => {
            b.on_counted(*lines, *end, browsing, &mut fx.log)
        }
        Reply::Ends(e) => b.count.ends = Some(e.clone()),
        Reply::TailTenures(_) | Reply::Window { .. } => {}
    }
    let timeline_changed = app.timeline.on_reply(&mut reply);
    match reply {
        // A page that comes after the pane went back to following is
        // dropped.
        Reply::Page(p) => {
            if browsing {
                b.on_page(p);
            } else {
                b.page_dropped();
            }
            browsing
        }
        Reply::Search { id, found, wrapped } => {
            if let Some(words) = b.on_search(id, found, wrapped, &mut fx.log) {
                app.say(Level::Info, words);
            }
            true
        }
        Reply::Matches(_) => browsing,
        Reply::Error(e) => {
            b.on_error();
            app.say(Level::Error, format!("events log: {e}"));
            true
        }
        // The count shows in the pane's title while browsing.
        Reply::Progress(_) | Reply::Indexed { .. } | Reply::Lines { .. } => {
            browsing || (timeline_open && timeline_changed)
        }
        Reply::TailTenures(_) | Reply::Window { .. } => timeline_open && timeline_changed,
        Reply::AsOf { .. } | Reply::Ends(_) => false,
    }
}

/// New lines from the follower: the timeline stays live, the count grows.
/// Over a store the pane follows its own events and what hosts mirror;
/// the whole-log views take only the lines of the log they read.
pub fn on_lines(app: &mut App, lines: &[Line]) -> bool {
    let b = &app.events.browse;
    let mine: Vec<Line>;
    let lines = if lines.iter().all(|l| of_log(&b.log, &b.log_path, l)) {
        lines
    } else {
        mine = lines
            .iter()
            .filter(|l| of_log(&b.log, &b.log_path, l))
            .cloned()
            .collect();
        &mine[..]
    };
    app.events.browse.on_appended(lines, app.modes.browsing());
    let changed = app.timeline.on_lines(lines);
    changed && app.modes.overlay() == Some(Overlay::Timeline)
}

/// New lines of one of the logs the views read as one, marked as the set
/// marks them.
pub fn on_set_lines(app: &mut App, lines: &[Line]) -> bool {
    app.events.browse.on_appended(lines, app.modes.browsing());
    let changed = app.timeline.on_lines(lines);
    changed && app.modes.overlay() == Some(Overlay::Timeline)
}

/// Is this followed line one of `log`'s? A mirrored line is marked with
/// its host's id and its root's path (`crate::store::fleet::mark_published`).
fn of_log(log: &Log, root_path: &str, line: &Line) -> bool {
    let marked = || {
        serde_json::from_str::<serde_json::Value>(&line.text)
            .ok()
            .and_then(|v| {
                let host = v.get("host_id")?.as_str()?.to_string();
                let root = v.get("root")?.as_str()?.to_string();
                Some((host, root))
            })
    };
    match log {
        // A root's own log is read from its file, not followed here.
        Log::Own | Log::Root(_) => !line.text.contains("\"host_id\"") || marked().is_none(),
        Log::Mirrored { host_id, .. } => {
            marked().is_some_and(|(h, r)| &h == host_id && r == root_path)
        }
    }
}

/// Over a store, the whole-log views read the log of the selected row: a
/// copy a host publishes, its root's mirrored log; else the store's own.
/// When that is not the log they read, they move to it (the service reads
/// it from scratch, the views start over).
pub fn log_of_selected_row(app: &mut App, fx: &mut Effects) {
    let Some(store) = app
        .store
        .as_ref()
        .filter(|_| !app.events.browse.reads_a_set())
    else {
        return;
    };
    let origin = app
        .table
        .rows
        .get(app.table.selected)
        .and_then(|id| store.fleet.origin(id));
    let (log, path) = match origin {
        Some(o) => (
            Log::Mirrored {
                host_id: o.host_id.clone(),
                root_id: o.root_id.clone(),
            },
            o.root_path.clone(),
        ),
        None => (Log::Own, String::new()),
    };
    let b = &mut app.events.browse;
    if b.log == log {
        return;
    }
    b.log = log.clone();
    b.log_path = path;
    app.timeline.on_reset();
    fx.log.push(Request::OpenLog(log));
    let browsing = app.modes.browsing();
    app.events.browse.on_reset(browsing, &mut fx.log);
}

/// The log was truncated or replaced: both views start over, and the
/// service indexes what is there now.
pub fn on_reset(app: &mut App, fx: &mut Effects) {
    app.timeline.on_reset();
    // Reindex first: the service then answers the page below from the new
    // file, not from the one it still holds open.
    fx.log.push(Request::Reindex);
    let browsing = app.modes.browsing();
    app.events.browse.on_reset(browsing, &mut fx.log);
}

/// The clock moved: a following timeline moves with it.
pub fn on_tick(app: &mut App, now: i64) -> bool {
    // Paused: the view holds still (the tenures keep being ingested).
    !app.paused() && app.timeline.on_tick(now) && app.modes.overlay() == Some(Overlay::Timeline)
}

/// Open the timeline.
pub fn open_timeline(app: &mut App, fx: &mut Effects) -> bool {
    log_of_selected_root(app, fx);
    log_of_selected_row(app, fx);
    app.modes.open_overlay(Overlay::Timeline);
    if app.timeline.follow {
        app.timeline.follow_now(app.shown_now());
        app.timeline.fit();
    }
    ask_window(app, fx);
    true
}

/// The view moved before what the whole index keeps: ask for that span.
fn ask_window(app: &mut App, fx: &mut Effects) {
    if let Some((from, to)) = app.timeline.wanted_window() {
        fx.log.push(Request::Window { from, to });
    }
}

/// A key while the timeline is open.
pub fn timeline_key(app: &mut App, ev: &KeyEvent, fx: &mut Effects) -> Option<Cmd> {
    let cmd = keys::lookup_timeline(ev, &app.key_overrides)?;
    let width = bar_width(app.size.0);
    let visible = visible_rows(app.size.1);
    let rows = app.timeline.rows(app.timeline_keeps()).len();
    let now = app.shown_now();
    let tl = &mut app.timeline;
    match cmd {
        Cmd::TimeBack => tl.move_cursor(-1, width),
        Cmd::TimeForward => tl.move_cursor(1, width),
        Cmd::TimeBackFar => tl.move_cursor(-10, width),
        Cmd::TimeForwardFar => tl.move_cursor(10, width),
        Cmd::ZoomIn => tl.zoom(true),
        Cmd::ZoomOut => tl.zoom(false),
        Cmd::Up => tl.select(-1, rows, visible),
        Cmd::Down => tl.select(1, rows, visible),
        Cmd::PageUp => tl.select(-(visible as isize), rows, visible),
        Cmd::PageDown => tl.select(visible as isize, rows, visible),
        Cmd::Top => tl.select(isize::MIN / 2, rows, visible),
        Cmd::Bottom => tl.follow_now(now),
        Cmd::Close | Cmd::Timeline => {
            app.modes.close_overlay();
        }
        // The caller opens it (it asks the service, an effect).
        Cmd::AsOfCursor => return Some(Cmd::AsOfCursor),
        // Help, quit, suspend: the caller's, as in every view.
        other => return Some(other),
    }
    ask_window(app, fx);
    None
}

/// The timeline opens on the selected row's root: when that is not the
/// root whose log the whole-log views read, they move to its log (the
/// service indexes it from scratch, the views start over).
pub fn log_of_selected_root(app: &mut App, fx: &mut Effects) {
    if !app.origins.several() || app.events.browse.reads_a_set() {
        return;
    }
    let Some(i) = app.selected_status().map(|s| app.origins.of(s)) else {
        return;
    };
    let Some(log) = app.origins.get(i).map(|r| r.events_file()) else {
        return;
    };
    if i == app.log_root {
        return;
    }
    app.log_root = i;
    app.timeline.on_reset();
    fx.log.push(Request::Open(log));
    let browsing = app.modes.browsing();
    app.events.browse.on_reset(browsing, &mut fx.log);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dashboard::keys::Pane;
    use ratatui::crossterm::event::KeyCode;

    #[test]
    fn the_timeline_keys_are_not_pane_keys() {
        let ev = KeyEvent::from(KeyCode::Char('+'));
        assert_eq!(
            keys::lookup_timeline(&ev, &keys::Overrides::default()),
            Some(Cmd::ZoomIn)
        );
        assert_eq!(
            keys::lookup(Pane::Table, &ev, &keys::Overrides::default()),
            None
        );
        let h = KeyEvent::from(KeyCode::Char('h'));
        assert_eq!(
            keys::lookup_timeline(&h, &keys::Overrides::default()),
            Some(Cmd::TimeBack)
        );
        assert_eq!(
            keys::lookup(Pane::Table, &h, &keys::Overrides::default()),
            Some(Cmd::Hazards)
        );
    }
}
