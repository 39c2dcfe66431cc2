//! A file root's change feed, as the dashboard watches it, against a real
//! directory: what changes a change on disk turns into, burst by burst, and
//! what the live timeline and model make of them.
//! Waits are upper bounds for a slow machine, not timing assertions.

use crate::common::*;
use claimtop::claims::now_ms;
use claimtop::claims::Root;
use claimtop::dashboard::testing::{readers_of_root, update, Action, App, RootProblem, Timeline};
use claimtop::events::service::Reply;
use claimtop::events::tenure::{Limits, TenureIndex};
use claimtop::store::file::FileStore;
use claimtop::store::Change;
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

/// The dashboard's feed over `root`, drained as the live app drains it: a
/// burst at a time.
fn readers(root: &Root) -> Receiver<Vec<Change>> {
    let (tx, rx) = channel();
    let store = FileStore::new(root.clone());
    let mut feed = claimtop::store::Feed::changes(&store, None).expect("feed");
    std::thread::spawn(move || loop {
        let Ok(Some(first)) = feed.next(Duration::from_secs(60)) else {
            continue;
        };
        // A burst settles before it is read (the lanes' debounce), for at
        // most the lanes' longest wait.
        let mut batch = vec![first];
        let cap = Instant::now() + Duration::from_millis(400);
        while Instant::now() < cap {
            match feed.next(claimtop::store::file::feed::DEBOUNCE) {
                Ok(Some(c)) => batch.push(c),
                _ => break,
            }
        }
        if tx.send(batch).is_err() {
            return;
        }
    });
    rx
}

/// The keys and entry paths a burst names, in order, each once (the
/// mirror reads a key named twice in one burst once).
fn named(batch: &[Change]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in batch.iter().filter_map(|c| match c {
        Change::Claim { key } => Some(key.clone()),
        Change::Entry { path, .. } => Some(path.to_string_lossy().into_owned()),
        _ => None,
    }) {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The root's log as the events pane follows it (`Audit::follow`), from
/// its first line: the first lines it brings.
fn first_lines(root: &Root) -> Vec<claimtop::events::tail::Line> {
    use claimtop::store::{Audit, Cursor, LogNews};
    let store = FileStore::new(root.clone());
    let mut feed = store.follow(Some(&Cursor::start())).expect("the log feed");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no line came");
        if let Ok(Some(LogNews::Lines { lines, .. })) = feed.next(left) {
            return lines;
        }
    }
}

fn resync(batch: &[Change]) -> bool {
    batch
        .iter()
        .any(|c| matches!(c, Change::Relist { why: Some(_) }))
}

fn names_something(batch: &[Change]) -> bool {
    !named(batch).is_empty()
}

#[test]
fn a_claims_dir_that_appears_later_is_picked_up_and_a_new_lockfile_is_named_alone() {
    let (_td, root) = temp_root();
    let rx = readers(&root);
    // Let the watcher register before the directory appears.
    std::thread::sleep(Duration::from_millis(300));
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    assert!(
        wait_for(&rx, |b| resync(b)).is_some(),
        "no resync when the claims dir appeared"
    );
    // Now watched directly: a new lockfile arrives as exactly its key.
    std::thread::sleep(Duration::from_millis(300));
    write_claim(&root, &rec("late", "pty:w", ALIVE, MIN, None));
    let got = wait_for(&rx, |b| names_something(b)).expect("the new lockfile went unnoticed");
    assert_eq!(named(&got), ["late"]);
}

#[test]
fn a_lockfile_another_encoder_named_asks_for_a_listing_not_a_read_of_its_key() {
    let (_td, root) = temp_root();
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    let rx = readers(&root);
    std::thread::sleep(Duration::from_millis(300));
    // `%61` decodes to `a`, whose own lockfile is `a.lock`: a read of the
    // key would never find this one.
    let r = rec("a", "pty:w", ALIVE, MIN, None);
    let odd = root.claims_dir().join("%61.lock");
    std::fs::write(&odd, r.to_yaml().expect("yaml")).expect("write");
    let relist = |b: &Vec<Change>| b.contains(&Change::Relist { why: None });
    let got = wait_for(&rx, relist).expect("the misnamed lockfile went unnoticed");
    assert!(!named(&got).contains(&"a".to_string()), "{got:?}");
    assert!(!resync(&got), "nothing was lost: {got:?}");
}

#[test]
fn the_log_brings_the_tail_then_each_appended_line() {
    use claimtop::store::{Audit, LogNews};
    let (_td, root) = temp_root();
    let log = root.events_file();
    std::fs::create_dir_all(log.parent().expect("parent")).expect("dir");
    std::fs::write(&log, "{\"type\":\"old\"}\n").expect("write");
    // As the events pane opens: the log's last lines, then what follows.
    let store = FileStore::new(root.clone());
    let (tail, next) = store.tail(100).expect("the tail");
    assert_eq!(tail[0].1.text, "{\"type\":\"old\"}");
    let mut feed = store.follow(Some(&next)).expect("the log feed");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(root.events_file())
        .expect("open");
    f.write_all(b"{\"type\":\"new\"}\n{\"type\":\"partial")
        .expect("append");
    let deadline = Instant::now() + Duration::from_secs(20);
    let new = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "the appended line went unnoticed");
        if let Ok(Some(LogNews::Lines { lines, .. })) = feed.next(left) {
            break lines;
        }
    };
    let texts: Vec<&str> = new.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(texts, ["{\"type\":\"new\"}"], "the partial line waits");
    assert_eq!(new[0].offset, 15, "each line keeps its offset");
}

