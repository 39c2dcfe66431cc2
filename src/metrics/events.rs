//! Counting events by type, incrementally: the log is read once, then only
//! what was appended since, through the same follower `events --follow`
//! uses (partial lines wait, truncation and rotation are noticed).

use crate::events::follow::Follower;
use crate::events::stream::{self, Probe};
use std::path::PathBuf;

/// The types the protocol writes. Anything else is counted as `other`, so a
/// log full of made-up types cannot grow the label set without bound.
pub use crate::events::kind::EVENT_TYPES;

/// Events seen so far in one log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventCounts {
    known: [u64; EVENT_TYPES.len()],
    pub other: u64,
    pub unparseable: u64,
}

impl EventCounts {
    pub fn add(&mut self, kind: Option<&str>) {
        match kind.and_then(|k| EVENT_TYPES.iter().position(|t| *t == k)) {
            Some(i) => self.known[i] += 1,
            None => self.other += 1,
        }
    }

    /// Every type (all known ones, at 0 too) and `other`.
    pub fn by_type(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        EVENT_TYPES
            .iter()
            .copied()
            .zip(self.known.iter().copied())
            .chain(std::iter::once(("other", self.other)))
    }
}

/// One log's follower and its running counts. Counts only go up: lines of a
/// truncated or replaced log are new events and are added, never
/// subtracted, as a Prometheus counter must.
pub struct EventCounter {
    follower: Follower,
    counts: EventCounts,
    /// The last read failure, reported once rather than every scrape.
    pub last_error: Option<String>,
}

impl EventCounter {
    /// Count the log at `path` from its start (a missing log counts from
    /// its start once it appears).
    pub fn new(path: impl Into<PathBuf>) -> EventCounter {
        EventCounter {
            follower: Follower::waiting_for(path),
            counts: EventCounts::default(),
            last_error: None,
        }
    }

    /// Read whatever was appended since the last call (all of it: a poll
    /// hands out at most [`crate::events::tail::MAX_POLL_BYTES`] at a time).
    pub fn catch_up(&mut self) -> &EventCounts {
        loop {
            let poll = match self.follower.poll() {
                Ok(p) => {
                    self.last_error = None;
                    p
                }
                Err(e) => {
                    self.last_error = Some(e.to_string());
                    break;
                }
            };
            for line in &poll.lines {
                // A line cut at the follower's cap is probed whole from the file.
                let probe = if line.truncated {
                    match self
                        .follower
                        .file()
                        .map(|f| stream::line_at(f, line.offset).map(|s| (f, s)))
                    {
                        Some(Ok((f, Some(span)))) => Probe::of_span(f, span),
                        _ => Err("changed while read".into()),
                    }
                } else {
                    Probe::of_slice(line.text.as_bytes())
                };
                match probe {
                    Ok(p) => self.counts.add(p.kind.as_deref()),
                    Err(_) => self.counts.unparseable += 1,
                }
            }
            if !poll.more {
                break;
            }
        }
        &self.counts
    }

    pub fn counts(&self) -> &EventCounts {
        &self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn appended_lines_are_counted_once_and_unknown_types_as_other() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut c = EventCounter::new(&path);
        assert_eq!(c.catch_up().by_type().map(|(_, n)| n).sum::<u64>(), 0);
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, r#"{{"type":"claim_acquired"}}"#).unwrap();
        writeln!(f, r#"{{"type":"made_up"}}"#).unwrap();
        writeln!(f, "garbage").unwrap();
        write!(f, r#"{{"type":"claim_released""#).unwrap();
        let got = c.catch_up().clone();
        assert_eq!(got.by_type().next(), Some(("claim_acquired", 1)));
        assert_eq!((got.other, got.unparseable), (1, 1));
        writeln!(f, "}}").unwrap();
        let got = c.catch_up().clone();
        let released = got.by_type().find(|(t, _)| *t == "claim_released");
        assert_eq!(
            released,
            Some(("claim_released", 1)),
            "the partial line, once whole"
        );
        assert_eq!(
            got.by_type().next(),
            Some(("claim_acquired", 1)),
            "not counted twice"
        );
    }

    #[test]
    fn a_truncated_log_adds_its_new_lines_to_the_counts() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(
            &path,
            "{\"type\":\"claim_acquired\"}\n{\"type\":\"claim_acquired\"}\n",
        )
        .unwrap();
        let mut c = EventCounter::new(&path);
        c.catch_up();
        std::fs::write(&path, "{\"type\":\"claim_acquired\"}\n").unwrap();
        assert_eq!(c.catch_up().by_type().next(), Some(("claim_acquired", 3)));
    }
}
