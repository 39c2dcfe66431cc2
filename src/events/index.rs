//! The whole log, indexed once: how many lines it has, where each
//! checkpoint line starts (so any offset's line number is one short count
//! away), and the tenures of every key.
//!
//! Built forward in bounded steps ([`Indexer::step`]), so the thread doing
//! it can answer page and search requests between steps, and a caller can
//! show progress. Memory is a checkpoint per [`CHECKPOINT_BYTES`] of log
//! plus the [`TenureIndex`]'s own limits: independent of the line count.

use super::backward::LogFile;
use super::claim_event::with_claim_event;
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
        self.times
            .iter()
            .rposition(|x| x.is_some_and(|x| x < t))
            .map_or(0, |i| self.checkpoints[i].0)
    }

    /// A line start past every event before `t` (give or take clock skew):
    /// the first checkpoint whose time is after it, else the indexed end.
    pub fn offset_after(&self, t: i64) -> u64 {
        self.times
            .iter()
            .position(|x| x.is_some_and(|x| x > t))
            .map_or(self.end, |i| self.checkpoints[i].0)
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
            for line in &self.batch {
                let at = if self.tenures_on {
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
    let mut from = len.saturating_sub(bytes);
    if from > 0 {
        // Start at a whole line: skip the one the cut landed in.
        match file.next_line_start(from.saturating_sub(1))? {
            Some(s) => from = s,
            None => return Ok((TenureIndex::new(limits), len)),
        }
    }
    let mut ix = TenureIndex::new(limits);
    let mut at = from;
    while at < len {
        let lines = file.lines_from(at, 4096)?;
        let Some(last) = lines.last() else { break };
        let next = last.offset;
        for l in &lines {
            ix.apply_line(&l.text);
        }
        match file.next_line_start(next)? {
            Some(n) => at = n,
            None => break,
        }
    }
    Ok((ix, from))
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
}
