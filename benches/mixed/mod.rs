//! The dashboard over a mix: two etcd sites of `claims` each and one file
//! root of `root_claims`, in one view (`--store A --store B --root R`).
//! The figures issue 26 asks of it: the first screen, change → screen p99
//! from each origin, idle CPU, and RSS per claim above the dashboard's
//! own start (measured in a child process, as the one-site figure is).

use crate::common::proc_status_kib;
use crate::etcd_common::{self, Etcd};
use crate::headless::Headless;
use claimtop::claims::{AcquireOpts, Root};
use claimtop::store::etcd::Layout;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const ROLE: &str = "CLAIMTOP_BENCH_MIXED";
const PREFIX: &str = "/bench-mix";

pub struct Sizes {
    pub claims: usize,
    pub root_claims: usize,
    pub changes: usize,
    pub idle: Duration,
}

/// The child's side, when this process is it: true once it ran.
pub fn child_role() -> bool {
    let Ok(spec) = std::env::var(ROLE) else {
        return false;
    };
    let parts: Vec<&str> = spec.split('\t').collect();
    let [a, b, root, total, changes, idle_ms] = parts[..] else {
        panic!("{ROLE} is {spec:?}");
    };
    let num = |s: &str| s.parse::<u64>().expect("a number");
    dashboard(
        &[a.to_string(), b.to_string()],
        &Root::with_events_here(root),
        num(total) as usize,
        num(changes) as usize,
        Duration::from_millis(num(idle_ms)),
    );
    true
}

