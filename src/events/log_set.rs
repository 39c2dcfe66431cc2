//! Several logs read as one history: what the events pane searches,
//! counts and pages, and what the timeline draws, when the store shown
//! keeps more than one log (several roots, a root and a site, what hosts
//! mirror into a site).
//!
//! The logs stand one after another in the order given: a search that
//! finds nothing more in one log goes on in the next (older: the one
//! before), a page that reaches a log's edge is filled from its
//! neighbour, and a count goes through each in turn. Every mark carries
//! its log ([`pack_mark`]), so a later request lands in the log its
//! anchor came from. The tenures of the whole set are each log's, taken
//! into one index once every log is read.

use super::backward::{Needle, SearchFrom, SearchStep};
use super::event::parse_event;
use super::history::{
    pack_mark, unpack_mark, Anchor, Ends, History, HistoryError, Nouns, Page, ScanAt, ScanStep,
    Start, Step,
};
use super::index::Progress;
use super::tail::Line;
use super::tenure::{Limits, TenureIndex};

/// One log of the set, and what its pass has said so far.
struct Member {
    history: Box<dyn History>,
    /// The whole log's tenures, kept until every log is read.
    tenures: Option<Box<TenureIndex>>,
    /// Entries counted, once the pass is over.
    lines: Option<u64>,
    /// The mark the pass read to.
    end: u64,
    progress: Option<Progress>,
}

/// Several logs' histories as one.
pub struct LogSet {
    logs: Vec<Member>,
    limits: Limits,
    /// Every log is read, and the whole set's tenures were handed out.
    whole: bool,
    /// The place a search step was last handed back as, with the log it
    /// is in and the place in that log's own terms (a log's "start" or
    /// "before the end" has no mark to carry its log in).
    resume: Option<(SearchFrom, usize, SearchFrom)>,
}

impl LogSet {
    /// The logs in the order they are read; the set's tenures are kept
    /// within `limits`.
    pub fn new(histories: Vec<Box<dyn History>>, limits: Limits) -> LogSet {
        LogSet {
            logs: histories
                .into_iter()
                .map(|history| Member {
                    history,
                    tenures: None,
                    lines: None,
                    end: 0,
                    progress: None,
                })
                .collect(),
            limits,
            whole: false,
            resume: None,
        }
    }

    /// Entries of the logs before `log`, when each is counted.
    fn before(&self, log: usize) -> Option<u64> {
        self.logs[..log].iter().map(|m| m.lines).sum()
    }

    fn total(&self) -> u64 {
        self.logs.iter().filter_map(|m| m.lines).sum()
    }

    /// Once no log is being read: the whole set's tenures.
    fn whole_step(&mut self) -> Step {
        if self.logs.iter().any(|m| m.history.indexing()) {
            return Step::Working;
        }
        self.whole = true;
        let mut all = TenureIndex::new(self.limits);
        for m in &mut self.logs {
            if let Some(t) = m.tenures.take() {
                all.absorb(&t);
            }
        }
        Step::Indexed {
            tenures: Box::new(all),
            lines: self.total(),
            end: 0,
            file_id: None,
        }
    }

    /// A search place of log `log` as the set hands it out, remembered so
    /// the next step goes on where that log's own step stopped.
    fn hand_out(&mut self, log: usize, inner: SearchFrom) -> SearchFrom {
        let outer = match inner {
            SearchFrom::After(m) => SearchFrom::After(pack_mark(log, m)),
            SearchFrom::ForwardAt(m) => SearchFrom::ForwardAt(pack_mark(log, m)),
            SearchFrom::Before(m) => SearchFrom::Before(pack_mark(log, m)),
            SearchFrom::Start => SearchFrom::ForwardAt(pack_mark(log, 0)),
        };
        self.resume = Some((outer, log, inner));
        outer
    }

    /// Where a search goes on in the first log from `log` on (`forward`)
    /// or back from it that has anything to search.
    fn enter(&mut self, log: Option<usize>, forward: bool) -> Option<SearchFrom> {
        let log = log?;
        let order: Vec<usize> = if forward {
            (log..self.logs.len()).collect()
        } else {
            (0..=log.min(self.logs.len().checked_sub(1)?))
                .rev()
                .collect()
        };
        for i in order {
            let from = if forward {
                SearchFrom::Start
            } else {
                SearchFrom::Before(u64::MAX)
            };
            if let Some(f) = self.logs[i].history.search_from(from) {
                return Some(self.hand_out(i, f));
            }
        }
        None
    }

