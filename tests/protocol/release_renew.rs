//! Release (non-strict, idempotent) and renew (a fixed `now + ttl` window under
//! the recovery mutex, only for a live TTL claim still held by its caller).

use crate::common::*;
use claimtop::claims::mutex;
use claimtop::claims::verbs::recovery_mutex_path;
use claimtop::claims::{
    now_ms, read_claim_file, release, release_watched, renew, AcquireOpts, ClaimError, NoRenew,
    ReleaseOutcome, RenewOutcome, WaitHook,
};
use serde_json::json;
use std::time::Duration;
use tempfile::TempDir;

const KEY: &str = "node:x-renew";
const ME: &str = "target-session:me";

fn ttl(ms: i64) -> AcquireOpts {
    AcquireOpts {
        ttl_ms: Some(ms),
        ..Default::default()
    }
}

#[test]
fn releasing_a_missing_claim_is_a_silent_success_that_writes_nothing() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    assert_eq!(
        release(&root, "session:gone", "pty:x").unwrap(),
        ReleaseOutcome::Absent
    );
    assert!(!td.path().join(".fno").exists(), "{:?}", names(td.path()));
}

#[test]
fn releasing_another_holders_claim_keeps_their_file_and_writes_no_event() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, "session:r", "pty:owner", &AcquireOpts::default());
    let before = std::fs::read(root.lockfile("session:r")).unwrap();
    assert_eq!(
        release(&root, "session:r", "pty:other").unwrap(),
        ReleaseOutcome::NotHeld {
            holder: "pty:owner".into()
        }
    );
    assert_eq!(std::fs::read(root.lockfile("session:r")).unwrap(), before);
    assert!(events_of(&root, "claim_released").is_empty());
}

#[test]
fn releasing_ones_own_claim_unlinks_it_and_audits_how_long_it_was_held() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let (rec, _) = must_acquire(&root, "session:r", "pty:owner", &ttl(120_000));
    let held_ms = match release(&root, "session:r", "pty:owner").unwrap() {
        ReleaseOutcome::Released { record, held_ms } => {
            assert_eq!(record, rec);
            held_ms
        }
        other => panic!("{other:?}"),
    };
    assert!(held_ms >= 0);
    assert!(!root.lockfile("session:r").exists());
    // A release moves nothing to the archive: it is the holder's own exit.
    assert!(archives_of(&root, "session:r").is_empty());

    let ev = events_of(&root, "claim_released");
    assert_eq!(ev.len(), 1);
    let d = &ev[0]["data"];
    assert_eq!(d["key"], "session:r");
    assert_eq!(d["holder"], "pty:owner");
    assert_eq!(d["pid"], rec.pid);
    assert_eq!(d["acquired_at"], rec.acquired_at);
    assert_eq!(d["expires_at"], rec.expires_at.unwrap());
    assert_eq!(d["duration_held_ms"], held_ms);

    // Twice is fine, and the second one says nothing.
    assert_eq!(
        release(&root, "session:r", "pty:owner").unwrap(),
        ReleaseOutcome::Absent
    );
    assert_eq!(events_of(&root, "claim_released").len(), 1);
}

#[test]
fn release_refuses_an_empty_key_or_holder() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    assert!(matches!(release(&root, "", "h"), Err(ClaimError::EmptyKey)));
    assert!(matches!(
        release(&root, "k", ""),
        Err(ClaimError::EmptyHolder)
    ));
    assert!(!td.path().join(".fno").exists());
}

/// Renew and return the new record, asserting the deadline is `now + ttl`
/// for some `now` read inside the call.
fn renew_and_bound(root: &claimtop::claims::Root, ttl_ms: i64) -> claimtop::claims::ClaimRecord {
    let t0 = now_ms();
    let out = renew(root, KEY, ME, ttl_ms).unwrap();
    let t1 = now_ms();
    let rec = match out {
        RenewOutcome::Renewed { record, .. } => record,
        other => panic!("{other:?}"),
    };
    let exp = rec.expires_at.unwrap();
    assert!(
        (t0 + ttl_ms..=t1 + ttl_ms).contains(&exp),
        "deadline {exp} is not now+ttl for now in [{t0}, {t1}]"
    );
    assert_eq!(read_claim_file(&root.lockfile(KEY)).unwrap(), rec);
    rec
}

