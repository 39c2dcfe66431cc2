//! The panes' commands: the focused pane's own first (its motions, and
//! what its keys mean there), then what a command means in any pane — the
//! verbs on the selected claim and the keys that open a view.

use super::bulk;
use super::effects::Effects;
use super::fleet;
use super::handled::Handled;
use super::rows::motion;
use super::rows::{move_by, scroll_into_view, toggle_pause};
use super::whole_log as logview;
use super::{detail_cmds, events_cmds, quit, table_cmds};
use crate::claims::ClaimState;
use crate::dashboard::action::Verb;
use crate::dashboard::keys::{Cmd, Pane};
use crate::dashboard::model::dialogs::DEFAULT_ACQUIRE_TTL;
use crate::dashboard::model::{
    AcquireForm, App, BulkVerb, CleanConfirm, Dialog, Filter, ForceConfirm, Layer, Level, Overlay,
    RenewForm, RowAt,
};
use crate::time::ttl_text;

/// Run a command in the focused pane (the layers have passed it).
pub fn command(app: &mut App, cmd: Cmd, fx: &mut Effects) -> bool {
    let pane = match app.focus {
        Pane::Table => table_cmds::command(app, cmd),
        Pane::Detail => detail_cmds::command(app, cmd),
        Pane::Events => events_cmds::command(app, cmd, fx),
    };
    match pane {
        Handled::Done(redraw) => redraw,
        Handled::Pass => anywhere(app, cmd, fx),
    }
}

