//! The host filter: it keeps the claims taken on a host, and matches the
//! host column.

use super::{fleet_app, host, item, published, store, two_hosts, with_two_hosts, StoreMsg};
use crate::common::*;
use crate::effects::update;
use claimtop::dashboard::testing::ColumnId;
use ratatui::crossterm::event::KeyCode;

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
