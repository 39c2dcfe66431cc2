//! Force-release: the operator's way out of a stuck key. It archives (never
//! unlinks), refuses a live claim unless told otherwise, refuses when the file
//! is no longer the one the operator looked at, and audits who did it.

use crate::common::*;
use claimtop::claims::mutex;
use claimtop::claims::verbs::recovery_mutex_path;
use claimtop::claims::{
    force_release, now_ms, status, AcquireOpts, ClaimError, ClaimState, ForceOpts, ForceOutcome,
    Root,
};
use serde_json::Value;
use tempfile::TempDir;

/// Force-release that must archive; returns (archive path, previous state).
fn must_archive(root: &Root, key: &str, opts: &ForceOpts) -> (std::path::PathBuf, ClaimState) {
    match force_release(root, key, opts).unwrap() {
        ForceOutcome::Archived {
            archived_to,
            previous_state,
            ..
        } => (archived_to, previous_state),
        other => panic!("force-release of {key:?}: {other:?}"),
    }
}

/// Force-release that must refuse and leave the file and the log as they were.
fn must_refuse(root: &Root, key: &str, opts: &ForceOpts) -> String {
    let path = root.lockfile(key);
    let before = std::fs::read(&path).ok();
    let events_before = events(root).len();
    let why = match force_release(root, key, opts).unwrap() {
        ForceOutcome::Refused(why) => why,
        other => panic!("force-release of {key:?} was not refused: {other:?}"),
    };
    assert_eq!(std::fs::read(&path).ok(), before);
    assert!(archives_of(root, key).is_empty());
    assert_eq!(events(root).len(), events_before);
    why
}

#[test]
fn a_corrupted_claim_is_archived_whole_with_null_identity_in_the_event() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    plant_bytes(&root, "session:bad", b"\x00\x01 garbage: [");
    let opts = ForceOpts {
        operator: Some("alice".into()),
        ..Default::default()
    };
    let (to, state) = must_archive(&root, "session:bad", &opts);
    assert_eq!(state, ClaimState::Corrupted);
    assert!(!root.lockfile("session:bad").exists());
    assert_eq!(archives_of(&root, "session:bad"), vec![to.clone()]);
    assert_eq!(std::fs::read(&to).unwrap(), b"\x00\x01 garbage: [");
    assert_eq!(status(&root, "session:bad").state, ClaimState::Free);

    let ev = events_of(&root, "claim_force_released");
    assert_eq!(ev.len(), 1);
    let d = &ev[0]["data"];
    assert_eq!(ev[0]["source"], "fno-loop");
    assert_eq!(d["key"], "session:bad");
    for f in ["holder", "pid", "host", "acquired_at", "expires_at"] {
        assert_eq!(d.get(f), Some(&Value::Null), "{f} in {d}");
    }
    assert_eq!(d["operator"], "alice");
    assert_eq!(d["previous_state"], "corrupted");
    assert_eq!(d["archived_to"], to.to_string_lossy().as_ref());
}

#[test]
fn a_live_claim_is_refused_unless_live_is_allowed() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let (rec, _) = must_acquire(&root, "node:live", "pty:owner", &AcquireOpts::default());
    let why = must_refuse(&root, "node:live", &ForceOpts::default());
    assert!(why.contains("live"), "{why}");

    let opts = ForceOpts {
        allow_live: true,
        ..Default::default()
    };
    let (to, state) = must_archive(&root, "node:live", &opts);
    assert_eq!(state, ClaimState::Live);
    assert_eq!(
        claimtop::claims::read_claim_file(&to).unwrap(),
        rec,
        "the archive is the claim as it was"
    );
    let ev = events_of(&root, "claim_force_released");
    let d = &ev[0]["data"];
    assert_eq!(d["holder"], "pty:owner");
    assert_eq!(d["pid"], rec.pid);
    assert_eq!(d["acquired_at"], rec.acquired_at);
    assert_eq!(d["expires_at"], Value::Null);
    assert_eq!(d["operator"], Value::Null);
    assert_eq!(d["previous_state"], "live");
}

