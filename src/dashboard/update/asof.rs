//! The "as of" view's transitions: asking the events service for the log
//! around an instant, taking the answer in, moving in it, going back. It
//! is a layer ([`Layer::AsOf`]): wherever the focus is, `G` and Esc return
//! to now, and no verb acts on a claim while the table shows the past.

use super::effects::Effects;
use super::handled::Handled;
use crate::dashboard::keys::{Cmd, Pane};
use crate::dashboard::model::asof::AsOf;
use crate::dashboard::model::row_id::RowId;
use crate::dashboard::model::{App, Layer, Level, Overlay};
use crate::events::asof::{add_held_now, HeldNow};
use crate::events::history::Log;
use crate::events::service::{Reply, Request, Which};
use crate::store::fleet::SOURCE_STORE;

/// Show the table as of `at`: the log around it is asked for (every
/// root's, over several roots), and the table says so until it comes.
pub fn open(app: &mut App, at: i64, fx: &mut Effects) -> bool {
    open_at_row(app, at, None, fx)
}

/// [`open`], with the row of `select` (a key, and over several roots its
/// root's label) selected once the rows come.
pub fn open_at_row(
    app: &mut App,
    at: i64,
    select: Option<(String, Option<String>)>,
    fx: &mut Effects,
) -> bool {
    // One instant at a time; it takes the timeline's place when asked there.
    app.modes.remove(|l| matches!(l, Layer::AsOf(_)));
    if app.modes.overlay() == Some(Overlay::Timeline) {
        app.modes.close_overlay();
    }
    app.modes.push(Layer::AsOf(AsOf {
        at,
        rows: None,
        complete: false,
        span: None,
        selected: 0,
        select,
    }));
    // One root (or a store no host publishes into): the log the service
    // serves. Several roots: each root's own log; a fleet: the store's and
    // every root a host mirrors. The service reads them beside the one it
    // serves.
    let hosts = app.store.as_ref().map_or(&[][..], |s| &s.fleet.hosts[..]);
    let logs = if !hosts.is_empty() {
        crate::store::fleet::logs_of(hosts)
            .into_iter()
            .map(|(name, log)| (name, Which::Log(log)))
            .collect()
    } else if app.origins.several() {
        app.origins
            .shown()
            .filter_map(|i| {
                Some((
                    Some(app.origins.label(i).to_string()),
                    Which::Log(Log::Root(app.origins.get(i)?.root.clone())),
                ))
            })
            .collect()
    } else {
        Vec::new()
    };
    fx.log.push(Request::AsOf { at, logs });
    let when = crate::time::clock(at, app.local_time, "%Y-%m-%d %H:%M:%S");
    app.say(
        Level::Info,
        format!("the claims as of {when}, from the events log (G or Esc: back to now)"),
    );
    true
}

/// Back to the claims as they are now.
pub fn close(app: &mut App) -> bool {
    let closed = app.modes.remove(|l| matches!(l, Layer::AsOf(_))).is_some();
    if closed {
        app.say(Level::Info, "back to now: the claims as they are");
    }
    closed
}

/// A reply of the events service: the answer for the instant this view
/// shows fills it (an earlier instant's, asked before, does not), with
/// every claim the table holds now that was taken by then: held at the
/// instant, however long before the log read it began.
pub fn on_reply(app: &mut App, reply: &Reply) -> bool {
    let Some(asked) = app.modes.asof().filter(|v| v.rows.is_none()).map(|v| v.at) else {
        return false;
    };
    let Reply::AsOf {
        at,
        answer,
        trouble,
    } = reply
    else {
        return false;
    };
    if *at != asked {
        return false;
    }
    let mut rows = answer.rows.clone();
    add_held_now(&mut rows, &held_now(app), *at);
    let mut missing = None;
    if let Some(v) = app.modes.asof_mut() {
        v.selected = match &v.select {
            Some((key, root)) => {
                let at = rows
                    .iter()
                    .position(|r| r.key == *key && (root.is_none() || r.root == *root));
                if at.is_none() {
                    missing = Some(key.clone());
                }
                at.unwrap_or(0)
            }
            None => 0,
        };
        v.rows = Some(rows);
        v.complete = answer.complete;
        v.span = answer.span;
    }
    if let Some(key) = missing {
        let key = crate::sanitize::sanitize(&key).into_owned();
        app.say(
            Level::Info,
            format!("the log read says nobody held {key} then (G or Esc: back to now)"),
        );
    }
    if let Some(t) = trouble {
        app.say(Level::Error, format!("as of: {t}"));
    }
    true
}

/// Every claim the table holds now with its record, named as the log of
/// its root is in the as-of answer: a root's label over several roots, a
/// host's root over a fleet, the store's own log otherwise.
fn held_now(app: &App) -> Vec<HeldNow> {
    let hosts = app.store.as_ref().map_or(&[][..], |s| &s.fleet.hosts[..]);
    app.claims
        .live
        .by_row
        .iter()
        .filter_map(|(id, s)| {
            let r = s.record.as_ref()?;
            let root = match id {
                RowId::Copy(c) => {
                    let host = hosts.iter().find(|h| h.host_id == c.host_id)?;
                    let root = host.roots.iter().find(|r| r.id == c.root_id)?;
                    Some(format!("{}:{}", host.label, root.path))
                }
                RowId::Claim(_) if !hosts.is_empty() => Some(SOURCE_STORE.to_string()),
                RowId::Claim(_) if app.origins.several() => {
                    Some(app.origins.label(app.origins.of(s)).to_string())
                }
                RowId::Claim(_) => None,
            };
            Some(HeldNow {
                key: s.key.clone(),
                holder: r.holder.clone(),
                acquired_at: r.acquired_at,
                root,
            })
        })
        .collect()
}

/// j/k and the page keys move among the rows shown as of then.
pub fn move_by(app: &mut App, delta: isize) -> bool {
    let Some(v) = app.modes.asof_mut() else {
        return false;
    };
    let n = v.rows.as_ref().map_or(0, Vec::len);
    let before = v.selected;
    v.selected = (v.selected as isize)
        .saturating_add(delta)
        .clamp(0, n.saturating_sub(1) as isize) as usize;
    v.selected != before
}

/// A command while the table shows the past: G and Esc return to now
/// wherever the focus is, the table's motions move in the rows of then,
/// and the rest passes to the layers and panes below.
pub(super) fn command(app: &mut App, cmd: Cmd) -> Handled {
    let page = super::rows::page(app) as isize;
    let table = app.focus == Pane::Table;
    Handled::Done(match cmd {
        Cmd::Bottom | Cmd::Close => close(app),
        Cmd::Up if table => move_by(app, -1),
        Cmd::Down if table => move_by(app, 1),
        Cmd::PageUp if table => move_by(app, -page),
        Cmd::PageDown if table => move_by(app, page),
        Cmd::Top if table => move_by(app, isize::MIN / 2),
        _ => return Handled::Pass,
    })
}

/// Why `cmd` does nothing while the table shows `v`'s instant (the
/// layer says which it refuses): typed (`:release KEY`) or pressed, in any
/// pane, it is refused with the way back.
pub(super) fn refusal(app: &App, v: &AsOf, cmd: Cmd) -> String {
    let when = crate::time::clock(v.at, app.local_time, "%Y-%m-%d %H:%M:%S");
    let what = cmd.name().unwrap_or("that key");
    format!(
        "the table shows the claims as of {when}: {what} would act on the claims of now, \
         not on these — G or Esc returns to now first"
    )
}
