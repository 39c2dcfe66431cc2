//! One count everywhere: over a real root, the dashboard's header, its `h`
//! list and `x`'s offer say what `doctor` and `list` say, through every
//! change that used to make them part ways — an unreadable lockfile, a
//! corpse stolen by a force-release, a corpse replaced by a fresh mutex —
//! and a claim whose record names another key never reads healthy.

use crate::common::*;
use claimtop::claims::{self, ForceOpts, Hazard, LocalIdentity, Root};
use claimtop::dashboard::testing::Input;
use claimtop::dashboard::testing::{update, Action, App};
use claimtop::store::mirror::judge::Judge;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Ask the collector for `input` at the wall clock, and apply what it says.
fn collect_now(app: &mut App, c: &mut Collector, input: Input) {
    for a in c
        .handle(input, claims::now_ms())
        .expect("the collector's reads")
    {
        update(app, heard(a));
    }
}

/// The dashboard over `root` as this machine sees it (so that `doctor`,
/// which judges with this machine's identity, judges alike), after its
/// first sweep.
fn dashboard(root: &Root) -> (App, Collector) {
    let now = claims::now_ms();
    let mut app = App::new(
        opts(root.clone()),
        now,
        LocalIdentity::current(),
        OPERATOR.into(),
    );
    update(&mut app, Action::Resize(160, 48));
    let mut col = collector_judged(root, 0, Judge::local(), now);
    collect_now(&mut app, &mut col, Input::Relist);
    (app, col)
}

/// (kind, path) of each hazard, sorted: what must agree, whatever order
/// a face lists them in.
fn kinds_at(hazards: &[Hazard]) -> Vec<(&str, PathBuf)> {
    let mut v: Vec<_> = hazards
        .iter()
        .map(|h| (h.kind.name(), h.path().to_path_buf()))
        .collect();
    v.sort();
    v
}

/// The header, `h` and `doctor` agree on every hazard, and the header's
/// counts are `list`'s.
fn assert_agrees_with_doctor(app: &App, root: &Root) {
    let doctor = claims::doctor(root);
    let listed = claims::sweep(root).counts;
    assert_eq!(
        kinds_at(&app.hazards()),
        kinds_at(&doctor),
        "h against doctor"
    );
    assert_eq!(
        app.hazard_count(),
        doctor.len(),
        "the header against doctor"
    );
    assert_eq!(app.counted(), listed, "the header against list");
}

/// A lockfile past the read cap: `unreadable`, and so held.
fn plant_unreadable(root: &Root, key: &str) {
    let mut text = format!("schema_version: 1\nkey: {key}\nholder: h\nreason: ");
    text.push_str(&"a".repeat(2 * 1024 * 1024));
    plant_bytes(root, key, text.as_bytes());
}

/// A recovery mutex whose holder was killed ten minutes ago.
fn plant_corpse(root: &Root, key: &str) -> PathBuf {
    let mutex = claims::recovery_mutex_path(&root.lockfile(key));
    std::fs::create_dir_all(&mutex).expect("mkdir the mutex");
    std::fs::write(mutex.join("owner"), "elsewhere:1:1").expect("owner");
    claimtop::mutex::backdate(&mutex, 600).expect("age the mutex");
    mutex
}

#[test]
fn an_unreadable_lockfile_is_one_hazard_in_the_header_in_h_and_in_doctor() {
    let (_td, root) = temp_root();
    plant_unreadable(&root, "big");
    plant_bytes(&root, "corr", b"garbage: [\n");
    plant_corpse(&root, "corr");
    let (app, _col) = dashboard(&root);
    let unreadable = app
        .hazards()
        .iter()
        .filter(|h| h.kind == claimtop::claims::hazard::UNREADABLE)
        .count();
    assert_eq!(unreadable, 1, "listed once: {:?}", app.hazards());
    assert_eq!(app.hazard_count(), 3);
    assert_agrees_with_doctor(&app, &root);
}

#[test]
fn the_header_counts_unreadable_claims_and_keeps_the_hazard_count_at_80_columns() {
    let (_td, root) = temp_root();
    plant_unreadable(&root, "big");
    let (mut app, _col) = dashboard(&root);
    let screen = render(&app);
    let header = screen.lines().next().unwrap_or_default();
    assert!(header.contains("? 1 unreadable"), "{header}");
    assert!(header.contains("⚠ 1 hazard"), "{header}");
    update(&mut app, Action::Resize(80, 24));
    update(&mut app, key('p'));
    let screen = render(&app);
    let header = screen.lines().next().unwrap_or_default();
    assert!(
        header.contains("? 1") && header.contains("⚠ 1 hazard"),
        "narrow, the words go and the counts stay: {header}"
    );
}

