//! Where `claimtop publish` writes: a store that keeps each host's copies
//! of its roots (claims, last known twins, hazards, mirrored events), hands
//! it the force-release requests asked of it, and forgets everything it
//! wrote on its session once that session ends (the host goes offline at
//! once, or within the session's TTL when it dies). The publisher keeps its
//! loop, its fingerprints, its request service and its words; a store that
//! can carry a fleet implements [`Sink`] in one file (etcd's is
//! `store::etcd::sink`).

use super::fleet::PublishedRoot;
use super::{StoreError, Wake};
use crate::claims::ForceOpts;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why a publisher cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("root {root} is already published by pid {pid}; stop that publisher first, or publish other roots")]
    RootTaken { root: String, pid: u32 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The host record, `PREFIX/hosts/<machine>/host` (no lease).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    pub machine_id: String,
    pub hostname: String,
    pub roots: Vec<PublishedRoot>,
    pub last_seen_ms: i64,
    pub ttl_s: i64,
    pub pid: u32,
}

/// The owner key of one published root, `PREFIX/hosts/<machine>/owners/<root-id>`,
/// on its publisher's lease.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RootOwner {
    pub pid: u32,
    pub lease: i64,
    /// When the publisher took the root (epoch ms): a pid that started
    /// later is not the one that took it.
    pub since_ms: i64,
    pub path: String,
    /// Why the root's claims dir cannot be listed; None while it can.
    #[serde(default)]
    pub unreadable: Option<String>,
    /// Its publisher has taken the root and is writing its copies again
    /// (after a start or a reconnect): until it is done, readers show the
    /// root as they show an offline one, its last known copies, never the
    /// copies half written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resyncing: bool,
}

/// A force-release asked of a publisher, `.../<root-id>/requests/<id>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetRequest {
    pub key: String,
    pub expect_holder: Option<String>,
    pub expect_acquired_at: Option<i64>,
    pub operator: Option<String>,
    #[serde(default)]
    pub allow_live: bool,
    pub at_ms: i64,
    /// Set by the publisher, in one transaction with finding the request
    /// untaken, before it acts: from then on the request cannot be
    /// withdrawn, and it is answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken: Option<Taken>,
}

/// Which publisher took a request, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taken {
    pub pid: u32,
    pub at_ms: i64,
}

impl FleetRequest {
    pub fn force_opts(&self) -> ForceOpts {
        ForceOpts {
            expect_holder: self.expect_holder.clone(),
            expect_acquired_at: self.expect_acquired_at,
            operator: self.operator.clone(),
            allow_live: self.allow_live,
        }
    }
}

/// A published root's id: 16 hex digits of FNV-1a over its path (canonical,
/// and resolved through bind mounts by the publisher), so a restart (or a
/// second publisher of the same root) lands in the same place, and nothing
/// in the id needs escaping in a key.
pub fn root_id(canonical: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    format!("{:016x}", fnv1a(canonical.as_os_str().as_bytes()))
}

/// FNV-1a: stable across builds and Rust releases, unlike std's hasher, so
/// ids derived from it mean the same to every claimtop.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One small key per published root, `<root-id>/summary` (no session, like
/// the last known twins: it still says what an offline host last held):
/// what a reader of the whole fleet needs of the root without reading its
/// copies. The publisher writes it only when it changes, at most once a
/// second, from the very rows it publishes, so once it is written it
/// agrees with a count of the copies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootSummary {
    /// Claims published, by state word (`live`, `suspect`, ...).
    pub counts: BTreeMap<String, usize>,
    /// The earliest `acquired_at` among the claims of each state that
    /// have a record (ages in a scrape).
    #[serde(default)]
    pub oldest_acquired_ms: BTreeMap<String, i64>,
    /// The root's hazards by kind name, and their number.
    #[serde(default)]
    pub hazards: BTreeMap<String, usize>,
    #[serde(default)]
    pub hazards_total: usize,
    /// When what it says last changed (epoch ms).
    #[serde(default)]
    pub last_change_ms: i64,
    /// Why its claims dir cannot be listed (its counts are then the last
    /// ones it could say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

impl RootSummary {
    /// How many claims it counts.
    pub fn total(&self) -> usize {
        self.counts.values().sum()
    }

    /// The same root, its time of change aside.
    pub fn same_as(&self, other: &RootSummary) -> bool {
        RootSummary {
            last_change_ms: 0,
            ..self.clone()
        } == RootSummary {
            last_change_ms: 0,
            ..other.clone()
        }
    }
}

/// The fleet as its summaries tell it: each host with its counts (as
/// [`crate::store::Fleet::state`] counts them), and each root's summary,
/// read in O(hosts) requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetSummary {
    pub hosts: Vec<super::fleet::HostInfo>,
    pub roots: Vec<RootSummaryAt>,
}

/// One root's summary, where it is, and how a reader takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct RootSummaryAt {
    pub host_id: String,
    pub root: PublishedRoot,
    /// Its claims are last known (its host, or the root, is offline): its
    /// counts are said as `last_known`, never as live.
    pub last_known: bool,
    pub summary: RootSummary,
}

