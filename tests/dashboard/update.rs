//! The dashboard's model transitions, driven without a terminal: keys, file
//! changes, ticks of an injected clock, filter and sort, and the guards on
//! every mutation.

use crate::common::*;
use crate::effects::{clipboard, forget, ops, pop_log, quit, suspended, take_ops, update};
use claimtop::claims::{ClaimState, Classifier};
use claimtop::dashboard::testing::run_op;
use claimtop::dashboard::testing::visible_signature;
use claimtop::dashboard::testing::Input;
use claimtop::dashboard::testing::Pane;
use claimtop::dashboard::testing::{Action, App};
use claimtop::dashboard::testing::{ColumnId, Dialog, Level, Overlay};
use claimtop::dashboard::testing::{ForceOptsShown, Op, Verb};
use claimtop::events::service::{Anchor, Page, Reply, Request};
use ratatui::crossterm::event::KeyCode;

fn state_of(app: &App, k: &str) -> Option<ClaimState> {
    app.claims
        .live
        .by_row
        .values()
        .find(|s| s.key == k)
        .map(|s| s.state)
}

fn status_text(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

// ------------------------------------------------------------ file changes

#[test]
fn a_changed_lockfile_is_re_read_alone_and_its_new_state_shows() {
    let (_td, root) = temp_root();
    for k in ["a", "b", "c"] {
        write_claim(&root, &rec(k, "pty:w", ALIVE, MIN, Some(10 * MIN)));
    }
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    assert!(collect(&mut app, &mut col, Input::Relist));
    assert_eq!((col.counters().reads(), col.counters().listings()), (0, 1));
    assert_eq!(app.table.rows.len(), 3);

    let path = write_claim(&root, &rec("b", "pty:w", DEAD, MIN, Some(-MIN)));
    assert!(collect(&mut app, &mut col, changed(&root, vec![path])));
    assert_eq!(
        col.counters().reads(),
        1,
        "exactly the one changed path was read"
    );
    assert_eq!(col.counters().listings(), 1);
    assert_eq!(state_of(&app, "b"), Some(ClaimState::Stale));
    assert_eq!(app.counted().stale, 1);
    assert_eq!(
        row_keys(&app)[0],
        "b",
        "the stale claim sorts first by severity"
    );
}

#[test]
fn a_deleted_lockfile_leaves_the_table_and_a_new_one_joins_it() {
    let (_td, root) = temp_root();
    let a = write_claim(&root, &rec("a", "pty:w", ALIVE, MIN, None));
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    std::fs::remove_file(&a).expect("rm");
    let b = write_claim(&root, &rec("b", "pty:w", ALIVE, MIN, None));
    assert!(collect(&mut app, &mut col, changed(&root, vec![a, b])));
    assert_eq!(row_keys(&app), ["b"]);
    assert_eq!(col.counters().reads(), 2);
}

#[test]
fn changes_outside_the_claims_dir_read_nothing_and_redraw_nothing() {
    let (_td, root) = temp_root();
    write_claim(&root, &rec("a", "pty:w", ALIVE, MIN, None));
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    let before = col.counters().reads();
    let elsewhere = vec![
        root.events_file(),
        root.root.join("unrelated.lock"),
        root.claims_dir().join("x.lock.recovery.d"),
    ];
    assert!(!collect(&mut app, &mut col, changed(&root, elsewhere)));
    assert_eq!(col.counters().reads(), before);
}

#[test]
fn a_rewrite_with_identical_content_asks_for_no_redraw() {
    let (_td, root) = temp_root();
    let r = rec("a", "pty:w", ALIVE, MIN, None);
    let path = write_claim(&root, &r);
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    write_claim(&root, &r);
    assert!(!collect(&mut app, &mut col, changed(&root, vec![path])));
}

#[test]
fn a_missing_claims_dir_is_an_empty_table_until_it_appears() {
    let (_td, root) = temp_root();
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    assert!(app.table.rows.is_empty());
    assert!(render(&app).contains("no claims under this root yet"));
    write_claim(&root, &rec("late", "pty:w", ALIVE, MIN, None));
    assert!(collect(&mut app, &mut col, Input::Relist));
    assert_eq!(row_keys(&app), ["late"]);
}

// ------------------------------------------------------------ the clock

#[test]
fn a_tick_turns_an_expiring_claim_of_a_dead_holder_stale_without_reading_files() {
    let root = fixed_root();
    // A root that does not exist: the tick cannot have read anything.
    let mut app = app_at(root.clone());
    let s = status_of(&root, rec("k", "pty:w", DEAD, MIN, Some(30_000)));
    assert_eq!(s.state, ClaimState::Suspect);
    let mut world = sweep_of(&root, vec![s], vec![]);
    world.show(&mut app);
    assert!(world.tick(&mut app, NOW + 31_000));
    assert_eq!(state_of(&app, "k"), Some(ClaimState::Stale));
    assert_eq!(app.counted().stale, 1);
}

#[test]
fn each_ttl_that_crosses_the_clock_is_re_judged_on_the_tick_it_crosses() {
    let root = fixed_root();
    let mut app = app_at(root.clone());
    let soon = status_of(&root, rec("soon", "pty:w", DEAD, MIN, Some(30_000)));
    let later = status_of(&root, rec("later", "pty:w", DEAD, MIN, Some(90_000)));
    let mut world = sweep_of(&root, vec![soon, later], vec![]);
    world.show(&mut app);
    world.tick(&mut app, NOW + 1_000);
    assert_eq!(app.counted().suspect, 2);
    assert_eq!(row_keys(&app), ["later", "soon"]);
    world.tick(&mut app, NOW + 31_000);
    assert_eq!(state_of(&app, "soon"), Some(ClaimState::Stale));
    assert_eq!(state_of(&app, "later"), Some(ClaimState::Suspect));
    // Moved alone to its sorted place: stale sorts above suspect.
    assert_eq!(row_keys(&app), ["soon", "later"]);
    assert_eq!((app.counted().stale, app.counted().suspect), (1, 1));
    world.tick(&mut app, NOW + 60_000);
    assert_eq!(state_of(&app, "later"), Some(ClaimState::Suspect));
    world.tick(&mut app, NOW + 91_000);
    assert_eq!(state_of(&app, "later"), Some(ClaimState::Stale));
    assert_eq!(app.counted().stale, 2);
}

#[test]
fn a_tick_redraws_for_the_header_clock_but_not_while_paused() {
    let root = fixed_root();
    let mut app = app_at(root.clone());
    // PID-bound and alive: its verdict has no countdown in it.
    let s = status_of(&root, rec("k", "pty:w", ALIVE, 10 * MIN, None));
    apply_sweep(&mut app, sweep_of(&root, vec![s], vec![]));
    assert!(update(&mut app, Action::Tick(NOW + 1_000)).redraw);
    assert!(render(&app).contains("08:00:01Z"), "{}", render(&app));
    update(&mut app, key('p'));
    assert!(!update(&mut app, Action::Tick(NOW + 2_000)).redraw);
    assert!(!update(&mut app, Action::Tick(NOW + MIN)).redraw);
    assert!(
        render(&app).contains("08:00:01Z"),
        "the paused clock stands still"
    );
}

#[test]
fn a_countdown_in_its_last_minute_redraws_every_second() {
    let root = fixed_root();
    let mut app = app_at(root.clone());
    let s = status_of(&root, rec("k", "pty:w", ALIVE, 10 * MIN, Some(50_000)));
    apply_sweep(&mut app, sweep_of(&root, vec![s], vec![]));
    let sig = visible_signature(&app);
    assert!(update(&mut app, Action::Tick(NOW + 1_000)).redraw);
    assert_ne!(visible_signature(&app), sig);
    assert!(render(&app).contains("in 49s"));
}

#[test]
fn the_reason_of_whichever_claim_is_selected_reads_at_the_current_clock() {
    let root = fixed_root();
    let mut app = app_at(root.clone());
    let a = status_of(&root, rec("a", "pty:w", ALIVE, MIN, Some(30 * MIN)));
    let b = status_of(&root, rec("b", "pty:w", ALIVE, MIN, Some(40 * MIN)));
    apply_sweep(&mut app, sweep_of(&root, vec![a, b], vec![]));
    let why = |app: &App| {
        app.selected_status()
            .map(|s| s.why.clone())
            .unwrap_or_default()
    };
    assert!(why(&app).contains("expires in 30m00s"), "{}", why(&app));
    // Ten minutes on, the tick re-judges both but words only the selected.
    update(&mut app, Action::Tick(NOW + 10 * MIN));
    assert!(why(&app).contains("expires in 20m00s"), "{}", why(&app));
    // Moving to the other claim words its reason at the same clock, not
    // the one it had when it was read.
    update(&mut app, key('j'));
    assert!(why(&app).contains("expires in 30m00s"), "{}", why(&app));
}

/// pid 4242, alive until the test says otherwise.
static HOLDER_STATE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
const HOLDER: i32 = 4242;
fn changing_probe(pid: i32) -> Option<i64> {
    match (pid, HOLDER_STATE.load(std::sync::atomic::Ordering::SeqCst)) {
        (HOLDER, 0) => Some(NOW - 60 * MIN),
        (p, _) => probe(p),
    }
}

#[test]
fn a_holder_that_dies_turns_its_claims_stale_on_a_tick_without_a_file_event() {
    use std::sync::atomic::Ordering::SeqCst;
    let (_td, root) = temp_root();
    write_claim(&root, &rec("a", "pty:w", HOLDER, MIN, None));
    write_claim(&root, &rec("b", "pty:w", HOLDER, MIN, None));
    let mut app = app_at(root.clone());
    let mut col = collector_with(&root, changing_probe);
    HOLDER_STATE.store(0, SeqCst);
    collect(&mut app, &mut col, Input::Relist);
    tick(&mut app, &mut col, NOW + 1_000);
    assert_eq!(state_of(&app, "a"), Some(ClaimState::Live));
    tick(&mut app, &mut col, NOW + 2_000);
    assert_eq!(state_of(&app, "a"), Some(ClaimState::Live));
    let reads = col.counters().reads();

    HOLDER_STATE.store(1, SeqCst); // the holder dies
    assert!(tick(&mut app, &mut col, NOW + 3_000));
    assert_eq!(state_of(&app, "a"), Some(ClaimState::Stale));
    assert_eq!(state_of(&app, "b"), Some(ClaimState::Stale));
    assert_eq!(app.counted().stale, 2);
    assert_eq!(col.counters().reads(), reads, "no lockfile was re-read");
}

#[test]
fn a_reused_pid_is_caught_by_the_periodic_start_time_check() {
    use claimtop::store::mirror::judge::PID_RECHECK_MS;
    fn reused_probe(pid: i32) -> Option<i64> {
        static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        // Alive throughout; after the first few reads it is another process.
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        match pid {
            HOLDER if n < 2 => Some(NOW - 60 * MIN),
            HOLDER => Some(NOW + MIN),
            p => probe(p),
        }
    }
    let (_td, root) = temp_root();
    write_claim(&root, &rec("a", "pty:w", HOLDER, MIN, None));
    let mut app = app_at(root.clone());
    let mut col = collector_with(&root, reused_probe);
    collect(&mut app, &mut col, Input::Relist);
    tick(&mut app, &mut col, NOW + 1_000); // still the old process
    assert_eq!(state_of(&app, "a"), Some(ClaimState::Live));
    // Existence checks alone cannot see the swap; the periodic re-read does.
    tick(&mut app, &mut col, NOW + 1_000 + PID_RECHECK_MS);
    assert_eq!(state_of(&app, "a"), Some(ClaimState::Stale));
}

// ------------------------------------------------------------ navigation, sort, filter

#[test]
fn default_order_puts_what_needs_a_human_first_then_key() {
    let app = fixed_app(80, 24);
    let states: Vec<ClaimState> = app
        .table
        .rows
        .iter()
        .filter_map(|p| app.shown().get(p))
        .map(|s| s.state)
        .collect();
    let mut sorted = states.clone();
    sorted.sort_by_key(|s| s.severity());
    assert_eq!(states, sorted);
    assert_eq!(states[0], ClaimState::Corrupted);
    assert_eq!(row_keys(&app)[1..3], ["node:beta", "queue/jobs 7"]);
}

#[test]
fn j_k_g_and_shift_g_move_the_selection() {
    let mut app = fixed_app(80, 24);
    assert_eq!(app.table.selected, 0);
    update(&mut app, key('j'));
    update(&mut app, code(KeyCode::Down));
    assert_eq!(app.table.selected, 2);
    update(&mut app, key('k'));
    assert_eq!(app.table.selected, 1);
    update(&mut app, key('G'));
    assert_eq!(app.table.selected, app.table.rows.len() - 1);
    update(&mut app, key('g'));
    assert_eq!(app.table.selected, 0);
    assert!(
        !update(&mut app, key('k')).redraw,
        "nothing above the first row"
    );
}

#[test]
fn s_cycles_the_sort_column_and_shift_s_reverses_it() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('s'));
    assert_eq!(app.table.sort.column, ColumnId::Key);
    let keys = row_keys(&app);
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    update(&mut app, key('S'));
    assert!(app.table.sort.reverse);
    sorted.reverse();
    assert_eq!(row_keys(&app), sorted);
    // The nine columns of one root's table: back to the state after them.
    for _ in 0..8 {
        update(&mut app, key('s'));
    }
    assert_eq!(app.table.sort.column, ColumnId::State, "s wraps around");
}

