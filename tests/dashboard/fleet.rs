//! The fleet view: the dashboard over a store that hosts publish into
//! (`claimtop publish`), driven by the store collector's messages at an
//! injected clock — published rows beside the store's own, the host and
//! source columns, an offline host greyed with its last-seen time, and F on
//! a copy going to its host.
//!
//! Here: the fleet these tests publish and how the lane's messages reach
//! the model; the behaviours are in the modules, one each.

mod copy_verbs;
mod history;
mod host_filter;
mod hosts;
mod last_known;
mod rows;

use crate::common::*;
use crate::effects::update;
use claimtop::claims::Hazard;
use claimtop::claims::ItemRules;
use claimtop::claims::{ClaimState, Counts, Status, Sweep};
use claimtop::dashboard::testing::RowId;
use claimtop::dashboard::testing::StoreView;
use claimtop::dashboard::testing::{Action, App};
use claimtop::store::fleet::{FleetItem, FleetState, HostInfo, PublishedRoot};
use claimtop::store::{Cursor, ListEnd, MemberListing};
use serde_json::{json, Value};

const URL: &str = "etcd://10.0.0.1:2379/fno";

/// What the site's published member's lane says, as these tests tell it.
pub(crate) enum StoreMsg {
    /// The hosts, and every copy they publish, read again.
    Fleet { fleet: Box<FleetState>, at: i64 },
    /// One copy re-read (None: its host no longer publishes it).
    Published {
        host_id: String,
        root_id: String,
        key: String,
        item: Option<Value>,
        at: i64,
    },
}

/// The site and its copies' origins, as a store of one `--store` opens them.
pub(crate) const SITE: u16 = 0;
pub(crate) const COPIES: u16 = 1;

fn copy_place(host_id: &str, root_id: &str, key: &str) -> claimtop::claims::Loc {
    let place = format!("{host_id}/{root_id}/{key}");
    claimtop::claims::Loc::new(COPIES, ItemRules::Copy, std::path::Path::new(&place))
}

/// A copy as the published member lists it: as its host judged it, or,
/// its host offline, as last known then.
pub(crate) fn copy_row(
    i: &FleetItem,
    offline_since: Option<i64>,
) -> Option<claimtop::store::mirror::Row> {
    let place = copy_place(&i.host_id, &i.root.id, i.key());
    let mut s = claimtop::store::fleet::copy_status(place, &i.item)?;
    if let Some(seen) = offline_since {
        let was = s.state;
        s.state = claimtop::claims::census::copy_state(was, false);
        s.why = format!(
            "last known at {}, host offline; it was {was} then: {}",
            claimtop::time::instant_words(seen, false),
            s.why
        );
    }
    Some(claimtop::store::mirror::Row {
        path: s.file.clone(),
        status: std::sync::Arc::new(s),
        tenure: None,
    })
}

/// The copies' counts once `d` is taken in, as the published member's
/// mirror tallies them with each delta.
fn copies_tally(
    app: &App,
    d: &claimtop::store::mirror::Delta,
    hazards: std::sync::Arc<Vec<Hazard>>,
) -> claimtop::store::mirror::Tally {
    use std::collections::HashMap;
    let mut states: HashMap<RowId, ClaimState> = HashMap::new();
    if d.whole.is_none() {
        for (id, s) in &app.claims.live.by_row {
            if id.is_copy() {
                states.insert(id.clone(), s.state);
            }
        }
    }
    for row in &d.rows {
        let id = RowId::of(row.path.clone());
        match row.status.state {
            ClaimState::Free => states.remove(&id),
            st => states.insert(id, st),
        };
    }
    let mut counts = Counts::default();
    for st in states.values() {
        counts.add(*st);
    }
    claimtop::store::mirror::Tally { counts, hazards }
}

