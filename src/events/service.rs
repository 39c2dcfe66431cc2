//! One thread that owns the log for browsing: it indexes the whole file in
//! bounded steps and, between steps, answers requests for pages of lines
//! and runs searches, so a request never waits for the index and the index
//! never waits for the reader.
//!
//! The caller talks to it with [`Request`]s over a channel and hears back
//! through a callback, so this module knows nothing of who is asking.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::Duration;

use super::backward::{LogFile, Needle, SearchFrom, SearchStep};
use super::index::{tail_tenures, Indexer, Progress};
use super::tail::{FileId, Line, TailError};
use super::tenure::{Limits, TenureIndex};

/// Bytes indexed between two looks at the request channel.
const INDEX_STEP: u64 = 4 * 1024 * 1024;
/// Bytes searched between two looks at the request channel.
const SEARCH_STEP: u64 = 16 * 1024 * 1024;
/// Bytes of the log's end read for the first timeline screen.
pub const TAIL_TENURE_BYTES: u64 = 4 * 1024 * 1024;
/// A progress report at most every this many bytes indexed.
const PROGRESS_EVERY: u64 = 64 * 1024 * 1024;
/// A time window re-read from the log starts this long before it, so the
/// tenures already running when it begins are seen from their acquire.
const WINDOW_LOOKBACK_MS: i64 = 3_600_000;
/// Most bytes one window re-read reads (about a second of indexing): the
/// part of the window nearest its end is kept when it is larger.
pub const WINDOW_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// How often an idle service looks whether the log grew, for line counts.
const IDLE_POLL: Duration = Duration::from_secs(2);

/// Where a page is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// The first line of the file.
    Start,
    /// Just past the last complete line.
    End,
    /// The line starting at this offset.
    At(u64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// Up to `before` lines ending before the anchor, then up to `after`
    /// lines from it (the anchor line first).
    Page {
        anchor: Anchor,
        before: usize,
        after: usize,
    },
    /// Find the nearest line containing `needle` in the direction `from`
    /// says; replaces any search still running.
    Search {
        id: u64,
        needle: String,
        from: SearchFrom,
    },
    /// The log was truncated or replaced: start over on what is there now.
    Reindex,
    /// The tenures of `[from, to)` (epoch ms) read again from the log: the
    /// whole-log index keeps only the recent past once it is over its
    /// limits, and this is how the older past is seen.
    Window { from: i64, to: i64 },
    /// Serve this log from now on, indexed from scratch (a dashboard over
    /// several roots moved its whole-log views to another root's log).
    Open(PathBuf),
}

/// Lines read around an anchor.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Page {
    pub lines: Vec<Line>,
    /// Index in `lines` of the anchor line (`lines.len()` for [`Anchor::End`]).
    pub anchor: usize,
    /// 0-based line number of `lines[0]`, once the index reaches it.
    pub first_line_no: Option<u64>,
    /// `lines[0]` is the first line of the file.
    pub at_start: bool,
    /// The last line is the last complete line of the file.
    pub at_end: bool,
    pub file_id: Option<FileId>,
}

#[derive(Debug)]
pub enum Reply {
    /// The tenures of the log's last bytes: enough for a first screen.
    TailTenures(Box<TenureIndex>),
    Progress(Progress),
    /// The whole log is indexed: every complete line before `end` is
    /// counted and in `tenures`; lines at or past `end` are new to both.
    Indexed {
        tenures: Box<TenureIndex>,
        lines: u64,
        end: u64,
        file_id: Option<FileId>,
    },
    /// The tenures of a window asked for with [`Request::Window`].
    Window {
        from: i64,
        to: i64,
        tenures: Box<TenureIndex>,
    },
    /// The line count grew (lines appended and indexed since).
    Lines {
        lines: u64,
        end: u64,
    },
    Page(Page),
    Search {
        id: u64,
        /// Offset of the matching line.
        found: Option<u64>,
    },
    Error(String),
}

/// The tenure limits of the dashboard's index.
pub fn limits() -> Limits {
    Limits::default()
}

