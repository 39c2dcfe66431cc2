//! The dashboard over a store with a connection (etcd), without one: the
//! store collector's messages applied to the model at an injected clock —
//! the link going down and coming back, a compaction's re-list, the lease
//! countdown — and a whole screen with an injected store header.

use crate::common::*;
use crate::effects::update;
use claimtop::claims::ItemRules;
use claimtop::claims::{ClaimState, Status, Sweep};
use claimtop::dashboard::testing::{cell_text, ColumnId};
use claimtop::dashboard::testing::{Action, App};
use claimtop::dashboard::testing::{Link, StoreInfo, StoreView};
use claimtop::store::{Cursor, LeaseInfo, ListEnd, MemberListing, Tenure};

const URL: &str = "etcd://10.0.0.1:2379,10.0.0.2:2379/fno";
const SEC: i64 = 1000;

/// A claim as the etcd store lists it: keyed by its etcd key, judged live
/// by its running lease whatever this machine's pids say.
fn store_claim(key: &str, holder: &str, pid: i32, age: i64, ttl_left: i64) -> Status {
    let r = rec(key, holder, pid, age, Some(ttl_left));
    Status {
        key: key.into(),
        file: std::path::PathBuf::from(format!("/fno/claims/{key}")).into(),
        state: ClaimState::Live,
        why: "the lease is running".into(),
        error: None,
        locality: Some(claimtop::claims::Locality::Other),
        head: Box::default(),
        record: Some(r),
    }
}

fn tenure(revision: i64, ttl_s: i64, remaining_s: i64) -> Tenure {
    Tenure {
        revision,
        lease: LeaseInfo {
            id: 0x3a1f_0000 + revision,
            ttl_s,
            remaining_s,
        },
    }
}

fn listing(items: Vec<(Status, Tenure)>, revision: i64) -> MemberListing {
    let (claims, tenures): (Vec<Status>, Vec<Option<Tenure>>) =
        items.into_iter().map(|(s, t)| (s, Some(t))).unzip();
    let sweep = Sweep {
        root: URL.into(),
        claims,
        hazards: Vec::new(),
        counts: Default::default(),
    };
    MemberListing {
        at: Default::default(),
        rules: ItemRules::StoreKey,
        sweep,
        tenures,
        store_hazards: Vec::new(),
        stamps: Vec::new(),
        kept: Vec::new(),
        end: ListEnd {
            at: Some(Cursor::of_u64(revision as u64)),
            complete: true,
        },
    }
}

/// What the site's lane and its probe say of its link, as these tests
/// tell it, each at the clock it was heard at.
enum StoreMsg {
    Info { info: StoreInfo, at: i64 },
    Unreachable { why: String, at: i64 },
    WatchDown { why: String, at: i64 },
    WatchUp { revision: Option<i64>, at: i64 },
}

/// The lane's clock moves to when it heard `msg` (as the lanes tick each
/// second), then the model takes in what it heard.
fn store(app: &mut App, msg: StoreMsg) -> bool {
    use claimtop::dashboard::testing::Update;
    use claimtop::store::drive::{Facts, LinkState};
    use claimtop::store::{LinkFacts, OriginIx};
    let (link, at) = match msg {
        StoreMsg::Info { info, at } => {
            let facts = LinkFacts {
                reached: info.endpoints,
                leader: info.leader,
                at: Some(info.revision),
            };
            (LinkState::Reached(facts), at)
        }
        StoreMsg::Unreachable { why, at } => (LinkState::Unreachable(why), at),
        StoreMsg::WatchDown { why, at } => (LinkState::FeedDown(why), at),
        StoreMsg::WatchUp { revision, at } => (LinkState::FeedUp(revision), at),
    };
    let u = Update {
        at: OriginIx(0),
        delta: None,
        facts: Some(Facts {
            link: Some(link),
            ..Facts::default()
        }),
        tick: (at > app.now).then_some(at),
    };
    update(app, Action::Update(Box::new(u))).redraw
}

fn info(revision: i64) -> StoreInfo {
    StoreInfo {
        endpoints: "10.0.0.1:2379,10.0.0.2:2379".into(),
        leader: Some("m1".into()),
        revision,
    }
}

