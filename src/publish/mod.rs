//! `claimtop publish`: mirror local file roots into a store (etcd),
//! incrementally.
//!
//! The file roots stay the truth; a sink ([`crate::store::sink::Sink`],
//! etcd's is `store::etcd::sink`) gets read-only copies on the publisher's
//! own session, so a host that dies or is cut off vanishes from the fleet
//! within that session's TTL. Rules:
//!
//! - Each root is followed by its driver (`store::drive`), the mirror
//!   every face reads: one changed lockfile is one re-read and
//!   one write, and a write happens only if what a reader sees changed
//!   (the state, the record or the parse error; the `why` words alone,
//!   which age with the clock, do not count).
//! - Every couple of seconds the driver judges again what time changes (no
//!   file is read: pids and deadlines only), so transitions that change no
//!   file (a holder's pid dies, a TTL runs out) are published too; its slow
//!   full re-list repairs a lost notification.
//! - Connecting (at start, and after the store came back) re-syncs: what
//!   the sink holds for this host is read, keys no longer true are
//!   deleted, the rest put on the current session. Until a root's copies are all back, its
//!   owner key says `resyncing`, and readers show its last known copies:
//!   a host never reads as online with its claims missing. Events are
//!   keyed by log identity and byte offset and written create-if-absent,
//!   so a re-sync never duplicates one.
//! - Force-release requests the sink hands over are taken (so they can no
//!   longer be withdrawn), then carried out through the file protocol on
//!   this host, guard and audit included, and answered.
//! - Each root is published by one publisher (its owner key, see
//!   [`crate::store::sink::Sink::own`]); several publishers on one machine
//!   each keep to their own roots.

use crate::claims::{now_ms, Root, Roots};
use crate::store::compose::Store;
use crate::store::drive::{DriveOpts, Driver, Input, Update, Want};
use crate::store::fleet::PublishedRoot;
use crate::store::mirror::Delta;
pub use crate::store::sink::PublishError;
use crate::store::sink::{root_id, HostRecord, Request, RootOwner, Sink};
use crate::store::{Backend, Cursor, LogFeed, StoreError, Wake};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod copies;
mod events;
mod identity;
mod serve;
mod summary;
#[cfg(test)]
mod tests;

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
    /// How often the host record's `last_seen_ms` is refreshed while
    /// nothing else is written. Whether a host is online is its lease's
    /// to say (renewed every third of the TTL, and no write); the record
    /// only dates a host that went away, so it is refreshed rarely, as a
    /// kubelet reports an unchanged node status every 5 minutes beside its
    /// lease. A clean stop writes it exactly. Each refresh is a raft write:
    /// once a minute, a hundred idle hosts cost etcd about a third of its
    /// idle CPU.
    pub last_seen_every: Duration,
    /// The first connect waits a random part of this: publishers started
    /// together (a fleet's restart) do not sync all at once.
    pub start_jitter: Duration,
}

