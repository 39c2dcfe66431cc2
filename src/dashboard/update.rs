//! Model transitions. No terminal here: every function takes the model and a
//! message and says whether the screen must be redrawn. The only I/O is
//! reading lockfiles (exactly the changed ones on a watcher batch, all of them
//! on a rescan) — the clock comes in with `Tick`.

use super::action::{Action, ForceOptsShown, Op, OpResult};
use super::app::{
    AcquireForm, App, ClaimSet, Dialog, EventRow, Filter, ForceConfirm, Frozen, Level, Overlay,
    RenewForm, TickPlan,
};
use super::keys::{self, Cmd, Pane};
use super::view::{layout, time_bucket};
use crate::claims::sweep::{entry_kind, key_of_lockfile, sweep_with, EntryKind};
use crate::claims::{parse_ttl_ms, ClaimState, Classifier, HazardKind, Status};
use crate::events::tail::Line;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
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
        Action::FsChanged(paths) => on_fs_changed(app, &paths),
        Action::Rescan => on_rescan(app),
        Action::EventsAppended(lines) => on_events(app, &lines),
        Action::EventsReset => {
            app.events.clear();
            app.events_view.scroll = 0;
            app.events_view.new_while_scrolled = 0;
            !app.paused()
        }
        Action::EventsError(e) => {
            let changed = app.events_error.as_deref() != Some(e.as_str());
            app.events_error = Some(e);
            changed
        }
        Action::Tick(now) => on_tick(app, now),
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
    }
}

// ---------------------------------------------------------------- data

/// Re-read exactly `paths` (those in the claims dir); everything else in a
/// batch is ignored here.
pub fn on_fs_changed(app: &mut App, paths: &[PathBuf]) -> bool {
    let dir = app.root.claims_dir();
    let mut c = app.classifier();
    let mut changed = false;
    for path in paths {
        if path.parent() != Some(dir.as_path()) {
            continue;
        }
        let Some(name) = path.file_name() else {
            continue;
        };
        match entry_kind(name) {
            EntryKind::Lockfile => {
                let Some(key) = key_of_lockfile(name) else {
                    continue;
                };
                app.reads += 1;
                app.claims_changed();
                let s = Status::of_file(&key, path, &mut c);
                changed |= put(&mut app.live, path, s);
            }
            // A mutex or temp file that went away is no longer a hazard; new
            // ones only become hazards with age, which the next sweep sees.
            _ => {
                if std::fs::symlink_metadata(path).is_err() {
                    let before = app.sweep_hazards.len();
                    app.sweep_hazards.retain(|h| h.path != *path);
                    changed |= app.sweep_hazards.len() != before;
                }
            }
        }
    }
    data_changed(app, changed)
}

/// Store (or drop, when free) one claim; true when it changed.
fn put(set: &mut ClaimSet, path: &Path, s: Status) -> bool {
    if s.state == ClaimState::Free {
        return set.by_path.remove(path).is_some();
    }
    match set.by_path.get_mut(path) {
        Some(old) if *old == s => false,
        Some(old) => {
            *old = s;
            true
        }
        None => {
            set.by_path.insert(Arc::from(path), s);
            true
        }
    }
}

/// After the live claims changed: recount, and re-sort unless the view is
/// frozen. Redraw only when the shown view moved.
fn data_changed(app: &mut App, changed: bool) -> bool {
    if !changed {
        return false;
    }
    app.live.recount();
    if app.paused() {
        return false;
    }
    app.rebuild_rows();
    scroll_into_view(app);
    true
}

/// Sweep the whole claims dir (the watcher lost track, or the safety net).
pub fn on_rescan(app: &mut App) -> bool {
    let mut c = app.classifier();
    let sweep = sweep_with(&app.root, &mut c);
    app.rescans += 1;
    apply_sweep(app, sweep)
}

