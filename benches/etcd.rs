//! The etcd figures the README quotes, each beside its baseline from the
//! same run against the same throwaway etcd (started here on free loopback
//! ports, like the tests):
//!
//! 1. acquire+release cycle through the store vs a minimal etcd-client
//!    program doing the same lease grant and two transactions, and vs
//!    `etcdctl lock NAME true` (one process per cycle, as a script uses it);
//! 2. `list` of N claims vs one paged `get --prefix` of the same keys;
//! 3. W workers contending for one key: cycles per second, overlaps.
//! 4. a fleet: H hosts publishing N claims each (`claimtop publish`), the
//!    publishers' CPU idle and at 100 changes/s, etcd writes per change,
//!    and the fleet view's change -> screen.
//!
//! `-- --fleet-only` runs figure 4 alone.
//!
//! `cargo bench --features etcd --bench etcd` runs at full size (100 000
//! claims, 16 workers); `CLAIMTOP_BENCH_QUICK=1` or `--quick` at toy sizes.

mod common;
#[path = "../tests/etcd_common/mod.rs"]
mod etcd_common;
mod fleet;
mod headless;

use claimtop::claims::{now_ms, AcquireOpts, AcquireOutcome, ClaimRecord};
use claimtop::store::etcd::EtcdStore;
use claimtop::store::Claims;
use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp};
use etcd_common::Etcd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Plan {
    cycles: usize,
    etcdctl_cycles: usize,
    claims: usize,
    workers: usize,
    contend_for: Duration,
    fleet: fleet::FleetPlan,
}

fn plan() -> Plan {
    if common::quick_mode() {
        Plan {
            cycles: 20,
            etcdctl_cycles: 3,
            claims: 500,
            workers: 4,
            contend_for: Duration::from_secs(1),
            fleet: fleet::FleetPlan {
                hosts: 2,
                claims: 50,
                idle_for: Duration::from_secs(1),
                load_for: Duration::from_secs(1),
                rate: 100,
                view_changes: 5,
            },
        }
    } else {
        Plan {
            cycles: 500,
            etcdctl_cycles: 40,
            claims: 100_000,
            workers: 16,
            contend_for: Duration::from_secs(10),
            fleet: fleet::FleetPlan {
                hosts: 20,
                claims: 5_000,
                idle_for: Duration::from_secs(20),
                load_for: Duration::from_secs(10),
                rate: 100,
                view_changes: 200,
            },
        }
    }
}

fn ttl60() -> AcquireOpts {
    AcquireOpts {
        ttl_ms: Some(60_000),
        ..Default::default()
    }
}

fn per_op_us(total: Duration, n: usize) -> f64 {
    total.as_secs_f64() * 1e6 / n.max(1) as f64
}

