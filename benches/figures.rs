//! The performance figures the README quotes (issue "Performance"), each
//! printed with its conditions and beside a floor measured in the same run.
//!
//! `cargo bench --bench figures` runs them at full size; `cargo test
//! --benches` (no `--bench` argument), `--quick` or `CLAIMTOP_BENCH_QUICK=1`
//! runs every figure at toy sizes as a smoke test. Whole-process figures
//! re-execute this binary as a worker (`CLAIMTOP_BENCH_WORKER`), so they need
//! nothing but the library.

#[path = "figures/big.rs"]
mod big;
mod common;

use claimtop::claims::now_ms;
use claimtop::claims::{
    acquire, release, status, sweep, AcquireOpts, AcquireOutcome, ClaimState, ReleaseOutcome, Root,
};
use claimtop::dashboard::testing::{draw, update, Action, App, Options as DashOptions};
use claimtop::dashboard::testing::{Counters, Input};
use claimtop::events::tail::read_last_lines;
use claimtop::store::file::feed;
use common::*;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};

const WORKER_ENV: &str = "CLAIMTOP_BENCH_WORKER";

/// Sizes and repetitions for one run.
struct Plan {
    quick: bool,
    reps: usize,
    fig1_files: usize,
    fig2_sizes: Vec<usize>,
    live_pids: usize,
    dead_pids: usize,
    cycles: usize,
    contenders: usize,
    contend_cycles: usize,
    tail_sizes: Vec<u64>,
    tail_lines: usize,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                quick,
                reps: 2,
                fig1_files: 300,
                fig2_sizes: vec![100, 300],
                live_pids: 4,
                dead_pids: 4,
                cycles: 20,
                contenders: 3,
                contend_cycles: 10,
                tail_sizes: vec![1 << 20],
                tail_lines: 100,
            }
        } else {
            Plan {
                quick,
                reps: 7,
                fig1_files: 10_000,
                fig2_sizes: vec![1_000, 10_000, 100_000],
                live_pids: LIVE_HOLDERS,
                dead_pids: DEAD_HOLDERS,
                cycles: 2_000,
                contenders: 8,
                contend_cycles: 500,
                tail_sizes: vec![100 << 20, 1 << 30],
                tail_lines: 1_000,
            }
        }
    }
}

/// A figure's verdict, collected for the summary and the exit status.
#[derive(Default)]
struct Report {
    lines: Vec<String>,
    /// Correctness failures (double holds, errors): always fatal.
    broken: Vec<String>,
    missed: Vec<String>,
}

impl Report {
    fn line(&mut self, s: String) {
        println!("{s}");
        let _ = std::io::stdout().flush();
        self.lines.push(s);
    }

    fn note(&mut self, s: String) {
        println!("    {s}");
        let _ = std::io::stdout().flush();
    }

    fn target(&mut self, name: &str, ok: bool) -> &'static str {
        if ok {
            "PASS"
        } else {
            self.missed.push(name.to_string());
            "MISS"
        }
    }
}

fn main() {
    if let Ok(mode) = std::env::var(WORKER_ENV) {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let code = match worker(&mode, &args) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("worker {mode}: {e}");
                1
            }
        };
        std::process::exit(code);
    }
    let mut plan = Plan::new(quick_mode());
    if let Some(n) = std::env::var("CLAIMTOP_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        plan.reps = n;
    }
    let mut r = Report::default();
    if let Err(e) = run(&plan, &mut r) {
        eprintln!("bench failed: {e}");
        std::process::exit(1);
    }
    println!();
    if plan.quick {
        println!("(quick mode: toy sizes, debug build; ratios are not the published figures)");
    }
    if !r.missed.is_empty() {
        println!("targets missed: {}", r.missed.join(", "));
    }
    if !r.broken.is_empty() {
        eprintln!("BROKEN: {}", r.broken.join("; "));
        std::process::exit(1);
    }
}

fn run(plan: &Plan, r: &mut Report) -> Res<()> {
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a.starts_with("fig"))
        .collect();
    let want = |f: &str| only.is_empty() || only.iter().any(|o| o == f);
    println!(
        "claimtop figures ({} mode, {} reps, median)",
        if plan.quick { "quick" } else { "full" },
        plan.reps
    );
    let needs_claims = ["fig1", "fig2", "fig3"].iter().any(|f| want(f));
    let sleepers = if needs_claims {
        Some(Sleepers::spawn(plan.live_pids)?)
    } else {
        None
    };
    let dead = dead_pids(plan.dead_pids);
    if let Some(s) = &sleepers {
        if want("fig1") || want("fig3") {
            fig1_and_3(plan, r, s, &dead, want("fig1"), want("fig3"))?;
        }
        if want("fig2") {
            fig2(plan, r, s, &dead)?;
        }
    }
    drop(sleepers);
    if want("fig4") {
        fig4(plan, r)?;
    }
    if want("fig5") {
        fig5(plan, r)?;
    }
    if want("fig6") {
        fig6(plan, r)?;
    }
    if ["fig7", "fig8", "fig9", "fig10"].iter().any(|f| want(f)) {
        dashboard_figures(plan, r)?;
    }
    if want("fig11") {
        fig11(plan, r)?;
    }
    if want("fig13") {
        big::fig13(plan, r)?;
    }
    Ok(())
}

/// The sweep and the read-everything floor, interleaved so drift hits both.
struct SweepTimes {
    single: Vec<Duration>,
    floor: Vec<Duration>,
    claims: usize,
}

fn sweep_vs_floor(root: &Root, reps: usize) -> SweepTimes {
    let dir = root.claims_dir();
    let mut buf = Vec::with_capacity(4096);
    // Warm the page and dentry caches so neither side pays for the first touch.
    read_all_floor(&dir, &mut buf);
    let mut t = SweepTimes {
        single: Vec::new(),
        floor: Vec::new(),
        claims: 0,
    };
    for _ in 0..reps {
        let (d, sw) = time(|| sweep(root));
        t.claims = sw.claims.len();
        t.single.push(d);
        t.floor.push(time(|| read_all_floor(&dir, &mut buf)).0);
    }
    t
}

