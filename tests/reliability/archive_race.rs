//! Archive-after-check: between judging a claim stale and renaming it into
//! `.expired/`, its holder can rewrite it (an idempotent re-acquire turns a
//! dead-pid record into a live one). The archive must never take that live
//! claim away: the rewritten file is put back, or, if the key was re-created
//! meanwhile, kept in `.expired/` rather than lost.

use crate::common::*;
use claimtop::claims::atomic::{archive, Archived};
use claimtop::claims::{
    acquire, read_claim_file, release, AcquireKind, AcquireOpts, AcquireOutcome, ClaimRecord, Root,
};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A root whose audit log cannot be written: the events mutex would pace
/// the racing threads to a few hundred rounds, and the race needs thousands.
fn quiet_root(dir: &std::path::Path) -> Root {
    std::fs::write(dir.join("no-events"), b"").unwrap();
    claimtop::diag::set_warning_sink(Some(Box::new(|_| {})));
    Root {
        root: dir.to_path_buf(),
        events_dir: Some(dir.join("no-events")),
    }
}

fn record(holder: &str, pid: i32) -> ClaimRecord {
    ClaimRecord {
        schema_version: 1,
        key: "k".into(),
        holder: holder.into(),
        acquired_at: 1_700_000_000_000,
        pid,
        host: "h".into(),
        expires_at: None,
        reason: None,
        harness: None,
        machine_id: None,
        metadata: Default::default(),
    }
}

#[test]
fn a_claim_rewritten_between_judgement_and_archive_is_put_back_intact() {
    let td = tempdir();
    let root = root_in(td.path());
    let path = root.lockfile("k");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let judged = record("h", dead_pid()).to_yaml().unwrap();
    // The holder re-acquired after the recoverer read `judged`.
    let live = record("h", std::process::id() as i32).to_yaml().unwrap();
    std::fs::write(&path, &live).unwrap();
    let out = archive(&path, 42, Some(judged.as_bytes())).unwrap();
    assert_eq!(out, Archived::PutBack);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), live);
    assert!(names(&root.claims_dir().join(".expired")).is_empty());
}

#[test]
fn a_claim_judged_and_archived_unchanged_really_moves_to_expired() {
    let td = tempdir();
    let root = root_in(td.path());
    let path = root.lockfile("k");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let judged = record("h", dead_pid()).to_yaml().unwrap();
    std::fs::write(&path, &judged).unwrap();
    match archive(&path, 42, Some(judged.as_bytes())).unwrap() {
        Archived::To(p) => assert_eq!(std::fs::read_to_string(p).unwrap(), judged),
        other => panic!("{other:?}"),
    }
    assert!(!path.exists());
}