#[test]
fn stale_and_suspect_claims_are_archived_without_allow_live() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    plant(&root, &record("node:stale", "h", dead_pid(), now_ms()));
    let opts = AcquireOpts {
        pid: Some(dead_pid() as u32),
        ttl_ms: Some(600_000),
        ..Default::default()
    };
    must_acquire(&root, "node:suspect", "h", &opts);
    let (_, s1) = must_archive(&root, "node:stale", &ForceOpts::default());
    let (_, s2) = must_archive(&root, "node:suspect", &ForceOpts::default());
    assert_eq!((s1, s2), (ClaimState::Stale, ClaimState::Suspect));
    let states: Vec<_> = events_of(&root, "claim_force_released")
        .iter()
        .map(|e| e["data"]["previous_state"].clone())
        .collect();
    assert_eq!(states, vec!["stale", "suspect"]);
}

#[test]
fn a_holder_or_acquired_at_that_no_longer_matches_is_refused() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let rec = record("node:k", "pty:old", dead_pid(), now_ms());
    plant(&root, &rec);
    let wrong_holder = ForceOpts {
        expect_holder: Some("pty:someone-else".into()),
        ..Default::default()
    };
    assert!(must_refuse(&root, "node:k", &wrong_holder).contains("pty:old"));
    let wrong_time = ForceOpts {
        expect_acquired_at: Some(rec.acquired_at - 1),
        ..Default::default()
    };
    must_refuse(&root, "node:k", &wrong_time);

    let both_right = ForceOpts {
        expect_holder: Some("pty:old".into()),
        expect_acquired_at: Some(rec.acquired_at),
        operator: Some("ops".into()),
        allow_live: false,
    };
    let (to, _) = must_archive(&root, "node:k", &both_right);
    assert_eq!(claimtop::claims::read_claim_file(&to).unwrap(), rec);
}

#[test]
fn expectations_about_a_corrupted_file_are_refused() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    plant_bytes(&root, "node:c", b"not: [a claim");
    let opts = ForceOpts {
        expect_holder: Some("pty:x".into()),
        ..Default::default()
    };
    must_refuse(&root, "node:c", &opts);
    let opts = ForceOpts {
        expect_acquired_at: Some(1),
        ..Default::default()
    };
    must_refuse(&root, "node:c", &opts);
}

#[test]
fn a_missing_claim_is_refused_and_nothing_is_created() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_refuse(&root, "node:none", &ForceOpts::default());
    assert!(!td.path().join(".fno").exists(), "{:?}", names(td.path()));
    assert!(matches!(
        force_release(&root, "", &ForceOpts::default()),
        Err(ClaimError::EmptyKey)
    ));
}

#[test]
fn a_recovery_in_progress_is_refused_after_the_wait_and_left_alone() {
    // Force-release waits the recovery budget (about 5 s) for the mutex.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    plant(&root, &record("node:busy", "h", dead_pid(), now_ms()));
    let lock = recovery_mutex_path(&root.lockfile("node:busy"));
    let peer = mutex::try_lock(&lock).unwrap().expect("mutex was free");
    let why = must_refuse(&root, "node:busy", &ForceOpts::default());
    assert!(why.contains("recovery"), "{why}");
    assert_eq!(
        std::fs::read_to_string(lock.join("owner")).unwrap(),
        peer.token()
    );
}

#[test]
fn a_recovery_mutex_corpse_does_not_block_force_release() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    plant(&root, &record("node:corpse", "h", dead_pid(), now_ms()));
    let lock = recovery_mutex_path(&root.lockfile("node:corpse"));
    std::fs::create_dir(&lock).unwrap();
    mutex::backdate(&lock, mutex::STALE_MUTEX_STEAL.as_secs() + 60).unwrap();
    must_archive(&root, "node:corpse", &ForceOpts::default());
    assert!(!lock.exists());
}
