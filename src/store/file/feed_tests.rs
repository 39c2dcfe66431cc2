//! The file feed: where it waits, what it reports, and when it looks.

use super::*;

#[test]
fn a_missing_claims_dir_is_waited_for_at_its_nearest_ancestor() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    let feed = FileFeed::start(&root, FeedOpts::default());
    assert_eq!(
        feed.watched.into_iter().collect::<Vec<_>>(),
        vec![td.path().to_path_buf()]
    );
}

/// The log's entries the feed has queued, as the shapes they say.
fn log_entries(feed: &mut FileFeed) -> Vec<Option<crate::claims::entry::Shape>> {
    let log = feed.events_file.clone();
    let said = feed.pending.drain(..).filter_map(|c| match c {
        Change::Entry { path, entry } if path == log => Some(entry.map(|e| e.shape)),
        _ => None,
    });
    said.collect()
}

#[test]
fn an_append_to_the_log_is_no_entry_but_a_change_of_its_verdict_is() {
    use crate::claims::entry::Shape;
    use std::io::Write;
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    let log = root.events_file();
    std::fs::create_dir_all(log.parent().expect("a dir")).expect("mkdir");
    std::fs::write(&log, "{}\n").expect("write");
    let mut feed = FileFeed::start(&root, FeedOpts::default());
    assert_eq!(log_entries(&mut feed), [Some(Shape::File)], "the inventory");
    let start = std::time::SystemTime::now();
    for i in 1..=50u64 {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .expect("open");
        writeln!(f, "{{\"n\":{i}}}").expect("append");
        // Each append a second later: the log's time moves for sure.
        f.set_modified(start + Duration::from_secs(i))
            .expect("mtime");
        feed.log_shape();
    }
    assert_eq!(log_entries(&mut feed), [], "50 appends");
    // A torn last line is judged: said once, however often looked at.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(b"{\"torn"))
        .expect("torn append");
    feed.log_shape();
    feed.log_shape();
    assert_eq!(log_entries(&mut feed), [Some(Shape::File)], "torn");
    std::fs::remove_file(&log).expect("rm");
    std::fs::create_dir(&log).expect("mkdir");
    feed.log_shape();
    assert_eq!(log_entries(&mut feed), [Some(Shape::Dir)], "a directory");
    std::fs::remove_dir(&log).expect("rmdir");
    feed.log_shape();
    assert_eq!(log_entries(&mut feed), [None], "gone");
}

#[test]
fn a_caller_that_only_polls_with_no_timeout_is_still_told_of_a_change() {
    // `metrics` drains the feed with a zero timeout at each scrape: the
    // feed must hand over what arrived meanwhile, not only what a wait
    // would have received.
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    std::fs::create_dir_all(crate::claims::claims_dir(td.path())).expect("claims dir");
    let mut feed = FileFeed::start(&root, FeedOpts::key_only());
    let path = crate::claims::claim_path(td.path(), "k");
    std::fs::write(&path, "x").expect("write");
    let mut seen = Vec::new();
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(20));
        while let Ok(Some(c)) = feed.next(Duration::ZERO) {
            seen.push(c);
        }
        if !seen.is_empty() {
            break;
        }
    }
    assert!(
        seen.iter()
            .any(|c| matches!(c, Change::Claim { key } if key == "k")),
        "{seen:?}"
    );
}

#[test]
fn the_looks_due_soon_ride_on_a_waiting_callers_own_deadline() {
    // An idle publisher waits 2 s at a time; the feed's looks (the dirs
    // by name, the log's shape), due every second, must come along with
    // that wake rather than each waking the process a moment apart.
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    std::fs::create_dir_all(crate::claims::claims_dir(td.path())).expect("claims dir");
    let mut feed = FileFeed::start(&root, FeedOpts::default());
    assert!(feed.watch.is_some(), "inotify is needed for the dirs' look");
    while let Ok(Some(_)) = feed.next(Duration::ZERO) {}
    let start = Instant::now();
    // The feed's own look comes due about 1 s in; the caller's deadline
    // at 1.7 s, within half a second of the next one.
    let _ = feed.next(Duration::from_millis(1700));
    let rode = Duration::from_millis(1400);
    assert!(
        feed.dirs_checked >= start + rode,
        "the dirs were last looked at {:?} in, before the caller's deadline",
        feed.dirs_checked - start
    );
    let log = feed.log.as_ref().expect("the log's shape is followed");
    assert!(
        log.looked >= start + rode,
        "the log was last looked at {:?} in",
        log.looked - start
    );
    // A look due a moment before the caller's deadline waits for it: the
    // next is due 1 s after the last, the deadline 1.1 s.
    let again = Instant::now();
    let _ = feed.next(Duration::from_millis(1100));
    assert!(
        feed.dirs_checked >= again + Duration::from_millis(1050),
        "looked at {:?} in, apart from the caller's deadline",
        feed.dirs_checked - again
    );
    // A short wait (a busy caller) carries none: looks stay half a second
    // apart at least.
    let before = feed.dirs_checked;
    let _ = feed.next(Duration::from_millis(100));
    assert_eq!(feed.dirs_checked, before, "no look 0.1 s after the last");
}

#[test]
fn a_feed_looks_at_its_dirs_and_log_as_often_as_it_is_told() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    for every in [LOOK_EVERY, Duration::from_secs(2), Duration::from_secs(30)] {
        let began = Instant::now();
        let opts = FeedOpts {
            looks: every,
            ..FeedOpts::default()
        };
        let feed = FileFeed::start(&root, opts);
        let due = feed.due().expect("a look is due").duration_since(began);
        assert!(
            due >= every && due < every + Duration::from_millis(500),
            "looks every {every:?}: due in {due:?}"
        );
    }
}

#[test]
fn the_claims_dir_s_parent_and_the_events_dir_are_one_watch_when_they_are_one_dir() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    let feed = FileFeed::start(&root, FeedOpts::default());
    let fno = root.claims_dir().parent().expect("a parent").to_path_buf();
    assert_eq!(
        feed.watched.iter().cloned().collect::<Vec<_>>(),
        vec![fno, root.claims_dir()]
    );
    assert_eq!(feed.wanted_given(true), feed.watched);
    // A claims dir found to be no directory is waited for at its parent.
    assert_eq!(
        feed.wanted_given(false).into_iter().collect::<Vec<_>>(),
        vec![root.claims_dir().parent().expect("a parent").to_path_buf()]
    );
}
