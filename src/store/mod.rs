//! The store seam: the verbs over one interface, with a room per store.
//!
//! Two stores keep claims: the file store (the seed's lockfiles under a root,
//! [`file::FileStore`]) and, with the `etcd` feature, etcd (`etcd::EtcdStore`).
//! Both answer with the core's own outcome types, so every face words them
//! once; what etcd knows beyond a lockfile (the fencing revision and the
//! lease) rides beside the outcome in a [`Tenure`], and reaches JSON only as
//! ADDED fields (`"revision"`, `"lease"` on a record; `"store"` on a list).
//!
//! # How a face uses it
//!
//! 1. Parse `--store` (else `$FNO_CLAIMS_STORE`, else `file:` + ROOT) with
//!    [`StoreUrl::parse`], then [`open`] it with the connection flags in
//!    [`OpenOpts`]. A build without the `etcd` feature answers an `etcd://`
//!    URL with [`StoreError::NoEtcdSupport`], which says so in words.
//! 2. Call the verbs on the returned `Box<dyn Store>`; a face never asks which
//!    store it holds. Outcomes are the `claims::*Outcome` types it already
//!    prints; [`Fenced::tenure`] is `None` on the file store.
//! 3. JSON: print what it prints today, then pass the record object through
//!    [`Tenure::extend_record`] (and a list through [`Listing::to_json`]),
//!    which adds the etcd fields and changes nothing on the file store.
//! 4. The dashboard takes [`Store::changes`]: one feed of [`Change`]s
//!    (on a file root its one watcher, `file::feed`; on etcd one resumable
//!    watch) that a thread drains into the face's own messages; the face
//!    re-reads what a change names, and re-lists everything on
//!    [`Change::Resync`].
//! 5. `acquire --wait` and `claimtop run` take [`Store::watch_key`]: a
//!    wake-up whenever one key may have changed (the change feed filtered
//!    to the key, plus, on a file root, the exit of a local holder's pid). `crate::claims::wait` drives the
//!    wait and the hold with nothing but these verbs: a hold renews a TTL
//!    claim itself, or keeps a lease alive with [`Store::keep_alive`] where
//!    the store has leases, and releases with [`Store::release_fenced`], so
//!    a `run` whose claim expired never ends a newer one.
//!
//! Everything is synchronous: the etcd store owns its own small tokio runtime
//! and bounds every call by its `--timeout`, so no face needs async.

pub mod file;
pub mod fleet;
pub mod fs_events;
pub mod item_hazards;
pub mod mirror;
pub mod url;
pub mod wake;

#[cfg(feature = "etcd")]
pub mod etcd;

use crate::claims::wait::Blocker;
use crate::claims::{
    AcquireOpts, AcquireOutcome, ClaimError, ForceOpts, ForceOutcome, ReleaseOutcome, RenewOutcome,
    Status, Sweep,
};
use crate::events::tail::{Event, Line};
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use url::{StoreUrl, StoreUrlError};

/// What can go wrong below the seam. Protocol refusals stay [`ClaimError`];
/// the rest is about reaching the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error(transparent)]
    Url(#[from] StoreUrlError),
    #[error("this claimtop was built without etcd support (rebuild with `--features etcd`)")]
    NoEtcdSupport,
    /// No answer within `--timeout`: the endpoints are named so an operator
    /// knows which cluster did not answer.
    #[error("etcd at {endpoints} did not answer within {}: {detail}", crate::claims::human_ms(.after.as_millis() as i64))]
    Unreachable {
        endpoints: String,
        after: Duration,
        detail: String,
    },
    /// etcd answered with an error (auth, permission, NOSPACE...).
    #[error("etcd at {endpoints}: {detail}")]
    Etcd { endpoints: String, detail: String },
    /// Claims on etcd live only as long as their lease: there is no pid
    /// liveness across machines, so a claim without a TTL would be forever.
    #[error("a claim on etcd needs a TTL (--ttl): its lease is the only thing that ends it if the holder dies")]
    TtlRequired,
    /// A bad connection setting (TLS files, a user without a password...).
    #[error("{0}")]
    Config(String),
    /// A request to a publishing host could not be carried out: the host
    /// is unknown, offline, did not answer in time, or no longer publishes
    /// the claim. The words name the host.
    #[error("{0}")]
    Host(String),
    /// The feed's store watch cannot go on (the store was dropped).
    #[error("the change feed has ended")]
    FeedClosed,
}

/// What etcd adds to a claim: the fencing token and the lease keeping it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tenure {
    /// The key's create_revision: strictly increasing across tenures of one
    /// key, so work guarded by the claim can refuse an older holder's writes.
    pub revision: i64,
    pub lease: LeaseInfo,
}

