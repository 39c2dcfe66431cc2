//! The "as of" view's transitions: asking the events service for the log
//! around an instant, taking the answer in, moving in it, going back.

use super::effects::Effects;
use crate::dashboard::model::asof::AsOf;
use crate::dashboard::model::row_id::RowId;
use crate::dashboard::model::{App, Level, Overlay};
use crate::events::asof::{add_held_now, HeldNow};
use crate::events::service::{Reply, Request, Which};
use crate::store::fleet::SOURCE_STORE;

/// Show the table as of `at`: the log around it is asked for (every
/// root's, over several roots), and the table says so until it comes.
pub fn open(app: &mut App, at: i64, fx: &mut Effects) -> bool {
    app.asof = Some(AsOf {
        at,
        rows: None,
        complete: false,
        span: None,
        selected: 0,
    });
    if app.overlays.open == Some(Overlay::Timeline) {
        app.overlays.open = None;
    }
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
    } else if app.roots.is_several() {
        app.roots
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (
                    Some(app.roots.label(i).to_string()),
                    Which::Path(r.events_file()),
                )
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
    app.asof.take().is_some()
}

/// A reply of the events service: the answer for the instant this view
/// shows fills it (an earlier instant's, asked before, does not), with
/// every claim the table holds now that was taken by then: held at the
/// instant, however long before the log read it began.
pub fn on_reply(app: &mut App, reply: &Reply) -> bool {
    let Some(asked) = app.asof.as_ref().filter(|v| v.rows.is_none()).map(|v| v.at) else {
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
    if let Some(v) = app.asof.as_mut() {
        v.rows = Some(rows);
        v.complete = answer.complete;
        v.span = answer.span;
        v.selected = 0;
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
                RowId::Claim(_) if app.roots.is_several() => {
                    Some(app.roots.label(app.roots.of(s)).to_string())
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
    let Some(v) = app.asof.as_mut() else {
        return false;
    };
    let n = v.rows.as_ref().map_or(0, Vec::len);
    let before = v.selected;
    v.selected = (v.selected as isize)
        .saturating_add(delta)
        .clamp(0, n.saturating_sub(1) as isize) as usize;
    v.selected != before
}
