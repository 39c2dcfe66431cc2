//! Messages into the model. Every thread (input, the store's lanes, the
//! logs, the op worker, signals) speaks only these, over one channel. What
//! the outside world says arrives here as data: the model never reads it.

use crate::claims::ForceOpts;
use crate::events::service::Reply;
use ratatui::crossterm::event::{KeyEvent, MouseEvent};
use std::path::PathBuf;

#[derive(Debug)]
pub enum Action {
    Key(KeyEvent),
    /// Ctrl-C, stamped when it was read (epoch ms): a second one within a
    /// second quits without asking.
    Interrupt(i64),
    Mouse(MouseEvent),
    /// What one member's lane says: its rows, counts and hazards, pid
    /// facts, its link and hosts, the clock it judged them at.
    Update(Box<crate::store::drive::Update>),
    /// What origin `.0`'s events log says: new complete lines, oldest
    /// first; a reset (truncated or replaced: what follows starts over);
    /// or why it cannot be followed (not a regular file, permission, ...).
    News(crate::store::OriginIx, crate::store::LogNews),
    /// Wall clock, epoch ms: re-judge in memory with the pid facts known.
    Tick(i64),
    Resize(u16, u16),
    OpResult(OpResult),
    /// A best-effort failure reported by the core (see `crate::diag`).
    Warning(String),
    /// The events service's answer: tenures, line counts, a page, a search.
    Log(Box<Reply>),
    /// SIGTERM / SIGHUP.
    Quit,
}

pub use crate::claims::root::RootProblem;

// The words for the header's notice live with the face.
impl std::fmt::Display for RootProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = |p: &PathBuf| crate::sanitize::sanitize(&p.to_string_lossy()).into_owned();
        match self {
            RootProblem::Missing(p) => {
                write!(f, "{} does not exist — watching for it to appear", path(p))
            }
            RootProblem::NotADirectory(p) => write!(
                f,
                "{} is not a directory — no claims can live under it",
                path(p)
            ),
            RootProblem::Unreadable(p, kind) => write!(
                f,
                "{} cannot be read ({kind}) — run as a user who can read it",
                path(p)
            ),
        }
    }
}

/// A mutation the operator asked for, and the origin it goes to; run off
/// the UI thread because the verbs may wait seconds on a recovery mutex.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// The origin whose member runs it: a row's own, or the one named.
    pub at: crate::store::OriginIx,
    pub verb: Verb,
}

impl Op {
    pub fn key(&self) -> &str {
        self.verb.key()
    }

    /// What it does, in a word ("acquire", "force-release" ...).
    pub fn name(&self) -> &'static str {
        self.verb.verb()
    }
}

/// What an [`Op`] does.
#[derive(Debug, Clone, PartialEq)]
pub enum Verb {
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
        /// Set when renewing someone else's claim: recorded in the event.
        operator: Option<String>,
    },
    ForceRelease {
        key: String,
        opts: ForceOptsShown,
    },
    /// `doctor --fix`: what is provably abandoned under the root.
    Clean,
    /// `x` on one entry of the `h` list: that entry alone, as listed,
    /// cleaned only if it is still that litter when the op runs.
    CleanOne(Box<crate::claims::Hazard>),
    /// A force-release of a host's published claim, asked of that host's
    /// publisher through the store; it is carried out in the host's own
    /// root, and its answer (or the host's silence) is the outcome.
    AskHost {
        host_id: String,
        hostname: String,
        root_id: String,
        key: String,
        opts: ForceOptsShown,
    },
    /// `fleet forget`: remove an offline publishing host from the store.
    ForgetHost {
        host_id: String,
        label: String,
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

impl Verb {
    pub fn key(&self) -> &str {
        match self {
            Verb::Acquire { key, .. }
            | Verb::Release { key, .. }
            | Verb::Renew { key, .. }
            | Verb::ForceRelease { key, .. }
            | Verb::AskHost { key, .. } => key,
            Verb::ForgetHost { label, .. } => label,
            Verb::Clean | Verb::CleanOne(_) => "",
        }
    }

    pub fn verb(&self) -> &'static str {
        match self {
            Verb::Acquire { .. } => "acquire",
            Verb::Release { .. } => "release",
            Verb::Renew { .. } => "renew",
            Verb::ForceRelease { .. } | Verb::AskHost { .. } => "force-release",
            Verb::Clean | Verb::CleanOne(_) => "clean",
            Verb::ForgetHost { .. } => "forget host",
        }
    }
}

/// What an [`Op`] came to, in words for the status line.
#[derive(Debug, Clone, PartialEq)]
pub struct OpResult {
    pub verb: &'static str,
    pub key: String,
    /// Which of several roots it ran in (0: the only root, or a store):
    /// with the key, the row an acquire selects when it arrives.
    pub root: usize,
    /// Did it do what was asked?
    pub ok: bool,
    pub message: String,
}