#[test]
fn an_events_path_that_is_a_directory_is_an_entry_of_the_feed_and_a_trouble_of_the_log() {
    use claimtop::store::Audit;
    let (_td, root) = temp_root();
    let log = root.events_file();
    std::fs::create_dir_all(&log).expect("dir at the log path");
    let rx = readers(&root);
    let look = |b: &Vec<Change>| {
        b.iter().find_map(|c| match c {
            Change::Entry { path, entry } if *path == log => Some(entry.is_some()),
            _ => None,
        })
    };
    let got = wait_for(&rx, |b| look(b).is_some()).expect("the log's shape went unsaid");
    assert_eq!(look(&got), Some(true), "looked at, there");
    // The log's own reader says what is wrong with it, in words.
    match FileStore::new(root.clone()).follow(None) {
        Err(e) => assert!(e.to_string().contains("not a regular file"), "{e}"),
        Ok(_) => panic!("a directory was followed as the log"),
    }
}

#[test]
fn a_claims_dir_replaced_under_the_same_name_asks_for_a_rescan_and_is_watched_anew() {
    let (_td, root) = temp_root();
    write_claim(&root, &rec("old", "pty:w", ALIVE, MIN, None));
    let rx = readers(&root);
    std::thread::sleep(Duration::from_millis(300));
    let aside = root.root.join("claims.old");
    std::fs::rename(root.claims_dir(), &aside).expect("rename away");
    std::fs::create_dir(root.claims_dir()).expect("new dir");
    assert!(
        wait_for(&rx, |b| resync(b)).is_some(),
        "no resync when the claims dir was replaced"
    );
    // Drain what the replacement itself caused, then a write in the new dir
    // must still be seen.
    std::thread::sleep(Duration::from_millis(300));
    while rx.try_recv().is_ok() {}
    write_claim(&root, &rec("new", "pty:w", ALIVE, MIN, None));
    let got = wait_for(&rx, |b| names_something(b)).expect("the new claims dir is not watched");
    assert_eq!(named(&got), ["new"]);
}

#[test]
fn a_recovery_mutex_that_comes_and_goes_is_named_by_its_own_path() {
    let (_td, root) = temp_root();
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    let rx = readers(&root);
    std::thread::sleep(Duration::from_millis(300));
    while rx.try_recv().is_ok() {}
    let mutex = claimtop::claims::recovery_mutex_path(&root.lockfile("k"));
    let look = |b: &Vec<Change>| {
        b.iter().find_map(|c| match c {
            Change::Entry { path, entry } if *path == mutex => Some(entry.is_some()),
            _ => None,
        })
    };
    std::fs::create_dir(&mutex).expect("mutex");
    let got = wait_for(&rx, |b| look(b).is_some()).expect("the mutex went unnoticed");
    assert_eq!(look(&got), Some(true), "looked at, there");
    std::fs::remove_dir(&mutex).expect("rmdir");
    let got = wait_for(&rx, |b| look(b).is_some()).expect("its removal went unnoticed");
    assert_eq!(look(&got), Some(false), "looked at, gone");
}

