//! Figures 1 to 3: the sweep, `list` and `list --json` against the
//! read-everything floor, where a sweep's time goes, and how it scales.

use super::*;

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

pub(crate) fn fig1_and_3(
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

pub(crate) fn fig2(plan: &Plan, r: &mut Report, sleepers: &Sleepers, dead: &[i32]) -> Res<()> {
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