    /// The log a place handed in is in, and the place in that log.
    fn resolve(&self, from: SearchFrom) -> (usize, SearchFrom) {
        if let Some((outer, log, inner)) = self.resume {
            if outer == from {
                return (log, inner);
            }
        }
        match from {
            SearchFrom::After(m) => (unpack_mark(m).0, SearchFrom::After(unpack_mark(m).1)),
            SearchFrom::ForwardAt(m) => (unpack_mark(m).0, SearchFrom::ForwardAt(unpack_mark(m).1)),
            SearchFrom::Before(m) => (unpack_mark(m).0, SearchFrom::Before(unpack_mark(m).1)),
            SearchFrom::Start => (0, SearchFrom::Start),
        }
    }

    /// The log whose first entry at or after `t` is the earliest of all.
    fn log_at(&mut self, t: i64) -> Result<Option<usize>, HistoryError> {
        let mut best: Option<(String, usize)> = None;
        for (i, m) in self.logs.iter_mut().enumerate() {
            let page = m.history.page(Anchor::Time(t), 0, 1)?;
            let Some(line) = page.lines.get(page.anchor) else {
                continue;
            };
            let ts = ts_of(line);
            if best.as_ref().is_none_or(|(b, _)| ts < *b) {
                best = Some((ts, i));
            }
        }
        Ok(best.map(|(_, i)| i))
    }
}

/// When a line was written, as it says (UTC text sorts as its time).
fn ts_of(line: &Line) -> String {
    parse_event(&line.text)
        .ok()
        .and_then(|e| e.ts().map(str::to_string))
        .unwrap_or_default()
}

/// Log `log`'s lines with the set's marks.
fn marked(log: usize, lines: Vec<Line>) -> impl Iterator<Item = Line> {
    lines.into_iter().map(move |l| Line {
        offset: pack_mark(log, l.offset),
        ..l
    })
}

/// A count's place in every log, and the log it is counting now (past
/// the last: every log is counted, and each is looked at for more).
fn scan_places(at: &ScanAt, logs: usize) -> (usize, Vec<ScanAt>) {
    let mut places = vec![ScanAt::default(); logs];
    let bytes = at.0.as_slice();
    let Some((phase, mut rest)) = bytes.split_first_chunk::<2>() else {
        return (0, places);
    };
    for place in &mut places {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            break;
        };
        let len = u32::from_be_bytes(*len) as usize;
        let Some((mine, tail)) = tail.split_at_checked(len) else {
            break;
        };
        *place = ScanAt(mine.to_vec());
        rest = tail;
    }
    (usize::from(u16::from_be_bytes(*phase)), places)
}

fn scan_at(phase: usize, places: &[ScanAt]) -> ScanAt {
    let mut bytes = (phase.min(usize::from(u16::MAX)) as u16)
        .to_be_bytes()
        .to_vec();
    for p in places {
        bytes.extend((p.0.len() as u32).to_be_bytes());
        bytes.extend(&p.0);
    }
    ScanAt(bytes)
}

impl History for LogSet {
    fn nouns(&self) -> Nouns {
        self.logs
            .first()
            .map_or(Nouns::default(), |m| m.history.nouns())
    }

    fn ends(&self) -> Option<Ends> {
        Some(Ends(self.logs.iter().map(|m| m.end).collect()))
    }

    fn start(&mut self) -> Result<Start, HistoryError> {
        self.whole = false;
        self.resume = None;
        let mut tail: Option<Box<TenureIndex>> = None;
        for m in &mut self.logs {
            m.tenures = None;
            m.progress = None;
            m.end = 0;
            match m.history.start()? {
                Start::Nothing => m.lines = Some(0),
                Start::Tail(t) => {
                    m.lines = None;
                    tail.get_or_insert_with(|| Box::new(TenureIndex::new(self.limits)))
                        .absorb(&t);
                }
            }
        }
        Ok(tail.map_or(Start::Nothing, Start::Tail))
    }

    fn indexing(&self) -> bool {
        self.logs.iter().any(|m| m.history.indexing())
    }

