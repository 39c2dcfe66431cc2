//! One log feed per member: what an audit log says, from a cursor on, so
//! that a face that opened with the log's tail ([`super::Audit::tail`]) and
//! then follows from the tail's cursor ([`super::Audit::follow`]) shows no
//! line twice and misses none. The events pane, `events --follow`,
//! `metrics` and the publisher all read a member's log so; how the lines
//! are kept (a file's bytes, a store's keys) stays behind the member.

use super::{Cursor, StoreError};
use crate::events::history::Log;
use crate::events::tail::{FileId, Line};
use std::time::Duration;

/// What a member's logs said since a cursor, drained from one thread.
pub trait LogFeed: Send {
    /// The next news, or `Ok(None)` when `timeout` passes without any.
    fn next(&mut self, timeout: Duration) -> Result<Option<LogNews>, StoreError>;

    /// A handle that ends the feed from another thread, so that a `next`
    /// blocked there returns at once (with [`StoreError::FeedClosed`]).
    /// None: the feed ends only when dropped, between two `next`s.
    fn closer(&self) -> Option<Box<dyn FnOnce() + Send>> {
        None
    }
}

/// One piece of news from a log feed.
#[derive(Debug, Clone, PartialEq)]
pub enum LogNews {
    /// Entries written to `log`, oldest first, each as stored (a file's
    /// line, byte for byte up to the cut; a store's value) with its mark
    /// ([`Line::offset`]: a byte offset, a revision). `next` is where a
    /// feed resumes so that none of these comes again: a publisher keeps
    /// it verbatim.
    Lines {
        log: Log,
        lines: Vec<Line>,
        next: Cursor,
        /// The file they were read from, where the log is a file (its
        /// marks are byte offsets in it): a reader that keys lines by
        /// their place keys them by this and the mark.
        file_id: Option<FileId>,
    },
    /// `log` was truncated or replaced: what follows starts over.
    Reset { log: Log },
    /// `log` cannot be read now (a directory at its path, no permission,
    /// the store away), in words; said once until it changes.
    Trouble { log: Log, why: String },
}

/// A log's last entries, oldest first, and where a feed resumes after
/// them.
pub type Tail = (Vec<(Log, Line)>, Cursor);
