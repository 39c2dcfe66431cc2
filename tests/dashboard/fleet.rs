//! The fleet view: the dashboard over a store that hosts publish into
//! (`claimtop publish`), driven by the store collector's messages at an
//! injected clock — published rows beside the store's own, the host and
//! source columns, an offline host greyed with its last-seen time, and F on
//! a copy going to its host.

use crate::common::*;
use crate::effects::{asked_log, clear_log, ops, update};
use claimtop::claims::Hazard;
use claimtop::claims::ItemRules;
use claimtop::claims::{ClaimState, Counts, Status, Sweep};
use claimtop::dashboard::testing::ColumnId;
use claimtop::dashboard::testing::RowId;
use claimtop::dashboard::testing::StoreView;
use claimtop::dashboard::testing::Verb;
use claimtop::dashboard::testing::{Action, App};
use claimtop::store::fleet::{FleetItem, FleetState, HostInfo, PublishedRoot};
use claimtop::store::{Cursor, ListEnd, MemberListing};
use ratatui::crossterm::event::KeyCode;
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
        head: Vec::new(),
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

#[test]
fn without_publishing_hosts_the_store_table_has_no_host_or_source_column() {
    let mut app = fleet_app(160, 40);
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(FleetState::default()),
            at: NOW,
        },
    );
    let screen = render(&app);
    let header = header_row(&screen);
    assert!(!header.contains("host"), "{header}");
    assert!(!header.contains("source"), "{header}");
    assert!(!screen.contains(" hosts "), "{screen}");
    // Nor does the sort cycle offer them.
    for _ in 0..20 {
        update(&mut app, key('s'));
        let col = app.table.sort.column;
        assert!(col != ColumnId::Host && col != ColumnId::Source, "{col:?}");
    }
}

#[test]
fn published_claims_join_the_store_claims_with_their_host_and_source() {
    let mut app = fleet_app(160, 40);
    assert!(store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(two_hosts()),
            at: NOW,
        },
    ));
    // One key held natively and on alpha reads as two rows.
    assert_eq!(app.table.rows.len(), 3);
    assert_eq!(app.counted().live, 3);
    let screen = render(&app);
    let header = header_row(&screen);
    assert!(
        header.contains("host") && header.contains("source"),
        "{header}"
    );
    let copy = line_with(&screen, "build/x86");
    assert!(
        copy.contains("alpha") && copy.contains("published"),
        "{copy}"
    );
    // The table's part of the line: the detail pane beside it may name
    // the same holder.
    let native = screen
        .lines()
        .map(|l| l.split('│').next().unwrap_or(""))
        .find(|t| t.contains("pty:alice"))
        .unwrap_or_default();
    assert!(native.contains("etcd"), "{native}");
}

#[test]
fn a_host_filter_keeps_the_claims_taken_on_that_host() {
    let mut app = with_two_hosts();
    let mut fleet = two_hosts();
    fleet.hosts[1].online = true;
    fleet
        .items
        .push(published("m-beta", "beta", "gpu/0", "agent:gemini-1"));
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(fleet),
            at: NOW,
        },
    );
    assert_eq!(app.table.rows.len(), 4);
    update(&mut app, key('/'));
    type_text(&mut app, "host:ALPHA");
    let mut keys = row_keys(&app);
    keys.sort();
    assert_eq!(keys, ["build/x86", "deploy/prod"], "alpha's two copies");
    assert!(
        app.table.rows.iter().all(|p| p.is_copy()),
        "the store's own deploy/prod was taken elsewhere"
    );
    // Two hosts are alternatives, as two states are.
    type_text(&mut app, " host:beta");
    assert_eq!(app.table.rows.len(), 3);
    // A host filter ANDs with the other fields.
    type_text(&mut app, " holder:gemini");
    assert_eq!(row_keys(&app), ["gpu/0"]);
    let f = &app.table.filter;
    assert!(f
        .terms
        .iter()
        .any(|t| t.needle(ColumnId::Host) == Some("beta")));
    assert!(f.why_nothing().is_none(), "host: is a field, not text");
}

