//! The whole log, indexed once: how many lines it has, where each
//! checkpoint line starts (so any offset's line number is one short count
//! away), and the tenures of every key.
//!
//! Built forward in bounded steps ([`Indexer::step`]), so the thread doing
//! it can answer page and search requests between steps, and a caller can
//! show progress. Memory is a checkpoint per [`CHECKPOINT_BYTES`] of log
//! plus the [`TenureIndex`]'s own limits: independent of the line count.

use super::backward::LogFile;
use super::claim_event::{with_claim_event, with_claim_event_read};
use super::seek::CLOCK_SLACK_MS;
use super::stream;
use super::tail::{FileId, Line, LineAssembler, TailError, MAX_POLL_LINES};
use super::tenure::{Limits, TenureIndex};

/// One checkpoint per this many bytes: a 1 GiB log has 1 024, and a line
/// number is at most one 1 MiB newline count away.
pub const CHECKPOINT_BYTES: u64 = 1024 * 1024;

/// Read unit of an indexing step.
const READ_BLOCK: usize = 256 * 1024;

/// Line numbers by offset: the first line starting at or after every
/// [`CHECKPOINT_BYTES`] boundary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineIndex {
    /// (offset of a line start, its 0-based line number), ascending.
    checkpoints: Vec<(u64, u64)>,
    /// The time of the first claim event at or after each checkpoint (or
    /// of the last one before it), so a time finds its place in the file.
    times: Vec<Option<i64>>,
    /// Time of the last claim event indexed.
    last_time: Option<i64>,
    /// Complete lines indexed.
    lines: u64,
    /// Bytes indexed: always a line boundary.
    end: u64,
}

impl LineIndex {
    /// Complete lines counted so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The offset up to which lines are counted.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// 0-based line number of the line starting at `offset`, if the index
    /// covers it. Reads at most [`CHECKPOINT_BYTES`].
    pub fn line_no(&self, file: &LogFile, offset: u64) -> Result<Option<u64>, TailError> {
        if offset > self.end {
            return Ok(None);
        }
        if offset == self.end {
            return Ok(Some(self.lines));
        }
        let i = self.checkpoints.partition_point(|&(o, _)| o <= offset);
        let (base_off, base_no) = match i {
            0 => (0, 0),
            i => self.checkpoints[i - 1],
        };
        Ok(Some(base_no + file.count_newlines(base_off, offset)?))
    }

    /// Count the line starting at `line_start`, which records an event at
    /// `at` (if it is a claim event).
    fn record(&mut self, line_start: u64, at: Option<i64>) {
        let next = self.checkpoints.last().map_or(CHECKPOINT_BYTES, |&(o, _)| {
            (o / CHECKPOINT_BYTES + 1) * CHECKPOINT_BYTES
        });
        if line_start >= next {
            self.checkpoints.push((line_start, self.lines));
            self.times.push(at.or(self.last_time));
        }
        if at.is_some() {
            self.last_time = at;
        }
        self.lines += 1;
    }

    /// A line start from which reading finds every event at or after `t`:
    /// the last checkpoint whose time is before it (0 when none is).
    pub fn offset_before(&self, t: i64) -> u64 {
        (0..self.times.len())
            .rev()
            .find(|&i| self.time_at(i).is_some_and(|x| x < t))
            .map_or(0, |i| self.checkpoints[i].0)
    }

    /// A line start past every event before `t` (give or take clock skew):
    /// the first checkpoint whose time is after it, else the indexed end.
    pub fn offset_after(&self, t: i64) -> u64 {
        (0..self.times.len())
            .find(|&i| self.time_at(i).is_some_and(|x| x > t))
            .map_or(self.end, |i| self.checkpoints[i].0)
    }

    /// The time of checkpoint `i`, unless it is out of order with both its
    /// neighbours by more than the clock slack: one event stamped at the
    /// epoch (or next century) that happens to sit at a checkpoint places
    /// nothing. A quiet hour in the log is out of order with neither.
    fn time_at(&self, i: usize) -> Option<i64> {
        let own = self.times[i]?;
        let prev = i.checked_sub(1).and_then(|p| self.times[p]);
        let next = self.times.get(i + 1).copied().flatten();
        let slack = CLOCK_SLACK_MS;
        let low = prev.is_some_and(|p| own < p.saturating_sub(slack))
            && next.is_none_or(|n| own < n.saturating_sub(slack));
        let high = next.is_some_and(|n| own > n.saturating_add(slack))
            && prev.is_none_or(|p| own > p.saturating_add(slack));
        (!low && !high).then_some(own)
    }
}

/// Where an indexing pass stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub scanned: u64,
    /// The file length when the pass last looked.
    pub len: u64,
    pub lines: u64,
    pub done: bool,
}

