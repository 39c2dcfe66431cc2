//! Figure 6: the tail of an events log, in process and as `events`.

use super::*;

pub(crate) fn fig6(plan: &Plan, r: &mut Report) -> Res<()> {
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