#[test]
fn a_claim_line_longer_than_the_cut_still_makes_its_tenure_on_the_live_timeline() {
    let (_td, root) = temp_root();
    let log = root.events_file();
    std::fs::create_dir_all(log.parent().expect("parent")).expect("dir");
    std::fs::write(&log, "").expect("an empty log");
    let now = claimtop::claims::now_ms();
    let mut tl = Timeline::new(now);
    tl.on_reply(&mut Reply::Indexed {
        tenures: Box::new(TenureIndex::new(Limits::default())),
        lines: 0,
        end: 0,
        file_id: None,
    });
    // 120 kB: past the follower's 64 KiB cut, with the key and holder
    // after the reason, where the cut text no longer reaches.
    let fat = format!(
        r#"{{"ts":"2026-12-01T05:00:00Z","type":"claim_acquired","source":"fno-loop","data":{{"reason":"{}","key":"fat","holder":"pty:w","acquired_at":{now}}}}}"#,
        "r".repeat(120_000)
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .expect("open");
    f.write_all(format!("{fat}\n").as_bytes()).expect("append");
    let got = first_lines(&root);
    assert!(got[0].truncated, "the line is cut for the pane");
    assert!(tl.on_lines(&got), "nothing applied");
    let t = tl.tenures.as_ref().expect("tenures");
    let held = t.tenures_of("fat");
    assert_eq!(held.len(), 1, "the tenure of the long line");
    assert!(held[0].is_held());
    assert_eq!(held[0].start, now);
    assert_eq!(t.holder_name(held[0].holder), "pty:w");
}

/// Apply every action waiting (the live loop's batch) until `done` holds;
/// how long that took. Panics after [`PATIENCE`].
fn until(
    app: &mut App,
    rx: &Receiver<Action>,
    what: &str,
    done: impl Fn(&App) -> bool,
) -> Duration {
    let t = Instant::now();
    while !done(app) {
        let left = PATIENCE.checked_sub(t.elapsed());
        let Some(first) = left.and_then(|l| rx.recv_timeout(l).ok()) else {
            panic!("{what}: not within {PATIENCE:?}");
        };
        update(app, first);
        for a in rx.try_iter().take(512) {
            update(app, a);
        }
    }
    t.elapsed()
}

#[test]
fn a_root_renamed_away_reads_missing_within_seconds_and_its_claims_return_when_moved_back() {
    let td = tempfile::tempdir().expect("tempdir");
    let dir = td.path().join("R");
    let root = Root::with_events_here(&dir);
    let held = write_claim(&root, &rec("held", "pty:w", ALIVE, MIN, None));
    let mut app = App::new(opts(root.clone()), now_ms(), me(), OPERATOR.into());
    let (tx, rx) = channel();
    let _inbox = readers_of_root(&root, &tx).expect("readers");
    until(&mut app, &rx, "the first listing", |a| {
        a.claims.live.get_path(&held).is_some()
    });
    // The feed watches once a claim written now reaches the table.
    let late = write_claim(&root, &rec("late", "pty:w", ALIVE, MIN, None));
    until(&mut app, &rx, "a claim written after start", |a| {
        a.claims.live.get_path(&late).is_some()
    });
    let aside = td.path().join("R.gone");
    std::fs::rename(&dir, &aside).expect("rename away");
    let away = until(
        &mut app,
        &rx,
        "the root renamed away read as missing",
        |a| {
            matches!(a.origins.problem(0), Some(RootProblem::Missing(_)))
                && a.claims.live.get_path(&held).is_none()
        },
    );
    std::fs::rename(&aside, &dir).expect("rename back");
    let back = until(&mut app, &rx, "the root moved back read again", |a| {
        a.origins.problem(0).is_none() && a.claims.live.get_path(&held).is_some()
    });
    eprintln!("renamed away → root missing in {away:?}; moved back → its claims in {back:?}");
}
