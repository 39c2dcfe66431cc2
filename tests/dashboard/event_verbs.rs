//! The events pane's filter (`:events`), Enter from a line to its claim,
//! and `:write` of the table or the filtered events, driven without a
//! terminal.

use crate::common::*;
use crate::effects::{asked_log, clear_log, update};
use claimtop::dashboard::testing::{Action, App, Pane};
use claimtop::events::asof::{Answer, HeldAt, KnownFrom};
use claimtop::events::service::{Reply, Request};
use ratatui::crossterm::event::KeyCode;

fn run(app: &mut App, line: &str) -> claimtop::dashboard::testing::Effects {
    update(app, key(':'));
    type_text(app, line);
    update(app, code(KeyCode::Enter))
}

fn events_pane(app: &str) -> String {
    app.lines()
        .skip_while(|l| !l.contains("events ·"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn events_terms_filter_the_pane_in_and_out_and_the_title_names_them() {
    let mut app = fixed_app(160, 48);
    run(&mut app, "events type:acquired -holder:worker-3");
    assert!(app.modes.prompt().is_none(), "it ran");
    let pane = events_pane(&render(&app));
    assert!(
        pane.contains("type:acquired -holder:worker-3 (:events clears)"),
        "{pane}"
    );
    assert!(
        pane.contains("07:57:00 acquired        build:web"),
        "{pane}"
    );
    for gone in ["06:30:00", "released", "renewed", "unparseable"] {
        assert!(!pane.contains(gone), "{gone} left in:\n{pane}");
    }
    // A misspelt type is said, with the ones there are.
    run(&mut app, "events type:force_relased");
    let why = app.modes.prompt().and_then(|p| p.error.clone());
    let why = why.unwrap_or_default();
    assert!(
        why.contains("no event type") && why.contains("claim_force_released"),
        "{why}"
    );
    update(&mut app, code(KeyCode::Esc));
    run(&mut app, "events");
    assert!(events_pane(&render(&app)).contains("renewed"), "cleared");
    // Esc clears it too, once nothing above it is left to clear.
    run(&mut app, "events type:renewed");
    assert!(!events_pane(&render(&app)).contains("07:57:00 acquired"));
    update(&mut app, code(KeyCode::Esc));
    assert!(events_pane(&render(&app)).contains("07:57:00 acquired"));
}

#[test]
fn enter_on_an_event_goes_to_its_claims_row_or_to_its_row_as_of_then_when_the_claim_is_gone() {
    let mut app = fixed_app(160, 48);
    update(&mut app, code(KeyCode::Tab));
    update(&mut app, code(KeyCode::Tab));
    assert_eq!(app.focus, Pane::Events);
    run(&mut app, "events key:build:web");
    update(&mut app, code(KeyCode::Enter));
    assert_eq!(app.focus, Pane::Table);
    assert_eq!(selected_key(&app), "build:web");
    assert!(app.modes.asof().is_none(), "a claim held now: its row now");

    update(&mut app, code(KeyCode::Tab));
    update(&mut app, code(KeyCode::Tab));
    run(&mut app, "events type:released");
    clear_log();
    update(&mut app, code(KeyCode::Enter));
    // The release ends the tenure at its own instant: the view is of the
    // millisecond before, while worker-5 still held it.
    let released = chrono::DateTime::parse_from_rfc3339("2027-01-15T07:59:00Z")
        .expect("a time")
        .timestamp_millis();
    let at = released - 1;
    assert_eq!(app.modes.asof().map(|v| v.at), Some(at));
    assert_eq!(asked_log(), [Request::AsOf { at, logs: vec![] }]);
    assert_eq!(app.focus, Pane::Table);

    let row = |key: &str, holder: &str| HeldAt {
        key: key.into(),
        holder: holder.into(),
        since: at - 9 * MIN,
        start_seen: true,
        ended: None,
        root: None,
        known_from: KnownFrom::Log,
    };
    let rows = vec![
        row("build:api", "pty:worker-2"),
        row("deploy", "pty:worker-4"),
        row("lint", "pty:worker-5"),
    ];
    update(
        &mut app,
        Action::Log(Box::new(Reply::AsOf {
            at,
            answer: Answer {
                rows,
                complete: true,
                span: None,
            },
            trouble: None,
        })),
    );
    // Beside the log's rows, the claims held now that were taken by then.
    let chosen = app
        .modes
        .asof()
        .and_then(|v| v.rows.as_ref()?.get(v.selected))
        .map(|r| r.key.clone());
    assert_eq!(chosen.as_deref(), Some("lint"));
    let screen = render(&app);
    let selected = screen.lines().find(|l| l.contains("▶ ")).unwrap_or("");
    assert!(
        selected.contains("lint") && selected.contains("pty:worker-5"),
        "{screen}"
    );
}

#[test]
fn write_asks_for_the_rows_as_shown_or_the_filtered_events_as_csv_or_json_lines() {
    let mut app = fixed_app(160, 48);
    run(&mut app, "filter state:stale");
    let fx = run(&mut app, "write /tmp/out.csv");
    let save = fx.save.expect("a file to write");
    assert!(!save.replace);
    assert_eq!(save.what, "2 rows");
    let text = String::from_utf8(save.bytes).expect("text");
    let mut lines = text.lines();
    let head = lines.next().unwrap_or_default();
    assert!(head.starts_with("\"state\",\"key\",\"holder\""), "{head}");
    let keys: Vec<&str> = lines.map(|l| l.split(',').nth(1).unwrap_or("")).collect();
    assert_eq!(keys, ["\"node:beta\"", "\"queue/jobs 7\""], "{text}");

    update(&mut app, code(KeyCode::Tab));
    update(&mut app, code(KeyCode::Tab));
    run(&mut app, "events key:build:web");
    let fx = run(&mut app, "write! events.jsonl");
    let save = fx.save.expect("a file to write");
    assert!(save.replace);
    let text = String::from_utf8(save.bytes).expect("text");
    let types: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a JSON line"))
        .map(|v| v["type"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(types, ["claim_acquired", "claim_renewed"], "{text}");

    run(&mut app, "write");
    assert!(app.modes.prompt().and_then(|p| p.error.clone()).is_some());
}

#[test]
fn tab_completes_the_events_filters_fields_and_types() {
    let mut app = fixed_app(160, 48);
    let tab = |app: &mut App, typed: &str| {
        update(app, key(':'));
        type_text(app, typed);
        update(app, code(KeyCode::Tab));
        let got = app.modes.prompt().map(|p| p.input.value().to_string());
        update(app, code(KeyCode::Esc));
        got.unwrap_or_default()
    };
    assert_eq!(tab(&mut app, "events -ho"), "events -holder:");
    assert_eq!(
        tab(&mut app, "events type:claim_f"),
        "events type:claim_force_released "
    );
}
