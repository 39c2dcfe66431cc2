//! Following the audit log like `tail -F`: appends, truncation, rotation,
//! deletion and a file that does not exist yet, in bounded memory. The
//! first screen comes from [`crate::events::tail`]'s backwards read; the
//! lines after it from here. The one follower of a root's events log:
//! every face reads it through the root's log feed ([`super::log`]).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::events::claim_event::with_claim_event_read;
use crate::events::stream;
use crate::events::tail::{
    open_regular, read_full_at, tail_of, FileId, Line, LineAssembler, TailError, BLOCK_SIZE,
    LINE_SCAN_BUDGET, MAX_POLL_BYTES, MAX_POLL_LINES,
};

/// Why a poll started over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// The file got shorter (or was rewritten) under us; reading restarted at 0.
    Truncated,
    /// A different file now sits at the path (rotated, or deleted and
    /// recreated); reading restarted at the new file's start.
    Replaced,
}

/// What one [`Follower::poll`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Poll {
    /// Newly completed lines, oldest first. When `reset` is set, every line
    /// here comes from after the reset: a UI may clear its view first.
    pub lines: Vec<Line>,
    pub reset: Option<Reset>,
    /// Nothing exists at the path right now (lines may still come from the
    /// deleted file if a writer still holds it).
    pub missing: bool,
    /// The poll stopped at its byte or line cap; more is already waiting, so
    /// poll again without sleeping.
    pub more: bool,
}

/// Follows the log across appends, truncation, rotation and deletion.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    /// Held open even after the path is unlinked or renamed: a writer may
    /// still be finishing lines in it, and holding the inode keeps its number
    /// from being reused, which keeps the identity comparison sound.
    file: Option<(File, FileId)>,
    /// Bytes of the current file consumed (including the buffered partial).
    offset: u64,
    /// Last byte consumed, to notice a file rewritten past our offset.
    last_byte: Option<u8>,
    asm: LineAssembler,
    /// The old file was drained after a replacement was seen; switch on the
    /// next poll so one poll never mixes lines from both files.
    switch_pending: bool,
    buf: Vec<u8>,
}

impl Follower {
    /// Start following `path`, returning the last `last_n` complete lines as
    /// they stand now. A missing file is fine: it is picked up when it
    /// appears, from its start.
    pub fn open(
        path: impl Into<PathBuf>,
        last_n: usize,
    ) -> Result<(Follower, Vec<Line>), TailError> {
        let mut f = Follower::waiting_for(path);
        let Some((file, id)) = open_regular(&f.path)? else {
            return Ok((f, Vec::new()));
        };
        let chunk = tail_of(&file, &f.path, id, last_n, BLOCK_SIZE, LINE_SCAN_BUDGET)?;
        f.offset = chunk.offset;
        f.asm.discarding = chunk.starts_mid_line;
        f.last_byte = if chunk.starts_mid_line || chunk.offset == 0 {
            None
        } else {
            Some(b'\n')
        };
        f.file = Some((file, id));
        Ok((f, chunk.lines))
    }

    /// Follow `path`, which did not exist a moment ago, from its start once
    /// it appears (unlike [`Follower::open`], which would skip to the end of
    /// a file created in between).
    pub fn waiting_for(path: impl Into<PathBuf>) -> Follower {
        Follower {
            path: path.into(),
            file: None,
            offset: 0,
            last_byte: None,
            asm: LineAssembler::default(),
            switch_pending: false,
            buf: Vec::new(),
        }
    }

    /// Follow `file` (opened at `path` with [`open_regular`]) from `offset`,
    /// which must be a line start: the caller has printed everything before.
    pub fn starting_at(path: impl Into<PathBuf>, file: File, id: FileId, offset: u64) -> Follower {
        Follower {
            file: Some((file, id)),
            offset,
            last_byte: (offset > 0).then_some(b'\n'),
            ..Follower::waiting_for(path)
        }
    }

