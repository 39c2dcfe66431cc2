//! Figure: the events search's count over a 100 000-line log, as the
//! dashboard's events service runs it (its own thread, in bounded steps):
//! from the `Count` request to the reply that says the whole history is
//! counted, for a needle on every 100th line and for one on every line.
//! Printed, not asserted: a timing is a figure, not a test.

use claimtop::dashboard::testing::shown_by;
use claimtop::events::backward::Needle;
use claimtop::events::service::{serve, Reply, Request};
use std::io::Write;
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const LINES: usize = 100_000;

fn until_counted(rx: &Receiver<Reply>, id: u64) -> u64 {
    loop {
        match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(Reply::Matches(m)) if m.id == id && m.done => return m.counted,
            Ok(Reply::Error(e)) => panic!("the events service: {e}"),
            Ok(_) => {}
            Err(e) => panic!("no count: {e}"),
        }
    }
}

fn main() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("events.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("the log"));
    for i in 0..LINES {
        let reason = if i % 100 == 7 { "needle-zq" } else { "work" };
        writeln!(
            f,
            r#"{{"ts":"2027-01-15T08:00:00Z","type":"claim_acquired","source":"fno-loop","data":{{"key":"job/{}","holder":"w{}","pid":4242,"host":"bench-host","acquired_at":1800000000000,"expires_at":null,"reason":"{reason}"}}}}"#,
            i % 500,
            i % 64
        )
        .expect("write");
    }
    f.flush().expect("flush");
    drop(f);
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let (req_tx, req_rx) = channel();
    let (rep_tx, rep_rx) = channel();
    std::thread::spawn(move || serve(path, req_rx, move |r| rep_tx.send(r).is_ok()));
    println!(
        "events search count over {LINES} lines ({:.1} MiB), in the events service:",
        bytes as f64 / (1024.0 * 1024.0)
    );
    // The JSON as written, then what the dashboard asks: the text each
    // line shows (every line parsed and worded), plain and `~` regex.
    let shown = |typed: &str| {
        Needle::parse(typed)
            .expect("a pattern")
            .shown_as(shown_by(false))
    };
    for (id, needle, what) in [
        (1, Needle::new("needle-zq"), "a match every 100 lines"),
        (2, Needle::new("claim_acquired"), "a match on every line"),
        (
            3,
            Needle::new("NEEDLE-ZQ\""),
            "case-blind, a match every 100 lines",
        ),
        (4, shown("needle-zq"), "as shown, a match every 100 lines"),
        (5, shown("acquired"), "as shown, a match on every line"),
        (
            6,
            shown("~needle-z[q]"),
            "as shown, ~regex, every 100 lines",
        ),
    ] {
        let t = Instant::now();
        req_tx.send(Request::Count { id, needle }).expect("ask");
        let n = until_counted(&rep_rx, id);
        println!(
            "   {what:<38} {n:>7} counted in {:>7.1} ms",
            t.elapsed().as_secs_f64() * 1000.0
        );
    }
}