fn fig1_and_3(
    plan: &Plan,
    r: &mut Report,
    sleepers: &Sleepers,
    dead: &[i32],
    do1: bool,
    do3: bool,
) -> Res<()> {
    let fx = claims_fixture(plan.fig1_files, sleepers, dead)?;
    if do1 {
        let t = sweep_vs_floor(&fx.root, plan.reps);
        let claims = t.claims;
        let (ms, mf) = (median(&t.single), median(&t.floor));
        let ratio = ms.as_secs_f64() / mf.as_secs_f64();
        let counts = sweep(&fx.root).counts;
        let verdict = r.target("fig1", ratio <= 1.5);
        r.line(format!(
            "fig1 list {}: {} (floor {}, {ratio:.2}x, target <=1.5x) {verdict}",
            plan.fig1_files,
            fmt_d(ms),
            fmt_d(mf)
        ));
        r.note(format!(
            "{}; {} distinct pids ({} live sleep children, {} dead); classified live {} suspect {} stale {} corrupted {} ({claims} items)",
            fx.mix, fx.live + fx.dead, fx.live, fx.dead, counts.live, counts.suspect, counts.stale, counts.corrupted
        ));
        r.note("floor: read_dir + open/read/close of every file; warm page cache".into());
        r.note(breakdown(&fx.root, plan.reps));
        // The same as whole processes: the CLI (sweep + text or JSON on
        // stdout, into a pipe as a script would read it) against a process
        // that only lists and reads the files. Interleaved, so drift on a
        // shared machine hits all three alike.
        let root_dir = fx.dir.path().display().to_string();
        let list = |json: bool| {
            let root_dir = root_dir.clone();
            move || -> Res<Command> {
                let mut c = Command::new(env!("CARGO_BIN_EXE_claimtop"));
                c.args(["list", "--root", &root_dir]);
                if json {
                    c.arg("--json");
                }
                Ok(c)
            }
        };
        let floor_cmd = || worker_cmd("readall", std::slice::from_ref(&root_dir));
        let times = run_medians_piped(
            plan.reps,
            &mut [&mut list(false), &mut list(true), &mut { floor_cmd }],
        )?;
        fig1_process_rows(r, plan, "whole process", &times, Some(1.3));
        // The sweep reads on every core the process may use; the same
        // processes pinned to one core show what one thread does alone, and
        // with the other core kept busy, what a shared machine gets.
        let pinned = |mut c: Command| -> Command {
            use std::os::unix::process::CommandExt;
            // SAFETY: sched_setaffinity is async-signal-safe and the set is
            // built on the child's stack before exec.
            unsafe {
                c.pre_exec(|| {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(0, &mut set);
                    if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            c
        };
        let times = run_medians_piped(
            plan.reps,
            &mut [
                &mut || list(false)().map(pinned),
                &mut || list(true)().map(pinned),
                &mut || floor_cmd().map(pinned),
            ],
        )?;
        fig1_process_rows(r, plan, "one core", &times, None);
        let spin = Spinner::start();
        let times = run_medians_piped(
            plan.reps,
            &mut [&mut list(false), &mut list(true), &mut { floor_cmd }],
        )?;
        drop(spin);
        fig1_process_rows(r, plan, "other core busy", &times, None);
        if counts.live == 0 || counts.stale == 0 || counts.corrupted == 0 {
            r.broken.push(format!(
                "fig1 fixture did not classify as mixed: {counts:?}"
            ));
        }
    }
    if do3 {
        let keys: Vec<String> = (0..200).map(key_of).collect();
        let n = if plan.quick { 50 } else { 20_000 };
        let mut per = Vec::new();
        for _ in 0..plan.reps {
            let t = Instant::now();
            for i in 0..n {
                std::hint::black_box(status(&fx.root, &keys[i % keys.len()]));
            }
            per.push(t.elapsed() / n as u32);
        }
        let mut buf = Vec::new();
        let mut floor = Vec::new();
        for _ in 0..plan.reps {
            let t = Instant::now();
            for i in 0..n {
                use std::io::Read;
                buf.clear();
                if let Ok(mut f) = std::fs::File::open(fx.root.lockfile(&keys[i % keys.len()])) {
                    let _ = f.read_to_end(&mut buf);
                }
            }
            floor.push(t.elapsed() / n as u32);
        }
        r.line(format!(
            "fig3 status: {} per call (floor open/read/close {}) REPORT",
            fmt_d(median(&per)),
            fmt_d(median(&floor))
        ));
        r.note(format!(
            "in-process claims::status over 200 keys of a {}-file root, {n} calls per rep; fresh classifier each call (identity + one /proc probe)",
            plan.fig1_files
        ));
    }
    Ok(())
}

/// `list` and `list --json` as processes against the floor process
/// (`times` in that order), as figure 1 rows; `target` makes them count.
fn fig1_process_rows(
    r: &mut Report,
    plan: &Plan,
    how: &str,
    times: &[Duration],
    target: Option<f64>,
) {
    let floor_p = times[2];
    for (name, t) in [("list", times[0]), ("list --json", times[1])] {
        let ratio = t.as_secs_f64() / floor_p.as_secs_f64();
        let tail = match target {
            Some(max) => format!(
                "target <={max}x) {}",
                r.target(&format!("fig1 {name}"), ratio <= max)
            ),
            None => "REPORT)".to_string(),
        };
        r.line(format!(
            "fig1 claimtop {name} {} ({how}): {} (floor process {}, {ratio:.2}x, {tail}",
            plan.fig1_files,
            fmt_d(t),
            fmt_d(floor_p),
        ));
    }
}

/// A thread that keeps one core busy until dropped.
struct Spinner {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    fn start() -> Spinner {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        Spinner {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Where a sweep's time goes: the guarded read alone, the parse alone (from
/// memory), and the classification alone, each over every file once.
fn breakdown(root: &Root, reps: usize) -> String {
    use claimtop::claims::lockfile_read::read_lockfile_bytes;
    use claimtop::claims::{ClaimRecord, Classifier};
    let paths: Vec<PathBuf> = std::fs::read_dir(root.claims_dir())
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let mut read = Vec::new();
    let mut parse = Vec::new();
    let mut classify = Vec::new();
    for _ in 0..reps {
        let (d, bodies) = time(|| {
            paths
                .iter()
                .filter_map(|p| read_lockfile_bytes(p).ok())
                .collect::<Vec<_>>()
        });
        read.push(d);
        let (d, recs) = time(|| {
            bodies
                .iter()
                .filter_map(|b| ClaimRecord::from_bytes(b).ok())
                .collect::<Vec<_>>()
        });
        parse.push(d);
        let (d, _) = time(|| {
            let mut c = Classifier::new(claimtop::claims::now_ms());
            recs.iter()
                .map(|r| c.verdict(r).state)
                .filter(|s| *s == ClaimState::Live)
                .count()
        });
        classify.push(d);
    }
    format!(
        "breakdown: guarded read {} + YAML parse {} + classify {} (each over all {} files)",
        fmt_d(median(&read)),
        fmt_d(median(&parse)),
        fmt_d(median(&classify)),
        paths.len()
    )
}

fn fig2(plan: &Plan, r: &mut Report, sleepers: &Sleepers, dead: &[i32]) -> Res<()> {
    let mut points = Vec::new();
    for &n in &plan.fig2_sizes {
        let (gen, fx) = time(|| claims_fixture(n, sleepers, dead));
        let fx = fx?;
        let reps = if n >= 100_000 {
            plan.reps.min(5)
        } else {
            plan.reps
        };
        let t = sweep_vs_floor(&fx.root, reps);
        let (ms, mf) = (median(&t.single), median(&t.floor));
        let per = ms.as_secs_f64() * 1e6 / n as f64;
        let per_floor = mf.as_secs_f64() * 1e6 / n as f64;
        r.line(format!(
            "fig2 list {n}: {} = {per:.2} µs/claim (floor {per_floor:.2} µs/claim, {:.2}x)",
            fmt_d(ms),
            ms.as_secs_f64() / mf.as_secs_f64()
        ));
        r.note(format!("fixture generated in {}", fmt_d(gen)));
        points.push((n, per, per_floor));
    }
    // What claimtop adds per claim over reading the file: a sweep that grew
    // worse than linearly would show here, while the filesystem's own
    // growth with directory size (the floor) cancels out.
    let excess: Vec<f64> = points.iter().map(|p| p.1 - p.2).collect();
    let (first, last) = (points[0], points[points.len() - 1]);
    let growth = excess[excess.len() - 1] / excess[0].max(1e-9);
    let verdict = r.target("fig2", growth <= 1.5);
    r.line(format!(
        "fig2 linearity: per-claim {:.2} -> {:.2} µs from {} to {} claims (floor {:.2} -> {:.2}); claimtop's own per-claim cost {:.2} -> {:.2} µs, {growth:.2}x (target <=1.5x) {verdict}",
        first.1, last.1, first.0, last.0, first.2, last.2, excess[0], excess[excess.len() - 1]
    ));
    let svg = scaling_svg(&points);
    let out = if plan.quick {
        std::env::temp_dir().join("claimtop-scaling-quick.svg")
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/scaling.svg")
    };
    if let Some(p) = out.parent() {
        std::fs::create_dir_all(p)?;
    }
    std::fs::write(&out, svg)?;
    r.note(format!("plot written to {}", out.display()));
    Ok(())
}

/// Figure 2 as a hand-written SVG: µs per claim against claims (log x),
/// sweep and floor.
fn scaling_svg(points: &[(usize, f64, f64)]) -> String {
    let (w, h) = (640.0, 360.0);
    let (l, rgt, top, bot) = (70.0, 30.0, 40.0, 60.0);
    let xs: Vec<f64> = points.iter().map(|p| (p.0 as f64).log10()).collect();
    let (x0, x1) = (
        xs.iter().cloned().fold(f64::INFINITY, f64::min) - 0.15,
        xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max) + 0.15,
    );
    let ymax = points.iter().map(|p| p.1.max(p.2)).fold(0.0, f64::max) * 1.2;
    let ymax = if ymax > 0.0 { ymax } else { 1.0 };
    let px = |x: f64| l + (x - x0) / (x1 - x0) * (w - l - rgt);
    let py = |y: f64| h - bot - y / ymax * (h - top - bot);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="{}" y="22" text-anchor="middle" font-size="14">claimtop list: cost per claim vs number of claims</text>"##,
        w / 2.0
    );
    // Axes and grid.
    let _ = writeln!(
        s,
        r##"<line x1="{l}" y1="{}" x2="{}" y2="{}" stroke="#000"/><line x1="{l}" y1="{top}" x2="{l}" y2="{}" stroke="#000"/>"##,
        h - bot,
        w - rgt,
        h - bot,
        h - bot
    );
    for i in 0..=4 {
        let y = ymax * i as f64 / 4.0;
        let _ = writeln!(
            s,
            r##"<line x1="{l}" y1="{py:.1}" x2="{}" y2="{py:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{y:.1}</text>"##,
            w - rgt,
            l - 6.0,
            py(y) + 4.0,
            py = py(y)
        );
    }
    for (p, x) in points.iter().zip(&xs) {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"##,
            px(*x),
            h - bot + 18.0,
            p.0
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" text-anchor="middle">lockfiles (log scale)</text>"##,
        (l + w - rgt) / 2.0,
        h - 18.0
    );
    let _ = writeln!(
        s,
        r##"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">µs per claim</text>"##,
        (top + h - bot) / 2.0
    );
    for (idx, colour, label) in [
        (1, "#c0392b", "sweep (list)"),
        (2, "#7f8c8d", "floor: open/read/close"),
    ] {
        let pts: Vec<String> = points
            .iter()
            .zip(&xs)
            .map(|(p, x)| {
                let y = if idx == 1 { p.1 } else { p.2 };
                format!("{:.1},{:.1}", px(*x), py(y))
            })
            .collect();
        let _ = writeln!(
            s,
            r##"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"##,
            pts.join(" ")
        );
        for (p, x) in points.iter().zip(&xs) {
            let y = if idx == 1 { p.1 } else { p.2 };
            let _ = writeln!(
                s,
                r##"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}"/><text x="{:.1}" y="{:.1}" fill="{colour}">{y:.2}</text>"##,
                px(*x),
                py(y),
                px(*x) + 6.0,
                py(y) - 6.0
            );
        }
        let ly = top + 6.0 + 16.0 * (idx as f64 - 1.0);
        let _ = writeln!(
            s,
            r##"<rect x="{}" y="{:.1}" width="12" height="3" fill="{colour}"/><text x="{}" y="{:.1}">{label}</text>"##,
            w - rgt - 170.0,
            ly - 4.0,
            w - rgt - 152.0,
            ly
        );
    }
    s.push_str("</svg>\n");
    s
}

fn self_exe() -> Res<PathBuf> {
    Ok(std::env::current_exe()?)
}

fn worker_cmd(mode: &str, args: &[String]) -> Res<Command> {
    let mut c = Command::new(self_exe()?);
    c.env(WORKER_ENV, mode).args(args).stdin(Stdio::null());
    Ok(c)
}

fn fig4(plan: &Plan, r: &mut Report) -> Res<()> {
    let td = tempfile::Builder::new()
        .prefix("claimtop-bench-")
        .tempdir()?;
    let root = Root::with_events_here(td.path());
    let n = plan.cycles;
    let opts = AcquireOpts::default();
    let mut lib = Vec::new();
    let mut floor = Vec::new();
    let mut fl = FloorCycle::new(&root, "floor-key")?;
    for _ in 0..plan.reps {
        let t = Instant::now();
        for _ in 0..n {
            lib_cycle(&root, "bench-key", "pty:bench", &opts)?;
        }
        lib.push(t.elapsed() / n as u32);
        let t = Instant::now();
        for _ in 0..n {
            fl.cycle()?;
        }
        floor.push(t.elapsed() / n as u32);
    }
    let (ml, mf) = (median(&lib), median(&floor));
    let ratio = ml.as_secs_f64() / mf.as_secs_f64();
    let verdict = r.target("fig4", ratio <= 1.5);
    r.line(format!(
        "fig4 acquire+release: {} per cycle (floor {}, {ratio:.2}x, target <=1.5x) {verdict}",
        fmt_d(ml),
        fmt_d(mf)
    ));
    r.note(format!(
        "uncontended, PID-bound, events on (two appends per cycle), {n} cycles per rep, tmpfs-less {}",
        fs_name(td.path())
    ));
    if have("strace") {
        let calls = |mode: &str, cycles: usize| -> Res<(u64, Vec<(String, u64)>)> {
            let out = td.path().join(format!("strace-{mode}-{cycles}.txt"));
            let root_dir = td.path().join(format!("st-{mode}-{cycles}"));
            let status = Command::new("strace")
                .args(["-c", "-f", "-o"])
                .arg(&out)
                .arg(self_exe()?)
                .arg(&root_dir)
                .arg(cycles.to_string())
                .env(WORKER_ENV, mode)
                .stdout(Stdio::null())
                .status()?;
            if !status.success() {
                return Err(format!("strace {mode} failed: {status}").into());
            }
            let text = std::fs::read_to_string(&out)?;
            Ok((
                strace_total(&text).ok_or("no strace total")?,
                strace_calls(&text),
            ))
        };
        let k = if plan.quick { 10 } else { 500 };
        let per = |mode: &str| -> Res<(f64, String)> {
            let (base, base_calls) = calls(mode, 0)?;
            let (tot, tot_calls) = calls(mode, k)?;
            let mut by: Vec<(String, f64)> = tot_calls
                .iter()
                .map(|(name, c)| {
                    let b = base_calls
                        .iter()
                        .find(|(n2, _)| n2 == name)
                        .map_or(0, |x| x.1);
                    (name.clone(), (c.saturating_sub(b)) as f64 / k as f64)
                })
                .filter(|(_, c)| *c >= 0.05)
                .collect();
            by.sort_by(|a, b| b.1.total_cmp(&a.1));
            let detail = by
                .iter()
                .map(|(n, c)| format!("{n} {c:.1}"))
                .collect::<Vec<_>>()
                .join(", ");
            Ok(((tot.saturating_sub(base)) as f64 / k as f64, detail))
        };
        let (lib_calls, lib_detail) = per("cycles")?;
        let (floor_calls, floor_detail) = per("floorcycles")?;
        r.line(format!(
            "fig4 syscalls per cycle: {lib_calls:.1} (floor {floor_calls:.1}, {:.2}x) REPORT",
            lib_calls / floor_calls
        ));
        r.note(format!("claimtop: {lib_detail}"));
        r.note(format!("floor:    {floor_detail}"));
    } else {
        r.note("strace not installed: syscall count skipped".into());
    }
    Ok(())
}

fn fs_name(p: &Path) -> String {
    let Ok(mounts) = std::fs::read_to_string("/proc/mounts") else {
        return "fs unknown".into();
    };
    let mut best: Option<(usize, String)> = None;
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() > 2 && p.starts_with(f[1]) && best.as_ref().is_none_or(|b| f[1].len() > b.0) {
            best = Some((f[1].len(), format!("{} on {}", f[2], f[1])));
        }
    }
    best.map_or("fs unknown".into(), |b| b.1)
}

/// One acquire + release through the library, insisting both happened.
fn lib_cycle(root: &Root, key: &str, holder: &str, opts: &AcquireOpts) -> Res<()> {
    match acquire(root, key, holder, opts)? {
        AcquireOutcome::Acquired { .. } => {}
        other => return Err(format!("uncontended acquire did not acquire: {other:?}").into()),
    }
    match release(root, key, holder)? {
        ReleaseOutcome::Released { .. } => Ok(()),
        other => Err(format!("release did not release: {other:?}").into()),
    }
}

fn fig5(plan: &Plan, r: &mut Report) -> Res<()> {
    let td = tempfile::Builder::new()
        .prefix("claimtop-bench-")
        .tempdir()?;
    let sentinel = td.path().join("inside");
    std::fs::create_dir(&sentinel)?;
    let t = Instant::now();
    let mut kids = Vec::new();
    for i in 0..plan.contenders {
        kids.push(
            worker_cmd(
                "contend",
                &[
                    td.path().display().to_string(),
                    i.to_string(),
                    plan.contend_cycles.to_string(),
                    sentinel.display().to_string(),
                ],
            )?
            .stdout(Stdio::piped())
            .spawn()?,
        );
    }
    let (mut ok, mut held, mut errors, mut doubles) = (0u64, 0u64, 0u64, 0u64);
    for k in kids {
        let out = k.wait_with_output()?;
        if !out.status.success() {
            errors += 1;
            r.broken.push(format!(
                "contender exited {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stdout)
            ));
            continue;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let nums: Vec<u64> = text
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        if let [a, b, c, d] = nums[..] {
            ok += a;
            held += b;
            errors += c;
            doubles += d;
        }
    }
    let wall = t.elapsed();
    let events = std::fs::read_to_string(Root::with_events_here(td.path()).events_file())
        .map(|t| t.lines().count())
        .unwrap_or(0);
    let total = (plan.contenders * plan.contend_cycles) as u64;
    let good = ok == total && errors == 0 && doubles == 0;
    if !good {
        r.broken.push(format!(
            "fig5: {ok}/{total} cycles, {errors} errors, {doubles} double holds"
        ));
    }
    r.line(format!(
        "fig5 contention {}x{}: {:.0} cycles/s ({} wall), {doubles} double holds, {errors} errors {}",
        plan.contenders,
        plan.contend_cycles,
        total as f64 / wall.as_secs_f64(),
        fmt_d(wall),
        if good { "PASS" } else { "FAIL" }
    ));
    r.note(format!(
        "one key, PID-bound, events on; {held} acquires found it held (retried after {} ms); {events} events logged (want {})",
        RETRY.as_millis(),
        2 * total
    ));
    if events as u64 != 2 * total {
        r.broken
            .push(format!("fig5: {events} events for {total} cycles"));
    }
    Ok(())
}

/// Median wall time of `cmd` run `reps` times with stdout to /dev/null.
fn run_median(reps: usize, mut cmd: impl FnMut() -> Res<Command>) -> Res<Duration> {
    let mut ds = Vec::new();
    for _ in 0..reps {
        let mut c = cmd()?;
        let t = Instant::now();
        let st = c.stdout(Stdio::null()).stderr(Stdio::null()).status()?;
        ds.push(t.elapsed());
        if !st.success() {
            return Err(format!("{c:?} exited {st}").into());
        }
    }
    Ok(median(&ds))
}

/// Median wall times of several commands, run in turn `reps` times, each
/// with its stdout read through a pipe to the end (a pipe, not /dev/null: a
/// line-buffered stdout costs a write per line only into a pipe or tty).
fn run_medians_piped(
    reps: usize,
    cmds: &mut [&mut dyn FnMut() -> Res<Command>],
) -> Res<Vec<Duration>> {
    use std::io::Read;
    let mut ds = vec![Vec::new(); cmds.len()];
    let mut sink = Vec::new();
    for _ in 0..reps {
        for (cmd, d) in cmds.iter_mut().zip(ds.iter_mut()) {
            let mut c = cmd()?;
            let t = Instant::now();
            let mut child = c.stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
            sink.clear();
            if let Some(mut out) = child.stdout.take() {
                out.read_to_end(&mut sink)?;
            }
            let st = child.wait()?;
            d.push(t.elapsed());
            if !st.success() {
                return Err(format!("{c:?} exited {st}").into());
            }
        }
    }
    Ok(ds.iter().map(|d| median(d)).collect())
}

/// Peak RSS of a command in KiB via `/usr/bin/time -f %M` (its fork starts
/// small; a child spawned from this large process inherits our high-water
/// mark through exec, so wait4's figure would be ours).
fn peak_rss_kib(cmd: &Command) -> Option<u64> {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .last()?
        .trim()
        .parse()
        .ok()
}

fn fig6(plan: &Plan, r: &mut Report) -> Res<()> {
    let n = plan.tail_lines;
    let exe = env!("CARGO_BIN_EXE_claimtop");
    for &size in &plan.tail_sizes {
        let (gen, dir) = time(|| events_log(size));
        let dir = dir?;
        let path = Root::with_events_here(&dir).events_file();
        let len = std::fs::metadata(&path)?.len();
        let p = path.display().to_string();
        // In-process: the seek-from-end read, then parsing the kept lines.
        let (mut read, mut parse) = (Vec::new(), Vec::new());
        for _ in 0..plan.reps {
            let (d, chunk) = time(|| read_last_lines(&path, n));
            let chunk = chunk?;
            read.push(d);
            let (d, parsed) = time(|| chunk.lines.iter().filter(|l| l.parse().is_ok()).count());
            parse.push(d);
            if parsed != n {
                r.broken.push(format!("fig6: parsed {parsed} of {n} lines"));
            }
        }
        // Whole processes, each writing the same lines into a pipe read to
        // the end, interleaved so drift hits all three alike.
        let mut tail = || -> Res<Command> {
            let mut c = Command::new("tail");
            c.arg("-n").arg(n.to_string()).arg(&path);
            Ok(c)
        };
        let mut lib = || worker_cmd("tail", &[p.clone(), n.to_string()]);
        let mut cli = || -> Res<Command> {
            let mut c = Command::new(exe);
            c.args(["events", "-n", &n.to_string(), "--json", "--root"])
                .arg(&dir)
                .arg("--events-dir")
                .arg(&dir);
            Ok(c)
        };
        let times = run_medians_piped(plan.reps, &mut [&mut tail, &mut lib, &mut cli])?;
        let (floor, ours, cli_t) = (times[0], times[1], times[2]);
        let noop = run_median(plan.reps, || worker_cmd("noop", &[]))?;
        let ratio = ours.as_secs_f64() / floor.as_secs_f64();
        let verdict = r.target("fig6", ratio <= 2.0);
        r.line(format!(
            "fig6 events tail {n} of {}: {} (floor tail -n {}, {ratio:.2}x, target <=2x) {verdict}",
            human_bytes(len),
            fmt_d(ours),
            fmt_d(floor)
        ));
        let cli_ratio = cli_t.as_secs_f64() / floor.as_secs_f64();
        let verdict = r.target("fig6 claimtop events", cli_ratio <= 2.0);
        r.line(format!(
            "fig6 claimtop events -n {n} --json of {}: {} (floor tail -n {}, {cli_ratio:.2}x, target <=2x) {verdict}",
            human_bytes(len),
            fmt_d(cli_t),
            fmt_d(floor)
        ));
        let rss = |c: Res<Command>| c.ok().and_then(|c| peak_rss_kib(&c));
        let show = |k: Option<u64>| {
            k.map_or("n/a".to_string(), |k| {
                format!("{:.1} MiB", k as f64 / 1024.0)
            })
        };
        r.note(format!(
            "whole processes: a minimal process on the library tail reader (spawn + read_last_lines + write the lines; an idle start of that binary alone takes {}); in-process read_last_lines {} + parsing the {n} kept lines {}; `claimtop events` also parses, validates and re-prints every line",
            fmt_d(noop),
            fmt_d(median(&read)),
            fmt_d(median(&parse))
        ));
        r.note(format!(
            "peak RSS: library reader {}, claimtop events {}, tail {}; log generated or cached in {}",
            show(rss(lib())),
            show(rss(cli())),
            show(rss(Ok({
                let mut c = Command::new("tail");
                c.arg("-n").arg(n.to_string()).arg(&path);
                c
            }))),
            fmt_d(gen)
        ));
    }
    Ok(())
}

fn human_bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64)
    }
}

/// A dashboard model over `root`, swept once, sized like a big terminal:
/// the same constructor, update and view the live app uses.
fn dashboard_app(root: &Root, size: (u16, u16)) -> App {
    let mut app = bare_app(root, size);
    let mut collector = claimtop::dashboard::testing::root_driver(root, 0, now_ms());
    for a in collector
        .start(now_ms())
        .unwrap_or_default()
        .into_iter()
        .map(claimtop::dashboard::testing::heard)
    {
        update(&mut app, a);
    }
    app
}

/// The model as the live app creates it: empty until the collector's
/// first sweep arrives.
fn bare_app(root: &Root, size: (u16, u16)) -> App {
    let opts = DashOptions {
        root: root.clone(),
        more_roots: Vec::new(),
        read_only: true,
        no_color: false,
        demo: false,
        local_time: false,
        opening: Default::default(),
    };
    let identity = claimtop::claims::LocalIdentity::current();
    let mut app = App::new(opts, now_ms(), identity, "operator:bench@here".into());
    update(&mut app, Action::Resize(size.0, size.1));
    app
}

/// The reading threads of the live app (collector, watcher, events
/// follower), feeding `tx`. The collector's inbox is returned so it stays
/// open, with its read counters.
fn spawn_watcher(
    root: &Root,
    tx: Sender<Action>,
) -> Res<(Sender<Input>, std::sync::Arc<Counters>)> {
    Ok(claimtop::dashboard::testing::readers_of_root(root, &tx)?)
}

/// Apply every action waiting (the live loop's batch), then report whether
/// `done` holds.
fn pump(app: &mut App, rx: &Receiver<Action>, wait: Duration) -> bool {
    match rx.recv_timeout(wait) {
        Ok(a) => {
            update(app, a);
            for a in rx.try_iter().take(512) {
                update(app, a);
            }
            true
        }
        Err(_) => false,
    }
}

fn dashboard_figures(plan: &Plan, r: &mut Report) -> Res<()> {
    let files = plan.fig1_files;
    let sleepers = Sleepers::spawn(plan.live_pids)?;
    let fx = claims_fixture(files, &sleepers, &dead_pids(plan.dead_pids))?;

    // Figures 7 and 8: through the real watcher (debounce included).
    let mut app = dashboard_app(&fx.root, (160, 48));
    let (tx, rx) = channel();
    let (_inbox, counters) = spawn_watcher(&fx.root, tx)?;
    // Let the watches settle and drain anything from start-up.
    std::thread::sleep(Duration::from_millis(300));
    while pump(&mut app, &rx, Duration::from_millis(50)) {}
    let samples = if plan.quick { 3 } else { 60 };
    let opts = AcquireOpts::default();
    let mut lat = Vec::new();
    let mut missed = 0;
    for i in 0..samples {
        let key = format!("fig7:new-{i}");
        let path = fx.root.lockfile(&key);
        // Uncorrelated with the debouncer's tick.
        std::thread::sleep(Duration::from_millis(40 + (i as u64 * 37) % 120));
        let t = Instant::now();
        acquire(&fx.root, &key, "pty:fig7", &opts)?;
        let deadline = t + Duration::from_secs(2);
        while app.claims.live.get_path(&path).is_none() && Instant::now() < deadline {
            pump(
                &mut app,
                &rx,
                deadline.saturating_duration_since(Instant::now()),
            );
        }
        if app.claims.live.get_path(&path).is_some() {
            lat.push(t.elapsed());
        } else {
            missed += 1;
        }
    }
    let p50 = percentile(&lat, 0.5);
    let p99 = percentile(&lat, 0.99);
    let ok = missed == 0 && p99 <= Duration::from_millis(250);
    let verdict = r.target("fig7", ok);
    r.line(format!(
        "fig7 dashboard change-to-model {files}: p50 {} p99 {} ({} samples, {missed} not seen in 2 s, target p99 <=250 ms) {verdict}",
        fmt_d(p50),
        fmt_d(p99),
        lat.len()
    ));
    r.note(format!(
        "acquire of a new key (temp + link + event) until the model holds it; notify debounce {} ms",
        feed::DEBOUNCE.as_millis()
    ));

    // Figure 8: one change of each kind, then quiet; count re-reads.
    let mut reread = Vec::new();
    let settle = feed::DEBOUNCE * 4;
    let cases: [(&str, &dyn Fn() -> Res<()>); 3] = [
        ("create", &|| {
            acquire(&fx.root, "fig8:one", "pty:fig8", &AcquireOpts::default())
                .map(|_| ())
                .map_err(Into::into)
        }),
        ("replace", &|| {
            acquire(&fx.root, "fig8:one", "pty:fig8", &AcquireOpts::default())
                .map(|_| ())
                .map_err(Into::into)
        }),
        ("delete", &|| {
            release(&fx.root, "fig8:one", "pty:fig8")
                .map(|_| ())
                .map_err(Into::into)
        }),
    ];
    for (what, change) in cases {
        while pump(&mut app, &rx, Duration::from_millis(20)) {}
        let (reads0, sweeps0) = (counters.reads(), counters.listings());
        change()?;
        let end = Instant::now() + settle;
        while Instant::now() < end {
            pump(&mut app, &rx, end.saturating_duration_since(Instant::now()));
        }
        reread.push((
            what,
            counters.reads() - reads0,
            counters.listings() - sweeps0,
        ));
    }
    let exact = reread.iter().all(|(_, n, s)| *n == 1 && *s == 0);
    let verdict = r.target("fig8", exact);
    r.line(format!(
        "fig8 files re-read per lockfile change ({files} claims): {} (target exactly 1, no sweep) {verdict}",
        reread
            .iter()
            .map(|(w, n, s)| format!("{w} {n}{}", if *s > 0 { format!(" + {s} sweep") } else { String::new() }))
            .collect::<Vec<_>>()
            .join(", ")
    ));

    // Figure 10: whole-screen render, the live app's view into a TestBackend.
    for (w, h) in [(160u16, 48u16), (80, 24)] {
        let mut app = dashboard_app(&fx.root, (w, h));
        let mut term = Terminal::new(TestBackend::new(w, h))?;
        let frames = if plan.quick { 5 } else { 300 };
        let (mut per, mut cpu) = (Vec::new(), Vec::new());
        for _ in 0..plan.reps {
            let (t, c) = (Instant::now(), thread_cpu());
            for i in 0..frames {
                // Move the selection so every frame has something to diff.
                app.table.selected = i % 40;
                term.draw(|f| draw(f, &app))?;
            }
            per.push(t.elapsed() / frames as u32);
            cpu.push((thread_cpu() - c) / frames as u32);
        }
        // CPU time beside wall time: on a shared machine the wall time is
        // mostly waiting for a core.
        r.line(format!(
            "fig10 render {w}x{h}, {} claims: {} per frame ({} of CPU) REPORT",
            app.claims.live.len(),
            fmt_d(median(&per)),
            fmt_d(median(&cpu))
        ));
    }
    r.note("ratatui TestBackend (diffing, no terminal I/O); selection moved each frame".into());

    // What one tick costs the model: the idle loop's main expense.
    // The collector's share (pid checks) and the model's (re-judging) both.
    let mut tick_app = dashboard_app(&fx.root, (160, 48));
    let mut tick_collector = claimtop::dashboard::testing::root_driver(&fx.root, 0, tick_app.now);
    for a in tick_collector
        .start(tick_app.now)
        .unwrap_or_default()
        .into_iter()
        .map(claimtop::dashboard::testing::heard)
    {
        update(&mut tick_app, a);
    }
    let mut per = Vec::new();
    for i in 0..plan.reps * 3 {
        let now = tick_app.now + 1000;
        let (d, _) = time(|| {
            for a in tick_collector
                .handle(Input::Tick(now), now)
                .unwrap_or_default()
                .into_iter()
                .map(claimtop::dashboard::testing::heard)
            {
                update(&mut tick_app, a);
            }
        });
        if i > 0 {
            per.push(d);
        }
    }
    let mut c = claimtop::claims::Classifier::new(tick_app.now);
    let recs: Vec<_> = tick_app
        .claims
        .live
        .by_row
        .values()
        .filter_map(|s| s.record.clone())
        .collect();
    let (classify, _) = time(|| recs.iter().map(|r| c.verdict(r).state).count());
    // What a tick must do at least: look at each distinct holder pid once.
    let mut pids: Vec<i32> = recs.iter().map(|r| r.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let (probes, _) = time(|| {
        pids.iter()
            .filter(|p| claimtop::claims::process_create_time_ms(**p).is_some())
            .count()
    });
    r.note(format!(
        "one 1 s tick over {} claims: {} (of which a fresh classifier's verdicts: {}; probing the {} distinct pids alone: {})",
        tick_app.claims.live.len(),
        fmt_d(median(&per)),
        fmt_d(classify),
        pids.len(),
        fmt_d(probes)
    ));

    // Figure 9: idle, in a child so its memory is its own.
    let secs = if plan.quick { 1 } else { 10 };
    let child = worker_cmd(
        "idle",
        &[fx.dir.path().display().to_string(), secs.to_string()],
    )?
    .stdout(Stdio::piped())
    .spawn()?;
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let nums: Vec<f64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    if let [cpu_ms, rss_kib, hwm_kib, frames, reads, sweeps, startup_ms] = nums[..] {
        let pct = cpu_ms / (secs as f64 * 1000.0) * 100.0;
        let ok = pct < 1.0 && rss_kib < 64.0 * 1024.0;
        let verdict = r.target("fig9", ok);
        r.line(format!(
            "fig9 dashboard idle {secs} s, {files} claims: CPU {cpu_ms:.0} ms = {pct:.2}% of a core, RSS {:.1} MiB (peak {:.1} MiB) (target <1%, <64 MiB) {verdict}",
            rss_kib / 1024.0,
            hwm_kib / 1024.0
        ));
        r.note(format!(
            "watcher + events follower + 1 s tick + draw-on-change into a 160x48 TestBackend; {frames:.0} frames, {reads:.0} re-reads, {sweeps:.0} sweeps while idle; start-up (collector's first sweep + first frame) {startup_ms:.0} ms"
        ));
    } else {
        r.broken.push(format!(
            "fig9 worker said {text:?} ({}), stderr {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // Last, as it empties part of the root: many lockfiles removed at once
    // (a mass release or cleanup). Not a figure of the issue; it shows what
    // a burst costs the watcher.
    let burst = if plan.quick { 50 } else { 2_000 };
    while pump(&mut app, &rx, Duration::from_millis(20)) {}
    let watcher_cpu = || {
        threads_cpu()
            .into_iter()
            // notify's debouncer, and the feed's inotify reader.
            .filter(|(n, _)| n.starts_with("notify") || n.starts_with("claimtop-inoti"))
            .map(|(_, t)| t)
            .sum::<Duration>()
    };
    let (cpu0, reads0, sweeps0) = (watcher_cpu(), counters.reads(), counters.listings());
    let gone: Vec<PathBuf> = (0..burst).map(|i| fx.root.lockfile(&key_of(i))).collect();
    let t = Instant::now();
    for p in &gone {
        std::fs::remove_file(p)?;
    }
    let deadline = t + Duration::from_secs(60);
    while gone.iter().any(|p| app.claims.live.get_path(p).is_some()) && Instant::now() < deadline {
        pump(&mut app, &rx, Duration::from_millis(50));
    }
    let caught_up = t.elapsed();
    r.line(format!(
        "fig8b burst: {burst} of {files} lockfiles removed at once: model caught up in {} (watcher threads {} CPU, {} re-reads, {} sweeps) REPORT",
        fmt_d(caught_up),
        fmt_d(watcher_cpu().saturating_sub(cpu0)),
        counters.reads() - reads0,
        counters.listings() - sweeps0
    ));

    Ok(())
}

/// How long figure 9 lets the app's start-up finish before measuring.
const IDLE_SETTLE: Duration = Duration::from_secs(3);

/// Figure 9's child: the live app's threads and loop, headless, for `secs`.
fn idle(root: &Root, secs: u64) -> Res<()> {
    let t0 = Instant::now();
    let mut app = bare_app(root, (160, 48));
    let mut term = Terminal::new(TestBackend::new(160, 48))?;
    let (tx, rx) = channel();
    let (_inbox, counters) = spawn_watcher(root, tx)?;
    // As the live app starts: the collector's first sweep fills the model,
    // then the first frame.
    loop {
        let a = rx.recv()?;
        // The first frame with claims: a big root's first page, or the
        // whole of a small one.
        let swept = claimtop::dashboard::testing::is_whole(&a);
        update(&mut app, a);
        if swept {
            break;
        }
    }
    term.draw(|f| draw(f, &app))?;
    let first_frame = t0.elapsed();
    // A big root's first frame shows its head: start-up ends only with the
    // whole listing in, and the memory it replaced handed back a second
    // later. Let that finish, applying whatever arrives, before the idle
    // window opens.
    let mut whole = app.origins.listing_head().is_none();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !whole && Instant::now() < deadline {
        if let Ok(a) = rx.recv_timeout(Duration::from_secs(1)) {
            whole = matches!(&a, Action::Update(u)
                if u.delta.as_ref().and_then(|d| d.whole.as_ref()).is_some_and(|w| !w.partial));
            update(&mut app, a);
        }
    }
    let settle = Instant::now() + IDLE_SETTLE;
    while Instant::now() < settle {
        if let Ok(a) = rx.recv_timeout(settle.saturating_duration_since(Instant::now())) {
            update(&mut app, a);
        }
    }
    let threads0 = threads_cpu();
    let (reads0, sweeps0) = (counters.reads(), counters.listings());
    let cpu0 = self_cpu();
    let tcpu0 = thread_cpu();
    let (mut ticks, mut other) = (0, 0);
    let (mut in_update, mut in_draw) = (Duration::ZERO, Duration::ZERO);
    let end = Instant::now() + Duration::from_secs(secs);
    let mut frames = 0;
    while Instant::now() < end {
        let Ok(first) = rx.recv_timeout(end.saturating_duration_since(Instant::now())) else {
            continue;
        };
        let t = Instant::now();
        let mut batch = vec![first];
        batch.extend(rx.try_iter().take(511));
        let mut dirty = false;
        for a in batch {
            let is_tick = matches!(a, Action::Tick(_));
            let (t1, c1) = (Instant::now(), thread_cpu());
            let counts = app.counted();
            dirty |= update(&mut app, a).redraw;
            if is_tick {
                ticks += 1;
                if std::env::var_os("CLAIMTOP_BENCH_TRACE").is_some() {
                    eprintln!(
                        "tick: {} wall, {} cpu, counts changed {}",
                        fmt_d(t1.elapsed()),
                        fmt_d(thread_cpu() - c1),
                        counts != app.counted()
                    );
                }
            } else {
                other += 1;
            }
        }
        in_update += t.elapsed();
        if dirty {
            let t = Instant::now();
            term.draw(|f| draw(f, &app))?;
            in_draw += t.elapsed();
            frames += 1;
        }
    }
    let cpu = self_cpu() - cpu0;
    let per_thread: Vec<String> = threads_cpu()
        .into_iter()
        .map(|(name, t)| {
            let before = threads0
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(Duration::ZERO, |x| x.1);
            format!("{name} {}", fmt_d(t.saturating_sub(before)))
        })
        .collect();
    eprintln!(
        "idle: main thread {} of {} CPU; {ticks} ticks, {other} other actions; update {} draw {}; by thread: {}",
        fmt_d(thread_cpu() - tcpu0),
        fmt_d(cpu),
        fmt_d(in_update),
        fmt_d(in_draw),
        per_thread.join(", ")
    );
    println!(
        "{} {} {} {frames} {} {} {}",
        cpu.as_secs_f64() * 1000.0,
        proc_status_kib("VmRSS").unwrap_or(0),
        proc_status_kib("VmHWM").unwrap_or(0),
        counters.reads() - reads0,
        counters.listings() - sweeps0,
        first_frame.as_millis()
    );
    Ok(())
}

/// Child-process side of the whole-process figures.
fn worker(mode: &str, args: &[String]) -> Res<()> {
    let arg =
        |i: usize| -> Res<&String> { args.get(i).ok_or_else(|| format!("missing arg {i}").into()) };
    match mode {
        "noop" => Ok(()),
        "readall" => {
            let dir = claimtop::claims::claims_dir(Path::new(arg(0)?));
            let n = read_all_floor(&dir, &mut Vec::with_capacity(4096));
            std::hint::black_box(n);
            Ok(())
        }
        "idle" => idle(&Root::with_events_here(arg(0)?), arg(1)?.parse()?),
        // For profilers: figure 9 on its own fixture.
        "idlefx" => {
            let sleepers = Sleepers::spawn(LIVE_HOLDERS)?;
            let fx = claims_fixture(arg(0)?.parse()?, &sleepers, &dead_pids(DEAD_HOLDERS))?;
            idle(&fx.root, arg(1)?.parse()?)
        }
        // For profilers: a fig1 fixture, then nothing but sweeps.
        "sweeploop" => {
            let sleepers = Sleepers::spawn(LIVE_HOLDERS)?;
            let fx = claims_fixture(arg(0)?.parse()?, &sleepers, &dead_pids(DEAD_HOLDERS))?;
            let n: usize = arg(1)?.parse()?;
            eprintln!("fixture ready");
            for _ in 0..n {
                std::hint::black_box(sweep(&fx.root));
            }
            Ok(())
        }
        // For profiling whole processes (`strace`, `valgrind`, `perf`
        // against `claimtop list --root ROOT`): a figure-1 root at ROOT
        // whose live holders stay alive for SECS seconds.
        "holdfx" => {
            let root = Path::new(arg(0)?);
            let sleepers = Sleepers::spawn(LIVE_HOLDERS)?;
            let mut pids = sleepers.pids();
            pids.extend(dead_pids(DEAD_HOLDERS));
            let mix = populate(root, arg(1)?.parse()?, &pids)?;
            eprintln!("fixture ready at {}: {mix}", root.display());
            std::thread::sleep(Duration::from_secs(arg(2)?.parse()?));
            Ok(())
        }
        "cycles" => {
            let root = Root::with_events_here(arg(0)?);
            let n: usize = arg(1)?.parse()?;
            let opts = AcquireOpts::default();
            // Start-up work (dirs, identity caches) is outside the counted cycles.
            std::fs::create_dir_all(root.claims_dir())?;
            let _ = status(&root, "warm");
            for _ in 0..n {
                lib_cycle(&root, "bench-key", "pty:bench", &opts)?;
            }
            Ok(())
        }
        "floorcycles" => {
            let root = Root::with_events_here(arg(0)?);
            let n: usize = arg(1)?.parse()?;
            let mut fl = FloorCycle::new(&root, "floor-key")?;
            for _ in 0..n {
                fl.cycle()?;
            }
            Ok(())
        }
        "contend" => contend(
            &Root::with_events_here(arg(0)?),
            arg(1)?.parse()?,
            arg(2)?.parse()?,
            Path::new(arg(3)?),
        ),
        "tail" => {
            let n: usize = arg(1)?.parse()?;
            let chunk = read_last_lines(Path::new(arg(0)?), n)?;
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            for l in &chunk.lines {
                out.write_all(l.text.as_bytes())?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
            Ok(())
        }
        "timeline" => timeline_open(Path::new(arg(0)?)),
        other => Err(format!("unknown worker mode {other}").into()),
    }
}

/// How long a contender waits before trying a held key again: a client
/// polling a busy key, not a spin (8 spinners on 2 cores would starve the
/// holder and measure the scheduler).
const RETRY: Duration = Duration::from_millis(1);

/// One contender: `cycles` acquire/release cycles on one key. While holding,
/// it creates a sentinel exclusively and checks the lockfile names it: a
/// second holder at the same time shows up as EEXIST or a foreign holder.
fn contend(root: &Root, idx: usize, cycles: usize, sentinel_dir: &Path) -> Res<()> {
    let holder = format!("pty:contender-{idx}");
    let opts = AcquireOpts::default();
    let sentinel = sentinel_dir.join("holder");
    let (mut ok, mut held, mut errors, mut doubles) = (0u64, 0u64, 0u64, 0u64);
    let key = "contended-key";
    while ok < cycles as u64 {
        match acquire(root, key, &holder, &opts) {
            Ok(AcquireOutcome::Acquired { .. }) => {}
            Ok(AcquireOutcome::HeldByOther { .. }) => {
                held += 1;
                std::thread::sleep(RETRY);
                continue;
            }
            Err(e) => {
                eprintln!("acquire: {e}");
                errors += 1;
                if errors > 50 {
                    break;
                }
                continue;
            }
        }
        match std::fs::File::create_new(&sentinel) {
            Ok(_) => {}
            Err(_) => doubles += 1,
        }
        let st = status(root, key);
        if st.state != ClaimState::Live
            || st.record.as_ref().map(|r| r.holder.as_str()) != Some(holder.as_str())
        {
            doubles += 1;
        }
        let _ = std::fs::remove_file(&sentinel);
        match release(root, key, &holder) {
            Ok(ReleaseOutcome::Released { .. }) => ok += 1,
            Ok(other) => {
                eprintln!("release: {other:?}");
                errors += 1;
            }
            Err(e) => {
                eprintln!("release: {e}");
                errors += 1;
            }
        }
    }
    println!("{ok} {held} {errors} {doubles}");
    Ok(())
}

/// Figure 11: the timeline over the largest log. Each repetition is a fresh
/// process (so its peak RSS is the timeline's own): the events service
/// starts on the log, the first screen is drawn from the log's tail, then
/// the whole log is indexed. The floors: reading the tail's bytes, and
/// `wc -l` over the whole file.
fn fig11(plan: &Plan, r: &mut Report) -> Res<()> {
    let size = *plan.tail_sizes.last().ok_or("no log size")?;
    let (gen, dir) = time(|| events_log(size));
    let path = Root::with_events_here(&dir?).events_file();
    let len = std::fs::metadata(&path)?.len();
    let p = path.display().to_string();
    // Warm the page cache, as an operator's machine that has been
    // appending to the log would have it.
    let wc = run_median(1, || {
        let mut c = Command::new("wc");
        c.arg("-l").arg(&path);
        Ok(c)
    })?;
    let (mut open, mut index, mut peak, mut last) = (vec![], vec![], vec![], String::new());
    for _ in 0..plan.reps {
        let out = worker_cmd("timeline", std::slice::from_ref(&p))?
            .stderr(Stdio::inherit())
            .output()?;
        if !out.status.success() {
            r.broken
                .push(format!("fig11: worker exited {}", out.status));
            return Ok(());
        }
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let f: Vec<&str> = text.split_whitespace().collect();
        let num =
            |i: usize| -> Res<u64> { Ok(f.get(i).ok_or("short worker line")?.parse::<u64>()?) };
        open.push(Duration::from_micros(num(0)?));
        index.push(Duration::from_micros(num(1)?));
        peak.push(num(2)?);
        last = text;
    }
    let floor_tail = run_median(plan.reps, || {
        let mut c = Command::new("tail");
        c.arg("-c")
            .arg(claimtop::events::service::TAIL_TENURE_BYTES.to_string())
            .arg(&path);
        Ok(c)
    })?;
    let floor_wc = run_median(plan.reps, || {
        let mut c = Command::new("wc");
        c.arg("-l").arg(&path);
        Ok(c)
    })?;
    peak.sort_unstable();
    let o = median(&open);
    let verdict = r.target("fig11", o < Duration::from_millis(300));
    r.line(format!(
        "fig11 timeline first screen, {} log: {} (floor tail -c {} MiB {}; target <300 ms) {verdict}",
        human_bytes(len),
        fmt_d(o),
        claimtop::events::service::TAIL_TENURE_BYTES >> 20,
        fmt_d(floor_tail)
    ));
    r.line(format!(
        "fig11 timeline whole-log index, {}: {} (floor wc -l {}, {:.1}x); peak RSS {:.1} MiB (max of runs {:.1} MiB) REPORT",
        human_bytes(len),
        fmt_d(median(&index)),
        fmt_d(floor_wc),
        median(&index).as_secs_f64() / floor_wc.as_secs_f64(),
        peak[peak.len() / 2] as f64 / 1024.0,
        peak[peak.len() - 1] as f64 / 1024.0
    ));
    r.note(format!(
        "whole process each run (start, events service thread, tail tenures into the dashboard model, `t`, first 160x48 frame of view::draw; then the whole-log index); last run: open_us index_us peak_kib claim_events tenures keys = {last}; log generated or cached in {}, first wc -l (cold or warm) {}",
        fmt_d(gen),
        fmt_d(wc)
    ));
    Ok(())
}

/// Peak resident set of this process so far, in KiB.
fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Worker side of figure 11: the dashboard's own model and view over the
/// log's dir as root (no claims), the events service feeding it as in the
/// live app; `t` is pressed as soon as the tail's tenures are in. Prints
/// `open_us index_us peak_kib claim_events tenures keys`.
fn timeline_open(path: &Path) -> Res<()> {
    use claimtop::events::service::{serve, Reply};
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let t0 = Instant::now();
    let dir = path
        .parent()
        .and_then(Path::parent)
        .ok_or("the log is not under <dir>/.fno/")?;
    let root = Root::with_events_here(dir);
    let (req_tx, req_rx) = channel();
    let (rep_tx, rep_rx) = channel();
    let p = root.events_file();
    std::thread::spawn(move || serve(p, req_rx, move |r| rep_tx.send(r).is_ok()));
    let mut app = bare_app(&root, (160, 48));
    let mut term = Terminal::new(TestBackend::new(160, 48))?;
    let mut open = None;
    loop {
        let reply = rep_rx.recv_timeout(Duration::from_secs(600))?;
        if let Reply::Error(e) = &reply {
            return Err(e.clone().into());
        }
        let whole = matches!(reply, Reply::Indexed { .. });
        let tail = matches!(reply, Reply::TailTenures(_));
        update(&mut app, Action::Log(Box::new(reply)));
        if tail && open.is_none() {
            // The generated log lies in the past: its latest event is "now",
            // so the first screen shows its last quarter hour.
            let latest = app.timeline.tenures.as_ref().and_then(|t| t.span());
            update(&mut app, Action::Tick(latest.map_or(now_ms(), |s| s.1)));
            update(
                &mut app,
                Action::Key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::NONE)),
            );
            term.draw(|f| draw(f, &app))?;
            let drawn: String = term
                .backend()
                .buffer()
                .content()
                .iter()
                .map(|c| c.symbol())
                .collect();
            if !drawn.contains('▓') && !drawn.contains('█') {
                return Err("the first screen shows no tenure".into());
            }
            open = Some(t0.elapsed());
        }
        if whole {
            term.draw(|f| draw(f, &app))?;
            break;
        }
    }
    let index = t0.elapsed();
    let t = app.timeline.tenures.as_ref().ok_or("no tenures")?;
    println!(
        "{} {} {} {} {} {}",
        open.unwrap_or_default().as_micros(),
        index.as_micros(),
        vm_hwm_kib(),
        t.applied(),
        t.len(),
        t.key_count()
    );
    drop(req_tx);
    Ok(())
}