struct Search {
    id: u64,
    needle: Needle,
    from: SearchFrom,
}

struct Service {
    path: PathBuf,
    file: Option<LogFile>,
    indexer: Option<Indexer>,
    /// The index pass is over and its tenures were handed on; the indexer
    /// now only keeps counting lines.
    handed_on: bool,
    search: Option<Search>,
    last_progress: u64,
    limits: Limits,
    /// The last error sent: a log that stays unreadable (a directory at
    /// the path) is retried every idle look, but said only once.
    last_error: Option<String>,
}

/// Serve `path` until the request channel closes or `send` says the other
/// side is gone.
pub fn serve(path: PathBuf, requests: Receiver<Request>, mut send: impl FnMut(Reply) -> bool) {
    let mut svc = Service {
        path,
        file: None,
        indexer: None,
        handed_on: false,
        search: None,
        last_progress: 0,
        limits: limits(),
        last_error: None,
    };
    if !svc.start(&mut send) {
        return;
    }
    loop {
        let busy = svc.search.is_some() || (svc.indexer.is_some() && !svc.handed_on);
        let req = if busy {
            match requests.try_recv() {
                Ok(r) => Some(r),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => return,
            }
        } else {
            match requests.recv_timeout(IDLE_POLL) {
                Ok(r) => Some(r),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        };
        let alive = match req {
            Some(r) => svc.handle(r, &mut send),
            None => svc.work(&mut send),
        };
        if !alive {
            return;
        }
    }
}

impl Service {
    /// Report `e` unless it is the one reported last.
    fn fail(&mut self, send: &mut impl FnMut(Reply) -> bool, e: TailError) -> bool {
        let text = e.to_string();
        if self.last_error.as_deref() == Some(text.as_str()) {
            return true;
        }
        self.last_error = Some(text.clone());
        send(Reply::Error(text))
    }

    /// Open what is at the path now and send the tail's tenures.
    fn start(&mut self, send: &mut impl FnMut(Reply) -> bool) -> bool {
        self.indexer = None;
        self.handed_on = false;
        self.search = None;
        self.last_progress = 0;
        self.file = match LogFile::open(&self.path) {
            Ok(f) => f,
            Err(e) => return self.fail(send, e),
        };
        let Some(file) = &self.file else {
            // Nothing to index: every line the follower brings is new.
            self.handed_on = true;
            return send(Reply::Indexed {
                tenures: Box::new(TenureIndex::new(self.limits)),
                lines: 0,
                end: 0,
                file_id: None,
            });
        };
        match tail_tenures(file, TAIL_TENURE_BYTES, self.limits) {
            Ok((t, _)) => {
                if !send(Reply::TailTenures(Box::new(t))) {
                    return false;
                }
            }
            Err(e) => return self.fail(send, e),
        }
        // A second handle for the indexer: it reads at its own offsets.
        match LogFile::open(&self.path) {
            Ok(Some(f)) if f.id() == file.id() => {
                self.indexer = Some(Indexer::new(f, self.limits));
                self.last_error = None;
                true
            }
            Ok(_) => self.start(send),
            Err(e) => self.fail(send, e),
        }
    }

    fn handle(&mut self, req: Request, send: &mut impl FnMut(Reply) -> bool) -> bool {
        match req {
            Request::Page {
                anchor,
                before,
                after,
            } => match self.page(anchor, before, after) {
                Ok(p) => send(Reply::Page(p)),
                Err(e) => self.fail(send, e),
            },
            Request::Search { id, needle, from } => {
                let needle = Needle::new(&needle);
                let Some(file) = self.file.as_ref().filter(|_| !needle.is_empty()) else {
                    return send(Reply::Search { id, found: None });
                };
                // "Before the end" may be asked without knowing the length.
                let from = match (from, file.len()) {
                    (SearchFrom::Before(e), Ok(len)) if e > len => SearchFrom::Before(len),
                    (from, _) => from,
                };
                self.search = Some(Search { id, needle, from });
                true
            }
            Request::Reindex => self.start(send),
            Request::Open(path) => {
                self.path = path;
                self.start(send)
            }
            Request::Window { from, to } => match self.window(from, to) {
                Ok(t) => send(Reply::Window {
                    from,
                    to,
                    tenures: Box::new(t),
                }),
                Err(e) => self.fail(send, e),
            },
        }
    }

    /// Re-read the log between the checkpoints around `[from, to)`.
    fn window(&self, from: i64, to: i64) -> Result<TenureIndex, TailError> {
        let mut ix = TenureIndex::new(self.limits);
        let (Some(file), Some(indexer)) = (&self.file, &self.indexer) else {
            return Ok(ix);
        };
        let lines = indexer.lines();
        let stop = lines.offset_after(to).max(lines.offset_before(to));
        let want = lines.offset_before(from.saturating_sub(WINDOW_LOOKBACK_MS));
        let mut at = want.max(stop.saturating_sub(WINDOW_MAX_BYTES));
        if at != want {
            // Cut to the byte cap: begin at a whole line.
            match file.next_line_start(at - 1)? {
                Some(s) => at = s,
                None => return Ok(ix),
            }
        }
        while at < stop {
            let batch = file.lines_from(at, 4096)?;
            let Some(last) = batch.last() else { break };
            let last = last.offset;
            for l in batch.iter().take_while(|l| l.offset < stop) {
                ix.apply_line(&l.text);
            }
            match file.next_line_start(last)? {
                Some(n) => at = n,
                None => break,
            }
        }
        Ok(ix)
    }

    /// One bounded step of whatever is running: a search first (someone
    /// is waiting on it), else the index.
    fn work(&mut self, send: &mut impl FnMut(Reply) -> bool) -> bool {
        if let (Some(s), Some(file)) = (&mut self.search, &self.file) {
            let (id, found) = match file.search(&s.needle, s.from, SEARCH_STEP) {
                Ok(SearchStep::Continue(next)) => {
                    s.from = next;
                    return true;
                }
                Ok(SearchStep::Found(at)) => (s.id, Some(at)),
                Ok(SearchStep::NotFound) => (s.id, None),
                Err(e) => {
                    self.search = None;
                    return self.fail(send, e);
                }
            };
            self.search = None;
            return send(Reply::Search { id, found });
        }
        let Some(ix) = &mut self.indexer else {
            // No log yet (or it could not be opened): index it once it is
            // there, so browsing and line counts do not stay empty.
            if self.file.is_none() && std::fs::symlink_metadata(&self.path).is_ok() {
                return self.start(send);
            }
            return true;
        };
        let before = ix.progress().lines;
        let p = match ix.step(INDEX_STEP) {
            Ok(p) => p,
            Err(e) => {
                self.indexer = None;
                return self.fail(send, e);
            }
        };
        if self.handed_on {
            return p.lines == before
                || send(Reply::Lines {
                    lines: p.lines,
                    end: p.scanned,
                });
        }
        if p.done {
            self.handed_on = true;
            let tenures = ix.hand_on_tenures();
            return send(Reply::Indexed {
                tenures: Box::new(tenures),
                lines: p.lines,
                end: p.scanned,
                file_id: Some(ix.file_id()),
            });
        }
        if p.scanned >= self.last_progress + PROGRESS_EVERY {
            self.last_progress = p.scanned;
            return send(Reply::Progress(p));
        }
        true
    }

    fn page(&self, anchor: Anchor, before: usize, after: usize) -> Result<Page, TailError> {
        let Some(file) = &self.file else {
            return Ok(Page {
                at_start: true,
                at_end: true,
                ..Page::default()
            });
        };
        let len = file.len()?;
        let (mut lines, anchor_ix, at_start, at_end) = match anchor {
            Anchor::End => {
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
        let first_line_no = match lines.first() {
            Some(l) => match &self.indexer {
                Some(ix) => ix.lines().line_no(file, l.offset)?,
                None => None,
            },
            None => None,
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
}
