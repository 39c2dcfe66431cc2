//! The keys on the fleet's rows: what F, r and n say on a row an offline
//! host last published (nothing can be done there), and `D`, which forgets
//! an offline host — the same library call as `claimtop fleet forget
//! HOST`, behind a confirmation.

use super::effects::Effects;
use crate::claims::{ClaimState, Status};
use crate::dashboard::action::Op;
use crate::dashboard::model::fleet::{
    gone, host_file, mark_last_known, status_of, FleetView, Origin,
};
use crate::dashboard::model::{App, CopyId, Dialog, ForgetConfirm, Layer, Level, RowId};
use crate::sanitize::sanitize;
use crate::store::fleet::FleetState;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// F, r or n on a row its offline host last published: say why nothing
/// can be done (true: the key is spent).
pub(super) fn refused(app: &mut App) -> bool {
    let why = app
        .selected_status()
        .and_then(|s| refuse_last_known(app, s));
    match why {
        Some(why) => {
            app.say(Level::Error, why);
            true
        }
        None => false,
    }
}

/// `D`: ask to forget the selected row's host, if it is offline.
pub(super) fn start_forget(app: &mut App) -> bool {
    let origin = app.selected_origin().cloned();
    let Some(origin) = origin else {
        app.say(
            Level::Info,
            "D forgets an offline publishing host: select one of its rows (a last known claim)",
        );
        return true;
    };
    let Some(view) = app.store.as_ref() else {
        return true;
    };
    let Some(host) = view.fleet.host(&origin.host_id) else {
        return true;
    };
    let label = sanitize(&host.label).into_owned();
    if host.online {
        app.say(
            Level::Error,
            format!(
                "host {label} is online: only an offline host can be forgotten (stop its publisher first)"
            ),
        );
        return true;
    }
    let rows = view.fleet.counts.get(&host.host_id).copied().unwrap_or(0);
    app.modes
        .push(Layer::Dialog(Dialog::ForgetHost(ForgetConfirm {
            host_id: host.host_id.clone(),
            label: host.label.clone(),
            last_seen_ms: host.last_seen_ms,
            rows,
        })));
    true
}

/// A key in the confirmation: y forgets, anything else asks again (Esc
/// closes it, as every dialog).
pub(super) fn forget_key(app: &mut App, f: ForgetConfirm, ev: &KeyEvent, fx: &mut Effects) -> bool {
    if !matches!(ev.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
        app.modes.push(Layer::Dialog(Dialog::ForgetHost(f)));
        return false;
    }
    app.say(
        Level::Info,
        format!("forgetting host {}…", sanitize(&f.label)),
    );
    fx.ops.push(Op::ForgetHost {
        host_id: f.host_id,
        label: f.label,
    });
    true
}

/// Replace every published row with the fleet's, and its hosts. Returns
/// the paths of rows that came, went or changed.
pub(super) fn take_fleet(app: &mut App, fleet: FleetState) -> Vec<RowId> {
    let Some(view) = app.store.as_mut() else {
        return Vec::new();
    };
    let old: Vec<Arc<CopyId>> = view.fleet.rows.keys().cloned().collect();
    let FleetState {
        hosts,
        items,
        hazards,
        last_known,
    } = fleet;
    let seen: HashMap<String, i64> = hosts
        .iter()
        .filter(|h| !h.online)
        .map(|h| (h.host_id.clone(), h.last_seen_ms))
        .collect();
    let labels: HashMap<String, String> = hosts
        .iter()
        .map(|h| (h.host_id.clone(), h.label.clone()))
        .collect();
    view.fleet = FleetView {
        hosts,
        hazards,
        ..FleetView::default()
    };
    let mut fresh: HashMap<Arc<CopyId>, (Origin, Status)> = HashMap::with_capacity(items.len());
    for i in items.into_iter().chain(last_known) {
        let id = Arc::new(CopyId {
            host_id: i.host_id.clone(),
            root_id: i.root.id.clone(),
            key: i.key().to_string(),
        });
        let Some(mut s) = status_of(PathBuf::from(host_file(&i.item)), &i.item) else {
            continue;
        };
        if let Some(at) = seen.get(&i.host_id) {
            mark_last_known(&mut s, *at);
        }
        let hostname = labels.get(&i.host_id).cloned().unwrap_or(i.hostname);
        let origin = Origin {
            file: host_file(&i.item),
            host_id: i.host_id,
            hostname,
            root_id: i.root.id,
            root_path: i.root.path,
        };
        fresh.insert(id, (origin, s));
    }
    let mut moved = Vec::with_capacity(old.len() + fresh.len());
    for id in old {
        if !fresh.contains_key(&id) {
            moved.extend(
                app.claims
                    .live
                    .put_counted(&RowId::Copy(id), Arc::new(gone())),
            );
        }
    }
    for (id, (origin, s)) in fresh {
        if let Some(view) = app.store.as_mut() {
            view.fleet.track(&id, Some(origin));
        }
        moved.extend(app.claims.live.put_counted(&RowId::Copy(id), Arc::new(s)));
    }
    moved
}

/// One published claim re-read: `item` None when its host no longer
/// publishes it. A claim of a host the view does not know (yet) is left
/// for the fleet's next reading, which names its host.
pub(super) fn take_published(
    app: &mut App,
    host_id: &str,
    root_id: &str,
    key: &str,
    item: Option<Value>,
) -> Option<RowId> {
    let view = app.store.as_mut()?;
    let id = Arc::new(CopyId {
        host_id: host_id.to_string(),
        root_id: root_id.to_string(),
        key: key.to_string(),
    });
    let file = item.as_ref().map(host_file).unwrap_or_default();
    let row = item.and_then(|v| status_of(PathBuf::from(&file), &v));
    let origin = match &row {
        Some(_) => {
            let host = view.fleet.host(host_id)?;
            let root = host.roots.iter().find(|r| r.id == root_id)?;
            Some(Origin {
                host_id: host_id.to_string(),
                hostname: host.label.clone(),
                root_id: root_id.to_string(),
                root_path: root.path.clone(),
                file,
            })
        }
        None => None,
    };
    view.fleet.track(&id, origin);
    let s = row.unwrap_or_else(gone);
    app.claims.live.put_counted(&RowId::Copy(id), Arc::new(s))
}

/// Why F, r and n do nothing on a last known row: its host is offline, so
/// nobody can carry anything out there; `fleet forget` (or D) removes it.
fn refuse_last_known(app: &App, s: &Status) -> Option<String> {
    if s.state != ClaimState::LastKnown {
        return None;
    }
    let o = app.selected_origin()?;
    let host = crate::sanitize::sanitize(&o.hostname);
    Some(format!(
        "{} is what host {host} last published: the host is offline, so nobody can \
         release or force-release it there (D, or `claimtop fleet forget {host}`, \
         removes the offline host and its rows)",
        crate::sanitize::sanitize(&s.key)
    ))
}
