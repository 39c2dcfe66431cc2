//! One thread that owns a log's history for browsing: it runs the pass
//! over the whole history in bounded steps and, between steps, answers
//! requests for pages and runs searches, so a request never waits for the
//! pass and the pass never waits for the reader.
//!
//! The caller talks to it with [`Request`]s over a channel and hears back
//! through a callback, so this module knows nothing of who is asking; and
//! it reads through the [`History`] trait, so it knows nothing of which
//! store keeps the log.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::Duration;

use super::asof::Answer;
use super::backward::{Needle, SearchFrom, SearchStep};
use super::file_history::FileHistory;
pub use super::file_history::{TAIL_TENURE_BYTES, WINDOW_MAX_BYTES};
pub use super::history::{Anchor, Page};
use super::history::{Ends, History, HistoryError, Log, ScanAt, Start, Step};
use super::index::Progress;
use super::tail::FileId;
use super::tenure::{Limits, TenureIndex};

/// How often an idle service looks whether the log grew, for line counts.
const IDLE_POLL: Duration = Duration::from_secs(2);

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
        needle: Needle,
        from: SearchFrom,
        /// Reaching the end in that direction goes on from the other end
        /// (once), as `n` does in less and lnav.
        wrap: bool,
    },
    /// Count the entries containing `needle` over the whole history, and
    /// go on counting what is appended; an empty needle stops counting.
    /// Replaces any count of another needle.
    Count { id: u64, needle: Needle },
    /// The log was truncated or replaced: start over on what is there now.
    Reindex,
    /// The tenures of `[from, to)` (epoch ms) read again from the log: the
    /// whole-log index keeps only the recent past once it is over its
    /// limits, and this is how the older past is seen.
    Window { from: i64, to: i64 },
    /// The keys held at the instant `at` (epoch ms), rebuilt from the
    /// tenures around it ("as of"), in each log named (with the root it
    /// speaks for), or in the log served now when none is named. The log
    /// served stays the one served.
    AsOf {
        at: i64,
        logs: Vec<(Option<String>, Which)>,
    },
    /// Serve this log file from now on, indexed from scratch (a dashboard
    /// over several roots moved its whole-log views to another root's log).
    Open(PathBuf),
    /// Serve this log of the store from now on (a dashboard over a store
    /// moved its whole-log views to a root a host mirrors, or back).
    OpenLog(Log),
}

/// What a [`Request::Open`] or [`Request::OpenLog`] names.
#[derive(Debug, Clone, PartialEq)]
pub enum Which {
    Path(PathBuf),
    Log(Log),
}

/// Opens the history a [`Which`] names: the face's side of the seam.
pub type Opener = Box<dyn FnMut(&Which) -> Result<Box<dyn History>, HistoryError> + Send>;

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
    /// The keys held at the instant a [`Request::AsOf`] asked about, by
    /// key, as far as the logs say (the face adds what its store holds
    /// now); `trouble` names a log that could not be read (its rows are
    /// missing, and the answer is not complete).
    AsOf {
        at: i64,
        answer: Answer,
        trouble: Option<String>,
    },
    /// Where each log was read to, said just before the [`Reply::Indexed`]
    /// or [`Reply::Lines`] of a history over several logs (whose `end` is
    /// then none of theirs): an entry is new when [`Ends::admits`] it.
    Ends(Ends),
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
        /// It was found past the end the search went towards, from the
        /// other end.
        wrapped: bool,
    },
    /// How far the count asked with [`Request::Count`] `id` is.
    Matches(Matches),
    Error(String),
}

/// A count of the entries that match, as far as it has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matches {
    pub id: u64,
    /// Entries counted so far.
    pub counted: u64,
    /// The whole history is counted (what is appended is counted as it
    /// comes, a look every idle poll).
    pub done: bool,
    /// Which match (1-based) the last search found, once the count has
    /// passed it.
    pub rank: Option<u64>,
}

/// The tenure limits of the dashboard's index.
pub fn limits() -> Limits {
    Limits::default()
}

struct Search {
    id: u64,
    needle: Needle,
    from: SearchFrom,
    /// Where to go on from once this direction is exhausted.
    wrap: Option<SearchFrom>,
    wrapped: bool,
}

/// Marks of matches kept for ranks: 2 MiB. Past it the count goes on, and
/// a match beyond the last mark kept has no rank.
const RANK_MARKS_MAX: usize = 1 << 18;

/// A count of matches over the whole history.
struct Counting {
    id: u64,
    needle: Needle,
    at: ScanAt,
    done: bool,
    counted: u64,
    /// The marks of the first matches, in the log's order.
    marks: Vec<u64>,
    /// The mark the last search found.
    focus: Option<u64>,
}

impl Counting {
    fn new(id: u64, needle: Needle) -> Counting {
        Counting {
            id,
            needle,
            at: ScanAt::default(),
            done: false,
            counted: 0,
            marks: Vec::new(),
            focus: None,
        }
    }

