//! The figures the README quotes for `acquire --wait` and `claimtop run`:
//! how soon a waiter wakes, what a wait costs while it sleeps, and what
//! `run` adds to a command.
//!
//! `cargo bench --bench wait` runs them at full size; `cargo test --benches`
//! (no `--bench` argument), `--quick` or `CLAIMTOP_BENCH_QUICK=1` runs each
//! once, small, as a smoke test.

use claimtop::claims::{acquire, release, AcquireOpts, AcquireOutcome, Root};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_claimtop");

fn quick() -> bool {
    let args: Vec<String> = std::env::args().collect();
    std::env::var_os("CLAIMTOP_BENCH_QUICK").is_some()
        || args.iter().any(|a| a == "--quick")
        || !args.iter().any(|a| a == "--bench")
}

fn claimtop(root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--root").arg(root).args(args);
    c
}

/// Take `key` for `holder` in process, bound to `pid`.
fn hold(root: &Root, key: &str, holder: &str, pid: u32) {
    let opts = AcquireOpts {
        pid: Some(pid),
        ..AcquireOpts::default()
    };
    let taken = acquire(root, key, holder, &opts);
    assert!(
        matches!(taken, Ok(AcquireOutcome::Acquired { .. })),
        "{taken:?}"
    );
}

/// A waiter for `key`, returned once its one stderr line says it waits.
fn waiter(root: &Path, key: &str, extra: &[&str]) -> Child {
    let me = std::process::id().to_string();
    let mut args = vec!["acquire", key, "--holder", "waiter", "--pid", &me];
    args.extend_from_slice(extra);
    let mut child = claimtop(root, &args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn waiter");
    let mut line = String::new();
    let stderr = child.stderr.as_mut().expect("stderr");
    BufReader::new(stderr).read_line(&mut line).expect("read");
    assert!(line.contains("waiting for"), "{line}");
    child
}

fn sleeper() -> Child {
    Command::new("sleep").arg("300").spawn().expect("sleep")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Median and maximum, in ms.
fn summary(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    let max = v[v.len() - 1];
    format!("median {median:.0} ms, max {max:.0} ms (n = {})", v.len())
}

/// From the holder's release returning to the waiter's exit.
fn wake_on_release(root: &Root, n: usize) -> String {
    let samples = (0..n)
        .map(|_| {
            let mut holder = sleeper();
            hold(root, "k", "first", holder.id());
            let mut w = waiter(&root.root, "k", &["--wait"]);
            release(root, "k", "first").expect("release");
            let t = Instant::now();
            w.wait().expect("waiter");
            let took = ms(t.elapsed());
            release(root, "k", "waiter").expect("release");
            let _ = holder.kill();
            let _ = holder.wait();
            took
        })
        .collect();
    summary(samples)
}

/// From a PID-bound holder's death (no file event) to the waiter's exit.
fn wake_on_death(root: &Root, n: usize) -> String {
    let samples = (0..n)
        .map(|i| {
            let mut holder = sleeper();
            hold(root, "k", "first", holder.id());
            let mut w = waiter(&root.root, "k", &["--wait"]);
            // At a different phase of the 2 s safety re-check each time.
            std::thread::sleep(Duration::from_millis(300 * i as u64 % 2000));
            let _ = holder.kill();
            let _ = holder.wait();
            let t = Instant::now();
            w.wait().expect("waiter");
            let took = ms(t.elapsed());
            release(root, "k", "waiter").expect("release");
            took
        })
        .collect();
    summary(samples)
}

/// CPU (user + system) of a whole `--wait=DUR` process that never gets
/// the key, start-up included.
fn idle_cpu(root: &Root, secs: u64) -> String {
    let mut holder = sleeper();
    hold(root, "k", "first", holder.id());
    let dur = format!("--wait={secs}");
    let children_cpu = || {
        // SAFETY: rusage is a plain out-struct filled by the call.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: ru is a valid out-pointer.
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
        let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
        ms(ru.ru_utime) + ms(ru.ru_stime)
    };
    let before = children_cpu();
    let mut w = waiter(&root.root, "k", &[&dur]);
    // Only the waiter is reaped in between, so the difference is its own.
    w.wait().expect("waiter");
    let cpu = children_cpu() - before;
    release(root, "k", "first").expect("release");
    let _ = holder.kill();
    let _ = holder.wait();
    format!("{cpu:.1} ms of CPU for a {secs} s wait")
}

/// Median wall time of a whole command, in ms.
fn median_of(n: usize, mut cmd: impl FnMut() -> Command) -> f64 {
    let mut v: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            let st = cmd().stdout(Stdio::null()).status().expect("run");
            assert!(st.success());
            ms(t.elapsed())
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run_cost(root: &Path, n: usize) -> String {
    let run = median_of(n, || {
        claimtop(root, &["run", "r", "--holder", "h", "--", "true"])
    });
    let pair = median_of(n, || {
        let script = format!(
            "{BIN} --root {r} acquire r --holder h --pid $$ && {BIN} --root {r} release r --holder h",
            r = root.display()
        );
        let mut c = Command::new("sh");
        c.args(["-c", &script]);
        c
    });
    let bare = median_of(n, || Command::new("true"));
    format!(
        "`run r -- true` {run:.1} ms; `acquire` + `release` processes {pair:.1} ms; `true` {bare:.1} ms (medians of {n})"
    )
}

fn main() {
    let quick = quick();
    let dir = tempfile::TempDir::new().expect("temp root");
    let root = Root::with_events_here(dir.path());
    let (n_release, n_death, idle_s, n_run) = if quick { (2, 1, 1, 2) } else { (15, 6, 10, 20) };
    println!("wait/run figures{}", if quick { " (quick)" } else { "" });
    println!(
        "  release -> waiter exits:   {}",
        wake_on_release(&root, n_release)
    );
    println!(
        "  holder killed -> exits:    {}",
        wake_on_death(&root, n_death)
    );
    println!("  idle wait:                 {}", idle_cpu(&root, idle_s));
    println!(
        "  run overhead:              {}",
        run_cost(dir.path(), n_run)
    );
}
