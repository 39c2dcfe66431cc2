//! Finding a time in the log without reading it all: `events --since` on a
//! gigabyte log bisects by the lines' `ts` and reads only from there.
//!
//! A log is in append order, which is time order as far as its writers'
//! clocks agree. The bisection trusts that order only to within
//! [`CLOCK_SLACK_MS`]: it lands where lines are older than the wanted time
//! by at least that much, and the reader filters every line from there by
//! its own `ts`. A writer whose clock runs further behind than the slack can
//! have a line left out; no reader of an append-only log can do better
//! without reading all of it.

use super::claim_event::parse_ts;
use super::stream::Probe;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// How far apart two writers' clocks may be and still have every line in
/// the window found.
pub const CLOCK_SLACK_MS: i64 = 5 * 60 * 1000;

/// Below this span the bisection stops and the forward scan takes over: a
/// few reads of this size cost less than more seeks.
const STOP_SPAN: u64 = 256 * 1024;

/// How far past a probe point a line with a readable `ts` is looked for
/// before that point counts as having none.
const PROBE_READ: usize = 64 * 1024;

/// A line start in `0..=end` (`end` just past a `\n`) before which every line
/// is older than `at_ms - CLOCK_SLACK_MS`, as far as the log's order holds:
/// where to start reading for the lines at or after `at_ms`.
pub fn start_for(file: &File, end: u64, at_ms: i64) -> io::Result<u64> {
    let target = at_ms.saturating_sub(CLOCK_SLACK_MS);
    // lo: a line start known to be older than target (or 0); hi: a point
    // at or after which the first dated line is not older.
    let (mut lo, mut hi) = (0u64, end);
    let mut buf = vec![0u8; PROBE_READ];
    while hi - lo > STOP_SPAN {
        let mid = lo + (hi - lo) / 2;
        match first_dated_line_after(file, mid, hi, &mut buf)? {
            Some((start, ts)) if ts < target => lo = start,
            // A dated line at or past the target, or nothing dated within
            // reach: the start lies before the probe point.
            _ => hi = mid,
        }
    }
    Ok(lo)
}

/// An offset in `0..=end` past which every line is newer than `at_ms`, as
/// far as the log's order holds (lines starting before it may be newer
/// too): where to stop reading for the lines before `at_ms`.
pub fn end_for(file: &File, end: u64, at_ms: i64) -> io::Result<u64> {
    // start_for's answer is a lower bound within STOP_SPAN of the first
    // line not older than its target; the target is past `at_ms` by the
    // slack both ways, so one span further is past every line before it.
    let lo = start_for(file, end, at_ms.saturating_add(2 * CLOCK_SLACK_MS))?;
    Ok(lo.saturating_add(STOP_SPAN).min(end))
}

/// The first line that starts after `from` (and before `hi`) and carries a
/// readable `ts`, with that time; `None` if none is found within one read.
fn first_dated_line_after(
    file: &File,
    from: u64,
    hi: u64,
    buf: &mut [u8],
) -> io::Result<Option<(u64, i64)>> {
    let want = usize::try_from(hi - from)
        .unwrap_or(buf.len())
        .min(buf.len());
    let got = read_up_to(file, &mut buf[..want], from)?;
    let chunk = &buf[..got];
    // `from` may be mid-line: the first whole line starts after a `\n`.
    let Some(first_nl) = memchr::memchr(b'\n', chunk) else {
        return Ok(None);
    };
    let mut start = first_nl + 1;
    while let Some(len) = memchr::memchr(b'\n', &chunk[start..]) {
        let line = &chunk[start..start + len];
        if let Some(ts) = Probe::of_slice(line)
            .ok()
            .and_then(|p| p.ts)
            .and_then(|ts| parse_ts(&ts))
        {
            return Ok(Some((from + start as u64, ts)));
        }
        start += len + 1;
    }
    Ok(None)
}

fn read_up_to(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn log_of(times_s: &[i64]) -> (tempfile::NamedTempFile, u64, Vec<u64>) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut starts = Vec::new();
        let mut at = 0u64;
        for t in times_s {
            let ts = crate::time::utc_hms(t * 1000);
            let line = format!(
                "{{\"ts\":\"{ts}\",\"type\":\"claim_acquired\",\"source\":\"fno-loop\",\"data\":{{\"key\":\"k{t}\",\"pad\":\"{}\"}}}}\n",
                "x".repeat(200)
            );
            starts.push(at);
            at += line.len() as u64;
            f.write_all(line.as_bytes()).unwrap();
        }
        (f, at, starts)
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
}