    fn step(&mut self) -> Result<Step, HistoryError> {
        if !self.whole {
            let Some(i) = self.logs.iter().position(|m| m.history.indexing()) else {
                return Ok(self.whole_step());
            };
            let m = &mut self.logs[i];
            return Ok(match m.history.step()? {
                Step::Indexed {
                    tenures,
                    lines,
                    end,
                    ..
                } => {
                    (m.tenures, m.lines, m.end) = (Some(tenures), Some(lines), end);
                    self.whole_step()
                }
                Step::Progress(p) => {
                    m.progress = Some(p);
                    let sum = |f: fn(&Progress) -> u64| {
                        self.logs
                            .iter()
                            .filter_map(|m| m.progress.as_ref().map(f))
                            .sum()
                    };
                    Step::Progress(Progress {
                        scanned: sum(|p| p.scanned),
                        len: sum(|p| p.len),
                        lines: sum(|p| p.lines),
                        done: false,
                    })
                }
                Step::Counted { lines, end } => {
                    (m.lines, m.end) = (Some(lines), end);
                    Step::Working
                }
                other => other,
            });
        }
        // Every log is read: a look at whether any grew.
        let mut grew = false;
        for m in &mut self.logs {
            match m.history.step()? {
                Step::Counted { lines, end } | Step::Indexed { lines, end, .. } => {
                    (m.lines, m.end) = (Some(lines), end);
                    grew = true;
                }
                Step::Restart => return Ok(Step::Restart),
                Step::Idle | Step::Working | Step::Progress(_) => {}
            }
        }
        Ok(if grew {
            Step::Counted {
                lines: self.total(),
                end: 0,
            }
        } else {
            Step::Idle
        })
    }

    fn page(&mut self, anchor: Anchor, before: usize, after: usize) -> Result<Page, HistoryError> {
        let last = self.logs.len().saturating_sub(1);
        if self.logs.is_empty() {
            return Ok(Page {
                at_start: true,
                at_end: true,
                ..Page::default()
            });
        }
        let (i, inner) = match anchor {
            Anchor::Start => (0, Anchor::Start),
            Anchor::End => (last, Anchor::End),
            Anchor::At(m) => match unpack_mark(m) {
                (i, at) if i <= last => (i, Anchor::At(at)),
                _ => (last, Anchor::End),
            },
            Anchor::Time(t) => match self.log_at(t)? {
                Some(i) => (i, Anchor::Time(t)),
                None => (last, Anchor::End),
            },
        };
        let page = self.logs[i].history.page(inner, before, after)?;
        let mut anchor_at = page.anchor;
        let (mut first_log, mut first_no, mut at_start) = (i, page.first_line_no, page.at_start);
        let mut at_end = page.at_end;
        let mut lines: Vec<Line> = marked(i, page.lines).collect();
        // Filled from the logs before, up to `before` entries.
        let mut j = i;
        while at_start && j > 0 && anchor_at < before {
            j -= 1;
            let p = self.logs[j]
                .history
                .page(Anchor::End, before - anchor_at, 0)?;
            anchor_at += p.lines.len();
            lines.splice(0..0, marked(j, p.lines));
            (first_log, first_no, at_start) = (j, p.first_line_no, p.at_start);
        }
        // And from the logs after, up to `after` from the anchor.
        let mut k = i;
        while at_end && k < last && lines.len() - anchor_at < after {
            k += 1;
            let want = after - (lines.len() - anchor_at);
            let p = self.logs[k].history.page(Anchor::Start, 0, want)?;
            lines.extend(marked(k, p.lines));
            at_end = p.at_end;
        }
        Ok(Page {
            lines,
            anchor: anchor_at,
            first_line_no: first_no.and_then(|n| Some(self.before(first_log)? + n)),
            at_start: at_start && j == 0,
            at_end: at_end && k == last,
            file_id: None,
        })
    }

    fn search_from(&mut self, from: SearchFrom) -> Option<SearchFrom> {
        let last = self.logs.len().checked_sub(1)?;
        match from {
            SearchFrom::Start => self.enter(Some(0), true),
            SearchFrom::Before(m) if unpack_mark(m).0 > last => self.enter(Some(last), false),
            _ => {
                let (i, inner) = self.resolve(from);
                let i = i.min(last);
                match self.logs[i].history.search_from(inner) {
                    Some(f) => Some(self.hand_out(i, f)),
                    None if matches!(inner, SearchFrom::Before(_)) => {
                        self.enter(i.checked_sub(1), false)
                    }
                    None => self.enter(Some(i + 1), true),
                }
            }
        }
    }