#[test]
fn sorting_keeps_the_same_claim_selected() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "gpu:0");
    update(&mut app, key('s'));
    assert_eq!(selected_key(&app), "gpu:0");
}

#[test]
fn the_filter_matches_words_and_state_holder_harness_terms() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('/'));
    type_text(&mut app, "state:stale");
    assert_eq!(row_keys(&app), ["node:beta", "queue/jobs 7"]);
    update(&mut app, code(KeyCode::Enter));
    assert!(app.modes.filter_input().is_none());
    assert_eq!(app.table.rows.len(), 2, "Enter keeps the filter");

    update(&mut app, key('/'));
    for _ in 0.."state:stale".len() {
        update(&mut app, code(KeyCode::Backspace));
    }
    type_text(&mut app, "holder:WORKER-2");
    assert_eq!(row_keys(&app), ["node:alpha"]);
    update(&mut app, code(KeyCode::Esc));
    assert_eq!(app.table.rows.len(), 7, "Esc clears the filter");

    update(&mut app, key('/'));
    type_text(&mut app, "harness:codex release");
    assert_eq!(row_keys(&app), ["build:web"]);
    update(&mut app, code(KeyCode::Enter));
    update(&mut app, code(KeyCode::Esc));
    assert!(
        app.table.filter.is_empty(),
        "Esc outside the input clears it too"
    );

    update(&mut app, key('/'));
    type_text(&mut app, "state:nonsense");
    assert!(app.table.rows.is_empty());
}