#[test]
fn the_host_filter_matches_the_host_column() {
    // Two machines share a hostname (cloned VMs); the lockfiles on one were
    // written from a container whose own hostname is neither.
    let mut fleet = two_hosts();
    fleet.hosts = vec![
        host("3d12aa", "vm", true, NOW),
        host("9f00bb", "vm", true, NOW),
    ];
    fleet.hosts[0].label = "vm·3d12".into();
    fleet.hosts[1].label = "vm·9f00".into();
    let mut copy = published("3d12aa", "vm", "build/x86", "ci:runner-7");
    copy.item = item("build/x86", "ci:runner-7", "ci-container-1");
    fleet.items = vec![copy, published("9f00bb", "vm", "gpu/0", "agent:g")];
    let mut app = fleet_app(160, 40);
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(fleet),
            at: NOW,
        },
    );
    let row = line_with(&render(&app), "build/x86").to_string();
    assert!(
        row.contains("vm·3d12"),
        "the host column names the host: {row}"
    );
    update(&mut app, key('/'));
    type_text(&mut app, "host:3d12");
    assert_eq!(row_keys(&app), ["build/x86"], "what the host column shows");
    update(&mut app, code(KeyCode::Esc));
    update(&mut app, key('/'));
    type_text(&mut app, "host:ci-container");
    assert!(
        app.table.rows.iter().all(|p| !p.is_copy()),
        "not the lockfile's own host field: {:?}",
        row_keys(&app)
    );
}

#[test]
fn the_hosts_hazards_are_counted_and_listed_as_list_counts_them_and_never_cleaned_here() {
    let mut app = with_two_hosts();
    assert_eq!(app.hazard_count(), 0);
    let mut fleet = two_hosts();
    // A corrupted claim on alpha: its copy is a row, and alpha's hazard
    // list names it too; a mutex corpse there is alpha's alone.
    let mut broken = published("m-alpha", "alpha", "cfg/broken", "");
    broken.item = json!({
        "key": "cfg/broken",
        "state": "corrupted",
        "why": "not a claim",
        "error": "mapping values are not allowed here",
        "record": null,
    });
    fleet.items.push(broken);
    let at = |kind: &str, path: &str, detail: &str| {
        let root = root_a();
        let v = json!({"kind": kind, "path": path, "detail": detail});
        Hazard::published(&v, "m-alpha", &root.id, &root.path)
    };
    fleet.hazards = vec![
        at(
            "corrupted_claim",
            "/srv/alpha/.fno/claims/cfg%2Fbroken.lock",
            "mapping values are not allowed here",
        ),
        at(
            "stale_mutex",
            "/srv/alpha/.fno/claims/q.lock.recovery.d",
            "owner gone \u{1b}[2J for 9m",
        ),
    ];
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(fleet),
            at: NOW,
        },
    );
    assert_eq!(
        app.hazard_count(),
        2,
        "the corrupted copy is counted once, as alpha listed it"
    );
    assert!(
        app.hazards().iter().all(|h| h.copy().is_some()),
        "none of them is the store's: each says its host and root"
    );
    assert!(render(&app).contains("2 hazards"));

    update(&mut app, key('h'));
    let screen = render(&app);
    assert!(screen.contains("hazards (2)"), "{screen}");
    assert!(screen.contains("host alpha  root /srv/alpha"), "{screen}");
    assert!(
        screen.contains("stale_mutex") && screen.contains("q.lock.recovery.d"),
        "{screen}"
    );
    assert!(
        screen.contains("owner gone \\e[2J") && !screen.contains('\u{1b}'),
        "the host's text is escaped: {screen}"
    );

    // x cleans this machine's litter only: alpha's corpse is alpha's.
    update(&mut app, key('x'));
    assert!(
        app.modes.dialog().is_none(),
        "no clean dialog over a host's hazards"
    );
    assert!(ops().is_empty());

    // The hazards go with the host's next listing.
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(two_hosts()),
            at: NOW + 1_000,
        },
    );
    assert_eq!(app.hazard_count(), 0);
}