#[test]
fn renew_resets_the_deadline_to_now_plus_ttl_and_changes_nothing_else() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let opts = AcquireOpts {
        ttl_ms: Some(120_000),
        reason: Some("long job".into()),
        metadata: Some(meta(json!({"step": 3}))),
        harness: Some("claude".into()),
        ..Default::default()
    };
    let (before, _) = must_acquire(&root, KEY, ME, &opts);
    std::thread::sleep(Duration::from_millis(3));
    let after = renew_and_bound(&root, 120_000);
    assert!(after.expires_at > before.expires_at);
    // Only the deadline moves: acquired_at stays, so PID-reuse detection still
    // compares against when the claim was really taken.
    let mut expect = before.clone();
    expect.expires_at = after.expires_at;
    assert_eq!(after, expect);

    let ev = events_of(&root, "claim_renewed");
    assert_eq!(ev.len(), 1, "{:?}", events(&root));
    let d = &ev[0]["data"];
    assert_eq!(d["key"], KEY);
    assert_eq!(d["holder"], ME);
    assert_eq!(d["acquired_at"], before.acquired_at);
    assert_eq!(d["expires_at"], after.expires_at.unwrap());
    assert_eq!(d["previous_expires_at"], before.expires_at.unwrap());
}

#[test]
fn repeated_renewals_never_grow_the_window() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, KEY, ME, &ttl(120_000));
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(2));
        renew_and_bound(&root, 120_000);
    }
    assert_eq!(events_of(&root, "claim_renewed").len(), 5);
}

#[test]
fn renewing_with_a_shorter_ttl_pulls_the_deadline_in() {
    // A fixed window, not "extend if later": the deadline is what the caller
    // asks for now.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let (before, _) = must_acquire(&root, KEY, ME, &ttl(3_600_000));
    let after = renew_and_bound(&root, 60_000);
    assert!(after.expires_at < before.expires_at);
}

/// Assert a renew was a no-op for `why`: same bytes on disk, no event.
fn assert_no_renew(root: &claimtop::claims::Root, key: &str, holder: &str, why: NoRenew) {
    let path = root.lockfile(key);
    let before = std::fs::read(&path).ok();
    assert_eq!(
        renew(root, key, holder, 120_000).unwrap(),
        RenewOutcome::NotRenewed(why)
    );
    assert_eq!(std::fs::read(&path).ok(), before);
    assert!(events_of(root, "claim_renewed").is_empty());
}

#[test]
fn renew_is_a_no_op_for_another_holder() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, KEY, "target-session:owner", &ttl(120_000));
    assert_no_renew(&root, KEY, "target-session:intruder", NoRenew::OtherHolder);
}

#[test]
fn renew_is_a_no_op_for_a_pid_bound_claim() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, KEY, ME, &AcquireOpts::default());
    assert_no_renew(&root, KEY, ME, NoRenew::PidBound);
}

#[test]
fn renew_never_resurrects_an_expired_claim() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let now = now_ms();
    let mut rec = record(KEY, ME, std::process::id() as i32, now - 120_000);
    rec.expires_at = Some(now - 1);
    plant(&root, &rec);
    assert_no_renew(&root, KEY, ME, NoRenew::Expired);
}

#[test]
fn renew_is_a_no_op_for_a_missing_or_corrupted_claim() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    assert_no_renew(&root, KEY, ME, NoRenew::Absent);
    assert!(!root.lockfile(KEY).exists());
    plant_bytes(&root, KEY, b"key: [unterminated");
    assert_no_renew(&root, KEY, ME, NoRenew::Corrupted);
}

