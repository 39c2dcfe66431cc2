//! Finding a time in the log without reading it all: `events --since` on a
//! gigabyte log bisects by the lines' `ts` and reads only from there.
//!
//! A log is in append order, which is time order as far as its writers'
//! clocks agree, and as far as every writer's clock is right: any writer
//! can append a line stamped `1970-01-01T00:00:00Z`, or next century. So
//! the bisection trusts no single line:
//!
//! - each probe reads [`PROBE_LINES`] dated lines and takes the median of
//!   their stamps, so fewer than half of them out of order cannot move it;
//! - a probe whose median falls outside the stamps already seen at the
//!   bracket's ends (by more than [`CLOCK_SLACK_MS`]) disagrees with them:
//!   the bisection then moves the way that reads more, never less, so a run
//!   of bad stamps costs reading, not lines;
//! - lines of any length are walked past, never taken for a hole.
//!
//! The readers filter every line they read by its own `ts`, so reading more
//! than needed is harmless. What no reader of an append-only log can do
//! without reading all of it: print a line that lies outside the span read
//! although its own stamp is inside the window (a line stamped a day late,
//! appended a day early).

use super::claim_event::parse_ts;
use super::stream::{self, Probe, Span};
use std::collections::VecDeque;
use std::fs::File;
use std::io;

/// How far apart two writers' clocks may be and still have every line in
/// the window found.
pub const CLOCK_SLACK_MS: i64 = 5 * 60 * 1000;

/// Dated lines one probe reads; its stamp is their median.
pub const PROBE_LINES: usize = 9;

/// Below this span the bisection stops and the forward scan takes over: a
/// few reads of this size cost less than more seeks.
const STOP_SPAN: u64 = 256 * 1024;

/// Unit of a probe's read.
const PROBE_BLOCK: usize = 64 * 1024;

/// A probe that has found a dated line stops reading lines after this many
/// bytes (a log of megabyte lines is probed a line or two at a time).
const PROBE_BYTES: u64 = 1024 * 1024;

/// The tail a probe of the log's end reads from.
const END_PROBE: u64 = 64 * 1024;

/// A line start in `0..=end` (`end` just past a `\n`) before which every line
/// is older than `at_ms - CLOCK_SLACK_MS`, as far as the log's order holds:
/// where to start reading for the lines at or after `at_ms`.
pub fn start_for(file: &File, end: u64, at_ms: i64) -> io::Result<u64> {
    let target = at_ms.saturating_sub(CLOCK_SLACK_MS);
    Ok(bracket(file, end, target, Doubt::ReadEarlier)?.0)
}

/// An offset in `0..=end` past which every line is newer than `at_ms`, as
/// far as the log's order holds (lines starting before it may be newer
/// too): where to stop reading for the lines before `at_ms`.
pub fn end_for(file: &File, end: u64, at_ms: i64) -> io::Result<u64> {
    let target = at_ms.saturating_add(CLOCK_SLACK_MS);
    Ok(bracket(file, end, target, Doubt::ReadLater)?.1)
}

/// Which way a probe that cannot be trusted moves the bisection: the way
/// that reads more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Doubt {
    /// The start of a read: move it earlier.
    ReadEarlier,
    /// The end of a read: move it later.
    ReadLater,
}

