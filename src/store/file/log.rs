//! A root's events log behind [`Audit`](crate::store::Audit): its tail,
//! read backwards, and its feed, the root's one [`Follower`] polled from a
//! cursor that names the file (device, inode) and the byte where the next
//! line starts, so a face that opened with the tail shows no line twice,
//! and a publisher that kept a cursor resumes where it left off.

use super::follow::{read_claims, Follower, Reset};
use crate::events::history::Log;
use crate::events::tail::{open_regular, tail_of, FileId, BLOCK_SIZE, LINE_SCAN_BUDGET};
use crate::store::log::{LogFeed, LogNews, Tail};
use crate::store::{Cursor, StoreError};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a followed log is looked at: a `stat`, and a read when it
/// grew. Quick enough that a line shows within a frame or two, and
/// nothing worth measuring while the log is idle.
pub const LOG_POLL: Duration = Duration::from_millis(100);

/// Where a reader of the file resumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    /// None: no file was there; whatever comes is read from its start.
    id: Option<FileId>,
    offset: u64,
    /// `offset` is inside a line whose start was never seen.
    mid_line: bool,
}

const TAG: u8 = b'F';

impl Place {
    fn cursor(self) -> Cursor {
        let mut b = Vec::with_capacity(26);
        b.push(TAG);
        b.push(u8::from(self.mid_line));
        let (dev, ino) = self.id.map_or((0, 0), |id| (id.dev, id.ino));
        b.extend_from_slice(&dev.to_be_bytes());
        b.extend_from_slice(&ino.to_be_bytes());
        b.extend_from_slice(&self.offset.to_be_bytes());
        Cursor::new(&b)
    }

    /// A cursor this log made; None for any other (read from now).
    fn of(c: &Cursor) -> Option<Place> {
        let b = c.bytes();
        if b.len() != 26 || b[0] != TAG {
            return None;
        }
        let n = |at: usize| u64::from_be_bytes(b[at..at + 8].try_into().unwrap_or_default());
        let (dev, ino, offset) = (n(2), n(10), n(18));
        Some(Place {
            id: (ino != 0).then_some(FileId { dev, ino }),
            offset,
            mid_line: b[1] != 0,
        })
    }
}

fn trouble(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend {
        store: format!("file:{}", path.to_string_lossy()),
        detail: e.to_string(),
    }
}

/// The cursor of a reader that has everything of the log file `id` before
/// `offset`, a line's start: what `events` hands the feed after printing
/// the file's lines itself.
pub fn cursor_at(id: FileId, offset: u64) -> Cursor {
    let at = Place {
        id: Some(id),
        offset,
        mid_line: false,
    };
    at.cursor()
}

/// The last `n` lines of the log at `path`, oldest first, and the cursor
/// after them. A missing log is empty; its cursor reads whatever comes
/// from its start.
pub fn tail(path: &Path, n: usize) -> Result<Tail, StoreError> {
    let Some((file, id)) = open_regular(path).map_err(|e| trouble(path, e))? else {
        let none = Place {
            id: None,
            offset: 0,
            mid_line: false,
        };
        return Ok((Vec::new(), none.cursor()));
    };
    let chunk =
        tail_of(&file, path, id, n, BLOCK_SIZE, LINE_SCAN_BUDGET).map_err(|e| trouble(path, e))?;
    let mut lines = chunk.lines;
    read_claims(&file, &mut lines);
    let at = Place {
        id: Some(id),
        offset: chunk.offset,
        mid_line: chunk.starts_mid_line,
    };
    Ok((
        lines.into_iter().map(|l| (Log::Own, l)).collect(),
        at.cursor(),
    ))
}

/// The log at `path` followed from `after` (see [`tail`]).
pub fn follow(path: &Path, after: Option<&Cursor>) -> Result<Box<dyn LogFeed>, StoreError> {
    let mut feed = FileLog {
        follower: Follower::waiting_for(path),
        pending: VecDeque::new(),
        said: None,
        closed: Arc::new(AtomicBool::new(false)),
    };
    let opened = open_regular(path).map_err(|e| trouble(path, e))?;
    let from = after.map(|c| (c.is_start(), Place::of(c)));
    feed.follower = match (opened, from) {
        // Nothing there yet: whatever comes is new.
        (None, _) => Follower::waiting_for(path),
        // Every line there is, from the first.
        (Some(_), Some((true, _))) => Follower::waiting_for(path),
        (Some((file, id)), Some((_, Some(at)))) if at.id == Some(id) => {
            Follower::resuming(path, file, id, at.offset, at.mid_line)
        }
        // No log at the cursor: every line of the one there now is new.
        (Some(_), Some((_, Some(Place { id: None, .. })))) => Follower::waiting_for(path),
        (Some(_), Some((_, Some(_)))) => {
            // Another file since the cursor: what follows starts over.
            feed.pending.push_back(LogNews::Reset { log: Log::Own });
            Follower::waiting_for(path)
        }
        // From now: past the last complete line.
        (Some((file, id)), _) => {
            let len = file.metadata().map_err(|e| trouble(path, e))?.len();
            let end = crate::events::stream::end_of_complete_lines(&file, len)
                .map_err(|e| trouble(path, e))?;
            Follower::starting_at(path, file, id, end)
        }
    };
    Ok(Box::new(feed))
}

/// One root's log, followed.
struct FileLog {
    follower: Follower,
    /// News read and not handed out yet, oldest first.
    pending: VecDeque<LogNews>,
    /// The trouble last said, so a lasting one is said once.
    said: Option<String>,
    closed: Arc<AtomicBool>,
}

impl FileLog {
    /// Read what is there now into `pending`.
    fn poll(&mut self) {
        loop {
            let poll = match self.follower.poll() {
                Ok(p) => p,
                Err(e) => {
                    let why = e.to_string();
                    if self.said.as_deref() != Some(why.as_str()) {
                        self.said = Some(why.clone());
                        self.pending
                            .push_back(LogNews::Trouble { log: Log::Own, why });
                    }
                    return;
                }
            };
            self.said = None;
            if matches!(poll.reset, Some(Reset::Truncated | Reset::Replaced)) {
                self.pending.push_back(LogNews::Reset { log: Log::Own });
            }
            if !poll.lines.is_empty() {
                let mut lines = poll.lines;
                // Before the next poll, which may move to another file.
                self.follower.read_claims(&mut lines);
                let (offset, mid_line) = self.follower.resume_point();
                let next = Place {
                    id: self.follower.file_id(),
                    offset,
                    mid_line,
                };
                self.pending.push_back(LogNews::Lines {
                    log: Log::Own,
                    lines,
                    next: next.cursor(),
                    file_id: self.follower.file_id(),
                });
            }
            if !poll.more {
                return;
            }
        }
    }
}

impl LogFeed for FileLog {
    fn next(&mut self, timeout: Duration) -> Result<Option<LogNews>, StoreError> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.closed.load(Ordering::SeqCst) {
                return Err(StoreError::FeedClosed);
            }
            if let Some(n) = self.pending.pop_front() {
                return Ok(Some(n));
            }
            self.poll();
            if !self.pending.is_empty() {
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            std::thread::sleep(LOG_POLL.min(deadline - now));
        }
    }

    fn closer(&self) -> Option<Box<dyn FnOnce() + Send>> {
        let closed = Arc::clone(&self.closed);
        Some(Box::new(move || closed.store(true, Ordering::SeqCst)))
    }
}

#[cfg(test)]
mod tests;