/// What a command means whichever pane has the focus.
fn anywhere(app: &mut App, cmd: Cmd, fx: &mut Effects) -> bool {
    match cmd {
        Cmd::Release | Cmd::Renew | Cmd::ForceRelease | Cmd::ForgetHost => claim_verb(app, cmd, fx),
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
        Cmd::Acquire => {
            let form = AcquireForm {
                key: "".into(),
                holder: app.operator.as_str().into(),
                ttl: DEFAULT_ACQUIRE_TTL.into(),
                reason: "".into(),
                field: 0,
                error: None,
                root: super::roots::root_field(app),
            };
            app.modes.push(Layer::Dialog(Dialog::Acquire(form)));
            true
        }
        Cmd::Prompt => {
            app.modes.push(Layer::Prompt(Default::default()));
            true
        }
        Cmd::AsOfCursor => super::asof::open(app, app.timeline.cursor, fx),
        Cmd::Messages => {
            app.modes.open_overlay(Overlay::Messages);
            // The newest at the bottom, in view.
            let bottom = crate::dashboard::view::overlay_max_scroll(app);
            app.modes.set_overlay_scroll(bottom);
            true
        }
        Cmd::Pause => {
            toggle_pause(app);
            true
        }
        Cmd::Hazards => {
            app.hazard_cursor = 0;
            app.modes.open_overlay(Overlay::Hazards);
            true
        }
        Cmd::EventsForKey => events_for_key(app),
        Cmd::Help => {
            app.seen_help = true;
            app.modes.open_overlay(Overlay::Help);
            true
        }
        Cmd::Close => close(app),
        Cmd::Open => match app.selected_status() {
            Some(_) => {
                app.modes.open_overlay(Overlay::Claim);
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
        Cmd::Quit => quit::request_quit(app, fx),
        Cmd::Timeline => logview::open_timeline(app, fx),
        Cmd::ZoomPane => {
            app.zoomed = !app.zoomed;
            scroll_into_view(app);
            true
        }
        Cmd::FlipTimes => {
            app.flip_times = !app.flip_times;
            app.say(
                Level::Info,
                if app.flip_times {
                    "times: events as spans (3m ago), the table's age and ttl as instants (T: back)"
                } else {
                    "times: events as instants, the table's age and ttl as spans"
                },
            );
            true
        }
        Cmd::Mark | Cmd::MarkAll | Cmd::ClearMarks => table_cmds::marks(app, cmd),
        // The motions of a pane that had no use for them.
        Cmd::Up | Cmd::Down | Cmd::PageUp | Cmd::PageDown | Cmd::Top | Cmd::Bottom => {
            move_by(app, motion(app, cmd))
        }
        Cmd::Filter | Cmd::SortNext | Cmd::SortReverse => table_cmds::table_only(app, cmd),
        // Keys of the events pane's browsing and of the timeline view, which
        // take them before they get here.
        Cmd::SearchOlder
        | Cmd::SearchNewer
        | Cmd::RawEvent
        | Cmd::GoToClaim
        | Cmd::TimeBack
        | Cmd::TimeForward
        | Cmd::TimeBackFar
        | Cmd::TimeForwardFar
        | Cmd::ZoomIn
        | Cmd::ZoomOut => false,
    }
}

/// r, n, F and D on the selected claim, or on every marked one.
fn claim_verb(app: &mut App, cmd: Cmd, fx: &mut Effects) -> bool {
    // An offline host's last known row: nothing can be done there.
    if cmd != Cmd::ForgetHost && fleet::refused(app) {
        return true;
    }
    let marked = !app.table.marked.is_empty();
    match cmd {
        Cmd::ForgetHost => fleet::start_forget(app),
        // With rows marked, the verbs act on them all (after one question).
        Cmd::Release if marked => bulk::start(app, BulkVerb::Release),
        Cmd::Renew if marked => bulk::start(app, BulkVerb::Renew),
        Cmd::ForceRelease if marked => bulk::start(app, BulkVerb::ForceRelease),
        Cmd::Release | Cmd::Renew if selected_copy(app).is_some() => copy_refusal(app),
        Cmd::Release => start_release(app, fx),
        Cmd::Renew => start_renew(app),
        _ => start_force(app),
    }
}

/// A host's copy changes only in the host's own root: F asks its
/// publisher; the other verbs are for the host's own dashboard.
fn copy_refusal(app: &mut App) -> bool {
    let host = selected_copy(app).unwrap_or_default();
    let msg = format!(
        "r and n act on this store's own claims: this row is a read-only copy \
         published by {host} (F asks {host} to force-release it; release or renew \
         it in its own root there)"
    );
    app.say(Level::Error, msg);
    true
}

/// `f`: the events pane shows only the selected claim's key (again: all).
fn events_for_key(app: &mut App) -> bool {
    if app.events.view.key.is_some() {
        app.events.view.key = None;
    } else if let Some(s) = app.selected_status() {
        let root = app.origins.several().then(|| app.origins.of(s));
        app.events.view.key = Some(s.key.clone());
        app.events.view.key_root = root;
    } else {
        app.say(Level::Info, "no claim selected to filter the events by");
    }
    app.events.view.scroll = 0;
    app.events.view.new_while_scrolled = 0;
    true
}

/// Esc over the panes: the marks first (asking when more than a screen
/// of them would go), then the filter, the `f` key filter, the `:events`
/// filter, the message.
fn close(app: &mut App) -> bool {
    if !app.table.marked.is_empty() {
        return bulk::clear_marks_asking(app);
    }
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
    } else if !app.events.view.filter.is_empty() {
        app.events.view.filter = Default::default();
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
        .hazards()
        .into_iter()
        // A host's hazards are its publisher's to clean, on its host.
        .filter(|h| h.kind.cleanable() && h.copy().is_none())
        .collect();
    if hazards.is_empty() {
        app.say(
            Level::Info,
            "nothing to clean: no mutex corpse or temp litter (claims are force-released with F)",
        );
        return true;
    }
    // From the hazards list: the question takes its place.
    app.modes.pop_if(|l| {
        matches!(
            l,
            Layer::Overlay {
                which: Overlay::Hazards,
                ..
            }
        )
    });
    app.modes
        .push(Layer::Dialog(Dialog::Clean(CleanConfirm { hazards })));
    true
}

pub(super) fn start_release(app: &mut App, fx: &mut Effects) -> bool {
    let Some(s) = app.selected_status() else {
        app.say(Level::Info, "no claim selected");
        return true;
    };
    let key = s.key.clone();
    let root = app.origins.of(s);
    match &s.record {
        Some(r) if r.holder == app.operator => {
            let op = Verb::Release {
                key: key.clone(),
                holder: r.holder.clone(),
            };
            match app.route(RowAt { root, host: None }, op) {
                Ok(op) => {
                    fx.ops.push(op);
                    app.say(Level::Info, format!("releasing {key}…"));
                }
                Err(why) => app.say(Level::Error, why),
            }
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
    // Renewing a suspect claim is allowed (the protocol allows it), but
    // nothing vouches for its holder: said at once, and asked again below.
    let warning = (s.state == ClaimState::Suspect).then(|| {
        format!(
            "{} is suspect: its holder (pid {}) is not provably alive, and a renewal keeps the \
             key blocked for it",
            s.key, r.pid
        )
    });
    let form = Dialog::Renew(RenewForm {
        root: app.origins.of(s),
        key: s.key.clone(),
        holder: r.holder.clone(),
        pid: r.pid,
        state: s.state,
        ttl: ttl.into(),
        offered: offered.into(),
        foreign: r.holder != app.operator,
        confirming: false,
        error: None,
    });
    app.modes.push(Layer::Dialog(form));
    if let Some(w) = warning {
        app.say(Level::Error, w);
    }
    true
}

pub(super) fn start_force(app: &mut App) -> bool {
    let Some(s) = app.selected_status() else {
        app.say(Level::Info, "no claim selected");
        return true;
    };
    let rec = s.record.as_ref();
    let form = Dialog::ForceRelease(ForceConfirm {
        root: app.origins.of(s),
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
        host: app.selected_origin(),
    });
    app.modes.push(Layer::Dialog(form));
    true
}
