//! What the screen says of the hosts: their hazards counted and listed as
//! `list` counts them (never cleaned here), an offline host greyed with
//! its last-seen time, an unreadable root named beside its count, and two
//! hosts sharing a hostname told apart.

use super::{
    app_with, fleet_app, host, published, root_a, store, two_hosts, with_two_hosts, StoreMsg,
};
use crate::common::*;
use crate::effects::{ops, update};
use claimtop::claims::Hazard;
use claimtop::store::fleet::PublishedRoot;
use serde_json::json;

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
