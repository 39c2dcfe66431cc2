//! `claimtop publish`: mirror local file roots into etcd, incrementally.
//!
//! The file roots stay the truth; etcd gets read-only copies (layout in
//! [`super::layout`]) on the publisher's own lease, so a host that dies or
//! is cut off vanishes from the fleet within that lease's TTL. Rules:
//!
//! - One changed lockfile is one etcd write: a change re-classifies exactly
//!   the key it names, and writes only if what a reader sees changed (the
//!   state, the record or the parse error; the `why` words alone, which age
//!   with the clock, do not count).
//! - Every couple of seconds the claims already read are judged again
//!   (no file is read: pids and deadlines only), so transitions that change
//!   no file (a holder's pid dies, a TTL runs out) are published too; a
//!   slow full re-sweep repairs a lost notification and ages hazards.
//! - Connecting (at start, and after etcd came back) re-syncs: what etcd
//!   holds for this host is read, keys no longer true are deleted, the rest
//!   put on the current lease. Events are keyed by log identity and byte
//!   offset and written create-if-absent, so a re-sync never duplicates one.
//! - Force-release requests under `requests/` are carried out through the
//!   file protocol on this host, guard and audit included, and answered.

use super::fleet::{FleetRequest, HostRecord};
use super::layout::{root_id, RootPlace};
use super::{Core, EtcdStore};
use crate::claims::{self, now_ms, Classifier, ForceOutcome, Hazard, Root, Roots, Status};
use crate::events::tail::{open_regular, Follower};
use crate::store::file::FileStore;
use crate::store::fleet::PublishedRoot;
use crate::store::{Change, Changes, Store, StoreError};
use etcd_client::{
    Compare, CompareOp, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// How often every root is re-swept from its files.
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
    feed: Option<Box<dyn Changes>>,
    /// Claim key → fingerprint of what etcd holds for it, on our lease.
    claims: HashMap<String, String>,
    /// Claim key → the status last published, to judge again.
    items: HashMap<String, Status>,
    /// The hazards array as last written.
    hazards: Option<String>,
    /// The same array as the root's last sweep found it, patched for each
    /// key re-read since.
    hazard_list: Vec<Hazard>,
    events: Option<Follower>,
    dirty: BTreeSet<String>,
    /// The feed lost track: sweep the whole root on the next round.
    needs_sweep: bool,
}

/// The publisher: call [`Publisher::run`] until stopped.
pub struct Publisher {
    core: Arc<Core>,
    opts: PublishOpts,
    roots: Vec<Published>,
    lease: Option<i64>,
    /// The task keeping `lease` alive, and the flag it raises when lost.
    keeper: Option<tokio::task::JoinHandle<()>>,
    lost: Arc<AtomicBool>,
    stats: Stats,
}

/// Between two tries to reach etcd again.
const RECONNECT_PAUSE: Duration = Duration::from_secs(1);
/// Claim writes per transaction, under etcd's default limit of 128 ops.
const BATCH: usize = 100;
/// While etcd stays unreachable, how often that is said again.
const LOG_AGAIN: Duration = Duration::from_secs(60);
/// The longest one wait for file changes lasts.
const WAIT_SLICE: Duration = Duration::from_millis(100);

impl Publisher {
    pub fn new(store: &EtcdStore, roots: &Roots, opts: PublishOpts) -> Publisher {
        let core = Arc::clone(&store.core);
        let roots = roots
            .as_slice()
            .iter()
            .map(|root| {
                let canonical =
                    std::fs::canonicalize(&root.root).unwrap_or_else(|_| root.root.clone());
                let info = PublishedRoot {
                    id: root_id(&canonical),
                    path: canonical.to_string_lossy().into_owned(),
                };
                Published {
                    root: root.clone(),
                    place: core.layout.root_place(&opts.machine_id, &info.id),
                    info,
                    feed: None,
                    claims: HashMap::new(),
                    items: HashMap::new(),
                    hazards: None,
                    hazard_list: Vec::new(),
                    events: None,
                    dirty: BTreeSet::new(),
                    needs_sweep: false,
                }
            })
            .collect();
        Publisher {
            core,
            opts,
            roots,
            lease: None,
            keeper: None,
            lost: Arc::new(AtomicBool::new(false)),
            stats: Stats::default(),
        }
    }