#[test]
fn a_host_going_offline_greys_it_with_its_last_seen_time_and_drops_its_rows() {
    let mut app = fleet_app(160, 40);
    app.color = true;
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(two_hosts()),
            at: NOW,
        },
    );
    let screen = render(&app);
    let line = screen
        .lines()
        .find(|l| l.starts_with(" hosts "))
        .unwrap_or_default()
        .to_string();
    assert!(line.contains("alpha 2"), "{line}");
    // The header's clock: the time of day (UTC here, with its Z).
    let full = claimtop::time::utc_hms(NOW - 3 * MIN);
    let seen = full.split_once('T').map_or(full.as_str(), |(_, t)| t);
    assert!(
        line.contains(&format!("beta offline, last seen {seen}")),
        "{line}"
    );
    // Greyed: the offline host's words are drawn dim, the online one's not.
    let buf = render_buffer(&app);
    let y = screen
        .lines()
        .position(|l| l.starts_with(" hosts "))
        .unwrap_or_default() as u16;
    let x_of = |word: &str| line.find(word).unwrap_or_default() as u16;
    let fg = |x: u16| buf[(x, y)].fg;
    assert_eq!(fg(x_of("beta")), ratatui::style::Color::DarkGray);
    assert_ne!(fg(x_of("alpha")), ratatui::style::Color::DarkGray);

    // alpha's publisher dies: its lease takes its copies, the fleet is read
    // again, and alpha is offline too — its claims unknown, not free.
    let mut gone = two_hosts();
    gone.hosts[0].online = false;
    gone.hosts[0].last_seen_ms = NOW + 5_000;
    gone.items.clear();
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(gone),
            at: NOW + 6_000,
        },
    );
    assert_eq!(row_keys(&app), vec!["deploy/prod".to_string()]);
    let screen = render(&app);
    assert!(screen.contains("alpha offline, last seen"), "{screen}");
}

/// A host online with a root it cannot read: the hosts line says so beside
/// its count, which is not all it holds.
#[test]
fn a_hosts_unreadable_root_is_named_on_the_hosts_line_beside_its_count() {
    let mut fleet = two_hosts();
    fleet.hosts[0].roots.push(PublishedRoot {
        state: claimtop::store::fleet::RootState::Unreadable,
        error: Some("claims dir cannot be listed: Permission denied".into()),
        ..PublishedRoot::new("00000000000000bb".into(), "/srv/secret".into())
    });
    let mut app = fleet_app(160, 40);
    store(
        &mut app,
        StoreMsg::Fleet {
            fleet: Box::new(fleet),
            at: NOW,
        },
    );
    let screen = render(&app);
    let line = screen
        .lines()
        .find(|l| l.starts_with(" hosts "))
        .unwrap_or_default();
    assert!(line.contains("alpha 2 (1 root unreadable)"), "{line}");
}

#[test]
fn one_published_claim_re_read_comes_and_goes_without_touching_the_others() {
    let mut app = with_two_hosts();
    store(
        &mut app,
        StoreMsg::Published {
            host_id: "m-alpha".into(),
            root_id: root_a().id,
            key: "lint".into(),
            item: Some(item("lint", "agent:x", "alpha")),
            at: NOW + 1_000,
        },
    );
    assert_eq!(app.table.rows.len(), 4);
    store(
        &mut app,
        StoreMsg::Published {
            host_id: "m-alpha".into(),
            root_id: root_a().id,
            key: "build/x86".into(),
            item: None,
            at: NOW + 2_000,
        },
    );
    let mut keys = row_keys(&app);
    keys.sort();
    assert_eq!(keys, vec!["deploy/prod", "deploy/prod", "lint"]);
    let hosts_line = render(&app)
        .lines()
        .find(|l| l.starts_with(" hosts "))
        .unwrap_or_default()
        .to_string();
    assert!(hosts_line.contains("alpha 2"), "{hosts_line}");
}

#[test]
fn a_re_list_of_the_store_keeps_the_published_rows() {
    let mut app = with_two_hosts();
    update(
        &mut app,
        listed(
            native_listing(),
            NOW + 1_000,
            Some("revision 3 was compacted".into()),
        ),
    );
    assert_eq!(app.table.rows.len(), 3);
}

