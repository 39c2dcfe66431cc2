//! The events log under faults: rotated, deleted or truncated while it is
//! followed, and its file system full in the middle of an append. A reader
//! must lose no line it could have read; a writer must never leave a torn
//! line, and a lost event must show where an operator looks.

use crate::common::*;
use crate::tmpfs::{fill, Tmpfs};
use claimtop::claims::{acquire, doctor, doctor_fix, AcquireOpts, AcquireOutcome, Root};
use claimtop::dashboard::testing::Input;
use claimtop::events::emit::{append_event, envelope, events_mutex_path};
use claimtop::events::parse_event;
use claimtop::store::file::follow::{Follower, Reset};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// The log's lines, each parsed; None for a line no reader can take.
fn lines_of(log: &Path) -> Vec<Option<Value>> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn acquired_keys(log: &Path) -> Vec<String> {
    lines_of(log)
        .into_iter()
        .flatten()
        .filter(|v| v["type"] == "claim_acquired")
        .filter_map(|v| v["data"]["key"].as_str().map(str::to_string))
        .collect()
}

fn must_take(root: &Root, key: &str) {
    match acquire(root, key, "me", &AcquireOpts::default()) {
        Ok(AcquireOutcome::Acquired { .. }) => {}
        other => panic!("acquire {key}: {other:?}"),
    }
}

fn log_hazards(root: &Root) -> Vec<String> {
    doctor(root)
        .into_iter()
        .filter(|h| h.kind == claimtop::claims::hazard::EVENTS_LOG_BROKEN)
        .map(|h| h.detail)
        .collect()
}

/// Whether the dashboard, sweeping the root, marks the log broken.
fn dashboard_says_broken(root: &Root) -> bool {
    let mut app = app_at(root.clone());
    let mut c = collector(root);
    collect(&mut app, &mut c, Input::Relist);
    app.events_log_broken()
}

#[test]
fn a_full_disk_never_leaves_a_torn_event_line_and_the_loss_shows_in_doctor_and_the_dashboard() {
    let Some(fs) = Tmpfs::mount("64k") else {
        return;
    };
    // Claims where there is room, the log on the full disk: the acquire
    // succeeds and only its event cannot be written.
    let td = tempdir();
    let root = Root {
        root: td.path().to_path_buf(),
        events_dir: Some(fs.path().to_path_buf()),
    };
    let log = root.events_file();
    must_take(&root, "before");
    // The log ends 60 bytes short of a page, so the next event's write
    // lands part of its bytes before the disk refuses the next page: the
    // torn fragment a full disk used to leave.
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let len = std::fs::metadata(&log).unwrap().len() as usize;
    let mut pad = Map::new();
    pad.insert("pad".into(), json!(""));
    let bare = envelope("padding", pad.clone()).to_string().len() + 1;
    pad.insert("pad".into(), json!("x".repeat(page - 60 - len - bare)));
    append_event(&log, &envelope("padding", pad), Duration::from_secs(5)).unwrap();
    assert_eq!(std::fs::metadata(&log).unwrap().len() as usize, page - 60);
    let filler = fill(fs.path());
    let whole = std::fs::read(&log).unwrap();

    must_take(&root, "during");
    let now = std::fs::read(&log).unwrap();
    assert!(
        now == whole,
        "the failed append left {} bytes: {:?}",
        now.len() - whole.len(),
        String::from_utf8_lossy(&now[whole.len().min(now.len())..])
    );
    let said = log_hazards(&root);
    assert!(
        said.iter().any(|d| d.contains("file system is full")),
        "doctor did not say events are lost: {said:?}"
    );
    assert!(dashboard_says_broken(&root));
    // The same full disk read-only: nobody can append there, so nothing is
    // being lost, and a root that is only read is not called broken.
    fs.remount("ro");
    assert!(log_hazards(&root).is_empty(), "{:?}", log_hazards(&root));
    fs.remount("rw");

    // Space returns: the next event lands on a line of its own, whole.
    std::fs::remove_file(filler).unwrap();
    must_take(&root, "after");
    assert!(lines_of(&log).iter().all(Option::is_some), "a torn line");
    assert_eq!(acquired_keys(&log), vec!["before", "after"]);
    assert!(log_hazards(&root).is_empty(), "{:?}", log_hazards(&root));
    assert!(!dashboard_says_broken(&root));
    assert!(!events_mutex_path(&log).exists());
}

/// What a writer that does not undo its short write leaves (the seed's
/// two-part `writeln!` can), dead before its newline.
fn tear(log: &Path) {
    let mut f = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    f.write_all(b"{\"ts\":\"2026-05-01T10:00:00Z\",\"type\":\"claim_acq")
        .unwrap();
}

