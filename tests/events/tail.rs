//! Behaviour of the events log reader through its public API, on real files.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use claimtop::events::parse_event;
use claimtop::events::tail::{read_last_lines, Line, TailError, MAX_LINE_BYTES, MAX_POLL_BYTES};
use claimtop::store::file::follow::{Follower, Reset};
use proptest::prelude::*;

fn log_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("events.jsonl")
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open for append");
    f.write_all(bytes).expect("append");
}

fn texts(lines: &[Line]) -> Vec<&str> {
    lines.iter().map(|l| l.text.as_str()).collect()
}

#[test]
fn the_last_n_lines_of_a_small_file_come_back_oldest_first_with_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append(&path, b"one\ntwo\nthree\nfour\n");
    let chunk = read_last_lines(&path, 2).unwrap();
    assert_eq!(texts(&chunk.lines), ["three", "four"]);
    assert_eq!(chunk.lines[0].offset, 8);
    assert_eq!(chunk.lines[1].offset, 14);
    assert_eq!(chunk.offset, 19);
    assert!(chunk.file_id.is_some());
}

#[test]
fn asking_for_more_lines_than_exist_returns_all_of_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append(&path, b"a\n\nc\n");
    let chunk = read_last_lines(&path, 1000).unwrap();
    assert_eq!(texts(&chunk.lines), ["a", "", "c"]);
    assert_eq!(chunk.lines[0].offset, 0);
}

#[test]
fn zero_lines_requested_still_reports_where_to_continue() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append(&path, b"a\nb\npart");
    let chunk = read_last_lines(&path, 0).unwrap();
    assert!(chunk.lines.is_empty());
    assert_eq!(chunk.offset, 4);
    assert_eq!(chunk.file_len, 8);
}

#[test]
fn a_partial_last_line_is_withheld_then_delivered_once_its_newline_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append(&path, b"done\nhalf-writ");

    let chunk = read_last_lines(&path, 10).unwrap();
    assert_eq!(texts(&chunk.lines), ["done"]);
    assert_eq!(chunk.offset, 5);

    let (mut f, initial) = Follower::open(&path, 10).unwrap();
    assert_eq!(texts(&initial), ["done"]);
    assert!(f.poll().unwrap().lines.is_empty(), "still partial");
    append(&path, b"ten\nnext");
    let p = f.poll().unwrap();
    assert_eq!(texts(&p.lines), ["half-written"]);
    assert_eq!(p.lines[0].offset, 5);
    assert_eq!(p.reset, None);
    append(&path, b"\n");
    assert_eq!(texts(&f.poll().unwrap().lines), ["next"]);
}

#[test]
fn lines_spanning_the_64k_block_boundary_are_read_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    // Lengths that are not divisors of 64 KiB, so boundaries fall mid-line,
    // including one line longer than a whole block.
    let mut want = Vec::new();
    let mut body = Vec::new();
    for i in 0..400 {
        let len = if i == 200 {
            70_000
        } else {
            100 + (i * 37) % 1500
        };
        let line = format!("{i:04}:{}", "x".repeat(len));
        body.extend_from_slice(line.as_bytes());
        body.push(b'\n');
        want.push(line);
    }
    append(&path, &body);
    assert!(body.len() > 4 * 64 * 1024);

    let all = read_last_lines(&path, 400).unwrap();
    let got: Vec<String> = all.lines.iter().map(|l| l.text.clone()).collect();
    let expect: Vec<String> = want
        .iter()
        .map(|l| l[..l.len().min(MAX_LINE_BYTES)].to_string())
        .collect();
    assert_eq!(got, expect);
    assert!(all.lines[200].truncated);
    assert_eq!(all.lines.iter().filter(|l| l.truncated).count(), 1);

    for n in [1, 57, 199, 201] {
        let some = read_last_lines(&path, n).unwrap();
        let got: Vec<&str> = texts(&some.lines);
        let expect: Vec<&str> = expect[400 - n..].iter().map(String::as_str).collect();
        assert_eq!(got, expect, "n = {n}");
        for l in &some.lines {
            let start = l.offset as usize;
            assert_eq!(&body[start..start + 5], &l.text.as_bytes()[..5]);
        }
    }
}

#[test]
fn truncation_is_detected_and_reading_restarts_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append(&path, b"old one\nold two\n");
    let (mut f, _) = Follower::open(&path, 10).unwrap();
    fs::write(&path, b"new\n").unwrap();
    let p = f.poll().unwrap();
    assert_eq!(p.reset, Some(Reset::Truncated));
    assert_eq!(texts(&p.lines), ["new"]);
    assert_eq!(p.lines[0].offset, 0);
    append(&path, b"after\n");
    let p = f.poll().unwrap();
    assert_eq!(p.reset, None);
    assert_eq!(texts(&p.lines), ["after"]);
}