/// Replace the live claims and hazards with a sweep's.
pub fn apply_sweep(app: &mut App, sweep: crate::claims::Sweep) -> bool {
    app.reads += sweep.claims.len() as u64;
    app.claims_changed();
    let mut set = ClaimSet::default();
    for s in sweep.claims {
        let path: Arc<Path> = Arc::from(s.file.as_path());
        set.by_path.insert(path, s);
    }
    set.recount();
    // Claims that are hazards are counted from the claims themselves, which
    // FsChanged keeps current between sweeps.
    let hazards: Vec<_> = sweep
        .hazards
        .into_iter()
        .filter(|h| {
            !matches!(
                h.kind,
                HazardKind::CorruptedClaim | HazardKind::ForeignMachine | HazardKind::KeyMismatch
            )
        })
        .collect();
    let changed = set != app.live || hazards != app.sweep_hazards;
    app.live = set;
    app.sweep_hazards = hazards;
    if !changed || app.paused() {
        return false;
    }
    app.rebuild_rows();
    scroll_into_view(app);
    true
}

pub fn on_events(app: &mut App, lines: &[Line]) -> bool {
    // Lines arriving means the log is readable again.
    let recovered = !lines.is_empty() && app.events_error.take().is_some();
    let mut shown = 0usize;
    for line in lines {
        let row: &EventRow = app.events.push(line);
        if app
            .events_view
            .key
            .as_deref()
            .is_none_or(|k| row.key.as_deref() == Some(k))
        {
            shown += 1;
        }
    }
    if shown == 0 || app.paused() {
        return recovered;
    }
    // Scrolled up: keep the same lines in view and count what arrived.
    if app.events_view.scroll > 0 {
        app.events_view.scroll += shown;
        app.events_view.new_while_scrolled += shown;
    }
    true
}

/// A second passed: re-classify the records in memory with a fresh
/// classifier (liveness moves without any file event) and redraw only when a
/// visible cell changed.
pub fn on_tick(app: &mut App, now: i64) -> bool {
    let before = visible_signature(app);
    app.now = now;
    match app.tick_plan(now) {
        TickPlan::Nothing => {}
        TickPlan::Expired(paths) => {
            let mut c = app.classifier_with_known_pids();
            let moved: Vec<_> = paths
                .into_iter()
                .filter(|p| app.live.rejudge(p, |s| rejudge(&mut c, s)))
                .collect();
            if !moved.is_empty() && !app.paused() {
                app.reposition_rows(&moved);
                scroll_into_view(app);
            }
        }
        TickPlan::All => {
            let mut c = app.classifier();
            let mut changed = false;
            for s in app.live.by_path.values_mut() {
                changed |= rejudge(&mut c, s);
            }
            app.remember_judgement(&c, now);
            if changed {
                app.live.recount();
                if !app.paused() {
                    app.rebuild_rows();
                    scroll_into_view(app);
                }
            }
        }
    }
    app.refresh_selected_why();
    visible_signature(app) != before
}

/// Re-judge one claim; true when its state or locality moved.
///
/// State only: wording 10 000 reasons a second was most of an idle
/// dashboard's CPU. A claim whose state moved is re-worded at once (its old
/// reason now contradicts it); the selected one is re-worded by the caller.
fn rejudge(c: &mut Classifier, s: &mut Status) -> bool {
    let Some(rec) = &s.record else { return false };
    let (state, locality) = c.state(rec);
    if state == s.state && Some(locality) == s.locality {
        return false;
    }
    let v = c.verdict(rec);
    s.state = v.state;
    s.why = v.why;
    s.locality = Some(v.locality);
    true
}

