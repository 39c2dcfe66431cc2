//! The whole history of one events log, whichever store keeps it: what the
//! events pane browses and searches, what the timeline draws, and what
//! `events --since` reads.
//!
//! A file log (`.fno/events.jsonl`) is one implementation
//! ([`super::file_history::FileHistory`]); a store keeps others behind its
//! seam (etcd's `PREFIX/events/`, and each root a publishing host mirrors).
//! Nothing here knows which one it talks to: the events service
//! ([`super::service`]) drives a `Box<dyn History>` on its own thread, so
//! every call may block on a disk or a network without a caller noticing.
//!
//! # Marks
//!
//! Every entry carries a mark in [`Line::offset`]: a `u64` that names it
//! for later requests ([`Anchor::At`], [`SearchFrom`]). In a file it is the
//! line's byte offset; in a store it is the revision the event was written
//! at. Either way a later write has a higher mark, which is what lets the
//! follower's lines be told apart from those a pass over the history has
//! already seen ([`Step::Indexed`]'s `end`).

use super::asof::Around;
use super::backward::{Needle, SearchFrom, SearchStep};
use super::index::Progress;
use super::range::{Entry, Range, RangeEnd};
use super::tail::{FileId, Line, TailError};
use super::tenure::TenureIndex;

/// Bits of a mark that are its log's own where several logs are read as
/// one ([`super::log_set::LogSet`]): the rest, above, says which log. A
/// byte offset or a revision stays far below 2^56, and the first log's
/// marks are its own, unchanged.
pub const MARK_BITS: u32 = 56;
const MARK_MASK: u64 = (1 << MARK_BITS) - 1;

/// The mark of entry `mark` of log `log` among several.
pub fn pack_mark(log: usize, mark: u64) -> u64 {
    ((log as u64) << MARK_BITS) | (mark & MARK_MASK)
}

/// Which log among several a mark is in, and its mark there.
pub fn unpack_mark(mark: u64) -> (usize, u64) {
    ((mark >> MARK_BITS) as usize, mark & MARK_MASK)
}

/// Where each log of a set was read to, by log: an entry is new to what
/// was read when its mark is at or past its own log's end (the one-log
/// `end` of [`Step::Indexed`], once per log).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ends(pub Vec<u64>);

impl Ends {
    /// Is the entry marked `mark` past what was read of its log? (A log
    /// the set does not know is read from its start.)
    pub fn admits(&self, mark: u64) -> bool {
        let (log, at) = unpack_mark(mark);
        self.0.get(log).is_none_or(|end| at >= *end)
    }
}

/// Where a page is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// The first entry of the log.
    Start,
    /// Just past the last complete entry.
    End,
    /// The entry with this mark.
    At(u64),
    /// The first entry written at or after this time (epoch ms), as far as
    /// the writers' clocks agree (see [`super::seek::CLOCK_SLACK_MS`]).
    Time(i64),
}

/// Entries read around an anchor.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Page {
    pub lines: Vec<Line>,
    /// Index in `lines` of the anchor entry (`lines.len()` for [`Anchor::End`]).
    pub anchor: usize,
    /// 0-based number of `lines[0]` in the log, once it is known.
    pub first_line_no: Option<u64>,
    /// `lines[0]` is the first entry of the log.
    pub at_start: bool,
    /// The last line is the last complete entry of the log.
    pub at_end: bool,
    /// The file read (None for a store).
    pub file_id: Option<FileId>,
}

/// Which log of a store a history reads.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Log {
    /// The store's own events: a file root's `events.jsonl`, etcd's
    /// `PREFIX/events/`.
    #[default]
    Own,
    /// The copy of one root's log that a publishing host mirrors into the
    /// store (`claimtop publish`).
    Mirrored { host_id: String, root_id: String },
    /// One root's own log, where a store speaks for several file roots
    /// (each keeps its `events.jsonl`): the root named by its directory.
    Root(std::path::PathBuf),
}

/// What an entry and its mark are called: "line 3 of 10 · byte 4 096" in a
/// file, "event 3 of 10 · revision 812" in a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nouns {
    pub entry: &'static str,
    pub mark: &'static str,
}

impl Nouns {
    pub const FILE: Nouns = Nouns {
        entry: "line",
        mark: "byte",
    };
    pub const STORE: Nouns = Nouns {
        entry: "event",
        mark: "revision",
    };
}

impl Default for Nouns {
    fn default() -> Nouns {
        Nouns::FILE
    }
}

/// Where a count of matches goes on: a place in the history's own terms
/// (a byte offset in a file, a key in a store), opaque to everyone else.
/// The default is the first entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScanAt(pub Vec<u8>);

/// What one bounded step of a count did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanStep {
    /// Where the next step starts.
    pub next: ScanAt,
    /// `next` is the end of what is there now: a later step from it reads
    /// only what is written after.
    pub at_end: bool,
}

/// What reading a history can fail with.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Log(#[from] TailError),
    /// The store's own words (unreachable, compacted, refused...).
    #[error("{0}")]
    Store(String),
    /// Reading a range failed (the log's file named), or its visitor did
    /// (its output gone): the error as it was.
    #[error(transparent)]
    Read(#[from] std::io::Error),
}

