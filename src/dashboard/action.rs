//! Messages into the model. Every thread (input, watcher, tick, events
//! follower, op worker, signals) speaks only these, over one channel.

use crate::claims::ForceOpts;
use crate::events::tail::Line;
use ratatui::crossterm::event::KeyEvent;
use std::path::PathBuf;

#[derive(Debug)]
pub enum Action {
    Key(KeyEvent),
    /// These paths (in the claims dir) changed: re-read exactly them.
    FsChanged(Vec<PathBuf>),
    /// Events may have been missed or the claims dir came or went: sweep.
    Rescan,
    /// New complete lines of the events log, oldest first.
    EventsAppended(Vec<Line>),
    /// The log was truncated or replaced: what follows starts over.
    EventsReset,
    /// The log cannot be followed (not a regular file, permission, ...).
    EventsError(String),
    /// Wall clock, epoch ms: re-classify in memory, no file read.
    Tick(i64),
    Resize(u16, u16),
    OpResult(OpResult),
    /// A best-effort failure reported by the core (see `crate::diag`).
    Warning(String),
    /// SIGTERM / SIGHUP.
    Quit,
}

/// A mutation the operator asked for; run off the UI thread because the
/// verbs may wait seconds on a recovery mutex.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Acquire {
        key: String,
        holder: String,
        ttl_ms: Option<i64>,
        reason: Option<String>,
    },
    Release {
        key: String,
        holder: String,
    },
    Renew {
        key: String,
        holder: String,
        ttl_ms: i64,
    },
    ForceRelease {
        key: String,
        opts: ForceOptsShown,
    },
}

/// The guard of a force-release: what the operator saw when confirming.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ForceOptsShown {
    pub expect_holder: Option<String>,
    pub expect_acquired_at: Option<i64>,
    pub operator: String,
    pub allow_live: bool,
}

impl ForceOptsShown {
    pub fn to_opts(&self) -> ForceOpts {
        ForceOpts {
            expect_holder: self.expect_holder.clone(),
            expect_acquired_at: self.expect_acquired_at,
            operator: Some(self.operator.clone()),
            allow_live: self.allow_live,
        }
    }
}

impl Op {
    pub fn key(&self) -> &str {
        match self {
            Op::Acquire { key, .. }
            | Op::Release { key, .. }
            | Op::Renew { key, .. }
            | Op::ForceRelease { key, .. } => key,
        }
    }

    pub fn verb(&self) -> &'static str {
        match self {
            Op::Acquire { .. } => "acquire",
            Op::Release { .. } => "release",
            Op::Renew { .. } => "renew",
            Op::ForceRelease { .. } => "force-release",
        }
    }
}

/// What an [`Op`] came to, in words for the status line.
#[derive(Debug, Clone, PartialEq)]
pub struct OpResult {
    pub verb: &'static str,
    pub key: String,
    /// The lockfile to re-read at once, so the table does not wait for the
    /// watcher to notice the op's own write.
    pub path: PathBuf,
    /// Did it do what was asked?
    pub ok: bool,
    pub message: String,
}
