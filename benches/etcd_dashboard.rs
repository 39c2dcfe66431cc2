//! The dashboard over a big etcd store: the figures the README quotes for
//! it, against a throwaway etcd started here on free loopback ports.
//!
//! 1. first screen: from opening the store to the first frame with claims
//!    (the head listing: one page), and to the first frame holding every
//!    claim (the whole paged listing, the model, one 160×48 frame);
//! 2. change → screen: a claim acquired by another connection, until a
//!    frame shows it (the acquire's own transaction included);
//! 3. idle: CPU of the dashboard's process over a quiet window (the 1 s
//!    clock tick, the 1 s header probe, the idle watch), and its RSS.
//!
//! The dashboard runs in a child process (this binary, re-run with
//! `CLAIMTOP_BENCH_ROLE=dashboard`), so its CPU and memory are its own and
//! not the loader's. It is the live app's wiring (`spawn_readers`,
//! `update`, `view::draw`) drawing into a `TestBackend` instead of a
//! terminal.
//!
//! 4. the events history over 100 000 events (`history/`): the pane's
//!    pages, a search, the pass, peak RSS. `-- --history-only` runs it alone.
//!
//! 5. the mixed view (`mixed/`): two etcd sites and one file root in one
//!    dashboard, the same figures from each origin. `-- --mixed-only` runs
//!    it alone.
//!
//! `cargo bench --features etcd --bench etcd_dashboard` runs at full size
//! (100 000 claims; the mix 2 × 50 000 + 10 000); `CLAIMTOP_BENCH_QUICK=1`
//! or `--quick` at a toy size.

mod common;
#[path = "../tests/etcd_common/mod.rs"]
mod etcd_common;
mod headless;
mod history;
mod mixed;

use claimtop::claims::AcquireOpts;
use claimtop::store::etcd::Layout;
use common::proc_status_kib;
use etcd_common::Etcd;
use headless::Headless;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const ROLE: &str = "CLAIMTOP_BENCH_ROLE";
const PREFIX: &str = "/bench-dash";

struct Plan {
    claims: usize,
    changes: usize,
    idle: Duration,
}

fn plan() -> Plan {
    if common::quick_mode() {
        Plan {
            claims: 500,
            changes: 10,
            idle: Duration::from_secs(2),
        }
    } else {
        Plan {
            claims: 100_000,
            changes: 200,
            idle: Duration::from_secs(20),
        }
    }
}