/// One write of a root's copy. A claim's copy is written with its last
/// known twin (no session: what readers show once the host is gone), in
/// one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyOp {
    /// `item` is the claim as the host's own `list --json` prints it.
    Put {
        key: String,
        item: String,
    },
    Delete {
        key: String,
    },
}

/// What the sink holds of one claim of a root, read at a re-sync.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldCopy {
    pub key: String,
    /// The copy, when it is on the current session and reads as JSON;
    /// None when it must be written again (an earlier session's, a last
    /// known twin alone, unreadable).
    pub item: Option<serde_json::Value>,
}

/// How far a root's events log is mirrored already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mirrored {
    /// Up to the line that ends just before this byte of this very log.
    Upto(u64),
    /// Lines of other logs only (this one replaced them: a rotation).
    OtherLogs,
    /// Nothing: the root's first publish.
    Nothing,
}

/// A force-release request found for one of the host's roots.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub root_id: String,
    /// The request, or why it does not read as one.
    pub body: Result<FleetRequest, String>,
    /// Where the sink keeps it, and its version when read: taking it
    /// succeeds only if it is still exactly that version.
    pub token: Vec<u8>,
    pub version: i64,
}

/// A store a publisher writes its host's copies into. Every method but
/// [`Sink::begin`] works on the session `begin` opened.
pub trait Sink: Send {
    /// Where it writes, for the log.
    fn describe(&self) -> String;

    /// Open a session that ends `ttl_s` after the store last heard of
    /// it, kept alive from here on whatever the publisher is busy with.
    /// An earlier session of this sink is left to [`Sink::settle`]. The
    /// session's id (owner keys name it).
    fn begin(&mut self, ttl_s: i64) -> Result<i64, StoreError>;

    /// An error once the session is lost (it expired, or could not be
    /// kept alive).
    fn alive(&self) -> Result<(), StoreError>;

    /// Take `root` for `me` on the session: refused, naming the pid, while
    /// a live publisher holds it. The session it is taken from is ended by
    /// [`Sink::settle`].
    fn own(&mut self, root: &PublishedRoot, me: &RootOwner) -> Result<(), PublishError>;

    /// Say again what the owner of `root_id` knows of it.
    fn say_owner(&mut self, root_id: &str, me: &RootOwner) -> Result<(), StoreError>;

    /// End the sessions the roots were taken from (their copies are all
    /// on this session now). Best effort: they expire anyway.
    fn settle(&mut self);

    /// Write the host record, merged with the roots other publishers of
    /// this machine put in it.
    fn host(&mut self, rec: &HostRecord) -> Result<(), StoreError>;

    /// Every claim the sink holds for `root_id` (re-sync).
    fn held(&mut self, root_id: &str) -> Result<Vec<HeldCopy>, StoreError>;

    /// Write `ops` for `root_id` in as few transactions as the store takes
    /// (`written` hears how many went through in each).
    fn write(
        &mut self,
        root_id: &str,
        ops: &[CopyOp],
        written: &mut dyn FnMut(usize),
    ) -> Result<(), StoreError>;

    /// Put `root_id`'s hazards (one JSON array) on the session.
    fn hazards(&mut self, root_id: &str, text: &str) -> Result<(), StoreError>;

    /// Put `root_id`'s summary (kept once the session ends).
    fn summary(&mut self, root_id: &str, summary: &RootSummary) -> Result<(), StoreError>;

    /// How far `root_id`'s log `log` (its identity) is mirrored.
    fn mirrored(&mut self, root_id: &str, log: &str) -> Result<Mirrored, StoreError>;

    /// Mirror one line of `root_id`'s log `log` starting at byte `offset`,
    /// unless it is there already: a line is written once.
    fn append_event(
        &mut self,
        root_id: &str,
        log: &str,
        offset: u64,
        text: &str,
    ) -> Result<(), StoreError>;

    /// The requests for `root_id` that arrived (or changed) since the last
    /// call; every one waiting at the first call.
    fn requests(&mut self, root_id: &str) -> Result<Vec<Request>, StoreError>;

    /// Call `wake` whenever a request arrives for [`Sink::requests`] to
    /// hand over, so a publisher can sleep until then instead of asking on
    /// a timer. A sink that never calls it is asked at the publisher's
    /// slow tick (every couple of seconds).
    fn wake_on_request(&mut self, _wake: Wake) {}

    /// Take `req` by writing `taken` over it, only if it is still as it
    /// was read (a requester that gave up withdrew it).
    fn take(&mut self, req: &Request, taken: &FleetRequest) -> Result<bool, StoreError>;

    /// Answer `req` with `body`, deleting it, in one transaction.
    fn answer(&mut self, req: &Request, body: &str) -> Result<(), StoreError>;

    /// End the session: everything on it goes at once.
    fn end(&mut self) -> Result<(), StoreError>;
}