#[test]
fn a_line_another_writer_tore_is_named_by_doctor_and_never_glues_the_next_event_to_it() {
    let td = tempdir();
    let root = root_in(td.path());
    let log = root.events_file();
    must_take(&root, "first");
    tear(&log);
    let said = log_hazards(&root);
    assert!(
        said.iter().any(|d| d.contains("torn line")),
        "doctor did not name the torn line: {said:?}"
    );
    assert!(dashboard_says_broken(&root));
    // The next append terminates the fragment: one skipped line, and the
    // events around it whole.
    must_take(&root, "second");
    let bad = |log: &Path| lines_of(log).iter().filter(|l| l.is_none()).count();
    assert_eq!(bad(&log), 1);
    assert_eq!(acquired_keys(&log), vec!["first", "second"]);
    assert!(log_hazards(&root).is_empty());

    // doctor --fix terminates it without waiting for an event.
    tear(&log);
    let fixes = doctor_fix(&root);
    assert!(
        fixes
            .iter()
            .any(|f| f.fixed && f.hazard.kind == claimtop::claims::hazard::EVENTS_LOG_BROKEN),
        "{fixes:?}"
    );
    assert!(std::fs::read(&log).unwrap().ends_with(b"claim_acq\n"));
    assert!(log_hazards(&root).is_empty());
    must_take(&root, "third");
    assert_eq!(bad(&log), 2);
    assert_eq!(acquired_keys(&log), vec!["first", "second", "third"]);
}

fn emit_n(log: &Path, from: u64, n: u64) {
    for i in from..from + n {
        let mut d = Map::new();
        d.insert("seq".into(), json!(i));
        append_event(log, &envelope("probe", d), Duration::from_secs(5)).unwrap();
    }
}

fn seqs(lines: &[claimtop::events::tail::Line]) -> Vec<u64> {
    lines
        .iter()
        .map(|l| {
            let e = parse_event(&l.text).expect("a whole event line");
            e.data().and_then(|d| d["seq"].as_u64()).expect("seq")
        })
        .collect()
}

#[test]
fn a_followed_log_that_is_rotated_deleted_and_truncated_loses_no_line_it_could_have_read() {
    let td = tempdir();
    let root: Root = root_in(td.path());
    let log = root.events_file();
    emit_n(&log, 0, 5);
    let (mut f, first) = Follower::open(&log, 3).unwrap();
    assert_eq!(seqs(&first), vec![2, 3, 4]);

    // Rotation: lines written to the old file after the rename are still
    // drained from it, then the new file is read from its start.
    emit_n(&log, 5, 2);
    std::fs::rename(&log, log.with_extension("jsonl.1")).unwrap();
    // A writer that opened before the rename keeps appending to the old inode.
    let mut old = std::fs::OpenOptions::new()
        .append(true)
        .open(log.with_extension("jsonl.1"))
        .unwrap();
    let mut d = Map::new();
    d.insert("seq".into(), json!(7));
    old.write_all(format!("{}\n", envelope("probe", d)).as_bytes())
        .unwrap();
    emit_n(&log, 8, 2);
    let mut got = Vec::new();
    let mut resets = Vec::new();
    for _ in 0..4 {
        let p = f.poll().unwrap();
        got.extend(seqs(&p.lines));
        resets.extend(p.reset);
    }
    assert_eq!(got, vec![5, 6, 7, 8, 9]);
    assert_eq!(resets, vec![Reset::Replaced]);

    // Deletion: the path is missing (a state, not an error); a recreated
    // log is followed from its start.
    std::fs::remove_file(&log).unwrap();
    let p = f.poll().unwrap();
    assert!(p.missing && p.lines.is_empty(), "{p:?}");
    emit_n(&log, 10, 2);
    let mut got = Vec::new();
    for _ in 0..3 {
        got.extend(seqs(&f.poll().unwrap().lines));
    }
    assert_eq!(got, vec![10, 11]);

    // Truncation: reading restarts at 0; nothing is repeated or torn.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&log)
        .unwrap();
    emit_n(&log, 12, 1);
    let p = f.poll().unwrap();
    assert_eq!(p.reset, Some(Reset::Truncated));
    assert_eq!(seqs(&p.lines), vec![12]);

    // No events mutex is left behind by any of it.
    assert!(!events_mutex_path(&log).exists());
}

#[test]
fn a_follower_under_a_live_writer_with_repeated_rotation_sees_every_line_once() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let td = tempdir();
    let log = root_in(td.path()).events_file();
    emit_n(&log, 0, 1);
    let (mut f, first) = Follower::open(&log, 10).unwrap();
    let mut got = seqs(&first);
    let done = Arc::new(AtomicBool::new(false));
    const N: u64 = 2000;
    let writer = {
        let (log, done) = (log.clone(), done.clone());
        std::thread::spawn(move || {
            for i in 1..N {
                emit_n(&log, i, 1);
                if i % 250 == 0 {
                    // Rotation under the events mutex, as a log rotator
                    // that honours it would do.
                    let m = claimtop::claims::mutex::lock(
                        &events_mutex_path(&log),
                        Duration::from_secs(5),
                        false,
                    )
                    .unwrap();
                    std::fs::rename(&log, log.with_extension(format!("jsonl.{i}"))).unwrap();
                    drop(m);
                }
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    loop {
        let finished = done.load(Ordering::SeqCst);
        let p = f.poll().unwrap();
        got.extend(seqs(&p.lines));
        if finished && !p.more && p.lines.is_empty() && got.len() as u64 >= N {
            break;
        }
        if finished && p.lines.is_empty() && !p.more {
            // One more quiet poll settles a pending switch.
            let p = f.poll().unwrap();
            got.extend(seqs(&p.lines));
            if p.lines.is_empty() {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    writer.join().unwrap();
    assert_eq!(got, (0..N).collect::<Vec<_>>());
}