/// A claim's lease as `"lease"` in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "LeaseJson")]
pub struct LeaseInfo {
    pub id: i64,
    /// The TTL the lease was granted with.
    pub ttl_s: i64,
    /// Seconds left before etcd deletes the key unless it is kept alive.
    pub remaining_s: i64,
}

impl LeaseInfo {
    /// The id as etcdctl prints and takes it (`etcdctl lease timetolive`):
    /// lower-case hex, no prefix. The one spelling every text output uses.
    pub fn id_hex(&self) -> String {
        lease_hex(self.id)
    }
}

/// A lease id as etcdctl spells it (`lease %016x granted`, Go's `%016x` of
/// the int64), so it can be pasted into `etcdctl lease timetolive`.
pub fn lease_hex(id: i64) -> String {
    if id < 0 {
        format!("-{:015x}", id.unsigned_abs())
    } else {
        format!("{id:016x}")
    }
}

/// `"lease"` as JSON: the numeric `id` scripts already read, and `id_hex`
/// beside it, since ids run past 2^53 and a reader that parses numbers as
/// doubles (jq 1.6, JavaScript) rounds them to another lease.
#[derive(Serialize)]
struct LeaseJson {
    id: i64,
    id_hex: String,
    ttl_s: i64,
    remaining_s: i64,
}

impl From<LeaseInfo> for LeaseJson {
    fn from(l: LeaseInfo) -> LeaseJson {
        LeaseJson {
            id: l.id,
            id_hex: l.id_hex(),
            ttl_s: l.ttl_s,
            remaining_s: l.remaining_s,
        }
    }
}

impl Tenure {
    /// Add `"revision"` and `"lease"` to a RECORD object (the additive JSON
    /// of the contract); anything but an object is left as it is.
    pub fn extend_record(tenure: Option<&Tenure>, record: &mut Value) {
        let (Some(t), Some(obj)) = (tenure, record.as_object_mut()) else {
            return;
        };
        obj.insert("revision".into(), Value::from(t.revision));
        obj.insert(
            "lease".into(),
            serde_json::to_value(t.lease).unwrap_or(Value::Null),
        );
    }
}

/// A verb's outcome, plus its tenure when the store has one.
#[derive(Debug, Clone, PartialEq)]
pub struct Fenced<T> {
    pub outcome: T,
    /// `None` on the file store, and on etcd when no claim is held.
    pub tenure: Option<Tenure>,
}

impl<T> Fenced<T> {
    pub fn plain(outcome: T) -> Fenced<T> {
        Fenced {
            outcome,
            tenure: None,
        }
    }
}

/// A hazard of a store whose kind the file sweep does not know (the etcd
/// ones). Same JSON shape as [`crate::claims::Hazard`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreHazard {
    pub kind: &'static str,
    pub path: String,
    pub detail: String,
}

/// `list`: the file sweep's shape, plus per-claim tenures and store hazards.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// On etcd, `root` is the store URL and every `file` is the etcd key.
    pub sweep: Sweep,
    /// Parallel to `sweep.claims`: empty on the file store.
    pub tenures: Vec<Option<Tenure>>,
    pub store_hazards: Vec<StoreHazard>,
    /// The store URL, shown as `"store"` (absent on the file store, whose
    /// JSON is kept byte for byte).
    pub store: Option<String>,
    /// The store revision the listing was read at (etcd), from which a watch
    /// resumes without missing a change.
    pub revision: Option<i64>,
}

impl Listing {
    pub fn of_sweep(sweep: Sweep) -> Listing {
        Listing {
            sweep,
            tenures: Vec::new(),
            store_hazards: Vec::new(),
            store: None,
            revision: None,
        }
    }

    /// `list --json`: exactly the sweep's JSON on the file store; on etcd the
    /// same with `"store"`, the tenure fields and the store hazards added.
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::to_value(&self.sweep).unwrap_or(Value::Null);
        let Some(obj) = v.as_object_mut() else {
            return v;
        };
        if let Some(Value::Array(items)) = obj.get_mut("claims") {
            for (item, tenure) in items.iter_mut().zip(&self.tenures) {
                if let Some(record) = item.get_mut("record") {
                    Tenure::extend_record(tenure.as_ref(), record);
                }
            }
        }
        if let Some(Value::Array(hazards)) = obj.get_mut("hazards") {
            hazards.extend(
                self.store_hazards
                    .iter()
                    .filter_map(|h| serde_json::to_value(h).ok()),
            );
        }
        if let Some(store) = &self.store {
            obj.insert("store".into(), Value::from(store.as_str()));
        }
        v
    }
}

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

