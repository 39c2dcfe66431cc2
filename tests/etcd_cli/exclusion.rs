//! Mixed holders (run, acquire, the library) on one etcd key never overlap.

use super::*;

/// One tenure seen by a worker: when it began (or, for `run`, ended), its
/// fencing revision, and whether the time is its beginning.
type Tenure = (Instant, i64, bool);

/// `workers` workers, `rounds` tenures each, on one etcd key, in three
/// kinds by turn: `claimtop run` processes whose CMD makes the marker,
/// `acquire --wait`/`release` processes with the marker made here between
/// them, and library threads. The marker is created with O_EXCL (a shell's
/// noclobber for `run`), so two holders at once leave a trace. Returns the
/// overlaps and every tenure.
fn mixed_contention(workers: usize, rounds: usize) -> Option<(usize, Vec<Tenure>)> {
    use std::sync::{Arc, Mutex};
    let etcd = Etcd::single()?;
    let url = etcd.url("/mx");
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("held");
    let overlaps_log = dir.path().join("overlaps");
    let tenures: Arc<Mutex<Vec<Tenure>>> = Arc::default();
    let overlaps = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mark = |m: &Path| -> bool {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(m)
            .is_ok()
    };
    std::thread::scope(|s| {
        for w in 0..workers {
            let (url, marker, log, tenures, overlaps, home) = (
                &url,
                &marker,
                &overlaps_log,
                &tenures,
                &overlaps,
                dir.path(),
            );
            let holder = format!("w{w}");
            let store = (w % 3 == 2).then(|| etcd.store("/mx"));
            s.spawn(move || {
                for _ in 0..rounds {
                    match (w % 3, &store) {
                        (0, _) => {
                            let script = format!(
                                "set -C; : > '{m}' || echo x >> '{l}'; rm -f '{m}'",
                                m = marker.display(),
                                l = log.display()
                            );
                            let o = run(
                                over(home, url),
                                &[
                                    "--json",
                                    "run",
                                    "mx",
                                    "--holder",
                                    &holder,
                                    "--ttl",
                                    "1m",
                                    "--wait=120s",
                                    "--",
                                    "sh",
                                    "-c",
                                    &script,
                                ],
                            );
                            assert_eq!(code(&o), 0, "{o:?}");
                            let rev = json_of(&o)["record"]["revision"]
                                .as_i64()
                                .expect("revision");
                            tenures
                                .lock()
                                .expect("lock")
                                .push((Instant::now(), rev, false));
                        }
                        (1, _) => {
                            let o = run(
                                over(home, url),
                                &[
                                    "--json",
                                    "acquire",
                                    "mx",
                                    "--holder",
                                    &holder,
                                    "--ttl",
                                    "1m",
                                    "--wait=120s",
                                ],
                            );
                            assert_eq!(code(&o), 0, "{o:?}");
                            let began = Instant::now();
                            if !mark(marker) {
                                overlaps.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            }
                            let rev = json_of(&o)["record"]["revision"]
                                .as_i64()
                                .expect("revision");
                            let _ = std::fs::remove_file(marker);
                            let r = run(over(home, url), &["release", "mx", "--holder", &holder]);
                            assert_eq!(code(&r), 0, "{r:?}");
                            tenures.lock().expect("lock").push((began, rev, true));
                        }
                        (_, Some(st)) => {
                            use claimtop::store::{Claims, Fence};
                            let opts = claimtop::claims::AcquireOpts {
                                ttl_ms: Some(60_000),
                                ..Default::default()
                            };
                            let rev = loop {
                                let got = st.acquire("mx", &holder, &opts).expect("acquire");
                                match (got.outcome, got.tenure) {
                                    (
                                        claimtop::claims::AcquireOutcome::Acquired { .. },
                                        Some(t),
                                    ) => break t.revision,
                                    _ => std::thread::sleep(Duration::from_millis(2)),
                                }
                            };
                            let began = Instant::now();
                            if !mark(marker) {
                                overlaps.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            }
                            let _ = std::fs::remove_file(marker);
                            st.release("mx", &holder, Some(Fence::new(rev as u64)))
                                .expect("release");
                            tenures.lock().expect("lock").push((began, rev, true));
                        }
                        _ => unreachable!("every third worker has a store"),
                    }
                }
            });
        }
    });
    let from_run = std::fs::read_to_string(&overlaps_log)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    let total = overlaps.load(std::sync::atomic::Ordering::SeqCst) + from_run;
    let mut all = tenures.lock().expect("lock").clone();
    all.sort();
    Some((total, all))
}

fn check_exclusion(workers: usize, rounds: usize) {
    let t0 = Instant::now();
    let Some((overlaps, tenures)) = mixed_contention(workers, rounds) else {
        return;
    };
    eprintln!(
        "{workers} workers x {rounds} rounds (run, acquire/release, library): {} tenures in {:?}",
        tenures.len(),
        t0.elapsed()
    );
    assert_eq!(overlaps, 0, "two holders at once");
    assert_eq!(tenures.len(), workers * rounds);
    let mut revs: Vec<i64> = tenures.iter().map(|t| t.1).collect();
    revs.sort();
    revs.dedup();
    assert_eq!(
        revs.len(),
        tenures.len(),
        "every tenure has its own revision"
    );
    // `run`'s tenures are timed when the process has ended, so only the
    // others' (timed while held) must climb in the order they were held.
    let timed: Vec<i64> = tenures.iter().filter(|t| t.2).map(|t| t.1).collect();
    assert!(
        timed.windows(2).all(|w| w[0] < w[1]),
        "fencing revisions climb from one tenure to the next: {timed:?}"
    );
}

#[test]
fn mixed_run_acquire_and_library_holders_never_overlap_on_one_etcd_key() {
    check_exclusion(6, 8);
}

#[test]
#[ignore = "heavy: 16×200 tenures mixing run, acquire/release and the library over etcd, run with --ignored"]
fn sixteen_mixed_holders_times_two_hundred_never_overlap_on_one_etcd_key() {
    check_exclusion(16, 200);
}
