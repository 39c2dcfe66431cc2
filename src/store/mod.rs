//! The store seam: one [`Store`] made of origins, each a backend behind
//! the same small traits, with a room per kind.
//!
//! A face holds one [`Store`] ([`compose`]): file roots, sites reached by
//! URL (etcd, with the `etcd` feature), and the copies hosts publish into a
//! site, each a [`Member`] with a typed [`Origin`]. It never learns a
//! backend's kind: what a member can do is asked of it
//! ([`backend`]: [`Claims`] and [`Feed`] everywhere; [`Audit`],
//! [`Repair`], [`Leases`], [`Link`], [`Fleet`] where the backend has them),
//! and how its rows are judged is data ([`Claims::rules`]). All answer with
//! the core's own outcome types, so every face words them once; what a
//! fencing store knows beyond a lockfile (the fence and the lease) rides
//! beside the outcome in a [`Tenure`], and reaches JSON only as ADDED
//! fields (`"revision"`, `"lease"` on a record; `"store"` on a list).
//!
//! # How a face uses it
//!
//! 1. Name the stores (`--store`, each checked by its scheme's opener in
//!    [`registry`]) and the roots, then [`Store::open`] them. A build
//!    without a store's feature still knows its scheme and says what to
//!    rebuild with ([`StoreError::NotBuilt`]).
//! 2. A verb on one key goes to [`Store::one`] (the one member that takes
//!    claims, else a usage error naming them), or to a row's own member.
//! 3. `list` and `doctor` take [`Store::list`] / [`Store::doctor`]: every
//!    member's listing, and what hosts publish; [`listing`] writes its
//!    JSON (one root byte for byte as it always was).
//! 4. A follower takes [`Feed::changes`] after a listing's cursor: one feed
//!    of [`Change`]s per member (a file root's one watcher, `file::feed`;
//!    etcd's resumable watch), re-reading what a change names, re-listing
//!    on [`Change::Relist`].
//! 5. `acquire --wait` and `claimtop run` take [`Feed::watch_key`]: a
//!    wake-up whenever one key may have changed. `crate::wait` drives the
//!    wait and the hold above this seam with nothing but these verbs: a
//!    hold renews a TTL claim itself, or keeps a lease alive through
//!    [`Leases`], and releases fenced to its own tenure, so a `run` whose
//!    claim expired never ends a newer one.
//! 6. History: [`Store::logs`] names every events log of every member,
//!    [`Store::history`] reads one in bounded steps.
//!
//! Everything is synchronous: the etcd store owns its own small tokio runtime
//! and bounds every call by its `--timeout`, so no face needs async.

pub mod backend;
pub mod compose;
pub mod copy_merge;
pub mod cursor;
pub mod drive;
mod error;
pub mod file;
pub mod fleet;
pub mod fs_events;
pub mod host_names;
pub mod listing;
pub mod listing_stream;
pub mod log;
pub mod mirror;
pub mod raw_copy;
pub mod registry;
pub mod sink;
mod tenure;
pub mod url;
pub mod wake;

#[cfg(feature = "etcd")]
pub mod etcd;

use crate::claims::Blocker;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use backend::{
    Audit, Backend, Claims, Feed, Fleet, Flow, Leases, Link, LinkFacts, ListEnd, ListSink,
    MemberListing, Repair, Words,
};
pub use compose::{Listing, LogRef, Member, Origin, OriginIx, Store};
pub use cursor::{Cursor, Fence};
pub use error::StoreError;
pub use log::{LogFeed, LogNews, Tail};
pub use registry::{OpenCtx, Settings, StoreName};
pub use tenure::{lease_hex, Fenced, LeaseInfo, Tenure};
pub use url::{StoreUrl, StoreUrlError};

/// One thing that changed in a member, for whatever mirrors it and for
/// `--wait`. The audit log's lines are not changes: they come by
/// [`Audit::follow`], so one reader follows each log.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The claim on this key was created, rewritten or removed: re-read it
    /// (a published copy: its copy key, `<host_id>/<root_id>/<key>`).
    Claim { key: String },
    /// An entry of a file root that is not a claim — a recovery mutex, a
    /// temp file, the archive dir, the events log or its mutex — as it is
    /// now (None: gone), so its hazard is judged, and aged, without a sweep.
    Entry {
        path: PathBuf,
        entry: Option<crate::claims::entry::Entry>,
    },
    /// Only a listing can tell what changed: re-list everything. `Some`:
    /// changes were lost (a compacted revision, a watch overflow), in
    /// words for a visible notice; a file root's feed follows it with the
    /// entries that are there now (the reader forgets the ones it knew).
    /// `None`: nothing was lost, but the change is one a per-key read
    /// cannot see (a lockfile whose name is not the canonical encoding of
    /// its key, written by another encoder).
    Relist { why: Option<String> },
    /// The member's hosts changed (a publisher came, went, rewrote its
    /// record or one of its roots' hazards): re-read them, not the copies.
    /// (A host's hazards are also its copies' listing's: the copies'
    /// member hears of them as a [`Change::Relist`] without loss.) A
    /// root's summary names no change: the faces that show one read it
    /// when asked.
    Members,
    /// The store stopped answering, or (a file root) something cannot be
    /// watched; the feed keeps trying on its own.
    Down { why: String },
    /// The store answers again (after a `Down`), at this point of its
    /// history when it has one.
    Up { at: Option<Cursor> },
}

/// A claim being kept alive; dropping it stops renewing.
pub trait Kept: Send {
    /// Why the claim is no longer held, once it is not.
    fn lost(&self) -> Option<String>;

    /// Until when the claim is surely still held even if the store cannot
    /// be reached from now on (a lease: the send time of the last renewal
    /// the store answered, plus the TTL it answered with). None: the claim
    /// does not run out by itself while the holder is cut off.
    fn safe_until(&self) -> Option<std::time::Instant> {
        None
    }

    /// The holder stops treating the claim as its own without releasing it
    /// (lost, or given up ahead of a deadline): a store that records how
    /// tenures end (etcd's `claim_expired`) sees to this one's.
    fn give_up(&self) {}
}

/// A feed of [`Change`]s, drained from one thread.
pub trait Changes: Send {
    /// The next change, or `Ok(None)` when `timeout` passes without one.
    fn next(&mut self, timeout: Duration) -> Result<Option<Change>, StoreError>;

    /// A handle that ends the feed from another thread, so that a `next`
    /// blocked there returns at once (with [`StoreError::FeedClosed`]).
    /// None: the feed ends only when dropped, between two `next`s.
    fn closer(&self) -> Option<Box<dyn FnOnce() + Send>> {
        None
    }

    /// A handle that ends a `next` blocked there at once, with nothing
    /// (`Ok(None)`), from another thread: something its caller waits for
    /// besides this feed has come (a publisher's request). Spurious calls
    /// are fine. None: the caller's wait lasts its timeout.
    fn waker(&self) -> Option<Wake> {
        None
    }
}

/// Called whenever one key may have changed. Spurious calls are fine (the
/// waiter re-reads); it must not block, as it runs on the watching thread.
pub type Wake = Arc<dyn Fn() + Send + Sync>;

/// A store's watch on one key ([`Feed::watch_key`]); dropping it stops it.
pub trait KeyWatch: Send {
    /// The key is held by `blocker` now. A store that can watch the holder
    /// itself (the exit of a pid on this machine) starts doing so, since a
    /// holder's death may change nothing in the store.
    fn blocked_by(&mut self, blocker: &Blocker) {
        let _ = blocker;
    }
}

/// `--timeout`'s default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// `--events-retention`'s default.
pub const DEFAULT_EVENTS_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
