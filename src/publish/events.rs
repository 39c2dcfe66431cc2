//! Mirroring each root's events log, line by line, create-if-absent.

use super::{Level, Publisher};
use crate::events::tail::open_regular;
use crate::store::etcd::layout::RootPlace;
use crate::store::etcd::sink::Stored;
use crate::store::{Audit, Cursor, LogNews, StoreError};
use std::time::Duration;

impl Publisher {
    /// Where to resume mirroring root `i`'s events log: after the last line
    /// etcd has of this very log file; from its start if etcd has lines of
    /// an earlier log only (it was rotated meanwhile); from its end on a
    /// first publish (only new events are mirrored).
    pub(super) fn start_events(&mut self, i: usize) -> Result<(), StoreError> {
        let r = &self.roots[i];
        let audit: &dyn Audit = &*r.store;
        let opened = open_regular(&r.root.events_file()).ok().flatten();
        let after = match opened {
            // Nothing yet: every line it will have is new.
            None => Some(Cursor::start()),
            Some((file, id)) => {
                let log = log_id(id.dev, id.ino);
                let mine = format!("{}{log}.", r.place.events());
                let last = self.sink.last(&mine, true)?;
                let len = file.metadata().map(|m| m.len()).unwrap_or(0);
                match last.and_then(|kv| resume_at(&r.place, &log, &kv)) {
                    Some(at) if at <= len => audit.cursor_in_file(&file, at),
                    _ if self.sink.last(&r.place.events(), false)?.is_none() => None,
                    _ => audit.cursor_in_file(&file, 0),
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
                    r.events = r.store.follow(r.events_at.as_ref()).ok();
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
                let key = self.roots[i].place.event(&log_name, line.offset);
                if let Err(e) = self.sink.put_event_once(&key, &line.text) {
                    // Read again from the last line etcd has after
                    // reconnecting: create-if-absent makes the lines
                    // already written no-ops.
                    let r = &mut self.roots[i];
                    r.events = r.store.follow(r.events_at.as_ref()).ok();
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

/// The byte after the mirrored line `kv`: where the next line starts.
fn resume_at(place: &RootPlace, log: &str, kv: &Stored) -> Option<u64> {
    let at = place.offset_of_event(&kv.key, log)?;
    Some(at + kv.value.len() as u64 + 1)
}
