//! The store seam: the verbs over one interface, with a room per store.
//!
//! Three stores keep claims: one file root (the seed's lockfiles,
//! [`file::FileStore`]), several file roots as one ([`multi::MultiStore`]),
//! and, with the `etcd` feature, etcd (`etcd::EtcdStore`). All answer with
//! the core's own outcome types, so every face words them once; what etcd
//! knows beyond a lockfile (the fencing revision and the lease) rides beside
//! the outcome in a [`Tenure`], and reaches JSON only as ADDED fields
//! (`"revision"`, `"lease"` on a record; `"store"` on a list).
//!
//! [`Store`] is what every store does: the verbs, listing, `doctor` and
//! its repair, events, the change feed and a key's watch. What only some
//! stores can do is a capability trait of its own, reached through
//! [`Store::leases`] ([`Leases`]: keep-alives, fenced release, the
//! cluster's facts) and [`Store::fleet`] ([`Fleet`]: hosts publishing
//! their roots). A face asks for a capability and says in words what the
//! store lacks; it never asks which store it holds.
//!
//! # How a face uses it
//!
//! 1. Parse `--store` (else `$FNO_CLAIMS_STORE`, else `file:` + ROOT) with
//!    [`StoreUrl::parse`], then [`open`] it with the connection flags in
//!    [`OpenOpts`] (or [`open_roots`] for the roots a command line names).
//!    A build without the `etcd` feature answers an `etcd://` URL with
//!    [`StoreError::NoEtcdSupport`], which says so in words.
//! 2. Call the verbs on the returned `Box<dyn Store>`. Outcomes are the
//!    `claims::*Outcome` types it already prints; [`Fenced::tenure`] is
//!    `None` on a file store.
//! 3. JSON: print what it prints today, then pass the record object through
//!    [`Tenure::extend_record`] (and a list through [`Listing::to_json`]),
//!    which adds the etcd fields and changes nothing on a file store.
//! 4. The dashboard takes [`Store::changes`]: one feed of [`Change`]s
//!    (on a file root its one watcher, `file::feed`; on etcd one resumable
//!    watch) that a thread drains into the face's own messages; the face
//!    re-reads what a change names, and re-lists everything on
//!    [`Change::Resync`].
//! 5. `acquire --wait` and `claimtop run` take [`Store::watch_key`]: a
//!    wake-up whenever one key may have changed (the change feed filtered
//!    to the key, plus, on a file root, the exit of a local holder's pid).
//!    `crate::wait` drives the wait and the hold above this seam with
//!    nothing but these verbs: a hold renews a TTL claim itself, or keeps a
//!    lease alive through [`Leases`], and releases fenced to its own
//!    tenure, so a `run` whose claim expired never ends a newer one.
//! 6. History: [`Store::logs`] names every events log the store keeps (one
//!    per root over several roots; the store's own and each mirrored root
//!    of a fleet), [`Store::history`] reads one in bounded steps. A log
//!    kept in a file says so ([`crate::events::history::History::file`]),
//!    so `events` prints its lines byte for byte and `metrics` counts them
//!    by offset. [`Store::parts`] names the stores several roots are, for
//!    a face that keeps one series per root.
//!
//! Everything is synchronous: the etcd store owns its own small tokio runtime
//! and bounds every call by its `--timeout`, so no face needs async.

pub mod backend;
pub mod compose;
pub mod cursor;
mod error;
pub mod file;
pub mod fleet;
pub mod fs_events;
pub mod host_names;
mod listing;
pub mod mirror;
pub mod multi;
pub mod registry;
mod tenure;
pub mod url;
pub mod wake;

#[cfg(feature = "etcd")]
pub mod etcd;

use crate::claims::Blocker;
use crate::claims::{
    AcquireOpts, AcquireOutcome, Fix, ForceOpts, ForceOutcome, ItemRules, ReleaseOutcome,
    RenewOutcome, Status,
};
use crate::events::tail::Line;
use crate::events::Event;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use error::StoreError;
pub use listing::{Listing, Origins, StoreHazard};
pub use tenure::{lease_hex, Fenced, LeaseInfo, Tenure};
pub use url::{StoreUrl, StoreUrlError};

