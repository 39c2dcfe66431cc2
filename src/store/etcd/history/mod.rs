//! The history of an events prefix on etcd: the store's own
//! `PREFIX/events/`, or the copy of a root's log a publishing host mirrors
//! under `PREFIX/hosts/<machine>/<root-id>/events/`. Each value is one
//! events.jsonl line.
//!
//! Entries are in key order (event ids sort by time; a mirrored log's keys
//! by the line's offset), read in ranges of at most [`PAGE`] keys that go on
//! from the last key read, so the prefix is never in memory at once. A
//! forward scan's ranges end about a page ahead, where a block of keys
//! ends (`reach.rs`), not at the prefix's end: etcd walks its index over the
//! whole of a range, whatever its limit. An
//! entry's mark is the revision it was written at: unique, never reused,
//! higher for every later write, and what the change feed's lines carry.
//!
//! The pass over the whole prefix reads it at one revision (a consistent
//! snapshot, whatever is written or expires meanwhile), counts it, rebuilds
//! the tenures and keeps a checkpoint key every [`CHECKPOINT_EVERY`]
//! entries with its time: that is what makes a page or a search before any
//! key a bounded range read, and a time a short scan. Before the pass is
//! over, a page before a key is one range sorted backwards (etcd reads the
//! range whole for that, once), and a search backwards scans forwards up to
//! its start.

use super::layout::{key_after as after, range_end};
use super::Core;
use crate::events::asof::{Around, LogEnds};
use crate::events::backward::{Needle, SearchFrom, SearchStep};
use crate::events::claim_event::parse_ts;
use crate::events::history::{
    Anchor, History, HistoryError, Nouns, Page, ScanAt, ScanStep, Start, Step,
};
use crate::events::index::Progress;
use crate::events::seek::{FirstAfter, CLOCK_SLACK_MS};
use crate::events::stream::Probe;
use crate::events::tail::Line;
use crate::events::tenure::{Limits, TenureIndex};
use crate::store::StoreError;
use etcd_client::{GetOptions, GetResponse, KeyValue, SortOrder, SortTarget};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

mod reach;
mod search;

use reach::Reach;

/// Keys per range request: as for `list`, far below gRPC's 4 MiB limit for
/// lines of the usual size.
pub const PAGE: usize = 1000;
/// One checkpoint per this many entries: 100 000 events keep 196.
pub const CHECKPOINT_EVERY: u64 = 512;
/// Events read for the timeline's first screen.
const TAIL_EVENTS: i64 = 4096;
/// Entries one backward search step reads.
const BACK_CHUNK: usize = 2048;
/// Marks remembered (revision → key); past it they are forgotten and found
/// again with a filtered range.
const MARKS_MAX: usize = 20_000;
/// A progress report every this many pages of the pass.
const PROGRESS_EVERY_PAGES: u64 = 8;
/// A window's re-read starts this long before it, as in a file.
const WINDOW_LOOKBACK_MS: i64 = 3_600_000;
/// Most events one window re-read applies.
const WINDOW_MAX_EVENTS: u64 = 500_000;
/// A log of up to this many events is read whole for a window (the
/// file log's `WHOLE_LOG_BYTES`, in events of a few hundred bytes).
const WHOLE_LOG_EVENTS: u64 = 16_000;

/// A key the pass passed, and the time there.
#[derive(Debug, Clone)]
struct Checkpoint {
    key: Vec<u8>,
    /// The time of its claim event, else of the last one before it.
    time: Option<i64>,
}

/// The pass over the whole prefix, a page per step.
struct Pass {
    /// The revision it reads at (0 until the first page names it).
    at: i64,
    next: Vec<u8>,
    lines: u64,
    /// The count when it began, for progress.
    total: u64,
    pages: u64,
    tenures: TenureIndex,
    checkpoints: Vec<Checkpoint>,
    last_time: Option<i64>,
    reach: Reach,
}

/// A backward search with no checkpoints yet: a forward scan up to its
/// start, remembering the last match.
struct BackScan {
    needle: String,
    before: Vec<u8>,
    next: Vec<u8>,
    best: Option<u64>,
    reach: Reach,
}

