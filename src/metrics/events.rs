//! Counting events by type, incrementally: each member's logs are read
//! once from their first line, then only what was appended since, through
//! the member's log feed (partial lines wait, truncation and rotation are
//! noticed by the feed).

use crate::events::history::Log;
use crate::events::stream::Probe;
use crate::events::tail::Line;
use crate::store::{Audit, Cursor, LogFeed, LogNews};

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

/// One member's logs followed from their first line, and where they were
/// read up to. Counts only go up: lines of a truncated or replaced log are
/// new events and are added, never subtracted, as a Prometheus counter
/// must.
pub struct EventCounter {
    feed: Option<Box<dyn LogFeed>>,
    /// Where a feed opened again resumes.
    at: Cursor,
    /// The last read failure, reported once rather than every scrape.
    pub last_error: Option<String>,
}

impl Default for EventCounter {
    fn default() -> EventCounter {
        EventCounter::new()
    }
}

impl EventCounter {
    /// Count from the logs' first line (a missing log counts from its
    /// first line once it appears).
    pub fn new() -> EventCounter {
        EventCounter {
            feed: None,
            at: Cursor::start(),
            last_error: None,
        }
    }

    /// Read whatever `audit`'s logs were appended since the last call, all
    /// of it, each line handed to `count` with its log.
    pub fn catch_up(&mut self, audit: &dyn Audit, count: &mut dyn FnMut(&Log, &Line)) {
        if self.feed.is_none() {
            match audit.follow(Some(&self.at)) {
                Ok(f) => self.feed = Some(f),
                Err(e) => {
                    self.last_error = Some(e.to_string());
                    return;
                }
            }
        }
        let Some(feed) = self.feed.as_mut() else {
            return;
        };
        loop {
            match feed.next(std::time::Duration::ZERO) {
                Ok(None) => return,
                Ok(Some(LogNews::Lines {
                    log, lines, next, ..
                })) => {
                    self.last_error = None;
                    lines.iter().for_each(|l| count(&log, l));
                    self.at = next;
                }
                Ok(Some(LogNews::Reset { .. })) => {}
                Ok(Some(LogNews::Trouble { why, .. })) => {
                    self.last_error = Some(why);
                    return;
                }
                Err(e) => {
                    // Opened again at the next scrape, from where it was.
                    self.last_error = Some(e.to_string());
                    self.feed = None;
                    return;
                }
            }
        }
    }
}

/// The type a log line says, `Err` when it does not parse. A line cut at
/// the cap says its type when it is a claim event (the feed read that
/// whole); any other cut line is counted unparseable.
fn kind_of(line: &Line) -> Result<Option<String>, ()> {
    if line.truncated {
        return match &line.claim {
            Some(c) => Ok(Some(c.kind.name().to_string())),
            None => Err(()),
        };
    }
    Probe::of_slice(line.text.as_bytes())
        .map(|p| p.kind)
        .map_err(|_| ())
}

impl EventCounts {
    /// Count one line as [`kind_of`] reads it.
    pub fn add_line(&mut self, line: &Line) {
        match kind_of(line) {
            Ok(kind) => self.add(kind.as_deref()),
            Err(()) => self.unparseable += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Root;
    use crate::store::file::FileStore;
    use std::io::Write;

    fn counted(c: &mut EventCounter, store: &FileStore, counts: &mut EventCounts) {
        c.catch_up(store, &mut |_, l| counts.add_line(l));
    }

    #[test]
    fn appended_lines_are_counted_once_and_unknown_types_as_other() {
        let dir = tempfile::TempDir::new().unwrap();
        let root = Root::with_events_here(dir.path());
        let store = FileStore::new(root.clone());
        let path = root.events_file();
        let mut c = EventCounter::new();
        let mut got = EventCounts::default();
        counted(&mut c, &store, &mut got);
        assert_eq!(got.by_type().map(|(_, n)| n).sum::<u64>(), 0);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, r#"{{"type":"claim_acquired"}}"#).unwrap();
        writeln!(f, r#"{{"type":"made_up"}}"#).unwrap();
        writeln!(f, "garbage").unwrap();
        write!(f, r#"{{"type":"claim_released""#).unwrap();
        counted(&mut c, &store, &mut got);
        assert_eq!(got.by_type().next(), Some(("claim_acquired", 1)));
        assert_eq!((got.other, got.unparseable), (1, 1));
        writeln!(f, "}}").unwrap();
        counted(&mut c, &store, &mut got);
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
        let root = Root::with_events_here(dir.path());
        let store = FileStore::new(root.clone());
        let path = root.events_file();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            "{\"type\":\"claim_acquired\"}\n{\"type\":\"claim_acquired\"}\n",
        )
        .unwrap();
        let mut c = EventCounter::new();
        let mut got = EventCounts::default();
        counted(&mut c, &store, &mut got);
        std::fs::write(&path, "{\"type\":\"claim_acquired\"}\n").unwrap();
        counted(&mut c, &store, &mut got);
        assert_eq!(got.by_type().next(), Some(("claim_acquired", 3)));
    }
}
