//! Browsing the whole events log in the events pane: a window of lines read
//! on demand around the cursor, `/` search with `n`/`N`, the raw JSON of
//! the selected line, and where the cursor is ("line 1 234 of 3 245 678").
//!
//! Pure: every transition that needs the events service adds its
//! [`Request`]s to the caller's `asks` (they leave the update as effects),
//! and the service's replies come back as messages. Whether the pane
//! browses at all is the layer stack's to say (`Layer::Browse`). Memory
//! is the window, at most `2 × PAGE + 1` lines, whatever the log's size.

use super::events::EventRow;
use crate::events::backward::Needle;
use crate::events::history::{Ends, Log, Nouns};
use crate::events::index::Progress;
use crate::events::service::{Anchor, Page, Request};
use crate::events::tail::Line;

/// The count of the matches, as far as the service has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hits {
    /// Matching entries counted so far.
    pub counted: u64,
    /// The whole history is counted.
    pub done: bool,
    /// Which match (1-based) the last one found is, once counted.
    pub rank: Option<u64>,
}

/// The running or last search.
#[derive(Debug, Clone)]
pub struct Search {
    pub needle: Needle,
    /// Id of the request whose answer is awaited.
    pub id: u64,
    pub running: bool,
    /// Towards older lines (`N`, and Enter) or newer (`n`).
    pub older: bool,
    /// Id of the count asked for this needle: a count of an earlier
    /// needle may still report.
    pub count_id: u64,
    pub hits: Hits,
    /// Mark of the match the last search found: the title says which
    /// match it is while the cursor is on it.
    pub focus: Option<u64>,
}

/// Lines read on each side of the cursor when the window is re-centred.
pub const PAGE: usize = 200;
/// The window is re-centred when the cursor comes this close to an edge
/// that is not the file's.
const MARGIN: usize = 40;

/// A line of the window: as read, and digested for display.
#[derive(Debug, Clone, PartialEq)]
pub struct BrowseRow {
    pub line: Line,
    pub row: EventRow,
}

/// Where the cursor lands when the page asked for arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Land {
    First,
    Last,
    At(u64),
    /// On the page's anchor line (a time's first line).
    Anchor,
}

/// How many lines the log has, as far as is known.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Count {
    /// Lines the index counted, and the offset it counted to.
    pub indexed: Option<(u64, u64)>,
    /// Lines the follower brought past that offset.
    pub appended: u64,
    /// Lines counted so far while the index is being built.
    pub counting: Option<Progress>,
    /// Over several logs, where each was counted to (the offset in
    /// `indexed` is then none of theirs).
    pub ends: Option<Ends>,
}