/// One events prefix's history.
pub struct EtcdHistory {
    core: Arc<Core>,
    prefix: Vec<u8>,
    end: Vec<u8>,
    limits: Limits,
    /// Marks handed out, and the first and last key each names (one
    /// transaction can write several events at one revision; claimtop
    /// writes one, another writer may batch).
    marks: HashMap<u64, (Vec<u8>, Vec<u8>)>,
    pass: Option<Pass>,
    /// The last pass's checkpoints.
    checkpoints: Vec<Checkpoint>,
    /// The count last reported.
    counted: Option<u64>,
    back_scan: Option<BackScan>,
    /// The guesses of forward searches and of counts, each kept from step
    /// to step: a step starts where the last one stopped.
    ahead: Reach,
    counting: Reach,
    /// The last start succeeded; until one does, every step tries again
    /// (the store was away when the views opened).
    started: bool,
}

fn store_error(e: StoreError) -> HistoryError {
    HistoryError::Store(e.to_string())
}

/// Whether etcd refused a read because its revision was compacted away.
fn compacted(e: &StoreError) -> bool {
    matches!(e, StoreError::Backend { detail, .. } if detail.contains("compacted"))
}

fn rev_of(kv: &KeyValue) -> u64 {
    u64::try_from(kv.mod_revision()).unwrap_or(0)
}

/// The `ts` of a stored line, if it has a readable one.
fn time_of(kv: &KeyValue) -> Option<i64> {
    Probe::of_slice(kv.value())
        .ok()
        .and_then(|p| p.ts)
        .and_then(|ts| parse_ts(&ts))
}

impl EtcdHistory {
    pub(super) fn new(core: Arc<Core>, prefix: String) -> EtcdHistory {
        EtcdHistory {
            end: range_end(&prefix),
            prefix: prefix.into_bytes(),
            core,
            limits: Limits::default(),
            marks: HashMap::new(),
            pass: None,
            checkpoints: Vec::new(),
            counted: None,
            back_scan: None,
            ahead: Reach::default(),
            counting: Reach::default(),
            started: false,
        }
    }

    fn get(&self, from: &[u8], opts: GetOptions) -> Result<GetResponse, StoreError> {
        self.core.conn.call(|mut c| {
            let (from, opts) = (from.to_vec(), opts.clone());
            async move { c.get(from, Some(opts)).await }
        })
    }

    /// Up to `limit` keys of `[from, to)` in key order, at revision `rev`
    /// (0: the latest).
    fn range(
        &self,
        from: &[u8],
        to: &[u8],
        limit: usize,
        rev: i64,
    ) -> Result<GetResponse, StoreError> {
        let mut opts = GetOptions::new()
            .with_range(to.to_vec())
            .with_limit(limit as i64);
        if rev > 0 {
            opts = opts.with_revision(rev);
        }
        self.get(from, opts)
    }

    /// How many keys `[from, to)` holds, and the revision that is true at.
    fn count(&self, from: &[u8], to: &[u8]) -> Result<(u64, i64), HistoryError> {
        let opts = GetOptions::new().with_range(to.to_vec()).with_count_only();
        let resp = self.get(from, opts).map_err(store_error)?;
        let rev = resp.header().map_or(0, |h| h.revision());
        Ok((u64::try_from(resp.count()).unwrap_or(0), rev))
    }

    /// The line of `kv`, its mark remembered.
    fn line(&mut self, kv: &KeyValue) -> Line {
        let rev = rev_of(kv);
        if self.marks.len() >= MARKS_MAX {
            self.marks.clear();
        }
        let key = kv.key();
        let span = self
            .marks
            .entry(rev)
            .or_insert_with(|| (key.to_vec(), key.to_vec()));
        if key < span.0.as_slice() {
            span.0 = key.to_vec();
        }
        if key > span.1.as_slice() {
            span.1 = key.to_vec();
        }
        Line::of_bytes(kv.value(), rev)
    }