/// `(lo, hi)`: `lo` a line start before which every line is older than
/// `target`, `hi` an offset at or after which every line is not, within
/// [`STOP_SPAN`] of each other where the log's order allows.
fn bracket(file: &File, end: u64, target: i64, doubt: Doubt) -> io::Result<(u64, u64)> {
    let (mut lo, mut hi) = (0u64, end);
    // The log's two ends first. When they agree (the end is not older than
    // the start), they may answer at once, and they bound every probe.
    let Some(head) = look(file, 0, end, end)? else {
        return Ok((0, end));
    };
    let tail = match end > END_PROBE {
        true => look(file, end - END_PROBE, end, end)?,
        false => None,
    };
    let tail_ts = tail.and_then(|t| t.stamp);
    let ends_agree = match (head.stamp, tail_ts) {
        (Some(s), Some(e)) => e >= s.saturating_sub(CLOCK_SLACK_MS),
        _ => true,
    };
    if ends_agree {
        if head.stamp.is_some_and(|s| s >= target) {
            return Ok((0, 0));
        }
        if let (Some(t), Some(e)) = (tail, tail_ts) {
            if e < target {
                return Ok((t.first, end));
            }
        }
    }
    // The robust stamps seen at the bracket's ends: a probe in between
    // that falls outside them is out of order.
    let mut lo_ts = head.stamp.filter(|_| ends_agree);
    let mut hi_ts = tail_ts.filter(|_| ends_agree);
    while hi - lo > STOP_SPAN {
        let mid = lo + (hi - lo) / 2;
        let Some(l) = look(file, mid, hi, end)? else {
            // No line starts between the probe point and `hi`: the lines
            // after the point are the ones after `hi`.
            hi = mid;
            continue;
        };
        let agrees = |m: i64| {
            lo_ts.is_none_or(|x: i64| m >= x.saturating_sub(CLOCK_SLACK_MS))
                && hi_ts.is_none_or(|x: i64| m <= x.saturating_add(CLOCK_SLACK_MS))
        };
        match l.stamp.filter(|&m| agrees(m)) {
            Some(m) if m < target => (lo, lo_ts) = (l.first, Some(m)),
            Some(m) => (hi, hi_ts) = (mid, Some(m)),
            // Undated, or out of order with the bracket's ends.
            None => match doubt {
                Doubt::ReadEarlier => hi = mid,
                Doubt::ReadLater => lo = l.first,
            },
        }
    }
    Ok((lo, hi))
}

/// What a probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Look {
    /// The first line that starts after the probe point.
    first: u64,
    /// The median stamp of up to [`PROBE_LINES`] dated lines from there.
    stamp: Option<i64>,
}

/// The lines that start after `from` (at `from` when it is 0) and before
/// `hi`, read whole up to `end`: where the first begins, and the median of
/// the stamps of the first [`PROBE_LINES`] dated ones. None when no line
/// starts there.
fn look(file: &File, from: u64, hi: u64, end: u64) -> io::Result<Option<Look>> {
    let first = if from == 0 {
        0
    } else {
        // `from` may be mid-line, in a line of any length.
        match stream::line_at(file, from - 1)? {
            Some(s) => s.offset + s.len + 1,
            None => return Ok(None),
        }
    };
    if first >= hi {
        return Ok(None);
    }
    let mut stamps = Vec::with_capacity(PROBE_LINES);
    stream::for_each_line_while(file, first, end, PROBE_BLOCK, |span, bytes| {
        if span.offset >= hi {
            return Ok(false);
        }
        if let Some(t) = stamp_of(file, span, bytes) {
            stamps.push(t);
        }
        Ok(stamps.len() < PROBE_LINES
            && (stamps.is_empty() || span.offset + span.len - first < PROBE_BYTES))
    })?;
    Ok(Some(Look {
        first,
        stamp: median(&mut stamps),
    }))
}

/// A line's `ts` as epoch ms, whatever the line's length.
fn stamp_of(file: &File, span: Span, bytes: Option<&[u8]>) -> Option<i64> {
    let ts = match bytes {
        Some(line) => Probe::of_slice(line).ok()?.ts,
        None => stream::ts_of_long(file, span),
    };
    parse_ts(&ts?)
}

/// The median of `stamps` (the upper one of an even count); None when empty.
pub fn median(stamps: &mut [i64]) -> Option<i64> {
    stamps.sort_unstable();
    stamps.get(stamps.len() / 2).copied()
}

/// The first entry at or after a time in a stream of dated entries read in
/// order, judged with the entries that follow it: an entry counts only when
/// the median of the [`PROBE_LINES`] from it is at or after the time too,
/// so one entry stamped next century neither starts nor ends a window
/// early. Entries go in with [`FirstAfter::push`]; the answer comes out as
/// soon as it is settled, or from [`FirstAfter::finish`] at the end.
#[derive(Debug)]
pub struct FirstAfter<K> {
    t: i64,
    run: VecDeque<(K, i64)>,
}