    fn search(&mut self, needle: &Needle, from: SearchFrom) -> Result<SearchStep, HistoryError> {
        let (i, inner) = self.resolve(from);
        let Some(m) = self.logs.get_mut(i) else {
            return Ok(SearchStep::NotFound);
        };
        Ok(match m.history.search(needle, inner)? {
            SearchStep::Found(at) => SearchStep::Found(pack_mark(i, at)),
            SearchStep::Continue(f) => SearchStep::Continue(self.hand_out(i, f)),
            SearchStep::NotFound => {
                let next = if matches!(inner, SearchFrom::Before(_)) {
                    self.enter(i.checked_sub(1), false)
                } else {
                    self.enter(Some(i + 1), true)
                };
                next.map_or(SearchStep::NotFound, SearchStep::Continue)
            }
        })
    }

    fn count_matches(
        &mut self,
        needle: &Needle,
        at: &ScanAt,
        found: &mut Vec<u64>,
    ) -> Result<ScanStep, HistoryError> {
        let n = self.logs.len();
        let (mut phase, mut places) = scan_places(at, n);
        let mut count_in = |i: usize, places: &mut [ScanAt]| {
            let mut mine = Vec::new();
            let step = self.logs[i]
                .history
                .count_matches(needle, &places[i], &mut mine)?;
            found.extend(mine.into_iter().map(|m| pack_mark(i, m)));
            places[i] = step.next;
            Ok::<bool, HistoryError>(step.at_end)
        };
        if phase < n {
            if count_in(phase, &mut places)? {
                phase += 1;
            }
        } else {
            // Every log counted: what each had appended since.
            for i in 0..n {
                count_in(i, &mut places)?;
            }
        }
        Ok(ScanStep {
            next: scan_at(phase, &places),
            at_end: phase >= n,
        })
    }

    fn window(&mut self, from: i64, to: i64) -> Result<TenureIndex, HistoryError> {
        let mut all = TenureIndex::new(self.limits);
        for m in &mut self.logs {
            all.absorb(&m.history.window(from, to)?);
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::lines_history::LinesHistory;

    fn line(mark: u64, text: &str) -> Line {
        Line {
            text: text.to_string(),
            offset: mark,
            truncated: false,
            claim: None,
        }
    }

    fn event(ts: &str, key: &str) -> String {
        format!(
            r#"{{"ts":"{ts}","type":"claim_acquired","data":{{"key":"{key}","holder":"h","acquired_at":1}}}}"#
        )
    }

    fn two() -> LogSet {
        let a = vec![
            line(10, &event("2027-01-01T00:00:01Z", "alpha")),
            line(20, &event("2027-01-01T00:00:03Z", "beta")),
        ];
        let b = vec![
            line(5, &event("2027-01-01T00:00:02Z", "gamma")),
            line(6, &event("2027-01-01T00:00:04Z", "delta")),
        ];
        let a = LinesHistory::new(Box::new(move || Ok(a.clone())));
        let b = LinesHistory::new(Box::new(move || Ok(b.clone())));
        LogSet::new(vec![Box::new(a), Box::new(b)], Limits::default())
    }

    fn search(set: &mut LogSet, word: &str, from: SearchFrom) -> Option<u64> {
        let needle = Needle::new(word);
        let mut from = set.search_from(from)?;
        loop {
            match set.search(&needle, from).expect("search") {
                SearchStep::Found(at) => return Some(at),
                SearchStep::Continue(f) => from = f,
                SearchStep::NotFound => return None,
            }
        }
    }

    #[test]
    fn a_search_from_the_end_of_the_first_log_finds_a_word_only_in_the_second() {
        let mut set = two();
        set.start().expect("start");
        let found = search(&mut set, "gamma", SearchFrom::After(pack_mark(0, 20)));
        assert_eq!(found, Some(pack_mark(1, 5)));
        let back = search(&mut set, "alpha", SearchFrom::Before(u64::MAX));
        assert_eq!(back, Some(pack_mark(0, 10)));
    }

    #[test]
    fn a_page_over_the_edge_of_a_log_is_filled_from_the_next_and_counts_every_match() {
        let mut set = two();
        set.start().expect("start");
        while set.indexing() {
            set.step().expect("step");
        }
        let page = set.page(Anchor::Start, 0, 10).expect("page");
        let marks: Vec<u64> = page.lines.iter().map(|l| l.offset).collect();
        assert_eq!(marks, [10, 20, pack_mark(1, 5), pack_mark(1, 6)]);
        assert!(page.at_start && page.at_end);
        let mut found = Vec::new();
        let mut at = ScanAt::default();
        loop {
            let step = set
                .count_matches(&Needle::new("claim_acquired"), &at, &mut found)
                .expect("count");
            at = step.next;
            if step.at_end {
                break;
            }
        }
        assert_eq!(found.len(), 4);
    }
}