fn main() {
    if let Ok(url) = std::env::var(ROLE.to_string() + "_URL") {
        dashboard(&url);
        return;
    }
    if history::child_role() || mixed::child_role() {
        return;
    }
    let plan = plan();
    let Some(etcd) = Etcd::single() else {
        eprintln!("no etcd: nothing to measure");
        return;
    };
    let events = if common::quick_mode() { 2_000 } else { 100_000 };
    if std::env::args().any(|a| a == "--mixed-only") {
        mixed::figure(&mixed_sizes());
        return;
    }
    if std::env::args().any(|a| a == "--history-only") {
        history::figure(&etcd, events);
        return;
    }
    let t = Instant::now();
    etcd_common::load_claims(&etcd, PREFIX, plan.claims);
    let loaded = t.elapsed();
    let url = etcd.url(PREFIX);
    let exe = std::env::current_exe().expect("this bench's own path");
    let out = Command::new(exe)
        .env(ROLE.to_string() + "_URL", &url)
        .env(ROLE.to_string() + "_CLAIMS", plan.claims.to_string())
        .env(ROLE.to_string() + "_CHANGES", plan.changes.to_string())
        .env(
            ROLE.to_string() + "_IDLE_MS",
            plan.idle.as_millis().to_string(),
        )
        .output()
        .expect("run the dashboard child");
    let text = String::from_utf8_lossy(&out.stdout);
    let n = crate::headless::numbers(&out);
    let [first_ms, whole_ms, p50_ms, p99_ms, cpu_ms, idle_ms, rss_kib, hwm_kib] = n[..] else {
        panic!(
            "the dashboard child said {text:?} ({}); stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let pct = cpu_ms / idle_ms * 100.0;
    let verdict = |ok: bool| if ok { "ok" } else { "MISSED" };
    println!(
        "dashboard over {} etcd claims (etcd at {url}, {} cores; loaded in {:.1} s by paged puts of 100, one lease per claim):",
        plan.claims,
        cores(),
        loaded.as_secs_f64()
    );
    println!(
        "   first screen          {first_ms:>8.0} ms   (its first page of claims, titled 'listing'; target <= 2000 ms) {}",
        verdict(first_ms <= 2000.0)
    );
    println!("   every claim on screen {whole_ms:>8.0} ms   (the whole paged listing)");
    println!(
        "   change -> screen      p50 {p50_ms:.1} ms, p99 {p99_ms:.1} ms over {} acquires   (target p99 <= 250 ms) {}",
        plan.changes,
        verdict(p99_ms <= 250.0)
    );
    println!(
        "   idle {:.0} s            CPU {cpu_ms:.0} ms = {pct:.2}% of a core   (target < 1%) {}",
        idle_ms / 1000.0,
        verdict(pct < 1.0)
    );
    // Judged on the resident size while running, as the file dashboard's
    // figure is; the start-up peak (the listing and the model it becomes,
    // both alive for a moment) is printed beside it.
    println!(
        "   memory                RSS {:.1} MiB (start-up peak {:.1} MiB)   (target < 128 MiB) {}",
        rss_kib / 1024.0,
        hwm_kib / 1024.0,
        verdict(rss_kib < 128.0 * 1024.0)
    );
    history::figure(&etcd, events);
    mixed::figure(&mixed_sizes());
}

/// Two etcd sites × N and one root × M in one view
/// (`CLAIMTOP_BENCH_MIXED_SIZE=N,M` for a size between the two).
fn mixed_sizes() -> mixed::Sizes {
    let asked = std::env::var("CLAIMTOP_BENCH_MIXED_SIZE")
        .ok()
        .and_then(|v| {
            let (n, m) = v.split_once(',')?;
            Some((n.trim().parse().ok()?, m.trim().parse().ok()?))
        });
    if let Some((claims, root_claims)) = asked {
        return mixed::Sizes {
            claims,
            root_claims,
            changes: 50,
            idle: Duration::from_secs(10),
        };
    }
    if common::quick_mode() {
        mixed::Sizes {
            claims: 500,
            root_claims: 250,
            changes: 10,
            idle: Duration::from_secs(2),
        }
    } else {
        mixed::Sizes {
            claims: 50_000,
            root_claims: 10_000,
            changes: 200,
            idle: Duration::from_secs(20),
        }
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn env_num(name: &str) -> u64 {
    std::env::var(format!("{ROLE}_{name}"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{ROLE}_{name} not set"))
}

/// The child: the dashboard's wiring over the store, measured.
fn dashboard(url: &str) {
    let claims = env_num("CLAIMS") as usize;
    let changes = env_num("CHANGES") as usize;
    let idle = Duration::from_millis(env_num("IDLE_MS"));
    // 1. First screen.
    let t0 = Instant::now();
    let mut h = Headless::start(url);
    let (first, whole) = h.until_listed(t0, claims);

    // 3. Idle, before any change of ours.
    let (idle_cpu, idle_wall) = h.idle(idle);

    // 2. Change -> screen, one acquire at a time.
    let writer = h.connect();
    let layout = Layout::new(PREFIX);
    let opts = AcquireOpts {
        ttl_ms: Some(600_000),
        ..AcquireOpts::default()
    };
    let mut lat = Vec::with_capacity(changes);
    for i in 0..changes {
        let key = format!("bench-change/{i}");
        let path = layout.claim(&key);
        let t = Instant::now();
        writer
            .acquire(&key, "bench", &opts)
            .expect("acquire a fresh key");
        while h.app.claims.live.get_path(Path::new(&path)).is_none() {
            h.pump(Duration::from_secs(5));
        }
        lat.push(t.elapsed());
    }
    lat.sort();
    let at = |p: f64| lat[((lat.len() as f64 - 1.0) * p).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{:.1} {:.1} {:.2} {:.2} {:.1} {:.1} {} {}",
        ms(first),
        ms(whole),
        ms(at(0.5)),
        ms(at(0.99)),
        ms(idle_cpu),
        ms(idle_wall),
        proc_status_kib("VmRSS").unwrap_or(0),
        proc_status_kib("VmHWM").unwrap_or(0)
    );
}