#[test]
fn tab_cycles_the_panes_and_movement_follows_the_focus() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    let row = app.table.selected;
    update(&mut app, code(KeyCode::Tab));
    assert_eq!(app.focus, Pane::Detail);
    update(&mut app, key('j'));
    assert_eq!(app.table.detail_scroll, 1);
    assert_eq!(app.table.selected, row, "the table selection did not move");
    update(&mut app, code(KeyCode::Tab));
    assert_eq!(app.focus, Pane::Events);
    update(&mut app, code(KeyCode::BackTab));
    assert_eq!(app.focus, Pane::Detail);
}

// ------------------------------------------------------------ events pane

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

// ------------------------------------------------------------ pause

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

// ------------------------------------------------------------ mutations

#[test]
fn read_only_refuses_every_mutation_and_says_so() {
    let mut app = fixed_app(80, 24);
    app.read_only = true;
    for c in ['a', 'r', 'n', 'F'] {
        app.status = None;
        update(&mut app, key(c));
        assert!(app.modes.dialog().is_none(), "{c} opened a dialog");
        assert!(status_text(&app).contains("read-only"), "{c}");
    }
    assert!(ops().is_empty());
}

#[test]
fn r_on_someone_elses_claim_is_refused_and_points_to_force() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    update(&mut app, key('r'));
    assert!(ops().is_empty());
    let msg = status_text(&app);
    assert!(
        msg.contains("pty:worker-1") && msg.contains("use F"),
        "{msg}"
    );
    assert_eq!(app.status.as_ref().map(|s| s.level), Some(Level::Error));
}

#[test]
fn r_on_the_operators_own_claim_queues_a_release_as_the_operator() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "db:migrate");
    update(&mut app, key('r'));
    assert_eq!(
        ops(),
        [Verb::Release {
            key: "db:migrate".into(),
            holder: OPERATOR.into()
        }]
    );
}

#[test]
fn force_release_of_a_live_claim_needs_the_key_typed_in_full() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    update(&mut app, key('F'));
    assert!(matches!(app.modes.dialog(), Some(Dialog::ForceRelease(_))));
    update(&mut app, key('y'));
    update(&mut app, code(KeyCode::Enter));
    assert!(ops().is_empty(), "y is just a typed letter here");
    for _ in 0..2 {
        update(&mut app, code(KeyCode::Backspace));
    }
    type_text(&mut app, "build:we");
    update(&mut app, code(KeyCode::Enter));
    assert!(ops().is_empty(), "a prefix is not the key");
    match app.modes.dialog() {
        Some(Dialog::ForceRelease(f)) => assert!(f.error.is_some()),
        other => panic!("dialog closed: {other:?}"),
    }
    type_text(&mut app, "b");
    update(&mut app, code(KeyCode::Enter));
    assert!(app.modes.dialog().is_none());
    assert_eq!(
        ops(),
        [Verb::ForceRelease {
            key: "build:web".into(),
            opts: ForceOptsShown {
                expect_holder: Some("pty:worker-1".into()),
                expect_acquired_at: Some(NOW - 3 * MIN),
                operator: OPERATOR.into(),
                allow_live: true,
            }
        }]
    );
}

#[test]
fn force_release_of_an_unreadable_claim_is_guarded_as_live_and_then_allowed() {
    // Held as far as anyone can tell: y alone must not take it away, and a
    // typed key must, which the CLI spells --allow-live.
    let (_td, root) = temp_root();
    let path = root.lockfile("vault:big");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // Over the read cap: a claim this reader refuses to read.
    std::fs::write(&path, vec![b'#'; 2 << 20]).unwrap();
    let mut app = app_at(root.clone());
    let mut c = collector(&root);
    collect(&mut app, &mut c, Input::Relist);
    update(&mut app, Action::Resize(100, 30));
    assert_eq!(state_of(&app, "vault:big"), Some(ClaimState::Unreadable));
    select(&mut app, "vault:big");
    update(&mut app, key('F'));
    assert!(render(&app).contains("may be LIVE"), "{}", render(&app));
    update(&mut app, key('y'));
    assert!(ops().is_empty(), "y is just a typed letter here");
    update(&mut app, code(KeyCode::Backspace));
    type_text(&mut app, "vault:big");
    update(&mut app, code(KeyCode::Enter));
    let op = match ops().as_slice() {
        [op @ Verb::ForceRelease { opts, .. }] => {
            assert!(opts.allow_live, "typed key, yet not allowed: {opts:?}");
            op.clone()
        }
        other => panic!("{other:?}"),
    };
    // Carried out through the verbs: archived, not refused.
    let r = run_op(&root, &op);
    assert!(r.ok, "{}", r.message);
    assert!(!path.exists());
}