    /// From the start again (the log was replaced or another was opened).
    fn restart(&mut self) {
        *self = Counting::new(self.id, self.needle.clone());
    }

    fn reply(&self) -> Reply {
        let rank = self
            .focus
            .and_then(|f| self.marks.iter().position(|&m| m == f))
            .map(|i| i as u64 + 1);
        Reply::Matches(Matches {
            id: self.id,
            counted: self.counted,
            done: self.done,
            rank,
        })
    }
}

struct Service {
    history: Box<dyn History>,
    open: Opener,
    search: Option<Search>,
    count: Option<Counting>,
    /// The last error sent: a log that stays unreadable (a directory at
    /// the path) is retried every idle look, but said only once.
    last_error: Option<String>,
}

/// Serve the file log at `path` until the request channel closes or
/// `send` says the other side is gone.
pub fn serve(path: PathBuf, requests: Receiver<Request>, send: impl FnMut(Reply) -> bool) {
    let history = Box::new(FileHistory::new(path, limits()));
    serve_history(history, Box::new(open_file), requests, send)
}

/// The opener of a face whose logs are files: a path is its log, and a
/// store's log is none of its business.
pub fn open_file(which: &Which) -> Result<Box<dyn History>, HistoryError> {
    match which {
        Which::Path(p) => Ok(Box::new(FileHistory::new(p.clone(), limits()))),
        Which::Log(l) => Err(HistoryError::Store(format!(
            "a file root keeps no {l:?} log"
        ))),
    }
}