/// The verbs, over whichever store holds the claims.
pub trait Store: Send {
    /// The store URL, for headers and `"store"` in JSON.
    fn url(&self) -> String;
    /// Does every claim here live on a lease (and so need a TTL)? Asked
    /// before anything is started on a claim's behalf, so `run` can refuse
    /// a TTL-less claim before it forks CMD.
    fn leased(&self) -> bool {
        false
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
    /// Every claim, classified, with the hazards seen on the way (`list`).
    fn list(&self) -> Result<Listing, StoreError>;
    /// `list` plus the store-wide hazards that cost more to find (`doctor`).
    fn doctor(&self) -> Result<Listing, StoreError>;
    /// The last `n` events, oldest first.
    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError>;
    /// A feed of changes from now on.
    fn changes(&self) -> Result<Box<dyn Changes>, StoreError>;

    /// Release only the tenure `revision` names (the fencing token acquire
    /// returned), where the store can fence; elsewhere a plain release.
    fn release_fenced(
        &self,
        key: &str,
        holder: &str,
        revision: i64,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        let _ = revision;
        self.release(key, holder)
    }

    /// Keep the claim `tenure` names alive until the handle is dropped
    /// (`claimtop run`). Only a store with leases can; the file store binds
    /// a claim to a pid instead, and says so.
    fn keep_alive(&self, key: &str, tenure: &Tenure) -> Result<Box<dyn Kept>, StoreError> {
        let _ = (key, tenure);
        Err(StoreError::Config(format!(
            "{} keeps no leases: bind the claim to a pid instead",
            self.url()
        )))
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

    /// The hosts publishing their file roots into this store, and what they
    /// published (`claimtop publish`); `None` where no host can publish.
    fn fleet(&self) -> Result<Option<fleet::Fleet>, StoreError> {
        Ok(None)
    }

    /// One published claim as its host's `list --json` prints it (None:
    /// not published now).
    fn fleet_item(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        let _ = (host_id, root_id, key);
        Ok(None)
    }

    /// Ask a publishing host to force-release `key` in its root `root_id`,
    /// waiting up to `wait` for its answer (its `force-release --json`
    /// object). A store nobody publishes into has no host to ask.
    fn ask_host_force_release(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
        opts: &ForceOpts,
        wait: Duration,
    ) -> Result<serde_json::Value, StoreError> {
        let _ = (root_id, opts, wait);
        Err(StoreError::Host(format!(
            "this store has no publishing hosts: nobody to ask about {key} on {host_id}"
        )))
    }

    /// The last `n` events the publishing hosts mirrored, each with
    /// `"host"`, `"host_id"` and `"root"` added, oldest first.
    fn fleet_events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        let _ = n;
        Ok(Vec::new())
    }

    /// The publishing hosts and their roots, without their claims (what a
    /// mirrored event needs to say where it comes from). Counts are zero.
    fn fleet_hosts(&self) -> Result<Vec<fleet::HostInfo>, StoreError> {
        Ok(Vec::new())
    }

    /// The lockfile root, on the file store only. Not for the verbs (they
    /// all go through this trait): `doctor --fix`, `events` and `metrics`
    /// on a file store work on claims roots (several at once, repairs
    /// under the root), which a store URL does not name.
    fn file_root(&self) -> Option<&crate::claims::Root> {
        None
    }

    /// What a header says about the store beyond its URL: the members
    /// answering, the leader, the current revision. `Ok(None)` on a store
    /// that has none of these (the file store); an error when the store
    /// cannot be reached, which is how a face learns it is disconnected
    /// even while its watch is still waiting on a silent connection.
    fn info(&self) -> Result<Option<StoreInfo>, StoreError> {
        Ok(None)
    }

    /// The first `n` claims in key order, listed as [`Store::list`] lists
    /// them, for a first screen that cannot wait for every page of a big
    /// store; `Ok(None)` where a full listing costs no more.
    fn list_head(&self, n: usize) -> Result<Option<Listing>, StoreError> {
        let _ = n;
        Ok(None)
    }

    /// A feed of changes after `revision` (the one a [`Listing`] was read
    /// at), so that nothing written between the listing and the feed's start
    /// is missed. A store without revisions starts from now.
    fn changes_after(&self, revision: Option<i64>) -> Result<Box<dyn Changes>, StoreError> {
        let _ = revision;
        self.changes()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_object_carries_its_id_in_hex_beside_the_number() {
        let t = Tenure {
            revision: 9,
            lease: LeaseInfo {
                id: 8_327_897_000_573_213_961,
                ttl_s: 60,
                remaining_s: 59,
            },
        };
        let mut record = serde_json::json!({"key": "k"});
        Tenure::extend_record(Some(&t), &mut record);
        assert_eq!(
            record["lease"],
            serde_json::json!({
                "id": 8_327_897_000_573_213_961_i64,
                "id_hex": "7392a232ed351d09",
                "ttl_s": 60,
                "remaining_s": 59,
            })
        );
        // etcdctl pads to 16 digits: a small id is still pasteable.
        assert_eq!(lease_hex(0x1a), "000000000000001a");
    }
}
