//! An offline host's last known rows: greyed and never counted live, F
//! and R on them refused naming the host offline, and D forgetting the
//! host after asking (never an online one).

use super::{app_with, published, two_hosts};
use crate::common::*;
use crate::effects::{ops, update};
use claimtop::dashboard::testing::App;
use claimtop::dashboard::testing::Verb;
use claimtop::store::fleet::FleetState;

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