    /// The key a mark names, if it is still there: of several written at
    /// its revision, the first (`last`: the last), so that a search going
    /// on from a mark always moves past the entries it has read.
    fn key_of(&mut self, mark: u64, last: bool) -> Result<Option<Vec<u8>>, HistoryError> {
        let pick = |span: &(Vec<u8>, Vec<u8>)| if last { span.1.clone() } else { span.0.clone() };
        if let Some(span) = self.marks.get(&mark) {
            return Ok(Some(pick(span)));
        }
        let Ok(rev) = i64::try_from(mark) else {
            return Ok(None);
        };
        // Not handed out lately: etcd filters the prefix by revision (it
        // reads the range whole for it, so this is the rare path).
        let opts = GetOptions::new()
            .with_range(self.end.clone())
            .with_min_mod_revision(rev)
            .with_max_mod_revision(rev)
            .with_keys_only();
        let resp = self.get(&self.prefix, opts).map_err(store_error)?;
        let (Some(first), Some(end)) = (resp.kvs().first(), resp.kvs().last()) else {
            return Ok(None);
        };
        let span = (first.key().to_vec(), end.key().to_vec());
        let key = pick(&span);
        self.marks.insert(mark, span);
        Ok(Some(key))
    }

    /// Up to `n` entries from `from` (included), in key order.
    fn forward(&self, from: &[u8], n: usize) -> Result<Vec<KeyValue>, HistoryError> {
        let mut out: Vec<KeyValue> = Vec::new();
        let mut at = from.to_vec();
        while out.len() < n {
            let mut resp = self
                .range(&at, &self.end, (n - out.len()).min(PAGE), 0)
                .map_err(store_error)?;
            let more = resp.more();
            let kvs = resp.take_kvs();
            let Some(last) = kvs.last() else { break };
            at = after(last.key());
            out.extend(kvs);
            if !more {
                break;
            }
        }
        Ok(out)
    }

    /// A key from which `[key, before)` holds at least `n` entries (or the
    /// prefix's start), by the last pass's checkpoints; None without them,
    /// or when `before` lies so far past them that the range would be big.
    fn lower_bound(&self, before: &[u8], n: usize) -> Result<Option<Vec<u8>>, HistoryError> {
        if self.checkpoints.is_empty() {
            return Ok(None);
        }
        let i = self
            .checkpoints
            .partition_point(|c| c.key.as_slice() < before);
        // The checkpoint before `before` may have none after it; each one
        // further back adds CHECKPOINT_EVERY.
        let back = (n as u64).div_ceil(CHECKPOINT_EVERY) + 1;
        let start = match (i as u64).checked_sub(back) {
            Some(j) => self.checkpoints[j as usize].key.clone(),
            None => self.prefix.clone(),
        };
        // Entries written since the pass may lie between: read the range
        // only if it is about the size the checkpoints promise.
        let (held, _) = self.count(&start, before)?;
        let cap = n as u64 + (back + 2) * CHECKPOINT_EVERY;
        Ok((held <= cap).then_some(start))
    }

