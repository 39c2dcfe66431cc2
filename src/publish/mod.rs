//! `claimtop publish`: mirror local file roots into etcd, incrementally.
//!
//! The file roots stay the truth; etcd gets read-only copies (layout in
//! [`crate::store::etcd::layout`]) on the publisher's own lease, so a host that dies or
//! is cut off vanishes from the fleet within that lease's TTL. Rules:
//!
//! - Each root is followed by its mirror (`store::mirror`), the one
//!   classifier every face reads: one changed lockfile is one re-read and
//!   one etcd write, and a write happens only if what a reader sees changed
//!   (the state, the record or the parse error; the `why` words alone,
//!   which age with the clock, do not count).
//! - Every couple of seconds the mirror judges again what time changes (no
//!   file is read: pids and deadlines only), so transitions that change no
//!   file (a holder's pid dies, a TTL runs out) are published too; its slow
//!   full re-list repairs a lost notification.
//! - Connecting (at start, and after etcd came back) re-syncs: what etcd
//!   holds for this host is read, keys no longer true are deleted, the rest
//!   put on the current lease. Until a root's copies are all back, its
//!   owner key says `resyncing`, and readers show its last known copies:
//!   a host never reads as online with its claims missing. Events are
//!   keyed by log identity and byte offset and written create-if-absent,
//!   so a re-sync never duplicates one.
//! - Force-release requests under `requests/` are taken (so they can no
//!   longer be withdrawn), then carried out through the file protocol on
//!   this host, guard and audit included, and answered.
//! - Each root is published by one publisher (its owner key, see
//!   `store::etcd::owners`); several publishers on one machine each keep to
//!   their own roots.

use crate::claims::{now_ms, Root, Roots};
use crate::events::follow::Follower;
use crate::store::etcd::fleet::{HostRecord, RootOwner};
use crate::store::etcd::layout::{root_id, RootPlace};
pub use crate::store::etcd::PublishError;
use crate::store::etcd::{Core, EtcdStore};
use crate::store::file::feed::FeedOpts;
use crate::store::file::FileStore;
use crate::store::fleet::PublishedRoot;
use crate::store::mirror::judge::Judge;
use crate::store::mirror::Mirror;
use crate::store::{Change, Changes, Feed, StoreError};
use etcd_client::PutOptions;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod copies;
mod events;
mod identity;
mod serve;

/// How a publisher runs.
#[derive(Debug, Clone)]
pub struct PublishOpts {
    /// The host's address in the fleet.
    pub machine_id: String,
    pub hostname: String,
    /// The lease TTL: how soon a dead host drops out of the fleet.
    pub ttl_s: i64,
    /// How often the claims already read are judged again (pid, deadline).
    pub judge_every: Duration,
    /// How often every root is listed again from its files.
    pub tick: Duration,
    /// How often the host record's `last_seen_ms` is refreshed.
    pub last_seen_every: Duration,
    /// How often pending force-release requests are looked for.
    pub requests_every: Duration,
}

impl PublishOpts {
    pub fn new(machine_id: String, hostname: String, ttl_s: i64) -> PublishOpts {
        PublishOpts {
            machine_id,
            hostname,
            ttl_s,
            judge_every: Duration::from_secs(2),
            tick: Duration::from_secs(60),
            last_seen_every: Duration::from_secs(60),
            requests_every: Duration::from_millis(250),
        }
    }
}

/// Log levels, as the service prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// What the publisher has done, for its log and the figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Claim keys put or deleted.
    pub claim_writes: u64,
    pub hazard_writes: u64,
    /// Event lines written (create-if-absent transactions).
    pub event_writes: u64,
    /// Lockfile changes the notifications named.
    pub changes: u64,
    pub requests: u64,
    pub resyncs: u64,
}

impl Stats {
    pub fn writes(&self) -> u64 {
        self.claim_writes + self.hazard_writes + self.event_writes
    }
}

/// One root being published.
struct Published {
    root: Root,
    info: PublishedRoot,
    place: RootPlace,
    store: FileStore,
    mirror: Mirror,
    feed: Option<Box<dyn Changes>>,
    /// Claim key → fingerprint of what etcd holds for it, on our lease.
    claims: HashMap<String, String>,
    /// The hazards array as last written.
    hazards: Option<String>,
    events: Option<Follower>,
    /// Why the claims dir cannot be listed, as the owner key says it.
    unreadable: Option<String>,
    /// Taken, and its copies not all written back yet: the owner key says
    /// so, and readers show the root's last known copies meanwhile.
    resyncing: bool,
}