/// One thing that changed in the store, for the dashboard and `--wait`.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The claim on this key was created, rewritten or removed: re-read it.
    Claim { key: String },
    /// A new event was recorded.
    Event(Event),
    /// A file root's lockfile whose name is not the canonical encoding of
    /// `key` (a writer with another encoder) changed: a per-key read looks
    /// only at the canonical name, so only a listing reads this file.
    Misnamed { key: String, path: PathBuf },
    /// An entry of a file root that is not a claim — a recovery mutex, a
    /// temp file, the archive dir, the events log or its mutex — as it is
    /// now (None: gone), so its hazard is judged, and aged, without a sweep.
    Entry {
        path: PathBuf,
        entry: Option<crate::claims::entry::Entry>,
    },
    /// Complete lines appended to a file root's events log, oldest first,
    /// as they stand in the file (with their byte offsets, by which the
    /// whole-log views find them; lines that do not parse are kept).
    LogAppended(Vec<Line>),
    /// The events log was truncated or replaced: the lines that follow
    /// start over.
    LogReset,
    /// The events log cannot be followed (a directory at its path, no
    /// permission), in words; said once until it changes.
    LogTrouble(String),
    /// A publishing host came, went, or rewrote its record (`claimtop
    /// publish`): re-read the fleet's hosts.
    Host { host_id: String },
    /// One claim a host publishes changed or went: re-read that copy.
    Published {
        host_id: String,
        root_id: String,
        key: String,
    },
    /// A publishing host mirrored one line of its root's events log; the
    /// reader adds where it comes from ([`fleet::mark_published`]).
    PublishedEvent {
        host_id: String,
        root_id: String,
        event: Event,
    },
    /// Changes were lost (a compacted revision, a watch overflow): re-list
    /// everything. The text says why, for a visible notice. A file root's
    /// feed follows it with the entries that are there now (the reader
    /// forgets the ones it knew).
    Resync { why: String },
    /// The store stopped answering, or (a file root) something cannot be
    /// watched; the feed keeps trying on its own.
    Disconnected { why: String },
    /// The store answers again (after a `Disconnected`), at this revision.
    Connected { revision: Option<i64> },
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
}

/// Called whenever one key may have changed. Spurious calls are fine (the
/// waiter re-reads); it must not block, as it runs on the watching thread.
pub type Wake = Arc<dyn Fn() + Send + Sync>;

/// A store's watch on one key ([`Store::watch_key`]); dropping it stops it.
pub trait KeyWatch: Send {
    /// The key is held by `blocker` now. A store that can watch the holder
    /// itself (the exit of a pid on this machine) starts doing so, since a
    /// holder's death may change nothing in the store.
    fn blocked_by(&mut self, blocker: &Blocker) {
        let _ = blocker;
    }
}

/// How to reach a store: the connection flags, named as `etcdctl` names them.
#[derive(Clone, Default)]
pub struct OpenOpts {
    /// `--events-dir` (file store): where `.fno/events.jsonl` lives.
    pub events_dir: Option<PathBuf>,
    /// `--etcd-cacert`, `--etcd-cert`, `--etcd-key`.
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// `--etcd-user`; the password comes from `$ETCD_PASSWORD` only, never a
    /// flag, so it cannot show in a process listing.
    pub user: Option<String>,
    pub password: Option<String>,
    /// `--timeout` (default 5 s): every store call answers within it.
    pub timeout: Option<Duration>,
    /// `--events-retention` (default 7 days).
    pub events_retention: Option<Duration>,
}

impl std::fmt::Debug for OpenOpts {
    // Hand-written so that the password never reaches a log or a panic message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOpts")
            .field("events_dir", &self.events_dir)
            .field("cacert", &self.cacert)
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("events_retention", &self.events_retention)
            .finish()
    }
}

