//! Stale recovery under the `<lockfile>.recovery.d` mutex, and the events
//! mutex: an honest holder is waited on and never stolen from; a corpse older
//! than the steal age is taken so no key (and no audit log) can brick.

use crate::common::*;
use claimtop::claims::mutex::{self, STALE_MUTEX_STEAL};
use claimtop::claims::verbs::recovery_mutex_path;
use claimtop::claims::{
    acquire, encode_key, now_ms, status, AcquireKind, AcquireOpts, AcquireOutcome, ClaimError,
    ClaimState, Root,
};
use claimtop::events::emit::events_mutex_path;
use std::path::Path;
use std::time::Duration;
use tempfile::TempDir;

const KEY: &str = "session:x";
/// Old enough to be a corpse by every implementation's rule.
const CORPSE_AGE: u64 = STALE_MUTEX_STEAL.as_secs() + 60;

/// A root with a stale (dead-pid) claim on [`KEY`] held by `h`; returns its
/// pid and bytes.
fn stale_root(td: &TempDir) -> (Root, i32, Vec<u8>) {
    let root = root_in(td);
    let pid = dead_pid();
    let bytes = plant(&root, &record(KEY, "h", pid, now_ms()));
    assert_eq!(status(&root, KEY).state, ClaimState::Stale);
    (root, pid, bytes)
}

/// Make the recovery mutex as a peer implementation would: mkdir + owner.
fn peer_mutex(root: &Root, token: &str) -> std::path::PathBuf {
    let lock = recovery_mutex_path(&root.lockfile(KEY));
    std::fs::create_dir(&lock).unwrap();
    std::fs::write(lock.join("owner"), token).unwrap();
    lock
}

fn no_reap_litter(dir: &Path) {
    let litter: Vec<_> = names(dir)
        .into_iter()
        .filter(|n| n.contains(".reap.") || n.contains(".recovery.d"))
        .collect();
    assert!(litter.is_empty(), "left behind: {litter:?}");
}

#[test]
fn the_recovery_mutex_name_is_the_lockfile_name_plus_recovery_d() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    assert_eq!(
        recovery_mutex_path(&root.lockfile("node:a b")),
        td.path().join(".fno/claims/node%3Aa%20b.lock.recovery.d")
    );
}

#[test]
fn a_held_recovery_mutex_is_waited_on_then_recovery_proceeds() {
    let td = TempDir::new().unwrap();
    let (root, pid, original) = stale_root(&td);
    let lock = peer_mutex(&root, "peer-host:1:1");
    let releaser = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(120));
            std::fs::remove_dir_all(&lock).unwrap();
        })
    };
    let out = acquire(&root, KEY, "pty:waiter", &AcquireOpts::default());
    releaser.join().unwrap();
    match out {
        Ok(AcquireOutcome::Acquired { kind, .. }) => assert_eq!(
            kind,
            AcquireKind::Reclaimed {
                previous_holder: "h".into(),
                previous_pid: pid,
            }
        ),
        other => panic!("{other:?}"),
    }
    let archived = archives_of(&root, KEY);
    assert_eq!(archived.len(), 1);
    assert_eq!(std::fs::read(&archived[0]).unwrap(), original);
    no_reap_litter(&root.claims_dir());
}

#[test]
fn a_waiter_that_times_out_never_steals_a_fresh_recovery_mutex() {
    // Each of acquire's bounded attempts waits out the recovery budget, so this
    // takes that budget times the attempt count (about 25 s). It is the only
    // way to see, through the public API, what a timed-out waiter leaves.
    let td = TempDir::new().unwrap();
    let (root, _, original) = stale_root(&td);
    let lock = peer_mutex(&root, "peer-host:1:1");

    let out = acquire(&root, KEY, "pty:thief", &AcquireOpts::default());

    assert!(matches!(out, Err(ClaimError::Contention { .. })), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(lock.join("owner")).unwrap(),
        "peer-host:1:1",
        "the honest holder's mutex was stolen or replaced"
    );
    assert_eq!(std::fs::read(root.lockfile(KEY)).unwrap(), original);
    assert!(archives_of(&root, KEY).is_empty());
    assert!(events(&root).is_empty());
}

#[test]
fn a_recovery_mutex_corpse_is_stolen_so_the_key_cannot_brick() {
    let td = TempDir::new().unwrap();
    let (root, _, original) = stale_root(&td);
    let lock = peer_mutex(&root, "killed-host:99:1");
    mutex::backdate(&lock, CORPSE_AGE).unwrap();

    let (rec, kind) = must_acquire(&root, KEY, "pty:heir", &AcquireOpts::default());

    assert_eq!(rec.holder, "pty:heir");
    assert!(matches!(kind, AcquireKind::Reclaimed { .. }), "{kind:?}");
    assert!(!lock.exists(), "the corpse survived");
    assert_eq!(
        std::fs::read(&archives_of(&root, KEY)[0]).unwrap(),
        original
    );
    no_reap_litter(&root.claims_dir());
}

#[test]
fn an_ownerless_recovery_mutex_corpse_is_stolen_too() {
    // A recoverer killed between mkdir and stamping its token leaves an empty
    // dir; the age rule alone decides.
    let td = TempDir::new().unwrap();
    let (root, _, _) = stale_root(&td);
    let lock = recovery_mutex_path(&root.lockfile(KEY));
    std::fs::create_dir(&lock).unwrap();
    mutex::backdate(&lock, CORPSE_AGE).unwrap();
    must_acquire(&root, KEY, "pty:heir", &AcquireOpts::default());
    assert!(!lock.exists());
}

