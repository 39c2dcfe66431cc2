//! Reading the log at any place, not only its end: the lines before or
//! after an offset, and a search that walks the file in blocks either way.
//!
//! Every read is a bounded `pread` of one block, so browsing a 1 GiB log
//! costs memory in proportion to what is shown, never to the file. The
//! line splitting (and its caps on absurd lines) is the tail reader's own;
//! nothing here re-derives it.

use std::fs::File;
use std::path::{Path, PathBuf};

mod needle;
pub use needle::{Needle, NeedleError, Shown};

use super::tail::{
    open_regular, read_full_at, shrank, tail_attempt, FileId, Line, LineAssembler, TailError,
    BLOCK_SIZE, LINE_SCAN_BUDGET,
};

/// Unit of a search step: big enough that the per-block overhead vanishes,
/// small enough that one block of a hostile file costs little memory.
const SEARCH_BLOCK: usize = 1024 * 1024;

/// One opened log file, read at arbitrary offsets.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    file: File,
    id: FileId,
    /// Unit of a search read ([`SEARCH_BLOCK`]; tests shrink it to put
    /// block edges everywhere).
    block: usize,
}

impl LogFile {
    /// Open `path` (regular files only, never blocking on a FIFO). `Ok(None)`
    /// when it does not exist.
    pub fn open(path: &Path) -> Result<Option<LogFile>, TailError> {
        Ok(open_regular(path)?.map(|(file, id)| LogFile {
            path: path.to_path_buf(),
            file,
            id,
            block: SEARCH_BLOCK,
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The opened file, for readers that take a `File` (lines of any
    /// length: [`super::stream`]).
    pub fn as_file(&self) -> &File {
        &self.file
    }

    /// Identity of the opened file (a rotation keeps the path, not this).
    pub fn id(&self) -> FileId {
        self.id
    }

    /// A line start before which every line is older than `at_ms` (give
    /// or take the writers' clock slack), found by bisecting the log's
    /// times without reading it all ([`super::seek::start_for`]).
    pub fn start_for(&self, at_ms: i64) -> Result<u64, TailError> {
        let end = self.len()?;
        super::seek::start_for(&self.file, end, at_ms)
            .map_err(|e| TailError::io(&self.path, "read", e))
    }

    /// An offset past which every line is newer than `at_ms` (give or
    /// take the clock slack): [`super::seek::end_for`].
    pub fn end_for(&self, at_ms: i64) -> Result<u64, TailError> {
        let end = self.len()?;
        super::seek::end_for(&self.file, end, at_ms)
            .map_err(|e| TailError::io(&self.path, "read", e))
    }

    /// Current length, partial last line included.
    pub fn len(&self) -> Result<u64, TailError> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| TailError::io(&self.path, "stat", e))?
            .len())
    }

    pub fn is_empty(&self) -> Result<bool, TailError> {
        Ok(self.len()? == 0)
    }

    /// Read into `buf` at `at`; a short read (EOF) is returned as is.
    pub fn read_at(&self, buf: &mut [u8], at: u64) -> Result<usize, TailError> {
        read_full_at(&self.file, buf, at).map_err(|e| TailError::io(&self.path, "read", e))
    }

    /// The last `n` complete lines ending at or before `end`, oldest first.
    /// `end` is meant to be a line start (or the file length): bytes after
    /// the last `\n` before it are a partial line and are not returned.
    pub fn lines_before(&self, end: u64, n: usize) -> Result<Vec<Line>, TailError> {
        if n == 0 || end == 0 {
            return Ok(Vec::new());
        }
        let chunk = tail_attempt(
            &self.file,
            &self.path,
            self.id,
            end,
            n,
            BLOCK_SIZE,
            LINE_SCAN_BUDGET,
        )?
        .ok_or_else(|| shrank(&self.path))?;
        Ok(chunk.lines)
    }

    /// Up to `n` complete lines starting at `start`, oldest first. `start`
    /// is meant to be a line start; a trailing partial line is not returned.
    pub fn lines_from(&self, start: u64, n: usize) -> Result<Vec<Line>, TailError> {
        let mut out = Vec::new();
        let mut asm = LineAssembler::default();
        let mut buf = vec![0u8; BLOCK_SIZE];
        let mut at = start;
        while out.len() < n {
            let got = self.read_at(&mut buf, at)?;
            if got == 0 {
                break;
            }
            let used = asm.feed(&buf[..got], at, &mut out, n);
            at += used as u64;
            if used < got || got < buf.len() {
                break;
            }
        }
        Ok(out)
    }

    /// Offset of the start of the line just after the one that starts at
    /// `line`; `None` when that line has no `\n` yet (it is the partial
    /// last one) or none is found within the scan budget.
    pub fn next_line_start(&self, line: u64) -> Result<Option<u64>, TailError> {
        let mut buf = vec![0u8; BLOCK_SIZE];
        let mut at = line;
        while at < line.saturating_add(LINE_SCAN_BUDGET) {
            let got = self.read_at(&mut buf, at)?;
            if let Some(i) = memchr::memchr(b'\n', &buf[..got]) {
                return Ok(Some(at + i as u64 + 1));
            }
            if got < buf.len() {
                return Ok(None);
            }
            at += got as u64;
        }
        Ok(None)
    }

    /// Count the `\n` bytes in `[from, to)`.
    pub fn count_newlines(&self, from: u64, to: u64) -> Result<u64, TailError> {
        let mut buf = vec![0u8; SEARCH_BLOCK.min(to.saturating_sub(from) as usize).max(1)];
        let (mut at, mut count) = (from, 0u64);
        while at < to {
            let want = ((to - at) as usize).min(buf.len());
            let got = self.read_at(&mut buf[..want], at)?;
            if got == 0 {
                break;
            }
            count += memchr::memchr_iter(b'\n', &buf[..got]).count() as u64;
            at += got as u64;
        }
        Ok(count)
    }

    /// One bounded step of a search: look at most `budget` bytes for a line
    /// containing `needle`, in the direction `from` says.
    pub fn search(
        &self,
        needle: &Needle,
        from: SearchFrom,
        budget: u64,
    ) -> Result<SearchStep, TailError> {
        match from {
            SearchFrom::After(line) => {
                let Some(start) = self.next_line_start(line)? else {
                    return Ok(SearchStep::NotFound);
                };
                self.search_forward(needle, start, budget)
            }
            SearchFrom::ForwardAt(at) => self.search_forward(needle, at, budget),
            SearchFrom::Start => self.search_forward(needle, 0, budget),
            SearchFrom::Before(end) => self.search_backward(needle, end, budget),
        }
    }

    fn search_forward(
        &self,
        needle: &Needle,
        mut at: u64,
        budget: u64,
    ) -> Result<SearchStep, TailError> {
        let mut buf = vec![0u8; self.block];
        let stop = at.saturating_add(budget.max(1));
        while at < stop {
            let got = self.read_at(&mut buf, at)?;
            // Only whole lines: a match is reported by its line, and a line
            // cut by the block edge is searched whole in the next block.
            let Some(last_nl) = memchr::memrchr(b'\n', &buf[..got]) else {
                if got < buf.len() {
                    // Only a partial last line remains; it is not a line yet.
                    return Ok(SearchStep::NotFound);
                }
                // One line longer than a block: search it in pieces (a
                // match across a piece boundary is missed; such lines are
                // cut to 64 KiB for display anyway).
                if let Some(p) = needle.find_in(&mut buf[..got], false) {
                    let line = self.line_start_of(at + p as u64)?;
                    // The partial last line is not a line yet.
                    let whole = super::stream::line_at(&self.file, line)
                        .map_err(|e| TailError::io(&self.path, "read", e))?;
                    return Ok(match whole {
                        Some(_) => SearchStep::Found(line),
                        None => SearchStep::NotFound,
                    });
                }
                at += got as u64;
                continue;
            };
            let block = &mut buf[..=last_nl];
            if let Some(p) = needle.find_in(block, false) {
                // A step that went on from inside a long line begins
                // mid-line: the match's line may start before the block.
                let found = match memchr::memrchr(b'\n', &block[..p]) {
                    Some(i) => at + i as u64 + 1,
                    None => self.line_start_of(at + p as u64)?,
                };
                return Ok(SearchStep::Found(found));
            }
            at += last_nl as u64 + 1;
        }
        Ok(SearchStep::Continue(SearchFrom::ForwardAt(at)))
    }

    fn search_backward(
        &self,
        needle: &Needle,
        mut end: u64,
        budget: u64,
    ) -> Result<SearchStep, TailError> {
        let mut buf = vec![0u8; self.block];
        let stop = end.saturating_sub(budget.max(1));
        while end > stop {
            let lo = end.saturating_sub(self.block as u64);
            let want = (end - lo) as usize;
            let got = self.read_at(&mut buf[..want], lo)?;
            if got < want {
                return Err(shrank(&self.path));
            }
            // The first bytes may be the tail of a line that started before
            // the block: leave them to the next block back, unless the block
            // starts the file.
            let first = if lo == 0 {
                0
            } else {
                match memchr::memchr(b'\n', &buf[..want]) {
                    // A `\n` at the very end only closes a line that began
                    // before the block: no whole line here either.
                    Some(i) if i + 1 < want => i + 1,
                    _ => {
                        // A line longer than a block: search this piece and move on.
                        if let Some(p) = needle.find_in(&mut buf[..want], true) {
                            return Ok(SearchStep::Found(self.line_start_of(lo + p as u64)?));
                        }
                        end = lo;
                        continue;
                    }
                }
            };
            let block = &mut buf[first..want];
            if let Some(p) = needle.find_in(block, true) {
                let start = memchr::memrchr(b'\n', &block[..p]).map_or(0, |i| i + 1);
                return Ok(SearchStep::Found(lo + (first + start) as u64));
            }
            if lo == 0 {
                return Ok(SearchStep::NotFound);
            }
            end = lo + first as u64;
        }
        if end == 0 {
            return Ok(SearchStep::NotFound);
        }
        Ok(SearchStep::Continue(SearchFrom::Before(end)))
    }

    /// One bounded step of a count: the starts of the whole lines from the
    /// line start `from` on that contain `needle`, pushed on `found` in
    /// order, reading at most about `budget` bytes. Returns where the next
    /// step starts (a line start: a partial last line waits for its `\n`)
    /// and whether that is the end of what is written now.
    pub fn scan_matches(
        &self,
        needle: &Needle,
        from: u64,
        budget: u64,
        found: &mut Vec<u64>,
    ) -> Result<(u64, bool), TailError> {
        let mut buf = vec![0u8; self.block];
        let (mut at, stop) = (from, from.saturating_add(budget.max(1)));
        while at < stop {
            let got = self.read_at(&mut buf, at)?;
            let Some(last_nl) = memchr::memrchr(b'\n', &buf[..got]) else {
                if got < buf.len() {
                    return Ok((at, true));
                }
                // A line longer than a block: read on to its end, piece by
                // piece (a match across pieces is missed, as in a search).
                let line = at;
                let mut hit = false;
                loop {
                    let got = self.read_at(&mut buf, at)?;
                    let nl = memchr::memchr(b'\n', &buf[..got]);
                    let piece = nl.map_or(got, |i| i + 1);
                    hit |= needle.find_in(&mut buf[..piece], false).is_some();
                    at += piece as u64;
                    if nl.is_some() {
                        break;
                    }
                    if got < buf.len() {
                        return Ok((line, true));
                    }
                }
                if hit {
                    found.push(line);
                }
                continue;
            };
            needle.lines_matching(&mut buf[..=last_nl], at, found);
            at += last_nl as u64 + 1;
            if got < buf.len() && last_nl + 1 == got {
                return Ok((at, true));
            }
        }
        Ok((at, false))
    }

    /// Start of the line holding the byte at `at` (bounded by the scan
    /// budget, like the tail reader).
    fn line_start_of(&self, at: u64) -> Result<u64, TailError> {
        let mut buf = vec![0u8; BLOCK_SIZE];
        let mut end = at;
        let floor = at.saturating_sub(LINE_SCAN_BUDGET);
        while end > floor {
            let lo = end.saturating_sub(BLOCK_SIZE as u64).max(floor);
            let want = (end - lo) as usize;
            let got = self.read_at(&mut buf[..want], lo)?;
            if let Some(i) = memchr::memrchr(b'\n', &buf[..got]) {
                return Ok(lo + i as u64 + 1);
            }
            end = lo;
        }
        Ok(end)
    }
}

/// Where a search step starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchFrom {
    /// Forward, from the line after the one starting at this offset.
    After(u64),
    /// Forward, from this line start (where a previous step stopped).
    ForwardAt(u64),
    /// Backward, among the lines that end before this offset (a line start).
    Before(u64),
    /// Forward, from the first entry of the log (where a search that
    /// reached the end wraps to).
    Start,
}

/// What one bounded search step found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchStep {
    /// The offset of the first matching line in the search's direction.
    Found(u64),
    /// The budget ran out; continue from here.
    Continue(SearchFrom),
    /// No line in that direction matches.
    NotFound,
}

#[cfg(test)]
mod tests;