impl PublishOpts {
    pub fn new(machine_id: String, hostname: String, ttl_s: i64) -> PublishOpts {
        PublishOpts {
            machine_id,
            hostname,
            ttl_s,
            judge_every: Duration::from_secs(2),
            tick: Duration::from_secs(60),
            last_seen_every: LAST_SEEN_EVERY,
            start_jitter: Duration::from_secs(1),
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
    /// The root as a store: its driver's, and its log's.
    store: Arc<dyn Backend>,
    driver: Driver<'static>,
    /// What the driver said changed, not published yet, in one delta (so
    /// an etcd away for an hour costs one row per key changed meanwhile).
    pending: Option<Delta>,
    /// The driver's feed could not be read at the last wait.
    deaf: bool,
    /// Claim key → fingerprint of what etcd holds for it, on our lease.
    claims: HashMap<String, String>,
    /// Claim key → what was last put for it, compared before any JSON is
    /// made (empty after a re-sync: etcd's copies are compared as JSON).
    shown: HashMap<String, copies::Shown>,
    /// The hazards array as last written.
    hazards: Option<String>,
    /// The root's log, followed, and where a feed opened again resumes:
    /// just after the last line etcd has.
    events: Option<Box<dyn LogFeed>>,
    events_at: Option<Cursor>,
    /// Why the claims dir cannot be listed, as the owner key says it.
    unreadable: Option<String>,
    /// Taken, and its copies not all written back yet: the owner key says
    /// so, and readers show the root's last known copies meanwhile.
    resyncing: bool,
    /// Its summary, as written.
    said: summary::Said,
    /// How often the driver had looked at its root whole at the last
    /// resweep.
    looks_at_resweep: u64,
}

impl Published {
    /// Tell the driver `input`; keep what it says changed.
    fn drive(&mut self, input: Input, now: i64) {
        let got = self.driver.handle(input, now);
        self.take(got);
    }

    /// Every root is looked at whole at least once a resweep, as the
    /// mirror's own safety net looks (listed, or its mark found as it
    /// was): unless that net looked since the last one (an idle root is
    /// looked at once a period, not twice).
    fn resweep(&mut self, now: i64) {
        if self.driver.counters().looks() == self.looks_at_resweep {
            self.drive(Input::Net, now);
        }
        self.looks_at_resweep = self.driver.counters().looks();
    }

    /// Keep what the driver said changed. A round that failed (the root
    /// cannot be read now) leaves its keys for the next one.
    fn take(&mut self, got: Result<Vec<Update>, StoreError>) {
        let Ok(updates) = got else {
            return;
        };
        for delta in updates.into_iter().filter_map(|u| u.delta) {
            self.pending = Some(match self.pending.take() {
                Some(before) => copies::fold(before, delta),
                None => delta,
            });
        }
    }
}

/// The publisher: call [`Publisher::run`] until stopped.
pub struct Publisher {
    sink: Box<dyn Sink>,
    /// The store's URL, for the log.
    url: String,
    /// Said which roots it publishes: once, when it first took them all.
    announced: bool,
    opts: PublishOpts,
    roots: Vec<Published>,
    /// The sink's session, while connected.
    lease: Option<i64>,
    stats: Stats,
    /// Requests carried out whose answers are not written yet.
    answers: Vec<(Request, String)>,
    /// When this publisher started: its pid is the one that took its roots
    /// only if that process ran by then.
    since_ms: i64,
}

/// Ends the wait of whichever root's driver the publisher blocks on (the
/// first that can watch); the others' next wait, which does not block,
/// just returns.
fn wake_all(roots: &[Published]) -> Wake {
    let wakers: Vec<Wake> = roots.iter().map(|r| r.driver.waker()).collect();
    Arc::new(move || wakers.iter().for_each(|w| w()))
}

/// When the last refresh would have been for the next to come at a random
/// point within `every` from now.
fn refresh_from(every: Duration) -> Instant {
    let now = Instant::now();
    now.checked_sub(every.saturating_sub(jitter(every)))
        .unwrap_or(now)
}

/// A random part of `most`: std's per-process random hasher keys, the
/// clock and the pid.
fn jitter(most: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_i64(now_ms());
    let nanos = most.as_nanos().max(1) as u64;
    Duration::from_nanos(h.finish() % nanos)
}

/// The default [`PublishOpts::last_seen_every`].
pub const LAST_SEEN_EVERY: Duration = Duration::from_secs(300);

/// Between two tries to reach etcd again.
const RECONNECT_PAUSE: Duration = Duration::from_secs(1);
/// While etcd stays unreachable, how often that is said again.
const LOG_AGAIN: Duration = Duration::from_secs(60);
/// The longest one wait for file changes lasts, while things happen.
const WAIT_SLICE: Duration = Duration::from_millis(100);
/// Once nothing was published for this long, a wait lasts until the next
/// judging of the claims (`judge_every`) unless something ends it first:
/// a file change, an append to the log, or a request (the sink wakes the
/// wait, [`Sink::wake_on_request`]). An idle publisher wakes every couple
/// of seconds, not three times a second: at a hundred hosts those wakes
/// were most of the fleet's idle CPU.
const QUIET_AFTER: Duration = Duration::from_secs(5);
/// The shortest wait: a judging just due is not a busy loop.
const LEAST_SLICE: Duration = Duration::from_millis(10);

impl Publisher {
    /// The publisher of `roots` (a store of file roots, as `roots` names
    /// them, in order) into `sink`, whose store `url` names.
    pub fn new(
        sink: Box<dyn Sink>,
        url: String,
        roots: Store,
        named: &Roots,
        opts: PublishOpts,
    ) -> Publisher {
        let roots = roots
            .members()
            .iter()
            .zip(named.as_slice())
            .map(|(member, root)| {
                let canonical =
                    std::fs::canonicalize(&root.root).unwrap_or_else(|_| root.root.clone());
                let canonical = identity::root_identity(&canonical);
                let info = PublishedRoot::new(
                    root_id(&canonical),
                    canonical.to_string_lossy().into_owned(),
                );
                // The clock is the publisher's own (`judge_every`).
                let drive = DriveOpts {
                    tick_ms: i64::MAX,
                    ..DriveOpts::default()
                };
                let want = Want::Whole { head: 0 };
                let driver = Driver::new(member, None, want, drive, now_ms());
                Published {
                    root: root.clone(),
                    info,
                    store: member.shared(),
                    driver,
                    pending: None,
                    deaf: false,
                    claims: HashMap::new(),
                    shown: HashMap::new(),
                    hazards: None,
                    events: None,
                    events_at: None,
                    unreadable: None,
                    resyncing: false,
                    said: summary::Said::default(),
                    looks_at_resweep: 0,
                }
            })
            .collect::<Vec<Published>>();
        // Two paths to one directory are one root.
        let mut seen = std::collections::HashSet::new();
        let mut roots = roots;
        roots.retain(|r| seen.insert(r.info.id.clone()));
        let mut sink = sink;
        sink.wake_on_request(wake_all(&roots));
        Publisher {
            sink,
            url,
            announced: false,
            opts,
            roots,
            lease: None,
            stats: Stats::default(),
            answers: Vec::new(),
            since_ms: now_ms(),
        }
    }

    /// A handle that ends the publisher's wait at once, from any thread:
    /// a signal's handler calls it after setting `stop`, so a stop is not
    /// kept waiting for the next judging.
    pub fn waker(&self) -> Wake {
        wake_all(&self.roots)
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
        let mut next_try = Instant::now() + jitter(self.opts.start_jitter);
        let mut last_said: Option<Instant> = None;
        let mut last_tick = Instant::now();
        let mut last_judged = Instant::now();
        let mut last_seen = Instant::now();
        let (mut busy_at, mut busy_stats) = (Instant::now(), self.stats);
        while !stop.load(Ordering::SeqCst) {
            if self.stats != busy_stats || self.lease.is_none() {
                (busy_at, busy_stats) = (Instant::now(), self.stats);
            }
            let slice = match busy_at.elapsed() < QUIET_AFTER {
                true => WAIT_SLICE,
                false => self
                    .opts
                    .judge_every
                    .saturating_sub(last_judged.elapsed())
                    .max(LEAST_SLICE),
            };
            self.wait_for_changes(slice, log);
            if self.lease.is_none() {
                if Instant::now() < next_try {
                    continue;
                }
                match self.connect(log) {
                    Ok(()) => {
                        last_said = None;
                        last_tick = Instant::now();
                        // The first refresh comes at a random point of the
                        // period: a fleet started together does not refresh
                        // together ever after.
                        last_seen = refresh_from(self.opts.last_seen_every);
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
                self.sink.alive()?;
                let now = now_ms();
                if last_tick.elapsed() >= self.opts.tick {
                    last_tick = Instant::now();
                    for r in &mut self.roots {
                        r.resweep(now);
                    }
                } else if last_judged.elapsed() >= self.opts.judge_every {
                    last_judged = Instant::now();
                    for r in &mut self.roots {
                        r.drive(Input::Tick(now), now);
                    }
                }
                for i in 0..self.roots.len() {
                    self.publish_changes(i, now)?;
                    self.publish_summary(i, now)?;
                    self.publish_events(i, log)?;
                }
                // Handed over by the sink as they come (a watch): looking
                // costs nothing while none does.
                for i in 0..self.roots.len() {
                    self.serve_requests(i, log)?;
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

    /// Block until a root's files change, at most `slice`; keep
    /// what every root's driver says changed. A root whose feed cannot be
    /// read is re-listed every tick only, and said so once.
    fn wait_for_changes(&mut self, slice: Duration, log: &mut dyn FnMut(Level, &str)) {
        let mut timeout = slice;
        let mut waited = false;
        for r in &mut self.roots {
            let got = r.driver.wait(timeout, now_ms());
            match &got {
                Err(e) if !r.deaf => log(
                    Level::Warn,
                    &format!(
                        "root={} cannot watch ({e}); it is re-listed every tick only",
                        r.info.path
                    ),
                ),
                _ => {}
            }
            r.deaf = got.is_err();
            waited |= !r.deaf;
            r.take(got);
            timeout = Duration::ZERO;
        }
        if !waited {
            std::thread::sleep(slice);
        }
    }

    /// Grant a lease, take every root (or refuse, if a live publisher holds
    /// one), say the host is here, and re-sync every root.
    fn connect(&mut self, log: &mut dyn FnMut(Level, &str)) -> Result<(), PublishError> {
        let ttl = self.opts.ttl_s;
        let lease = self.sink.begin(ttl)?;
        for i in 0..self.roots.len() {
            // Taken as resyncing: the host must never read as online with
            // its copies gone (a lease lost in a partition took them) or
            // half written back. Each root is said to be published only
            // once all of its copies are on this lease.
            self.roots[i].resyncing = true;
            let me = self.owner(lease, None, i);
            self.sink.own(&self.roots[i].info, &me)?;
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
        self.put_host_record()?;
        let now = now_ms();
        for i in 0..self.roots.len() {
            self.sync_root(i, now)?;
            self.roots[i].resyncing = false;
            let me = self.owner(lease, self.roots[i].unreadable.clone(), i);
            let id = self.roots[i].info.id.clone();
            self.sink.say_owner(&id, &me)?;
        }
        // A previous run's session (killed, or cut off): everything it
        // carried for these roots is on ours now, so ending it removes
        // nothing still true.
        self.sink.settle();
        self.stats.resyncs += 1;
        let claims: usize = self.roots.iter().map(|r| r.claims.len()).sum();
        log(
            Level::Info,
            &format!(
                "connected endpoints={} lease={lease} ttl_s={ttl} roots={} claims={claims} writes={}",
                self.sink.describe(),
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

    fn put_host_record(&mut self) -> Result<(), StoreError> {
        let rec = HostRecord {
            machine_id: self.opts.machine_id.clone(),
            hostname: self.opts.hostname.clone(),
            roots: self.roots(),
            last_seen_ms: now_ms(),
            ttl_s: self.opts.ttl_s,
            pid: std::process::id(),
        };
        self.sink.host(&rec)
    }

    fn shut_down(&mut self, log: &mut dyn FnMut(Level, &str)) {
        if let Some(lease) = self.lease.take() {
            let _ = self.put_host_record();
            let revoked = self.sink.end();
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
