//! `events --since/--until`: only the events in the window, on one root and
//! several, found without reading the log from its start.

use crate::common::{claimtop, Sandbox};
use claimtop::time::{now_ms, utc_hms};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::Output;

fn event_line(ts_ms: i64, kind: &str, key: &str) -> String {
    format!(
        "{{\"ts\":\"{}\",\"type\":\"{kind}\",\"source\":\"fno-loop\",\"data\":{{\"key\":\"{key}\",\"holder\":\"h\",\"pid\":1}}}}\n",
        utc_hms(ts_ms)
    )
}

fn write_log(root: &Path, lines: &[String]) {
    std::fs::create_dir_all(root.join(".fno")).unwrap();
    let mut f = std::fs::File::create(root.join(".fno/events.jsonl")).unwrap();
    for l in lines {
        f.write_all(l.as_bytes()).unwrap();
    }
}

fn keys(out: &Output) -> Vec<String> {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::str::from_utf8(&out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["data"]["key"].as_str().unwrap().to_string()
        })
        .collect()
}

/// One event a minute for six hours from `start`, key `m<minute>`.
fn six_hours(start: i64) -> Vec<String> {
    (0..360)
        .map(|m| event_line(start + m * 60_000, "claim_acquired", &format!("m{m}")))
        .collect()
}

