//! The whole-log side of the events reader, through its public API on real,
//! generated logs: paging at any offset, search both ways, the background
//! index's line numbers, and the tenures it rebuilds.

use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

use claimtop::events::backward::{LogFile, Needle, SearchFrom, SearchStep};
use claimtop::events::index::Indexer;
use claimtop::events::service::{serve, Anchor, Reply, Request};
use claimtop::events::tenure::{Ending, Limits, Tenure, TenureIndex};

/// A log with a known story: key `k<i % keys>`; every third tenure ends
/// released, the next reclaimed as stale, the next force-released; the
/// last tenure of each key is still held. Also junk lines and other types.
/// Returns the text and the offsets of every line.
fn story(tenures: usize, keys: usize) -> (String, Vec<u64>) {
    let mut text = String::new();
    let mut offsets = Vec::new();
    let mut push = |text: &mut String, l: String| {
        offsets.push(text.len() as u64);
        text.push_str(&l);
        text.push('\n');
    };
    let ts = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    };
    let base = 1_764_460_000_000i64;
    let rounds = tenures / keys;
    for r in 0..rounds {
        for k in 0..keys {
            let at = base + ((r * keys + k) as i64) * 10_000;
            let holder = format!("w{r}");
            // k0's third tenure (never ended) is taken over as stale.
            let (kind, prev) = if r == 3 && k == 0 {
                ("claim_stale_reclaimed", r#""previous_holder":"w2","#)
            } else {
                ("claim_acquired", "")
            };
            push(
                &mut text,
                format!(
                    r#"{{"ts":"{}","type":"{kind}","source":"fno-loop","data":{{{prev}"key":"k{k}","holder":"{holder}","pid":1,"host":"h","acquired_at":{at},"expires_at":null}}}}"#,
                    ts(at)
                ),
            );
            if k % 7 == 0 {
                push(&mut text, "not json at all".into());
                push(
                    &mut text,
                    r#"{"ts":"x","type":"loop_tick","data":{}}"#.into(),
                );
            }
            if r + 1 == rounds {
                continue;
            }
            let end = at + 5_000;
            let line = match r % 3 {
                0 => format!(
                    r#"{{"ts":"{}","type":"claim_released","source":"fno-loop","data":{{"key":"k{k}","holder":"{holder}","acquired_at":{at},"duration_held_ms":5000}}}}"#,
                    ts(end)
                ),
                1 => format!(
                    r#"{{"ts":"{}","type":"claim_force_released","source":"fno-loop","data":{{"key":"k{k}","holder":"{holder}","acquired_at":{at},"operator":"op"}}}}"#,
                    ts(end)
                ),
                _ => continue, // the next round's acquire reclaims it
            };
            push(&mut text, line);
        }
    }
    (text, offsets)
}

fn write_log(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("events.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    path
}

fn index_whole(path: &Path) -> Indexer {
    let lf = LogFile::open(path).unwrap().unwrap();
    let mut ix = Indexer::new(lf, Limits::default());
    while !ix.step(1 << 20).unwrap().done {}
    ix
}

#[test]
fn a_generated_log_of_many_megabytes_is_counted_and_numbered_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (text, offsets) = story(60_000, 500);
    assert!(text.len() > 10 << 20, "{} bytes", text.len());
    let path = write_log(dir.path(), &text);
    let ix = index_whole(&path);
    assert_eq!(ix.lines().lines(), offsets.len() as u64);
    assert_eq!(ix.lines().end(), text.len() as u64);
    for (no, &off) in offsets.iter().enumerate().step_by(4099) {
        assert_eq!(ix.lines().line_no(ix.file(), off).unwrap(), Some(no as u64));
    }
}

#[test]
fn tenures_rebuilt_from_the_log_end_the_way_their_events_say() {
    let dir = tempfile::tempdir().unwrap();
    let (text, _) = story(40, 4);
    let path = write_log(dir.path(), &text);
    let mut ix = index_whole(&path);
    let t: TenureIndex = ix.hand_on_tenures();
    assert_eq!(t.key_count(), 4);
    let k1 = t.tenures_of("k1");
    assert_eq!(k1.len(), 10);
    let endings: Vec<Ending> = k1.iter().map(|t| t.ending).collect();
    assert_eq!(endings[0], Ending::Released);
    assert_eq!(endings[1], Ending::ForceReleased);
    // The third was never released: the next acquire ended it unseen.
    assert_eq!(endings[2], Ending::Unseen);
    assert_eq!(endings[9], Ending::Held);
    assert_eq!(t.holder_name(k1[1].by.unwrap()), "op");
    // k0's fourth tenure was taken over as stale by w3.
    let k0 = t.tenures_of("k0");
    assert_eq!(k0[2].ending, Ending::Reclaimed);
    assert_eq!(t.holder_name(k0[2].by.unwrap()), "w3");
    assert_eq!(k1[0].end - k1[0].start, 5_000);
}

