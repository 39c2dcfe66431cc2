//! The watcher and the events follower against a real directory: what
//! messages a change on disk turns into. Waits are upper bounds for a slow
//! machine, not timing assertions.

use crate::common::*;
use claimtop::dashboard::collect::Input;
use claimtop::dashboard::watch::{follow_events, watch};
use claimtop::dashboard::Action;
use std::io::Write;
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(20);

/// The first message `want` accepts, skipping others, within [`PATIENCE`].
fn wait_for<T>(rx: &Receiver<T>, want: impl Fn(&T) -> bool) -> Option<T> {
    let deadline = Instant::now() + PATIENCE;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(a) if want(&a) => return Some(a),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

#[test]
fn a_claims_dir_that_appears_later_is_picked_up_and_a_new_lockfile_is_named_alone() {
    let (_td, root) = temp_root();
    let (tx, rx) = channel();
    let (poke_tx, _poke_rx) = channel();
    let r = root.clone();
    std::thread::spawn(move || watch(r, tx, poke_tx));
    // Let the watcher register before the directory appears.
    std::thread::sleep(Duration::from_millis(300));
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    assert!(
        wait_for(&rx, |a| matches!(a, Input::Rescan)).is_some(),
        "no rescan when the claims dir appeared"
    );
    // Now watched directly: a new lockfile arrives as exactly its path.
    std::thread::sleep(Duration::from_millis(300));
    let path = write_claim(&root, &rec("late", "pty:w", ALIVE, MIN, None));
    let got = wait_for(&rx, |a| matches!(a, Input::Changed(_)));
    match got {
        Some(Input::Changed(paths)) => assert_eq!(paths, vec![path]),
        other => panic!("expected Changed, got {other:?}"),
    }
}

#[test]
fn the_follower_sends_the_tail_then_each_appended_line() {
    let (_td, root) = temp_root();
    let log = root.events_file();
    std::fs::create_dir_all(log.parent().expect("parent")).expect("dir");
    std::fs::write(&log, "{\"type\":\"old\"}\n").expect("write");
    let (tx, rx) = channel();
    let (poke_tx, poke_rx) = channel();
    std::thread::spawn(move || follow_events(log, tx, poke_rx));
    match wait_for(&rx, |a| matches!(a, Action::EventsAppended(_))) {
        Some(Action::EventsAppended(lines)) => assert_eq!(lines[0].text, "{\"type\":\"old\"}"),
        other => panic!("{other:?}"),
    }
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(root.events_file())
        .expect("open");
    f.write_all(b"{\"type\":\"new\"}\n{\"type\":\"partial")
        .expect("append");
    poke_tx.send(()).expect("poke");
    match wait_for(&rx, |a| matches!(a, Action::EventsAppended(_))) {
        Some(Action::EventsAppended(lines)) => {
            let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
            assert_eq!(texts, ["{\"type\":\"new\"}"], "the partial line waits");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_events_path_that_is_a_directory_is_reported_not_fatal() {
    let (_td, root) = temp_root();
    std::fs::create_dir_all(root.events_file()).expect("dir at the log path");
    let (tx, rx) = channel();
    let (_poke_tx, poke_rx) = channel();
    let log = root.events_file();
    std::thread::spawn(move || follow_events(log, tx, poke_rx));
    match wait_for(&rx, |a| matches!(a, Action::EventsError(_))) {
        Some(Action::EventsError(e)) => assert!(e.contains("not a regular file"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_claims_dir_replaced_under_the_same_name_asks_for_a_rescan_and_is_watched_anew() {
    let (_td, root) = temp_root();
    write_claim(&root, &rec("old", "pty:w", ALIVE, MIN, None));
    let (tx, rx) = channel();
    let (poke_tx, _poke_rx) = channel();
    let r = root.clone();
    std::thread::spawn(move || watch(r, tx, poke_tx));
    std::thread::sleep(Duration::from_millis(300));
    let aside = root.root.join("claims.old");
    std::fs::rename(root.claims_dir(), &aside).expect("rename away");
    std::fs::create_dir(root.claims_dir()).expect("new dir");
    assert!(
        wait_for(&rx, |a| matches!(a, Input::Rescan)).is_some(),
        "no rescan when the claims dir was replaced"
    );
    // Drain what the replacement itself caused, then a write in the new dir
    // must still be seen.
    std::thread::sleep(Duration::from_millis(300));
    while rx.try_recv().is_ok() {}
    let path = write_claim(&root, &rec("new", "pty:w", ALIVE, MIN, None));
    match wait_for(&rx, |a| matches!(a, Input::Changed(_))) {
        Some(Input::Changed(paths)) => assert_eq!(paths, vec![path]),
        other => panic!("the new claims dir is not watched: {other:?}"),
    }
}
