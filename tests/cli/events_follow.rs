//! `events --follow` runs until interrupted: SIGINT or SIGTERM end it with
//! exit 0 and whole lines out, however far the print of what the log
//! already holds has got.

use crate::common::Sandbox;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

fn line(i: usize) -> String {
    format!(
        r#"{{"ts":"2026-12-01T05:00:00Z","type":"claim_acquired","source":"fno-loop","data":{{"key":"k{i}","holder":"h","pid":1,"reason":"{}"}}}}"#,
        "p".repeat(120)
    )
}

#[test]
fn sigterm_while_the_log_so_far_prints_ends_follow_with_exit_0_and_whole_lines() {
    let s = Sandbox::new();
    let log = s.file(".fno/events.jsonl");
    std::fs::create_dir_all(log.parent().expect("parent")).expect("dir");
    // 200 000 lines, 40 MB: far more than the pipe and the output buffer
    // hold, so the print is still going when the signal comes.
    let n = 200_000;
    let mut w = std::io::BufWriter::new(std::fs::File::create(&log).expect("log"));
    for i in 0..n {
        writeln!(w, "{}", line(i)).expect("write");
    }
    w.flush().expect("flush");
    drop(w);
    let mut child = s
        .cmd(&["events", "--follow", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("the first line");
    // The print has begun; unread, the pipe fills and it waits there.
    assert_eq!(first.trim_end(), line(0));
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut rest = Vec::new();
    out.read_to_end(&mut rest).expect("the rest");
    let status = child.wait().expect("wait");
    let rest = String::from_utf8(rest).expect("UTF-8");
    let printed = 1 + rest.lines().count();
    eprintln!("SIGTERM after the first line: {printed} of {n} lines printed, then {status:?}");
    assert_eq!(
        status.code(),
        Some(0),
        "ended by signal {:?}",
        status.signal()
    );
    assert!(rest.is_empty() || rest.ends_with('\n'), "a torn last line");
    for (i, l) in rest.lines().enumerate() {
        assert_eq!(l, line(i + 1), "line {} is not whole", i + 1);
    }
}