    /// Up to `n` entries before `before` (excluded), in key order.
    fn backward(&self, before: &[u8], n: usize) -> Result<Vec<KeyValue>, HistoryError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        if let Some(start) = self.lower_bound(before, n)? {
            let mut kept: VecDeque<KeyValue> = VecDeque::with_capacity(n + 1);
            let mut at = start;
            loop {
                let mut resp = self.range(&at, before, PAGE, 0).map_err(store_error)?;
                let more = resp.more();
                let kvs = resp.take_kvs();
                let Some(last) = kvs.last() else { break };
                at = after(last.key());
                for kv in kvs {
                    if kept.len() == n {
                        kept.pop_front();
                    }
                    kept.push_back(kv);
                }
                if !more {
                    break;
                }
            }
            return Ok(kept.into());
        }
        let opts = GetOptions::new()
            .with_range(before.to_vec())
            .with_sort(SortTarget::Key, SortOrder::Descend)
            .with_limit(n as i64);
        let mut resp = self.get(&self.prefix, opts).map_err(store_error)?;
        let mut kvs = resp.take_kvs();
        kvs.reverse();
        Ok(kvs)
    }

    /// The first entry written at or after `t`: scanned forward from the
    /// last checkpoint safely before it (from the start without them).
    fn key_at_time(&self, t: i64) -> Result<Option<Vec<u8>>, HistoryError> {
        let target = t.saturating_sub(CLOCK_SLACK_MS);
        let mut at = self
            .checkpoints
            .iter()
            .rev()
            .find(|c| c.time.is_some_and(|x| x < target))
            .map_or_else(|| self.prefix.clone(), |c| c.key.clone());
        // One event stamped next century must not start (or end) a
        // window before the events around it say it begins.
        let mut first = FirstAfter::new(t);
        loop {
            let mut resp = self.range(&at, &self.end, PAGE, 0).map_err(store_error)?;
            let more = resp.more();
            let kvs = resp.take_kvs();
            for kv in &kvs {
                let Some(ts) = time_of(kv) else { continue };
                if let Some(key) = first.push(kv.key().to_vec(), ts) {
                    return Ok(Some(key));
                }
            }
            match kvs.last() {
                Some(last) if more => at = after(last.key()),
                _ => return Ok(first.finish()),
            }
        }
    }

    /// The first number a page's first entry has: the keys before it.
    fn number_of(&self, key: &[u8]) -> Result<u64, HistoryError> {
        Ok(self.count(&self.prefix, key)?.0)
    }

    /// Every count since the pass: a count-only range, said when it moved.
    fn recount(&mut self) -> Result<Step, HistoryError> {
        let (n, rev) = self.count(&self.prefix, &self.end)?;
        if self.counted == Some(n) {
            return Ok(Step::Idle);
        }
        self.counted = Some(n);
        Ok(Step::Counted {
            lines: n,
            end: u64::try_from(rev).unwrap_or(0) + 1,
        })
    }
}

impl History for EtcdHistory {
    fn nouns(&self) -> Nouns {
        Nouns::STORE
    }

    fn start(&mut self) -> Result<Start, HistoryError> {
        self.pass = None;
        self.checkpoints.clear();
        self.counted = None;
        self.marks.clear();
        self.back_scan = None;
        self.ahead = Reach::default();
        self.counting = Reach::default();
        self.started = false;
        let (total, _) = self.count(&self.prefix, &self.end)?;
        if total == 0 {
            self.counted = Some(0);
            self.started = true;
            return Ok(Start::Nothing);
        }
        let opts = GetOptions::new()
            .with_range(self.end.clone())
            .with_sort(SortTarget::Key, SortOrder::Descend)
            .with_limit(TAIL_EVENTS);
        let resp = self.get(&self.prefix, opts).map_err(store_error)?;
        let mut tail = TenureIndex::new(self.limits);
        for kv in resp.kvs().iter().rev() {
            tail.apply_bytes_at(kv.value());
        }
        self.pass = Some(Pass {
            at: 0,
            next: self.prefix.clone(),
            lines: 0,
            total,
            pages: 0,
            tenures: TenureIndex::new(self.limits),
            checkpoints: Vec::new(),
            last_time: None,
            reach: Reach::default(),
        });
        self.started = true;
        Ok(Start::Tail(Box::new(tail)))
    }

    fn indexing(&self) -> bool {
        self.pass.is_some()
    }