impl Count {
    /// Total lines, once the index is whole.
    pub fn total(&self) -> Option<u64> {
        self.indexed.map(|(n, _)| n + self.appended)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Browse {
    pub rows: Vec<BrowseRow>,
    pub cursor: usize,
    /// Line number (0-based) of `rows[0]`, when known.
    pub first_no: Option<u64>,
    pub at_start: bool,
    pub at_end: bool,
    waiting: bool,
    land: Option<Land>,
    /// Pages asked for and not yet answered. The service answers them in
    /// the order asked, and `land` is the newest one's: an older page that
    /// arrives while a newer is on its way is not what the cursor waits for
    /// (taking it would land the newer page with no landing at all).
    pages_out: u32,
    pub count: Count,
    pub search: Option<Search>,
    /// Show the selected line's raw JSON.
    pub raw: bool,
    /// What the last search found not, in words.
    pub message: Option<String>,
    /// Lines appended to the log since browsing began.
    pub new_lines: u64,
    pub(super) next_id: u64,
    /// What an entry and its mark are called in the log browsed.
    pub nouns: Nouns,
    /// Which of the store's logs the whole-log views read, and for a
    /// mirrored one its root's path (what its followed lines are marked
    /// with).
    pub log: Log,
    pub log_path: String,
    /// Every log of the store, when it keeps several: the whole-log views
    /// then read them all as one (a mark names its log by its place
    /// here), and never move to another.
    pub set: Vec<SetLog>,
}

/// One of the logs the whole-log views read as one.
#[derive(Debug, Clone, PartialEq)]
pub struct SetLog {
    /// The origin that keeps it.
    pub origin: usize,
    pub log: Log,
    /// What the pane calls it.
    pub name: String,
}

impl Browse {
    /// Do the whole-log views read several logs as one?
    pub fn reads_a_set(&self) -> bool {
        self.set.len() > 1
    }

    /// Where a followed line of origin `origin`'s `log` stands in the set
    /// read (None: not one of it).
    pub fn in_set(&self, origin: usize, log: &Log) -> Option<usize> {
        self.set
            .iter()
            .position(|s| s.origin == origin && &s.log == log)
    }

    /// Start browsing from the log's end (`from_start`: its first line).
    pub fn open(&mut self, from_start: bool, asks: &mut Vec<Request>) {
        self.raw = false;
        self.message = None;
        if from_start {
            self.request(Anchor::Start, 0, 2 * PAGE + 1, Land::First, asks);
        } else {
            self.request(Anchor::End, 2 * PAGE + 1, 0, Land::Last, asks);
        }
    }

    /// Browse from the first line written at or after `t` (epoch ms).
    pub fn open_at(&mut self, t: i64, asks: &mut Vec<Request>) {
        self.raw = false;
        self.message = None;
        self.request(Anchor::Time(t), PAGE, PAGE + 1, Land::Anchor, asks);
    }

    /// Back to following: the window is dropped.
    pub fn close(&mut self) {
        self.rows = Vec::new();
        self.cursor = 0;
        self.raw = false;
        self.message = None;
        self.waiting = false;
        self.land = None;
        self.new_lines = 0;
    }

    pub(super) fn request(
        &mut self,
        anchor: Anchor,
        before: usize,
        after: usize,
        land: Land,
        asks: &mut Vec<Request>,
    ) {
        self.waiting = true;
        self.land = Some(land);
        self.pages_out = self.pages_out.saturating_add(1);
        asks.push(Request::Page {
            anchor,
            before,
            after,
        });
    }

    /// Waiting for a page.
    pub fn waiting(&self) -> bool {
        self.waiting
    }

    pub fn selected(&self) -> Option<&BrowseRow> {
        self.rows.get(self.cursor)
    }

    /// Move the cursor; near an edge of the window that is not the file's,
    /// ask for the window re-centred on the cursor.
    pub fn move_by(&mut self, delta: isize, asks: &mut Vec<Request>) {
        if self.rows.is_empty() {
            return;
        }
        self.message = None;
        let last = self.rows.len() - 1;
        self.cursor = self.cursor.saturating_add_signed(delta).min(last);
        let near_top = self.cursor < MARGIN && !self.at_start;
        let near_end = self.cursor + MARGIN > last && !self.at_end;
        if (near_top || near_end) && !self.waiting {
            let at = self.rows[self.cursor].line.offset;
            self.request(Anchor::At(at), PAGE, PAGE + 1, Land::At(at), asks);
        }
    }

    /// The first line of the log.
    pub fn top(&mut self, asks: &mut Vec<Request>) {
        self.request(Anchor::Start, 0, 2 * PAGE + 1, Land::First, asks);
    }

    /// The service's page (taken only while browsing: a page that comes
    /// after the pane went back to following is dropped by the caller).
    pub fn on_page(&mut self, page: Page) {
        self.pages_out = self.pages_out.saturating_sub(1);
        if self.pages_out > 0 {
            return;
        }
        self.waiting = false;
        let land = self.land.take();
        let seq = page.first_line_no.unwrap_or(0);
        self.rows = page
            .lines
            .into_iter()
            .enumerate()
            .map(|(i, line)| BrowseRow {
                row: EventRow::from_line(seq + i as u64, &line),
                line,
            })
            .collect();
        self.first_no = page.first_line_no;
        self.at_start = page.at_start;
        self.at_end = page.at_end;
        let last = self.rows.len().saturating_sub(1);
        self.cursor = match land {
            Some(Land::First) => 0,
            Some(Land::Last) | None => last,
            Some(Land::Anchor) => page.anchor.min(last),
            Some(Land::At(o)) => self
                .rows
                .iter()
                .position(|r| r.line.offset == o)
                .unwrap_or(page.anchor.min(last)),
        };
    }

    /// A page that came after the pane went back to following: answered,
    /// and dropped.
    pub fn page_dropped(&mut self) {
        self.pages_out = self.pages_out.saturating_sub(1);
    }

    /// The service said it could not do something (a page it could not
    /// read among them): no page asked for is counted on any more.
    pub fn on_error(&mut self) {
        self.pages_out = 0;
    }

    /// Lines the follower brought (counted; the window stays where it is).
    pub fn on_appended(&mut self, lines: &[Line], browsing: bool) {
        let from = self.count.indexed.map(|(_, end)| end);
        if let Some(end) = from {
            let ends = &self.count.ends;
            let new = |l: &&Line| {
                ends.as_ref()
                    .map_or(l.offset >= end, |e| e.admits(l.offset))
            };
            self.count.appended += lines.iter().filter(new).count() as u64;
        }
        if browsing && !lines.is_empty() {
            self.new_lines += lines.len() as u64;
            // The window's end is no longer the file's.
            self.at_end = false;
        }
    }

    /// The index counted `lines` lines up to `end`.
    pub fn on_counted(&mut self, lines: u64, end: u64, browsing: bool, asks: &mut Vec<Request>) {
        self.count.indexed = Some((lines, end));
        self.count.appended = 0;
        self.count.counting = None;
        // The window was read before the count reached it: read it again
        // (same place) to learn its line numbers.
        if browsing && self.first_no.is_none() && !self.waiting {
            if let Some(at) = self.selected().map(|r| r.line.offset) {
                self.request(Anchor::At(at), PAGE, PAGE + 1, Land::At(at), asks);
            }
        }
    }

    pub fn on_progress(&mut self, p: Progress) {
        if self.count.indexed.is_none() {
            self.count.counting = Some(p);
        }
    }

    /// The log was truncated or replaced: what was read is gone.
    pub fn on_reset(&mut self, browsing: bool, asks: &mut Vec<Request>) {
        self.count = Count::default();
        // The service drops a running search when it starts over, and
        // counts the matches again from the start.
        if let Some(s) = &mut self.search {
            s.running = false;
            s.hits = Hits::default();
            s.focus = None;
        }
        if browsing {
            self.rows.clear();
            self.open(false, asks);
        }
    }

    /// 1-based line number of the cursor, when known.
    pub fn position(&self) -> Option<u64> {
        self.first_no.map(|n| n + self.cursor as u64 + 1)
    }
}

/// The selected line as an operator reads it: pretty-printed JSON (key
/// order as written), every line sanitised; or the raw text and why it is
/// not JSON.
pub fn raw_lines(line: &Line) -> Vec<String> {
    let mut out = Vec::new();
    match serde_json::from_str::<serde_json::Value>(&line.text) {
        Ok(v) => {
            let pretty = serde_json::to_string_pretty(&v).unwrap_or_else(|_| line.text.clone());
            out.extend(
                pretty
                    .lines()
                    .map(|l| crate::sanitize::sanitize(l).into_owned()),
            );
        }
        Err(e) => {
            out.push(format!("not JSON: {e}"));
            out.push(crate::sanitize::sanitize(&line.text).into_owned());
        }
    }
    if line.truncated {
        out.push(format!(
            "(the line is longer than {} KiB; only its start is shown)",
            crate::events::tail::MAX_LINE_BYTES / 1024
        ));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A page of `n` claim lines from line `from`.
    pub(crate) fn page(from: u64, n: u64, at_start: bool, at_end: bool) -> Page {
        Page {
            lines: (from..from + n)
                .map(|i| Line {
                    text: format!(r#"{{"type":"claim_acquired","data":{{"key":"k{i}"}}}}"#),
                    offset: i * 100,
                    truncated: false,
                    claim: None,
                })
                .collect(),
            anchor: 0,
            first_line_no: Some(from),
            at_start,
            at_end,
            file_id: None,
        }
    }

    #[test]
    fn opening_asks_for_the_last_page_and_lands_on_the_last_line() {
        let mut b = Browse::default();
        let mut asks = Vec::new();
        b.open(false, &mut asks);
        assert!(matches!(
            asks.drain(..).next(),
            Some(Request::Page {
                anchor: Anchor::End,
                ..
            })
        ));
        b.on_page(page(1000, 401, false, true));
        assert_eq!(b.cursor, 400);
        assert_eq!(b.position(), Some(1401));
    }

    #[test]
    fn a_page_asked_for_before_a_newer_one_is_answered_lands_nowhere_and_the_newer_lands_on_its_line(
    ) {
        let mut b = Browse::default();
        let mut asks = Vec::new();
        b.open(false, &mut asks);
        let mut unnumbered = page(4600, 401, false, true);
        unnumbered.first_line_no = None;
        b.on_page(unnumbered.clone());
        // The count comes in: the window is asked for again; before that
        // answer, a search's match asks for the page around line 15.
        b.on_counted(5000, 1 << 20, true, &mut asks);
        b.request(Anchor::At(1500), PAGE, PAGE + 1, Land::At(1500), &mut asks);
        assert_eq!(asks.len(), 3, "{asks:?}");
        b.on_page(unnumbered);
        assert!(b.waiting(), "the newer page is still to come");
        let mut p = page(0, 216, true, false);
        p.anchor = 15;
        b.on_page(p);
        assert_eq!(
            b.position(),
            Some(16),
            "the match's line, not the page's last"
        );
        assert!(!b.waiting());
    }

    #[test]
    fn nearing_the_top_of_the_window_asks_for_it_recentred_once() {
        let mut b = Browse::default();
        let mut asks = Vec::new();
        b.open(false, &mut asks);
        asks.clear();
        b.on_page(page(1000, 401, false, true));
        b.move_by(-370, &mut asks);
        assert_eq!(asks.len(), 1);
        let Request::Page { anchor, .. } = asks[0].clone() else {
            panic!("{asks:?}")
        };
        assert_eq!(anchor, Anchor::At(1030 * 100));
        b.move_by(-1, &mut asks);
        assert_eq!(asks.len(), 1, "no second request while one is out");
        // The page comes centred on line 1030; the cursor stays on it.
        let mut p = page(830, 401, false, false);
        p.anchor = 200;
        b.on_page(p);
        assert_eq!(b.position(), Some(1031));
    }

    #[test]
    fn at_the_start_of_the_file_the_cursor_stops_and_nothing_is_asked() {
        let mut b = Browse::default();
        let mut asks = Vec::new();
        b.open(true, &mut asks);
        asks.clear();
        b.on_page(page(0, 401, true, false));
        b.move_by(-5, &mut asks);
        assert_eq!(b.cursor, 0);
        assert!(asks.is_empty());
    }

    #[test]
    fn a_window_read_before_the_count_is_read_again_once_the_count_is_in() {
        let mut b = Browse::default();
        let mut asks = Vec::new();
        b.open(false, &mut asks);
        asks.clear();
        let mut p = page(1000, 401, false, true);
        p.first_line_no = None;
        b.on_page(p);
        assert_eq!(b.position(), None);
        b.on_counted(5000, 1 << 20, true, &mut asks);
        assert_eq!(
            asks.pop(),
            Some(Request::Page {
                anchor: Anchor::At(1400 * 100),
                before: PAGE,
                after: PAGE + 1
            })
        );
    }

    #[test]
    fn the_count_adds_lines_that_came_after_the_index() {
        let mut b = Browse::default();
        b.on_counted(10, 1000, false, &mut Vec::new());
        b.on_appended(
            &[
                Line {
                    text: "x".into(),
                    offset: 900,
                    truncated: false,
                    claim: None,
                },
                Line {
                    text: "y".into(),
                    offset: 1000,
                    truncated: false,
                    claim: None,
                },
            ],
            false,
        );
        assert_eq!(b.count.total(), Some(11));
    }

    #[test]
    fn raw_json_is_pretty_printed_and_escaped() {
        let line = Line {
            text: r#"{"type":"t","data":{"key":"a\u001b[2Jb"}}"#.into(),
            offset: 0,
            truncated: false,
            claim: None,
        };
        let out = raw_lines(&line);
        assert_eq!(out[0], "{");
        assert!(out.iter().any(|l| l.contains("\"key\"")));
        assert!(out.iter().all(|l| !l.contains('\u{1b}')));
        let bad = raw_lines(&Line {
            text: "oops\u{7}".into(),
            offset: 0,
            truncated: false,
            claim: None,
        });
        assert!(bad[0].starts_with("not JSON"));
        assert!(!bad[1].contains('\u{7}'));
    }
}
