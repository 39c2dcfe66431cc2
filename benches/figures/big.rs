//! Figure 13: the file dashboard over 100 000 lockfiles, through the live
//! app's threads (the root's feed, the collector and its mirror, `update`
//! and a 160x48 frame): the first frame with claims, change to screen, idle
//! CPU, and memory per claim above a base (the same app over 1 000).

use super::{bare_app, pump, spawn_watcher, worker_cmd, Plan, Report};
use crate::common::*;
use claimtop::claims::{acquire, AcquireOpts};
use claimtop::dashboard::testing::{draw, Action};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::process::Stdio;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

/// What one idle child (figure 9's worker) said.
struct Idle {
    cpu_ms: f64,
    rss_kib: f64,
    hwm_kib: f64,
    first_frame_ms: f64,
}

fn idle_child(dir: &std::path::Path, secs: u64, r: &mut Report) -> Res<Option<Idle>> {
    let child = worker_cmd("idle", &[dir.display().to_string(), secs.to_string()])?
        .stdout(Stdio::piped())
        .spawn()?;
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let nums: Vec<f64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    if let [cpu_ms, rss_kib, hwm_kib, _frames, _reads, _sweeps, first_frame_ms] = nums[..] {
        return Ok(Some(Idle {
            cpu_ms,
            rss_kib,
            hwm_kib,
            first_frame_ms,
        }));
    }
    r.broken.push(format!(
        "fig13 worker said {text:?} ({}), stderr {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    ));
    Ok(None)
}

pub fn fig13(plan: &Plan, r: &mut Report) -> Res<()> {
    let (big, base) = if plan.quick {
        (3_000, 300)
    } else {
        (100_000, 1_000)
    };
    let secs = if plan.quick { 1 } else { 10 };
    let sleepers = Sleepers::spawn(plan.live_pids)?;
    let dead = dead_pids(plan.dead_pids);
    let base_fx = claims_fixture(base, &sleepers, &dead)?;
    let Some(at_base) = idle_child(base_fx.dir.path(), secs, r)? else {
        return Ok(());
    };
    drop(base_fx);
    let t = Instant::now();
    let fx = claims_fixture(big, &sleepers, &dead)?;
    r.note(format!(
        "fixture of {big} lockfiles built in {}",
        fmt_d(t.elapsed())
    ));
    let Some(at_big) = idle_child(fx.dir.path(), secs, r)? else {
        return Ok(());
    };

    // First frame with claims: the worker's start-up.
    let ok = at_big.first_frame_ms <= 1000.0;
    let verdict = r.target("fig13a", ok);
    r.line(format!(
        "fig13a dashboard first frame with claims, {big} lockfiles: {:.0} ms (target <=1 s) {verdict}",
        at_big.first_frame_ms
    ));
    // Idle CPU.
    let pct = at_big.cpu_ms / (secs as f64 * 1000.0) * 100.0;
    let verdict = r.target("fig13c", pct < 1.0);
    r.line(format!(
        "fig13c dashboard idle {secs} s, {big} lockfiles: CPU {:.0} ms = {pct:.2}% of a core (target <1%) {verdict}",
        at_big.cpu_ms
    ));
    // Memory per claim above the base.
    let per_claim = (at_big.rss_kib - at_base.rss_kib) * 1024.0 / (big - base) as f64;
    let verdict = r.target("fig13d", per_claim <= 1024.0);
    r.line(format!(
        "fig13d dashboard RSS per claim above a {base}-claim base: {per_claim:.0} B (RSS {:.1} MiB at {big}, {:.1} MiB at {base}; peak {:.1} MiB) (target <=1 KiB) {verdict}",
        at_big.rss_kib / 1024.0,
        at_base.rss_kib / 1024.0,
        at_big.hwm_kib / 1024.0
    ));

    // Change to screen: a new key acquired until the frame that shows it.
    let mut app = bare_app(&fx.root, (160, 48));
    let mut term = Terminal::new(TestBackend::new(160, 48))?;
    let (tx, rx) = channel();
    let (_inbox, _counters) = spawn_watcher(&fx.root, tx)?;
    // Until the whole listing (not just its head) is in.
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let Ok(a) = rx.recv_timeout(Duration::from_secs(1)) else {
            continue;
        };
        let whole = matches!(&a, Action::Update(u)
                if u.delta.as_ref().and_then(|d| d.whole.as_ref()).is_some_and(|w| !w.partial));
        claimtop::dashboard::testing::update(&mut app, a);
        if whole {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    while pump(&mut app, &rx, Duration::from_millis(50)) {}
    let samples = if plan.quick { 3 } else { 40 };
    let (mut lat, mut missed) = (Vec::new(), 0);
    for i in 0..samples {
        let key = format!("fig13:new-{i}");
        let path = fx.root.lockfile(&key);
        std::thread::sleep(Duration::from_millis(40 + (i as u64 * 37) % 120));
        let t = Instant::now();
        acquire(&fx.root, &key, "pty:fig13", &AcquireOpts::default())?;
        let deadline = t + Duration::from_secs(2);
        while app.claims.live.get_path(&path).is_none() && Instant::now() < deadline {
            pump(
                &mut app,
                &rx,
                deadline.saturating_duration_since(Instant::now()),
            );
        }
        if app.claims.live.get_path(&path).is_some() {
            term.draw(|f| draw(f, &app))?;
            lat.push(t.elapsed());
        } else {
            missed += 1;
        }
    }
    let p99 = percentile(&lat, 0.99);
    let ok = missed == 0 && p99 <= Duration::from_millis(250);
    let verdict = r.target("fig13b", ok);
    r.line(format!(
        "fig13b dashboard change-to-screen, {big} lockfiles: p50 {} p99 {} ({} samples, {missed} not seen in 2 s, target p99 <=250 ms) {verdict}",
        fmt_d(percentile(&lat, 0.5)),
        fmt_d(p99),
        lat.len()
    ));
    r.note(
        "acquire of a new key until a 160x48 frame shows it; feed debounce 100 ms; idle figures from figure 9's child over each fixture"
            .into(),
    );
    Ok(())
}
