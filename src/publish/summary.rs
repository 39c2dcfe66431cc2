//! Each root's summary (`store::sink::RootSummary`): counted from the rows
//! the root publishes, written only when it changed and at most once a
//! second, so a burst of changes is one write and an idle root none.

use super::Publisher;
use crate::claims::{ClaimState, Status};
use crate::store::sink::RootSummary;
use crate::store::StoreError;
use std::time::{Duration, Instant};

/// At most one summary write a second per root.
pub(super) const SUMMARY_EVERY: Duration = Duration::from_secs(1);

/// A root's summary as last written, and whether it may differ now.
#[derive(Debug, Default)]
pub(super) struct Said {
    pub written: Option<RootSummary>,
    pub at: Option<Instant>,
    /// Something it counts was published since it was written.
    pub due: bool,
}

impl Publisher {
    /// Write root `i`'s summary if it is due, changed, and the last write
    /// is a second old.
    pub(super) fn publish_summary(&mut self, i: usize, now: i64) -> Result<(), StoreError> {
        let r = &mut self.roots[i];
        if !r.said.due || r.said.at.is_some_and(|t| t.elapsed() < SUMMARY_EVERY) {
            return Ok(());
        }
        let tally = r.driver.tally();
        let hazards: Vec<String> = tally
            .hazards
            .iter()
            .map(|h| h.kind.name().to_string())
            .collect();
        let mut next = match &r.unreadable {
            // Its claims are unknown: what was published stays, and so do
            // its counts.
            Some(why) => RootSummary {
                unreadable: Some(why.clone()),
                ..r.said.written.clone().unwrap_or_default()
            },
            None => summarize(r.driver.rows(), &hazards),
        };
        r.said.due = false;
        if r.said.written.as_ref().is_some_and(|w| w.same_as(&next)) {
            return Ok(());
        }
        next.last_change_ms = now;
        let id = r.info.id.clone();
        self.sink.summary(&id, &next)?;
        let r = &mut self.roots[i];
        r.said.written = Some(next);
        r.said.at = Some(Instant::now());
        Ok(())
    }
}

/// The summary of these rows (the free ones are not published) and
/// hazard kinds.
pub(super) fn summarize<'a>(
    rows: impl Iterator<Item = &'a Status>,
    hazards: &[String],
) -> RootSummary {
    let mut s = RootSummary::default();
    for row in rows.filter(|r| r.state != ClaimState::Free) {
        let state = row.state.as_str().to_string();
        if let Some(rec) = &row.record {
            let oldest = s
                .oldest_acquired_ms
                .entry(state.clone())
                .or_insert(i64::MAX);
            *oldest = (*oldest).min(rec.acquired_at);
        }
        *s.counts.entry(state).or_insert(0) += 1;
    }
    for kind in hazards {
        *s.hazards.entry(kind.clone()).or_insert(0) += 1;
    }
    s.hazards_total = hazards.len();
    s
}