/// Builds a [`LineIndex`] and a [`TenureIndex`] over one file, forward, a
/// bounded step at a time.
#[derive(Debug)]
pub struct Indexer {
    file: LogFile,
    lines: LineIndex,
    tenures: TenureIndex,
    asm: LineAssembler,
    /// Next byte to read.
    at: u64,
    buf: Vec<u8>,
    batch: Vec<Line>,
    len: u64,
    tenures_on: bool,
}

impl Indexer {
    pub fn new(file: LogFile, limits: Limits) -> Indexer {
        Indexer {
            file,
            lines: LineIndex::default(),
            tenures: TenureIndex::new(limits),
            asm: LineAssembler::default(),
            at: 0,
            buf: vec![0u8; READ_BLOCK],
            batch: Vec::new(),
            len: 0,
            tenures_on: true,
        }
    }

    pub fn file(&self) -> &LogFile {
        &self.file
    }

    pub fn file_id(&self) -> FileId {
        self.file.id()
    }

    pub fn lines(&self) -> &LineIndex {
        &self.lines
    }

    pub fn tenures(&self) -> &TenureIndex {
        &self.tenures
    }

    /// Index up to `budget` more bytes (whole lines; a partial last line
    /// waits for its `\n`). The pass is done when it reaches the length the
    /// file had when the step began.
    pub fn step(&mut self, budget: u64) -> Result<Progress, TailError> {
        self.len = self.file.len()?;
        let stop = self.at.saturating_add(budget);
        while self.at < stop && self.at < self.len {
            let want = (self.len - self.at)
                .min(stop - self.at)
                .min(self.buf.len() as u64) as usize;
            let got = self.file.read_at(&mut self.buf[..want], self.at)?;
            if got == 0 {
                break;
            }
            self.batch.clear();
            let used = self
                .asm
                .feed(&self.buf[..got], self.at, &mut self.batch, MAX_POLL_LINES);
            let on = self.tenures_on;
            for line in &self.batch {
                let at = if line.truncated {
                    whole_line_at(&self.file, line.offset, on.then_some(&mut self.tenures))?
                } else if on {
                    self.tenures.apply_line_at(&line.text)
                } else {
                    with_claim_event(&line.text, |e| e.at)
                };
                self.lines.record(line.offset, at);
            }
            self.at += used as u64;
            // The assembler holds only the partial remainder, so the lines
            // counted end that many bytes before the read position.
            self.lines.end = self.at - self.asm.pending();
        }
        Ok(self.progress())
    }

    pub fn progress(&self) -> Progress {
        Progress {
            scanned: self.lines.end,
            len: self.len,
            lines: self.lines.lines,
            done: self.at >= self.len,
        }
    }

    /// Finish: the line index (its `end` is where a follower of this file
    /// takes over) and the tenures.
    pub fn finish(self) -> (LineIndex, TenureIndex) {
        (self.lines, self.tenures)
    }

    /// Hand the tenures built so far to the caller; from then on the
    /// indexer only counts lines (the caller keeps the tenures live).
    pub fn hand_on_tenures(&mut self) -> TenureIndex {
        self.tenures_on = false;
        std::mem::take(&mut self.tenures)
    }
}

/// The tenures of the last `bytes` of the log only: what a first screen of
/// the timeline needs, in a few milliseconds, while the whole log is still
/// being indexed. Returns the tenures and the offset the tail began at.
pub fn tail_tenures(
    file: &LogFile,
    bytes: u64,
    limits: Limits,
) -> Result<(TenureIndex, u64), TailError> {
    let len = file.len()?;
    let mut ix = TenureIndex::new(limits);
    let mut from = len.saturating_sub(bytes);
    if from > 0 {
        // Start at a whole line: skip the one the cut landed in.
        match next_line_start(file, from)? {
            Some(s) => from = s,
            None => return Ok((ix, len)),
        }
    }
    apply_lines(file, from, len, &mut ix)?;
    Ok((ix, from))
}

/// The start of the first line that begins at or after `at` (`at` itself
/// when a line ends just before it), however long the line `at` falls in;
/// None when no `\n` follows.
pub fn next_line_start(file: &LogFile, at: u64) -> Result<Option<u64>, TailError> {
    if at == 0 {
        return Ok(Some(0));
    }
    let span = stream::line_at(file.as_file(), at - 1)
        .map_err(|e| TailError::io(file.path(), "read", e))?;
    Ok(span.map(|s| s.offset + s.len + 1))
}

/// The start of the line that holds the byte at `at`, however long it is
/// (read back a block at a time): a read cut at a byte budget still takes
/// the line it was cut in whole, rather than lose its claim event.
pub fn line_start_at(file: &LogFile, at: u64) -> Result<u64, TailError> {
    // The last line of the bytes up to and including `at` starts there.
    stream::start_of_last_lines(file.as_file(), at.saturating_add(1), 1)
        .map_err(|e| TailError::io(file.path(), "read", e))
}