/// The publisher: call [`Publisher::run`] until stopped.
pub struct Publisher {
    core: Arc<Core>,
    /// The store's URL, for the log.
    url: String,
    /// Said which roots it publishes: once, when it first took them all.
    announced: bool,
    opts: PublishOpts,
    roots: Vec<Published>,
    lease: Option<i64>,
    /// The task keeping `lease` alive, and the flag it raises when lost.
    keeper: Option<tokio::task::JoinHandle<()>>,
    lost: Arc<AtomicBool>,
    stats: Stats,
    /// Requests carried out whose answers are not written yet: (request
    /// key, answer key, answer).
    answers: Vec<(Vec<u8>, String, String)>,
    /// When this publisher started: its pid is the one that took its roots
    /// only if that process ran by then.
    since_ms: i64,
}

/// Between two tries to reach etcd again.
const RECONNECT_PAUSE: Duration = Duration::from_secs(1);
/// Operations per transaction, under etcd's default limit of 128 (each claim
/// write is two: the claim and its last known twin).
const BATCH: usize = 100;
/// While etcd stays unreachable, how often that is said again.
const LOG_AGAIN: Duration = Duration::from_secs(60);
/// The longest one wait for file changes lasts.
const WAIT_SLICE: Duration = Duration::from_millis(100);

impl Publisher {
    pub fn new(store: &EtcdStore, roots: &Roots, opts: PublishOpts) -> Publisher {
        let core = Arc::clone(store.core());
        let roots = roots
            .as_slice()
            .iter()
            .map(|root| {
                let canonical =
                    std::fs::canonicalize(&root.root).unwrap_or_else(|_| root.root.clone());
                let canonical = identity::root_identity(&canonical);
                let info = PublishedRoot::new(
                    root_id(&canonical),
                    canonical.to_string_lossy().into_owned(),
                );
                // Lockfiles and entries: the log has its own follower here,
                // keyed by offset.
                let feed = FeedOpts {
                    follow_log: false,
                    ..FeedOpts::default()
                };
                let store = FileStore::new(root.clone()).with_feed(feed);
                Published {
                    root: root.clone(),
                    place: core.layout.root_place(&opts.machine_id, &info.id),
                    info,
                    mirror: Mirror::new(&store, Some(Judge::local()), now_ms()),
                    store,
                    feed: None,
                    claims: HashMap::new(),
                    hazards: None,
                    events: None,
                    unreadable: None,
                    resyncing: false,
                }
            })
            .collect::<Vec<Published>>();
        // Two paths to one directory are one root.
        let mut seen = std::collections::HashSet::new();
        let mut roots = roots;
        roots.retain(|r| seen.insert(r.info.id.clone()));
        Publisher {
            core,
            url: crate::store::Claims::url(store),
            announced: false,
            opts,
            roots,
            lease: None,
            keeper: None,
            lost: Arc::new(AtomicBool::new(false)),
            stats: Stats::default(),
            answers: Vec::new(),
            since_ms: now_ms(),
        }
    }