    /// Follow `file` from a [`Follower::resume_point`]: `mid_line`, the
    /// rest of the line at `offset` is skipped.
    pub fn resuming(
        path: impl Into<PathBuf>,
        file: File,
        id: FileId,
        offset: u64,
        mid_line: bool,
    ) -> Follower {
        let mut f = Follower::starting_at(path, file, id, offset);
        if mid_line {
            f.asm.discarding = true;
            f.last_byte = None;
        }
        f
    }

    /// The file the last poll's lines came from, to read a line whole that
    /// was cut to [`crate::events::tail::MAX_LINE_BYTES`].
    pub fn file(&self) -> Option<&File> {
        self.file.as_ref().map(|(f, _)| f)
    }

    /// Give each line of the last poll that was cut at the cap its claim
    /// event, read piece by piece from the whole line in the file (only the
    /// claim fields are kept): a claim event with a `--reason` of megabytes
    /// still makes its tenure for a reader that keeps tenures live. Call it
    /// before the next poll, which may move to another file.
    pub fn read_claims(&self, lines: &mut [Line]) {
        if let Some(file) = self.file() {
            read_claims(file, lines);
        }
    }

    /// Where a reader resumes so that it sees no line twice and misses
    /// none: just past the last complete line handed out (a partial line
    /// held is read again), and whether that is inside a line whose start
    /// was never seen (the rest of it is skipped).
    pub fn resume_point(&self) -> (u64, bool) {
        match self.asm.discarding {
            true => (self.offset, true),
            false => (self.offset - self.asm.pending(), false),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Identity of the file being read, if any.
    pub fn file_id(&self) -> Option<FileId> {
        self.file.as_ref().map(|(_, id)| *id)
    }

    /// Bytes of the current file consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Lines completed since the last poll. Errors (e.g. the path became a
    /// directory) leave the follower usable: poll again later.
    pub fn poll(&mut self) -> Result<Poll, TailError> {
        let mut out = Poll::default();
        let mut budget = MAX_POLL_BYTES;

        let (at_path, len) = match std::fs::metadata(&self.path) {
            Ok(m) => (Some(FileId::of(&m)), m.len()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => (None, 0),
            Err(e) => return Err(TailError::io(&self.path, "stat", e)),
        };
        out.missing = at_path.is_none();

        let replaced = match (&self.file, at_path) {
            (None, None) => return Ok(out),
            (None, Some(_)) => {
                // First sighting of a file that was missing at open: not a
                // reset, the whole file is new to the reader.
                if !self.adopt()? {
                    out.missing = true;
                    return Ok(out);
                }
                false
            }
            (Some((_, cur)), Some(new)) => *cur != new,
            (Some(_), None) => false,
        };
        if !replaced {
            self.switch_pending = false;
            // The file held, at the length consumed: nothing to read, and
            // no truncation the length or the last byte could tell (what
            // polls cost while the log is quiet: one stat, no fstat, no
            // read). Bytes written since the stat are the next poll's.
            if at_path.is_some() && len == self.offset {
                return Ok(out);
            }
        }

        if replaced {
            if !self.switch_pending {
                let done = self.read_available(&mut budget, &mut out)?;
                if !done {
                    out.more = true;
                    return Ok(out);
                }
                if !out.lines.is_empty() {
                    self.switch_pending = true;
                    out.more = true;
                    return Ok(out);
                }
            }
            if !self.adopt()? {
                // Vanished between stat and open; keep the old file.
                out.missing = true;
                return Ok(out);
            }
            out.reset = Some(Reset::Replaced);
        }

        if self.check_truncated()? {
            self.restart_at_zero();
            out.reset = Some(Reset::Truncated);
        }
        let done = self.read_available(&mut budget, &mut out)?;
        out.more = !done;
        Ok(out)
    }

    /// Open whatever is at the path now and read it from the start. False if
    /// nothing is there.
    fn adopt(&mut self) -> Result<bool, TailError> {
        match open_regular(&self.path)? {
            None => Ok(false),
            Some(f) => {
                self.file = Some(f);
                self.switch_pending = false;
                self.restart_at_zero();
                Ok(true)
            }
        }
    }

    fn restart_at_zero(&mut self) {
        self.offset = 0;
        self.last_byte = None;
        self.asm.reset();
    }

    fn check_truncated(&self) -> Result<bool, TailError> {
        let Some((file, _)) = &self.file else {
            return Ok(false);
        };
        let len = file
            .metadata()
            .map_err(|e| TailError::io(&self.path, "stat", e))?
            .len();
        if len < self.offset {
            return Ok(true);
        }
        // Truncated and refilled past our offset between two polls: the
        // length alone cannot tell, but the byte we consumed last changed.
        if let (Some(expected), true) = (self.last_byte, len > self.offset) {
            let mut b = [0u8; 1];
            let got = read_full_at(file, &mut b, self.offset - 1)
                .map_err(|e| TailError::io(&self.path, "read", e))?;
            return Ok(got == 1 && b[0] != expected);
        }
        Ok(false)
    }

    /// Read from the current file until EOF or a cap; true if EOF was reached.
    fn read_available(&mut self, budget: &mut u64, out: &mut Poll) -> Result<bool, TailError> {
        let Some((file, _)) = &self.file else {
            return Ok(true);
        };
        if self.buf.len() != BLOCK_SIZE {
            self.buf = vec![0u8; BLOCK_SIZE];
        }
        loop {
            if *budget == 0 || out.lines.len() >= MAX_POLL_LINES {
                return Ok(false);
            }
            let want = (self.buf.len() as u64).min(*budget) as usize;
            let got = read_full_at(file, &mut self.buf[..want], self.offset)
                .map_err(|e| TailError::io(&self.path, "read", e))?;
            if got == 0 {
                return Ok(true);
            }
            let used = self.asm.feed(
                &self.buf[..got],
                self.offset,
                &mut out.lines,
                MAX_POLL_LINES,
            );
            if used > 0 {
                self.last_byte = Some(self.buf[used - 1]);
            }
            self.offset += used as u64;
            *budget -= used as u64;
            if used < got {
                return Ok(false);
            }
            if got < want {
                return Ok(true);
            }
        }
    }
}

/// Give each line of `lines` that was cut at the cap its claim event, read
/// piece by piece from the whole line in `file` (only the claim fields are
/// kept).
pub fn read_claims(file: &File, lines: &mut [Line]) {
    for line in lines.iter_mut().filter(|l| l.truncated) {
        // A line that is gone (the file was truncated meanwhile) has no
        // claim to give: the reset that follows says so.
        if let Ok(Some(span)) = stream::line_at(file, line.offset) {
            let whole = stream::SpanReader::new(file, span);
            line.claim = with_claim_event_read(whole, |e| Box::new(e.to_owned_event()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::tail::tests::{as_tuples, model_last};
    use proptest::prelude::*;
    use std::io::Write;

    proptest! {
        #[test]
        fn following_arbitrary_writes_yields_exactly_the_complete_lines(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'z'), any::<u8>()], 0..400),
            cuts in proptest::collection::vec(0usize..400, 0..8),
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("events.jsonl");
            let (mut f, initial) = Follower::open(&path, 10).expect("open");
            prop_assert!(initial.is_empty());
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.push(bytes.len());
            cuts.sort_unstable();
            let mut w = std::fs::OpenOptions::new().create(true).append(true).open(&path).expect("w");
            let mut got = Vec::new();
            let mut prev = 0;
            for c in cuts {
                w.write_all(&bytes[prev..c]).expect("write");
                prev = c;
                let p = f.poll().expect("poll");
                prop_assert_eq!(p.reset, None);
                got.extend(p.lines);
            }
            let (want, _) = model_last(&bytes, usize::MAX);
            prop_assert_eq!(as_tuples(&got), want);
        }
    }
}