#[test]
fn f_on_a_published_copy_asks_its_host_with_the_guard_it_was_shown() {
    let mut app = with_two_hosts();
    select(&mut app, "build/x86");
    update(&mut app, key('F'));
    // Live: the key is typed in full.
    type_text(&mut app, "build/x86");
    update(&mut app, code(KeyCode::Enter));
    match ops().as_slice() {
        [Verb::AskHost {
            host_id,
            hostname,
            root_id,
            key,
            opts,
        }] => {
            assert_eq!(host_id, "m-alpha");
            assert_eq!(hostname, "alpha");
            assert_eq!(root_id, &root_a().id);
            assert_eq!(key, "build/x86");
            assert_eq!(opts.expect_holder.as_deref(), Some("ci:runner-7"));
            assert!(opts.allow_live);
        }
        other => panic!("expected one request to alpha, got {other:?}"),
    }
    assert_eq!(
        app.table.rows.get(app.table.selected),
        Some(&RowId::copy("m-alpha", &root_a().id, "build/x86"))
    );
}

#[test]
fn f_on_a_store_claim_stays_the_stores_own_force_release() {
    let mut app = with_two_hosts();
    let native = app
        .table
        .rows
        .iter()
        .position(|p| p.path().is_some_and(|p| p.starts_with("/fno")))
        .expect("the store's row");
    app.table.selected = native;
    update(&mut app, key('F'));
    type_text(&mut app, "deploy/prod");
    update(&mut app, code(KeyCode::Enter));
    assert!(
        matches!(ops().as_slice(), [Verb::ForceRelease { key, .. }] if key == "deploy/prod"),
        "{:?}",
        ops()
    );
}

#[test]
fn r_and_n_on_a_published_copy_say_it_is_read_only_and_do_nothing() {
    let mut app = with_two_hosts();
    select(&mut app, "build/x86");
    for c in ['r', 'n'] {
        app.status = None;
        update(&mut app, key(c));
        assert!(ops().is_empty());
        assert!(app.modes.dialog().is_none(), "{c} opened a dialog");
        let said = app
            .status
            .as_ref()
            .map(|s| s.text.clone())
            .unwrap_or_default();
        assert!(said.contains("read-only copy"), "{c}: {said}");
        assert!(said.contains("alpha"), "{c}: {said}");
    }
}

#[test]
fn acquire_is_offered_with_a_published_copy_selected() {
    // Acquiring has nothing to do with the selected row: it takes a key of
    // the store's own, whatever row the cursor is on.
    let mut app = with_two_hosts();
    select(&mut app, "build/x86");
    app.status = None;
    update(&mut app, key('a'));
    assert!(
        matches!(
            app.modes.dialog(),
            Some(claimtop::dashboard::testing::Dialog::Acquire(_))
        ),
        "a opened no acquire form: {:?}",
        app.status
    );
    for c in "gpu/1".chars() {
        update(&mut app, key(c));
    }
    update(&mut app, code(KeyCode::Enter));
    let asked = ops();
    assert!(
        matches!(asked.as_slice(), [Verb::Acquire { key, .. }] if key == "gpu/1"),
        "{asked:?}"
    );
}

#[test]
fn a_selected_copy_its_host_no_longer_publishes_leaves_the_screen() {
    let mut app = with_two_hosts();
    select(&mut app, "build/x86");
    assert!(render(&app).contains("ci:runner-7"));
    let moved = store(
        &mut app,
        StoreMsg::Published {
            host_id: "m-alpha".into(),
            root_id: root_a().id,
            key: "build/x86".into(),
            item: None,
            at: NOW + 1_000,
        },
    );
    assert!(moved, "the screen must be redrawn");
    let screen = render(&app);
    assert!(!screen.contains("ci:runner-7"), "{screen}");
}

#[test]
fn the_help_says_what_published_rows_are_only_while_hosts_publish() {
    let mut app = fleet_app(160, 60);
    update(&mut app, key('?'));
    assert!(!render(&app).contains("Published hosts"));
    let mut app = with_two_hosts();
    update(&mut app, Action::Resize(160, 100));
    update(&mut app, key('?'));
    let screen = render(&app);
    assert!(screen.contains("Published hosts"), "{screen}");
}