/// The end-to-end race: a holder keeps turning its dead-pid (stale) record
/// into a live one by re-acquiring, while two recoverers keep reclaiming.
/// Whenever the holder's live re-acquire succeeded, its claim must still be
/// its own a moment later; a recoverer may only ever take the stale version.
#[test]
fn recoverers_racing_a_holders_rewrite_never_take_its_live_claim() {
    let td = tempdir();
    let root = Arc::new(quiet_root(td.path()));
    let dead = AcquireOpts {
        pid: Some(dead_pid() as u32),
        ..AcquireOpts::default()
    };
    let stop = Arc::new(AtomicBool::new(false));
    let reclaims = Arc::new(AtomicUsize::new(0));
    let recoverers: Vec<_> = (0..2)
        .map(|i| {
            let (root, stop, reclaims) = (root.clone(), stop.clone(), reclaims.clone());
            std::thread::spawn(move || {
                let me = format!("recoverer-{i}");
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(AcquireOutcome::Acquired { kind, .. }) =
                        acquire(&root, "k", &me, &AcquireOpts::default())
                    {
                        if matches!(kind, AcquireKind::Reclaimed { .. }) {
                            reclaims.fetch_add(1, Ordering::Relaxed);
                        }
                        let _ = release(&root, "k", &me);
                        // Leave the holder room to write its next stale record.
                        std::thread::sleep(Duration::from_micros(500));
                    }
                }
            })
        })
        .collect();
    let (mut rewrites, mut lost) = (0, Vec::new());
    let mut rng = Rng::new(0xA5C1);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(3) {
        if !matches!(
            acquire(&root, "k", "holder", &dead),
            Ok(AcquireOutcome::Acquired { .. })
        ) {
            continue;
        }
        std::thread::sleep(Duration::from_micros(rng.below(300)));
        // Same holder, live pid: the rewrite that races the recoverers.
        let Ok(AcquireOutcome::Acquired { record, kind }) =
            acquire(&root, "k", "holder", &AcquireOpts::default())
        else {
            continue;
        };
        if kind == AcquireKind::Reacquired {
            rewrites += 1;
        }
        // A put-back leaves the path empty for a moment; look a few times.
        let mut kept = false;
        let mut seen = None;
        for _ in 0..5 {
            match read_claim_file(&root.lockfile("k")) {
                Ok(r) if r.holder == "holder" && r.acquired_at == record.acquired_at => {
                    kept = true;
                    break;
                }
                other => seen = Some(other),
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        if !kept {
            lost.push(format!("{kind:?} live claim lost; the file now: {seen:?}"));
        }
        let _ = release(&root, "k", "holder");
    }
    stop.store(true, Ordering::Relaxed);
    for r in recoverers {
        r.join().unwrap();
    }
    let live_in_archive = names(&root.claims_dir().join(".expired"))
        .iter()
        .filter_map(|n| read_claim_file(&root.claims_dir().join(".expired").join(n)).ok())
        .filter(|r| r.holder == "holder" && r.pid == std::process::id() as i32)
        .count();
    eprintln!(
        "archive race: {rewrites} stale-to-live rewrites against {} stale reclaims, {} live \
         claims lost, {live_in_archive} live records found in .expired",
        reclaims.load(Ordering::Relaxed),
        lost.len()
    );
    assert!(lost.is_empty(), "{}", lost.join("\n"));
    assert_eq!(
        live_in_archive, 0,
        "a live claim was archived and not put back"
    );
    assert!(rewrites > 0 && reclaims.load(Ordering::Relaxed) > 0);
}

/// The interleaving pinned step by step: a recoverer has judged the
/// holder's dead-pid record stale and holds the recovery mutex; the holder
/// now re-acquires. Its rewrite must wait for the mutex, so the recoverer
/// archives exactly what it judged, and the holder then meets the new owner
/// instead of overwriting it.
#[test]
fn a_same_holder_reacquire_waits_for_a_recoverer_that_already_judged_its_record() {
    use claimtop::claims::atomic::create_exclusive;
    use claimtop::claims::mutex;
    use claimtop::claims::verbs::recovery_mutex_path;
    let td = tempdir();
    let root = Arc::new(quiet_root(td.path()));
    let path = root.lockfile("k");
    let dead = AcquireOpts {
        pid: Some(dead_pid() as u32),
        ..AcquireOpts::default()
    };
    assert!(matches!(
        acquire(&root, "k", "holder", &dead),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    // The recoverer: take the mutex, read and judge.
    let guard = mutex::try_lock(&recovery_mutex_path(&path))
        .unwrap()
        .expect("mutex free");
    let judged = std::fs::read(&path).unwrap();
    let holder = {
        let root = root.clone();
        std::thread::spawn(move || acquire(&root, "k", "holder", &AcquireOpts::default()))
    };
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        judged,
        "the holder rewrote its record inside a recoverer's critical section"
    );
    assert!(matches!(
        archive(&path, 1, Some(&judged)).unwrap(),
        Archived::To(_)
    ));
    let mut mine = record("recoverer", std::process::id() as i32);
    mine.acquired_at = claimtop::claims::now_ms();
    // A record of this machine, so the holder can see the pid is alive.
    mine.host = claimtop::claims::liveness::hostname();
    mine.machine_id = Some(claimtop::claims::liveness::machine_id()).filter(|m| !m.is_empty());
    create_exclusive(&path, mine.to_yaml().unwrap().as_bytes()).unwrap();
    drop(guard);
    match holder.join().unwrap() {
        Ok(AcquireOutcome::HeldByOther { holder, .. }) => assert_eq!(holder, "recoverer"),
        other => panic!("the holder took a key the recoverer now holds: {other:?}"),
    }
    assert_eq!(read_claim_file(&path).unwrap().holder, "recoverer");
}
