//! The history of a file log, `.fno/events.jsonl`: marks are byte offsets,
//! the pass over it is the [`Indexer`] (line checkpoints and tenures in
//! bounded steps), pages and searches are the backward reader's, and a
//! time is found through the index's checkpoint times.

use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::asof::{Around, LogEnds};
use super::backward::{LogFile, Needle, SearchFrom, SearchStep};
use super::claim_event::parse_ts;
use super::history::{
    Anchor, History, HistoryError, Nouns, Page, ScanAt, ScanStep, Start, Step, Visit,
};
use super::index::{apply_lines, line_start_at, tail_tenures, Indexer};
use super::range::{Entry, Range, RangeEnd};
use super::seek::{self, CLOCK_SLACK_MS};
use super::stream::{self, INLINE_LINE_BYTES};
use super::tail::{open_regular, TailError};
use super::tenure::{Limits, TenureIndex};

/// Bytes indexed by one step.
const INDEX_STEP: u64 = 4 * 1024 * 1024;
/// Bytes searched by one step.
const SEARCH_STEP: u64 = 16 * 1024 * 1024;
/// Bytes of the log's end read for the first timeline screen.
pub const TAIL_TENURE_BYTES: u64 = 4 * 1024 * 1024;
/// A progress report at most every this many bytes indexed.
const PROGRESS_EVERY: u64 = 64 * 1024 * 1024;
/// A time window re-read from the log starts this long before it, so the
/// tenures already running when it begins are seen from their acquire.
const WINDOW_LOOKBACK_MS: i64 = 3_600_000;
/// A log up to this long is read whole for "as of" (a few tens of
/// milliseconds): the answer then sees every tenure from its start.
pub const WHOLE_LOG_BYTES: u64 = 4 * 1024 * 1024;
/// Most bytes one window re-read reads (about a second of indexing): the
/// part of the window nearest its end is kept when it is larger.
pub const WINDOW_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Lines read per batch while looking for a time.
const TIME_BATCH: usize = 4096;

/// One file log's history.
pub struct FileHistory {
    path: PathBuf,
    file: Option<LogFile>,
    indexer: Option<Indexer>,
    /// The pass is over and its tenures were handed on; the indexer now
    /// only keeps counting lines.
    handed_on: bool,
    last_progress: u64,
    limits: Limits,
    /// Most bytes one window re-read reads ([`WINDOW_MAX_BYTES`]).
    window_cap: u64,
}

impl FileHistory {
    /// The history of the log at `path` (read from [`History::start`] on).
    pub fn new(path: PathBuf, limits: Limits) -> FileHistory {
        FileHistory {
            path,
            file: None,
            indexer: None,
            handed_on: false,
            last_progress: 0,
            limits,
            window_cap: WINDOW_MAX_BYTES,
        }
    }

    /// The same history reading at most `bytes` per window (a small log
    /// that must show what a cut does, or a face short of memory).
    pub fn with_window_cap(self, bytes: u64) -> FileHistory {
        FileHistory {
            window_cap: bytes.max(1),
            ..self
        }
    }

    /// The first line at or after `t`, found from the index's checkpoint
    /// times (from the start while there is no index yet).
    fn line_at_time(&self, file: &LogFile, t: i64) -> Result<Option<u64>, HistoryError> {
        let from = t.saturating_sub(CLOCK_SLACK_MS);
        let mut at = self
            .indexer
            .as_ref()
            .map_or(0, |ix| ix.lines().offset_before(from));
        loop {
            let batch = file.lines_from(at, TIME_BATCH)?;
            let Some(last) = batch.last().map(|l| l.offset) else {
                return Ok(None);
            };
            let hit = batch.iter().find(|l| {
                super::stream::Probe::of_slice(l.text.as_bytes())
                    .ok()
                    .and_then(|p| p.ts)
                    .and_then(|ts| parse_ts(&ts))
                    .is_some_and(|ts| ts >= t)
            });
            if let Some(l) = hit {
                return Ok(Some(l.offset));
            }
            match file.next_line_start(last)? {
                Some(n) => at = n,
                None => return Ok(None),
            }
        }
    }
}

