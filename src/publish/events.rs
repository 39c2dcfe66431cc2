//! Mirroring each root's events log, line by line, create-if-absent.

use super::{Level, Publisher};
use crate::events::tail::open_regular;
use crate::store::etcd::layout::RootPlace;
use crate::store::etcd::sink::Stored;
use crate::store::file::follow::Follower;
use crate::store::StoreError;

impl Publisher {
    /// Where to resume mirroring root `i`'s events log: after the last line
    /// etcd has of this very log file; from its start if etcd has lines of
    /// an earlier log only (it was rotated meanwhile); from its end on a
    /// first publish (only new events are mirrored).
    pub(super) fn start_events(&mut self, i: usize) -> Result<(), StoreError> {
        let path = self.roots[i].root.events_file();
        let opened = open_regular(&path).ok().flatten();
        let Some((file, id)) = opened else {
            self.roots[i].events = Some(Follower::waiting_for(&path));
            return Ok(());
        };
        let log = log_id(id.dev, id.ino);
        let place = self.roots[i].place.clone();
        let mine = format!("{}{log}.", place.events());
        let last = self.sink.last(&mine, true)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let follower = match last.and_then(|kv| resume_at(&place, &log, &kv)) {
            Some(at) if at <= len => Follower::starting_at(&path, file, id, at),
            _ if self.sink.last(&place.events(), false)?.is_none() => Follower::open(&path, 0)
                .map(|(f, _)| f)
                .unwrap_or_else(|_| Follower::waiting_for(&path)),
            _ => Follower::starting_at(&path, file, id, 0),
        };
        self.roots[i].events = Some(follower);
        Ok(())
    }

    /// Mirror the lines appended to root `i`'s log since the last poll.
    pub(super) fn publish_events(
        &mut self,
        i: usize,
        log: &mut dyn FnMut(Level, &str),
    ) -> Result<(), StoreError> {
        loop {
            let Some(f) = self.roots[i].events.as_mut() else {
                return Ok(());
            };
            let at = f.offset();
            let Ok(poll) = f.poll() else { return Ok(()) };
            let Some(id) = f.file_id() else {
                return Ok(());
            };
            let log_name = log_id(id.dev, id.ino);
            for line in &poll.lines {
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
                let written = self.sink.put_event_once(&key, &line.text);
                if let Err(e) = written {
                    // Read again from this poll's start after reconnecting:
                    // create-if-absent makes the lines already written no-ops.
                    if let Some((file, id)) = open_regular(&self.roots[i].root.events_file())
                        .ok()
                        .flatten()
                    {
                        let path = self.roots[i].root.events_file();
                        self.roots[i].events =
                            Some(Follower::starting_at(path, file, id, at.min(line.offset)));
                    }
                    return Err(e);
                }
                self.stats.event_writes += 1;
            }
            if !poll.more {
                return Ok(());
            }
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