impl<K> FirstAfter<K> {
    pub fn new(t: i64) -> FirstAfter<K> {
        FirstAfter {
            t,
            run: VecDeque::with_capacity(PROBE_LINES),
        }
    }

    /// The next dated entry; the answer once it is settled.
    pub fn push(&mut self, entry: K, ts: i64) -> Option<K> {
        self.run.push_back((entry, ts));
        if self.run.len() < PROBE_LINES {
            return None;
        }
        self.settle()
    }

    /// No more entries: the answer among the last few, if any.
    pub fn finish(mut self) -> Option<K> {
        while !self.run.is_empty() {
            if let Some(k) = self.settle() {
                return Some(k);
            }
        }
        None
    }

    /// Judge the oldest entry held: the answer, or drop it.
    fn settle(&mut self) -> Option<K> {
        let (_, front) = self.run.front()?;
        let mut stamps: Vec<i64> = self.run.iter().map(|(_, t)| *t).collect();
        if *front >= self.t && median(&mut stamps).is_some_and(|m| m >= self.t) {
            return self.run.pop_front().map(|(k, _)| k);
        }
        self.run.pop_front();
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn log_of(times_s: &[i64]) -> (tempfile::NamedTempFile, u64, Vec<u64>) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut starts = Vec::new();
        let mut text = Vec::new();
        let pad = "x".repeat(200);
        for t in times_s {
            let ts = crate::time::utc_hms(t * 1000);
            starts.push(text.len() as u64);
            writeln!(
                text,
                "{{\"ts\":\"{ts}\",\"type\":\"claim_acquired\",\"source\":\"fno-loop\",\"data\":{{\"key\":\"k{t}\",\"pad\":\"{pad}\"}}}}"
            )
            .unwrap();
        }
        f.write_all(&text).unwrap();
        (f, text.len() as u64, starts)
    }

    #[test]
    fn the_start_is_a_line_start_older_than_the_slack_and_close_to_it() {
        // One line a second for a day and a bit: about 24 MiB.
        let base = 1_764_547_200; // 2025-12-01T00:00:00Z
        let times: Vec<i64> = (0..90_000).map(|i| base + i).collect();
        let (f, end, starts) = log_of(&times);
        let at_s = base + 80_000;
        let start = start_for(f.as_file(), end, at_s * 1000).unwrap();
        let i = starts.binary_search(&start).expect("a line start");
        let slack_s = CLOCK_SLACK_MS / 1000;
        assert!(
            times[i] < at_s - slack_s,
            "starts at {} for {at_s}",
            times[i]
        );
        // Close: within the stop span's worth of lines before the slack.
        let lines_per_span = (STOP_SPAN / 260) as i64 + 2;
        assert!(
            times[i] >= at_s - slack_s - lines_per_span,
            "{} for {at_s}",
            times[i]
        );
    }

    #[test]
    fn a_time_before_the_log_starts_at_its_beginning_and_one_after_near_its_end() {
        let times: Vec<i64> = (0..20_000).map(|i| 1_000_000 + i).collect();
        let (f, end, _) = log_of(&times);
        assert_eq!(start_for(f.as_file(), end, 0).unwrap(), 0);
        let late = start_for(f.as_file(), end, 10_000_000_000).unwrap();
        assert!(end - late <= STOP_SPAN, "{late} of {end}");
    }