#[test]
fn a_mirrored_event_in_the_events_pane_names_its_host() {
    let mut app = with_two_hosts();
    let mirrored = r#"{"ts":"2026-12-01T05:00:00Z","type":"claim_acquired","source":"fno-loop","data":{"key":"build/x86","holder":"ci:runner-7","pid":4242},"host":"alpha\u001b[2J","host_id":"m-alpha","root":"/srv/alpha"}"#;
    let own = r#"{"ts":"2026-12-01T05:00:01Z","type":"claim_released","source":"fno-loop","data":{"key":"deploy/prod","holder":"pty:alice"}}"#;
    update(&mut app, log_lines(vec![line(mirrored), line(own)]));
    let screen = render(&app);
    let row = line_with(&screen, " acquired ");
    assert!(
        row.contains("host=alpha\\e[2J"),
        "escaped, not emitted: {screen}"
    );
    assert!(!screen.contains('\u{1b}'));
    let own_row = line_with(&screen, " released ");
    assert!(!own_row.contains("host="), "{own_row}");
}

#[test]
fn browsing_on_a_published_copy_reads_its_roots_mirrored_log_and_back_on_a_store_claim() {
    use claimtop::dashboard::testing::Pane;
    use claimtop::events::history::Log;
    use claimtop::events::service::Request;
    let mut app = with_two_hosts();
    select(&mut app, "build/x86");
    app.focus = Pane::Events;
    update(&mut app, key('k'));
    let mirrored = Log::Mirrored {
        host_id: "m-alpha".into(),
        root_id: root_a().id,
    };
    assert!(
        asked_log().contains(&Request::OpenLog(mirrored.clone())),
        "{:?}",
        asked_log()
    );
    // The followed lines the views take are that root's, not the store's.
    clear_log();
    let own = claimtop::events::tail::Line {
        text: r#"{"type":"claim_acquired","data":{"key":"deploy/prod"}}"#.into(),
        offset: 90,
        truncated: false,
        claim: None,
    };
    let theirs = claimtop::events::tail::Line {
        text: r#"{"type":"claim_acquired","data":{"key":"build/x86"},"host":"alpha","host_id":"m-alpha","root":"/srv/alpha"}"#.into(),
        offset: 91,
        truncated: false,
        claim: None,
    };
    update(&mut app, log_lines(vec![own, theirs]));
    assert_eq!(app.events.browse.new_lines, 1, "only alpha's line");
    // Back on the store's own claim, the timeline reads the store's log.
    update(&mut app, key('G'));
    app.focus = Pane::Table;
    select(&mut app, "deploy/prod");
    let native = app
        .table
        .rows
        .iter()
        .position(|p| p.path().is_some_and(|p| p.starts_with("/fno")))
        .expect("the store's own row");
    app.table.selected = native;
    update(&mut app, key('t'));
    assert!(
        asked_log().contains(&Request::OpenLog(Log::Own)),
        "{:?}",
        asked_log()
    );
}