pub(crate) fn store(app: &mut App, msg: StoreMsg) -> bool {
    use claimtop::dashboard::testing::Update;
    use claimtop::store::drive::Facts;
    use claimtop::store::mirror::{Delta, Whole};
    use claimtop::store::OriginIx;
    let (delta, facts, hazards) = match msg {
        StoreMsg::Fleet { fleet, at } => {
            let seen = |id: &str| {
                fleet
                    .hosts
                    .iter()
                    .find(|h| h.host_id == id && !h.online)
                    .map(|h| h.last_seen_ms)
            };
            let rows = fleet
                .items
                .iter()
                .filter_map(|i| copy_row(i, None))
                .chain(
                    fleet
                        .last_known
                        .iter()
                        .filter_map(|i| copy_row(i, seen(&i.host_id))),
                )
                .collect();
            let delta = Delta {
                whole: Some(Whole {
                    resync: None,
                    partial: false,
                    revision: None,
                }),
                rows,
                at,
                ..Delta::default()
            };
            let facts = Facts {
                hosts: Some(std::sync::Arc::new(fleet.hosts.clone())),
                ..Facts::default()
            };
            (delta, Some(facts), Some(fleet.hazards))
        }
        StoreMsg::Published {
            host_id,
            root_id,
            key,
            item,
            at,
        } => {
            let gone = || {
                let place = copy_place(&host_id, &root_id, &key);
                let s = Status::free(key.clone(), place.clone(), String::new());
                claimtop::store::mirror::Row {
                    path: place,
                    status: std::sync::Arc::new(s),
                    tenure: None,
                }
            };
            let row = item
                .and_then(|v| {
                    let i = FleetItem {
                        host_id: host_id.clone(),
                        hostname: String::new(),
                        root: root_a(),
                        item: v,
                    };
                    copy_row(&i, None)
                })
                .unwrap_or_else(gone);
            let delta = Delta {
                rows: vec![row],
                at,
                ..Delta::default()
            };
            (delta, None, None)
        }
    };
    // The site's lane reads its hosts (and what they found); the copies'
    // lane lists the copies.
    let mut moved = false;
    if let Some(facts) = facts {
        let site = Update {
            at: OriginIx(SITE),
            delta: None,
            facts: Some(facts),
            tick: None,
        };
        moved |= update(app, Action::Update(Box::new(site))).redraw;
    }
    // What the hosts found in their roots is the copies' listing's, as a
    // root's hazards are its own; a copy re-read leaves them as they were.
    let hazards = hazards.map(std::sync::Arc::new).unwrap_or_else(|| {
        app.origins
            .origin(usize::from(COPIES))
            .map(|o| std::sync::Arc::clone(&o.tally.hazards))
            .unwrap_or_default()
    });
    let mut delta = delta;
    delta.tally = Some(copies_tally(app, &delta, hazards));
    let u = Update {
        at: OriginIx(COPIES),
        delta: Some(delta),
        facts: None,
        tick: None,
    };
    moved | update(app, Action::Update(Box::new(u))).redraw
}

pub(crate) fn root_a() -> PublishedRoot {
    PublishedRoot::new("00000000000000aa".into(), "/srv/alpha".into())
}

pub(crate) fn host(id: &str, name: &str, online: bool, last_seen_ms: i64) -> HostInfo {
    HostInfo {
        host_id: id.into(),
        hostname: name.into(),
        label: name.into(),
        online,
        last_seen_ms,
        roots: vec![root_a()],
        counts: Counts::default(),
    }
}

/// A claim as a host's `list --json` prints it.
fn item(key: &str, holder: &str, host: &str) -> Value {
    let r = rec(key, holder, 4242, 2 * MIN, Some(10 * MIN));
    let mut record = serde_json::to_value(&r).expect("record as json");
    record["host"] = Value::from(host);
    json!({"key": key, "state": "live", "why": "pid 4242 is running", "record": record})
}

pub(crate) fn published(host_id: &str, hostname: &str, key: &str, holder: &str) -> FleetItem {
    FleetItem {
        host_id: host_id.into(),
        hostname: hostname.into(),
        root: root_a(),
        item: item(key, holder, hostname),
    }
}

/// One native claim, listed by the store.
fn native_listing() -> MemberListing {
    let r = rec("deploy/prod", "pty:alice", 77, MIN, Some(5 * MIN));
    let s = Status {
        key: "deploy/prod".into(),
        file: std::path::Path::new("/fno/claims/deploy%2Fprod").into(),
        state: ClaimState::Live,
        why: "the lease is running".into(),
        error: None,
        locality: None,
        head: Box::default(),
        record: Some(r),
    };
    MemberListing {
        at: Default::default(),
        rules: ItemRules::StoreKey,
        sweep: Sweep {
            root: URL.into(),
            claims: vec![s],
            hazards: Vec::new(),
            counts: Default::default(),
        },
        tenures: vec![None],
        store_hazards: Vec::new(),
        stamps: Vec::new(),
        kept: Vec::new(),
        end: ListEnd {
            at: Some(Cursor::of_u64(7)),
            complete: true,
        },
    }
}

pub(crate) fn fleet_app(w: u16, h: u16) -> App {
    let mut app = app_at(fixed_root());
    app.over_store(StoreView::new(URL.into(), NOW));
    update(&mut app, listed(native_listing(), NOW, None));
    update(&mut app, Action::Resize(w, h));
    app
}

pub(crate) fn two_hosts() -> FleetState {
    FleetState {
        hosts: vec![
            host("m-alpha", "alpha", true, NOW),
            host("m-beta", "beta", false, NOW - 3 * MIN),
        ],
        items: vec![
            published("m-alpha", "alpha", "build/x86", "ci:runner-7"),
            published("m-alpha", "alpha", "deploy/prod", "agent:codex-3"),
        ],
        hazards: Vec::new(),
        last_known: Vec::new(),
    }
}

/// [`fleet_app`] 160×40 after the fleet of [`two_hosts`] was read.
fn with_two_hosts() -> App {
    let mut app = fleet_app(160, 40);
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(two_hosts()),
            at: NOW,
        },
    );
    app
}

pub(crate) fn header_row(screen: &str) -> String {
    screen
        .lines()
        .find(|l| l.contains("state") && l.contains("key"))
        .unwrap_or_default()
        .to_string()
}

/// [`fleet_app`] 160×40 after `fleet` was read.
fn app_with(fleet: FleetState) -> App {
    let mut app = fleet_app(160, 40);
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(fleet),
            at: NOW,
        },
    );
    app
}