#[test]
fn force_release_of_a_stale_claim_confirms_with_y_and_never_allows_live() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "node:beta");
    update(&mut app, key('F'));
    update(&mut app, key('x'));
    assert!(ops().is_empty());
    update(&mut app, key('y'));
    match ops().as_slice() {
        [Verb::ForceRelease { key, opts }] => {
            assert_eq!(key, "node:beta");
            assert!(!opts.allow_live);
            assert_eq!(opts.expect_holder.as_deref(), Some("pty:worker-3"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn force_release_of_a_corrupted_file_has_no_holder_guard() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "broken");
    update(&mut app, key('F'));
    update(&mut app, key('y'));
    match ops().as_slice() {
        [Verb::ForceRelease { opts, .. }] => {
            assert_eq!(opts.expect_holder, None);
            assert_eq!(opts.expect_acquired_at, None);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn esc_closes_a_dialog_without_acting() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "node:beta");
    update(&mut app, key('F'));
    update(&mut app, code(KeyCode::Esc));
    assert!(app.modes.dialog().is_none());
    assert!(ops().is_empty());
}

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
fn ctrl_c_asks_as_q_does_even_from_a_text_input_and_twice_quits() {
    // fixed_app: the operator holds db:migrate.
    let mut app = fixed_app(80, 24);
    update(&mut app, key('a'));
    update(&mut app, key('q'));
    assert!(!quit(), "q is a letter of the key");
    update(&mut app, ctrl('c'));
    assert!(!quit(), "a claim taken here is held: asked first");
    assert!(matches!(app.modes.dialog(), Some(Dialog::Quit(_))));
    update(&mut app, ctrl('c'));
    assert!(quit(), "twice within a second: out, whatever is open");
}

#[test]
fn help_and_hazards_overlays_open_and_close() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('?'));
    assert_eq!(app.modes.overlay(), Some(Overlay::Help));
    update(&mut app, code(KeyCode::Esc));
    assert_eq!(app.modes.overlay(), None);
    update(&mut app, key('h'));
    assert_eq!(app.modes.overlay(), Some(Overlay::Hazards));
    // The mutex corpse, the corrupted file, the foreign claim.
    assert_eq!(app.hazards().len(), 3);
    assert_eq!(app.hazard_count(), 3);
    update(&mut app, key('h'));
    assert_eq!(app.modes.overlay(), None);
}

#[test]
fn an_op_result_is_shown_and_its_lockfile_re_read_at_once() {
    let (_td, root) = temp_root();
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    let (op_tx, op_rx) = std::sync::mpsc::channel();
    let (out_tx, out_rx) = std::sync::mpsc::channel();
    let (in_tx, in_rx) = std::sync::mpsc::channel();
    let r = root.clone();
    let worker = std::thread::spawn(move || {
        use claimtop::dashboard::testing::{store_of_roots, worker, Origins};
        let store = store_of_roots(&[r]);
        let shown = Origins::of_store(&store, &[]);
        worker(store, shown, op_rx, out_tx, vec![in_tx])
    });
    let verb = Verb::Acquire {
        key: "new".into(),
        holder: OPERATOR.into(),
        ttl_ms: Some(10 * MIN),
        reason: None,
    };
    let at = claimtop::store::OriginIx(0);
    op_tx.send(Op { at, verb }).expect("send op");
    drop(op_tx);
    let reread = in_rx.recv().expect("the worker asks for a re-read");
    assert!(
        matches!(&reread, Input::Reread(k) if k == "new"),
        "{reread:?}"
    );
    for a in out_rx.iter() {
        update(&mut app, a);
    }
    worker.join().expect("worker");
    collect(&mut app, &mut col, reread);
    assert_eq!(row_keys(&app), ["new"]);
    assert_eq!(status_text(&app), "acquired new");
}

#[test]
fn a_warning_from_the_core_lands_on_the_status_line() {
    let mut app = fixed_app(80, 24);
    assert!(
        update(
            &mut app,
            Action::Warning("failed to emit \"claim_released\": lock timeout".into())
        )
        .redraw
    );
    assert!(render(&app).contains("failed to emit"));
}

// ------------------------------------------------------------ ops against a real root

#[test]
fn dashboard_mutations_go_through_the_verbs_and_write_the_same_audit_events() {
    let (_td, root) = temp_root();
    let acquire = Verb::Acquire {
        key: "deploy:prod".into(),
        holder: OPERATOR.into(),
        ttl_ms: Some(30 * MIN),
        reason: Some("hotfix".into()),
    };
    let r = run_op(&root, &acquire);
    assert!(r.ok, "{}", r.message);
    assert_eq!((r.root, r.key.as_str()), (0, "deploy:prod"));
    let r = run_op(
        &root,
        &Verb::Renew {
            key: "deploy:prod".into(),
            holder: OPERATOR.into(),
            ttl_ms: 10 * MIN,
            operator: None,
        },
    );
    assert!(r.ok, "{}", r.message);
    let r = run_op(
        &root,
        &Verb::Release {
            key: "deploy:prod".into(),
            holder: OPERATOR.into(),
        },
    );
    assert!(r.ok, "{}", r.message);
    assert!(!root.lockfile("deploy:prod").exists());
    let log = std::fs::read_to_string(root.events_file()).expect("events");
    let types: Vec<String> = log
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            v["type"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(types, ["claim_acquired", "claim_renewed", "claim_released"]);
}

#[test]
fn force_release_refuses_a_key_re_acquired_after_it_was_shown() {
    let (_td, root) = temp_root();
    // A stale claim (its pid does not exist anywhere) as the operator saw it.
    let shown = rec("k", "pty:gone", i32::MAX - 7, 5 * MIN, None);
    let path = write_claim(&root, &shown);
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, changed(&root, vec![path.clone()]));
    select(&mut app, "k");
    update(&mut app, key('F'));
    update(&mut app, key('y'));
    let op = take_ops().pop().expect("an op");
    // Meanwhile the key is released and taken by someone else.
    let mut now_held = rec("k", "pty:new", i32::MAX - 7, 0, None);
    now_held.acquired_at = shown.acquired_at + 1;
    write_claim(&root, &now_held);
    let r = run_op(&root, &op.verb);
    assert!(!r.ok);
    assert!(r.message.contains("refused"), "{}", r.message);
    assert!(path.exists(), "the new holder's file is untouched");
}

#[test]
fn force_release_of_a_corrupted_file_archives_it_and_audits_it() {
    let (_td, root) = temp_root();
    std::fs::create_dir_all(root.claims_dir()).expect("dir");
    let path = root.lockfile("junk");
    std::fs::write(&path, b"\x00\x01 not yaml [").expect("write");
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    select(&mut app, "junk");
    update(&mut app, key('F'));
    update(&mut app, key('y'));
    let op = take_ops().pop().expect("an op");
    let r = run_op(&root, &op.verb);
    assert!(r.ok, "{}", r.message);
    assert!(!path.exists());
    assert!(root.claims_dir().join(".expired").is_dir());
    let path = root.lockfile(&r.key);
    update(&mut app, Action::OpResult(r));
    collect(&mut app, &mut col, changed(&root, vec![path]));
    assert!(app.table.rows.is_empty());
    let log = std::fs::read_to_string(root.events_file()).expect("events");
    assert!(log.contains("claim_force_released"));
}

#[test]
fn a_fresh_classifier_agrees_with_the_fixture_world() {
    // Guards the fixtures the other tests lean on.
    let mut c = Classifier::with(NOW, me(), probe);
    assert_eq!(
        c.verdict(&rec("k", "h", ALIVE, MIN, None)).state,
        ClaimState::Live
    );
    assert_eq!(
        c.verdict(&rec("k", "h", DEAD, MIN, Some(MIN))).state,
        ClaimState::Suspect
    );
}

// ------------------------------------------------------------ round 2: bugs

fn app_with_events(
    root: &claimtop::claims::Root,
    claims: Vec<claimtop::claims::Status>,
    events: Vec<claimtop::events::tail::Line>,
) -> App {
    let mut app = app_at(root.clone());
    apply_sweep(&mut app, sweep_of(root, claims, vec![]));
    update(&mut app, log_lines(events));
    app
}

#[test]
fn on_the_too_small_screen_no_key_acts_unseen() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "broken");
    update(&mut app, Action::Resize(40, 10));
    for k in ['g', 'F', 'y', 'r', 'n', 'a', 'p', 'h', '/'] {
        update(&mut app, key(k));
    }
    assert!(app.modes.dialog().is_none(), "{:?}", app.modes.dialog());
    assert!(ops().is_empty());
    assert!(!app.paused());
    assert!(app.modes.overlay().is_none());
    assert!(app.modes.filter_input().is_none());
    assert_eq!(selected_key(&app), "broken", "g did not move the selection");

    update(&mut app, key('?'));
    assert_eq!(app.modes.overlay(), Some(Overlay::Help));
    assert!(render(&app).contains("help"), "{}", render(&app));
    update(&mut app, key('?'));
    // The operator holds db:migrate: q asks, and the question is visible.
    update(&mut app, key('q'));
    assert!(!quit());
    assert!(render(&app).contains("release them"), "{}", render(&app));
    update(&mut app, key('k'));
    assert!(quit());
}

