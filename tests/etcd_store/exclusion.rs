//! Many workers, and a leader of three killed mid-run: never two holders
//! of one key, each tenure a higher revision, no key stuck.

use super::*;

/// Take `key` for `holder`, retrying through errors (a leader election)
/// and waiting while another holds it. Returns the fencing revision.
fn take(store: &EtcdStore, key: &str, holder: &str, give_up: Instant) -> Option<i64> {
    while Instant::now() < give_up {
        match store.acquire(key, holder, &ttl(60)) {
            Ok(got) => match got.outcome {
                AcquireOutcome::Acquired { .. } => return got.tenure.map(|t| t.revision),
                AcquireOutcome::HeldByOther { .. } => std::thread::sleep(Duration::from_millis(2)),
            },
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    None
}

/// Release a tenure, retrying through errors: an answer lost in a leader
/// change must not leave the key stuck.
fn give_back(store: &EtcdStore, key: &str, holder: &str, revision: i64) {
    for _ in 0..200 {
        match store.release(key, holder, Some(Fence::new(revision as u64))) {
            Ok(_) => return,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    panic!("could not release {key} for {holder}");
}

/// `workers` threads, each its own connection, take and give back one key
/// `rounds` times. Each tenure creates a marker file with O_EXCL: a second
/// holder at the same time would find it there. Returns the overlaps and the
/// fencing revisions in tenure order. `during` runs once mid-way.
fn contend(
    etcd: &Etcd,
    prefix: &str,
    workers: usize,
    rounds: usize,
    during: impl FnOnce(),
) -> (usize, Vec<i64>) {
    let dir = tempfile::tempdir().expect("marker dir");
    let marker = dir.path().join("held");
    let overlaps = Arc::new(Mutex::new(0usize));
    let revisions = Arc::new(Mutex::new(Vec::new()));
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let give_up = Instant::now() + Duration::from_secs(240);
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let store = etcd.store(prefix);
            let (marker, overlaps, revisions, done) = (
                marker.clone(),
                overlaps.clone(),
                revisions.clone(),
                done.clone(),
            );
            std::thread::spawn(move || {
                let holder = format!("worker-{w}");
                for _ in 0..rounds {
                    let Some(rev) = take(&store, "shared", &holder, give_up) else {
                        panic!("{holder} never got the key");
                    };
                    match std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&marker)
                    {
                        Ok(_) => {
                            revisions.lock().expect("lock").push(rev);
                            std::thread::sleep(Duration::from_millis(1));
                            std::fs::remove_file(&marker).expect("remove marker");
                        }
                        Err(_) => *overlaps.lock().expect("lock") += 1,
                    }
                    give_back(&store, "shared", &holder, rev);
                    done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            })
        })
        .collect();
    let total = workers * rounds;
    while done.load(std::sync::atomic::Ordering::SeqCst) < total / 3 {
        std::thread::sleep(Duration::from_millis(10));
    }
    during();
    for h in handles {
        h.join().expect("worker panicked");
    }
    let overlaps = *overlaps.lock().expect("lock");
    let revisions = revisions.lock().expect("lock").clone();
    (overlaps, revisions)
}

fn strictly_increasing(revs: &[i64]) -> bool {
    revs.windows(2).all(|w| w[0] < w[1])
}

#[test]
fn many_workers_never_hold_one_key_at_once_and_each_tenure_has_a_higher_revision() {
    let Some(etcd) = Etcd::single() else { return };
    let (overlaps, revs) = contend(&etcd, "/excl", 8, 25, || {});
    assert_eq!(overlaps, 0, "two holders at once");
    assert_eq!(revs.len(), 200);
    assert!(
        strictly_increasing(&revs),
        "fencing revisions went backwards: {revs:?}"
    );
    let left = etcd
        .store("/excl")
        .status("shared", &mut fresh())
        .expect("status")
        .outcome;
    assert_eq!(left.state.as_str(), "free");
}

#[test]
fn killing_the_leader_of_three_mid_run_leaves_no_overlap_and_no_stuck_key() {
    let Some(mut etcd) = Etcd::cluster(3) else {
        return;
    };
    let leader = etcd.leader();
    let victim_pid = etcd.members[leader].pid();
    let (overlaps, revs) = contend(&etcd, "/ha", 4, 30, || {
        // SAFETY: kill(2) on an etcd child this test started.
        unsafe {
            libc::kill(victim_pid, libc::SIGKILL);
        }
    });
    etcd.members[leader].kill();
    assert_eq!(overlaps, 0, "two holders at once across the leader change");
    assert_eq!(revs.len(), 120);
    assert!(
        strictly_increasing(&revs),
        "fencing revisions went backwards: {revs:?}"
    );
    let left = etcd
        .store("/ha")
        .status("shared", &mut fresh())
        .expect("status")
        .outcome;
    assert_eq!(left.state.as_str(), "free", "the key is stuck: {left:?}");
}
