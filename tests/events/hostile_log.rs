//! What writers of the protocol can leave in a log, read back by every
//! history reader (the whole-log index, the tail, a window, "as of"): lines
//! of any length, lines stamped out of order, a handover's two lines either
//! way round. Each answer must be the one the same log gives in order.

use std::io::Write;
use std::path::{Path, PathBuf};

use claimtop::events::asof::held_at;
use claimtop::events::backward::LogFile;
use claimtop::events::file_history::FileHistory;
use claimtop::events::history::History;
use claimtop::events::index::{tail_tenures, Indexer};
use claimtop::events::tenure::{Limits, TenureIndex};
use claimtop::time::utc_hms;

const BASE: i64 = 1_764_547_200_000; // 2025-12-01T00:00:00Z

fn acquired(key: &str, holder: &str, at: i64, reason: usize) -> String {
    format!(
        "{{\"ts\":\"{}\",\"type\":\"claim_acquired\",\"source\":\"fno-loop\",\"data\":{{\"acquired_at\":{at},\"expires_at\":null,\"holder\":\"{holder}\",\"host\":\"h\",\"key\":\"{key}\",\"pid\":1,\"reason\":\"{}\"}}}}\n",
        utc_hms(at),
        "r".repeat(reason)
    )
}

fn released(key: &str, holder: &str, since: i64, at: i64) -> String {
    format!(
        "{{\"ts\":\"{}\",\"type\":\"claim_released\",\"source\":\"fno-loop\",\"data\":{{\"acquired_at\":{since},\"duration_held_ms\":{},\"holder\":\"{holder}\",\"key\":\"{key}\",\"pid\":1}}}}\n",
        utc_hms(at),
        at - since
    )
}

fn write(dir: &Path, lines: &[String]) -> PathBuf {
    let path = dir.join("events.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for l in lines {
        f.write_all(l.as_bytes()).unwrap();
    }
    f.flush().unwrap();
    path
}

fn keys_held(ix: &TenureIndex, at: i64) -> Vec<(String, String)> {
    held_at(ix, at)
        .into_iter()
        .map(|h| (h.key, h.holder))
        .collect()
}

/// The same instant read by every history reader of a file log (`cap`:
/// the most one bisected read takes, below the log's size).
fn every_reader(path: &Path, at: i64, cap: u64) -> Vec<(&'static str, Vec<(String, String)>)> {
    let mut out = Vec::new();
    let lf = LogFile::open(path).unwrap().unwrap();
    let mut ix = Indexer::new(lf, Limits::default());
    while !ix.step(4 << 20).unwrap().done {}
    out.push(("the whole-log index", keys_held(ix.tenures(), at)));
    let lf = LogFile::open(path).unwrap().unwrap();
    let (tail, _) = tail_tenures(&lf, u64::MAX, Limits::default()).unwrap();
    out.push(("the tail", keys_held(&tail, at)));
    let mut whole = FileHistory::new(path.to_path_buf(), Limits::default());
    whole.start().unwrap();
    out.push(("as of", keys_held(&whole.around(at).unwrap().tenures, at)));
    // Reads of `cap` at most: the log is too big to read whole, and the
    // window is bisected.
    let mut h = FileHistory::new(path.to_path_buf(), Limits::default()).with_window_cap(cap);
    h.start().unwrap();
    out.push((
        "as of (bisected)",
        keys_held(&h.around(at).unwrap().tenures, at),
    ));
    out.push((
        "a window",
        keys_held(&h.window(at - 3_600_000, at + 3_600_000).unwrap(), at),
    ));
    out
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, h)| (k.to_string(), h.to_string()))
        .collect()
}

#[test]
fn a_claim_event_of_any_length_is_a_tenure_to_every_reader() {
    // 120 kB (past the 64 KiB a screen line keeps), 2 MB (past what a scan
    // holds in memory, and longer than a bisection's last span).
    for reason in [120_000, 2_000_000] {
        let dir = tempfile::tempdir().unwrap();
        let min = |m: i64| BASE + m * 60_000;
        let mut lines = vec![
            acquired("a", "w1", min(0), 10),
            acquired("b", "w2", min(1), 10),
        ];
        lines.push(acquired("fat", "w3", min(2), reason));
        lines.push(acquired("d", "w4", min(3), 10));
        // Twelve hours after it, so the window around the instant ends
        // inside the log and the bisection looks (and lands in the long
        // line).
        for i in 0..3000 {
            let at = min(4) + i * 15_000;
            lines.push(acquired(&format!("x{i}"), "wx", at, 10));
            lines.push(released(&format!("x{i}"), "wx", at, at + 1));
        }
        let path = write(dir.path(), &lines);
        let want = pairs(&[("a", "w1"), ("b", "w2"), ("d", "w4"), ("fat", "w3")]);
        // Room for the long line and some, but not the whole log.
        let cap = (reason as u64 + 1024 * 1024).max(1024 * 1024);
        let wrong: Vec<_> = every_reader(&path, min(10) + 500, cap)
            .into_iter()
            .filter(|(_, got)| *got != want)
            .collect();
        assert_eq!(wrong, [], "a reason of {reason} bytes");
    }
}

#[test]
fn a_handover_logged_new_holder_first_reads_as_held_by_the_new_holder() {
    let dir = tempfile::tempdir().unwrap();
    let t = |s: i64| BASE + s * 1000;
    // w2 waited, woke on w1's unlink and appended its acquire first.
    let lines = [
        acquired("k", "w1", t(0), 10),
        acquired("k", "w2", t(30) + 5, 10),
        released("k", "w1", t(0), t(30)),
    ];
    let path = write(dir.path(), &lines);
    for at in [t(31), t(3600)] {
        for (reader, got) in every_reader(&path, at, 1024 * 1024) {
            assert_eq!(
                got,
                pairs(&[("k", "w2")]),
                "{reader} at +{}s",
                (at - BASE) / 1000
            );
        }
    }
    for (reader, got) in every_reader(&path, t(10), 1024 * 1024) {
        assert_eq!(got, pairs(&[("k", "w1")]), "{reader}");
    }
}