    pub fn roots(&self) -> Vec<PublishedRoot> {
        self.roots.iter().map(|r| r.info.clone()).collect()
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Publish until `stop` is set; then revoke the lease, so the host goes
    /// offline at once, and record when it was last seen. Ends early, with
    /// nothing published, if another live publisher holds one of the roots.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        log: &mut dyn FnMut(Level, &str),
    ) -> Result<Stats, PublishError> {
        for r in &mut self.roots {
            match r.store.changes(None) {
                Ok(feed) => r.feed = Some(feed),
                Err(e) => log(
                    Level::Warn,
                    &format!(
                        "root={} cannot watch ({e}); it is re-listed every tick only",
                        r.info.path
                    ),
                ),
            }
        }
        let mut next_try = Instant::now();
        let mut last_said: Option<Instant> = None;
        let mut last_tick = Instant::now();
        let mut last_judged = Instant::now();
        let mut last_seen = Instant::now();
        let mut last_requests = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            self.wait_for_changes();
            if self.lease.is_none() {
                if Instant::now() < next_try {
                    continue;
                }
                match self.connect(log) {
                    Ok(()) => {
                        last_said = None;
                        last_tick = Instant::now();
                        last_seen = Instant::now();
                    }
                    Err(e @ PublishError::RootTaken { .. }) => {
                        self.shut_down(log);
                        return Err(e);
                    }
                    Err(e) => {
                        // The first failure and then one line a minute: an
                        // etcd down for an hour must not flood the journal.
                        let quiet = last_said.is_some_and(|t: Instant| t.elapsed() < LOG_AGAIN);
                        if !quiet {
                            log(
                                Level::Warn,
                                &format!("etcd unreachable, retrying every second: {e}"),
                            );
                            last_said = Some(Instant::now());
                        }
                        self.lease = None;
                        next_try = Instant::now() + RECONNECT_PAUSE;
                        continue;
                    }
                }
            }
            let step = (|| -> Result<(), StoreError> {
                self.check_lease()?;
                let now = now_ms();
                if last_tick.elapsed() >= self.opts.tick {
                    last_tick = Instant::now();
                    for r in &mut self.roots {
                        r.mirror.relist_soon();
                    }
                } else if last_judged.elapsed() >= self.opts.judge_every {
                    last_judged = Instant::now();
                    for r in &mut self.roots {
                        r.mirror.tick(now);
                    }
                }
                for i in 0..self.roots.len() {
                    self.publish_changes(i, now)?;
                    self.publish_events(i, log)?;
                }
                if last_requests.elapsed() >= self.opts.requests_every {
                    last_requests = Instant::now();
                    for i in 0..self.roots.len() {
                        self.serve_requests(i, log)?;
                    }
                }
                if last_seen.elapsed() >= self.opts.last_seen_every {
                    last_seen = Instant::now();
                    self.put_host_record()?;
                }
                Ok(())
            })();
            if let Err(e) = step {
                log(
                    Level::Warn,
                    &format!("lost etcd ({e}); re-syncing once it answers"),
                );
                self.lease = None;
                next_try = Instant::now() + RECONNECT_PAUSE;
            }
        }
        self.shut_down(log);
        Ok(self.stats)
    }

    /// Block until a root's files change, at most [`WAIT_SLICE`]; collect
    /// the keys every root's feed names.
    fn wait_for_changes(&mut self) {
        let mut first = true;
        for r in &mut self.roots {
            let Some(feed) = r.feed.as_mut() else {
                continue;
            };
            let mut timeout = if first { WAIT_SLICE } else { Duration::ZERO };
            first = false;
            loop {
                match feed.next(timeout) {
                    Ok(Some(c)) => {
                        if matches!(c, Change::Claim { .. }) {
                            self.stats.changes += 1;
                        }
                        // Events and the like: the log's own follower here.
                        let _ = r.mirror.apply(c);
                    }
                    Ok(None) => break,
                    Err(_) => {
                        r.feed = None;
                        break;
                    }
                }
                timeout = Duration::ZERO;
            }
        }
        if self.roots.iter().all(|r| r.feed.is_none()) {
            std::thread::sleep(WAIT_SLICE);
        }
    }

    /// Grant a lease, take every root (or refuse, if a live publisher holds
    /// one), say the host is here, and re-sync every root.
    fn connect(&mut self, log: &mut dyn FnMut(Level, &str)) -> Result<(), PublishError> {
        let ttl = self.opts.ttl_s;
        let lease = self
            .core
            .conn
            .call(|mut c| async move { c.lease_grant(ttl, None).await })?
            .id();
        let mut previous = Vec::new();
        for i in 0..self.roots.len() {
            // Taken as resyncing: the host must never read as online with
            // its copies gone (a lease lost in a partition took them) or
            // half written back. Each root is said to be published only
            // once all of its copies are on this lease.
            self.roots[i].resyncing = true;
            let me = self.owner(lease, None, i);
            match self
                .core
                .own_root(&self.opts.machine_id, &self.roots[i].info, &me)
            {
                Ok(old) => previous.extend(old),
                Err(e) => {
                    // The roots taken so far go with the lease.
                    let _ = self
                        .core
                        .conn
                        .call(|mut c| async move { c.lease_revoke(lease).await });
                    return Err(e);
                }
            }
            self.roots[i].unreadable = None;
        }
        // Said only now: a root another live publisher holds is refused
        // above, and this one never claims to publish it.
        if !self.announced {
            self.announced = true;
            for r in &self.roots {
                log(
                    Level::Info,
                    &format!(
                        "publishing root={} root_id={} host_id={} store={}",
                        r.info.path, r.info.id, self.opts.machine_id, self.url
                    ),
                );
            }
        }
        self.lease = Some(lease);
        self.start_keep_alive(lease);
        self.put_host_record()?;
        let now = now_ms();
        for i in 0..self.roots.len() {
            self.sync_root(i, now)?;
            self.roots[i].resyncing = false;
            let me = self.owner(lease, self.roots[i].unreadable.clone(), i);
            let id = self.roots[i].info.id.clone();
            self.core.put_root_owner(&self.opts.machine_id, &id, &me)?;
        }
        // A previous run's lease (killed, or cut off): everything it carried
        // for these roots is on ours now, so ending it removes nothing still
        // true.
        previous.sort_unstable();
        previous.dedup();
        for old in previous {
            let _ = self
                .core
                .conn
                .call(|mut c| async move { c.lease_revoke(old).await });
        }
        self.stats.resyncs += 1;
        let claims: usize = self.roots.iter().map(|r| r.claims.len()).sum();
        log(
            Level::Info,
            &format!(
                "connected endpoints={} lease={lease} ttl_s={ttl} roots={} claims={claims} writes={}",
                self.core.conn.endpoints(),
                self.roots.len(),
                self.stats.writes()
            ),
        );
        Ok(())
    }

    /// Root `i`'s owner key as this publisher writes it.
    fn owner(&self, lease: i64, unreadable: Option<String>, i: usize) -> RootOwner {
        RootOwner {
            pid: std::process::id(),
            lease,
            since_ms: self.since_ms,
            path: self.roots[i].info.path.clone(),
            unreadable,
            resyncing: self.roots[i].resyncing,
        }
    }

    fn put_host_record(&self) -> Result<(), StoreError> {
        let rec = HostRecord {
            machine_id: self.opts.machine_id.clone(),
            hostname: self.opts.hostname.clone(),
            roots: self.roots(),
            last_seen_ms: now_ms(),
            ttl_s: self.opts.ttl_s,
            pid: std::process::id(),
        };
        self.core.merge_host_record(&rec)
    }

    /// Keep `lease` alive from the connection's runtime, whatever the
    /// main loop is busy with (a first sync of thousands of keys can take
    /// longer than the TTL). The flag says when it is lost: etcd said the
    /// lease is gone, or nothing confirmed it for longer than its TTL.
    fn start_keep_alive(&mut self, lease: i64) {
        if let Some(old) = self.keeper.take() {
            old.abort();
        }
        let ttl = Duration::from_secs(self.opts.ttl_s.max(3) as u64);
        let every = ttl / 3;
        let lost = Arc::new(AtomicBool::new(false));
        self.lost = Arc::clone(&lost);
        let mut client = self.core.conn.client();
        self.keeper = Some(self.core.conn.runtime().spawn(async move {
            let mut confirmed = tokio::time::Instant::now();
            loop {
                let renewed = tokio::time::timeout(every, async {
                    let (mut keeper, mut stream) = client.lease_keep_alive(lease).await?;
                    keeper.keep_alive().await?;
                    Ok::<_, etcd_client::Error>(stream.message().await?.map(|m| m.ttl()))
                })
                .await;
                match renewed {
                    Ok(Ok(Some(left))) if left > 0 => confirmed = tokio::time::Instant::now(),
                    Ok(Ok(_)) => break,
                    // Unreachable for now: fine while the lease may still run.
                    _ if confirmed.elapsed() < ttl => {}
                    _ => break,
                }
                tokio::time::sleep(every).await;
            }
            lost.store(true, Ordering::SeqCst);
        }));
    }

    /// An error once the keep-alive has given the lease up.
    fn check_lease(&self) -> Result<(), StoreError> {
        if !self.lost.load(Ordering::SeqCst) {
            return Ok(());
        }
        Err(StoreError::Backend {
            store: format!("etcd at {}", self.core.conn.endpoints()),
            detail: format!(
                "the publisher's lease {} expired or could not be renewed",
                self.lease.unwrap_or(0)
            ),
        })
    }

    /// Put `value` at `key` on the publisher's lease.
    fn put(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let lease = self.lease.unwrap_or(0);
        self.core.conn.call(|mut c| {
            let (key, value) = (key.to_string(), value.to_string());
            async move {
                c.put(key, value, Some(PutOptions::new().with_lease(lease)))
                    .await
            }
        })?;
        Ok(())
    }

    fn shut_down(&mut self, log: &mut dyn FnMut(Level, &str)) {
        if let Some(k) = self.keeper.take() {
            k.abort();
        }
        if let Some(lease) = self.lease.take() {
            let _ = self.put_host_record();
            let revoked = self
                .core
                .conn
                .call(|mut c| async move { c.lease_revoke(lease).await });
            if let Err(e) = revoked {
                log(
                    Level::Warn,
                    &format!(
                        "could not revoke lease {lease} ({e}); the host drops out when it expires"
                    ),
                );
            }
        }
        let s = self.stats;
        log(
            Level::Info,
            &format!(
                "stopped changes={} claim_writes={} hazard_writes={} event_writes={} requests={} resyncs={}",
                s.changes, s.claim_writes, s.hazard_writes, s.event_writes, s.requests, s.resyncs
            ),
        );
    }
}