#[test]
fn truncation_followed_by_a_refill_longer_than_before_is_still_detected() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append(&path, b"short\n");
    let (mut f, _) = Follower::open(&path, 10).unwrap();
    fs::write(&path, b"a much longer replacement line\n").unwrap();
    let p = f.poll().unwrap();
    assert_eq!(p.reset, Some(Reset::Truncated));
    assert_eq!(texts(&p.lines), ["a much longer replacement line"]);
}

#[test]
fn rotation_drains_the_old_file_then_follows_the_new_one_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append(&path, b"before\n");
    let (mut f, initial) = Follower::open(&path, 10).unwrap();
    assert_eq!(texts(&initial), ["before"]);
    let old_id = f.file_id();

    // A writer still holding the old file finishes a line after the rename.
    let mut old_writer = OpenOptions::new().append(true).open(&path).unwrap();
    let rotated = dir.path().join("events.jsonl.1");
    fs::rename(&path, &rotated).unwrap();
    old_writer.write_all(b"late old line\n").unwrap();
    append(&path, b"fresh one\nfresh two\n");

    let p = f.poll().unwrap();
    assert_eq!(texts(&p.lines), ["late old line"]);
    assert_eq!(
        p.reset, None,
        "old lines come before the reset, not with it"
    );
    let p = f.poll().unwrap();
    assert_eq!(p.reset, Some(Reset::Replaced));
    assert_eq!(texts(&p.lines), ["fresh one", "fresh two"]);
    assert_eq!(p.lines[0].offset, 0);
    assert_ne!(f.file_id(), old_id);
    assert!(f.poll().unwrap().lines.is_empty());
}

#[test]
fn rotation_with_nothing_left_in_the_old_file_switches_in_the_same_poll() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append(&path, b"before\n");
    let (mut f, _) = Follower::open(&path, 10).unwrap();
    fs::rename(&path, dir.path().join("old")).unwrap();
    append(&path, b"new\n");
    let p = f.poll().unwrap();
    assert_eq!(p.reset, Some(Reset::Replaced));
    assert_eq!(texts(&p.lines), ["new"]);
}

#[test]
fn a_missing_file_is_empty_not_an_error_and_is_followed_once_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".fno").join("events.jsonl");
    let chunk = read_last_lines(&path, 5).unwrap();
    assert!(chunk.lines.is_empty());
    assert_eq!(chunk.offset, 0);
    assert_eq!(chunk.file_id, None);

    let (mut f, initial) = Follower::open(&path, 5).unwrap();
    assert!(initial.is_empty());
    let p = f.poll().unwrap();
    assert!(p.missing);
    assert!(p.lines.is_empty());

    fs::create_dir_all(path.parent().unwrap()).unwrap();
    append(&path, b"first\n");
    let p = f.poll().unwrap();
    assert!(!p.missing);
    assert_eq!(p.reset, None, "first appearance is not a reset");
    assert_eq!(texts(&p.lines), ["first"]);
}

#[test]
fn a_deleted_then_recreated_file_is_reported_as_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append(&path, b"x\n");
    let (mut f, _) = Follower::open(&path, 10).unwrap();
    fs::remove_file(&path).unwrap();
    let p = f.poll().unwrap();
    assert!(p.missing);
    assert!(p.lines.is_empty());
    append(&path, b"y\n");
    let p = f.poll().unwrap();
    assert_eq!(p.reset, Some(Reset::Replaced));
    assert_eq!(texts(&p.lines), ["y"]);
}

#[test]
fn an_invalid_utf8_line_survives_lossily() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    append(&path, b"ok\nbad \xff\xfe bytes\nfine\n");
    let chunk = read_last_lines(&path, 3).unwrap();
    assert_eq!(chunk.lines[1].text, "bad \u{fffd}\u{fffd} bytes");
    assert_eq!(chunk.lines[2].text, "fine");
    assert!(parse_event(&chunk.lines[1].text).is_err());
}