#[test]
fn on_the_too_small_screen_the_help_scrolls_and_closes_with_the_keys_it_names() {
    let mut app = fixed_app(40, 10);
    update(&mut app, key('?'));
    assert!(render(&app).contains("Esc or ? closes"), "{}", render(&app));
    let first = render(&app);
    update(&mut app, key('j'));
    assert_eq!(app.modes.overlay_scroll(), 1, "j did not scroll the help");
    update(&mut app, code(KeyCode::PageDown));
    assert!(app.modes.overlay_scroll() > 1);
    assert_ne!(render(&app), first, "the screen did not move");
    update(&mut app, key('G'));
    let end = app.modes.overlay_scroll();
    update(&mut app, key('j'));
    assert_eq!(app.modes.overlay_scroll(), end, "scrolled past the end");
    // Esc closes, as the title says; so does ? again.
    update(&mut app, code(KeyCode::Esc));
    assert_eq!(app.modes.overlay(), None);
    update(&mut app, key('?'));
    update(&mut app, key('?'));
    assert_eq!(app.modes.overlay(), None);
    // And nothing behind it acted meanwhile.
    assert!(app.modes.dialog().is_none() && ops().is_empty());
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
fn scrolling_stops_at_the_last_line_of_the_detail_and_the_help() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    update(&mut app, code(KeyCode::Tab));
    for _ in 0..50 {
        update(&mut app, key('j'));
    }
    let max = app.table.detail_scroll;
    assert!(max > 0 && max < 50, "{max}");
    update(&mut app, key('k'));
    assert_eq!(
        app.table.detail_scroll,
        max - 1,
        "one k comes back one line"
    );

    update(&mut app, key('?'));
    for _ in 0..300 {
        update(&mut app, key('j'));
    }
    let help_max = app.modes.overlay_scroll();
    assert!(help_max < 300, "{help_max}");
    assert!(
        render(&app).contains("confirms, Esc cancels"),
        "the last line is in view: {}",
        render(&app)
    );
    update(&mut app, key('k'));
    assert_eq!(app.modes.overlay_scroll(), help_max.saturating_sub(1));
}

#[test]
fn a_root_that_does_not_exist_says_so_and_recovers_when_it_appears() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = claimtop::claims::Root::with_events_here(td.path().join("not-yet"));
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    let screen = render(&app);
    assert!(screen.contains("does not exist"), "{screen}");
    assert!(
        !screen.contains("no claims under this root yet"),
        "{screen}"
    );

    write_claim(&root, &rec("late", "pty:w", ALIVE, MIN, None));
    assert!(collect(&mut app, &mut col, Input::Relist));
    assert_eq!(row_keys(&app), ["late"]);
    assert!(!render(&app).contains("does not exist"));
}

#[test]
fn a_root_that_is_a_file_is_named_as_not_a_directory() {
    let td = tempfile::tempdir().expect("tempdir");
    let file = td.path().join("plain-file");
    std::fs::write(&file, "x").expect("write");
    let root = claimtop::claims::Root::with_events_here(&file);
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    let screen = render(&app);
    assert!(screen.contains("is not a directory"), "{screen}");
}

