//! A fleet's history on screen: a mirrored event names its host, browsing
//! a copy reads its root's mirrored log (and a store claim the store's),
//! and as-of reads the store's log and every host's mirrored one.

use super::{root_a, with_two_hosts};
use crate::common::*;
use crate::effects::{asked_log, clear_log, update};
use ratatui::crossterm::event::KeyCode;

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