/// A dashboard over the store at [`NOW`], with three claims listed.
fn store_app(w: u16, h: u16) -> App {
    let mut app = app_at(fixed_root());
    app.over_store(StoreView::new(URL.into(), NOW));
    store(
        &mut app,
        StoreMsg::Info {
            info: info(41),
            at: NOW,
        },
    );
    let items = vec![
        (
            store_claim("build/x86", "ci:runner-7", 4242, 3 * MIN, 2 * MIN),
            tenure(17, 300, 120),
        ),
        (
            store_claim("deploy/prod", "pty:alice", 77, 40 * SEC, 20 * SEC),
            tenure(39, 60, 20),
        ),
        (
            store_claim("migrate-db", "agent:codex-3", 1201, 10 * MIN, 50 * MIN),
            tenure(40, 3600, 3000),
        ),
    ];
    update(&mut app, listed(listing(items, 41), NOW, None));
    update(&mut app, Action::Resize(w, h));
    app
}

fn table_title(app: &App) -> String {
    line_with(&render(app), "claims ").to_string()
}

#[test]
fn a_store_that_stops_answering_keeps_the_view_marked_with_its_age_and_recovers_alone() {
    let mut app = store_app(160, 48);
    let link = |app: &App| app.store.as_ref().map(StoreView::link);
    assert_eq!(link(&app), Some(Link::Connected));

    assert!(store(
        &mut app,
        StoreMsg::Unreachable {
            why: "no answer".into(),
            at: NOW + 2 * SEC,
        }
    ));
    update(&mut app, Action::Tick(NOW + 14 * SEC));
    assert_eq!(
        link(&app),
        Some(Link::Disconnected {
            since: NOW + 2 * SEC,
            last_seen: NOW
        })
    );
    let screen = render(&app);
    assert!(screen.contains("disconnected since"), "{screen}");
    assert!(
        table_title(&app).contains("disconnected 12s ago — showing the view as of"),
        "{screen}"
    );
    assert_eq!(app.table.rows.len(), 3, "the last view is kept");

    // The store answers again, but the watch has not delivered yet.
    store(
        &mut app,
        StoreMsg::WatchDown {
            why: "stream reset".into(),
            at: NOW + 15 * SEC,
        },
    );
    store(
        &mut app,
        StoreMsg::Info {
            info: info(44),
            at: NOW + 16 * SEC,
        },
    );
    assert!(matches!(link(&app), Some(Link::Reconnecting { .. })));
    assert!(render(&app).contains("reconnecting"));

    store(
        &mut app,
        StoreMsg::WatchUp {
            revision: Some(45),
            at: NOW + 17 * SEC,
        },
    );
    assert_eq!(link(&app), Some(Link::Connected));
    let screen = render(&app);
    assert!(screen.contains("● connected"), "{screen}");
    assert!(screen.contains("revision 45"), "{screen}");
    assert!(!table_title(&app).contains("showing the view"), "{screen}");
}

#[test]
fn a_compaction_re_lists_everything_and_says_at_which_revision() {
    let mut app = store_app(160, 48);
    let only = vec![(
        store_claim("fresh", "pty:bob", 5, SEC, MIN),
        tenure(90, 60, 60),
    )];
    assert!(
        update(
            &mut app,
            listed(
                listing(only, 95),
                NOW + SEC,
                Some(
                    "revision 50 was compacted (history now starts at 80); re-reading everything"
                        .into()
                )
            )
        )
        .redraw
    );
    assert_eq!(
        app.status.as_ref().map(|s| s.text.as_str()),
        Some("store compacted: re-listed at revision 95")
    );
    assert_eq!(row_keys(&app), ["fresh"], "claims gone meanwhile are gone");
    assert!(render(&app).contains("store compacted: re-listed at revision 95"));
}

#[test]
fn the_lease_column_counts_down_with_the_clock_and_a_re_read_moves_it_back_up() {
    let mut app = store_app(160, 48);
    let deploy = |app: &App| {
        app.claims
            .live
            .by_row
            .values()
            .find(|s| s.key == "deploy/prod")
            .map(|s| (**s).clone())
            .expect("deploy/prod listed")
    };
    assert_eq!(cell_text(&app, &deploy(&app), ColumnId::Lease), "20s");
    update(&mut app, Action::Tick(NOW + 12 * SEC));
    assert_eq!(cell_text(&app, &deploy(&app), ColumnId::Lease), "8s");
    let row = line_with(&render(&app), "deploy/prod").to_string();
    assert!(row.contains(" 8s "), "{row}");
    update(&mut app, Action::Tick(NOW + 40 * SEC));
    assert_eq!(
        cell_text(&app, &deploy(&app), ColumnId::Lease),
        "0s",
        "never negative"
    );

    // A holder kept the lease alive: the collector's re-read says so.
    let s = deploy(&app);
    let re = reread(&app, vec![(s, Some(tenure(39, 60, 59)))], NOW + 40 * SEC);
    update(&mut app, re);
    assert_eq!(cell_text(&app, &deploy(&app), ColumnId::Lease), "59s");
}

