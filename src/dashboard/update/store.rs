//! The transitions that take in what the store collector reports beside
//! the claims: the fleet, the probe, the watch, each row's tenure.

use super::fleet::{take_fleet, take_published};
use super::rows::rows_changed;
use crate::dashboard::model::store::{Held, StoreMsg};
use crate::dashboard::model::{App, Level};
use crate::store::mirror::Delta;

/// Take in what the store collector reported; true when the screen moved.
pub fn on_store(app: &mut App, msg: StoreMsg) -> bool {
    let Some(view) = app.store.as_mut() else {
        return false;
    };
    match msg {
        StoreMsg::Fleet { fleet, .. } => {
            let hosts_moved = view.fleet.hosts != fleet.hosts;
            let moved = take_fleet(app, *fleet);
            rows_changed(app, &moved, false) || hosts_moved
        }
        StoreMsg::Published {
            host_id,
            root_id,
            key,
            item,
            ..
        } => {
            let moved = take_published(app, &host_id, &root_id, &key, item);
            rows_changed(app, moved.as_slice(), false)
        }
        StoreMsg::Info { info, at } => {
            let moved = view.info.as_ref() != Some(&info);
            view.info = Some(info);
            view.judge(at, Some(true), None) || moved
        }
        StoreMsg::Unreachable { at, .. } => view.judge(at, Some(false), None),
        StoreMsg::WatchDown { at, .. } => view.judge(at, None, Some(false)),
        StoreMsg::WatchUp { revision, at } => {
            if let (Some(rev), Some(info)) = (revision, view.info.as_mut()) {
                info.revision = info.revision.max(rev);
            }
            view.judge(at, Some(true), Some(true))
        }
    }
}

/// The status line after a re-list: a compaction is named as such, since
/// it is the one an operator of etcd expects to see.
pub fn resync_notice(why: &str, revision: Option<i64>) -> String {
    let at = revision.map_or_else(String::new, |r| format!(" at revision {r}"));
    if why.contains("compacted") {
        format!("store compacted: re-listed{at}")
    } else {
        format!("store re-listed{at}: {why}")
    }
}

/// Take in what a store's mirror says of its own rows beside them: each
/// row's tenure (its lease counts down from when it was read), the
/// revision, a first screen's partial listing, a re-list's notice. True
/// when the screen moved.
pub fn on_delta(app: &mut App, d: &Delta) -> bool {
    let Some(view) = app.store.as_mut() else {
        return false;
    };
    let mut moved = false;
    if let Some(whole) = &d.whole {
        moved |= view.judge(d.at, None, Some(true));
        let was = view.partial;
        view.partial = whole.partial.then_some(d.rows.len());
        moved |= was != view.partial;
        // The listing is the store's own claims: the copies' rows keep
        // no tenure here.
        view.tenures.clear();
        if let (Some(rev), Some(info)) = (whole.revision, view.info.as_mut()) {
            info.revision = info.revision.max(rev);
        }
    }
    for row in &d.rows {
        match row.tenure {
            Some(tenure) => {
                if let Some(info) = view.info.as_mut() {
                    info.revision = info.revision.max(tenure.revision);
                }
                let held = Held {
                    tenure,
                    read_at: d.at,
                };
                view.tenures.insert(row.path.clone(), held);
            }
            None => {
                view.tenures.remove(&row.path);
            }
        }
    }
    if let Some(why) = d.whole.as_ref().and_then(|w| w.resync.as_deref()) {
        let revision = d.whole.as_ref().and_then(|w| w.revision);
        app.say(Level::Info, resync_notice(why, revision));
        moved = true;
    }
    moved
}
