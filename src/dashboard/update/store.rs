//! The transitions that take in what a store's lanes say beside the
//! claims: the hosts, the link, each row's tenure.

use crate::dashboard::model::fleet::Summed;
use crate::dashboard::model::store::{Held, StoreInfo};
use crate::dashboard::model::{App, Level};
use crate::store::drive::LinkState;
use crate::store::fleet::HostInfo;
use crate::store::mirror::Delta;
use crate::store::sink::FleetSummary;
use std::sync::Arc;

/// The hosts publishing into a site, read again; true when they moved.
pub fn on_hosts(app: &mut App, at: usize, hosts: Arc<Vec<HostInfo>>) -> bool {
    let Some(view) = app.store.as_mut().filter(|v| v.site == at) else {
        return false;
    };
    let moved = view.fleet.hosts != *hosts;
    view.fleet.hosts = Arc::unwrap_or_clone(hosts);
    moved
}

/// How member `at` is reached now, judged at the model's clock; true when
/// the screen moved. The header says one site's link (the copies ride on
/// its connection: its link is theirs).
pub fn on_link(app: &mut App, at: usize, link: LinkState) -> bool {
    let now = app.now;
    let Some(view) = app.store.as_mut().filter(|v| v.site == at) else {
        return false;
    };
    match link {
        LinkState::Reached(facts) => {
            let info = StoreInfo::from(facts);
            let changed = view.info.as_ref() != Some(&info);
            view.info = Some(info);
            view.judge(now, Some(true), None) || changed
        }
        LinkState::Unreachable(_) => view.judge(now, Some(false), None),
        LinkState::FeedDown(_) => view.judge(now, None, Some(false)),
        LinkState::FeedUp(revision) => {
            if let (Some(rev), Some(info)) = (revision, view.info.as_mut()) {
                info.revision = info.revision.max(rev);
            }
            view.judge(now, Some(true), Some(true))
        }
    }
}

/// What the hosts' summaries say, read before the copies are listed: the
/// header's counts and the table's "loading N of M" until the copies are
/// all in (then the copies' own count replaces them); true when it moved.
pub fn on_summary(app: &mut App, at: usize, s: &FleetSummary) -> bool {
    let Some(view) = app.store.as_mut().filter(|v| v.site == at) else {
        return false;
    };
    let summed = Summed::of(s);
    let moved = !view.fleet.listed && view.fleet.summary.as_ref() != Some(&summed);
    view.fleet.summary = Some(summed);
    moved
}

/// The copies of origin `at` were listed whole (`done`), or only their
/// head or first pages so far: once whole, they are counted by their own
/// rows; true when that moved.
pub fn on_copies_listed(app: &mut App, at: usize, done: bool) -> bool {
    let Some(view) = app.store.as_mut().filter(|v| v.copies == Some(at)) else {
        return false;
    };
    let moved = view.fleet.listed != done && view.fleet.summary.is_some();
    view.fleet.listed |= done;
    moved
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
pub fn on_delta(app: &mut App, at: usize, d: &Delta) -> bool {
    let Some(view) = app.store.as_mut() else {
        return false;
    };
    let mut moved = false;
    if let Some(whole) = &d.whole {
        moved |= view.judge(d.at, None, Some(true));
        let was = view.partial;
        view.partial = whole.partial.then_some(d.rows.len());
        moved |= was != view.partial;
        // The listing is this member's own claims, all of them.
        view.tenures
            .retain(|loc, _| usize::from(loc.origin()) != at);
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
                view.tenures
                    .insert(row.path.clone(), Held::new(&tenure, d.at));
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
