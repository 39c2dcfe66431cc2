//! A file root's change feed, as the dashboard consumes it, against a real
//! directory: what requests and messages a change on disk turns into.
//! Waits are upper bounds for a slow machine, not timing assertions.

use crate::common::*;
use claimtop::claims::Root;
use claimtop::dashboard::collect::{forward_feed, Input, FEED};
use claimtop::dashboard::Action;
use claimtop::store::file::FileStore;
use claimtop::store::Store;
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

/// The dashboard's feed over `root`, drained as the live app drains it:
/// the collector's requests, and the events pane's messages.
fn readers(root: &Root) -> (Receiver<Input>, Receiver<Action>) {
    let (collect_tx, collect_rx) = channel();
    let (events_tx, events_rx) = channel();
    let feed = FileStore::new(root.clone())
        .with_feed(FEED)
        .changes()
        .expect("feed");
    let r = root.clone();
    std::thread::spawn(move || forward_feed(feed, r, collect_tx, events_tx));
    (collect_rx, events_rx)
}

#[test]
fn a_claims_dir_that_appears_later_is_picked_up_and_a_new_lockfile_is_named_alone() {
    let (_td, root) = temp_root();
    let (rx, _events) = readers(&root);
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
fn the_feed_brings_the_tail_then_each_appended_line() {
    let (_td, root) = temp_root();
    let log = root.events_file();
    std::fs::create_dir_all(log.parent().expect("parent")).expect("dir");
    std::fs::write(&log, "{\"type\":\"old\"}\n").expect("write");
    let (_rx, events) = readers(&root);
    match wait_for(&events, |a| matches!(a, Action::EventsAppended(_))) {
        Some(Action::EventsAppended(lines)) => assert_eq!(lines[0].text, "{\"type\":\"old\"}"),
        other => panic!("{other:?}"),
    }
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(root.events_file())
        .expect("open");
    f.write_all(b"{\"type\":\"new\"}\n{\"type\":\"partial")
        .expect("append");
    match wait_for(&events, |a| matches!(a, Action::EventsAppended(_))) {
        Some(Action::EventsAppended(lines)) => {
            let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
            assert_eq!(texts, ["{\"type\":\"new\"}"], "the partial line waits");
            assert_eq!(lines[0].offset, 15, "each line keeps its offset");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_events_path_that_is_a_directory_is_reported_not_fatal() {
    let (_td, root) = temp_root();
    std::fs::create_dir_all(root.events_file()).expect("dir at the log path");
    let (_rx, events) = readers(&root);
    match wait_for(&events, |a| matches!(a, Action::EventsError(_))) {
        Some(Action::EventsError(e)) => assert!(e.contains("not a regular file"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_claims_dir_replaced_under_the_same_name_asks_for_a_rescan_and_is_watched_anew() {
    let (_td, root) = temp_root();
    write_claim(&root, &rec("old", "pty:w", ALIVE, MIN, None));
    let (rx, _events) = readers(&root);
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

#[test]
fn a_recovery_mutex_that_comes_and_goes_is_named_by_its_own_path() {
    let (_td, root) = temp_root();
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    let (rx, _events) = readers(&root);
    std::thread::sleep(Duration::from_millis(300));
    let mutex = claimtop::claims::recovery_mutex_path(&root.lockfile("k"));
    std::fs::create_dir(&mutex).expect("mutex");
    match wait_for(&rx, |a| matches!(a, Input::Changed(_))) {
        Some(Input::Changed(paths)) => assert_eq!(paths, vec![mutex.clone()]),
        other => panic!("the mutex went unnoticed: {other:?}"),
    }
    std::fs::remove_dir(&mutex).expect("rmdir");
    match wait_for(&rx, |a| matches!(a, Input::Changed(_))) {
        Some(Input::Changed(paths)) => assert_eq!(paths, vec![mutex]),
        other => panic!("the mutex's removal went unnoticed: {other:?}"),
    }
}
