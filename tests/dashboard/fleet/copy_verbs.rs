//! Verbs on a published copy: F asks its host with the guard it was shown
//! (F on a store claim stays the store's own), R and N say it is read
//! only, and acquire is still offered.

use super::{root_a, with_two_hosts};
use crate::common::*;
use crate::effects::{ops, update};
use claimtop::dashboard::testing::RowId;
use claimtop::dashboard::testing::Verb;
use ratatui::crossterm::event::KeyCode;

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
