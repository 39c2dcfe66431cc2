//! events: filters, a missing log, a reader that goes away, --follow, and
//! lines of any length printed whole in flat memory.

use super::*;

/// A log with three claim events, one of another key, and a garbage line.
fn seeded_log(s: &Sandbox) {
    s.json(&["acquire", "a", "--holder", "h"]);
    s.json(&["acquire", "b", "--holder", "h"]);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(s.events_file())
        .unwrap();
    f.write_all(b"this is not json\n").unwrap();
    drop(f);
    s.json(&["release", "a", "--holder", "h"]);
}

#[test]
fn events_json_prints_each_event_as_it_stands_and_counts_garbage_on_stderr() {
    let s = Sandbox::new();
    seeded_log(&s);
    let out = s.run(&["events", "--json"]);
    assert_eq!(code(&out), 0);
    let raw = std::fs::read_to_string(s.events_file()).unwrap();
    let expected: Vec<&str> = raw.lines().filter(|l| l.starts_with('{')).collect();
    let got: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(got, expected);
    assert!(
        stderr(&out).contains("skipped 1 unparseable"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn events_filter_by_key_and_type_then_limit_to_the_last_n() {
    let s = Sandbox::new();
    seeded_log(&s);
    let lines = |args: &[&str]| -> Vec<Value> {
        let out = s.run(args);
        assert_eq!(code(&out), 0);
        std::str::from_utf8(&out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let last = lines(&["events", "--json", "-n", "1"]);
    assert_eq!(last.len(), 1);
    assert_eq!(last[0]["type"], "claim_released");

    let a = lines(&["events", "--json", "--key", "a"]);
    let types: Vec<_> = a.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["claim_acquired", "claim_released"]);

    let acq = lines(&["events", "--json", "--type", "claim_acquired", "-n", "1"]);
    assert_eq!(acq.len(), 1);
    assert_eq!(acq[0]["data"]["key"], "b");

    let text = s.run(&["events", "--key", "b"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains("claim_acquired key=b holder=h"), "{text}");
}

#[test]
fn events_on_a_missing_log_print_nothing_and_succeed() {
    let s = Sandbox::new();
    let out = s.run(&["events", "--json"]);
    assert_eq!(code(&out), 0);
    assert!(out.stdout.is_empty());
}

#[test]
fn events_end_quietly_when_the_reader_goes_away() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.root().join(".fno")).unwrap();
    let line = r#"{"ts":"2026-01-01T00:00:00Z","type":"claim_acquired","source":"fno-loop","data":{"key":"k"}}"#;
    let mut log = String::new();
    for _ in 0..20_000 {
        log.push_str(line);
        log.push('\n');
    }
    std::fs::write(s.events_file(), log).unwrap();
    let mut child = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .args(["events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the rest of the output meets a closed pipe.
    let out = child.wait_with_output().unwrap();
    assert!(first.contains("claim_acquired"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn events_follow_prints_new_events_and_stops_on_sigint() {
    let s = Sandbox::new();
    s.json(&["acquire", "first", "--holder", "h"]);
    let mut child = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .args(["events", "--follow", "--json", "--type", "claim_acquired"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Generous bounds: they only keep a broken follower from hanging the suite.
    let wait = std::time::Duration::from_secs(30);
    let first: Value = serde_json::from_str(&rx.recv_timeout(wait).unwrap()).unwrap();
    assert_eq!(first["data"]["key"], "first");
    s.json(&["release", "first", "--holder", "h"]);
    s.json(&["acquire", "second", "--holder", "h"]);
    let second: Value = serde_json::from_str(&rx.recv_timeout(wait).unwrap()).unwrap();
    assert_eq!(
        second["data"]["key"], "second",
        "the release was filtered out"
    );
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// Run claimtop with stdout to /dev/null and return the largest peak
/// resident size (VmHWM, in MiB) seen while it ran. Polled from /proc: the
/// rusage of a child forked from this big test process counts the pages it
/// shared before exec, and VmHWM starts afresh at exec.
fn peak_rss_mib(s: &Sandbox, args: &[&str]) -> u64 {
    let mut child = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .args(args)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    loop {
        // Read before checking for exit, so the last sample is the latest.
        let hwm = std::fs::read_to_string(&status)
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
            .unwrap_or(0);
        peak_kib = peak_kib.max(hwm);
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success());
            return peak_kib / 1024;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// An events log with one event of `reason_bytes` among short ones, valid
/// objects without a string `type`, and garbage: the events in order.
fn log_with_a_long_line(s: &Sandbox, reason_bytes: usize) -> Vec<String> {
    std::fs::create_dir_all(s.root().join(".fno")).unwrap();
    let first = r#"{"ts":"t1","type":"claim_acquired","source":"fno-loop","data":{"key":"a"}}"#;
    let long = format!(
        r#"{{"ts":"t2","type":"claim_released","source":"fno-loop","data":{{"key":"a","reason":"{}"}}}}"#,
        "r".repeat(reason_bytes)
    );
    let typeless = r#"{"ts":"t3","data":{"key":"b"},"note":"no type field"}"#;
    let odd_type = r#"{"ts":"t4","type":7}"#;
    let last = r#"{"ts":"t5","type":"claim_acquired","source":"fno-loop","data":{"key":"c"}}"#;
    let log = [first, &long, typeless, "not json", "[1,2]", odd_type, last].join("\n") + "\n";
    std::fs::write(s.events_file(), &log).unwrap();
    [first, &long, typeless, odd_type, last]
        .map(String::from)
        .to_vec()
}

#[test]
fn events_print_every_object_whole_however_long_and_skip_only_what_does_not_parse() {
    let s = Sandbox::new();
    // Over the 1 MiB in-memory limit, so it is streamed from the file.
    let want = log_with_a_long_line(&s, 2 * 1024 * 1024);
    let out = s.run(&["events", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(got.len(), want.len());
    assert!(got.iter().zip(&want).all(|(g, w)| g == w), "a line changed");
    assert!(
        stderr(&out).contains("skipped 2 unparseable"),
        "{}",
        stderr(&out)
    );

    let out = s.run(&["events", "--json", "--key", "a", "-n", "1"]);
    assert_eq!(out.stdout, format!("{}\n", want[1]).into_bytes());

    let out = s.run(&["events", "--type", "claim_released"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("t2 claim_released key=a"), "{text:.200}");
    assert!(text.contains("too long to show as text"), "{text:.200}");
    assert_eq!(text.lines().count(), 1);
}

#[test]
fn a_line_over_32_mib_no_longer_hides_the_lines_before_it_and_memory_stays_flat() {
    let s = Sandbox::new();
    let want = log_with_a_long_line(&s, 40 * 1024 * 1024);
    let out = s.run(&["events", "--json", "-n", "7"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(got.len(), want.len(), "{}", stderr(&out));
    assert!(got.iter().zip(&want).all(|(g, w)| g == w), "a line changed");
    let mib = peak_rss_mib(&s, &["events", "--json", "-n", "7"]);
    assert!(mib < 24, "the 40 MiB line was held: {mib} MiB resident");
}

#[test]
fn events_json_prints_claimtops_own_event_with_a_long_reason() {
    let s = Sandbox::new();
    // Over the old 64 KiB line cap, under the 128 KiB limit of one argv word.
    let reason = "why ".repeat(25_000);
    let (rc, _) = s.json(&["acquire", "k", "--holder", "h", "--reason", &reason]);
    assert_eq!(rc, 0);
    let out = s.run(&["events", "--json"]);
    assert!(out.status.success());
    let raw = std::fs::read(s.events_file()).unwrap();
    assert_eq!(out.stdout, raw, "every line, byte for byte");
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn events_follow_prints_a_long_line_whole() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.root().join(".fno")).unwrap();
    std::fs::write(s.events_file(), "").unwrap();
    let mut child = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .args(["events", "--follow", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let long = format!(
        r#"{{"type":"x","data":{{"reason":"{}"}}}}"#,
        "z".repeat(300_000)
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(s.events_file())
        .unwrap();
    f.write_all(format!("{long}\n").as_bytes()).unwrap();
    let line = reader.join().unwrap().unwrap();
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(line.trim_end(), long);
}
