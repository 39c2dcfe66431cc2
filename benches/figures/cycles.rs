//! Figures 4 and 5: one acquire/release cycle against its floor, and
//! contenders on one key that never overlap.

use super::*;

pub(crate) fn fig4(plan: &Plan, r: &mut Report) -> Res<()> {
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
pub(crate) fn lib_cycle(root: &Root, key: &str, holder: &str, opts: &AcquireOpts) -> Res<()> {
    match acquire(root, key, holder, opts)? {
        AcquireOutcome::Acquired { .. } => {}
        other => return Err(format!("uncontended acquire did not acquire: {other:?}").into()),
    }
    match release(root, key, holder)? {
        ReleaseOutcome::Released { .. } => Ok(()),
        other => Err(format!("release did not release: {other:?}").into()),
    }
}

pub(crate) fn fig5(plan: &Plan, r: &mut Report) -> Res<()> {
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

/// How long a contender waits before trying a held key again: a client
/// polling a busy key, not a spin (8 spinners on 2 cores would starve the
/// holder and measure the scheduler).
const RETRY: Duration = Duration::from_millis(1);

/// One contender: `cycles` acquire/release cycles on one key. While holding,
/// it creates a sentinel exclusively and checks the lockfile names it: a
/// second holder at the same time shows up as EEXIST or a foreign holder.
pub(crate) fn contend(root: &Root, idx: usize, cycles: usize, sentinel_dir: &Path) -> Res<()> {
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