fn main() {
    let plan = plan();
    let Some(etcd) = Etcd::single() else {
        eprintln!("no etcd: nothing to measure");
        return;
    };
    println!("etcd figures (etcd at {}, {} cores)", etcd.url(""), cores());
    if std::env::args().any(|a| a == "--fleet-only") {
        fleet::fleet(&etcd, &plan.fleet);
        return;
    }
    cycle(&etcd, &plan);
    listing(&etcd, &plan);
    contention(&etcd, &plan);
    fleet::fleet(&etcd, &plan.fleet);
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Figure 1: one acquire+release cycle. The store and the minimal program
/// take turns in blocks, so a change in the machine's load lands on both;
/// each is reported as the median of its blocks.
fn cycle(etcd: &Etcd, plan: &Plan) {
    let store = etcd.store("/bench-cycle");
    store.acquire("warm", "h", &ttl60()).expect("warm");
    store.release("warm", "h", None).expect("warm release");

    // The minimal program: the same grant and two transactions, nothing else
    // (no record encoding, no event, no end marker).
    let (rt, mut c) = etcd.client();
    let key = "/bench-min/claims/k";
    let value = ClaimRecord {
        schema_version: 1,
        key: "k".into(),
        holder: "h".into(),
        acquired_at: now_ms(),
        pid: std::process::id() as i32,
        host: "bench".into(),
        expires_at: Some(now_ms() + 60_000),
        reason: None,
        harness: None,
        machine_id: None,
        metadata: Default::default(),
    }
    .to_yaml()
    .expect("yaml");
    let blocks = 10;
    let per_block = (plan.cycles / blocks).max(1);
    let mut ours = Vec::new();
    let mut minimal = Vec::new();
    for _ in 0..blocks {
        let t0 = Instant::now();
        for _ in 0..per_block {
            let got = store.acquire("k", "h", &ttl60()).expect("acquire");
            assert!(matches!(got.outcome, AcquireOutcome::Acquired { .. }));
            store.release("k", "h", None).expect("release");
        }
        ours.push(per_op_us(t0.elapsed(), per_block));
        let t0 = Instant::now();
        rt.block_on(async {
            for _ in 0..per_block {
                let lease = c.lease_grant(60, None).await.expect("grant").id();
                let put = Txn::new()
                    .when([Compare::create_revision(key, CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(
                        key,
                        value.clone(),
                        Some(PutOptions::new().with_lease(lease)),
                    )]);
                let r = c.txn(put).await.expect("txn");
                let rev = r.header().map(|h| h.revision()).unwrap_or(0);
                let del = Txn::new()
                    .when([Compare::mod_revision(key, CompareOp::Equal, rev)])
                    .and_then([TxnOp::delete(key, None)]);
                c.txn(del).await.expect("txn");
            }
        });
        minimal.push(per_op_us(t0.elapsed(), per_block));
    }
    let (ours, minimal) = (median(&mut ours), median(&mut minimal));

    let etcdctl = etcdctl_lock(etcd, plan.etcdctl_cycles);
    println!(
        "1. acquire+release cycle, {} cycles in {blocks} alternating blocks, one connection (medians):",
        per_block * blocks
    );
    println!("   claimtop store     {ours:>9.0} us/cycle");
    println!(
        "   minimal client     {minimal:>9.0} us/cycle   (claimtop = {:.2}x, target <= 1.2x)",
        ours / minimal
    );
    match etcdctl {
        Some(us) => println!(
            "   etcdctl lock true  {us:>9.0} us/cycle   (one process per cycle; claimtop {:.1}x faster)",
            us / ours
        ),
        None => println!("   etcdctl lock       (no etcdctl on PATH: not measured)"),
    }
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

fn etcdctl_lock(etcd: &Etcd, n: usize) -> Option<f64> {
    let eps = etcd.endpoints().join(",");
    let run = || {
        Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &eps, "lock", "bench-lock", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()
            .filter(|s| s.success())
    };
    run()?;
    let t0 = Instant::now();
    for _ in 0..n {
        run()?;
    }
    Some(per_op_us(t0.elapsed(), n))
}

/// Figure 2: list N claims vs a paged range read of the same keys.
fn listing(etcd: &Etcd, plan: &Plan) {
    let prefix = "/bench-list";
    etcd_common::load_claims(etcd, prefix, plan.claims);
    let store = etcd.store(prefix);
    let best = |f: &mut dyn FnMut() -> usize| {
        (0..3)
            .map(|_| {
                let t0 = Instant::now();
                let n = f();
                assert_eq!(n, plan.claims);
                t0.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let ours = best(&mut || {
        claimtop::store::backend::list_whole(&store, &mut claimtop::claims::Classifier::new(0))
            .expect("list")
            .sweep
            .claims
            .len()
    });
    let (rt, c) = etcd.client();
    let paged = best(&mut || {
        let mut c = c.clone();
        rt.block_on(async {
            let start = format!("{prefix}/claims/");
            let end = claimtop::store::etcd::layout::range_end(&start);
            let mut from = start.into_bytes();
            let mut at = 0;
            let mut n = 0;
            loop {
                let mut o = GetOptions::new().with_range(end.clone()).with_limit(1000);
                if at > 0 {
                    o = o.with_revision(at);
                }
                let r = c.get(from.clone(), Some(o)).await.expect("get");
                at = r.header().map(|h| h.revision()).unwrap_or(0);
                n += r.kvs().len();
                match r.kvs().last() {
                    Some(last) if r.more() => {
                        from = last.key().to_vec();
                        from.push(0);
                    }
                    _ => return n,
                }
            }
        })
    });
    println!("2. list of {} claims (best of 3):", plan.claims);
    println!("   claimtop list      {:>9.0} ms", ours.as_secs_f64() * 1e3);
    println!(
        "   paged get --prefix {:>9.0} ms   (claimtop = {:.2}x, target <= 1.5x)",
        paged.as_secs_f64() * 1e3,
        ours.as_secs_f64() / paged.as_secs_f64()
    );
}

/// Figure 3: W workers, one key, as fast as they can.
fn contention(etcd: &Etcd, plan: &Plan) {
    let dir = tempfile::tempdir().expect("marker dir");
    let marker = dir.path().join("held");
    let stop = Arc::new(AtomicBool::new(false));
    let cycles = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..plan.workers)
        .map(|w| {
            let store: EtcdStore = etcd.store("/bench-contend");
            let (marker, stop, cycles, overlaps) = (
                marker.clone(),
                stop.clone(),
                cycles.clone(),
                overlaps.clone(),
            );
            std::thread::spawn(move || {
                let holder = format!("w{w}");
                while !stop.load(Ordering::Relaxed) {
                    match store.acquire("shared", &holder, &ttl60()) {
                        Ok(got) if matches!(got.outcome, AcquireOutcome::Acquired { .. }) => {
                            match std::fs::OpenOptions::new()
                                .write(true)
                                .create_new(true)
                                .open(&marker)
                            {
                                Ok(_) => {
                                    let _ = std::fs::remove_file(&marker);
                                }
                                Err(_) => {
                                    overlaps.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            store.release("shared", &holder, None).expect("release");
                            cycles.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => std::thread::sleep(Duration::from_millis(1)),
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(plan.contend_for);
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("worker");
    }
    let n = cycles.load(Ordering::Relaxed);
    println!(
        "3. {} workers contending for one key for {} s: {} cycles, {:.0} cycles/s, {} overlaps",
        plan.workers,
        plan.contend_for.as_secs(),
        n,
        n as f64 / plan.contend_for.as_secs_f64(),
        overlaps.load(Ordering::Relaxed)
    );
}
