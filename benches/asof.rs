//! Figure: "as of" over a 1 GiB events log — the claims table at an
//! instant in the middle of the log, rebuilt from its tenures, as
//! `claimtop list --as-of TIME` (the dashboard's `:asof` reads the same
//! window through the same history). Whole process: wall time to the
//! table, and peak RSS, which must not grow with the log.
//!
//! The log has known tenures (5 000 keys, each acquired and released in
//! turn, one event every 20 ms), so the table at T is known too: the run
//! fails if the table is not it. The timing is printed, not asserted.

#[path = "common/mod.rs"]
mod common;

use common::{quick_mode, wait_with_rusage};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

const KEYS: u64 = 5_000;
const STEP_MS: u64 = 20;
const BASE_MS: u64 = 1_764_460_800_000; // 2025-11-30T00:00:00Z

fn ts(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_default()
}

/// Event `i`: key `i % KEYS`, its `i / KEYS`-th event, an acquire when
/// that is even and the release of that acquire when it is odd.
fn line(i: u64, out: &mut Vec<u8>) {
    let k = i % KEYS;
    let at = BASE_MS + i * STEP_MS;
    let (kind, acquired) = if (i / KEYS).is_multiple_of(2) {
        ("claim_acquired", at)
    } else {
        ("claim_released", at - KEYS * STEP_MS)
    };
    let _ = writeln!(
        out,
        "{{\"ts\":\"{}\",\"type\":\"{kind}\",\"source\":\"fno-loop\",\"data\":{{\"key\":\"asof:{k:05}/build step\",\"holder\":\"pty:w{:03}\",\"pid\":{},\"host\":\"build-host-{}\",\"acquired_at\":{acquired},\"expires_at\":null}}}}",
        ts(at),
        k % 97,
        1000 + k,
        k % 8
    );
}

/// A root whose events log holds at least `bytes` bytes of [`line`]s,
/// cached across runs; and how many lines it has.
fn fixture(bytes: u64) -> std::io::Result<(PathBuf, u64)> {
    let dir = std::env::temp_dir()
        .join("claimtop-bench-cache-v2")
        .join(format!("asof-{bytes}"));
    let log = dir.join(".fno/events.jsonl");
    let done = dir.join("done");
    if let Ok(n) = std::fs::read_to_string(&done) {
        if let Ok(lines) = n.trim().parse() {
            return Ok((dir, lines));
        }
    }
    std::fs::create_dir_all(dir.join(".fno/claims"))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&log)?);
    let (mut written, mut i, mut buf) = (0u64, 0u64, Vec::with_capacity(512));
    while written < bytes {
        buf.clear();
        line(i, &mut buf);
        w.write_all(&buf)?;
        written += buf.len() as u64;
        i += 1;
    }
    w.flush()?;
    std::fs::write(&done, i.to_string())?;
    Ok((dir, i))
}

/// The keys held at event index `t` (the instant of event `t`, before
/// it): a key's last event before then is an acquire.
fn expected_held(t: u64) -> usize {
    (0..KEYS)
        .filter(|k| {
            if *k >= t {
                return false;
            }
            let n = (t - 1 - k) / KEYS;
            n.is_multiple_of(2)
        })
        .count()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let quick = quick_mode();
    let bytes: u64 = if quick { 8 << 20 } else { 1 << 30 };
    let t0 = Instant::now();
    let (root, lines) = fixture(bytes)?;
    println!(
        "as of: a {} MiB log of {lines} events (ready in {:?})",
        bytes >> 20,
        t0.elapsed()
    );
    // Half way through, between two events.
    let t = lines / 2;
    let at_ms = BASE_MS + t * STEP_MS - STEP_MS / 2;
    let want = expected_held(t);
    let bin = env!("CARGO_BIN_EXE_claimtop");
    let mut walls = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        let child = Command::new(bin)
            .args(["--root"])
            .arg(&root)
            .args(["list", "--as-of", &ts(at_ms), "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let out = child.wait_with_output();
        let wall = start.elapsed();
        let out = out?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            format!(
                "list --as-of printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
        let got = v["claims"].as_array().map_or(0, Vec::len);
        if got != want {
            return Err(
                format!("the table at T has {got} keys, the log's tenures say {want}").into(),
            );
        }
        walls.push(wall);
    }
    // Peak memory of one more run, read from wait4.
    let child = Command::new(bin)
        .args(["--root"])
        .arg(&root)
        .args(["list", "--as-of", &ts(at_ms)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let peak = wait_with_rusage(child)?.maxrss_kib;
    walls.sort();
    println!(
        "as of {} ({} keys held, as the tenures say): first table {:?} min, {:?} median, {:?} max (target ≤ 1 s); peak RSS {} MiB",
        ts(at_ms),
        want,
        walls[0],
        walls[walls.len() / 2],
        walls[walls.len() - 1],
        peak / 1024
    );
    Ok(())
}