#[test]
fn quitting_with_claims_of_your_own_asks_release_keep_or_stay() {
    // fixed_app: the operator holds db:migrate.
    let mut app = fixed_app(80, 24);
    update(&mut app, key('q'));
    assert!(!quit());
    match app.modes.dialog() {
        Some(Dialog::Quit(q)) => assert_eq!(q.keys, ["db:migrate"]),
        other => panic!("{other:?}"),
    }
    update(&mut app, code(KeyCode::Esc));
    assert!(!quit() && app.modes.dialog().is_none(), "Esc stays");

    update(&mut app, key('q'));
    update(&mut app, key('r'));
    assert!(!quit(), "not before the release is done");
    assert_eq!(
        ops(),
        [Verb::Release {
            key: "db:migrate".into(),
            holder: OPERATOR.into()
        }]
    );
    update(
        &mut app,
        Action::OpResult(claimtop::dashboard::testing::OpResult {
            verb: "release",
            key: "db:migrate".into(),
            root: 0,
            ok: true,
            message: "released db:migrate".into(),
        }),
    );
    assert!(quit());

    forget();
    let mut app = fixed_app(80, 24);
    update(&mut app, key('q'));
    update(&mut app, key('k'));
    assert!(quit() && ops().is_empty(), "k keeps them");

    let (_td, root) = temp_root();
    forget();
    let mut app = app_at(root);
    update(&mut app, key('q'));
    assert!(quit(), "nothing of yours: q quits at once");
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
fn z_zooms_the_focused_pane_to_the_whole_screen_and_tab_moves_the_zoom() {
    for (w, h) in [(160, 48), (80, 24)] {
        let mut app = fixed_app(w, h);
        let rows_before = claimtop::dashboard::testing::table_capacity(app.size, app.look());
        update(&mut app, key('z'));
        assert!(app.zoomed);
        let screen = render(&app);
        // The table alone: no events pane title, more rows, the way back named.
        assert!(!screen.contains("following"), "{screen}");
        assert!(screen.contains("z all panes"), "{screen}");
        let rows = claimtop::dashboard::testing::table_capacity(app.size, app.look());
        assert!(rows > rows_before, "{rows} <= {rows_before}");
        // j pages through the zoomed table as through the plain one.
        update(&mut app, key('G'));
        assert_eq!(Some(selected_key(&app)), row_keys(&app).last().cloned());
        update(&mut app, code(KeyCode::Tab));
        update(&mut app, code(KeyCode::Tab));
        let screen = render(&app);
        assert!(
            screen.contains("following"),
            "the events pane, zoomed:\n{screen}"
        );
        update(&mut app, key('z'));
        assert!(!app.zoomed);
        let screen = render(&app);
        assert!(!screen.contains("z all panes"), "{screen}");
    }
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

#[test]
fn status_messages_go_away_by_themselves() {
    let mut app = fixed_app(80, 24);
    update(&mut app, Action::Warning("something failed".into()));
    assert!(update(&mut app, Action::Tick(NOW + 5_000)).redraw || app.status.is_some());
    assert!(app.status.is_some(), "still there after 5 s");
    assert!(update(&mut app, Action::Tick(NOW + 21_000)).redraw);
    assert!(app.status.is_none(), "gone after 20 s");
}

#[test]
fn alt_slash_does_not_open_the_filter() {
    use ratatui::crossterm::event::{KeyEvent, KeyModifiers};
    let mut app = fixed_app(80, 24);
    update(
        &mut app,
        Action::Key(KeyEvent::new(KeyCode::Char('/'), KeyModifiers::ALT)),
    );
    assert!(app.modes.filter_input().is_none());
}

#[test]
fn ctrl_z_asks_the_loop_to_suspend() {
    let mut app = fixed_app(80, 24);
    update(&mut app, ctrl('z'));
    assert!(suspended() && !quit());
}

#[test]
fn help_shows_the_control_keys_that_page() {
    let mut app = fixed_app(160, 80);
    update(&mut app, key('?'));
    let screen = render(&app);
    assert!(
        screen.contains("PgUp/C-b") && screen.contains("PgDn/C-f"),
        "{screen}"
    );
    assert!(screen.contains("C-z"), "{screen}");
}

#[test]
fn a_new_mutex_corpse_shows_within_a_tick_not_at_the_next_sweep() {
    let (_td, root) = temp_root();
    write_claim(&root, &rec("a", "pty:w", ALIVE, MIN, None));
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    let mutex = root.claims_dir().join("a.lock.recovery.d");
    std::fs::create_dir(&mutex).expect("mkdir");
    // Made just under two minutes ago, on this world's clock, and its
    // holder killed since: no event will come.
    let made = std::time::UNIX_EPOCH + std::time::Duration::from_millis((NOW - 119_500) as u64);
    std::fs::File::open(&mutex)
        .and_then(|f| f.set_modified(made))
        .expect("stamp the mutex");
    collect(&mut app, &mut col, changed(&root, vec![mutex.clone()]));
    assert_eq!(app.hazard_count(), 0, "a young mutex is no hazard");
    assert!(tick(&mut app, &mut col, NOW + 1_000));
    assert_eq!(app.hazard_count(), 1);
    assert_eq!(col.counters().listings(), 1, "no sweep was needed");

    std::fs::remove_dir(&mutex).expect("rmdir");
    collect(&mut app, &mut col, changed(&root, vec![mutex]));
    assert_eq!(app.hazard_count(), 0);
}

#[test]
fn columns_are_sized_from_their_content_key_and_holder_first() {
    let root = fixed_root();
    let claims = vec![
        status_of(
            &root,
            rec(
                "build:web-frontend",
                "claude:session-4f2a9c1e",
                ALIVE,
                MIN,
                Some(10 * MIN),
            ),
        ),
        status_of(
            &root,
            rec(
                "build:web-backend",
                "claude:session-4f2a9c7b",
                ALIVE,
                MIN,
                Some(10 * MIN),
            ),
        ),
    ];
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = app_at(root.clone());
        apply_sweep(&mut app, sweep_of(&root, claims.clone(), vec![]));
        update(&mut app, Action::Resize(w, h));
        let screen = render(&app);
        for full in [
            "claude:session-4f2a9c1e",
            "claude:session-4f2a9c7b",
            "build:web-frontend",
        ] {
            assert!(screen.contains(full), "{w}x{h}: {full} cut:\n{screen}");
        }
    }
    // The smallest screen: the key keeps more room than the TTL.
    let mut app = app_at(root.clone());
    apply_sweep(&mut app, sweep_of(&root, claims, vec![]));
    update(&mut app, Action::Resize(60, 15));
    let screen = render(&app);
    let line = screen
        .lines()
        .find(|l| l.contains("build:web-f"))
        .unwrap_or_else(|| panic!("no key row:\n{screen}"));
    assert!(
        line.contains("build:web-fro…"),
        "14 columns of key, not 8: {screen}"
    );
    assert!(line.contains("in 10m"), "{screen}");
}

#[test]
fn a_pid_is_never_cut_however_long_the_key_and_holder_are() {
    let root = fixed_root();
    let long = "x".repeat(120);
    let claims = vec![status_of(
        &root,
        rec(
            &format!("k-{long}"),
            &format!("h-{long}"),
            999_999,
            MIN,
            None,
        ),
    )];
    let mut app = app_at(root.clone());
    apply_sweep(&mut app, sweep_of(&root, claims, vec![]));
    // 80 wide: the medium table, which shows the pid.
    update(&mut app, Action::Resize(80, 24));
    let screen = render(&app);
    let row = line_with(&screen, "k-xxx");
    assert!(row.contains(" 999999 "), "{screen}");
    assert!(!row.contains("9999…"), "{screen}");
}

#[test]
fn cut_text_ends_in_an_ellipsis_and_every_sorted_column_shows_its_arrow() {
    let root = fixed_root();
    let long = "x".repeat(200);
    let mut r = rec("k", "pty:w", ALIVE, MIN, Some(10 * MIN));
    r.reason = Some(long.clone());
    r.harness = Some("codex".into());
    let mut app = app_at(root.clone());
    apply_sweep(&mut app, sweep_of(&root, vec![status_of(&root, r)], vec![]));
    update(&mut app, Action::Resize(160, 48));
    assert!(render(&app).contains("x…"), "{}", render(&app));
    for col in [ColumnId::Machine, ColumnId::Harness, ColumnId::Reason] {
        while app.table.sort.column != col {
            update(&mut app, key('s'));
        }
        let screen = render(&app);
        let header = line_with(&screen, "holder").to_string();
        assert!(
            header.contains(&format!("{} ▲", col.title())) || header.contains("… ▲"),
            "{col:?}: {header}"
        );
        let arrows = header.matches('▲').count();
        assert_eq!(arrows, 1, "{col:?}: {header}");
    }
}

#[test]
fn the_table_says_where_the_selection_is() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('j'));
    update(&mut app, key('j'));
    let n = app.table.rows.len();
    assert!(
        render(&app).contains(&format!("claims 3/{n}")),
        "{}",
        render(&app)
    );
}

// ------------------------------------------------------------ round 2: operator features

#[test]
fn the_same_field_twice_is_either_and_different_fields_are_both() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('/'));
    type_text(&mut app, "state:stale state:corrupted");
    let mut keys = row_keys(&app);
    keys.sort();
    assert_eq!(keys, ["broken", "node:beta", "queue/jobs 7"]);
    type_text(&mut app, " holder:worker-3");
    assert_eq!(row_keys(&app), ["node:beta"]);
}

#[test]
fn an_unknown_state_or_field_says_so_instead_of_nothing_matches() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('/'));
    type_text(&mut app, "state:stael");
    assert!(app.table.rows.is_empty());
    let screen = render(&app);
    assert!(screen.contains("unknown state \"stael\""), "{screen}");

    update(&mut app, code(KeyCode::Esc));
    update(&mut app, key('/'));
    type_text(&mut app, "hodler:worker");
    assert!(app.table.rows.is_empty());
    let screen = render(&app);
    assert!(screen.contains("hodler: is not a field"), "{screen}");
    // Keys with colons are still plain text.
    update(&mut app, code(KeyCode::Esc));
    update(&mut app, key('/'));
    type_text(&mut app, "node:alpha");
    assert_eq!(row_keys(&app), ["node:alpha"]);
}

#[test]
fn the_filter_input_edits_with_a_cursor_and_recalls_history() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('/'));
    type_text(&mut app, "node");
    update(&mut app, code(KeyCode::Home));
    type_text(&mut app, "key:");
    assert_eq!(app.table.filter.text, "key:node");
    update(&mut app, code(KeyCode::End));
    update(&mut app, ctrl('w'));
    assert_eq!(app.table.filter.text, "");
    type_text(&mut app, "beta");
    update(&mut app, code(KeyCode::Enter));
    assert_eq!(row_keys(&app), ["node:beta"]);
    update(&mut app, code(KeyCode::Esc));
    assert!(app.table.filter.is_empty());

    update(&mut app, key('/'));
    update(&mut app, code(KeyCode::Up));
    assert_eq!(app.table.filter.text, "beta", "↑ recalls the last filter");
    assert_eq!(row_keys(&app), ["node:beta"]);
}

#[test]
fn matches_are_highlighted_in_the_table() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('/'));
    type_text(&mut app, "worker-3");
    update(&mut app, code(KeyCode::Enter));
    let buf = render_buffer(&app);
    let screen = render(&app);
    let (y, line) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("pty:worker-3") && l.contains("node:beta"))
        .expect("the row");
    let x = line.find("worker-3").expect("in the line");
    let x = line[..x].chars().count() as u16;
    let hl = buf[(x, y as u16)].style();
    let plain = buf[(x - 2, y as u16)].style();
    assert!(
        hl.add_modifier
            .contains(ratatui::style::Modifier::UNDERLINED),
        "{hl:?}"
    );
    assert!(!plain
        .add_modifier
        .contains(ratatui::style::Modifier::UNDERLINED));
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

