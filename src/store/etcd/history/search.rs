//! A search through an events prefix, a few pages a step: forwards from a
//! key, backwards by the checkpoints of the last pass, or, before a pass
//! has any, forwards from the start up to where the search began.

use super::{after, store_error, BackScan, EtcdHistory, BACK_CHUNK, PAGE};
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
        let mut at = from.to_vec();
        let mut last_read = None;
        for _ in 0..SEARCH_PAGES {
            let mut resp = self.range(&at, &self.end, PAGE, 0).map_err(store_error)?;
            let more = resp.more();
            let mut kvs = resp.take_kvs();
            if let Some(kv) = kvs.iter().find(|kv| matches(needle, kv)) {
                return Ok(SearchStep::Found(self.line(kv).offset));
            }
            match kvs.pop() {
                Some(last) if more => {
                    at = after(last.key());
                    last_read = Some(last);
                }
                _ => return Ok(SearchStep::NotFound),
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
        });
        for _ in 0..SEARCH_PAGES {
            let mut resp = self
                .range(&scan.next, &scan.before, PAGE, 0)
                .map_err(store_error)?;
            let more = resp.more();
            let kvs = resp.take_kvs();
            if let Some(kv) = kvs.iter().rev().find(|kv| matches(needle, kv)) {
                scan.best = Some(self.line(kv).offset);
            }
            match kvs.last() {
                Some(last) if more => scan.next = after(last.key()),
                _ => {
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
        for _ in 0..SEARCH_PAGES {
            let mut resp = self.range(&next, &self.end, PAGE, 0).map_err(store_error)?;
            let more = resp.more();
            let kvs = resp.take_kvs();
            found.extend(
                kvs.iter()
                    .filter(|kv| matches(needle, kv))
                    .map(super::rev_of),
            );
            if let Some(last) = kvs.last() {
                next = after(last.key());
            }
            if !more {
                return Ok(ScanStep {
                    next: ScanAt(next),
                    at_end: true,
                });
            }
        }
        Ok(ScanStep {
            next: ScanAt(next),
            at_end: false,
        })
    }
}

fn matches(needle: &Needle, kv: &KeyValue) -> bool {
    let mut v = kv.value()[..kv.value().len().min(MAX_LINE_BYTES)].to_vec();
    needle.find_in(&mut v, false).is_some()
}