    fn step(&mut self) -> Result<Step, HistoryError> {
        if !self.started {
            return Ok(Step::Restart);
        }
        let Some(pass) = &mut self.pass else {
            return self.recount();
        };
        let (next, rev) = (pass.next.clone(), pass.at);
        let mut reach = std::mem::take(&mut pass.reach);
        let page = match self.scan_page(&mut reach, &next, &self.end, rev) {
            Ok(p) => p,
            // The snapshot the pass reads was compacted away under it.
            Err(e) if compacted(&e) => {
                self.pass = None;
                return Ok(Step::Restart);
            }
            Err(e) => return Err(store_error(e)),
        };
        let Some(pass) = &mut self.pass else {
            return Ok(Step::Idle);
        };
        pass.reach = reach;
        if pass.at == 0 {
            pass.at = page.rev;
        }
        for kv in &page.kvs {
            let at = pass.tenures.apply_bytes_at(kv.value());
            if pass.lines % CHECKPOINT_EVERY == 0 {
                pass.checkpoints.push(Checkpoint {
                    key: kv.key().to_vec(),
                    time: at.or(pass.last_time),
                });
            }
            if at.is_some() {
                pass.last_time = at;
            }
            pass.lines += 1;
        }
        match page.next {
            Some(next) => {
                pass.next = next;
                pass.pages += 1;
                if pass.pages.is_multiple_of(PROGRESS_EVERY_PAGES) {
                    return Ok(Step::Progress(Progress {
                        scanned: pass.lines,
                        len: pass.total.max(pass.lines),
                        lines: pass.lines,
                        done: false,
                    }));
                }
                Ok(Step::Working)
            }
            None => {
                let Some(pass) = self.pass.take() else {
                    return Ok(Step::Idle);
                };
                self.checkpoints = pass.checkpoints;
                self.counted = Some(pass.lines);
                Ok(Step::Indexed {
                    tenures: Box::new(pass.tenures),
                    lines: pass.lines,
                    end: u64::try_from(pass.at).unwrap_or(0) + 1,
                    file_id: None,
                })
            }
        }
    }

    fn page(&mut self, anchor: Anchor, before: usize, after: usize) -> Result<Page, HistoryError> {
        let key = match anchor {
            Anchor::At(m) => self.key_of(m, false)?,
            Anchor::Time(t) => self.key_at_time(t)?,
            Anchor::Start | Anchor::End => None,
        };
        let (kvs, anchor_ix, at_start, at_end) = match (anchor, key) {
            (Anchor::Start, _) => {
                let kvs = self.forward(&self.prefix, after)?;
                let short = kvs.len() < after;
                (kvs, 0, true, short)
            }
            (Anchor::At(_) | Anchor::Time(_), Some(k)) => {
                let mut kvs = self.backward(&k, before)?;
                let n = kvs.len();
                let from = self.forward(&k, after)?;
                let short = from.len() < after;
                kvs.extend(from);
                (kvs, n, n < before, short)
            }
            // The end, or a mark or time past what is there.
            _ => {
                let kvs = self.backward(&self.end, before)?;
                let n = kvs.len();
                (kvs, n, n < before, true)
            }
        };
        let first_line_no = match kvs.first() {
            Some(kv) => Some(self.number_of(kv.key())?),
            None => None,
        };
        let lines = kvs.iter().map(|kv| self.line(kv)).collect();
        Ok(Page {
            lines,
            anchor: anchor_ix,
            first_line_no,
            at_start: at_start || first_line_no == Some(0),
            at_end,
            file_id: None,
        })
    }

    fn search_from(&mut self, from: SearchFrom) -> Option<SearchFrom> {
        Some(from)
    }

    fn search(&mut self, needle: &Needle, from: SearchFrom) -> Result<SearchStep, HistoryError> {
        match from {
            SearchFrom::After(m) => match self.key_of(m, true)? {
                Some(k) => self.search_forward(needle, &after(&k)),
                None => Ok(SearchStep::NotFound),
            },
            SearchFrom::ForwardAt(m) => match self.key_of(m, false)? {
                Some(k) => self.search_forward(needle, &k),
                None => Ok(SearchStep::NotFound),
            },
            SearchFrom::Start => {
                let start = self.prefix.clone();
                self.search_forward(needle, &start)
            }
            SearchFrom::Before(u64::MAX) => {
                let end = self.end.clone();
                self.search_backward(needle, end, u64::MAX)
            }
            SearchFrom::Before(m) => match self.key_of(m, false)? {
                Some(k) => self.search_backward(needle, k, m),
                None => Ok(SearchStep::NotFound),
            },
        }
    }

