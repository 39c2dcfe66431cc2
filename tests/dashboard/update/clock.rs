//! What the clock alone changes: TTLs crossing, dying holders, reused pids,
//! countdowns and the header clock, a mutex corpse coming of age.

use super::*;

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