/// Apply to `ix` every complete line that starts in `[from, stop)` (`from`
/// a line start), whatever its length: lines up to
/// [`stream::INLINE_LINE_BYTES`] from the scan's own blocks, longer ones
/// read piece by piece for their claim fields alone. A claim event is never
/// lost for its length: a `--reason` of megabytes is still a tenure.
pub fn apply_lines(
    file: &LogFile,
    from: u64,
    stop: u64,
    ix: &mut TenureIndex,
) -> Result<(), TailError> {
    let f = file.as_file();
    let io = |e| TailError::io(file.path(), "read", e);
    let complete = stream::end_of_complete_lines(f, file.len()?).map_err(io)?;
    // Just past the `\n` of the last line that starts before `stop`.
    let end = match next_line_start(file, stop.min(complete))? {
        Some(e) => e.min(complete),
        None => complete,
    };
    if from >= end {
        return Ok(());
    }
    stream::for_each_line(f, from, end, |span, bytes| {
        match bytes {
            Some(line) => ix.apply_bytes_at(line),
            None => ix.apply_read_at(stream::SpanReader::new(f, span)),
        };
        Ok(())
    })
    .map_err(io)
}

/// The claim event of the line at `offset` read whole from the file (the
/// line reader cut it): applied to `ix` when there is one; its time.
fn whole_line_at(
    file: &LogFile,
    offset: u64,
    ix: Option<&mut TenureIndex>,
) -> Result<Option<i64>, TailError> {
    let f = file.as_file();
    let Some(span) =
        stream::line_at(f, offset).map_err(|e| TailError::io(file.path(), "read", e))?
    else {
        return Ok(None);
    };
    let line = stream::SpanReader::new(f, span);
    Ok(match ix {
        Some(ix) => ix.apply_read_at(line),
        None => with_claim_event_read(line, |e| e.at),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn log(text: &[u8]) -> (tempfile::NamedTempFile, LogFile) {
        let mut f = tempfile::NamedTempFile::new().expect("tempfile");
        f.write_all(text).expect("write");
        let lf = LogFile::open(f.path()).expect("open").expect("exists");
        (f, lf)
    }

    #[test]
    fn indexing_in_tiny_steps_counts_every_line_and_numbers_any_offset() {
        let mut text = Vec::new();
        let mut starts = Vec::new();
        for i in 0..5000 {
            starts.push(text.len() as u64);
            text.extend_from_slice(format!("line {i} {}\n", "x".repeat(i % 700)).as_bytes());
        }
        text.extend_from_slice(b"partial");
        let (_f, lf) = log(&text);
        let mut ix = Indexer::new(lf, Limits::default());
        let mut steps = 0;
        while !ix.step(100_000).unwrap().done {
            steps += 1;
        }
        assert!(steps > 10);
        let p = ix.progress();
        assert_eq!(p.lines, 5000);
        assert_eq!(p.scanned, text.len() as u64 - 7);
        for (no, &off) in starts.iter().enumerate().step_by(97) {
            assert_eq!(ix.lines().line_no(ix.file(), off).unwrap(), Some(no as u64));
        }
    }

    #[test]
    fn one_checkpoint_stamped_out_of_order_does_not_place_a_window() {
        // Minutes; one at the epoch, one next century.
        let times = [10, 20, 30, 40, 50, -1_000_000, 70, 80, 9_999_999, 100, 110];
        let ix = LineIndex {
            checkpoints: (0..times.len() as u64).map(|i| (i * 100, i)).collect(),
            times: times
                .iter()
                .map(|&t| Some(1_000_000 + t * 60_000))
                .collect(),
            last_time: Some(110),
            lines: 11,
            end: 1_100,
        };
        let min = |m: i64| 1_000_000 + m * 60_000;
        // The last checkpoint before 45 is the one of 40, not the epoch's.
        assert_eq!(ix.offset_before(min(45)), 300);
        // The first after 85 is not next century's: the read goes on to the
        // one of 110 (the one of 100, out of order with its bad neighbour,
        // is passed over too: a read longer by a checkpoint, never shorter).
        assert_eq!(ix.offset_after(min(85)), 1_000);
        assert_eq!(ix.offset_after(min(200)), 1_100);
        assert_eq!(ix.offset_before(min(5)), 0);
        // A quiet hour is no disorder: both sides of it place windows.
        let mut gap = ix.clone();
        gap.times = [10, 20, 30, 500, 510, 520]
            .iter()
            .map(|&t| Some(min(t)))
            .collect();
        gap.checkpoints.truncate(6);
        assert_eq!(gap.offset_before(min(100)), 200);
        assert_eq!(gap.offset_after(min(100)), 300);
    }
}