#[test]
fn an_overlong_line_is_truncated_and_flagged_and_the_next_line_is_unaffected() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    let (mut f, _) = Follower::open(&path, 10).unwrap();
    let mut big = vec![b'q'; 3 * MAX_LINE_BYTES];
    big.push(b'\n');
    append(&path, &big);
    append(&path, b"small\n");

    let chunk = read_last_lines(&path, 2).unwrap();
    assert!(chunk.lines[0].truncated);
    assert_eq!(chunk.lines[0].text.len(), MAX_LINE_BYTES);
    assert_eq!(chunk.lines[1].text, "small");
    assert!(!chunk.lines[1].truncated);
    assert_eq!(chunk.lines[1].offset, big.len() as u64);

    let p = f.poll().unwrap();
    assert_eq!(p.lines.len(), 2);
    assert!(p.lines[0].truncated);
    assert_eq!(p.lines[0].text.len(), MAX_LINE_BYTES);
    assert_eq!(p.lines[1].text, "small");
}

#[test]
fn a_huge_burst_is_consumed_over_several_polls() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    let (mut f, _) = Follower::open(&path, 10).unwrap();
    let line = format!("{}\n", "e".repeat(1023));
    let count = (MAX_POLL_BYTES as usize / line.len()) * 2 + 10;
    append(&path, line.repeat(count).as_bytes());

    let first = f.poll().unwrap();
    assert!(first.more);
    assert!(f.offset() <= MAX_POLL_BYTES);
    let mut total = first.lines.len();
    let mut polls = 1;
    loop {
        let p = f.poll().unwrap();
        polls += 1;
        total += p.lines.len();
        if !p.more {
            break;
        }
        assert!(polls < 10, "burst never drained");
    }
    assert_eq!(total, count);
    assert!(polls >= 3);
}

#[test]
fn a_directory_at_the_path_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = read_last_lines(dir.path(), 5).unwrap_err();
    assert!(matches!(
        err,
        TailError::NotRegularFile {
            kind: "directory",
            ..
        }
    ));
    assert!(Follower::open(dir.path(), 5).is_err());
}

#[test]
fn a_fifo_at_the_path_is_rejected_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // A blocking open would hang here forever; the harness would never finish.
    let err = read_last_lines(&path, 5).unwrap_err();
    assert!(matches!(
        err,
        TailError::NotRegularFile { kind: "FIFO", .. }
    ));
}

#[test]
fn a_follower_whose_path_becomes_a_directory_errors_and_recovers_later() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    let (mut f, _) = Follower::open(&path, 5).unwrap();
    fs::create_dir(&path).unwrap();
    assert!(f.poll().is_err());
    fs::remove_dir(&path).unwrap();
    append(&path, b"back\n");
    assert_eq!(texts(&f.poll().unwrap().lines), ["back"]);
}

#[test]
fn a_one_gib_sparse_log_yields_its_last_lines_and_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_in(&dir);
    let file = File::create(&path).unwrap();
    // Sparse: a GiB of length without a GiB of disk.
    file.set_len(1 << 30).unwrap();
    drop(file);
    let mut tail = String::from("\n");
    for i in 0..1000 {
        tail.push_str(&format!("{{\"type\":\"t\",\"n\":{i}}}\n"));
    }
    append(&path, tail.as_bytes());

    // Speed is measured in the benches (figure 6); here, correctness.
    let chunk = read_last_lines(&path, 500).unwrap();
    assert_eq!(chunk.lines.len(), 500);
    assert_eq!(chunk.lines[499].text, "{\"type\":\"t\",\"n\":999}");
    assert_eq!(chunk.offset, (1u64 << 30) + tail.len() as u64);

    // Far more lines asked for than exist: the scan gives up inside the
    // hole instead of reading the whole GiB of it.
    let chunk = read_last_lines(&path, 100_000).unwrap();
    assert_eq!(chunk.lines.len(), 1000);
    assert_eq!(chunk.lines[0].text, "{\"type\":\"t\",\"n\":0}");

    let (mut f, lines) = Follower::open(&path, 50).unwrap();
    assert_eq!(lines.len(), 50);
    assert!(f.poll().unwrap().lines.is_empty());
}

#[test]
fn parse_event_accepts_the_envelope_and_exposes_its_fields() {
    let line = r#"{"ts":"2026-01-01T00:00:00Z","type":"claim_acquired","source":"fno-loop","data":{"key":"k","holder":"h"}}"#;
    let ev = parse_event(line).unwrap();
    assert_eq!(ev.ts(), Some("2026-01-01T00:00:00Z"));
    assert_eq!(ev.kind(), "claim_acquired");
    assert_eq!(ev.source(), Some("fno-loop"));
    assert_eq!(ev.key(), Some("k"));
    assert_eq!(ev.holder(), Some("h"));
    assert_eq!(ev.data().map(|d| d.len()), Some(2));
    // Printed back, the event is as it stands in the log (order preserved).
    assert_eq!(serde_json::to_string(ev.value()).unwrap(), line);
}