#[test]
fn a_corpse_a_force_release_steals_leaves_the_header_h_and_x_at_once() {
    let (_td, root) = temp_root();
    let mut holder = Sleeper::spawn();
    let opts = claims::AcquireOpts {
        pid: Some(holder.pid()),
        ..Default::default()
    };
    must_acquire(&root, "k", "w", &opts);
    plant_corpse(&root, "k");
    plant_corpse(&root, "other");
    let (mut app, mut col) = dashboard(&root);
    assert_eq!(app.hazard_count(), 2);

    // The root's one feed, as the dashboard follows it.
    let mut feed =
        claimtop::store::Feed::changes(&claimtop::store::file::FileStore::new(root.clone()), None)
            .expect("the feed");
    // Let the watcher register before anything moves.
    std::thread::sleep(Duration::from_millis(300));
    holder.kill();
    let forced = claims::force_release(&root, "k", &ForceOpts::default()).expect("force");
    assert!(matches!(forced, claims::ForceOutcome::Archived { .. }));
    assert!(!claims::recovery_mutex_path(&root.lockfile("k")).exists());

    // Whatever the feed says, as it says it, until it is quiet; a re-read
    // of everything would hide what the reads alone miss.
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        match feed.next(Duration::from_millis(800)) {
            Ok(Some(claimtop::store::Change::Relist { .. })) => {}
            Ok(Some(change)) => collect_now(&mut app, &mut col, Input::Feed(vec![change])),
            _ => break,
        }
    }
    assert_eq!(app.hazard_count(), 1, "{:?}", app.hazards());
    assert_agrees_with_doctor(&app, &root);
    update(&mut app, key('x'));
    let screen = render(&app);
    assert!(
        screen.contains("removes 1 abandoned entry") && !screen.contains("k.lock.recovery.d"),
        "x offers the one corpse left: {screen}"
    );
    update(&mut app, code(ratatui::crossterm::event::KeyCode::Esc));
    update(&mut app, key('h'));
    update(&mut app, key('x'));
    let screen = render(&app);
    assert!(
        screen.contains("other.lock.recovery.d") && !screen.contains("k.lock.recovery.d"),
        "x on the h list's one entry offers the corpse left: {screen}"
    );
}

#[test]
fn a_corpse_made_afresh_as_a_young_mutex_is_no_hazard_any_more() {
    let (_td, root) = temp_root();
    let mutex = plant_corpse(&root, "k");
    let (mut app, mut col) = dashboard(&root);
    assert_eq!(app.hazard_count(), 1);
    // Stolen and taken again by a live recoverer: same name, young.
    std::fs::remove_file(mutex.join("owner")).expect("rm owner");
    std::fs::remove_dir(&mutex).expect("rmdir");
    std::fs::create_dir(&mutex).expect("mkdir afresh");
    collect_now(&mut app, &mut col, changed(&root, vec![mutex]));
    assert_eq!(app.hazard_count(), 0);
    assert_agrees_with_doctor(&app, &root);
}

#[test]
fn a_claim_whose_record_names_another_key_is_marked_in_its_row_and_its_why() {
    let (_td, root) = temp_root();
    // The holder is this very test process: alive, so the claim reads live.
    let rec = record(
        "other",
        "pty:w",
        std::process::id() as i32,
        claims::now_ms(),
    );
    let bytes = rec.to_yaml().expect("yaml");
    plant_bytes(&root, "mism", bytes.as_bytes());
    let (mut app, _col) = dashboard(&root);
    assert_agrees_with_doctor(&app, &root);
    select(&mut app, "mism");
    let screen = render(&app);
    let row = line_with(&screen, "● live");
    assert!(row.contains("mism ⚠"), "the row is marked: {row}");
    // The detail pane, right of its rule, its wrapped lines joined.
    let detail: Vec<&str> = screen
        .lines()
        .filter_map(|l| l.rsplit_once('│').map(|(_, r)| r.trim()))
        .collect();
    let flat = detail.join(" ");
    assert!(
        flat.contains("⚠ key_mismatch: the file is named for key \"mism\""),
        "the why says it: {screen}"
    );
}
