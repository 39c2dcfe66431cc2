//! A search through an events prefix, a few pages a step: forwards from a
//! key, backwards by the checkpoints of the last pass, or, before a pass
//! has any, forwards from the start up to where the search began.

use super::{after, store_error, BackScan, EtcdHistory, Reach, BACK_CHUNK};
use crate::events::backward::{Needle, SearchFrom, SearchStep};
use crate::events::history::{HistoryError, ScanAt, ScanStep};
use crate::events::tail::MAX_LINE_BYTES;
use etcd_client::KeyValue;

/// Pages one search step reads before the service looks at its requests.
const SEARCH_PAGES: usize = 4;

impl EtcdHistory {
    /// One forward search step from `from` (included).
    pub(super) fn search_forward(
        &mut self,
        needle: &Needle,
        from: &[u8],
    ) -> Result<SearchStep, HistoryError> {
        let mut reach = std::mem::take(&mut self.ahead);
        let step = self.search_ahead(&mut reach, needle, from);
        self.ahead = reach;
        step
    }

    fn search_ahead(
        &mut self,
        reach: &mut Reach,
        needle: &Needle,
        from: &[u8],
    ) -> Result<SearchStep, HistoryError> {
        let mut at = from.to_vec();
        let mut last_read = None;
        // Pages that held keys: a step always moves past one, so that it
        // can say where to go on by a mark (ranges the guesses left empty
        // cost a round trip each, and widen the next).
        let mut pages = 0;
        while pages < SEARCH_PAGES {
            let page = self.scan_page(reach, &at, &self.end, 0);
            let mut page = page.map_err(store_error)?;
            if let Some(kv) = page.kvs.iter().find(|kv| matches(needle, kv)) {
                return Ok(SearchStep::Found(self.line(kv).offset));
            }
            let Some(next) = page.next else {
                return Ok(SearchStep::NotFound);
            };
            at = next;
            if let Some(last) = page.kvs.pop() {
                last_read = Some(last);
                pages += 1;
            }
        }
        // Go on after the last entry read: its mark names where.
        match last_read {
            Some(kv) => Ok(SearchStep::Continue(SearchFrom::After(
                self.line(&kv).offset,
            ))),
            None => Ok(SearchStep::NotFound),
        }
    }

    /// One backward search step among the entries before `before`.
    pub(super) fn search_backward(
        &mut self,
        needle: &Needle,
        before: Vec<u8>,
        mark: u64,
    ) -> Result<SearchStep, HistoryError> {
        if self.checkpoints.is_empty() {
            return self.scan_up_to(needle, before, mark);
        }
        let chunk = self.backward(&before, BACK_CHUNK)?;
        if let Some(kv) = chunk.iter().rev().find(|kv| matches(needle, kv)) {
            return Ok(SearchStep::Found(self.line(kv).offset));
        }
        match chunk.first() {
            Some(first) if chunk.len() == BACK_CHUNK => Ok(SearchStep::Continue(
                SearchFrom::Before(self.line(first).offset),
            )),
            _ => Ok(SearchStep::NotFound),
        }
    }

    /// A backward search without checkpoints: forward from the start up
    /// to `before`, the last match kept; a step reads [`SEARCH_PAGES`].
    fn scan_up_to(
        &mut self,
        needle: &Needle,
        before: Vec<u8>,
        mark: u64,
    ) -> Result<SearchStep, HistoryError> {
        let resume = self
            .back_scan
            .take()
            .filter(|s| s.needle == needle.text() && s.before == before);
        let mut scan = resume.unwrap_or_else(|| BackScan {
            needle: needle.text().to_string(),
            next: self.prefix.clone(),
            before,
            best: None,
            reach: Reach::default(),
        });
        for _ in 0..SEARCH_PAGES {
            let page = self.scan_page(&mut scan.reach, &scan.next, &scan.before, 0);
            let page = page.map_err(store_error)?;
            if let Some(kv) = page.kvs.iter().rev().find(|kv| matches(needle, kv)) {
                scan.best = Some(self.line(kv).offset);
            }
            match page.next {
                Some(next) => scan.next = next,
                None => {
                    return Ok(match scan.best {
                        Some(m) => SearchStep::Found(m),
                        None => SearchStep::NotFound,
                    })
                }
            }
        }
        self.back_scan = Some(scan);
        Ok(SearchStep::Continue(SearchFrom::Before(mark)))
    }
}

impl EtcdHistory {
    /// One count step: [`SEARCH_PAGES`] pages from the key `at` names
    /// (the prefix's start when empty), at the latest revision: what the
    /// prefix keeps now, whatever was written since the pass.
    pub(super) fn count_step(
        &mut self,
        needle: &Needle,
        at: &ScanAt,
        found: &mut Vec<u64>,
    ) -> Result<ScanStep, HistoryError> {
        let mut next = if at.0.is_empty() {
            self.prefix.clone()
        } else {
            at.0.clone()
        };
        let mut reach = std::mem::take(&mut self.counting);
        let mut at_end = false;
        let mut pages = 0;
        let mut at = next.clone();
        while pages < SEARCH_PAGES {
            let page = self.scan_page(&mut reach, &at, &self.end, 0);
            let page = match page {
                Ok(p) => p,
                Err(e) => {
                    self.counting = reach;
                    return Err(store_error(e));
                }
            };
            found.extend(
                page.kvs
                    .iter()
                    .filter(|kv| matches(needle, kv))
                    .map(super::rev_of),
            );
            // Where a later step goes on is always just past a key read,
            // never a guessed range end: a guess may lie past keys that
            // are appended after this step, and they must be counted.
            if let Some(last) = page.kvs.last() {
                next = after(last.key());
                pages += 1;
            }
            match page.next {
                Some(n) => at = n,
                None => {
                    at_end = true;
                    break;
                }
            }
        }
        self.counting = reach;
        Ok(ScanStep {
            next: ScanAt(next),
            at_end,
        })
    }
}

fn matches(needle: &Needle, kv: &KeyValue) -> bool {
    let mut v = kv.value()[..kv.value().len().min(MAX_LINE_BYTES)].to_vec();
    needle.find_in(&mut v, false).is_some()
}