#[test]
fn enter_opens_the_whole_record_and_y_copies_the_key() {
    let mut app = fixed_app(160, 48);
    select(&mut app, "build:web");
    update(&mut app, code(KeyCode::Enter));
    assert_eq!(app.modes.overlay(), Some(Overlay::Claim));
    let screen = render(&app);
    for want in [
        "record (YAML, as the lockfile holds it)",
        "holder: pty:worker-1",
        "ticket: OPS-17",
        "/srv/work/.fno/claims/build%3Aweb.lock",
        "history (2 events of this key in the tail)",
    ] {
        assert!(screen.contains(want), "{want}:\n{screen}");
    }
    update(&mut app, key('y'));
    assert_eq!(clipboard().as_deref(), Some("build:web"));
    assert!(status_text(&app).contains("copied build:web"));
    update(&mut app, code(KeyCode::Enter));
    assert!(app.modes.overlay().is_none(), "Enter closes it again");
}

#[test]
fn x_lists_what_doctor_fix_removes_and_runs_it_only_after_y() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('x'));
    match app.modes.dialog() {
        Some(Dialog::Clean(c)) => {
            assert_eq!(c.hazards.len(), 1, "the mutex corpse; never a claim");
            assert!(c.hazards[0].path().ends_with("node%3Abeta.lock.recovery.d"));
        }
        other => panic!("{other:?}"),
    }
    assert!(render(&app).contains("node%3Abeta.lock.recovery.d"));
    assert!(ops().is_empty());
    update(&mut app, key('y'));
    assert_eq!(ops(), [Verb::Clean]);

    let mut ro = fixed_app(80, 24);
    ro.read_only = true;
    update(&mut ro, key('x'));
    assert!(ro.modes.dialog().is_none(), "read-only refuses it");
}

#[test]
fn x_on_a_selected_hazard_entry_asks_about_that_entry_alone_and_cleans_only_it() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('h'));
    // The list opens on its most urgent entry, a corrupted claim: no litter.
    let first = app.selected_hazard().map(|h| h.kind.name().to_string());
    assert_eq!(first.as_deref(), Some("corrupted_claim"));
    update(&mut app, key('x'));
    assert!(app.modes.dialog().is_none());
    let said = said(&app);
    assert!(said.contains("not abandoned litter"), "{said}");
    while app.selected_hazard().is_some_and(|h| !h.kind.cleanable()) {
        update(&mut app, key('j'));
    }
    let chosen = app.selected_hazard().expect("the corpse");
    update(&mut app, key('x'));
    match app.modes.dialog() {
        Some(Dialog::CleanOne(h)) => assert_eq!(**h, chosen),
        other => panic!("the one entry's question, not the root's: {other:?}"),
    }
    let screen = render(&app);
    assert!(screen.contains("clean one entry"), "{screen}");
    assert!(screen.contains("node%3Abeta.lock.recovery.d"), "{screen}");
    assert!(screen.contains("nothing else under the root"), "{screen}");
    assert!(ops().is_empty());
    update(&mut app, key('y'));
    assert_eq!(ops(), [Verb::CleanOne(Box::new(chosen))]);
}

#[test]
fn the_hazards_list_selects_with_j_and_k_and_enter_goes_to_the_row_or_says_where_the_file_is() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('G'));
    update(&mut app, key('h'));
    assert!(
        render(&app).contains("▶corrupted_claim"),
        "the first is selected"
    );
    update(&mut app, code(KeyCode::Enter));
    assert!(
        app.modes.overlay().is_none(),
        "the list gave way to the row"
    );
    assert_eq!(selected_key(&app), "broken");
    assert_eq!(app.focus, Pane::Table);

    update(&mut app, key('h'));
    update(&mut app, key('j'));
    let h = app.selected_hazard().expect("a second entry");
    assert_eq!(h.kind.name(), "stale_mutex");
    assert!(render(&app).contains("▶stale_mutex"));
    update(&mut app, key('k'));
    update(&mut app, key('j'));
    update(&mut app, code(KeyCode::Enter));
    let said = said(&app);
    assert!(
        said.starts_with("stale_mutex: ") && said.contains("node%3Abeta.lock.recovery.d"),
        "{said}"
    );
}

#[test]
fn the_clean_one_op_removes_that_entry_alone_and_refuses_one_that_changed_since_listed() {
    let (_td, root) = temp_root();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(300);
    let corpse = |key: &str| {
        let m = root.claims_dir().join(format!("{key}.lock.recovery.d"));
        std::fs::create_dir_all(&m).expect("mkdir");
        std::fs::File::open(&m)
            .and_then(|f| f.set_modified(old))
            .expect("age");
        m
    };
    let (a, b) = (corpse("a"), corpse("b"));
    let listed = |m: &std::path::Path| {
        claimtop::claims::Hazard::at_path(
            claimtop::claims::hazard::STALE_MUTEX,
            m.to_path_buf(),
            "listed".into(),
        )
    };
    let r = run_op(&root, &Verb::CleanOne(Box::new(listed(&a))));
    assert!(r.ok, "{}", r.message);
    assert!(r.message.contains("a.lock.recovery.d"), "{}", r.message);
    assert!(!a.exists());
    assert!(b.exists(), "the other corpse is left");

    // Taken again since it was listed: a young mutex, someone's recovery.
    std::fs::remove_dir(&b).expect("rmdir");
    std::fs::create_dir(&b).expect("mkdir");
    let r = run_op(&root, &Verb::CleanOne(Box::new(listed(&b))));
    assert!(!r.ok);
    assert!(
        r.message.contains("changed since it was listed"),
        "{}",
        r.message
    );
    assert!(b.exists(), "nothing removed");
}

#[test]
fn the_clean_op_is_doctor_fix_and_says_what_it_removed() {
    let (_td, root) = temp_root();
    write_claim(&root, &rec("a", "pty:w", DEAD, 90 * MIN, None));
    let mutex = root.claims_dir().join("a.lock.recovery.d");
    std::fs::create_dir(&mutex).expect("mkdir");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(300);
    std::fs::File::open(&mutex)
        .and_then(|f| f.set_modified(old))
        .expect("age");
    let r = run_op(&root, &Verb::Clean);
    assert!(r.ok, "{}", r.message);
    assert!(
        r.message.contains("removed 1: a.lock.recovery.d"),
        "{}",
        r.message
    );
    assert!(!mutex.exists());
    assert!(
        root.lockfile("a").exists(),
        "the stale claim itself is left"
    );
}

fn click(app: &mut App, x: u16, y: u16) -> bool {
    use ratatui::crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    update(
        app,
        Action::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: x,
            row: y,
            modifiers: KeyModifiers::NONE,
        }),
    )
    .redraw
}