#[test]
fn renew_refuses_bad_arguments_before_touching_the_claim() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let (rec, _) = must_acquire(&root, KEY, ME, &ttl(120_000));
    assert!(matches!(
        renew(&root, KEY, ME, 0),
        Err(ClaimError::TtlNotPositive)
    ));
    assert!(matches!(
        renew(&root, KEY, ME, -5),
        Err(ClaimError::TtlNotPositive)
    ));
    assert!(matches!(
        renew(&root, KEY, ME, 59_999),
        Err(ClaimError::TtlOutOfRange(59_999))
    ));
    assert!(matches!(
        renew(&root, "", ME, 120_000),
        Err(ClaimError::EmptyKey)
    ));
    assert!(matches!(
        renew(&root, KEY, "", 120_000),
        Err(ClaimError::EmptyHolder)
    ));
    assert_eq!(read_claim_file(&root.lockfile(KEY)).unwrap(), rec);
    assert!(events_of(&root, "claim_renewed").is_empty());
}

#[test]
fn renew_backs_off_from_a_peer_holding_the_recovery_mutex() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, KEY, ME, &ttl(120_000));
    let lock = recovery_mutex_path(&root.lockfile(KEY));
    let peer = mutex::try_lock(&lock).unwrap().expect("mutex was free");
    assert_no_renew(&root, KEY, ME, NoRenew::MutexBusy);
    // The peer's mutex is untouched: same dir, same owner.
    assert_eq!(
        std::fs::read_to_string(lock.join("owner")).unwrap(),
        peer.token()
    );
    drop(peer);
    assert!(!lock.exists());
    renew_and_bound(&root, 120_000);
}

#[test]
fn renew_steals_a_recovery_mutex_corpse_rather_than_wedging() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, KEY, ME, &ttl(120_000));
    let lock = recovery_mutex_path(&root.lockfile(KEY));
    std::fs::create_dir(&lock).unwrap();
    mutex::backdate(&lock, mutex::STALE_MUTEX_STEAL.as_secs() + 60).unwrap();
    renew_and_bound(&root, 120_000);
    assert!(!lock.exists());
    assert_eq!(
        names(&root.claims_dir()),
        vec![format!("{}.lock", claimtop::claims::encode_key(KEY))]
    );
}

/// What a release behind a peer's recovery mutex did first.
#[derive(Debug, PartialEq, Eq)]
enum First {
    /// Said it waits on the mutex (its wait hook).
    Waits,
    /// Returned: it never waited for the peer.
    Returned,
}

#[test]
fn release_waits_for_a_recovery_in_progress_then_releases() {
    // Release re-reads under the recovery mutex so that an archive racing it
    // cannot make it unlink a newcomer's claim; an honest holder is waited on.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, "session:r", "pty:owner", &AcquireOpts::default());
    let lockfile = root.lockfile("session:r");
    let lock = recovery_mutex_path(&lockfile);
    let peer = mutex::try_lock(&lock).unwrap().expect("mutex was free");
    let (tx, rx) = std::sync::mpsc::channel();
    let said = std::sync::Mutex::new(tx.clone());
    let hook = WaitHook::new(move |_| {
        let _ = said.lock().unwrap().send(First::Waits);
    });
    let releaser = {
        let root = root.clone();
        std::thread::spawn(move || {
            let out = release_watched(&root, "session:r", "pty:owner", Some(&hook));
            let _ = tx.send(First::Returned);
            out
        })
    };
    // The peer lets go at the first sign from the release, and records what
    // it left: a release that did not wait has returned, and unlinked the
    // claim, while the peer still held the mutex.
    let first = rx.recv_timeout(Duration::from_secs(30)).expect("no sign");
    let claim_there_at_let_go = lockfile.exists();
    drop(peer);
    let out = releaser.join().unwrap().unwrap();
    assert_eq!(
        first,
        First::Waits,
        "release returned under the peer's mutex"
    );
    assert!(
        claim_there_at_let_go,
        "the claim was unlinked under the mutex"
    );
    assert_eq!(out.as_str(), "released");
    assert!(!lockfile.exists());
    assert!(!lock.exists());
    assert_eq!(events_of(&root, "claim_released").len(), 1);
}

