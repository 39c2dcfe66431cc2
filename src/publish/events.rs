//! Mirroring each root's events log, line by line, create-if-absent.

use super::{Level, Publisher};
use crate::events::history::Log;
use crate::events::range::RangeEnd;
use crate::events::tail::open_regular;
use crate::store::sink::Mirrored;
use crate::store::{Cursor, LogFeed, LogNews, StoreError};
use std::time::Duration;

impl Publisher {
    /// Where to resume mirroring root `i`'s events log: after the last line
    /// etcd has of this very log file; from its start if etcd has lines of
    /// an earlier log only (it was rotated meanwhile); from its end on a
    /// first publish (only new events are mirrored).
    pub(super) fn start_events(&mut self, i: usize) -> Result<(), StoreError> {
        let r = &self.roots[i];
        let Some(audit) = r.store.audit() else {
            return Ok(());
        };
        let opened = open_regular(&r.root.events_file()).ok().flatten();
        let after = match opened {
            // Nothing yet: every line it will have is new.
            None => Some(Cursor::start()),
            Some((file, id)) => {
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                // As a range read of this very file that ended at `next`.
                let end = |next| RangeEnd {
                    next: Some(next),
                    file_id: Some(id),
                };
                match self.sink.mirrored(&r.info.id, &log_id(id.dev, id.ino))? {
                    Mirrored::Upto(at) if at <= len => audit.resume_after(&Log::Own, &end(at)),
                    Mirrored::Nothing => None,
                    _ => audit.resume_after(&Log::Own, &end(0)),
                }
            }
        };
        let feed = audit.follow(after.as_ref())?;
        let r = &mut self.roots[i];
        r.events = Some(feed);
        r.events_at = after;
        Ok(())
    }

    /// Mirror the lines appended to root `i`'s log since the last look.
    pub(super) fn publish_events(
        &mut self,
        i: usize,
        log: &mut dyn FnMut(Level, &str),
    ) -> Result<(), StoreError> {
        loop {
            let r = &mut self.roots[i];
            let Some(feed) = r.events.as_mut() else {
                return Ok(());
            };
            let (lines, next, id) = match feed.next(Duration::ZERO) {
                Ok(Some(LogNews::Lines {
                    lines,
                    next,
                    file_id: Some(id),
                    ..
                })) => (lines, next, id),
                // Truncated, replaced or unreadable: what follows says.
                Ok(Some(_)) => continue,
                Ok(None) => return Ok(()),
                Err(_) => {
                    r.events = refollow(&*r.store, r.events_at.as_ref());
                    return Ok(());
                }
            };
            let log_name = log_id(id.dev, id.ino);
            for line in &lines {
                if line.truncated {
                    log(
                        Level::Warn,
                        &format!(
                            "root={} an event line at byte {} is too long to mirror; skipped",
                            self.roots[i].info.path, line.offset
                        ),
                    );
                    continue;
                }
                let id = &self.roots[i].info.id;
                let put = self
                    .sink
                    .append_event(id, &log_name, line.offset, &line.text);
                if let Err(e) = put {
                    // Read again from the last line etcd has after
                    // reconnecting: create-if-absent makes the lines
                    // already written no-ops.
                    let r = &mut self.roots[i];
                    r.events = refollow(&*r.store, r.events_at.as_ref());
                    return Err(e);
                }
                self.stats.event_writes += 1;
            }
            self.roots[i].events_at = Some(next);
        }
    }
}

/// The log file's identity, as it names event keys.
fn log_id(dev: u64, ino: u64) -> String {
    format!("{dev:x}-{ino:x}")
}

/// The root's log followed again from `after`, if it can be.
fn refollow(store: &dyn crate::store::Backend, after: Option<&Cursor>) -> Option<Box<dyn LogFeed>> {
    store.audit()?.follow(after).ok()
}
