//! A holder killed inside a mutex: the recovery mutex of a key, or the
//! events log's. Its corpse must not stall the next acquirer or writer when
//! its owner is provably gone, and must wait for the age rule when it
//! cannot be judged from here.

use super::{AGE_PAST_STEAL, ENTRY};
use crate::common::*;
use claimtop::claims::mutex::{self, backdate};
use claimtop::claims::verbs::recovery_mutex_path;
use claimtop::claims::{acquire, AcquireOpts, AcquireOutcome, Root};
use claimtop::events::emit::{append_event, envelope, events_mutex_path};
use serde_json::Map;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Take a mutex, say so, and wait to be killed inside it.
pub(super) fn hold_mutex_until_killed() {
    let dir = PathBuf::from(env_str("K_MUTEX"));
    let _held = mutex::try_lock(&dir)
        .expect("mkdir the mutex")
        .expect("mutex was free");
    std::fs::write(env_str("K_READY"), b"").expect("signal readiness");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Start a child that takes `mutex_dir`, wait until it holds it, kill it.
fn corpse_of_a_killed_holder(dir: &Path, role: &str, mutex_dir: &Path) {
    let ready = dir.join("ready");
    let child = spawn_role(
        ENTRY,
        role,
        &[
            ("K_MUTEX", mutex_dir.display().to_string()),
            ("K_READY", ready.display().to_string()),
        ],
    );
    let t = Instant::now();
    while !ready.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "child never took the mutex"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    kill9(&child);
    wait_all(vec![child], Duration::from_secs(10));
    assert!(
        mutex_dir.is_dir(),
        "the killed holder's mutex should remain"
    );
}

/// A claim on `key` whose holder is gone, as a recoverer finds it.
pub(super) fn stale_claim(root: &Root, key: &str) {
    let dead = AcquireOpts {
        pid: Some(dead_pid() as u32),
        ..AcquireOpts::default()
    };
    assert!(matches!(
        acquire(root, key, "gone", &dead),
        Ok(AcquireOutcome::Acquired { .. })
    ));
}

#[test]
fn a_recoverer_killed_inside_the_recovery_mutex_lets_the_next_acquire_through_at_once() {
    let td = tempdir();
    let root = root_in(td.path());
    stale_claim(&root, "k");
    let m = recovery_mutex_path(&root.lockfile("k"));
    corpse_of_a_killed_holder(td.path(), "hold-recovery-mutex", &m);
    // Young, but its owner token names this host and a pid that is gone:
    // nobody can be relying on it, so the next acquirer takes it by the
    // same rename as an aged corpse, without waiting on it at all.
    let waited = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = waited.clone();
    let hook = claimtop::claims::WaitHook::new(move |_| {
        flag.store(true, std::sync::atomic::Ordering::SeqCst)
    });
    let t = Instant::now();
    match claimtop::claims::acquire_watched(
        &root,
        "k",
        "next",
        &AcquireOpts::default(),
        Some(&hook),
    ) {
        Ok(AcquireOutcome::Acquired { record, .. }) => assert_eq!(record.holder, "next"),
        other => panic!("the corpse stalled the key: {other:?}"),
    }
    eprintln!(
        "figure: acquire after kill -9 of a recoverer took {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert!(
        !waited.load(std::sync::atomic::Ordering::SeqCst),
        "acquire waited on a dead owner's mutex"
    );
    assert!(!m.exists(), "the corpse was not removed by its stealer");
    assert!(litter(&root.claims_dir()).is_empty());
}

#[test]
fn the_cli_acquires_at_once_after_a_recoverer_is_killed_and_says_whom_it_waits_for_otherwise() {
    let td = tempdir();
    let root = root_in(td.path());
    stale_claim(&root, "k");
    let m = recovery_mutex_path(&root.lockfile("k"));
    corpse_of_a_killed_holder(td.path(), "hold-recovery-mutex", &m);
    let run = |key: &str, holder: &str| {
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_claimtop"))
            .args(["acquire", key, "--holder", holder, "--root"])
            .arg(td.path())
            .args(["--pid", &std::process::id().to_string(), "--json"])
            .output()
            .expect("run claimtop");
        (out, t.elapsed())
    };
    let (out, took) = run("k", "next");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("waiting for"), "{stderr}");
    eprintln!(
        "figure: `claimtop acquire` after kill -9 of a recoverer took {:.1} ms",
        took.as_secs_f64() * 1e3
    );
    // A mutex held by a live process (here: this one, by another token) is
    // waited on, and the wait is said on stderr with the owner and its age.
    stale_claim(&root, "k2");
    let m2 = recovery_mutex_path(&root.lockfile("k2"));
    let held = mutex::try_lock(&m2).unwrap().expect("mutex was free");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_claimtop"))
        .args(["acquire", "k2", "--holder", "next", "--root"])
        .arg(td.path())
        .args(["--pid", &std::process::id().to_string(), "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run claimtop");
    // Kept open until the child exits: a closed pipe would fail its writes.
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut first).expect("read stderr");
    assert!(
        first.starts_with(&format!("waiting for {} (held ", held.token())),
        "{first}"
    );
    // Once the holder lets go, the waiter takes the key.
    drop(held);
    assert_eq!(child.wait().expect("wait claimtop").code(), Some(0));
    drop(stderr);
}

#[test]
fn a_corpse_whose_owner_cannot_be_judged_here_still_waits_for_the_age_rule() {
    let td = tempdir();
    let root = root_in(td.path());
    let m = recovery_mutex_path(&root.lockfile("k"));
    std::fs::create_dir_all(&m).unwrap();
    // Another host's pid, and a token that is not `host:pid:nanos`.
    for owner in ["elsewhere.example:1:1", "garbage", ""] {
        std::fs::write(m.join("owner"), owner).unwrap();
        assert!(!mutex::steal_if_stale(&m), "stole a young {owner:?} mutex");
    }
    backdate(&m, AGE_PAST_STEAL).unwrap();
    assert!(mutex::steal_if_stale(&m));
}

#[test]
fn an_events_writer_killed_inside_the_events_mutex_lets_the_next_writer_through_at_once() {
    let td = tempdir();
    let root = root_in(td.path());
    let log = root.events_file();
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, b"").unwrap();
    let m = events_mutex_path(&log);
    corpse_of_a_killed_holder(td.path(), "hold-events-mutex", &m);
    let line = envelope("claim_probe", Map::new());
    // Young, but its owner is provably dead: taken within the writer's
    // shortest budget rather than after 120 s.
    append_event(&log, &line, Duration::from_millis(200)).expect("next writer got through");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(claimtop::events::parse_event(text.trim_end()).is_ok());
    assert!(!m.exists());
}