    #[test]
    fn undated_and_broken_lines_never_move_the_start_past_a_wanted_line() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for i in 0..30_000i64 {
            let line = if i % 3 == 0 {
                "not json at all, just noise to bisect around\n".to_string()
            } else {
                let ts = crate::time::utc_hms((1_000_000 + i) * 1000);
                format!("{{\"ts\":\"{ts}\",\"type\":\"t\"}}\n")
            };
            f.write_all(line.as_bytes()).unwrap();
        }
        let end = f.as_file().metadata().unwrap().len();
        let at = (1_000_000 + 20_000) * 1000;
        let start = start_for(f.as_file(), end, at).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::open(f.path()).unwrap(), &mut text)
            .unwrap();
        let wanted = crate::time::utc_hms(at);
        let first = text.find(&wanted).unwrap() as u64;
        assert!(start <= first);
    }

    /// A log of one line a second from `base`, with the lines at `bad`
    /// stamped as given instead: the file, its end, every line's start and
    /// its own stamp (seconds).
    fn planted(
        n: usize,
        base: i64,
        bad: &[(usize, i64)],
    ) -> (tempfile::NamedTempFile, u64, Vec<u64>, Vec<i64>) {
        let mut times: Vec<i64> = (0..n as i64).map(|i| base + i).collect();
        for &(at, t) in bad {
            if let Some(x) = times.get_mut(at) {
                *x = t;
            }
        }
        let (f, end, starts) = log_of(&times);
        (f, end, starts, times)
    }

    /// Every line that is not planted and is stamped at or after `at_s`
    /// starts at or after `start`; every one stamped before `until_s`
    /// starts before `stop`.
    fn check_window(
        starts: &[u64],
        times: &[i64],
        good: impl Fn(usize) -> bool,
        (at_s, start): (i64, u64),
        (until_s, stop): (i64, u64),
    ) -> Result<(), String> {
        for (i, (&s, &t)) in starts.iter().zip(times).enumerate() {
            if !good(i) {
                continue;
            }
            if t >= at_s && s < start {
                return Err(format!("line {i} ({t}) before the start {start}"));
            }
            if t < until_s && s >= stop {
                return Err(format!("line {i} ({t}) past the end {stop}"));
            }
        }
        Ok(())
    }

    /// 5 000 lines with `bad` planted, bisected for the window of `width`
    /// seconds `at` seconds in: every line start, the span found, and
    /// whether it left out a line `good` says is not planted.
    fn bisected(
        bad: &[(usize, i64)],
        good: impl Fn(usize) -> bool,
        at: i64,
        width: i64,
    ) -> (Vec<u64>, (u64, u64), Result<(), String>) {
        let (f, end, starts, times) = planted(5000, BASE, bad);
        let (from, to) = (BASE + at, BASE + at + width);
        let start = start_for(f.as_file(), end, from * 1000).unwrap();
        let stop = end_for(f.as_file(), end, to * 1000).unwrap();
        let lost = check_window(&starts, &times, good, (from, start), (to, stop));
        (starts, (start, stop), lost)
    }

    const BASE: i64 = 1_764_547_200; // 2025-12-01T00:00:00Z
    const NEXT_CENTURY: i64 = 4_102_444_800; // 2100-01-01

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        #[test]
        fn isolated_bad_stamps_anywhere_neither_lose_a_line_nor_slow_the_bisection(
            bad in proptest::collection::vec((0usize..5000, 0usize..3, 0i64..20_000), 1..5),
            on_probes in proptest::collection::vec((1usize..16, 0usize..3), 0..3),
            at in 0i64..5000,
            width in 1i64..3000,
        ) {
            // Anywhere, and where the bisection looks (the first lines
            // after each sixteenth of the file).
            let planted_at: Vec<(usize, i64)> = bad
                .iter()
                .map(|&(i, kind, r)| (i, [0, NEXT_CENTURY, BASE - 10_000 + r][kind]))
                .chain(on_probes.iter().map(|&(k, kind)| (5000 * k / 16, [0, NEXT_CENTURY, BASE][kind])))
                .collect();
            let good = |i: usize| !planted_at.iter().any(|&(b, _)| b == i);
            let (starts, (start, stop), lost) = bisected(&planted_at, good, at, width);
            proptest::prop_assert_eq!(lost, Ok(()));
            // Close, as in a log without them: within the stop span of the
            // slack's edge, so the bad lines cost no extra reading.
            let slack = CLOCK_SLACK_MS / 1000;
            let per_span = (STOP_SPAN / 260) as i64 + 2;
            let line = starts.partition_point(|&s| s < start);
            proptest::prop_assert!(
                line as i64 >= at - slack - per_span - 1,
                "start at line {} for {}",
                line,
                at
            );
            let last = starts.partition_point(|&s| s < stop) as i64;
            proptest::prop_assert!(last <= at + width + slack + per_span + 1, "stop at line {}", last);
        }

    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        #[test]
        fn a_run_of_bad_stamps_costs_reading_never_a_line(
            at_line in 0usize..5000,
            run in 1usize..60,
            kind in 0usize..2,
            at in 0i64..5000,
            width in 1i64..3000,
        ) {
            let t = [0, NEXT_CENTURY][kind];
            let planted_at: Vec<(usize, i64)> = (at_line..at_line + run).map(|i| (i, t)).collect();
            let good = |i: usize| i < at_line || i >= at_line + run;
            let (_, _, lost) = bisected(&planted_at, good, at, width);
            proptest::prop_assert_eq!(lost, Ok(()));
        }
    }

    #[test]
    fn the_window_check_names_a_line_left_out_at_either_end() {
        let starts = [0, 10, 20, 30];
        let times = [100, 101, 102, 103];
        let all = |_| true;
        assert_eq!(
            check_window(&starts, &times, all, (101, 10), (103, 30)),
            Ok(())
        );
        assert!(check_window(&starts, &times, all, (101, 11), (103, 30)).is_err());
        assert!(check_window(&starts, &times, all, (101, 10), (103, 20)).is_err());
        // A planted line is not asked for.
        assert_eq!(
            check_window(&starts, &times, |i| i != 1, (101, 11), (103, 30)),
            Ok(())
        );
    }

    #[test]
    fn one_line_stamped_1970_where_the_bisection_looks_first_moves_nothing() {
        // The figure of the report: a day of one line a second, line 43 200
        // (the first probe's) stamped at the epoch; --since start+2h.
        let (f, end, starts, _) = planted(86_400, BASE, &[(43_200, 0)]);
        for from in [7_200, 72_000] {
            let start = start_for(f.as_file(), end, (BASE + from) * 1000).unwrap();
            let line = starts.partition_point(|&s| s < start) as i64;
            assert!(line <= from - 300, "--since +{from}s starts at line {line}");
            assert!(
                line >= from - 300 - 1100,
                "--since +{from}s starts at line {line}: no slower"
            );
        }
    }

    #[test]
    fn lines_longer_than_a_probe_read_are_dated_and_walked_past() {
        // A minute apart, all over the length a scan holds in memory (a
        // --reason of a megabyte): a probe meets only long lines.
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut starts = Vec::new();
        let mut at = 0u64;
        for i in 0..30i64 {
            let ts = crate::time::utc_hms((BASE + i * 60) * 1000);
            let pad = 1_100_000;
            let line = format!(
                "{{\"ts\":\"{ts}\",\"type\":\"claim_acquired\",\"data\":{{\"key\":\"k{i}\",\"reason\":\"{}\"}}}}\n",
                "r".repeat(pad)
            );
            starts.push(at);
            at += line.len() as u64;
            f.write_all(line.as_bytes()).unwrap();
        }
        let slack = (CLOCK_SLACK_MS / 60_000) as usize;
        for i in [8usize, 15, 22] {
            let t = (BASE + i as i64 * 60) * 1000;
            let start = start_for(f.as_file(), at, t).unwrap();
            let stop = end_for(f.as_file(), at, t).unwrap();
            assert!(start <= starts[i], "line {i} is read");
            assert!(starts[i - 1] < stop, "the line before {i} is read");
            // And no more than the slack and a line or two either side.
            assert!(
                start >= starts[i - slack - 2],
                "line {i}: starts at {start}"
            );
            assert!(stop <= starts[i + slack + 2], "line {i}: stops at {stop}");
        }
    }

    #[test]
    fn the_first_entry_after_a_time_is_not_fooled_by_one_from_next_century() {
        let mut stamps: Vec<i64> = (0..40).collect();
        stamps[5] = 1_000_000;
        let first = |t: i64| {
            let mut f = FirstAfter::new(t);
            stamps
                .iter()
                .enumerate()
                .find_map(|(i, &s)| f.push(i, s))
                .or_else(|| f.finish())
        };
        assert_eq!(first(20), Some(20));
        assert_eq!(first(0), Some(0));
        assert_eq!(first(39), Some(39), "the last one, settled at the end");
        assert_eq!(first(40), None);
    }
}