#[test]
fn search_walks_a_big_log_both_ways_in_bounded_steps() {
    let dir = tempfile::tempdir().unwrap();
    let (text, offsets) = story(60_000, 500);
    let path = write_log(dir.path(), &text);
    let lf = LogFile::open(&path).unwrap().unwrap();
    // The holder of round 3 of key 250 appears on its acquire line only
    // (rounds end by the round's third, so w3 of k250 is acquired, then
    // released in round 3 % 3 == 0).
    let needle = Needle::new("\"K250\",\"HOLDER\":\"W3\"");
    let mut from = SearchFrom::Before(text.len() as u64);
    let mut steps = 0;
    let found = loop {
        steps += 1;
        match lf.search(&needle, from, 1 << 20).unwrap() {
            SearchStep::Found(at) => break at,
            SearchStep::Continue(next) => from = next,
            SearchStep::NotFound => panic!("not found"),
        }
    };
    assert!(steps > 1, "the step budget bounds each step");
    assert!(offsets.contains(&found));
    let line = &lf.lines_from(found, 1).unwrap()[0];
    assert!(
        line.text.contains(r#""key":"k250","holder":"w3""#),
        "{}",
        line.text
    );
    // Forward from the start finds the same line, nothing earlier matching.
    let mut from = SearchFrom::ForwardAt(0);
    let fwd = loop {
        match lf.search(&needle, from, 4 << 20).unwrap() {
            SearchStep::Found(at) => break at,
            SearchStep::Continue(next) => from = next,
            SearchStep::NotFound => panic!("not found forward"),
        }
    };
    assert!(fwd <= found);
    let first = &lf.lines_from(fwd, 1).unwrap()[0];
    assert!(first.text.contains("\"k250\""));
}

/// The events service on its own thread, as the dashboard runs it.
fn start_service(
    path: std::path::PathBuf,
) -> (
    std::sync::mpsc::Sender<Request>,
    Receiver<Reply>,
    std::thread::JoinHandle<()>,
) {
    let (req_tx, req_rx) = channel();
    let (rep_tx, rep_rx) = channel();
    let h = std::thread::spawn(move || serve(path, req_rx, move |r| rep_tx.send(r).is_ok()));
    (req_tx, rep_rx, h)
}

fn recv(rx: &Receiver<Reply>) -> Reply {
    rx.recv_timeout(Duration::from_secs(60)).expect("a reply")
}

#[test]
fn the_service_sends_the_tail_first_then_the_whole_index_and_answers_pages_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let (text, offsets) = story(30_000, 300);
    let path = write_log(dir.path(), &text);
    let (req_tx, rep_rx, h) = start_service(path);
    match recv(&rep_rx) {
        Reply::TailTenures(t) => assert!(!t.is_empty()),
        other => panic!("first reply {other:?}"),
    }
    let mid = offsets[offsets.len() / 2];
    req_tx
        .send(Request::Page {
            anchor: Anchor::At(mid),
            before: 3,
            after: 4,
        })
        .unwrap();
    let (mut page, mut indexed) = (None, None);
    while page.is_none() || indexed.is_none() {
        match recv(&rep_rx) {
            Reply::Page(p) => page = Some(p),
            Reply::Indexed { lines, end, .. } => indexed = Some((lines, end)),
            Reply::Progress(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let page = page.unwrap();
    assert_eq!(page.lines.len(), 7);
    assert_eq!(page.anchor, 3);
    assert_eq!(page.lines[3].offset, mid);
    assert_eq!(indexed.unwrap(), (offsets.len() as u64, text.len() as u64));
    // Now that the index is whole, pages carry their line numbers.
    req_tx
        .send(Request::Page {
            anchor: Anchor::End,
            before: 5,
            after: 0,
        })
        .unwrap();
    match recv(&rep_rx) {
        Reply::Page(p) => {
            assert!(p.at_end);
            assert_eq!(p.first_line_no, Some(offsets.len() as u64 - 5));
        }
        other => panic!("unexpected {other:?}"),
    }
    drop(req_tx);
    h.join().unwrap();
}

#[test]
fn a_log_that_appears_later_is_indexed_once_it_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let (req_tx, rep_rx, h) = start_service(path.clone());
    match recv(&rep_rx) {
        Reply::Indexed { lines, end, .. } => assert_eq!((lines, end), (0, 0)),
        other => panic!("first reply {other:?}"),
    }
    let (text, offsets) = story(40, 4);
    write_log(dir.path(), &text);
    let lines = loop {
        match recv(&rep_rx) {
            Reply::Indexed { lines, .. } => break lines,
            Reply::TailTenures(_) | Reply::Progress(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(lines, offsets.len() as u64);
    drop(req_tx);
    h.join().unwrap();
}

#[test]
fn a_log_path_that_is_a_directory_is_reported_once_not_at_every_retry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    std::fs::create_dir(&path).unwrap();
    let (req_tx, rep_rx, h) = start_service(path);
    match recv(&rep_rx) {
        Reply::Error(e) => assert!(e.contains("not a regular file"), "{e}"),
        other => panic!("first reply {other:?}"),
    }
    // The service retries at every idle look (2 s) but says nothing new.
    assert!(rep_rx.recv_timeout(Duration::from_millis(4500)).is_err());
    drop(req_tx);
    h.join().unwrap();
}

#[test]
fn a_time_window_is_read_again_from_the_log_between_its_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    // 60 000 tenures, 10 s apart: a week of log, over 10 MiB.
    let (text, _) = story(60_000, 500);
    let path = write_log(dir.path(), &text);
    let (req_tx, rep_rx, h) = start_service(path);
    let whole = loop {
        if let Reply::Indexed { tenures, .. } = recv(&rep_rx) {
            break tenures;
        }
    };
    // Round 60 of every key: 10 s apart from 1_764_460_000_000 + 60 * 500 * 10 s.
    let from = 1_764_460_000_000 + 60 * 500 * 10_000;
    let to = from + 500 * 10_000;
    req_tx.send(Request::Window { from, to }).unwrap();
    let window = match recv(&rep_rx) {
        Reply::Window {
            from: f,
            to: t,
            tenures,
        } => {
            assert_eq!((f, t), (from, to));
            tenures
        }
        other => panic!("unexpected {other:?}"),
    };
    // Every key's round-60 tenure is there, as the whole index has it...
    for k in [0, 250, 499] {
        let key = format!("k{k}");
        let w = whole.tenures_of(&key)[60];
        let same = |t: &Tenure| {
            (t.start, t.end, t.ending, window.holder_name(t.holder))
                == (w.start, w.end, w.ending, whole.holder_name(w.holder))
        };
        assert!(window.tenures_of(&key).iter().any(same), "{key}");
    }
    // ...and only a small part of the log was read for it.
    assert!(
        window.len() * 10 < whole.len(),
        "{} of {}",
        window.len(),
        whole.len()
    );
    drop(req_tx);
    h.join().unwrap();
}

/// Replies until `f` takes one, the rest dropped.
fn until<T>(rx: &Receiver<Reply>, mut f: impl FnMut(Reply) -> Option<T>) -> T {
    loop {
        if let Some(t) = f(recv(rx)) {
            return t;
        }
    }
}

#[test]
fn the_service_counts_every_match_ranks_the_one_found_and_wraps_at_either_end() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..5000)
        .map(|i| {
            format!(
                r#"{{"type":"t","data":{{"key":"k{i}","hit":{}}}}}"#,
                i % 500 == 7
            )
        })
        .collect();
    let text = lines.join("\n") + "\n";
    let offsets: Vec<u64> = lines
        .iter()
        .scan(0u64, |at, l| {
            let o = *at;
            *at += l.len() as u64 + 1;
            Some(o)
        })
        .collect();
    let path = write_log(dir.path(), &text);
    let (req_tx, rep_rx, h) = start_service(path.clone());
    let count = |id: u64, needle: &str| Request::Count {
        id,
        needle: needle.into(),
    };
    req_tx.send(count(1, "\"HIT\":true")).unwrap();
    // Ten matches: lines 7, 507, ... 4507.
    let done = until(&rep_rx, |r| match r {
        Reply::Matches(m) if m.done => Some(m),
        _ => None,
    });
    assert_eq!((done.id, done.counted, done.rank), (1, 10, None));
    let search = |id, from| Request::Search {
        id,
        needle: "\"hit\":true".into(),
        from,
        wrap: true,
    };
    // Past the last match, forwards: the first, wrapped, and its rank.
    req_tx
        .send(search(2, SearchFrom::After(offsets[4507])))
        .unwrap();
    let found = until(&rep_rx, |r| match r {
        Reply::Search { id, found, wrapped } => Some((id, found, wrapped)),
        _ => None,
    });
    assert_eq!(found, (2, Some(offsets[7]), true));
    let rank = until(&rep_rx, |r| match r {
        Reply::Matches(m) => Some(m.rank),
        _ => None,
    });
    assert_eq!(rank, Some(1));
    // Backwards from the first: the last, wrapped, match 10 of 10.
    req_tx
        .send(search(3, SearchFrom::Before(offsets[7])))
        .unwrap();
    let found = until(&rep_rx, |r| match r {
        Reply::Search { found, wrapped, .. } => Some((found, wrapped)),
        _ => None,
    });
    assert_eq!(found, (Some(offsets[4507]), true));
    let m = until(&rep_rx, |r| match r {
        Reply::Matches(m) => Some(m),
        _ => None,
    });
    assert_eq!((m.counted, m.rank), (10, Some(10)));
    // A needle found nowhere: not found, wrapped or not.
    req_tx
        .send(Request::Search {
            id: 4,
            needle: "nowhere".into(),
            from: SearchFrom::Before(u64::MAX),
            wrap: true,
        })
        .unwrap();
    let found = until(&rep_rx, |r| match r {
        Reply::Search { found, wrapped, .. } => Some((found, wrapped)),
        _ => None,
    });
    assert_eq!(found, (None, false));
    // Lines appended are counted too (at the next idle look).
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(b"{\"hit\":true}\n").unwrap();
    let grown = until(&rep_rx, |r| match r {
        Reply::Matches(m) if m.counted > 10 => Some(m.counted),
        _ => None,
    });
    assert_eq!(grown, 11);
    drop(req_tx);
    h.join().unwrap();
}

/// An instant in round 60 of `story(60_000, 500)`: k250's round-60 tenure
/// has just begun, and every later key is still held from round 59.
const AS_OF_AT: i64 = 1_764_460_000_000 + (60 * 500 + 250) * 10_000 + 2_000;

fn held(rows: &[claimtop::events::asof::HeldAt]) -> Vec<(String, String, i64)> {
    rows.iter()
        .map(|r| (r.key.clone(), r.holder.clone(), r.since))
        .collect()
}

#[test]
fn as_of_a_log_bigger_than_one_read_is_read_once_around_the_instant() {
    use claimtop::events::asof::{held_at, reaches};
    use claimtop::events::file_history::FileHistory;
    use claimtop::events::history::History;
    let dir = tempfile::tempdir().unwrap();
    let (text, _) = story(60_000, 500);
    let path = write_log(dir.path(), &text);
    let (req_tx, rep_rx, h) = start_service(path.clone());
    let whole = loop {
        if let Reply::Indexed { tenures, .. } = recv(&rep_rx) {
            break tenures;
        }
    };
    drop(req_tx);
    h.join().unwrap();
    let expected = held_at(&whole, AS_OF_AT);
    assert_eq!(expected.len(), 250, "k250..k499 are held then");

    // 13 hours of this log are ~0.8 MiB: a 256 KiB cap cuts the window.
    let mut history = FileHistory::new(path, Limits::default()).with_window_cap(256 * 1024);
    history.start().unwrap();
    let (from, to) = claimtop::events::asof::window_around(AS_OF_AT);
    let cut = history.window(from, to).unwrap();
    assert!(
        !reaches(&cut, AS_OF_AT),
        "a window cut to its end misses the instant"
    );
    let around = history.around(AS_OF_AT).unwrap().tenures;
    assert!(reaches(&around, AS_OF_AT));
    assert_eq!(held(&held_at(&around, AS_OF_AT)), held(&expected));
}

#[test]
fn the_service_answers_as_of_over_several_logs_each_row_naming_its_root() {
    use claimtop::events::service::Which;
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (text, _) = story(60_000, 500);
    let path_a = write_log(a.path(), &text);
    let (text_b, _) = story(1_000, 500);
    let path_b = write_log(b.path(), &text_b);
    // The service serves a third log; the ones asked about are read
    // beside it.
    let other = tempfile::tempdir().unwrap();
    let (req_tx, rep_rx, h) = start_service(write_log(other.path(), ""));
    req_tx
        .send(Request::AsOf {
            at: AS_OF_AT,
            logs: vec![
                (Some("a".into()), Which::Path(path_a)),
                (Some("b".into()), Which::Path(path_b)),
                (
                    Some("gone".into()),
                    Which::Path(b.path().join("no-such-dir/events.jsonl")),
                ),
            ],
        })
        .unwrap();
    let (rows, trouble) = loop {
        if let Reply::AsOf {
            at,
            answer,
            trouble,
        } = recv(&rep_rx)
        {
            assert_eq!(at, AS_OF_AT);
            break (answer.rows, trouble);
        }
    };
    assert_eq!(trouble, None, "a log not there yet holds no claims");
    // b's story ended long before: its last round is still held (never
    // released), so every one of its 500 keys shows.
    let in_a = rows
        .iter()
        .filter(|r| r.root.as_deref() == Some("a"))
        .count();
    let in_b = rows
        .iter()
        .filter(|r| r.root.as_deref() == Some("b"))
        .count();
    assert_eq!((in_a, in_b), (250, 500));
    let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "one table, by key");
    // k300 is held in both: a's row first, as the logs were named.
    let k300: Vec<_> = rows
        .iter()
        .filter(|r| r.key == "k300")
        .map(|r| r.root.as_deref())
        .collect();
    assert_eq!(k300, [Some("a"), Some("b")]);
    drop(req_tx);
    h.join().unwrap();
}
