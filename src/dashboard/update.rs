//! Model transitions. No terminal and no I/O here: every function takes the
//! model and a message and says whether the screen must be redrawn. What
//! the disk and the process table say arrives as data (see `collect`); the
//! clock comes in with `Tick`.

use super::action::{Action, ForceOptsShown, Op, OpResult};
use super::app::{
    AcquireForm, App, ClaimSet, CleanConfirm, Dialog, EventRow, Filter, ForceConfirm, Frozen,
    Level, Overlay, QuitConfirm, RenewForm,
};
use super::keys::{self, Cmd, Pane};
use super::logview;
use super::roots::RootSet;
use super::view::{layout, time_bucket};
use crate::claims::{parse_ttl_ms, HazardKind};
use crate::events::tail::Line;
use crate::store::mirror::{Delta, Row};
pub use crate::time::ttl_text;
use ratatui::crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind,
};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;

/// Default TTL offered by the acquire form.
pub const DEFAULT_ACQUIRE_TTL: &str = "30m";

/// Apply one message; true when something visible changed.
pub fn update(app: &mut App, action: Action) -> bool {
    match action {
        Action::Key(ev) => {
            let redraw = on_key(app, ev);
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
        Action::Log(reply) => logview::on_log(app, *reply),
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
        Action::OpResult(r) => on_op_result(app, r),
        Action::Warning(w) => {
            app.say(Level::Error, w);
            true
        }
        Action::Quit => {
            app.quit = true;
            false
        }
        Action::InRoot(i, inner) => super::roots_update::in_root(app, i, *inner),
        Action::Store(msg) => super::store_view::on_store(app, *msg),
    }
}

// ---------------------------------------------------------------- data

/// Take in what root `root`'s mirror says changed: its rows, its counts
/// and hazards, the pid facts the selected claim is worded by, and, over a
/// store, the tenures and the link.
pub fn on_mirror(app: &mut App, root: usize, mut d: Delta) -> bool {
    app.claims.learn(&d.pids);
    let paused = app.paused();
    let mut shown = d
        .tally
        .take()
        .is_some_and(|t| app.claims.set_tally(root, t) && !paused);
    if let Some(problem) = d.problem.take() {
        shown |= set_problem(app, root, problem);
    }
    if app.store.is_some() {
        shown |= super::store_view::on_delta(app, &d);
    }
    let moved = match d.whole {
        Some(w) => {
            let c = &mut app.claims;
            if c.partial.len() <= root {
                c.partial.resize(root + 1, None);
            }
            let head = w.partial.then_some(d.rows.len());
            shown |= std::mem::replace(&mut c.partial[root], head) != head;
            let replaced = replace_rows(app, root, d.rows);
            app.refresh_selected_why();
            return replaced || shown;
        }
        None => {
            let mut moved = Vec::with_capacity(d.rows.len());
            let mut narrows = false;
            for row in d.rows {
                let held = app.claims.live.get(&row.path).is_some_and(|old| {
                    let rules = app.claims.live.rules_of(old);
                    app.table.widest.held_by(old, rules)
                });
                if let Some(p) = app.claims.live.put_counted(&row.path, row.status) {
                    narrows |= held;
                    moved.push(p);
                }
            }
            let shown_rows = rows_changed(app, &moved, narrows);
            // The mirror keeps no reasons in words: the one shown in full
            // is worded here, at the clock the view shows.
            app.refresh_selected_why();
            shown_rows
        }
    };
    moved || shown
}

/// Root `i`'s problem is `problem` now; true when that shows.
fn set_problem(app: &mut App, i: usize, problem: Option<super::action::RootProblem>) -> bool {
    let c = &mut app.claims;
    if c.problems.len() <= i {
        c.problems.resize(i + 1, None);
    }
    let moved = c.problems[i] != problem;
    if i == 0 {
        c.problem = problem.clone();
    }
    c.problems[i] = problem;
    moved
}

/// Replace root `i`'s rows (or, over a store, its own rows) with a
/// listing's; every other root's rows, and hosts' copies, stay.
fn replace_rows(app: &mut App, i: usize, rows: Vec<Row>) -> bool {
    let several = app.roots.is_several();
    let dir = app.roots.get(i).map(|r| r.claims_dir());
    let copies = app.store.as_ref().map(|v| &v.fleet.rows);
    let live = &mut app.claims.live;
    // Sized once: growing a table of 100 000 claims by doubling holds the
    // old and the new table at once, the dashboard's peak memory.
    let mut set = ClaimSet {
        by_path: std::collections::HashMap::with_capacity(rows.len()),
        store_keys: live.store_keys,
        ..ClaimSet::default()
    };
    let others = live
        .by_path
        .iter()
        .filter(|(p, _)| match (several, copies) {
            (true, _) => p.parent() != dir.as_deref(),
            (false, Some(copies)) => copies.contains_key(*p),
            (false, None) => false,
        });
    for (p, s) in others {
        set.by_path.insert(Arc::clone(p), Arc::clone(s));
    }
    for row in rows {
        if row.status.state != crate::claims::ClaimState::Free {
            set.by_path.insert(row.path, row.status);
        }
    }
    set.recount();
    let changed = set != *live;
    *live = set;
    if !changed || app.paused() {
        return false;
    }
    app.rebuild_rows();
    scroll_into_view(app);
    true
}

/// Most changed claims placed one by one; a bigger batch re-sorts.
const REPOSITION_MAX: usize = 64;

/// After these live claims changed (their counts are kept by `put`): move
/// just them to their sorted places unless the view is frozen, or rebuild
/// when many moved or a column may have narrowed. Redraw only when the
/// shown view moved.
pub(super) fn rows_changed(app: &mut App, moved: &[Arc<Path>], narrows: bool) -> bool {
    if moved.is_empty() || app.paused() {
        return false;
    }
    if narrows || moved.len() > REPOSITION_MAX {
        app.rebuild_rows();
    } else {
        app.reposition_rows(moved);
    }
    scroll_into_view(app);
    select_arrived(app);
    true
}

pub fn on_events(app: &mut App, lines: &[Line]) -> bool {
    on_events_in(app, None, lines)
}

/// New lines of one log: root `root`'s of several, or the only one's.
pub(super) fn on_events_in(app: &mut App, root: Option<usize>, lines: &[Line]) -> bool {
    // Lines arriving means the log is readable again.
    let recovered = !lines.is_empty() && app.events.error.take().is_some();
    let mut shown = 0usize;
    for line in lines {
        let row: &EventRow = match root {
            Some(i) => app.events.ring.push_in(i, line),
            None => app.events.ring.push(line),
        };
        if app.events.view.shows(row) {
            shown += 1;
        }
    }
    if shown == 0 || app.paused() {
        return recovered;
    }
    // Scrolled up: keep the same lines in view and count what arrived.
    if app.events.view.scroll > 0 {
        app.events.view.scroll += shown;
        app.events.view.new_while_scrolled += shown;
    }
    true
}

/// A second passed: the clock moves (the mirror has judged again what
/// time changes, and sent it before this tick), the selected claim is
/// worded at it, and the screen is redrawn only when a visible cell moved.
pub fn on_tick(app: &mut App, now: i64) -> bool {
    let before = visible_signature(app);
    app.now = now;
    app.refresh_selected_why();
    let expired = app
        .status
        .as_ref()
        .is_some_and(|m| now - m.at >= m.lifetime_ms());
    if expired {
        app.status = None;
    }
    expired || visible_signature(app) != before
}

/// A digest of everything time can change on screen: the header clock's
/// second, counts, and the state / age / TTL cells of the visible rows,
/// plus the selected claim's verdict. No allocation.
pub fn visible_signature(app: &App) -> u64 {
    let mut h = DefaultHasher::new();
    let now = app.shown_now();
    (now / 1000).hash(&mut h);
    let shown = app.shown();
    let c = shown.counts;
    (c.live, c.suspect, c.stale, c.corrupted, app.hazard_count()).hash(&mut h);
    let cap = layout::table_capacity(app.size, app.look());
    for p in app.table.rows.iter().skip(app.table.offset).take(cap) {
        if let Some(s) = shown.get(p) {
            s.state.hash(&mut h);
            if let Some(r) = &s.record {
                time_bucket(now - r.acquired_at).hash(&mut h);
                r.expires_at.map(|e| time_bucket(e - now)).hash(&mut h);
            }
        }
    }
    if let Some(s) = app.selected_status() {
        s.why.hash(&mut h);
    }
    h.finish()
}

/// An op finished: say so. The worker has asked the collector to re-read
/// its lockfile, which arrives as a `Read` right after.
fn on_op_result(app: &mut App, r: OpResult) -> bool {
    if r.ok && r.verb == "acquire" {
        app.table.select_on_arrival = Some(r.path.clone());
        select_arrived(app);
    }
    app.say(if r.ok { Level::Ok } else { Level::Error }, r.message);
    if let Some(left) = app.quit_after.as_mut() {
        *left = left.saturating_sub(1);
        // Quit once every release has answered, done or not: the status
        // line of a failed one is lost, but its claim is still there to see.
        if *left == 0 {
            app.quit = true;
        }
    }
    true
}

// ---------------------------------------------------------------- keys

pub fn on_key(app: &mut App, ev: KeyEvent) -> bool {
    // Key releases (kitty protocol) are not presses.
    if ev.kind == KeyEventKind::Release {
        return false;
    }
    if keys::is_interrupt(&ev) {
        app.quit = true;
        return false;
    }
    if !layout::fits(app.size) {
        return too_small_key(app, ev);
    }
    if app.overlays.dialog.is_some() {
        return dialog_key(app, ev);
    }
    if app.table.filter_input.is_some() {
        return filter_key(app, ev);
    }
    if app.events.browse.input.is_some() {
        return logview::search_input_key(app, &ev);
    }
    if let Some(ov) = app.overlays.open {
        return overlay_key(app, ov, ev);
    }
    match keys::lookup(app.focus, &ev) {
        Some(cmd) => command(app, cmd),
        None => false,
    }
}

/// The screen cannot show the table: nothing may act unseen. Only quit, the
/// help (drawn over the whole small screen) and the quit question itself
/// take keys; resizes arrive as their own action.
fn too_small_key(app: &mut App, ev: KeyEvent) -> bool {
    if matches!(app.overlays.dialog, Some(Dialog::Quit(_))) {
        return dialog_key(app, ev);
    }
    // The help gets the whole small screen: it scrolls and closes with the
    // keys its title names, as it does at any size, or only its first
    // lines could ever be read.
    if app.overlays.open == Some(Overlay::Help) {
        return overlay_key(app, Overlay::Help, ev);
    }
    match keys::lookup(Pane::Table, &ev) {
        Some(Cmd::Quit) => request_quit(app),
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

/// `q`: quit, unless claims taken here would be orphaned by it — then ask.
fn request_quit(app: &mut App) -> bool {
    let (roots, keys): (Vec<usize>, Vec<String>) = app.own_claims_by_root().into_iter().unzip();
    if keys.is_empty() {
        app.quit = true;
        return false;
    }
    app.overlays.dialog = Some(Dialog::Quit(QuitConfirm { keys, roots }));
    true
}

/// Lines one wheel notch scrolls.
const WHEEL: isize = 3;

/// A click selects a row or a pane, a click on a column title sorts by it
/// (again: reversed), the wheel scrolls what is under the pointer.
pub fn on_mouse(app: &mut App, m: MouseEvent) -> bool {
    if !layout::fits(app.size) || app.overlays.dialog.is_some() {
        return false;
    }
    let wheel = match m.kind {
        MouseEventKind::ScrollUp => -WHEEL,
        MouseEventKind::ScrollDown => WHEEL,
        MouseEventKind::Down(MouseButton::Left) => 0,
        _ => return false,
    };
    if app.overlays.open.is_some() {
        return wheel != 0 && scroll_overlay(app, wheel as i32);
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
            if let Some(redraw) = logview::events_wheel(app, wheel) {
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
        match super::view::table::hit(app, area, m.column, m.row) {
            Some(super::view::table::Hit::Title(col)) => {
                if app.table.sort.column == col {
                    app.table.sort.reverse = !app.table.sort.reverse;
                } else {
                    app.table.sort = super::app::Sort {
                        column: col,
                        reverse: false,
                    };
                }
                app.rebuild_rows();
                scroll_into_view(app);
                return true;
            }
            Some(super::view::table::Hit::Row(i)) => {
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

/// Run a keymap command (also what the tests drive).
pub fn command(app: &mut App, cmd: Cmd) -> bool {
    if cmd.mutates() && app.read_only {
        app.say(
            Level::Error,
            "read-only: a, r, n and F are disabled (started with --read-only)",
        );
        return true;
    }
    if let Some(redraw) = logview::events_command(app, cmd) {
        return redraw;
    }
    match cmd {
        Cmd::Up => move_by(app, -1),
        Cmd::Down => move_by(app, 1),
        Cmd::PageUp => move_by(app, -(page(app) as isize)),
        Cmd::PageDown => move_by(app, page(app) as isize),
        Cmd::Top => move_by(app, isize::MIN / 2),
        Cmd::Bottom => move_by(app, isize::MAX / 2),
        Cmd::NextPane | Cmd::PrevPane => {
            app.focus = if cmd == Cmd::NextPane {
                app.focus.next()
            } else {
                app.focus.prev()
            };
            // The table's window may have shrunk with the focus.
            scroll_into_view(app);
            true
        }
        Cmd::Filter => {
            app.table.filter_input = Some(app.table.filter.text.as_str().into());
            app.table.history_pos = None;
            true
        }
        Cmd::SortNext => {
            let col = app.table.sort.column;
            app.table.sort.column = if app.roots.is_several() {
                col.next_of_several()
            } else {
                col.next()
            };
            app.table.sort.reverse = false;
            app.rebuild_rows();
            scroll_into_view(app);
            true
        }
        Cmd::SortReverse => {
            app.table.sort.reverse = !app.table.sort.reverse;
            app.rebuild_rows();
            scroll_into_view(app);
            true
        }
        // An offline host's last known row: nothing can be done there.
        Cmd::Release | Cmd::Renew | Cmd::ForceRelease if super::fleet_keys::refused(app) => true,
        Cmd::ForgetHost => super::fleet_keys::start_forget(app),
        // A host's copy changes only in the host's own root: F asks its
        // publisher; the others are for the host's own dashboard.
        Cmd::Acquire | Cmd::Release | Cmd::Renew if selected_copy(app).is_some() => {
            let host = selected_copy(app).unwrap_or_default();
            let msg = format!(
                "a, r and n act on this store's own claims: this row is a read-only copy \
                 published by {host} (F asks {host} to force-release it; acquire, release \
                 or renew in its own root there)"
            );
            app.say(Level::Error, msg);
            true
        }
        Cmd::Acquire => {
            app.overlays.dialog = Some(Dialog::Acquire(AcquireForm {
                key: "".into(),
                holder: app.operator.as_str().into(),
                ttl: DEFAULT_ACQUIRE_TTL.into(),
                reason: "".into(),
                field: 0,
                error: None,
                root: super::roots_update::root_field(app),
            }));
            true
        }
        Cmd::Release => start_release(app),
        Cmd::Renew => start_renew(app),
        Cmd::ForceRelease => start_force(app),
        Cmd::Pause => {
            toggle_pause(app);
            true
        }
        Cmd::Hazards => {
            app.overlays.open = Some(Overlay::Hazards);
            app.overlays.scroll = 0;
            true
        }
        Cmd::EventsForKey => {
            if app.events.view.key.is_some() {
                app.events.view.key = None;
            } else if let Some(s) = app.selected_status() {
                let root = app.roots.is_several().then(|| app.roots.of(s));
                app.events.view.key = Some(s.key.clone());
                app.events.view.key_root = root;
            } else {
                app.say(Level::Info, "no claim selected to filter the events by");
            }
            app.events.view.scroll = 0;
            app.events.view.new_while_scrolled = 0;
            true
        }
        Cmd::Help => {
            app.seen_help = true;
            app.overlays.open = Some(Overlay::Help);
            app.overlays.scroll = 0;
            true
        }
        Cmd::Close => {
            if !app.table.filter.is_empty() {
                app.table.filter = Filter::default();
                app.rebuild_rows();
                scroll_into_view(app);
                true
            } else if app.events.view.key.is_some() {
                app.events.view.key = None;
                app.events.view.scroll = 0;
                app.events.view.new_while_scrolled = 0;
                true
            } else if app.status.is_some() {
                app.status = None;
                true
            } else {
                false
            }
        }
        Cmd::Open => match app.selected_status() {
            Some(_) => {
                app.overlays.open = Some(Overlay::Claim);
                app.overlays.scroll = 0;
                true
            }
            None => {
                app.say(Level::Info, "no claim selected");
                true
            }
        },
        Cmd::Copy => copy_key(app),
        Cmd::Clean => start_clean(app),
        Cmd::Suspend => {
            app.suspend = true;
            false
        }
        Cmd::Quit => request_quit(app),
        Cmd::Timeline => logview::open_timeline(app),
        Cmd::ZoomPane => {
            app.zoomed = !app.zoomed;
            scroll_into_view(app);
            true
        }
        // Keys of the events pane's browsing and of the timeline view, which
        // take them before they get here.
        Cmd::SearchOlder
        | Cmd::SearchNewer
        | Cmd::RawEvent
        | Cmd::TimeBack
        | Cmd::TimeForward
        | Cmd::TimeBackFar
        | Cmd::TimeForwardFar
        | Cmd::ZoomIn
        | Cmd::ZoomOut => false,
    }
}

fn page(app: &App) -> usize {
    match app.focus {
        Pane::Table => layout::table_capacity(app.size, app.look()),
        Pane::Detail => layout::detail_capacity(app.size, app.look()),
        Pane::Events => layout::events_capacity(app.size, app.look()),
    }
    .max(1)
}

/// Move in the focused pane by `delta` (huge deltas = top / bottom).
fn move_by(app: &mut App, delta: isize) -> bool {
    match app.focus {
        Pane::Table => {
            let before = app.table.selected;
            let last = app.table.rows.len().saturating_sub(1) as isize;
            app.table.selected = (app.table.selected as isize)
                .saturating_add(delta)
                .clamp(0, last) as usize;
            if app.table.selected != before {
                app.table.detail_scroll = 0;
            }
            scroll_into_view(app);
            app.table.selected != before
        }
        Pane::Detail => {
            let before = app.table.detail_scroll;
            let max = super::view::detail_max_scroll(app) as isize;
            app.table.detail_scroll = (app.table.detail_scroll as isize)
                .saturating_add(delta)
                .clamp(0, max) as u16;
            app.table.detail_scroll != before
        }
        Pane::Events => {
            let total = app.shown_events().count();
            let max = total.saturating_sub(layout::events_capacity(app.size, app.look()));
            let before = (app.events.view.scroll, app.events.view.new_while_scrolled);
            // Up (negative delta) scrolls back in time.
            let s = (before.0 as isize)
                .saturating_sub(delta)
                .clamp(0, max as isize) as usize;
            app.events.view.scroll = s;
            if s == 0 {
                app.events.view.new_while_scrolled = 0;
            }
            (s, app.events.view.new_while_scrolled) != before
        }
    }
}

/// Select the claim just acquired here once it is among the rows (the
/// filter may hide it: then it is not waited for forever, a later acquire
/// replaces it).
pub(crate) fn select_arrived(app: &mut App) {
    let Some(want) = app.table.select_on_arrival.as_deref() else {
        return;
    };
    if let Some(i) = app.table.rows.iter().position(|p| **p == *want) {
        app.table.selected = i;
        app.table.select_on_arrival = None;
        app.table.detail_scroll = 0;
        scroll_into_view(app);
    }
}

/// Keep the selected row inside the table's window.
pub fn scroll_into_view(app: &mut App) {
    let cap = layout::table_capacity(app.size, app.look()).max(1);
    app.clamp_selection();
    if app.table.selected < app.table.offset {
        app.table.offset = app.table.selected;
    } else if app.table.selected >= app.table.offset + cap {
        app.table.offset = app.table.selected + 1 - cap;
    }
    let max_offset = app.table.rows.len().saturating_sub(cap);
    app.table.offset = app.table.offset.min(max_offset);
}

fn toggle_pause(app: &mut App) {
    if app.claims.frozen.take().is_none() {
        app.claims.frozen = Some(Frozen {
            claims: app.claims.live.clone(),
            tallies: app.claims.tallies.clone(),
            now: app.now,
            events_seq: app.events.ring.next_seq,
        });
    } else {
        // Resume on the latest data.
        app.rebuild_rows();
        scroll_into_view(app);
        if app.events.view.scroll > 0 {
            app.events.view.scroll = 0;
            app.events.view.new_while_scrolled = 0;
        }
    }
}

/// `y`: the selected key to the terminal's clipboard, by OSC 52 (the loop
/// writes it), so it works over ssh and inside tmux.
fn copy_key(app: &mut App) -> bool {
    let Some(key) = app.selected_status().map(|s| s.key.clone()) else {
        app.say(Level::Info, "no claim selected to copy");
        return true;
    };
    app.say(
        Level::Ok,
        format!("copied {key} to the clipboard (OSC 52: the terminal must allow it)"),
    );
    app.clipboard = Some(key);
    true
}

/// `x`: list what `doctor --fix` would remove now, and ask.
fn start_clean(app: &mut App) -> bool {
    let hazards: Vec<_> = app
        .claims
        .hazards()
        .into_iter()
        .filter(|h| matches!(h.kind, HazardKind::StaleMutex | HazardKind::TempLitter))
        .collect();
    if hazards.is_empty() {
        app.say(
            Level::Info,
            "nothing to clean: no mutex corpse or temp litter (claims are force-released with F)",
        );
        return true;
    }
    app.overlays.open = None;
    app.overlays.dialog = Some(Dialog::Clean(CleanConfirm { hazards }));
    true
}

fn start_release(app: &mut App) -> bool {
    let Some(s) = app.selected_status() else {
        app.say(Level::Info, "no claim selected");
        return true;
    };
    let key = s.key.clone();
    let root = app.roots.of(s);
    match &s.record {
        Some(r) if r.holder == app.operator => {
            let op = Op::Release {
                key: key.clone(),
                holder: r.holder.clone(),
            };
            app.pending.push(app.roots.route(root, op));
            app.say(Level::Info, format!("releasing {key}…"));
        }
        Some(r) => {
            let msg = format!(
                "r releases only your own claims ({}); {key} is held by {} — use F to force-release",
                app.operator, r.holder
            );
            app.say(Level::Error, msg);
        }
        None => app.say(
            Level::Error,
            format!("{key} is corrupted: nobody holds it to release; use F to force-release"),
        ),
    }
    true
}

/// The publishing host's name when the selected row is a published copy.
fn selected_copy(app: &App) -> Option<String> {
    let s = app.selected_status()?;
    let o = app.store.as_ref()?.fleet.origin(&s.file)?;
    Some(crate::sanitize::sanitize(&o.hostname).into_owned())
}

fn start_renew(app: &mut App) -> bool {
    let Some(s) = app.selected_status() else {
        app.say(Level::Info, "no claim selected");
        return true;
    };
    let Some(r) = &s.record else {
        let msg = format!("{} is corrupted: nothing to renew", s.key);
        app.say(Level::Error, msg);
        return true;
    };
    if r.expires_at.is_none() {
        let msg = format!("{} is PID-bound: it has no TTL to renew", s.key);
        app.say(Level::Error, msg);
        return true;
    }
    // What was asked for this tenure, never `expires_at - acquired_at`: that
    // span grows with every renewal until it passes 24 h and fails.
    let (ttl, offered) = match app.asked_ttl(&s.key, r.acquired_at) {
        Some(ms) => (ttl_text(ms), "the TTL last asked for this claim"),
        None => (
            DEFAULT_ACQUIRE_TTL.to_string(),
            "the default: the events tail does not say what was asked",
        ),
    };
    app.overlays.dialog = Some(Dialog::Renew(RenewForm {
        root: app.roots.of(s),
        key: s.key.clone(),
        holder: r.holder.clone(),
        pid: r.pid,
        state: s.state,
        ttl: ttl.into(),
        offered: offered.into(),
        foreign: r.holder != app.operator,
        confirming: false,
        error: None,
    }));
    true
}

fn start_force(app: &mut App) -> bool {
    let Some(s) = app.selected_status() else {
        app.say(Level::Info, "no claim selected");
        return true;
    };
    let rec = s.record.as_ref();
    app.overlays.dialog = Some(Dialog::ForceRelease(ForceConfirm {
        root: app.roots.of(s),
        key: s.key.clone(),
        holder: rec.map(|r| r.holder.clone()),
        pid: rec.map(|r| r.pid),
        state: s.state,
        why: s
            .error
            .clone()
            .map_or_else(|| s.why.clone(), |e| format!("{}: {e}", s.why)),
        acquired_at: rec.map(|r| r.acquired_at),
        typed: "".into(),
        error: None,
        host: app
            .store
            .as_ref()
            .and_then(|v| v.fleet.origin(&s.file))
            .cloned(),
    }));
    true
}

// ---------------------------------------------------------------- dialogs

fn dialog_key(app: &mut App, ev: KeyEvent) -> bool {
    if ev.code == KeyCode::Esc {
        app.overlays.dialog = None;
        return true;
    }
    let Some(dialog) = app.overlays.dialog.take() else {
        return false;
    };
    let (next, op) = match dialog {
        Dialog::Acquire(f) => acquire_key(f, &ev, &app.roots),
        Dialog::Renew(f) => {
            let root = f.root;
            let (next, op) = renew_key(f, &ev, &app.operator);
            (next, op.map(|op| app.roots.route(root, op)))
        }
        Dialog::ForceRelease(f) => {
            let (root, host) = (f.root, f.host.clone());
            let (next, op) = force_key(f, &ev, &app.operator);
            let op = match (op, host) {
                (Some(Op::ForceRelease { key, opts }), Some(o)) => Some(Op::AskHost {
                    host_id: o.host_id,
                    hostname: o.hostname,
                    root_id: o.root_id,
                    key,
                    opts,
                }),
                (op, _) => op.map(|op| app.roots.route(root, op)),
            };
            (next, op)
        }
        Dialog::Quit(q) => return quit_key(app, q, &ev),
        Dialog::ForgetHost(f) => return super::fleet_keys::forget_key(app, f, &ev),
        Dialog::Clean(c) => match ev.code {
            KeyCode::Char('y') | KeyCode::Char('Y') if app.roots.is_several() => {
                return super::roots_update::clean_each_root(app, &c);
            }
            KeyCode::Char('y') | KeyCode::Char('Y') => (None, Some(Op::Clean)),
            _ => (Some(Dialog::Clean(c)), None),
        },
    };
    app.overlays.dialog = next;
    if let Some(op) = op {
        app.say(Level::Info, format!("{} {}…", op.verb(), op.key()));
        app.pending.push(op);
    }
    true
}

/// The quit question: r releases every claim taken here and quits once
/// they are done, k quits keeping them, anything else asks again.
fn quit_key(app: &mut App, q: QuitConfirm, ev: &KeyEvent) -> bool {
    match ev.code {
        KeyCode::Char('r') | KeyCode::Char('R') => {
            let n = q.keys.len();
            for (i, key) in q.keys.into_iter().enumerate() {
                let op = Op::Release {
                    key,
                    holder: app.operator.clone(),
                };
                let root = q.roots.get(i).copied().unwrap_or(0);
                app.pending.push(app.roots.route(root, op));
            }
            app.quit_after = Some(n);
            app.say(
                Level::Info,
                format!("releasing {n} claim{} before quitting…", plural(n)),
            );
            true
        }
        KeyCode::Char('k') | KeyCode::Char('K') => {
            app.quit = true;
            false
        }
        _ => {
            app.overlays.dialog = Some(Dialog::Quit(q));
            false
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

type Step = (Option<Dialog>, Option<Op>);

fn acquire_key(mut f: AcquireForm, ev: &KeyEvent, roots: &RootSet) -> Step {
    let n = f.field_count();
    match ev.code {
        KeyCode::Tab | KeyCode::Down => f.field = (f.field + 1) % n,
        KeyCode::BackTab | KeyCode::Up => f.field = (f.field + n - 1) % n,
        KeyCode::Enter => {
            let routed = acquire_op(&f).and_then(|op| match &f.root {
                Some(typed) => super::roots_update::chosen_root(roots, typed.value())
                    .map(|i| roots.route(i, op)),
                None => Ok(op),
            });
            return match routed {
                Ok(op) => (None, Some(op)),
                Err(e) => {
                    f.error = Some(e);
                    (Some(Dialog::Acquire(f)), None)
                }
            };
        }
        _ => {
            if f.field_mut().key(ev) {
                f.error = None;
            }
        }
    }
    (Some(Dialog::Acquire(f)), None)
}

/// Validate the form the way the CLI validates its flags.
fn acquire_op(f: &AcquireForm) -> Result<Op, String> {
    let key = f.key.trim();
    let holder = f.holder.trim();
    if key.is_empty() {
        return Err("key is required".into());
    }
    if holder.is_empty() {
        return Err("holder is required".into());
    }
    let ttl_ms = match f.ttl.trim() {
        "" => None,
        t => Some(parse_ttl_ms(t).ok_or_else(|| {
            format!("TTL {t:?} is not a duration (1h, 30m, 90s; empty = PID-bound)")
        })?),
    };
    if let Some(t) = ttl_ms {
        ttl_in_range(t)?;
    }
    crate::claims::validate_inputs(key, holder, ttl_ms).map_err(|e| e.to_string())?;
    Ok(Op::Acquire {
        key: key.to_string(),
        holder: holder.to_string(),
        ttl_ms,
        reason: Some(f.reason.trim().to_string()).filter(|r| !r.is_empty()),
    })
}

fn renew_key(mut f: RenewForm, ev: &KeyEvent, operator: &str) -> Step {
    if f.confirming {
        return match ev.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => renew_op(f, operator),
            _ => {
                f.confirming = false;
                (Some(Dialog::Renew(f)), None)
            }
        };
    }
    match ev.code {
        KeyCode::Enter => {
            if let Err(e) = renew_ttl(&f) {
                f.error = Some(e);
            } else if f.foreign {
                f.confirming = true;
            } else {
                return renew_op(f, operator);
            }
        }
        _ => {
            if f.ttl.key(ev) {
                f.error = None;
            }
        }
    }
    (Some(Dialog::Renew(f)), None)
}

fn renew_ttl(f: &RenewForm) -> Result<i64, String> {
    let ttl = parse_ttl_ms(&f.ttl)
        .ok_or_else(|| format!("TTL {:?} is not a duration (1h, 30m, 90s)", f.ttl.trim()))?;
    ttl_in_range(ttl)?;
    crate::claims::validate_inputs(&f.key, &f.holder, Some(ttl)).map_err(|e| e.to_string())?;
    Ok(ttl)
}

/// The protocol's TTL bounds, worded for a person typing a duration.
fn ttl_in_range(ttl_ms: i64) -> Result<(), String> {
    use crate::claims::{ClaimError, MAX_TTL_MS, MIN_TTL_MS};
    if (MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl_ms) {
        Ok(())
    } else {
        Err(ClaimError::TtlOutOfRange(ttl_ms).to_string())
    }
}

/// The renewal asked for; on someone else's claim it names the operator,
/// so the audit log says who kept it alive.
fn renew_op(mut f: RenewForm, operator: &str) -> Step {
    match renew_ttl(&f) {
        Ok(ttl_ms) => (
            None,
            Some(Op::Renew {
                operator: f.foreign.then(|| operator.to_string()),
                key: f.key,
                holder: f.holder,
                ttl_ms,
            }),
        ),
        Err(e) => {
            f.error = Some(e);
            f.confirming = false;
            (Some(Dialog::Renew(f)), None)
        }
    }
}

fn force_key(mut f: ForceConfirm, ev: &KeyEvent, operator: &str) -> Step {
    let confirmed = if f.needs_typed_key() {
        if ev.code == KeyCode::Enter {
            if f.typed.value() == f.key {
                true
            } else {
                f.error = Some("the typed key does not match; nothing done".into());
                false
            }
        } else {
            if f.typed.key(ev) {
                f.error = None;
            }
            false
        }
    } else {
        matches!(ev.code, KeyCode::Char('y') | KeyCode::Char('Y'))
    };
    if !confirmed {
        return (Some(Dialog::ForceRelease(f)), None);
    }
    let op = Op::ForceRelease {
        opts: ForceOptsShown {
            expect_holder: f.holder.clone(),
            expect_acquired_at: f.acquired_at,
            operator: operator.to_string(),
            // What the typed key confirmed: the CLI's --allow-live.
            allow_live: f.needs_typed_key(),
        },
        key: f.key,
    };
    (None, Some(op))
}

/// Most filters remembered for ↑/↓.
const FILTER_HISTORY: usize = 50;

fn filter_key(app: &mut App, ev: KeyEvent) -> bool {
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

/// Scroll the open overlay, never past its last line.
fn scroll_overlay(app: &mut App, delta: i32) -> bool {
    let max = i32::from(super::view::overlay_max_scroll(app));
    let before = app.overlays.scroll;
    app.overlays.scroll = (i32::from(before).saturating_add(delta)).clamp(0, max) as u16;
    app.overlays.scroll != before
}

fn overlay_key(app: &mut App, ov: Overlay, ev: KeyEvent) -> bool {
    if ov == Overlay::Timeline {
        return match logview::timeline_key(app, &ev) {
            None => true,
            Some(Cmd::Quit) => {
                app.overlays.open = None;
                request_quit(app)
            }
            Some(cmd @ (Cmd::Help | Cmd::Suspend | Cmd::Pause)) => command(app, cmd),
            Some(_) => false,
        };
    }
    let cmd = keys::lookup(app.focus, &ev);
    match cmd {
        Some(Cmd::Quit) => {
            app.overlays.open = None;
            request_quit(app)
        }
        Some(Cmd::Close) => {
            app.overlays.open = None;
            true
        }
        Some(Cmd::Help) if ov == Overlay::Help => {
            app.overlays.open = None;
            true
        }
        Some(Cmd::Hazards) if ov == Overlay::Hazards => {
            app.overlays.open = None;
            true
        }
        Some(Cmd::Open) if ov == Overlay::Claim => {
            app.overlays.open = None;
            true
        }
        Some(Cmd::Copy) if ov == Overlay::Claim => copy_key(app),
        Some(Cmd::Clean) if ov == Overlay::Hazards => command(app, Cmd::Clean),
        Some(Cmd::Up) => scroll_overlay(app, -1),
        Some(Cmd::Down) => scroll_overlay(app, 1),
        Some(Cmd::PageUp) => scroll_overlay(app, -(page(app) as i32)),
        Some(Cmd::PageDown) => scroll_overlay(app, page(app) as i32),
        Some(Cmd::Top) => scroll_overlay(app, i32::MIN / 2),
        Some(Cmd::Bottom) => scroll_overlay(app, i32::MAX / 2),
        _ => false,
    }
}