/// What a range read hands each entry to.
pub type Visit<'v> = dyn FnMut(Entry<'_>) -> std::io::Result<()> + 'v;

/// What [`History::start`] found.
#[derive(Debug)]
pub enum Start {
    /// No log yet: nothing to index, every entry the follower brings is new.
    Nothing,
    /// The tenures of the log's most recent part, enough for a first
    /// timeline screen while the whole history is being read.
    Tail(Box<TenureIndex>),
}

/// What one bounded step of the pass over the whole history did.
#[derive(Debug)]
pub enum Step {
    /// Nothing new.
    Idle,
    /// Read on; nothing worth reporting yet.
    Working,
    /// Read on; this far (reported now and then).
    Progress(Progress),
    /// The whole history is read: every entry with a mark before `end` is
    /// counted in `lines` and in `tenures`.
    Indexed {
        tenures: Box<TenureIndex>,
        lines: u64,
        end: u64,
        file_id: Option<FileId>,
    },
    /// After the pass: the count grew (entries up to `end` counted).
    Counted { lines: u64, end: u64 },
    /// What is there changed under the pass (the log appeared, or the
    /// store forgot the revision the pass was reading at): start over.
    Restart,
}

/// One log's whole history, read in bounded steps.
pub trait History: Send {
    /// What an entry and its mark are called where they are shown.
    fn nouns(&self) -> Nouns;

    /// Are its entries printed as they stand (a file's lines, byte for
    /// byte)? Otherwise each is an event a reader parses and writes again
    /// with its mark as the revision it was written at.
    fn verbatim(&self) -> bool {
        false
    }

    /// Visit the entries of `range`, oldest first, whole however long, as
    /// stored; what comes past the window is the visitor's to judge. By
    /// default pages are read from the window's start (the first entry
    /// without one) until the entries are past its end by more than the
    /// writers' clocks can be apart. A visitor's failure ends the read and
    /// comes back as [`HistoryError::Read`], as it was.
    fn read_range(
        &mut self,
        range: &Range,
        visit: &mut Visit<'_>,
    ) -> Result<RangeEnd, HistoryError> {
        super::range_pages::read_range(self, range, visit)
    }

    /// Visit the entry marked `mark`, whole (a line a follower handed out
    /// cut at its cap); false when there is none there now.
    fn read_at(&mut self, mark: u64, visit: &mut Visit<'_>) -> Result<bool, HistoryError> {
        let page = self.page(Anchor::At(mark), 0, 1)?;
        match page.lines.first().filter(|l| l.offset == mark) {
            Some(l) => {
                visit(Entry::held(l.offset, l.text.as_bytes()))?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Where each log was read to, for a history over several logs (the
    /// `end` its [`Step::Indexed`] and [`Step::Counted`] carry is then
    /// none of them); None for one log.
    fn ends(&self) -> Option<Ends> {
        None
    }

    /// Open what is there now, from scratch.
    fn start(&mut self) -> Result<Start, HistoryError>;

    /// Is the pass over the whole history still under way? The service
    /// then keeps stepping without waiting for requests.
    fn indexing(&self) -> bool;

    /// One bounded step of the pass over the whole history (counting the
    /// entries and rebuilding the tenures); once it is over, a look at
    /// whether the log grew.
    fn step(&mut self) -> Result<Step, HistoryError>;

    /// Up to `before` entries before the anchor, then up to `after` from it
    /// (the anchor entry first).
    fn page(&mut self, anchor: Anchor, before: usize, after: usize) -> Result<Page, HistoryError>;

    /// Where a search asked from `from` starts; None when there is nothing
    /// to search.
    fn search_from(&mut self, from: SearchFrom) -> Option<SearchFrom>;

    /// One bounded step of a search for an entry containing `needle`.
    fn search(&mut self, needle: &Needle, from: SearchFrom) -> Result<SearchStep, HistoryError>;

    /// One bounded step of a count of the entries containing `needle`, in
    /// the log's order from `at`: the marks of those it met, pushed on
    /// `found` in that order.
    fn count_matches(
        &mut self,
        needle: &Needle,
        at: &ScanAt,
        found: &mut Vec<u64>,
    ) -> Result<ScanStep, HistoryError>;

    /// The tenures of `[from, to)` (epoch ms), read again from the log:
    /// what the pass keeps of the distant past is bounded.
    fn window(&mut self, from: i64, to: i64) -> Result<TenureIndex, HistoryError>;

    /// The tenures around the instant `at` (epoch ms), for "as of": the
    /// window [`super::asof::window_around`] names, and when that is more
    /// than the history reads at once, a part of it that holds the
    /// instant; with how much of the log that was, so the answer can say
    /// when it cannot tell. By default windows ever narrower are read until
    /// one reaches back to it ([`super::asof::read_around`]), not knowing
    /// the log's ends; a history that can cut a window around a point does
    /// it in one read.
    fn around(&mut self, at: i64) -> Result<Around, HistoryError> {
        super::asof::read_around(at, |from, to| Ok(Around::unknown(self.window(from, to)?)))
    }
}