/// Load the mix, run the dashboard over it in a child, print its figures.
pub fn figure(sizes: &Sizes) {
    let (Some(ea), Some(eb)) = (Etcd::single(), Etcd::single()) else {
        eprintln!("no etcd: no mixed-view figures");
        return;
    };
    let t = Instant::now();
    etcd_common::load_claims(&ea, PREFIX, sizes.claims);
    etcd_common::load_claims(&eb, PREFIX, sizes.claims);
    let dir = tempfile::TempDir::new().expect("a root");
    let root = Root::with_events_here(dir.path());
    let opts = AcquireOpts {
        ttl_ms: Some(3_600_000),
        ..AcquireOpts::default()
    };
    for i in 0..sizes.root_claims {
        claimtop::claims::acquire(&root, &format!("local/{i:06}"), "bench", &opts)
            .expect("a root claim");
    }
    let loaded = t.elapsed();
    let total = 2 * sizes.claims + sizes.root_claims;
    let spec = [
        ea.url(PREFIX),
        eb.url(PREFIX),
        dir.path().to_string_lossy().into_owned(),
        total.to_string(),
        sizes.changes.to_string(),
        sizes.idle.as_millis().to_string(),
    ]
    .join("\t");
    let exe = std::env::current_exe().expect("this bench's own path");
    // `CLAIMTOP_BENCH_WRAP="heaptrack -o /tmp/mix"`: the child run under a
    // profiler, for where its bytes are (its own figures still printed).
    let wrap = std::env::var("CLAIMTOP_BENCH_WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    let mut cmd = match words.next() {
        Some(tool) => {
            let mut c = Command::new(tool);
            c.args(words).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    let out = cmd
        .env(ROLE, spec)
        .output()
        .expect("run the dashboard child");
    let text = String::from_utf8_lossy(&out.stdout);
    // The child's figures: its line of nine numbers (a profiler around it
    // prints lines of its own).
    let n: Vec<f64> = text
        .lines()
        .map(|l| l.split_whitespace().map(|w| w.parse().ok()).collect())
        .filter_map(|ws: Vec<Option<f64>>| ws.into_iter().collect::<Option<Vec<f64>>>())
        .rfind(|ws| ws.len() == 9)
        .unwrap_or_default();
    let [first, whole, pa, pb, pr, cpu, idle, base, rss] = n[..] else {
        panic!(
            "the mixed dashboard child said {text:?} ({}); stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for l in String::from_utf8_lossy(&out.stderr).lines() {
        if l.starts_with("heap: ") {
            println!("   {l}");
        }
    }
    let verdict = |ok: bool| if ok { "ok" } else { "MISSED" };
    let pct = cpu / idle * 100.0;
    let per_claim = (rss - base) * 1024.0 / total as f64;
    println!(
        "mixed view: 2 etcd sites x {} + 1 root x {} = {total} claims (loaded in {:.1} s):",
        sizes.claims,
        sizes.root_claims,
        loaded.as_secs_f64()
    );
    println!(
        "   first screen          {first:>8.0} ms   (target <= 2000 ms) {}",
        verdict(first <= 2000.0)
    );
    println!("   every claim on screen {whole:>8.0} ms");
    println!(
        "   change -> screen p99  site A {pa:.1} ms, site B {pb:.1} ms, root {pr:.1} ms over {} acquires each   (target <= 250 ms) {}",
        sizes.changes,
        verdict(pa.max(pb).max(pr) <= 250.0)
    );
    println!(
        "   idle {:.0} s            CPU {cpu:.0} ms = {pct:.2}% of a core   (target < 1%) {}",
        idle / 1000.0,
        verdict(pct < 1.0)
    );
    println!(
        "   memory                RSS {:.1} MiB, {per_claim:.0} B per claim above the {:.1} MiB it started at   (target <= 1024 B) {}",
        rss / 1024.0,
        base / 1024.0,
        verdict(per_claim <= 1024.0)
    );
}

/// The child: the dashboard's wiring over the mix, measured.
fn dashboard(urls: &[String], root: &Root, total: usize, changes: usize, idle: Duration) {
    let base = proc_status_kib("VmRSS").unwrap_or(0);
    eprintln!(
        "heap: at start, RSS {} KiB anonymous, {} KiB of files (code)",
        proc_status_kib("RssAnon").unwrap_or(0),
        proc_status_kib("RssFile").unwrap_or(0),
    );
    let t0 = Instant::now();
    let mut h = Headless::over(urls, std::slice::from_ref(root));
    let (first, whole) = h.until_listed(t0, total);
    let (idle_cpu, idle_wall) = h.idle(idle);
    let rss = proc_status_kib("VmRSS").unwrap_or(0);
    // What of it the allocator holds for live values, and what is kept
    // free (on stderr: the figures' line stays the last of stdout).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's own counters.
        let m = unsafe { libc::mallinfo2() };
        eprintln!(
            "heap: {} KiB in use, {} KiB free in the arenas, {} KiB mapped apart; RSS {} KiB anonymous, {} KiB of files (code)",
            m.uordblks / 1024,
            m.fordblks / 1024,
            m.hblkhd / 1024,
            proc_status_kib("RssAnon").unwrap_or(0),
            proc_status_kib("RssFile").unwrap_or(0),
        );
        if std::env::var_os("CLAIMTOP_BENCH_TRIM").is_some() {
            // SAFETY: malloc_trim only releases free heap memory.
            unsafe { libc::malloc_trim(0) };
            eprintln!(
                "heap: after a trim, RSS {} KiB",
                proc_status_kib("VmRSS").unwrap_or(0)
            );
        }
    }

    // Change -> screen from each origin: each member's own writer.
    let opts = AcquireOpts {
        ttl_ms: Some(600_000),
        ..AcquireOpts::default()
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut p99 = Vec::new();
    let store = std::sync::Arc::clone(&h.store);
    for m in store.members().iter().filter(|m| m.named) {
        let writer = m.shared();
        let at = m.ix;
        let mut lat = Vec::with_capacity(changes);
        for i in 0..changes {
            let key = format!("bench-change/{}/{i}", at.0);
            let place = match m.root_dir() {
                Some(_) => root.lockfile(&key),
                None => Layout::new(PREFIX).claim(&key).into(),
            };
            let t = Instant::now();
            writer
                .acquire(&key, "bench", &opts)
                .expect("acquire a fresh key");
            let loc = claimtop::claims::Loc::new(at.0, writer.rules(), Path::new(&place));
            let id = claimtop::dashboard::testing::RowId::Claim(loc);
            while h.app.claims.live.get(&id).is_none() {
                h.pump(Duration::from_secs(5));
            }
            lat.push(t.elapsed());
        }
        lat.sort();
        p99.push(ms(lat[((lat.len() as f64 - 1.0) * 0.99).round() as usize]));
    }
    let [pa, pb, pr] = p99[..] else {
        panic!("three origins, measured {p99:?}");
    };
    println!(
        "{:.1} {:.1} {pa:.2} {pb:.2} {pr:.2} {:.1} {:.1} {base} {rss}",
        ms(first),
        ms(whole),
        ms(idle_cpu),
        ms(idle_wall),
    );
}