/// `--timeout`'s default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// `--events-retention`'s default.
pub const DEFAULT_EVENTS_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// The verbs, over whichever store holds the claims: what every store can
/// do. What only some stores can do is a capability of its own, reached
/// through [`Store::leases`] and [`Store::fleet`], so that no store answers
/// a question it has no answer to with an empty default.
pub trait Store: Send {
    /// The store URL, for headers and `"store"` in JSON.
    fn url(&self) -> String;
    /// How a claim's own hazards are judged here (see
    /// [`crate::claims::census`](mod@crate::claims::census)): a store's keys are named by its layout
    /// and its leases decide liveness on every machine alike. The file
    /// store judges lockfiles.
    fn item_rules(&self) -> ItemRules {
        ItemRules::StoreKey
    }
    fn acquire(
        &self,
        key: &str,
        holder: &str,
        opts: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError>;
    fn release(&self, key: &str, holder: &str) -> Result<Fenced<ReleaseOutcome>, StoreError>;
    fn status(&self, key: &str) -> Result<Fenced<Status>, StoreError>;
    /// `operator`, when renewing on the holder's behalf, is recorded in the
    /// `claim_renewed` event.
    fn renew(
        &self,
        key: &str,
        holder: &str,
        ttl_ms: i64,
        operator: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError>;
    /// The tenure, on etcd, is the archived claim's: its fencing revision
    /// and the lease it had when it was read.
    fn force_release(
        &self,
        key: &str,
        opts: &ForceOpts,
    ) -> Result<Fenced<ForceOutcome>, StoreError>;
    /// Where the claim on `key` lives, as [`Listing`] names it in each
    /// item's `file` (a lockfile's path; the etcd key): how a face finds
    /// the row a verb it ran has changed.
    fn locate(&self, key: &str) -> PathBuf;
    /// Every claim, classified, with the hazards seen on the way (`list`).
    fn list(&self) -> Result<Listing, StoreError>;
    /// The first `n` claims in key order, listed as [`Store::list`] lists
    /// them, for a first screen that cannot wait for a big store's whole
    /// listing; `Ok(None)` where a full listing costs no more.
    fn list_head(&self, n: usize) -> Result<Option<Listing>, StoreError>;
    /// `list` plus the store-wide hazards that cost more to find (`doctor`).
    fn doctor(&self) -> Result<Listing, StoreError>;
    /// `doctor --fix`: remove what is provably abandoned, say what was
    /// left and why. A store whose leases end abandoned claims by
    /// themselves has nothing of its own to remove and says so
    /// ([`StoreError::Unsupported`]).
    fn repair(&self) -> Result<Vec<Fix>, StoreError>;
    /// The last `n` events, oldest first.
    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError>;
    /// A feed of changes from now on.
    fn changes(&self) -> Result<Box<dyn Changes>, StoreError>;

    /// A feed of changes after `revision` (the one a [`Listing`] was read
    /// at), so that nothing written between the listing and the feed's start
    /// is missed. A store without revisions starts from now.
    fn changes_after(&self, revision: Option<i64>) -> Result<Box<dyn Changes>, StoreError> {
        let _ = revision;
        self.changes()
    }

    /// Call `wake` whenever `key` may have changed, until the handle is
    /// dropped (`acquire --wait`, `run`). By default [`Store::changes`]
    /// filtered to the key, on a thread of its own: a change naming it, a
    /// resync or a reconnect wakes; other keys and events do not.
    fn watch_key(&self, key: &str, wake: Wake) -> Result<Box<dyn KeyWatch>, StoreError> {
        Ok(Box::new(wake::FeedWatch::start(
            self.changes()?,
            key.to_string(),
            wake,
        )))
    }

    /// The whole history of one of its events logs, browsed, searched and
    /// counted in bounded steps (the dashboard's events pane and timeline,
    /// `events --since`, "as of"). A log the store does not keep (a
    /// mirrored root's, on a file root) is [`StoreError::Unsupported`].
    fn history(
        &self,
        log: &crate::events::history::Log,
    ) -> Result<Box<dyn crate::events::history::History>, StoreError>;

    /// The events logs the store keeps, each named by the root it speaks
    /// for where there are several (several file roots keep one log each;
    /// hosts publishing into a store mirror one per root): what a face
    /// reads to answer for the whole store ("as of"). One store-wide log
    /// by default.
    fn logs(&self) -> Result<Vec<(Option<String>, crate::events::history::Log)>, StoreError> {
        Ok(vec![(None, crate::events::history::Log::Own)])
    }

    /// What keeps the store from being read as a normal one right now (a
    /// file root whose claims dir is no directory, or cannot be listed),
    /// for a face to say instead of an empty table. A store reached over a
    /// connection says when it cannot be reached through its feed.
    fn problem(&self) -> Option<crate::claims::root::RootProblem> {
        None
    }

    /// The stores this one speaks for as one, each named by its root
    /// (several file roots: a store of one root each), for a face that
    /// keeps one series per root (`metrics`). None: the store is one.
    fn parts(&self) -> Option<Vec<(String, &dyn Store)>> {
        None
    }

    /// The store's leases, where every claim lives on one (etcd): `None`
    /// where a claim is bound to a pid instead (the file store).
    fn leases(&self) -> Option<&dyn Leases> {
        None
    }

    /// The hosts publishing their file roots into this store (`claimtop
    /// publish`), where hosts can publish; `None` elsewhere.
    fn fleet(&self) -> Option<&dyn Fleet> {
        None
    }
}

/// A store whose claims live on leases, reached over a connection (etcd).
pub trait Leases {
    /// Keep the claim `tenure` names alive until the handle is dropped
    /// (`claimtop run`).
    fn keep_alive(&self, key: &str, tenure: &Tenure) -> Result<Box<dyn Kept>, StoreError>;

    /// Release only the tenure `revision` names (the fencing token acquire
    /// returned), so a holder whose lease ran out never ends a newer claim.
    fn release_fenced(
        &self,
        key: &str,
        holder: &str,
        revision: i64,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError>;

    /// What a header says about the store beyond its URL: the members
    /// answering, the leader, the current revision. An error when the store
    /// cannot be reached, which is how a face learns it is disconnected
    /// even while its watch is still waiting on a silent connection.
    fn info(&self) -> Result<StoreInfo, StoreError>;
}

/// A store hosts publish their file roots into (`claimtop publish`): the
/// hosts, their read-only copies, and requests carried to a host's
/// publisher, which acts on its own root.
pub trait Fleet {
    /// The hosts and what they published.
    fn state(&self) -> Result<fleet::FleetState, StoreError>;

    /// [`Fleet::state`] with each copy cut down to what counting and
    /// ageing it needs: its `"state"`, and its record's `"acquired_at"`
    /// (`claimtop metrics`, which reads the whole fleet at every scrape).
    fn brief_state(&self) -> Result<fleet::FleetState, StoreError> {
        self.state()
    }

    /// The publishing hosts and their roots, without their claims (what a
    /// mirrored event needs to say where it comes from). Counts are zero.
    fn hosts(&self) -> Result<Vec<fleet::HostInfo>, StoreError>;

    /// One published claim as its host's `list --json` prints it (None:
    /// not published now).
    fn item(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
    ) -> Result<Option<serde_json::Value>, StoreError>;

    /// Ask a publishing host to force-release `key` in its root `root_id`,
    /// waiting up to `wait` for its answer (its `force-release --json`
    /// object).
    fn ask_force_release(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
        opts: &ForceOpts,
        wait: Duration,
    ) -> Result<serde_json::Value, StoreError>;

    /// The last `n` events the publishing hosts mirrored, each with
    /// `"host"`, `"host_id"` and `"root"` added, oldest first.
    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError>;

    /// Remove host `host_id`'s record, its roots' copies and mirrored
    /// events (`fleet forget`), only while it is offline: decided in the
    /// same transaction as the delete, so a publisher that comes back
    /// meanwhile keeps everything.
    fn forget(&self, host_id: &str) -> Result<fleet::Forgot, StoreError>;
}

/// A cluster's state as a dashboard header shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    /// The endpoints the client was given, `a:1,b:2`.
    pub endpoints: String,
    /// The leader's member name (its client URL when it has no name), or
    /// None while there is no leader or the credentials may not ask.
    pub leader: Option<String>,
    /// The store's current revision.
    pub revision: i64,
}

/// Open the store a URL names.
pub fn open(url: &StoreUrl, opts: &OpenOpts) -> Result<Box<dyn Store>, StoreError> {
    match url {
        StoreUrl::File(dir) => Ok(Box::new(file::FileStore::new(crate::claims::Root {
            root: dir.clone(),
            events_dir: opts.events_dir.clone().or_else(|| Some(dir.clone())),
        }))),
        #[cfg(feature = "etcd")]
        StoreUrl::Etcd(target) => Ok(Box::new(etcd::EtcdStore::connect(target, opts)?)),
        #[cfg(not(feature = "etcd"))]
        StoreUrl::Etcd(_) => Err(StoreError::NoEtcdSupport),
    }
}

/// Open the claims roots a command line names: one root is a
/// [`file::FileStore`] (told `on_mutex` whenever an acquire waits on a
/// peer's recovery mutex), several are one [`multi::MultiStore`].
pub fn open_roots(
    roots: &crate::claims::Roots,
    on_mutex: Option<crate::claims::WaitHook>,
) -> Box<dyn Store> {
    if roots.is_several() {
        return Box::new(multi::MultiStore::new(roots.clone()));
    }
    let store = file::FileStore::new(roots.first().clone());
    match on_mutex {
        Some(hook) => Box::new(store.with_mutex_hook(hook)),
        None => Box::new(store),
    }
}