/// [`two_hosts`] after beta died: its three claims are what it last said.
fn beta_dead_with_three() -> FleetState {
    let mut fleet = two_hosts();
    for (key, holder) in [
        ("gpu/0", "agent:gemini-1"),
        ("gpu/1", "agent:gemini-2"),
        ("gpu/2", "agent:gemini-3"),
    ] {
        fleet
            .last_known
            .push(published("m-beta", "beta", key, holder));
    }
    fleet
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

fn with_beta_dead() -> App {
    app_with(beta_dead_with_three())
}

#[test]
fn an_offline_hosts_claims_stay_greyed_as_last_known_and_are_never_counted_live() {
    let mut app = with_beta_dead();
    // The store's one and alpha's two are live; beta's three are kept apart.
    assert_eq!(app.table.rows.len(), 6);
    assert_eq!(app.counted().live, 3);
    assert_eq!(app.counted().last_known, 3);
    let screen = render(&app);
    assert!(screen.contains("◌ 3 last known"), "{screen}");
    assert!(screen.contains("● 3 live"), "{screen}");
    let row = line_with(&screen, "gpu/1");
    assert!(
        row.contains("◌ offline") && row.contains("last known at "),
        "{row}"
    );
    assert!(
        screen.contains("(3 last known)"),
        "the hosts line: {screen}"
    );
    select(&mut app, "gpu/1");
    let why = app
        .selected_status()
        .map(|s| s.why.clone())
        .unwrap_or_default();
    assert!(
        why.starts_with("last known at ") && why.contains(", host offline; it was live then"),
        "{why}"
    );
}

#[test]
fn f_and_r_on_a_last_known_row_do_nothing_and_say_the_host_is_offline() {
    let mut app = with_beta_dead();
    select(&mut app, "gpu/0");
    for c in ['F', 'r', 'n'] {
        app.status = None;
        update(&mut app, key(c));
        assert!(ops().is_empty(), "{c}: {:?}", ops());
        assert!(app.modes.dialog().is_none(), "{c} opened a dialog");
        let said = app
            .status
            .as_ref()
            .map(|s| s.text.clone())
            .unwrap_or_default();
        assert!(
            said.contains("host beta") && said.contains("offline"),
            "{c}: {said}"
        );
        assert!(said.contains("fleet forget beta"), "{c}: {said}");
    }
}

#[test]
fn d_forgets_a_last_known_rows_offline_host_after_asking_and_refuses_an_online_one() {
    let mut app = with_beta_dead();
    select(&mut app, "build/x86");
    update(&mut app, key('D'));
    assert!(app.modes.dialog().is_none());
    let said = app
        .status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default();
    assert!(said.contains("alpha is online"), "{said}");
    select(&mut app, "gpu/2");
    update(&mut app, key('D'));
    assert!(app.modes.dialog().is_some());
    let screen = render(&app);
    assert!(screen.contains("Forget host beta"), "{screen}");
    assert!(ops().is_empty(), "nothing before the answer");
    update(&mut app, key('y'));
    match ops().as_slice() {
        [Verb::ForgetHost { host_id, label }] => {
            assert_eq!(host_id, "m-beta");
            assert_eq!(label, "beta");
        }
        other => panic!("expected one forget of beta, got {other:?}"),
    }
    let help = claimtop::dashboard::testing::KEYMAP
        .iter()
        .find(|b| b.label == "D")
        .expect("D is in the keymap, so in the help");
    assert!(help.help.contains("fleet forget"));
}

#[test]
fn two_hosts_sharing_a_hostname_are_told_apart_by_their_machine_ids_start() {
    let mut fleet = two_hosts();
    fleet.hosts = vec![
        host("3d12aa", "vm", true, NOW),
        host("7e40bb", "vm", true, NOW),
    ];
    claimtop::store::host_names::label_hosts(&mut fleet.hosts);
    fleet.items = vec![
        published("3d12aa", "vm", "build/x86", "ci:runner-7"),
        published("7e40bb", "vm", "gpu/0", "agent:gemini-1"),
    ];
    let app = app_with(fleet);
    let screen = render(&app);
    assert!(
        line_with(&screen, "build/x86").contains("vm·3d12"),
        "{screen}"
    );
    assert!(line_with(&screen, "gpu/0").contains("vm·7e40"), "{screen}");
    let hosts = line_with(&screen, " hosts ");
    assert!(
        hosts.contains("vm·3d12 1") && hosts.contains("vm·7e40 1"),
        "{hosts}"
    );
}

#[test]
fn asof_over_a_fleet_reads_the_stores_log_and_every_hosts_mirrored_one() {
    use claimtop::events::history::Log;
    use claimtop::events::service::{Request, Which};
    let mut app = with_two_hosts();
    clear_log();
    update(&mut app, key(':'));
    type_text(&mut app, "asof 1h");
    update(&mut app, code(KeyCode::Enter));
    let asked = asked_log();
    let Some(Request::AsOf { at, logs }) = asked.first() else {
        panic!("{asked:?}");
    };
    assert_eq!(*at, NOW - 60 * MIN);
    assert_eq!(
        logs.first(),
        Some(&(Some("etcd".to_string()), Which::Log(Log::Own)))
    );
    let alpha = Which::Log(Log::Mirrored {
        host_id: "m-alpha".into(),
        root_id: root_a().id,
    });
    assert!(
        logs.iter().any(
            |(name, w)| *w == alpha && name.as_deref().is_some_and(|n| n.starts_with("alpha:"))
        ),
        "{logs:?}"
    );
}
