//! The performance figures the README quotes (issue "Performance"), each
//! printed with its conditions and beside a floor measured in the same run.
//!
//! `cargo bench --bench figures` runs them at full size; `cargo test
//! --benches` (no `--bench` argument), `--quick` or `CLAIMTOP_BENCH_QUICK=1`
//! runs every figure at toy sizes as a smoke test. Whole-process figures
//! re-execute this binary as a worker (`CLAIMTOP_BENCH_WORKER`), so they need
//! nothing but the library.

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

use cycles::{contend, fig4, fig5, lib_cycle};
use dashboard::{dashboard_figures, idle};
use listing::{fig1_and_3, fig2};
use tail::fig6;
use timeline::{fig11, timeline_open};

#[path = "figures/cycles.rs"]
mod cycles;
#[path = "figures/dashboard.rs"]
mod dashboard;
#[path = "figures/listing.rs"]
mod listing;
#[path = "figures/tail.rs"]
mod tail;
#[path = "figures/timeline.rs"]
mod timeline;

#[path = "figures/big.rs"]
mod big;

mod common;

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

fn self_exe() -> Res<PathBuf> {
    Ok(std::env::current_exe()?)
}

fn worker_cmd(mode: &str, args: &[String]) -> Res<Command> {
    let mut c = Command::new(self_exe()?);
    c.env(WORKER_ENV, mode).args(args).stdin(Stdio::null());
    Ok(c)
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

fn human_bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64)
    }
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