impl History for FileHistory {
    fn nouns(&self) -> Nouns {
        Nouns::FILE
    }

    fn verbatim(&self) -> bool {
        true
    }

    /// The file's own lines, byte for byte: `since` bisected
    /// ([`super::seek`]), `last` read back from the end, and on to the last
    /// complete line (a window's end is the visitor's to judge: a line
    /// stamped by a slow clock may follow one past it).
    fn read_range(
        &mut self,
        range: &Range,
        visit: &mut Visit<'_>,
    ) -> Result<RangeEnd, HistoryError> {
        let Some((file, id)) = open_regular(&self.path)? else {
            return Ok(RangeEnd::default());
        };
        let file = Arc::new(file);
        let path = &self.path;
        let len = file.metadata().map_err(|e| at(path, e))?.len();
        let end = stream::end_of_complete_lines(&file, len).map_err(|e| at(path, e))?;
        let from = match (range.since, range.until, range.last) {
            (Some(since), _, _) => seek::start_for(&file, end, since),
            (None, None, Some(n)) => stream::start_of_last_lines(&file, end, n),
            _ => Ok(0),
        }
        .map_err(|e| at(path, e))?;
        stream::for_each_line(&file, from, end, |span, bytes| {
            visit(Entry::in_file(&file, span, bytes))
        })
        .map_err(|e| at(path, e))?;
        Ok(RangeEnd {
            next: Some(end),
            file_id: Some(id),
        })
    }