fn wheel(app: &mut App, x: u16, y: u16, down: bool) -> bool {
    use ratatui::crossterm::event::{KeyModifiers, MouseEvent, MouseEventKind};
    let kind = if down {
        MouseEventKind::ScrollDown
    } else {
        MouseEventKind::ScrollUp
    };
    update(
        app,
        Action::Mouse(MouseEvent {
            kind,
            column: x,
            row: y,
            modifiers: KeyModifiers::NONE,
        }),
    )
    .redraw
}

#[test]
fn a_click_selects_a_row_or_a_pane_and_a_title_click_sorts() {
    let mut app = fixed_app(160, 48);
    let screen = render(&app);
    let (y, _) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("node:alpha"))
        .expect("row");
    assert!(click(&mut app, 20, y as u16));
    assert_eq!(selected_key(&app), "node:alpha");

    let (hy, header) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("holder") && l.contains("state"))
        .expect("header");
    let hx = header[..header.find("holder").expect("holder")]
        .chars()
        .count() as u16;
    assert!(click(&mut app, hx + 1, hy as u16));
    assert_eq!(app.table.sort.column, ColumnId::Holder);
    assert!(!app.table.sort.reverse);
    click(&mut app, hx + 1, hy as u16);
    assert!(app.table.sort.reverse, "a second click reverses");

    let events_y = screen
        .lines()
        .position(|l| l.starts_with("events"))
        .expect("events pane") as u16;
    assert!(click(&mut app, 5, events_y + 1));
    assert_eq!(app.focus, Pane::Events);
}

#[test]
fn the_wheel_scrolls_what_is_under_the_pointer() {
    let mut app = fixed_app(160, 48);
    select(&mut app, "broken");
    let first = selected_key(&app);
    assert!(wheel(&mut app, 20, 5, true));
    assert_ne!(selected_key(&app), first);
    assert_eq!(app.focus, Pane::Table);
    let mut small = fixed_app(80, 24);
    update(&mut small, key('?'));
    wheel(&mut small, 20, 10, true);
    assert!(
        small.modes.overlay_scroll() > 0,
        "the help scrolls under the wheel"
    );
}

#[test]
fn a_claim_acquired_here_is_selected_when_it_arrives() {
    let (_td, root) = temp_root();
    for k in ["a", "b", "c"] {
        write_claim(&root, &rec(k, "pty:w", ALIVE, MIN, None));
    }
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    assert_eq!(selected_key(&app), "a");
    let path = write_claim(&root, &rec("b2", OPERATOR, ALIVE, 0, Some(10 * MIN)));
    update(
        &mut app,
        Action::OpResult(claimtop::dashboard::testing::OpResult {
            verb: "acquire",
            key: "b2".into(),
            root: 0,
            ok: true,
            message: "acquired b2".into(),
        }),
    );
    collect(&mut app, &mut col, changed(&root, vec![path]));
    assert_eq!(selected_key(&app), "b2");
}

#[test]
fn a_first_look_explains_the_symbols_until_the_help_is_opened() {
    let mut app = fixed_app(160, 48);
    assert!(render(&app).contains("◐ suspect: TTL runs, holder gone"));
    update(&mut app, key('?'));
    update(&mut app, code(KeyCode::Esc));
    let screen = render(&app);
    assert!(!screen.contains("TTL runs, holder gone"), "{screen}");
    assert!(screen.contains("you are operator:op@here"), "{screen}");
}

#[test]
fn the_help_opens_on_its_legend_of_states() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('?'));
    let screen = render(&app);
    assert!(screen.contains("What the states mean"), "{screen}");
    assert!(screen.contains("the next acquire reclaims it"), "{screen}");
}

#[test]
fn the_header_counts_a_broken_events_log_and_says_so_beside_it() {
    let (_td, root) = temp_root();
    std::fs::create_dir_all(root.claims_dir()).unwrap();
    std::fs::create_dir(root.events_file()).unwrap();
    let mut app = app_at(root.clone());
    // Wide enough for two temp paths and the mark after them.
    update(&mut app, Action::Resize(220, 24));
    let mut c = collector(&root);
    collect(&mut app, &mut c, Input::Relist);
    let screen = render(&app);
    let header = line_with(&screen, "claimtop");
    assert!(header.contains("⚠ 1 hazard"), "{header}");
    let events = line_with(&screen, "events");
    assert!(events.contains("broken: events lost"), "{events}");

    // Moved aside: the next sweep clears both.
    std::fs::remove_dir(root.events_file()).unwrap();
    collect(&mut app, &mut c, Input::Relist);
    let screen = render(&app);
    assert!(
        line_with(&screen, "claimtop").contains("⚠ 0 hazards"),
        "{screen}"
    );
    assert!(!screen.contains("events lost"), "{screen}");
}

#[test]
fn a_big_roots_first_screen_is_titled_as_listing_until_its_whole_listing_replaces_it() {
    let root = fixed_root();
    let mut app = app_at(root.clone());
    update(&mut app, Action::Resize(160, 48));
    let listing = |keys: &[&str]| {
        let claims: Vec<_> = keys
            .iter()
            .map(|k| status_of(&root, rec(k, "pty:w", ALIVE, MIN, None)))
            .collect();
        claimtop::store::MemberListing::of_sweep(
            claimtop::claims::Sweep {
                root: root.root.clone(),
                claims,
                counts: Default::default(),
                hazards: Vec::new(),
            },
            claimtop::claims::ItemRules::Lockfile,
        )
    };
    assert!(update(&mut app, head(listing(&["a"]), NOW)).redraw);
    assert_eq!(row_keys(&app), ["a"]);
    assert!(
        render(&app).contains("listing the root: its first 1 claims so far"),
        "{}",
        render(&app)
    );
    assert!(update(&mut app, listed(listing(&["a", "b"]), NOW, None)).redraw);
    assert_eq!(row_keys(&app), ["a", "b"]);
    assert!(!render(&app).contains("listing the root"));
}

#[test]
fn the_as_of_table_says_when_a_tenure_ended_in_a_time_that_fits() {
    use claimtop::events::asof::held_at;
    use claimtop::events::tenure::{Limits, TenureIndex};
    let mut app = fixed_app(80, 24);
    // 23:00 the day before NOW (08:00).
    update(&mut app, key(':'));
    type_text(&mut app, "asof 9h");
    update(&mut app, code(KeyCode::Enter));
    let at = NOW - 9 * 60 * MIN;
    let mut ix = TenureIndex::new(Limits::default());
    for (kind, ms, key, holder, acq) in [
        ("claim_acquired", at - 30 * MIN, "a", "w1", at - 30 * MIN),
        ("claim_released", at + 30 * MIN, "a", "w1", at - 30 * MIN),
        ("claim_acquired", at - 60 * MIN, "b", "w2", at - 60 * MIN),
        ("claim_released", NOW - 5 * MIN, "b", "w2", at - 60 * MIN),
    ] {
        ix.apply_line(&claim_line(kind, ms, key, holder, acq));
    }
    update(
        &mut app,
        Action::Log(Box::new(Reply::AsOf {
            at,
            answer: claimtop::events::asof::Answer {
                rows: held_at(&ix, at),
                complete: true,
                span: ix.span(),
            },
            trouble: None,
        })),
    );
    let screen = render(&app);
    // Yesterday's end with its date, today's with its time alone: both
    // whole in an 80-column table.
    assert!(screen.contains("released at 01-14 23:30Z"), "{screen}");
    assert!(screen.contains("released at 07:55:00Z"), "{screen}");
}