    fn count_matches(
        &mut self,
        needle: &Needle,
        at: &ScanAt,
        found: &mut Vec<u64>,
    ) -> Result<ScanStep, HistoryError> {
        self.count_step(needle, at, found)
    }

    fn window(&mut self, from: i64, to: i64) -> Result<TenureIndex, HistoryError> {
        Ok(self.window_reach(from, to)?.tenures)
    }

    /// Windows ever narrower, as by default, each knowing whether it began
    /// at the first event and went on to the last: so "as of" can say
    /// when the window cannot tell.
    fn around(&mut self, at: i64) -> Result<Around, HistoryError> {
        crate::events::asof::read_around(at, |from, to| self.window_reach(from, to))
    }
}

impl EtcdHistory {
    /// The tenures of `[from, to)` (epoch ms), and how much of the log the
    /// read covered.
    fn window_reach(&mut self, from: i64, to: i64) -> Result<Around, HistoryError> {
        let ix = TenureIndex::new(self.limits);
        let want = from.saturating_sub(WINDOW_LOOKBACK_MS);
        let (start, stop) = if self.count(&self.prefix, &self.end)?.0 <= WHOLE_LOG_EVENTS {
            // So few events are read whole: every tenure's start and end
            // is in the read, and the answer is the one the whole log gives.
            (self.prefix.clone(), self.end.clone())
        } else if self.checkpoints.is_empty() {
            // No pass has run (`list --as-of` asks at once): the window's
            // ends found by time, reading forward from the first event.
            let Some(start) = self.key_at_time(want)? else {
                // Nothing from then on: every event is before the window.
                return Ok(Around {
                    tenures: ix,
                    ends: LogEnds {
                        from_first: false,
                        to_last: true,
                    },
                });
            };
            let stop = self
                .key_at_time(to.saturating_add(CLOCK_SLACK_MS))?
                .unwrap_or_else(|| self.end.clone());
            (start, stop)
        } else {
            let start = self
                .checkpoints
                .iter()
                .rev()
                .find(|c| c.time.is_some_and(|x| x < want))
                .map_or_else(|| self.prefix.clone(), |c| c.key.clone());
            // Past the first checkpoint after the window, every event is
            // after it (give or take clock skew).
            let stop = self
                .checkpoints
                .iter()
                .find(|c| c.time.is_some_and(|x| x > to))
                .map_or_else(|| self.end.clone(), |c| c.key.clone());
            (start, stop)
        };
        let from_first = self.count(&self.prefix, &start)?.0 == 0;
        let to_end = stop == self.end;
        let (tenures, whole) = self.window_between(ix, start, stop)?;
        Ok(Around {
            tenures,
            ends: LogEnds {
                from_first,
                to_last: to_end && whole,
            },
        })
    }

    /// The tenures of the events in `[start, stop)` (keys), into `ix`, at
    /// most [`WINDOW_MAX_EVENTS`] of them; whether that was all of them.
    fn window_between(
        &self,
        mut ix: TenureIndex,
        start: Vec<u8>,
        stop: Vec<u8>,
    ) -> Result<(TenureIndex, bool), HistoryError> {
        let mut at = start;
        let mut read = 0u64;
        loop {
            if read >= WINDOW_MAX_EVENTS {
                return Ok((ix, false));
            }
            let mut resp = self.range(&at, &stop, PAGE, 0).map_err(store_error)?;
            let more = resp.more();
            let kvs = resp.take_kvs();
            for kv in &kvs {
                ix.apply_bytes_at(kv.value());
            }
            read += kvs.len() as u64;
            match kvs.last() {
                Some(last) if more => at = after(last.key()),
                _ => return Ok((ix, true)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_after_a_key_is_the_next_one_a_range_can_start_at() {
        assert_eq!(after(b"/p/events/1"), b"/p/events/1\0".to_vec());
        assert!(after(b"/p/events/1").as_slice() > b"/p/events/1".as_slice());
        assert!(after(b"/p/events/1").as_slice() < b"/p/events/10".as_slice());
    }
}
