//! A [`History`] over lines read whole at each look: what a small store
//! (or a test's) keeps its log in, so that it needs no paged history of
//! its own. Each line's mark is its [`Line::offset`], increasing along the
//! log; every read goes over all of it, which is the point of a small log.

use super::backward::{Needle, SearchFrom, SearchStep};
use super::claim_event::parse_ts;
use super::history::{Anchor, History, HistoryError, Nouns, Page, ScanAt, ScanStep, Start, Step};
use super::stream::Probe;
use super::tail::Line;
use super::tenure::{Limits, TenureIndex};

/// Every line of the log, oldest first, as it stands now.
pub type ReadLines = Box<dyn FnMut() -> Result<Vec<Line>, HistoryError> + Send>;

pub struct LinesHistory {
    read: ReadLines,
    limits: Limits,
    /// The lines counted by the pass, once it was made.
    counted: Option<u64>,
}

impl LinesHistory {
    pub fn new(read: ReadLines) -> LinesHistory {
        LinesHistory {
            read,
            limits: Limits::default(),
            counted: None,
        }
    }

    fn tenures(&self, lines: &[Line]) -> TenureIndex {
        let mut t = TenureIndex::new(self.limits);
        for l in lines {
            t.apply_bytes_at(l.text.as_bytes());
        }
        t
    }
}

/// Where the line marked `mark` is, or the first after it.
fn index_of(lines: &[Line], mark: u64) -> usize {
    lines.partition_point(|l| l.offset < mark)
}

fn matches(needle: &Needle, line: &Line) -> bool {
    !needle.ranges(&line.text).is_empty()
}

fn ts_of(line: &Line) -> Option<i64> {
    let probe = Probe::of_slice(line.text.as_bytes()).ok()?;
    parse_ts(&probe.ts?)
}

impl History for LinesHistory {
    fn nouns(&self) -> Nouns {
        Nouns::STORE
    }

    fn start(&mut self) -> Result<Start, HistoryError> {
        self.counted = None;
        let lines = (self.read)()?;
        if lines.is_empty() {
            return Ok(Start::Nothing);
        }
        Ok(Start::Tail(Box::new(self.tenures(&lines))))
    }

    fn indexing(&self) -> bool {
        self.counted.is_none()
    }

    fn step(&mut self) -> Result<Step, HistoryError> {
        let lines = (self.read)()?;
        let n = lines.len() as u64;
        let end = lines.last().map_or(0, |l| l.offset + 1);
        match self.counted.replace(n) {
            None => Ok(Step::Indexed {
                tenures: Box::new(self.tenures(&lines)),
                lines: n,
                end,
                file_id: None,
            }),
            Some(before) if before != n => Ok(Step::Counted { lines: n, end }),
            Some(_) => Ok(Step::Idle),
        }
    }

    fn page(&mut self, anchor: Anchor, before: usize, after: usize) -> Result<Page, HistoryError> {
        let lines = (self.read)()?;
        let at = match anchor {
            Anchor::Start => 0,
            Anchor::End => lines.len(),
            Anchor::At(mark) => index_of(&lines, mark),
            Anchor::Time(t) => lines
                .iter()
                .position(|l| ts_of(l).is_some_and(|ts| ts >= t))
                .unwrap_or(lines.len()),
        };
        let from = at.saturating_sub(before);
        let to = at.saturating_add(after).min(lines.len());
        Ok(Page {
            anchor: at - from,
            first_line_no: Some(from as u64),
            at_start: from == 0,
            at_end: to == lines.len(),
            lines: lines[from..to].to_vec(),
            file_id: None,
        })
    }

    fn search_from(&mut self, from: SearchFrom) -> Option<SearchFrom> {
        let empty = (self.read)().map_or(true, |l| l.is_empty());
        (!empty).then_some(from)
    }

    fn search(&mut self, needle: &Needle, from: SearchFrom) -> Result<SearchStep, HistoryError> {
        let lines = (self.read)()?;
        let found = match from {
            SearchFrom::Before(mark) => lines[..index_of(&lines, mark)]
                .iter()
                .rev()
                .find(|l| matches(needle, l)),
            SearchFrom::After(mark) => lines[index_of(&lines, mark.saturating_add(1))..]
                .iter()
                .find(|l| matches(needle, l)),
            SearchFrom::ForwardAt(mark) => lines[index_of(&lines, mark)..]
                .iter()
                .find(|l| matches(needle, l)),
            SearchFrom::Start => lines.iter().find(|l| matches(needle, l)),
        };
        Ok(found.map_or(SearchStep::NotFound, |l| SearchStep::Found(l.offset)))
    }

    fn count_matches(
        &mut self,
        needle: &Needle,
        at: &ScanAt,
        found: &mut Vec<u64>,
    ) -> Result<ScanStep, HistoryError> {
        let lines = (self.read)()?;
        let from = at.0.as_slice().try_into().map_or(0, u64::from_be_bytes);
        let rest = &lines[index_of(&lines, from)..];
        found.extend(rest.iter().filter(|l| matches(needle, l)).map(|l| l.offset));
        let next = lines.last().map_or(from, |l| l.offset + 1).max(from);
        Ok(ScanStep {
            next: ScanAt(next.to_be_bytes().to_vec()),
            at_end: true,
        })
    }

    fn window(&mut self, from: i64, to: i64) -> Result<TenureIndex, HistoryError> {
        let lines = (self.read)()?;
        // Every tenure the log tells; the caller keeps those of the window.
        let _ = (from, to);
        Ok(self.tenures(&lines))
    }
}
