//! The events pane: following and scrolling, bad lines, the f filter, a
//! reset log, pause, its title and its times.

use super::*;

#[test]
fn scrolling_up_stops_following_and_counts_new_lines_until_shift_g() {
    let mut app = fixed_app(80, 24);
    let more: Vec<_> = (0..10)
        .map(|i| {
            line(&format!(
                "{{\"type\":\"claim_acquired\",\"data\":{{\"key\":\"k{i}\"}}}}"
            ))
        })
        .collect();
    update(&mut app, log_lines(more.clone()));
    app.focus = Pane::Events;
    update(&mut app, key('k'));
    // Scrolling up browses the whole log: the lines come from the file.
    assert!(app.modes.browsing());
    assert!(matches!(
        pop_log(),
        Some(Request::Page {
            anchor: Anchor::End,
            ..
        })
    ));
    let page = Page {
        lines: more,
        first_line_no: Some(90),
        at_end: true,
        ..Page::default()
    };
    update(&mut app, Action::Log(Box::new(Reply::Page(page))));
    assert!(render(&app).contains("line 100 of"), "{}", render(&app));
    update(
        &mut app,
        log_lines(vec![line("{\"type\":\"claim_released\"}")]),
    );
    assert!(render(&app).contains("· 1 new"));
    assert_eq!(
        app.events.browse.position(),
        Some(100),
        "the same line stays selected"
    );
    update(&mut app, key('G'));
    assert!(!app.modes.browsing());
    assert_eq!(app.events.view.scroll, 0);
    assert!(render(&app).contains("following"));
}

#[test]
fn an_unparseable_line_is_a_visible_error_row() {
    let app = fixed_app(160, 48);
    let bad: Vec<_> = app
        .events
        .ring
        .rows
        .iter()
        .filter(|r| r.error.is_some())
        .collect();
    assert_eq!(bad.len(), 1);
    assert!(render(&app).contains("!! unparseable line: invalid JSON"));
}

#[test]
fn f_shows_only_the_selected_keys_events_and_again_shows_all() {
    let mut app = fixed_app(160, 48);
    select(&mut app, "build:web");
    update(&mut app, key('f'));
    assert_eq!(app.events.view.key.as_deref(), Some("build:web"));
    assert_eq!(app.shown_events().count(), 2);
    update(&mut app, key('f'));
    assert_eq!(app.events.view.key, None);
    assert_eq!(app.shown_events().count(), 5);
}

#[test]
fn a_reset_log_empties_the_ring() {
    let mut app = fixed_app(80, 24);
    update(&mut app, log_reset_in(0));
    assert_eq!(app.shown_events().count(), 0);
}

#[test]
fn pause_freezes_the_view_but_keeps_ingesting() {
    let (_td, root) = temp_root();
    write_claim(&root, &rec("a", "pty:w", ALIVE, MIN, None));
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    update(&mut app, key('p'));
    assert!(app.paused());
    assert!(render(&app).contains("PAUSED"));

    let b = write_claim(&root, &rec("b", "pty:w", ALIVE, MIN, None));
    // Only the count of what the view is missing moves.
    assert!(collect(&mut app, &mut col, changed(&root, vec![b])));
    assert!(render(&app).contains("PAUSED · 1 new"), "{}", render(&app));
    assert!(
        !update(
            &mut app,
            log_lines(vec![line("{\"type\":\"claim_acquired\"}")])
        )
        .redraw
    );
    assert_eq!(app.claims.live.len(), 2, "ingested");
    assert_eq!(row_keys(&app), ["a"], "not shown");
    assert_eq!(app.shown_events().count(), 0);

    update(&mut app, key('p'));
    assert_eq!(row_keys(&app), ["a", "b"]);
    assert_eq!(app.shown_events().count(), 1);
}

#[test]
fn the_events_title_says_paused_while_paused() {
    let mut app = fixed_app(160, 48);
    assert!(render(&app).contains("following"));
    update(&mut app, key('p'));
    let screen = render(&app);
    assert!(!screen.contains("following"), "{screen}");
    assert!(screen.contains("paused"), "{screen}");
    assert!(!screen.contains(" new"), "{screen}");
    // What arrives meanwhile is counted, not shown: the operator knows
    // how much the frozen pane is behind.
    let arrived: Vec<_> = (0..3)
        .map(|i| {
            event(
                "2027-01-15T08:00:01Z",
                "claim_acquired",
                serde_json::json!({"key": format!("late:{i}"), "holder": "h", "pid": 1}),
            )
        })
        .collect();
    update(&mut app, log_lines(arrived));
    let screen = render(&app);
    assert!(screen.contains("paused · 3 new"), "{screen}");
    assert!(!screen.contains("late:0"), "{screen}");
    update(&mut app, key('p'));
    let screen = render(&app);
    assert!(
        screen.contains("late:2") && !screen.contains(" new"),
        "{screen}"
    );
}

#[test]
fn events_from_another_day_show_their_date_and_zone() {
    let mut app = fixed_app(160, 48);
    // Today's events alone: bare times, as ever.
    let screen = render(&app);
    assert!(screen.contains("07:57:00 acquired"), "{screen}");
    assert!(!screen.contains("01-15 07:57:00Z"), "{screen}");
    // One from yesterday in the pane: every line says its day.
    update(
        &mut app,
        log_lines(vec![event(
            "2027-01-14T23:59:00Z",
            "claim_released",
            serde_json::json!({"key": "night:job", "holder": "h", "pid": 1}),
        )]),
    );
    let screen = render(&app);
    assert!(screen.contains("01-14 23:59:00Z released"), "{screen}");
    assert!(screen.contains("01-15 07:57:00Z acquired"), "{screen}");
}

#[test]
fn capital_t_says_events_as_spans_and_the_tables_age_and_ttl_as_instants() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('T'));
    let screen = render(&app);
    assert!(screen.contains("   3m ago acquired"), "{screen}");
    // build:web was taken at 07:57 for 15 minutes.
    let line = screen
        .lines()
        .find(|l| l.contains("build:web"))
        .unwrap_or_default();
    assert!(
        line.contains("07:57:00Z") && line.contains("08:12:00Z"),
        "{line}"
    );
    update(&mut app, key('T'));
    let screen = render(&app);
    assert!(screen.contains("07:57:00 acquired"), "{screen}");
    let line = screen
        .lines()
        .find(|l| l.contains("build:web"))
        .unwrap_or_default();
    assert!(line.contains("3m     in 12m"), "{line}");
}

#[test]
fn esc_clears_the_f_key_filter_of_the_events_pane() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    update(&mut app, key('f'));
    assert!(app.events.view.key.is_some());
    update(&mut app, code(KeyCode::Esc));
    assert!(app.events.view.key.is_none());
}