#[test]
fn store_claims_keep_the_stores_verdict_whatever_this_machines_pids_say() {
    let mut app = store_app(160, 48);
    // pid 4242 is no process here; on a file root that would be suspect.
    update(&mut app, Action::Tick(NOW + 5 * SEC));
    assert_eq!(app.counted().live, 3);
    assert_eq!(app.counted().suspect, 0);
    assert_eq!(
        app.hazard_count(),
        0,
        "claims from other machines are no hazard on a store"
    );
}

#[test]
fn a_claim_the_watch_names_as_gone_leaves_the_table_and_its_lease() {
    let mut app = store_app(160, 48);
    let mut gone = store_claim("migrate-db", "agent:codex-3", 1201, 0, 0);
    gone.state = ClaimState::Free;
    gone.record = None;
    let re = reread(&app, vec![(gone.clone(), None)], NOW + SEC);
    assert!(update(&mut app, re).redraw);
    assert_eq!(row_keys(&app), ["build/x86", "deploy/prod"]);
    let held = app.store.as_ref().and_then(|v| v.held(&gone.file));
    assert!(held.is_none());
}

#[test]
fn the_etcd_view_shows_the_store_header_the_lease_column_and_the_fencing_revision() {
    let mut app = store_app(160, 48);
    update(
        &mut app,
        log_lines(vec![event(
            "2027-01-15T07:59:20Z",
            "claim_acquired",
            serde_json::json!({"key": "deploy/prod", "holder": "pty:alice", "pid": 77,
                   "host": "here", "acquired_at": NOW - 40 * SEC, "expires_at": NOW + 20 * SEC}),
        )]),
    );
    select(&mut app, "deploy/prod");
    update(&mut app, Action::Tick(NOW + 3 * SEC));
    insta::assert_snapshot!("etcd_view_160x48", render(&app));
}

#[test]
fn a_re_read_claim_takes_its_sorted_place_and_the_counts_follow_it() {
    let mut app = store_app(160, 48);
    let mut s = store_claim("migrate-db", "agent:codex-3", 1201, 10 * MIN, 50 * MIN);
    s.state = ClaimState::Suspect;
    s.why = "the lease is running but pid 1201 is gone on this machine".into();
    let re = reread(&app, vec![(s, Some(tenure(40, 3600, 2999)))], NOW + SEC);
    assert!(update(&mut app, re).redraw);
    assert_eq!(
        row_keys(&app),
        ["migrate-db", "build/x86", "deploy/prod"],
        "a suspect claim sorts before live ones"
    );
    let c = app.counted();
    assert_eq!((c.live, c.suspect), (2, 1));

    let fresh = store_claim("aaa/new", "pty:carol", 9, 0, MIN);
    let re = reread(&app, vec![(fresh, Some(tenure(46, 60, 60)))], NOW + 2 * SEC);
    update(&mut app, re);
    assert_eq!(
        row_keys(&app),
        ["migrate-db", "aaa/new", "build/x86", "deploy/prod"]
    );
    assert_eq!(app.counted().live, 3);
}

#[test]
fn a_big_stores_first_page_shows_at_once_titled_as_listing_until_the_whole_listing_replaces_it() {
    let mut app = app_at(fixed_root());
    app.over_store(StoreView::new(URL.into(), NOW));
    update(&mut app, Action::Resize(160, 48));
    let first = vec![(
        store_claim("a/first", "pty:alice", 7, MIN, MIN),
        tenure(3, 60, 60),
    )];
    assert!(update(&mut app, head(listing(first, 50), NOW)).redraw);
    assert_eq!(row_keys(&app), ["a/first"]);
    assert!(
        table_title(&app).contains("listing the store: its first 1 claims so far"),
        "{}",
        render(&app)
    );
    let all = vec![
        (
            store_claim("a/first", "pty:alice", 7, MIN, MIN),
            tenure(3, 60, 60),
        ),
        (
            store_claim("z/last", "pty:bob", 8, MIN, MIN),
            tenure(4, 60, 60),
        ),
    ];
    assert!(update(&mut app, listed(listing(all, 50), NOW, None)).redraw);
    assert_eq!(row_keys(&app), ["a/first", "z/last"]);
    assert!(!table_title(&app).contains("listing the store"));
}

#[test]
fn the_force_release_dialog_over_etcd_says_where_etcd_archives() {
    let mut app = store_app(160, 48);
    select(&mut app, "deploy/prod");
    update(&mut app, key('F'));
    let screen = render(&app);
    assert!(
        screen.contains("archived under the store's expired/"),
        "{screen}"
    );
    assert!(!screen.contains(".expired/"), "a root's words: {screen}");
}