/// Keys held just after line `n` of [`busy_day`]: in even blocks of 40
/// lines keys are acquired in turn, in odd ones released in turn.
fn held_after(n: i64) -> usize {
    let (block, pos) = (n / 40, (n % 40) as usize);
    if block % 2 == 0 {
        pos + 1
    } else {
        39 - pos
    }
}

/// A day of one event every 10 s on 40 keys in turn: each key acquired,
/// then released 400 s later.
fn busy_day() -> Vec<String> {
    (0..8_640i64)
        .map(|n| {
            let key = format!("k{}", n % 40);
            let at = BASE + n * 10_000;
            if (n / 40) % 2 == 0 {
                acquired(&key, "w", at, 10)
            } else {
                released(&key, "w", at - 400_000, at)
            }
        })
        .collect()
}

#[test]
fn lines_stamped_at_the_epoch_or_next_century_change_no_reader_s_answer() {
    let lines = busy_day();
    let clean_dir = tempfile::tempdir().unwrap();
    let clean = write(clean_dir.path(), &lines);
    let after = [740i64, 4_350, 8_010];
    let instants: Vec<i64> = after.iter().map(|n| BASE + n * 10_000 + 5_000).collect();
    let want: Vec<_> = instants
        .iter()
        .map(|&at| every_reader(&clean, at, 1024 * 1024))
        .collect();
    for (n, w) in after.iter().zip(&want) {
        for (reader, got) in w {
            assert_eq!(got.len(), held_after(*n), "{reader} after line {n}");
        }
    }
    // Where a bisection looks first (the first line after the middle byte)
    // and elsewhere; the ts only: the claim fields keep their milliseconds.
    let total: usize = lines.iter().map(String::len).sum();
    let mut start = 0;
    let middle = lines
        .iter()
        .position(|l| {
            start += l.len();
            start > total / 2
        })
        .unwrap()
        + 1;
    for (line, ts) in [
        (middle, "1970-01-01T00:00:00Z"),
        (middle, "2100-01-01T00:00:00Z"),
        (2_160, "2100-01-01T00:00:00Z"),
        (6_481, "1970-01-01T00:00:00Z"),
    ] {
        let mut bad = lines.clone();
        let stamp = bad[line][7..27].to_string();
        bad[line] = bad[line].replacen(stamp.as_str(), ts, 1);
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), &bad);
        for (&at, w) in instants.iter().zip(&want) {
            assert_eq!(
                every_reader(&path, at, 1024 * 1024),
                *w,
                "line {line} stamped {ts}, as of +{}s",
                (at - BASE) / 1000
            );
        }
    }
}

#[test]
fn a_read_cut_inside_a_long_line_takes_that_line_whole_and_the_claims_just_before_it() {
    // "fat" (1.5 MB of reason) acquired an hour before the instant and
    // "pre" a minute before that, neither released; a 5 s tenure every
    // 10 s around them. Reads of 1 MiB centred on the instant begin inside
    // the fat line.
    let dir = tempfile::tempdir().unwrap();
    let hour = 3_600_000;
    let at = BASE + 10 * hour;
    let mut lines = Vec::new();
    let mut t = at - 6 * hour;
    while t < at + 7 * hour {
        if t == at - hour - 60_000 {
            lines.push(acquired("pre", "w0", t, 10));
        }
        if t == at - hour {
            lines.push(acquired("fat", "w1", t, 1_500_000));
        }
        lines.push(acquired("tick", "t", t + 1, 10));
        lines.push(released("tick", "t", t + 1, t + 5_000));
        t += 10_000;
    }
    let path = write(dir.path(), &lines);
    let mut h = FileHistory::new(path, Limits::default()).with_window_cap(1024 * 1024);
    h.start().unwrap();
    let read = h.around(at + 6_000).unwrap();
    assert_eq!(
        keys_held(&read.tenures, at + 6_000),
        pairs(&[("fat", "w1"), ("pre", "w0")])
    );
    // Cut at both ends all the same: the read says it.
    assert!(
        !read.ends.from_first && !read.ends.to_last,
        "{:?}",
        read.ends
    );
}

#[test]
fn a_read_cut_after_a_long_line_still_goes_on_past_the_instant() {
    // a, a 1.5 MB line, then d, taken seconds before the instant; hours
    // of traffic after. Reads of 1 MiB from the log's start would end
    // inside the long line and leave d out.
    let dir = tempfile::tempdir().unwrap();
    let mut lines = vec![
        acquired("a", "w1", BASE, 10),
        acquired("fat", "w2", BASE + 1_000, 1_500_000),
        acquired("d", "w3", BASE + 2_000, 10),
    ];
    let mut t = BASE + 10_000;
    while t < BASE + 8 * 3_600_000 {
        lines.push(acquired("tick", "t", t, 10));
        lines.push(released("tick", "t", t, t + 5_000));
        t += 10_000;
    }
    let path = write(dir.path(), &lines);
    let mut h = FileHistory::new(path, Limits::default()).with_window_cap(1024 * 1024);
    h.start().unwrap();
    let read = h.around(BASE + 5_000).unwrap();
    assert_eq!(
        keys_held(&read.tenures, BASE + 5_000),
        pairs(&[("a", "w1"), ("d", "w3"), ("fat", "w2")])
    );
}