#[test]
fn since_and_until_keep_exactly_the_events_in_the_window() {
    let s = Sandbox::new();
    let start = 1_764_547_200_000; // 2025-12-01T00:00:00Z
    write_log(s.root(), &six_hours(start));
    let got = keys(&s.run(&[
        "events",
        "--json",
        "--since",
        "2025-12-01T02:00:00Z",
        "--until",
        "2025-12-01T02:05:00Z",
    ]));
    assert_eq!(got, ["m120", "m121", "m122", "m123", "m124"]);
    // The last N are the last N of the window, and an offset is honoured.
    let got = keys(&s.run(&[
        "events",
        "--json",
        "-n",
        "2",
        "--since",
        "2025-12-01T03:00:00+01:00",
        "--until",
        "2025-12-01T02:30:00Z",
    ]));
    assert_eq!(got, ["m148", "m149"]);
    // Text lines obey the same window.
    let out = s.run(&["events", "--since", "2025-12-01T05:58:00Z"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.contains("key=m358") && text.contains("key=m359"),
        "{text}"
    );
}

#[test]
fn since_a_duration_counts_back_from_now() {
    let s = Sandbox::new();
    let now = now_ms();
    let lines: Vec<String> = (0..10)
        .map(|i| {
            event_line(
                now - ((10 - i) * 15 - 5) * 60_000,
                "claim_released",
                &format!("q{i}"),
            )
        })
        .collect();
    write_log(s.root(), &lines);
    // 145, 130 … 10 minutes ago: the last hour holds the last four.
    let got = keys(&s.run(&["events", "--json", "--since", "1h"]));
    assert_eq!(got, ["q6", "q7", "q8", "q9"]);
}

#[test]
fn a_window_over_several_roots_merges_only_what_is_in_it() {
    let (a, b) = (Sandbox::new(), Sandbox::new());
    let start = 1_764_547_200_000;
    write_log(a.root(), &six_hours(start));
    let shifted: Vec<String> = (0..360)
        .map(|m| {
            event_line(
                start + m * 60_000 + 30_000,
                "claim_released",
                &format!("b{m}"),
            )
        })
        .collect();
    write_log(b.root(), &shifted);
    let out = claimtop(a.home.path())
        .arg("--root")
        .arg(a.root())
        .arg("--root")
        .arg(b.root())
        .args([
            "events",
            "--json",
            "--since",
            "2025-12-01T01:00:00Z",
            "--until",
            "2025-12-01T01:02:00Z",
        ])
        .output()
        .unwrap();
    assert_eq!(keys(&out), ["m60", "b60", "m61", "b61"]);
}

#[test]
fn since_skips_the_old_part_of_the_log_without_reading_it() {
    let s = Sandbox::new();
    let now = now_ms();
    // Three hours ago: 100 000 events with 10 000 garbage lines among them;
    // the window (the last hour) holds 50 clean ones. Reading the log from
    // its start would meet all the garbage and count it on stderr; the
    // bisection lands a bounded stretch before the window, so only the
    // garbage in that stretch is met.
    let mut lines = Vec::new();
    for i in 0..100_000 {
        if i % 10 == 5 {
            lines.push("garbage that is not an event\n".to_string());
        } else {
            lines.push(event_line(now - 3 * 3_600_000 + i, "claim_acquired", "old"));
        }
    }
    for i in 0..50 {
        lines.push(event_line(
            now - 30 * 60_000 + i * 1000,
            "claim_acquired",
            &format!("new{i}"),
        ));
    }
    write_log(s.root(), &lines);
    let out = s.run(&["events", "--json", "--since", "1h"]);
    assert_eq!(keys(&out).len(), 50);
    let met = skipped(&out);
    assert!(
        met < 1_000,
        "{met} of the 10 000 old garbage lines were read"
    );
    // Without a window the same log is read whole, and the garbage counted.
    let all = s.run(&["events", "--json", "-n", "1", "--type", "claim_acquired"]);
    assert_eq!(skipped(&all), 10_000);
}

fn skipped(out: &Output) -> usize {
    let err = String::from_utf8_lossy(&out.stderr);
    err.split("skipped ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[test]
fn a_time_that_is_not_one_is_a_usage_error_naming_the_flag() {
    let s = Sandbox::new();
    for (flag, bad) in [
        ("--since", "yesterday"),
        ("--until", "25:61"),
        ("--since", "-1h"),
    ] {
        let out = s.run(&["events", flag, bad]);
        assert_eq!(out.status.code(), Some(2), "{flag} {bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{err}");
        let out = s.run(&["events", "--json", flag, bad]);
        assert_eq!(out.status.code(), Some(2));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["outcome"], "usage_error");
    }
}

#[test]
fn a_window_that_ends_before_it_begins_or_a_type_no_event_has_is_a_usage_error() {
    let s = Sandbox::new();
    write_log(s.root(), &six_hours(1_764_547_200_000));
    let backwards = [
        "events",
        "--since",
        "2025-12-01T03:00:00Z",
        "--until",
        "2025-12-01T02:00:00Z",
    ];
    let out = s.run(&backwards);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is after --until"), "{err}");
    let out = s.run(&[&["--json"][..], &backwards].concat());
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["outcome"], "usage_error");
    // An empty window (since = until) is no error: nothing is in it.
    let out = s.run(&[
        "events",
        "--since",
        "2025-12-01T03:00:00Z",
        "--until",
        "2025-12-01T03:00:00Z",
    ]);
    assert_eq!(out.status.code(), Some(0));

    let out = s.run(&["--json", "events", "--type", "claim_aquired"]);
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["outcome"], "usage_error");
    let said = doc["error"].as_str().unwrap_or("");
    for known in [
        "claim_acquired",
        "claim_idempotent_reacquired",
        "claim_stale_reclaimed",
        "claim_released",
        "claim_force_released",
        "claim_renewed",
        "claim_expired",
    ] {
        assert!(said.contains(known), "{said}");
    }
    assert!(
        said.contains("claim_aquired"),
        "the bad name is named: {said}"
    );
}

#[test]
fn a_line_stamped_1970_where_the_bisection_looks_does_not_cut_the_window() {
    // A day of one event every 10 s; the line just past the middle byte
    // (where a bisection looks first) restamped at the epoch.
    let s = Sandbox::new();
    let start = 1_764_547_200_000;
    let mut lines: Vec<String> = (0..8_640)
        .map(|i| event_line(start + i * 10_000, "claim_acquired", &format!("e{i}")))
        .collect();
    let total: usize = lines.iter().map(String::len).sum();
    let mut at = 0;
    let middle = lines
        .iter()
        .position(|l| {
            at += l.len();
            at > total / 2
        })
        .unwrap()
        + 1;
    lines[middle] = lines[middle].replacen(
        &utc_hms(start + middle as i64 * 10_000),
        "1970-01-01T00:00:00Z",
        1,
    );
    write_log(s.root(), &lines);
    // --since start+2h: every line from 720 on but the restamped one.
    let got = keys(&s.run(&["events", "--json", "--since", "2025-12-01T02:00:00Z"]));
    assert_eq!(got.len(), 8_640 - 720 - 1);
    assert_eq!(got.first().map(String::as_str), Some("e720"));
}