/// Serve `history` (and, when a request names another log, what `open`
/// opens for it) until the request channel closes or `send` says the
/// other side is gone.
pub fn serve_history(
    history: Box<dyn History>,
    open: Opener,
    requests: Receiver<Request>,
    mut send: impl FnMut(Reply) -> bool,
) {
    let mut svc = Service {
        history,
        open,
        search: None,
        count: None,
        last_error: None,
    };
    if !svc.start(&mut send) {
        return;
    }
    loop {
        let counting = svc.count.as_ref().is_some_and(|c| !c.done);
        let busy = svc.search.is_some() || counting || svc.history.indexing();
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
    fn fail(&mut self, send: &mut impl FnMut(Reply) -> bool, e: HistoryError) -> bool {
        let text = e.to_string();
        if self.last_error.as_deref() == Some(text.as_str()) {
            return true;
        }
        self.last_error = Some(text.clone());
        send(Reply::Error(text))
    }

    /// Open what is there now and send the tail's tenures.
    fn start(&mut self, send: &mut impl FnMut(Reply) -> bool) -> bool {
        self.search = None;
        if let Some(c) = &mut self.count {
            c.restart();
        }
        match self.history.start() {
            Ok(Start::Nothing) => {
                if let Some(ends) = self.history.ends() {
                    if !send(Reply::Ends(ends)) {
                        return false;
                    }
                }
                send(Reply::Indexed {
                    tenures: Box::new(TenureIndex::new(limits())),
                    lines: 0,
                    end: 0,
                    file_id: None,
                })
            }
            Ok(Start::Tail(t)) => {
                self.last_error = None;
                send(Reply::TailTenures(t))
            }
            Err(e) => self.fail(send, e),
        }
    }

    /// Serve another log from now on.
    fn reopen(&mut self, which: Which, send: &mut impl FnMut(Reply) -> bool) -> bool {
        match (self.open)(&which) {
            Ok(h) => {
                self.history = h;
                self.start(send)
            }
            Err(e) => self.fail(send, e),
        }
    }

    fn handle(&mut self, req: Request, send: &mut impl FnMut(Reply) -> bool) -> bool {
        match req {
            Request::Page {
                anchor,
                before,
                after,
            } => match self.history.page(anchor, before, after) {
                Ok(p) => send(Reply::Page(p)),
                Err(e) => self.fail(send, e),
            },
            Request::Search {
                id,
                needle,
                from,
                wrap,
            } => {
                let from = match self.history.search_from(from) {
                    Some(f) if !needle.is_empty() => f,
                    _ => {
                        return send(Reply::Search {
                            id,
                            found: None,
                            wrapped: false,
                        })
                    }
                };
                let wrap = wrap.then_some(match from {
                    SearchFrom::Before(_) => SearchFrom::Before(u64::MAX),
                    _ => SearchFrom::Start,
                });
                self.search = Some(Search {
                    id,
                    needle,
                    from,
                    wrap,
                    wrapped: false,
                });
                true
            }
            Request::Count { id, needle } => {
                match &mut self.count {
                    _ if needle.is_empty() => self.count = None,
                    // The same needle again: its count stands.
                    Some(c) if c.needle == needle => {
                        c.id = id;
                        return send(c.reply());
                    }
                    _ => self.count = Some(Counting::new(id, needle)),
                }
                true
            }
            Request::Reindex => self.start(send),
            Request::Open(path) => self.reopen(Which::Path(path), send),
            Request::OpenLog(log) => self.reopen(Which::Log(log), send),
            Request::AsOf { at, logs } => {
                let reply = self.as_of(at, logs);
                send(reply)
            }
            Request::Window { from, to } => match self.history.window(from, to) {
                Ok(t) => send(Reply::Window {
                    from,
                    to,
                    tenures: Box::new(t),
                }),
                Err(e) => self.fail(send, e),
            },
        }
    }

    /// One bounded step of whatever is running: a search first (someone
    /// is waiting on it), else the pass over the history.
    fn work(&mut self, send: &mut impl FnMut(Reply) -> bool) -> bool {
        if let Some(s) = &mut self.search {
            let found = match self.history.search(&s.needle, s.from) {
                Ok(SearchStep::Continue(next)) => {
                    s.from = next;
                    return true;
                }
                Ok(SearchStep::Found(at)) => Some(at),
                Ok(SearchStep::NotFound) => match s.wrap.take() {
                    // From the other end, as the history places it (a
                    // file's "before the end" is its length).
                    Some(from) => match self.history.search_from(from) {
                        Some(from) => {
                            s.from = from;
                            s.wrapped = true;
                            return true;
                        }
                        None => None,
                    },
                    None => None,
                },
                Err(e) => {
                    self.search = None;
                    return self.fail(send, e);
                }
            };
            let Some(s) = self.search.take() else {
                return true;
            };
            let alive = send(Reply::Search {
                id: s.id,
                found,
                wrapped: s.wrapped && found.is_some(),
            });
            return match (&mut self.count, found) {
                (Some(c), Some(at)) if alive && c.needle.lowered() == s.needle.lowered() => {
                    c.focus = Some(at);
                    send(c.reply())
                }
                _ => alive,
            };
        }
        if self.count.as_ref().is_some_and(|c| !c.done) {
            return self.count_step(send);
        }
        // Idle: what was appended since is counted too (after the pass,
        // which reads the same bytes).
        if self.count.is_some() && !self.history.indexing() && !self.count_step(send) {
            return false;
        }
        let step = self.history.step();
        if let (Ok(Step::Indexed { .. } | Step::Counted { .. }), Some(ends)) =
            (&step, self.history.ends())
        {
            if !send(Reply::Ends(ends)) {
                return false;
            }
        }
        match step {
            Ok(Step::Idle | Step::Working) => true,
            Ok(Step::Progress(p)) => send(Reply::Progress(p)),
            Ok(Step::Indexed {
                tenures,
                lines,
                end,
                file_id,
            }) => send(Reply::Indexed {
                tenures,
                lines,
                end,
                file_id,
            }),
            Ok(Step::Counted { lines, end }) => send(Reply::Lines { lines, end }),
            Ok(Step::Restart) => self.start(send),
            Err(e) => self.fail(send, e),
        }
    }

    /// The keys held at `at` in the logs named, each read by a history of
    /// its own (opened, bisected to the instant, dropped), so the log the
    /// views browse is not disturbed.
    fn as_of(&mut self, at: i64, logs: Vec<(Option<String>, Which)>) -> Reply {
        let mut reads = Vec::new();
        let mut trouble = None;
        if logs.is_empty() {
            match self.history.around(at) {
                Ok(read) => reads.push((None, read)),
                Err(e) => trouble = Some(e.to_string()),
            }
        }
        for (root, which) in logs {
            let read = (self.open)(&which).and_then(|mut h| {
                h.start()?;
                h.around(at)
            });
            match read {
                Ok(read) => reads.push((root, read)),
                Err(e) => {
                    let name = root.unwrap_or_else(|| format!("{which:?}"));
                    trouble = Some(format!("{name}: {e}"));
                }
            }
        }
        let mut answer = Answer::of(at, &reads, &[]);
        answer.complete &= trouble.is_none();
        Reply::AsOf {
            at,
            answer,
            trouble,
        }
    }

    /// One step of the count; said when it moved or ended.
    fn count_step(&mut self, send: &mut impl FnMut(Reply) -> bool) -> bool {
        let Some(c) = &mut self.count else {
            return true;
        };
        let mut found = Vec::new();
        let step = match self.history.count_matches(&c.needle, &c.at, &mut found) {
            Ok(s) => s,
            Err(e) => {
                self.count = None;
                return self.fail(send, e);
            }
        };
        let was_done = c.done;
        c.at = step.next;
        c.done |= step.at_end;
        c.counted += found.len() as u64;
        let room = RANK_MARKS_MAX.saturating_sub(c.marks.len());
        c.marks.extend(found.iter().take(room));
        if found.is_empty() && c.done == was_done {
            return true;
        }
        send(c.reply())
    }
}