/// A digest of everything time can change on screen: the clock's minute,
/// counts, and the state / age / TTL cells of the visible rows, plus the
/// selected claim's verdict. No allocation.
pub fn visible_signature(app: &App) -> u64 {
    let mut h = DefaultHasher::new();
    let now = app.shown_now();
    (now / 60_000).hash(&mut h);
    let shown = app.shown();
    let c = shown.counts;
    (c.live, c.suspect, c.stale, c.corrupted, shown.item_hazards).hash(&mut h);
    let cap = layout::table_capacity(app.size, app.focus);
    for p in app.rows.iter().skip(app.table_offset).take(cap) {
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

fn on_op_result(app: &mut App, r: OpResult) -> bool {
    app.say(if r.ok { Level::Ok } else { Level::Error }, r.message);
    on_fs_changed(app, std::slice::from_ref(&r.path));
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
    if app.dialog.is_some() {
        return dialog_key(app, ev);
    }
    if app.filter_input.is_some() {
        return filter_key(app, ev);
    }
    if let Some(ov) = app.overlay {
        return overlay_key(app, ov, ev);
    }
    match keys::lookup(app.focus, &ev) {
        Some(cmd) => command(app, cmd),
        None => false,
    }
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
            app.filter_input = Some(app.filter.text.clone());
            true
        }
        Cmd::SortNext => {
            app.sort.column = app.sort.column.next();
            app.sort.reverse = false;
            app.rebuild_rows();
            scroll_into_view(app);
            true
        }
        Cmd::SortReverse => {
            app.sort.reverse = !app.sort.reverse;
            app.rebuild_rows();
            scroll_into_view(app);
            true
        }
        Cmd::Acquire => {
            app.dialog = Some(Dialog::Acquire(AcquireForm {
                key: String::new(),
                holder: app.operator.clone(),
                ttl: DEFAULT_ACQUIRE_TTL.into(),
                reason: String::new(),
                field: 0,
                error: None,
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
            app.overlay = Some(Overlay::Hazards);
            app.overlay_scroll = 0;
            true
        }
        Cmd::EventsForKey => {
            if app.events_view.key.is_some() {
                app.events_view.key = None;
            } else if let Some(s) = app.selected_status() {
                app.events_view.key = Some(s.key.clone());
            } else {
                app.say(Level::Info, "no claim selected to filter the events by");
            }
            app.events_view.scroll = 0;
            app.events_view.new_while_scrolled = 0;
            true
        }
        Cmd::Help => {
            app.overlay = Some(Overlay::Help);
            app.overlay_scroll = 0;
            true
        }
        Cmd::Close => {
            if !app.filter.is_empty() {
                app.filter = Filter::default();
                app.rebuild_rows();
                scroll_into_view(app);
                true
            } else if app.status.is_some() {
                app.status = None;
                true
            } else {
                false
            }
        }
        Cmd::Quit => {
            app.quit = true;
            false
        }
    }
}

fn page(app: &App) -> usize {
    match app.focus {
        Pane::Table => layout::table_capacity(app.size, app.focus),
        Pane::Detail => layout::detail_capacity(app.size, app.focus),
        Pane::Events => layout::events_capacity(app.size, app.focus),
    }
    .max(1)
}

/// Move in the focused pane by `delta` (huge deltas = top / bottom).
fn move_by(app: &mut App, delta: isize) -> bool {
    match app.focus {
        Pane::Table => {
            let before = app.selected;
            let last = app.rows.len().saturating_sub(1) as isize;
            app.selected = (app.selected as isize).saturating_add(delta).clamp(0, last) as usize;
            if app.selected != before {
                app.detail_scroll = 0;
            }
            scroll_into_view(app);
            app.selected != before
        }
        Pane::Detail => {
            let before = app.detail_scroll;
            app.detail_scroll = (app.detail_scroll as isize)
                .saturating_add(delta)
                .clamp(0, u16::MAX as isize) as u16;
            app.detail_scroll != before
        }
        Pane::Events => {
            let total = app.shown_events().count();
            let max = total.saturating_sub(layout::events_capacity(app.size, app.focus));
            let before = (app.events_view.scroll, app.events_view.new_while_scrolled);
            // Up (negative delta) scrolls back in time.
            let s = (before.0 as isize)
                .saturating_sub(delta)
                .clamp(0, max as isize) as usize;
            app.events_view.scroll = s;
            if s == 0 {
                app.events_view.new_while_scrolled = 0;
            }
            (s, app.events_view.new_while_scrolled) != before
        }
    }
}

/// Keep the selected row inside the table's window.
pub fn scroll_into_view(app: &mut App) {
    let cap = layout::table_capacity(app.size, app.focus).max(1);
    app.clamp_selection();
    if app.selected < app.table_offset {
        app.table_offset = app.selected;
    } else if app.selected >= app.table_offset + cap {
        app.table_offset = app.selected + 1 - cap;
    }
    let max_offset = app.rows.len().saturating_sub(cap);
    app.table_offset = app.table_offset.min(max_offset);
}

fn toggle_pause(app: &mut App) {
    if app.frozen.take().is_none() {
        app.frozen = Some(Frozen {
            claims: app.live.clone(),
            now: app.now,
            events_seq: app.events.next_seq,
        });
    } else {
        // Resume on the latest data.
        app.rebuild_rows();
        scroll_into_view(app);
        if app.events_view.scroll > 0 {
            app.events_view.scroll = 0;
            app.events_view.new_while_scrolled = 0;
        }
    }
}

fn start_release(app: &mut App) -> bool {
    let Some(s) = app.selected_status() else {
        app.say(Level::Info, "no claim selected");
        return true;
    };
    let key = s.key.clone();
    match &s.record {
        Some(r) if r.holder == app.operator => {
            app.pending.push(Op::Release {
                key: key.clone(),
                holder: r.holder.clone(),
            });
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
    let Some(exp) = r.expires_at else {
        let msg = format!("{} is PID-bound: it has no TTL to renew", s.key);
        app.say(Level::Error, msg);
        return true;
    };
    let span = (exp - r.acquired_at).max(0);
    app.dialog = Some(Dialog::Renew(RenewForm {
        key: s.key.clone(),
        holder: r.holder.clone(),
        ttl: ttl_text(span),
        foreign: r.holder != app.operator,
        confirming: false,
        error: None,
    }));
    true
}

/// A span as the TTL syntax (`1h`, `30m`, `90s`), exact when possible.
pub fn ttl_text(ms: i64) -> String {
    let s = ms / 1000;
    if s > 0 && s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s > 0 && s % 60 == 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

fn start_force(app: &mut App) -> bool {
    let Some(s) = app.selected_status() else {
        app.say(Level::Info, "no claim selected");
        return true;
    };
    let rec = s.record.as_ref();
    app.dialog = Some(Dialog::ForceRelease(ForceConfirm {
        key: s.key.clone(),
        holder: rec.map(|r| r.holder.clone()),
        pid: rec.map(|r| r.pid),
        state: s.state,
        why: s
            .error
            .clone()
            .map_or_else(|| s.why.clone(), |e| format!("{}: {e}", s.why)),
        acquired_at: rec.map(|r| r.acquired_at),
        typed: String::new(),
        error: None,
    }));
    true
}

// ---------------------------------------------------------------- dialogs

/// Type into `input`: printable characters append, Backspace deletes.
/// Returns true when the key was text editing.
fn edit(input: &mut String, ev: &KeyEvent) -> bool {
    match ev.code {
        KeyCode::Char(c) if !c.is_control() => {
            input.push(c);
            true
        }
        KeyCode::Backspace => {
            input.pop();
            true
        }
        _ => false,
    }
}

fn dialog_key(app: &mut App, ev: KeyEvent) -> bool {
    if ev.code == KeyCode::Esc {
        app.dialog = None;
        return true;
    }
    let Some(dialog) = app.dialog.take() else {
        return false;
    };
    let (next, op) = match dialog {
        Dialog::Acquire(f) => acquire_key(f, &ev),
        Dialog::Renew(f) => renew_key(f, &ev),
        Dialog::ForceRelease(f) => force_key(f, &ev, &app.operator),
    };
    app.dialog = next;
    if let Some(op) = op {
        app.say(Level::Info, format!("{} {}…", op.verb(), op.key()));
        app.pending.push(op);
    }
    true
}

type Step = (Option<Dialog>, Option<Op>);

fn acquire_key(mut f: AcquireForm, ev: &KeyEvent) -> Step {
    match ev.code {
        KeyCode::Tab | KeyCode::Down => f.field = (f.field + 1) % 4,
        KeyCode::BackTab | KeyCode::Up => f.field = (f.field + 3) % 4,
        KeyCode::Enter => {
            return match acquire_op(&f) {
                Ok(op) => (None, Some(op)),
                Err(e) => {
                    f.error = Some(e);
                    (Some(Dialog::Acquire(f)), None)
                }
            }
        }
        _ => {
            if edit(f.field_mut(), ev) {
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
    crate::claims::validate_inputs(key, holder, ttl_ms).map_err(|e| e.to_string())?;
    Ok(Op::Acquire {
        key: key.to_string(),
        holder: holder.to_string(),
        ttl_ms,
        reason: Some(f.reason.trim().to_string()).filter(|r| !r.is_empty()),
    })
}

fn renew_key(mut f: RenewForm, ev: &KeyEvent) -> Step {
    if f.confirming {
        return match ev.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => renew_op(f),
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
                return renew_op(f);
            }
        }
        _ => {
            if edit(&mut f.ttl, ev) {
                f.error = None;
            }
        }
    }
    (Some(Dialog::Renew(f)), None)
}

fn renew_ttl(f: &RenewForm) -> Result<i64, String> {
    let ttl = parse_ttl_ms(&f.ttl)
        .ok_or_else(|| format!("TTL {:?} is not a duration (1h, 30m, 90s)", f.ttl.trim()))?;
    crate::claims::validate_inputs(&f.key, &f.holder, Some(ttl)).map_err(|e| e.to_string())?;
    Ok(ttl)
}

fn renew_op(mut f: RenewForm) -> Step {
    match renew_ttl(&f) {
        Ok(ttl_ms) => (
            None,
            Some(Op::Renew {
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
            if f.typed == f.key {
                true
            } else {
                f.error = Some("the typed key does not match; nothing done".into());
                false
            }
        } else {
            if edit(&mut f.typed, ev) {
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
            allow_live: f.state == ClaimState::Live,
        },
        key: f.key,
    };
    (None, Some(op))
}

fn filter_key(app: &mut App, ev: KeyEvent) -> bool {
    let Some(mut text) = app.filter_input.take() else {
        return false;
    };
    match ev.code {
        KeyCode::Enter => {
            // Applied as typed already; Enter just closes the input.
            return true;
        }
        KeyCode::Esc => {
            app.filter = Filter::default();
        }
        _ => {
            edit(&mut text, &ev);
            app.filter = Filter::parse(&text);
            app.filter_input = Some(text);
        }
    }
    app.rebuild_rows();
    app.selected = app.selected.min(app.rows.len().saturating_sub(1));
    scroll_into_view(app);
    true
}

fn overlay_key(app: &mut App, ov: Overlay, ev: KeyEvent) -> bool {
    let cmd = keys::lookup(app.focus, &ev);
    match cmd {
        Some(Cmd::Quit) => {
            app.quit = true;
            false
        }
        Some(Cmd::Close) => {
            app.overlay = None;
            true
        }
        Some(Cmd::Help) if ov == Overlay::Help => {
            app.overlay = None;
            true
        }
        Some(Cmd::Hazards) if ov == Overlay::Hazards => {
            app.overlay = None;
            true
        }
        Some(Cmd::Up) => {
            app.overlay_scroll = app.overlay_scroll.saturating_sub(1);
            true
        }
        Some(Cmd::Down) => {
            app.overlay_scroll = app.overlay_scroll.saturating_add(1);
            true
        }
        Some(Cmd::Top) => {
            app.overlay_scroll = 0;
            true
        }
        _ => false,
    }
}
