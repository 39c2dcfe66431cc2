//! Renew and acquire forms: the TTL offered, its bounds in words, on whose
//! behalf, and the acquire form's fields.

use super::*;

#[test]
fn renew_offers_the_original_span_and_asks_before_renewing_someone_elses() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    update(&mut app, key('n'));
    match app.modes.dialog() {
        Some(Dialog::Renew(f)) => {
            assert_eq!(f.ttl, "15m", "acquired 3m ago, expiring in 12m");
            assert!(f.foreign);
        }
        other => panic!("{other:?}"),
    }
    update(&mut app, code(KeyCode::Enter));
    assert!(ops().is_empty(), "first Enter asks");
    update(&mut app, key('y'));
    assert_eq!(
        ops(),
        [Verb::Renew {
            key: "build:web".into(),
            holder: "pty:worker-1".into(),
            ttl_ms: 15 * MIN,
            operator: Some(OPERATOR.into()),
        }]
    );
}

#[test]
fn renew_rejects_a_ttl_outside_the_protocol_bounds_in_the_form() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    update(&mut app, key('n'));
    for _ in 0..3 {
        update(&mut app, code(KeyCode::Backspace));
    }
    type_text(&mut app, "10s");
    update(&mut app, code(KeyCode::Enter));
    match app.modes.dialog() {
        Some(Dialog::Renew(f)) => assert!(f.error.as_deref().unwrap_or("").contains("range")),
        other => panic!("{other:?}"),
    }
    assert!(ops().is_empty());
}

#[test]
fn renew_of_a_pid_bound_claim_is_refused_with_a_reason() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "db:migrate");
    update(&mut app, key('n'));
    assert!(app.modes.dialog().is_none());
    assert!(status_text(&app).contains("PID-bound"));
}

#[test]
fn the_acquire_form_defaults_to_the_operator_and_validates_before_acting() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('a'));
    match app.modes.dialog() {
        Some(Dialog::Acquire(f)) => {
            assert_eq!(f.holder, OPERATOR);
            assert_eq!(f.ttl, "30m");
        }
        other => panic!("{other:?}"),
    }
    update(&mut app, code(KeyCode::Enter));
    assert!(ops().is_empty(), "no key yet");
    type_text(&mut app, "deploy:prod");
    update(&mut app, code(KeyCode::Tab));
    update(&mut app, code(KeyCode::Tab));
    update(&mut app, code(KeyCode::Tab));
    type_text(&mut app, "hotfix");
    update(&mut app, code(KeyCode::Enter));
    assert_eq!(
        ops(),
        [Verb::Acquire {
            key: "deploy:prod".into(),
            holder: OPERATOR.into(),
            ttl_ms: Some(30 * MIN),
            reason: Some("hotfix".into())
        }]
    );
}

#[test]
fn renew_offers_the_ttl_asked_for_never_the_span_since_acquisition() {
    let root = fixed_root();
    // Acquired 30 min ago for 10 min, renewed since: expires in 5 min.
    let r = rec("job", OPERATOR, ALIVE, 30 * MIN, Some(5 * MIN));
    let events = vec![
        event(
            "2027-01-15T07:30:00Z",
            "claim_acquired",
            serde_json::json!({"key": "job", "holder": OPERATOR, "pid": ALIVE, "host": "here",
                   "acquired_at": NOW - 30 * MIN, "expires_at": NOW - 20 * MIN}),
        ),
        event(
            "2027-01-15T07:55:00Z",
            "claim_renewed",
            serde_json::json!({"key": "job", "holder": OPERATOR, "pid": ALIVE, "host": "here",
                   "acquired_at": NOW - 30 * MIN, "expires_at": NOW + 5 * MIN, "ttl_ms": 10 * MIN}),
        ),
    ];
    let mut app = app_with_events(&root, vec![status_of(&root, r)], events);
    select(&mut app, "job");
    update(&mut app, key('n'));
    match app.modes.dialog() {
        Some(Dialog::Renew(f)) => assert_eq!(f.ttl, "10m", "not the 35m since acquisition"),
        other => panic!("{other:?}"),
    }

    // Nothing in the tail: the default, still not the span.
    let r = rec("quiet", OPERATOR, ALIVE, 23 * 60 * MIN, Some(30 * MIN));
    forget();
    let mut app = app_with_events(&root, vec![status_of(&root, r)], vec![]);
    update(&mut app, key('n'));
    match app.modes.dialog() {
        Some(Dialog::Renew(f)) => {
            assert_eq!(f.ttl, "30m");
            update(&mut app, code(KeyCode::Enter));
            assert_eq!(ops().len(), 1, "a default that renews, not one that fails");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn renewing_a_claim_whose_holder_is_gone_says_what_it_does_and_names_the_operator() {
    let mut app = fixed_app(160, 48);
    select(&mut app, "node:alpha");
    update(&mut app, key('n'));
    update(&mut app, code(KeyCode::Enter));
    let screen = render(&app);
    assert!(screen.contains("pid 999 is gone"), "{screen}");
    assert!(
        screen.contains("keeps node:alpha blocked until"),
        "{screen}"
    );
    assert!(screen.contains("records you"), "{screen}");
    update(&mut app, key('y'));
    match ops().as_slice() {
        [Verb::Renew { operator, .. }] => assert_eq!(operator.as_deref(), Some(OPERATOR)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_renewal_on_someone_elses_behalf_records_the_operator_in_the_event() {
    let (_td, root) = temp_root();
    let acquire = Verb::Acquire {
        key: "k".into(),
        holder: "pty:worker".into(),
        ttl_ms: Some(10 * MIN),
        reason: None,
    };
    assert!(run_op(&root, &acquire).ok);
    let renew = |operator: Option<&str>| Verb::Renew {
        key: "k".into(),
        holder: "pty:worker".into(),
        ttl_ms: 10 * MIN,
        operator: operator.map(str::to_string),
    };
    assert!(run_op(&root, &renew(None)).ok);
    assert!(run_op(&root, &renew(Some(OPERATOR))).ok);
    let log = std::fs::read_to_string(root.events_file()).expect("events");
    let renewed: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| v["type"] == "claim_renewed")
        .collect();
    assert_eq!(renewed.len(), 2);
    assert!(
        renewed[0]["data"].get("operator").is_none(),
        "absent when the holder renews"
    );
    assert_eq!(renewed[1]["data"]["operator"], OPERATOR);
}

#[test]
fn a_ttl_out_of_range_is_worded_in_durations() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('a'));
    type_text(&mut app, "k");
    update(&mut app, code(KeyCode::Tab));
    update(&mut app, code(KeyCode::Tab));
    for _ in 0..3 {
        update(&mut app, code(KeyCode::Backspace));
    }
    type_text(&mut app, "10");
    update(&mut app, code(KeyCode::Enter));
    match app.modes.dialog() {
        Some(Dialog::Acquire(f)) => {
            let e = f.error.as_deref().unwrap_or("");
            assert!(e.contains("is out of range 60s–24h"), "{e}");
            assert!(!e.contains("ttl_ms"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_acquire_form_fields_edit_in_the_middle() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('a'));
    type_text(&mut app, "deployprod");
    for _ in 0..4 {
        update(&mut app, code(KeyCode::Left));
    }
    type_text(&mut app, ":");
    match app.modes.dialog() {
        Some(Dialog::Acquire(f)) => assert_eq!(f.key, "deploy:prod"),
        other => panic!("{other:?}"),
    }
}
