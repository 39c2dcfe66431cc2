//! Figure 11: the timeline over the largest log, each repetition a fresh
//! process.

use super::*;

/// Figure 11: the timeline over the largest log. Each repetition is a fresh
/// process (so its peak RSS is the timeline's own): the events service
/// starts on the log, the first screen is drawn from the log's tail, then
/// the whole log is indexed. The floors: reading the tail's bytes, and
/// `wc -l` over the whole file.
pub(crate) fn fig11(plan: &Plan, r: &mut Report) -> Res<()> {
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
pub(crate) fn timeline_open(path: &Path) -> Res<()> {
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
