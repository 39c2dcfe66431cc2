//! Published rows beside the store's own: the host and source columns
//! only while hosts publish, one copy re-read without touching the
//! others, the rows kept over a re-list of the store, a selected copy its
//! host dropped leaving the screen, and the help saying what they are.

use super::{
    fleet_app, header_row, item, native_listing, root_a, store, two_hosts, with_two_hosts, StoreMsg,
};
use crate::common::*;
use crate::effects::update;
use claimtop::dashboard::testing::Action;
use claimtop::dashboard::testing::ColumnId;
use claimtop::store::fleet::FleetState;

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