#[test]
fn concurrent_reclaimers_of_one_stale_claim_produce_exactly_one_winner() {
    let td = TempDir::new().unwrap();
    let (root, _, original) = stale_root(&td);
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
    let handles: Vec<_> = (0..6)
        .map(|i| {
            let (root, barrier) = (root.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                acquire(&root, KEY, &format!("pty:r{i}"), &AcquireOpts::default())
            })
        })
        .collect();
    let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<String> = outcomes
        .iter()
        .filter_map(|o| match o {
            Ok(AcquireOutcome::Acquired { record, .. }) => Some(record.holder.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    for o in &outcomes {
        match o {
            Ok(AcquireOutcome::HeldByOther { holder, .. }) => assert_eq!(holder, &winners[0]),
            Ok(AcquireOutcome::Acquired { .. }) => {}
            Err(e) => panic!("a reclaimer errored: {e}"),
        }
    }
    // The stale claim was archived exactly once, whole; the winner's is live.
    let archived = archives_of(&root, KEY);
    assert_eq!(archived.len(), 1, "{archived:?}");
    assert_eq!(std::fs::read(&archived[0]).unwrap(), original);
    let st = status(&root, KEY);
    assert_eq!(st.state, ClaimState::Live);
    assert_eq!(st.record.unwrap().holder, winners[0]);
    no_reap_litter(&root.claims_dir());
}

#[test]
fn an_events_mutex_corpse_is_stolen_and_the_event_still_lands() {
    // If the steal did not happen within the 2 s budget, the emit would time
    // out and skip, and the log would stay empty.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let lock = events_mutex_path(&root.events_file());
    std::fs::create_dir_all(&lock).unwrap();
    std::fs::write(lock.join("owner"), "killed-host:7:7").unwrap();
    mutex::backdate(&lock, CORPSE_AGE).unwrap();

    must_acquire(&root, KEY, "pty:me", &AcquireOpts::default());

    assert!(!lock.exists(), "the events mutex corpse survived");
    let ev = events(&root);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["type"], "claim_acquired");
    no_reap_litter(&td.path().join(".fno"));
}

#[test]
fn a_held_events_mutex_skips_the_event_but_never_the_claim() {
    // The lockfile is authoritative and the log is observability: a wedged
    // log costs an audit line (after the 2 s budget), never the acquire, and
    // the honest holder's mutex is left alone.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let lock = events_mutex_path(&root.events_file());
    std::fs::create_dir_all(&lock).unwrap();
    std::fs::write(lock.join("owner"), "busy-host:1:1").unwrap();

    let (rec, _) = must_acquire(&root, KEY, "pty:me", &AcquireOpts::default());

    assert_eq!(
        claimtop::claims::read_claim_file(&root.lockfile(KEY)).unwrap(),
        rec
    );
    assert_eq!(
        std::fs::read_to_string(lock.join("owner")).unwrap(),
        "busy-host:1:1"
    );
    assert!(events(&root).is_empty());
}

#[test]
fn a_stale_claim_with_a_key_near_the_encoded_limit_is_reclaimed_and_archived() {
    // The archive name adds 19 bytes to the encoded key; past the 255-byte
    // name limit it is shortened rather than making the key unrecoverable.
    // At 240 bytes even `<enc>.lock.recovery.d` is too long to exist, and
    // recovery proceeds without the mutex no one can hold.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    for key in [
        "k".repeat(236),
        "k".repeat(237),
        "k".repeat(240),
        format!("{}:", "k".repeat(236)),
        format!("{}:", "k".repeat(237)),
    ] {
        let original = plant(&root, &record(&key, "h", dead_pid(), now_ms()));
        let (rec, kind) = must_acquire(&root, &key, "pty:heir", &AcquireOpts::default());
        assert!(matches!(kind, AcquireKind::Reclaimed { .. }), "{kind:?}");
        assert_eq!(rec.key, key);
        let archived: Vec<_> = names(&expired_dir(&root))
            .into_iter()
            .map(|n| expired_dir(&root).join(n))
            .filter(|p| std::fs::read(p).is_ok_and(|b| b == original))
            .collect();
        assert_eq!(
            archived.len(),
            1,
            "{} bytes encoded",
            encode_key(&key).len()
        );
        let name_len = archived[0].file_name().unwrap().len();
        assert!(name_len <= 255, "{name_len}");
        let forced = claimtop::claims::force_release(
            &root,
            &key,
            &claimtop::claims::ForceOpts {
                allow_live: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(
            matches!(forced, claimtop::claims::ForceOutcome::Archived { .. }),
            "{forced:?}"
        );
        assert_eq!(status(&root, &key).state, ClaimState::Free);
    }
}

#[test]
fn concurrent_appenders_meeting_an_events_mutex_corpse_all_land_whole_lines() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let lock = events_mutex_path(&root.events_file());
    std::fs::create_dir_all(&lock).unwrap();
    mutex::backdate(&lock, CORPSE_AGE).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let root = root.clone();
            std::thread::spawn(move || {
                must_acquire(
                    &root,
                    &format!("node:{i}"),
                    "pty:me",
                    &AcquireOpts::default(),
                );
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(events_of(&root, "claim_acquired").len(), 4);
    assert!(!lock.exists());
    no_reap_litter(&td.path().join(".fno"));
}