    pub fn roots(&self) -> Vec<PublishedRoot> {
        self.roots.iter().map(|r| r.info.clone()).collect()
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Publish until `stop` is set; then revoke the lease, so the host goes
    /// offline at once, and record when it was last seen.
    pub fn run(&mut self, stop: &AtomicBool, log: &mut dyn FnMut(Level, &str)) -> Stats {
        for r in &mut self.roots {
            match FileStore::new(r.root.clone()).changes() {
                Ok(feed) => r.feed = Some(feed),
                Err(e) => log(
                    Level::Warn,
                    &format!(
                        "root={} cannot watch ({e}); it is re-swept every tick only",
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
                if last_tick.elapsed() >= self.opts.tick {
                    last_tick = Instant::now();
                    for i in 0..self.roots.len() {
                        self.sync_root(i, false)?;
                    }
                } else if last_judged.elapsed() >= self.opts.judge_every {
                    last_judged = Instant::now();
                    for i in 0..self.roots.len() {
                        self.judge_again(i)?;
                    }
                }
                for i in 0..self.roots.len() {
                    if self.roots[i].needs_sweep {
                        self.sync_root(i, false)?;
                    }
                    self.publish_dirty(i)?;
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
        self.stats
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
                    Ok(Some(Change::Claim { key })) => {
                        self.stats.changes += 1;
                        r.dirty.insert(key);
                    }
                    // Changes were lost, or the claims dir came or went.
                    Ok(Some(Change::Resync { .. })) => r.needs_sweep = true,
                    Ok(Some(_)) => {}
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

    /// Grant a lease, say the host is here, and re-sync every root.
    fn connect(&mut self, log: &mut dyn FnMut(Level, &str)) -> Result<(), StoreError> {
        let ttl = self.opts.ttl_s;
        let lease = self
            .core
            .conn
            .call(|mut c| async move { c.lease_grant(ttl, None).await })?
            .id();
        let alive = self.core.layout.host_alive(&self.opts.machine_id);
        let previous = self
            .core
            .get_value(&alive)?
            .and_then(|v| v.get("lease").and_then(Value::as_i64));
        self.lease = Some(lease);
        self.start_keep_alive(lease);
        let body = json!({"lease": lease, "pid": std::process::id(), "since_ms": now_ms()});
        self.put(&alive, &body.to_string())?;
        self.put_host_record()?;
        for i in 0..self.roots.len() {
            self.sync_root(i, true)?;
        }
        // A previous run's lease (killed, or cut off): everything it carried
        // is on ours now, so ending it removes nothing still true.
        if let Some(old) = previous.filter(|old| *old != lease) {
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

    fn put_host_record(&self) -> Result<(), StoreError> {
        let rec = HostRecord {
            machine_id: self.opts.machine_id.clone(),
            hostname: self.opts.hostname.clone(),
            roots: self.roots(),
            last_seen_ms: now_ms(),
            ttl_s: self.opts.ttl_s,
            pid: std::process::id(),
        };
        let key = self.core.layout.host_record(&self.opts.machine_id);
        let body = serde_json::to_string(&rec).unwrap_or_default();
        self.core.conn.call(|mut c| {
            let (key, body) = (key.clone(), body.clone());
            async move { c.put(key, body, None).await }
        })?;
        Ok(())
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
        Err(StoreError::Etcd {
            endpoints: self.core.conn.endpoints().to_string(),
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

    /// Sweep root `i` and write what differs from etcd. With `fresh`, what
    /// etcd holds is read first (a start or a reconnect): keys on another
    /// lease count as absent, since that lease is about to end.
    fn sync_root(&mut self, i: usize, fresh: bool) -> Result<(), StoreError> {
        if fresh {
            let lease = self.lease.unwrap_or(0);
            let r = &self.roots[i];
            let (kvs, _) = self.core.range_all(&r.place.claims())?;
            let mut held = HashMap::new();
            let mut stale = Vec::new();
            for kv in &kvs {
                let Some(key) = r.place.key_of_claim(kv.key()) else {
                    continue;
                };
                match serde_json::from_slice::<Value>(kv.value()) {
                    Ok(v) if kv.lease() == lease => {
                        held.insert(key, fingerprint(&v));
                    }
                    _ => stale.push(key),
                }
            }
            let r = &mut self.roots[i];
            r.claims = held;
            // Written again on this lease whatever it was.
            r.hazards = None;
            // Keys on an old lease, or unreadable, are re-put or deleted below.
            r.claims
                .extend(stale.into_iter().map(|k| (k, String::from("?"))));
            self.start_events(i)?;
        }
        let sweep = claims::sweep(&self.roots[i].root);
        let mut seen = BTreeSet::new();
        let mut ops = Vec::new();
        for s in sweep.claims {
            seen.insert(s.key.clone());
            ops.extend(self.plan_claim(i, &s.key.clone(), Some(s)));
        }
        let gone: Vec<String> = self.roots[i]
            .claims
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            ops.extend(self.plan_claim(i, &key, None));
        }
        self.apply(ops)?;
        self.roots[i].hazard_list = sweep.hazards;
        self.publish_hazards(i)?;
        self.roots[i].dirty.clear();
        self.roots[i].needs_sweep = false;
        Ok(())
    }

    /// Write root `i`'s hazards if they differ from what etcd holds.
    fn publish_hazards(&mut self, i: usize) -> Result<(), StoreError> {
        let hazards = serde_json::to_string(&self.roots[i].hazard_list).unwrap_or_default();
        if self.roots[i].hazards.as_deref() != Some(hazards.as_str()) {
            self.put(&self.roots[i].place.hazards(), &hazards)?;
            self.stats.hazard_writes += 1;
            self.roots[i].hazards = Some(hazards);
        }
        Ok(())
    }

    /// Re-classify the keys root `i`'s notifications named. A changed
    /// claim may be a hazard now or no longer (corrupted, mended, from
    /// another machine): its hazards are patched into the root's list and
    /// written with it, not left for the next full sweep.
    fn publish_dirty(&mut self, i: usize) -> Result<(), StoreError> {
        let mut patched = false;
        while let Some(key) = self.roots[i].dirty.pop_first() {
            let r = &mut self.roots[i];
            let s = claims::status(&r.root, &key);
            claims::patch_item_hazards(&mut r.hazard_list, &s.file, Some(&s));
            patched = true;
            let s = (s.state != claims::ClaimState::Free).then_some(s);
            if let Err(e) = self.write_claim(i, &key, s) {
                self.roots[i].dirty.insert(key);
                return Err(e);
            }
        }
        if patched {
            self.publish_hazards(i)?;
        }
        Ok(())
    }

    /// Judge root `i`'s claims again from the records already read: a
    /// holder's pid gone or a deadline passed changes no file.
    fn judge_again(&mut self, i: usize) -> Result<(), StoreError> {
        let mut c = Classifier::new(now_ms());
        let changed: Vec<Status> = self.roots[i]
            .items
            .values()
            .filter_map(|s| {
                let v = c.verdict(s.record.as_ref()?);
                (v.state != s.state).then(|| Status {
                    state: v.state,
                    why: v.why,
                    locality: Some(v.locality),
                    ..s.clone()
                })
            })
            .collect();
        let mut ops = Vec::new();
        for s in changed {
            ops.extend(self.plan_claim(i, &s.key.clone(), Some(s)));
        }
        self.apply(ops)
    }

    /// Make etcd hold `item` for `key` (absent: no claim), writing only
    /// when what a reader sees would change.
    fn write_claim(&mut self, i: usize, key: &str, item: Option<Status>) -> Result<(), StoreError> {
        let ops: Vec<TxnOp> = self.plan_claim(i, key, item).into_iter().collect();
        self.apply(ops)
    }

    /// The write that makes etcd hold `item` for `key`, if one is needed;
    /// what etcd holds is noted as if it were done (a failed write ends in
    /// a reconnect, whose re-sync reads etcd again).
    fn plan_claim(&mut self, i: usize, key: &str, item: Option<Status>) -> Option<TxnOp> {
        let lease = self.lease.unwrap_or(0);
        let r = &mut self.roots[i];
        let ek = r.place.claim(key);
        match item {
            Some(s) => {
                let v = serde_json::to_value(&s).unwrap_or(Value::Null);
                let fp = fingerprint(&v);
                r.items.insert(key.to_string(), s);
                if r.claims.get(key) == Some(&fp) {
                    return None;
                }
                r.claims.insert(key.to_string(), fp);
                let opts = PutOptions::new().with_lease(lease);
                Some(TxnOp::put(ek, v.to_string(), Some(opts)))
            }
            None => {
                r.items.remove(key);
                r.claims.remove(key)?;
                Some(TxnOp::delete(ek, None))
            }
        }
    }

    /// Run claim writes, [`BATCH`] to a transaction: one change is one
    /// write, and a re-sync of thousands of keys takes tens of round trips.
    fn apply(&mut self, ops: Vec<TxnOp>) -> Result<(), StoreError> {
        for chunk in ops.chunks(BATCH) {
            let txn = Txn::new().and_then(chunk.to_vec());
            self.core.conn.call(|mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })?;
            self.stats.claim_writes += chunk.len() as u64;
        }
        Ok(())
    }

    /// Where to resume mirroring root `i`'s events log: after the last line
    /// etcd has of this very log file; from its start if etcd has lines of
    /// an earlier log only (it was rotated meanwhile); from its end on a
    /// first publish (only new events are mirrored).
    fn start_events(&mut self, i: usize) -> Result<(), StoreError> {
        let path = self.roots[i].root.events_file();
        let opened = open_regular(&path).ok().flatten();
        let Some((file, id)) = opened else {
            self.roots[i].events = Some(Follower::waiting_for(&path));
            return Ok(());
        };
        let log = log_id(id.dev, id.ino);
        let place = self.roots[i].place.clone();
        let mine = format!("{}{log}.", place.events());
        let last_of = |prefix: String, by_key: bool| {
            let target = if by_key {
                SortTarget::Key
            } else {
                SortTarget::Create
            };
            let opts = GetOptions::new()
                .with_range(super::layout::range_end(&prefix))
                .with_sort(target, SortOrder::Descend)
                .with_limit(1);
            self.core.conn.call(move |mut c| {
                let (prefix, opts) = (prefix.clone(), opts.clone());
                async move { c.get(prefix, Some(opts)).await }
            })
        };
        let resp = last_of(mine, true)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let follower = match resp
            .kvs()
            .first()
            .and_then(|kv| resume_at(&place, &log, kv))
        {
            Some(at) if at <= len => Follower::starting_at(&path, file, id, at),
            _ if last_of(place.events(), false)?.kvs().is_empty() => Follower::open(&path, 0)
                .map(|(f, _)| f)
                .unwrap_or_else(|_| Follower::waiting_for(&path)),
            _ => Follower::starting_at(&path, file, id, 0),
        };
        self.roots[i].events = Some(follower);
        Ok(())
    }

    /// Mirror the lines appended to root `i`'s log since the last poll.
    fn publish_events(
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
                let text = line.text.clone();
                let written = self.core.txn_with_events(|lease| {
                    Txn::new()
                        .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                        .and_then([TxnOp::put(
                            key.clone(),
                            text.clone(),
                            Some(PutOptions::new().with_lease(lease)),
                        )])
                });
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

    /// Carry out the force-release requests waiting under root `i`.
    fn serve_requests(
        &mut self,
        i: usize,
        log: &mut dyn FnMut(Level, &str),
    ) -> Result<(), StoreError> {
        let (kvs, _) = self.core.range_all(&self.roots[i].place.requests())?;
        for kv in kvs {
            let place = &self.roots[i].place;
            let Some(answer_key) = place.answer_of(kv.key()) else {
                continue;
            };
            let answer = match serde_json::from_slice::<FleetRequest>(kv.value()) {
                Ok(req) => {
                    let answer = answer_to(&self.roots[i].root, &req);
                    log(
                        Level::Info,
                        &format!(
                            "request root={} key={:?} operator={:?} outcome={}",
                            self.roots[i].info.path,
                            req.key,
                            req.operator.as_deref().unwrap_or(""),
                            answer["outcome"].as_str().unwrap_or("")
                        ),
                    );
                    self.roots[i].dirty.insert(req.key);
                    answer
                }
                Err(e) => json!({"outcome": "error", "error": format!("not a request: {e}")}),
            };
            self.stats.requests += 1;
            let lease = self.lease.unwrap_or(0);
            let rk = kv.key().to_vec();
            let rev = kv.mod_revision();
            let body = answer.to_string();
            // Answered only while the request still stands: a requester
            // that gave up has withdrawn it.
            self.core.conn.call(|mut c| {
                let txn = Txn::new()
                    .when([Compare::mod_revision(rk.clone(), CompareOp::Equal, rev)])
                    .and_then([
                        TxnOp::delete(rk.clone(), None),
                        TxnOp::put(
                            answer_key.clone(),
                            body.clone(),
                            Some(PutOptions::new().with_lease(lease)),
                        ),
                    ]);
                async move { c.txn(txn).await }
            })?;
        }
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

/// What a reader of the mirror sees of one item, without the `why` words
/// (they age with the clock: "TTL expired 3m ago").
fn fingerprint(item: &Value) -> String {
    json!([item.get("state"), item.get("record"), item.get("error")]).to_string()
}

/// The log file's identity, as it names event keys.
fn log_id(dev: u64, ino: u64) -> String {
    format!("{dev:x}-{ino:x}")
}

/// The byte after the mirrored line `kv`: where the next line starts.
fn resume_at(place: &RootPlace, log: &str, kv: &KeyValue) -> Option<u64> {
    let at = place.offset_of_event(kv.key(), log)?;
    Some(at + kv.value().len() as u64 + 1)
}

/// Carry out one request through the file protocol: the answer is what
/// `force-release --json` would print, plus its words (`"text"`).
fn answer_to(root: &Root, req: &FleetRequest) -> Value {
    match claims::force_release(root, &req.key, &req.force_opts()) {
        Ok(outcome @ ForceOutcome::Archived { .. }) => {
            let text = outcome.describe(&req.key);
            let ForceOutcome::Archived {
                archived_to,
                previous,
                previous_state,
            } = outcome
            else {
                return Value::Null;
            };
            json!({
                "outcome": "archived",
                "archived_to": archived_to.to_string_lossy(),
                "previous": previous,
                "previous_state": previous_state.as_str(),
                "text": text,
            })
        }
        Ok(outcome @ ForceOutcome::Refused(_)) => {
            let text = outcome.describe(&req.key);
            let ForceOutcome::Refused(reason) = outcome else {
                return Value::Null;
            };
            json!({"outcome": "refused", "reason": reason, "text": text})
        }
        Err(e) => json!({"outcome": "error", "error": e.to_string()}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_ignores_the_ageing_why_words_but_not_the_state_or_record() {
        let a = json!({"key": "k", "state": "live", "record": {"pid": 1}, "why": "TTL expires in 5m", "error": null});
        let mut b = a.clone();
        b["why"] = json!("TTL expires in 4m");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        b["state"] = json!("suspect");
        assert_ne!(fingerprint(&a), fingerprint(&b));
        let mut c = a.clone();
        c["record"]["pid"] = json!(2);
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }

    #[test]
    fn a_request_is_carried_out_with_its_guard_and_answered_in_force_release_words() {
        let dir = tempfile::tempdir().expect("root");
        let root = Root::with_events_here(dir.path());
        let req = |holder: &str| FleetRequest {
            key: "k".into(),
            expect_holder: Some(holder.into()),
            expect_acquired_at: None,
            operator: Some("ops".into()),
            allow_live: true,
            at_ms: 0,
        };
        let none = answer_to(&root, &req("w"));
        assert_eq!(none["outcome"], "refused", "{none}");
        let opts = crate::claims::AcquireOpts {
            ttl_ms: Some(3_600_000),
            ..Default::default()
        };
        claims::acquire(&root, "k", "w", &opts).expect("acquire");
        let other = answer_to(&root, &req("someone-else"));
        assert_eq!(other["outcome"], "refused", "{other}");
        assert!(root.lockfile("k").exists());
        let done = answer_to(&root, &req("w"));
        assert_eq!(done["outcome"], "archived", "{done}");
        assert_eq!(done["previous"]["holder"], "w");
        assert!(!root.lockfile("k").exists());
    }
}
