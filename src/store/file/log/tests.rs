use super::*;
use crate::events::tail::Line;
use std::fs::{self, OpenOptions};
use std::io::Write;

fn append(path: &Path, text: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open the log");
    f.write_all(text.as_bytes()).expect("append");
}

fn texts(lines: &[Line]) -> Vec<String> {
    lines.iter().map(|l| l.text.clone()).collect()
}

/// Every line the feed brings until `want` lines came (a positive sign,
/// never a wait for absence), and the last cursor it gave.
fn read_lines(feed: &mut dyn LogFeed, want: usize) -> (Vec<String>, Option<Cursor>) {
    let mut got = Vec::new();
    let mut at = None;
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < want && Instant::now() < deadline {
        match feed
            .next(Duration::from_millis(200))
            .expect("the feed reads")
        {
            Some(LogNews::Lines { lines, next, .. }) => {
                got.extend(texts(&lines));
                at = Some(next);
            }
            Some(other) => panic!("unexpected news {other:?}"),
            None => {}
        }
    }
    (got, at)
}

fn log_in(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("events.jsonl")
}

#[test]
fn tail_then_follow_from_its_cursor_brings_no_line_twice_and_misses_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_in(&dir);
    append(&log, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n");
    let (lines, at) = tail(&log, 2).expect("tail");
    let lines: Vec<Line> = lines.into_iter().map(|(_, l)| l).collect();
    assert_eq!(texts(&lines), ["{\"n\":2}", "{\"n\":3}"]);
    // Written between the tail and the feed: still brought, once.
    append(&log, "{\"n\":4}\n");
    let mut feed = follow(&log, Some(&at)).expect("follow");
    append(&log, "{\"n\":5}\n");
    let (got, _) = read_lines(feed.as_mut(), 2);
    assert_eq!(got, ["{\"n\":4}", "{\"n\":5}"]);
}

#[test]
fn a_line_half_written_at_the_tail_is_brought_once_it_is_finished() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_in(&dir);
    append(&log, "{\"n\":1}\n{\"n\":");
    let (lines, at) = tail(&log, 10).expect("tail");
    assert_eq!(lines.len(), 1, "the partial line is not a line yet");
    let mut feed = follow(&log, Some(&at)).expect("follow");
    append(&log, "2}\n");
    let (got, _) = read_lines(feed.as_mut(), 1);
    assert_eq!(got, ["{\"n\":2}"]);
}

#[test]
fn a_feed_resumed_from_the_cursor_its_lines_carried_starts_after_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_in(&dir);
    append(&log, "{\"n\":1}\n");
    let mut feed = follow(&log, Some(&Cursor::start())).expect("follow");
    let (got, at) = read_lines(feed.as_mut(), 1);
    assert_eq!(got, ["{\"n\":1}"], "the start cursor brings every line");
    drop(feed);
    append(&log, "{\"n\":2}\n");
    let at = at.expect("the lines carried a cursor");
    let mut again = follow(&log, Some(&at)).expect("follow again");
    let (got, _) = read_lines(again.as_mut(), 1);
    assert_eq!(got, ["{\"n\":2}"]);
}

#[test]
fn a_log_missing_at_the_tail_is_read_from_its_first_line_once_it_appears() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_in(&dir);
    let (lines, at) = tail(&log, 10).expect("tail of nothing");
    assert!(lines.is_empty());
    append(&log, "{\"n\":1}\n");
    let mut feed = follow(&log, Some(&at)).expect("follow");
    let (got, _) = read_lines(feed.as_mut(), 1);
    assert_eq!(got, ["{\"n\":1}"]);
}

#[test]
fn a_log_replaced_since_the_cursor_starts_over_with_a_reset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_in(&dir);
    append(&log, "{\"n\":1}\n");
    let (_, at) = tail(&log, 10).expect("tail");
    fs::rename(&log, dir.path().join("events.jsonl.1")).expect("rotate");
    append(&log, "{\"n\":9}\n");
    let mut feed = follow(&log, Some(&at)).expect("follow");
    let first = feed.next(Duration::from_secs(5)).expect("read");
    assert_eq!(first, Some(LogNews::Reset { log: Log::Own }));
    let (got, _) = read_lines(feed.as_mut(), 1);
    assert_eq!(got, ["{\"n\":9}"]);
}

#[test]
fn a_closed_feed_says_so_at_its_next_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let feed = follow(&log_in(&dir), None).expect("follow");
    let close = feed.closer().expect("a file feed can be closed");
    let mut feed = feed;
    close();
    assert!(matches!(
        feed.next(Duration::from_secs(5)),
        Err(StoreError::FeedClosed)
    ));
}

#[test]
fn a_cursor_taken_while_a_line_was_half_written_brings_that_line_once_finished() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_in(&dir);
    append(&log, "{\"n\":1}\n{\"n\":");
    let mut feed = follow(&log, Some(&Cursor::start())).expect("follow");
    let (got, at) = read_lines(feed.as_mut(), 1);
    assert_eq!(got, ["{\"n\":1}"]);
    drop(feed);
    append(&log, "2}\n");
    let at = at.expect("the lines carried a cursor");
    let mut again = follow(&log, Some(&at)).expect("follow again");
    let (got, _) = read_lines(again.as_mut(), 1);
    assert_eq!(got, ["{\"n\":2}"]);
}
