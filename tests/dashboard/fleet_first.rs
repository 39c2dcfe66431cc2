//! The first screen over a fleet: the hosts and the header's counts from
//! the hosts' summaries before any copy is listed, "loading N of M" while
//! the copies come, and once they are all in, the copies' own count in
//! place of the summaries' (each claim counted once, as `list` counts it).

use crate::common::*;
use crate::effects::update;
use crate::fleet::{copy_row, fleet_app, published, root_a, store, two_hosts, StoreMsg};
use claimtop::claims::Hazard;
use claimtop::dashboard::testing::{Action, App, Update};
use claimtop::store::drive::Facts;
use claimtop::store::fleet::FleetState;
use claimtop::store::mirror::Delta;
use claimtop::store::sink::{FleetSummary, RootSummary, RootSummaryAt};
use claimtop::store::OriginIx;
use serde_json::json;
use std::sync::Arc;

/// The fleet of [`two_hosts`], with a stale mutex alpha found in its root.
fn fleet() -> FleetState {
    let mut f = two_hosts();
    let root = root_a();
    let v = json!({"kind": "stale_mutex", "path": "/srv/alpha/.fno/claims/q.lock.recovery.d", "detail": "owner gone"});
    f.hazards = vec![Hazard::published(&v, "m-alpha", &root.id, &root.path)];
    f
}

/// What the hosts' summaries say of [`fleet`]: each host counted as
/// `claimtop fleet --json` counts it.
fn summary_of(f: &FleetState) -> FleetSummary {
    let mut hosts = f.hosts.clone();
    let mut roots = Vec::new();
    for h in &mut hosts {
        let mine: Vec<_> = f.items.iter().filter(|i| i.host_id == h.host_id).collect();
        for st in mine
            .iter()
            .filter_map(|i| claimtop::claims::ClaimState::parse(i.state()))
        {
            h.counts.add(st);
        }
        let mut s = RootSummary::default();
        if !mine.is_empty() {
            s.counts.insert("live".into(), mine.len());
        }
        s.hazards_total = f
            .hazards
            .iter()
            .filter(|z| z.copy().is_some_and(|c| c.host_id == h.host_id))
            .count();
        roots.push(RootSummaryAt {
            host_id: h.host_id.clone(),
            root: root_a(),
            last_known: !h.online,
            summary: s,
        });
    }
    FleetSummary { hosts, roots }
}

/// The site's lane, before any copy is listed: its hosts and their
/// summaries.
fn summaries(app: &mut App, s: FleetSummary) -> bool {
    let u = Update {
        at: OriginIx(crate::fleet::SITE),
        delta: None,
        facts: Some(Facts {
            hosts: Some(Arc::new(s.hosts.clone())),
            summary: Some(Arc::new(s)),
            ..Facts::default()
        }),
        tick: None,
    };
    update(app, Action::Update(Box::new(u))).redraw
}

fn title(app: &App) -> String {
    render(app)
        .lines()
        .find(|l| l.contains("claims"))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_hosts_and_counts_come_from_the_summaries_first_then_the_copies_own_count_replaces_them() {
    let mut app = fleet_app(160, 40);
    let native = app.counted();
    assert_eq!(native.live, 1, "the store's own claim");
    let f = fleet();

    // Before any copy is listed: the hosts line and the counts.
    assert!(summaries(&mut app, summary_of(&f)));
    assert_eq!(app.counted().live, 3, "the store's one and alpha's two");
    assert_eq!(
        app.hazard_count(),
        1,
        "alpha's corpse, as its summary counts it"
    );
    assert_eq!(app.claims.live.by_row.len(), 1, "no copy is a row yet");
    let screen = render(&app);
    assert!(screen.contains("alpha 2"), "{screen}");
    assert!(screen.contains("beta offline"), "{screen}");
    assert!(title(&app).contains("loading 0 of 2"), "{screen}");
    assert!(screen.contains("3 live"), "{screen}");

    // A first page of copies: a row more, the count still the summaries'.
    let one = copy_row(
        &published("m-alpha", "alpha", "build/x86", "ci:runner-7"),
        None,
    )
    .expect("a copy");
    let page = Update {
        at: OriginIx(crate::fleet::COPIES),
        delta: Some(Delta {
            rows: vec![one],
            at: NOW,
            ..Delta::default()
        }),
        facts: None,
        tick: None,
    };
    update(&mut app, Action::Update(Box::new(page)));
    assert!(title(&app).contains("loading 1 of 2"), "{}", render(&app));
    assert_eq!(app.counted().live, 3, "a copy listed is not counted twice");

    // Every copy in: the copies' own count, the summaries' gone.
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(f.clone()),
            at: NOW,
        },
    );
    let screen = render(&app);
    assert!(!screen.contains("loading"), "{screen}");
    assert_eq!(app.hazard_count(), 1, "alpha's corpse, now its listing's");
    assert!(screen.contains("alpha 2"), "{screen}");

    // The counts `list --json` prints for the same store.
    let mut doc = json!({
        "root": "etcd://10.0.0.1:2379/fno",
        "claims": [],
        "counts": native,
        "hazards": [],
    });
    f.into_list_json(&mut doc);
    let c = app.counted();
    assert_eq!(doc["counts"]["live"], c.live);
    assert_eq!(doc["counts"]["suspect"], c.suspect);
    assert_eq!(doc["counts"]["stale"], c.stale);
    assert_eq!(doc["counts"]["last_known"], c.last_known);
    assert_eq!(
        doc["hazards"].as_array().map_or(0, Vec::len),
        app.hazard_count()
    );

    // A later summary counts nothing once the copies are in.
    summaries(&mut app, summary_of(&fleet()));
    assert_eq!(app.counted(), c);
}

#[test]
fn copies_listed_before_the_summaries_arrive_keep_their_own_count() {
    let mut app = fleet_app(160, 40);
    let f = fleet();
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(f.clone()),
            at: NOW,
        },
    );
    let c = app.counted();
    summaries(&mut app, summary_of(&f));
    assert_eq!(app.counted(), c);
    assert!(!render(&app).contains("loading"));
}