#[test]
fn release_steals_a_recovery_mutex_corpse() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, "session:r", "pty:owner", &AcquireOpts::default());
    let lock = recovery_mutex_path(&root.lockfile("session:r"));
    std::fs::create_dir(&lock).unwrap();
    mutex::backdate(&lock, mutex::STALE_MUTEX_STEAL.as_secs() + 60).unwrap();
    assert_eq!(
        release(&root, "session:r", "pty:owner").unwrap().as_str(),
        "released"
    );
    assert!(!lock.exists());
    assert!(names(&root.claims_dir()).is_empty());
}

#[test]
fn release_behind_a_recovery_that_never_ends_still_releases_as_the_seed_does() {
    // The seed's release takes no mutex at all, so a holder's own release
    // must not fail where the seed's succeeds: after waiting out the
    // recovery budget (about 5 s) it releases unpinned, and leaves the
    // peer's mutex alone.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, "session:r", "pty:owner", &AcquireOpts::default());
    let lock = recovery_mutex_path(&root.lockfile("session:r"));
    let peer = mutex::try_lock(&lock).unwrap().expect("mutex was free");
    let t = std::time::Instant::now();
    assert_eq!(
        release(&root, "session:r", "pty:owner").unwrap().as_str(),
        "released"
    );
    // It did wait the budget out: a lower bound, not a speed target.
    let waited = t.elapsed();
    println!("released unpinned after {waited:?}");
    assert!(waited >= Duration::from_secs(5), "gave up after {waited:?}");
    assert!(!root.lockfile("session:r").exists());
    assert_eq!(
        std::fs::read_to_string(lock.join("owner")).unwrap(),
        peer.token()
    );
    assert_eq!(events_of(&root, "claim_released").len(), 1);
}

#[test]
fn a_claim_at_the_encoded_key_limit_can_be_reacquired_renewed_and_released() {
    // 240 encoded bytes is legal, but `<enc>.lock.recovery.d` and any temp
    // name built on the lockfile name pass the 255-byte name limit.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    for key in [
        "k".repeat(240),
        ":".repeat(80),
        format!("{}x", "k".repeat(236)),
    ] {
        must_acquire(&root, &key, ME, &ttl(120_000));
        let (_, kind) = must_acquire(&root, &key, ME, &ttl(120_000));
        assert_eq!(kind, claimtop::claims::AcquireKind::Reacquired, "{key}");
        match renew(&root, &key, ME, 120_000).unwrap() {
            RenewOutcome::Renewed { .. } => {}
            other => panic!("renew of a {}-byte key: {other:?}", key.len()),
        }
        assert_eq!(
            release(&root, &key, ME).unwrap().as_str(),
            "released",
            "{key}"
        );
        assert!(names(&root.claims_dir()).is_empty(), "{key}");
    }
}

#[test]
fn a_renewal_whose_rewrite_would_pass_the_read_cap_is_refused_and_the_claim_kept() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    // Another writer's compact flow style: 300 000 list items in ~900 KB,
    // which the block style every rewrite uses doubles past the 1 MiB cap.
    let mut rec = record(KEY, ME, std::process::id() as i32, now_ms());
    rec.expires_at = Some(now_ms() + 600_000);
    let mut text = rec.to_yaml().unwrap();
    text.push_str("metadata: {a: [");
    text.push_str(&"1, ".repeat(300_000));
    text.push_str("1]}\n");
    let path = plant_bytes(&root, KEY, text.as_bytes());
    assert!(read_claim_file(&path).is_ok(), "the planted claim reads");

    // Matched, not unwrapped: a renewal's Debug would print the whole list.
    match renew(&root, KEY, ME, 120_000) {
        Err(ClaimError::Unwritable { bytes, .. }) => assert!(bytes > 1 << 20, "{bytes}"),
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("renewed: the rewrite was written"),
    }
    assert!(
        std::fs::read(&path).unwrap() == text.as_bytes(),
        "the claim changed"
    );
    assert!(events(&root).is_empty(), "an event for nothing");
    assert!(litter(&root.claims_dir()).is_empty());
}