    fn read_at(&mut self, mark: u64, visit: &mut Visit<'_>) -> Result<bool, HistoryError> {
        let Some((file, _)) = open_regular(&self.path)? else {
            return Ok(false);
        };
        let file = Arc::new(file);
        match stream::line_at(&file, mark).map_err(|e| at(&self.path, e))? {
            Some(span) => {
                let held = match span.len <= INLINE_LINE_BYTES {
                    true => {
                        let mut buf = vec![0u8; span.len as usize];
                        file.read_exact_at(&mut buf, span.offset)
                            .map_err(|e| at(&self.path, e))?;
                        Some(buf)
                    }
                    false => None,
                };
                visit(Entry::in_file(&file, span, held.as_deref()))?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn start(&mut self) -> Result<Start, HistoryError> {
        self.indexer = None;
        self.handed_on = false;
        self.last_progress = 0;
        self.file = None;
        self.file = LogFile::open(&self.path)?;
        let Some(file) = &self.file else {
            self.handed_on = true;
            return Ok(Start::Nothing);
        };
        let (tail, _) = tail_tenures(file, TAIL_TENURE_BYTES, self.limits)?;
        // A second handle for the indexer: it reads at its own offsets.
        match LogFile::open(&self.path)? {
            Some(f) if f.id() == file.id() => {
                self.indexer = Some(Indexer::new(f, self.limits));
                Ok(Start::Tail(Box::new(tail)))
            }
            // Replaced in between: open what is there now.
            _ => self.start(),
        }
    }

    fn indexing(&self) -> bool {
        self.indexer.is_some() && !self.handed_on
    }

    fn step(&mut self) -> Result<Step, HistoryError> {
        let Some(ix) = &mut self.indexer else {
            // No log yet (or it could not be opened): index it once it is
            // there, so browsing and line counts do not stay empty.
            if self.file.is_none() && std::fs::symlink_metadata(&self.path).is_ok() {
                return Ok(Step::Restart);
            }
            return Ok(Step::Idle);
        };
        let before = ix.progress().lines;
        let p = match ix.step(INDEX_STEP) {
            Ok(p) => p,
            Err(e) => {
                self.indexer = None;
                return Err(e.into());
            }
        };
        if self.handed_on {
            if p.lines == before {
                return Ok(Step::Idle);
            }
            return Ok(Step::Counted {
                lines: p.lines,
                end: p.scanned,
            });
        }
        if p.done {
            self.handed_on = true;
            return Ok(Step::Indexed {
                tenures: Box::new(ix.hand_on_tenures()),
                lines: p.lines,
                end: p.scanned,
                file_id: Some(ix.file_id()),
            });
        }
        if p.scanned >= self.last_progress + PROGRESS_EVERY {
            self.last_progress = p.scanned;
            return Ok(Step::Progress(p));
        }
        Ok(Step::Working)
    }

    fn page(&mut self, anchor: Anchor, before: usize, after: usize) -> Result<Page, HistoryError> {
        let Some(file) = &self.file else {
            return Ok(Page {
                at_start: true,
                at_end: true,
                ..Page::default()
            });
        };
        let len = file.len()?;
        let anchor = match anchor {
            Anchor::Time(t) => match self.line_at_time(file, t)? {
                Some(at) => Anchor::At(at),
                None => Anchor::End,
            },
            a => a,
        };
        let (mut lines, anchor_ix, at_start, at_end) = match anchor {
            Anchor::End | Anchor::Time(_) => {
                let lines = file.lines_before(len, before)?;
                let n = lines.len();
                (lines, n, n < before, true)
            }
            Anchor::Start => {
                let lines = file.lines_from(0, after)?;
                let short = lines.len() < after;
                (lines, 0, true, short)
            }
            Anchor::At(at) => {
                let at = at.min(len);
                let mut lines = file.lines_before(at, before)?;
                let n = lines.len();
                let from = file.lines_from(at, after)?;
                let short = from.len() < after;
                lines.extend(from);
                (lines, n, n < before, short)
            }
        };
        let at_start = at_start || lines.first().is_some_and(|l| l.offset == 0);
        let first_line_no = match (lines.first(), &self.indexer) {
            (Some(l), Some(ix)) => ix.lines().line_no(file, l.offset)?,
            _ => None,
        };
        lines.shrink_to_fit();
        Ok(Page {
            lines,
            anchor: anchor_ix,
            first_line_no,
            at_start,
            at_end,
            file_id: Some(file.id()),
        })
    }

    fn search_from(&mut self, from: SearchFrom) -> Option<SearchFrom> {
        let file = self.file.as_ref()?;
        // "Before the end" may be asked without knowing the length.
        Some(match (from, file.len()) {
            (SearchFrom::Before(e), Ok(len)) if e > len => SearchFrom::Before(len),
            (from, _) => from,
        })
    }

    fn search(&mut self, needle: &Needle, from: SearchFrom) -> Result<SearchStep, HistoryError> {
        match &self.file {
            Some(file) => Ok(file.search(needle, from, SEARCH_STEP)?),
            None => Ok(SearchStep::NotFound),
        }
    }

    /// A file's place is the byte offset of a line start.
    fn count_matches(
        &mut self,
        needle: &Needle,
        at: &ScanAt,
        found: &mut Vec<u64>,
    ) -> Result<ScanStep, HistoryError> {
        let from = <[u8; 8]>::try_from(at.0.as_slice()).map_or(0, u64::from_be_bytes);
        let Some(file) = &self.file else {
            return Ok(ScanStep {
                next: at.clone(),
                at_end: true,
            });
        };
        let (next, at_end) = file.scan_matches(needle, from, SEARCH_STEP, found)?;
        Ok(ScanStep {
            next: ScanAt(next.to_be_bytes().to_vec()),
            at_end,
        })
    }

    /// Re-read the log between the checkpoints around `[from, to)`.
    fn window(&mut self, from: i64, to: i64) -> Result<TenureIndex, HistoryError> {
        let Some((want, stop)) = self.span(from, to)? else {
            return Ok(TenureIndex::new(self.limits));
        };
        // Over the cap the part nearest the window's end is kept: the
        // timeline zooms in from now, so the recent side is what it shows.
        self.read_span(want.max(stop.saturating_sub(self.window_cap)), want, stop)
    }

    fn around(&mut self, at: i64) -> Result<Around, HistoryError> {
        let (from, to) = super::asof::window_around(at);
        let Some((mut want, mut stop)) = self.span(from, to)? else {
            return Ok(Around::unknown(TenureIndex::new(self.limits)));
        };
        // A log this small is read whole: every tenure's start and end is
        // in the read, and the answer is the one the whole log gives.
        if let Some(file) = &self.file {
            let len = file.len()?;
            if len <= WHOLE_LOG_BYTES.min(self.window_cap) {
                (want, stop) = (0, len);
            }
        }
        let (begin, end) = if stop - want <= self.window_cap {
            (want, stop)
        } else {
            // More than one read holds: the cut is centred on the instant,
            // so the one read always holds it (with the tenures running
            // then and how they ended) instead of narrowing the window
            // read after read.
            let Some(file) = &self.file else {
                return Ok(Around::unknown(TenureIndex::new(self.limits)));
            };
            let mid = file.start_for(at)?.clamp(want, stop);
            let half = self.window_cap / 2;
            let mut begin = want.max(mid.saturating_sub(half));
            for _ in 0..4 {
                let line = line_start_at(file, begin)?.max(want);
                if begin - line <= half {
                    break;
                }
                // The cut fell in a line longer than half the budget: it
                // is read whole anyway, and the lines before it are read as
                // if it took none of the budget (a 100 MB line must not
                // push out the claims taken just before it).
                begin = want.max(line.saturating_sub(half));
            }
            // On past the instant whatever the lines in between weigh: a
            // cut that ends before it (a line of 100 MB after `mid`) would
            // leave out what was taken just before it.
            let past = file.end_for(at)?;
            let begin = line_start_at(file, begin)?.max(want);
            (begin, stop.min((begin + self.window_cap).max(past)))
        };
        let tenures = self.read_span(begin, begin, end)?;
        let last = match &self.file {
            Some(f) => stream::end_of_complete_lines(f.as_file(), f.len()?)
                .map_err(|e| TailError::io(f.path(), "read", e))?,
            None => 0,
        };
        Ok(Around {
            tenures,
            ends: LogEnds {
                from_first: begin == 0,
                to_last: end >= last,
            },
        })
    }
}

impl FileHistory {
    /// The bytes `[want, stop)` that hold the window `[from, to)`, from a
    /// little before it (see [`WINDOW_LOOKBACK_MS`]); None before the log
    /// is opened.
    fn span(&self, from: i64, to: i64) -> Result<Option<(u64, u64)>, HistoryError> {
        let (Some(file), Some(indexer)) = (&self.file, &self.indexer) else {
            return Ok(None);
        };
        // The pass has read the whole file only once its count reaches the
        // file's length (before its first step it knows of no length yet).
        let p = indexer.progress();
        if p.done && p.scanned >= file.len()? {
            let lines = indexer.lines();
            return Ok(Some((
                lines.offset_before(from.saturating_sub(WINDOW_LOOKBACK_MS)),
                lines.offset_after(to).max(lines.offset_before(to)),
            )));
        }
        // No index over the window yet (the pass is under way, or was
        // never asked for: `list --as-of`): the log's times bisected, so a
        // window of a gigabyte log costs a few reads, not a pass.
        Ok(Some((
            file.start_for(from.saturating_sub(WINDOW_LOOKBACK_MS))?,
            file.end_for(to)?,
        )))
    }

    /// The tenures of the lines from `at` (a line start when it is
    /// `want`, else the start of the line it falls in) up to `stop`.
    fn read_span(&self, mut at: u64, want: u64, stop: u64) -> Result<TenureIndex, HistoryError> {
        let mut ix = TenureIndex::new(self.limits);
        let Some(file) = &self.file else {
            return Ok(ix);
        };
        if at != want {
            // Cut to the byte cap: begin at the line the cut fell in, read
            // whole however long (its claim event is no less one for it).
            at = line_start_at(file, at)?.max(want);
        }
        apply_lines(file, at, stop, &mut ix)?;
        Ok(ix)
    }
}

/// A failure reading the log, naming it; a failure of the visitor's own
/// output (a reader gone, a full disk) as it was.
fn at(path: &Path, e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::BrokenPipe | io::ErrorKind::StorageFull => e,
        kind => io::Error::new(kind, format!("{}: {e}", path.display())),
    }
}