#[test]
fn parse_event_tolerates_odd_data_but_rejects_non_events() {
    let ev = parse_event(r#"{"type":"x","data":{"key":7}}"#).unwrap();
    assert_eq!(ev.key(), None);
    assert_eq!(ev.ts(), None);
    assert!(parse_event("[1,2]").is_err());
    assert!(parse_event("{}").is_err());
    assert!(parse_event("garbage").is_err());
    assert!(parse_event("").is_err());
    assert!(parse_event(r#"{"type":null}"#).is_err());
}

/// The last `n` complete lines of `bytes` as a whole-file reading finds
/// them: (text, offset), and where a reader goes on from.
fn last_lines_of(bytes: &[u8], n: usize) -> (Vec<(String, u64)>, u64) {
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, &b) in bytes[..end].iter().enumerate() {
        if b == b'\n' {
            lines.push((
                String::from_utf8_lossy(&bytes[start..i]).into_owned(),
                start as u64,
            ));
            start = i + 1;
        }
    }
    let skip = lines.len().saturating_sub(n);
    (lines.split_off(skip), end as u64)
}

/// What a reader must make of a line: an event exactly when it is a JSON
/// object with a string `type`.
fn is_event(text: &str) -> Option<(String, Option<String>)> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(m)) => {
            let kind = m.get("type")?.as_str()?.to_string();
            Some((kind, m.get("ts").and_then(|t| t.as_str()).map(String::from)))
        }
        _ => None,
    }
}

/// Text shaped like an event, often one: an object with a `type` of any
/// JSON kind (or none), a `ts`, and noise around it.
fn event_shaped() -> impl Strategy<Value = String> {
    let kind = prop_oneof![
        4 => "[a-z_]{0,12}".prop_map(|k| format!("\"type\":\"{k}\",")),
        1 => Just("\"type\":7,".to_string()),
        1 => Just("\"type\":null,".to_string()),
        1 => Just(String::new()),
    ];
    let ts = prop_oneof![
        Just("\"ts\":\"2026-01-01T00:00:00Z\",".to_string()),
        Just("\"ts\":1,".to_string()),
        Just(String::new()),
    ];
    let open = prop_oneof![4 => Just("{"), 1 => Just("["), 1 => Just(" {")];
    let close = prop_oneof![4 => Just("}"), 1 => Just(""), 1 => Just("}}")];
    (kind, ts, "[a-z0-9 ]{0,8}", open, close)
        .prop_map(|(k, t, v, open, close)| format!("{open}{t}{k}\"data\":\"{v}\"{close}"))
}

proptest! {
    #[test]
    fn the_last_n_lines_read_from_any_bytes_are_the_files_last_n_complete_lines(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b'\n'), any::<u8>(), Just(b'{'), Just(b'a')], 0..2048),
        n in 0usize..50,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = log_in(&dir);
        append(&path, &bytes);
        let chunk = read_last_lines(&path, n).unwrap();
        let got: Vec<(String, u64)> = chunk
            .lines
            .iter()
            .map(|l| (l.text.clone(), l.offset))
            .collect();
        let (want, end) = last_lines_of(&bytes, n);
        prop_assert_eq!(got, want);
        prop_assert_eq!(chunk.offset, end);
        prop_assert!(chunk.lines.iter().all(|l| !l.truncated));
        // And each line is an event exactly when it is an object with a
        // string type.
        for l in &chunk.lines {
            let parsed = parse_event(&l.text).ok().map(|e| (e.kind().to_string(), e.ts().map(String::from)));
            prop_assert_eq!(parsed, is_event(&l.text));
        }
    }

    #[test]
    fn an_event_is_exactly_a_json_object_with_a_string_type(s in event_shaped()) {
        let parsed = parse_event(&s).ok().map(|e| {
            prop_assert!(e.value().is_object());
            Ok((e.kind().to_string(), e.ts().map(String::from)))
        });
        let parsed = parsed.transpose()?;
        prop_assert_eq!(parsed, is_event(&s), "{}", s);
    }

    #[test]
    fn parse_event_never_panics_on_json_shaped_text(s in r#"[\[\]{}":,0-9a-z\-.eE ]{0,200}"#) {
        let parsed = parse_event(&s).ok().map(|e| (e.kind().to_string(), e.ts().map(String::from)));
        prop_assert_eq!(parsed, is_event(&s));
    }
}
