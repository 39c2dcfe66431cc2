//! The keymap's commands, and the starts of the verbs they open.

use super::asof;
use super::bulk;
use super::effects::Effects;
use super::fleet;
use super::rows::{move_by, page, scroll_into_view, toggle_pause};
use super::whole_log as logview;
use crate::dashboard::action::Op;
use crate::dashboard::keys::{Cmd, Pane};
use crate::dashboard::model::dialogs::DEFAULT_ACQUIRE_TTL;
use crate::dashboard::model::{
    AcquireForm, App, BulkVerb, CleanConfirm, Dialog, Filter, ForceConfirm, Level, Overlay,
    QuitConfirm, RenewForm,
};
use crate::time::ttl_text;

/// Run a keymap command (also what the tests drive).
pub fn command(app: &mut App, cmd: Cmd, fx: &mut Effects) -> bool {
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
    if app.asof.is_some() && app.focus == Pane::Table {
        if let Some(redraw) = asof_command(app, cmd) {
            return redraw;
        }
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
            app.table.sort.column = col.next(app.avail());
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
        Cmd::Release | Cmd::Renew | Cmd::ForceRelease if fleet::refused(app) => true,
        Cmd::ForgetHost => fleet::start_forget(app),
        // With rows marked, the verbs act on them all (after one question).
        Cmd::Release if !app.table.marked.is_empty() => bulk::start(app, BulkVerb::Release),
        Cmd::Renew if !app.table.marked.is_empty() => bulk::start(app, BulkVerb::Renew),
        Cmd::ForceRelease if !app.table.marked.is_empty() => {
            bulk::start(app, BulkVerb::ForceRelease)
        }
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
                root: super::roots::root_field(app),
            }));
            true
        }
        Cmd::Release => start_release(app, fx),
        Cmd::Renew => start_renew(app),
        Cmd::ForceRelease => start_force(app),
        Cmd::Prompt => {
            app.prompt = Some(Default::default());
            true
        }
        Cmd::AsOfCursor => asof::open(app, app.timeline.cursor, fx),
        Cmd::Mark => bulk::toggle_mark(app),
        Cmd::Messages => {
            app.overlays.open = Some(Overlay::Messages);
            // The newest at the bottom, in view.
            app.overlays.scroll = crate::dashboard::view::overlay_max_scroll(app);
            true
        }
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
        Cmd::Copy => copy_key(app, fx),
        Cmd::Clean => start_clean(app),
        Cmd::Suspend => {
            fx.suspend = true;
            false
        }
        Cmd::Quit => request_quit(app, fx),
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

/// `q`: quit, unless claims taken here would be orphaned by it — then ask.
pub(super) fn request_quit(app: &mut App, fx: &mut Effects) -> bool {
    let (roots, keys): (Vec<usize>, Vec<String>) = app.own_claims_by_root().into_iter().unzip();
    if keys.is_empty() {
        fx.quit = true;
        return false;
    }
    app.overlays.dialog = Some(Dialog::Quit(QuitConfirm { keys, roots }));
    true
}

/// The table's keys while it shows a past instant: motions move in it,
/// G and Esc go back to now, and nothing acts on the past.
fn asof_command(app: &mut App, cmd: Cmd) -> Option<bool> {
    Some(match cmd {
        Cmd::Up => asof::move_by(app, -1),
        Cmd::Down => asof::move_by(app, 1),
        Cmd::PageUp => asof::move_by(app, -(page(app) as isize)),
        Cmd::PageDown => asof::move_by(app, page(app) as isize),
        Cmd::Top => asof::move_by(app, isize::MIN / 2),
        Cmd::Bottom | Cmd::Close => asof::close(app),
        Cmd::Acquire
        | Cmd::Release
        | Cmd::Renew
        | Cmd::ForceRelease
        | Cmd::Mark
        | Cmd::Filter
        | Cmd::SortNext
        | Cmd::SortReverse
        | Cmd::EventsForKey
        | Cmd::Copy
        | Cmd::Open => {
            app.say(
                Level::Info,
                "the table shows a past instant: G or Esc returns to now, where the keys act",
            );
            true
        }
        _ => return None,
    })
}

/// `y`: the selected key to the terminal's clipboard, by OSC 52 (the loop
/// writes it), so it works over ssh and inside tmux.
pub(super) fn copy_key(app: &mut App, fx: &mut Effects) -> bool {
    let Some(key) = app.selected_status().map(|s| s.key.clone()) else {
        app.say(Level::Info, "no claim selected to copy");
        return true;
    };
    app.say(
        Level::Ok,
        format!("copied {key} to the clipboard (OSC 52: the terminal must allow it)"),
    );
    fx.clipboard = Some(key);
    true
}

/// `x`: list what `doctor --fix` would remove now, and ask.
pub(super) fn start_clean(app: &mut App) -> bool {
    let hazards: Vec<_> = app
        .claims
        .hazards()
        .into_iter()
        .filter(|h| h.kind.cleanable())
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

pub(super) fn start_release(app: &mut App, fx: &mut Effects) -> bool {
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
            fx.ops.push(app.roots.route(root, op));
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
pub(super) fn selected_copy(app: &App) -> Option<String> {
    let o = app.selected_origin()?;
    Some(crate::sanitize::sanitize(&o.hostname).into_owned())
}

pub(super) fn start_renew(app: &mut App) -> bool {
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

pub(super) fn start_force(app: &mut App) -> bool {
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
        host: app.selected_origin().cloned(),
    }));
    true
}

// ---------------------------------------------------------------- dialogs
