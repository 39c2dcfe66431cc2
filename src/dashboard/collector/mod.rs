//! The collector: the one thread that reads the outside world for the
//! dashboard, over any store (a file root or etcd). It owns the store's
//! [`Mirror`], feeds it the store's changes, ticks it once a second, and
//! sends the model what changed as data (bottom's collector thread):
//! `update` never reads, it takes in what it is given.
//!
//! Beside it, where the store has them: a thread draining the store's
//! change feed into the collector's inbox (so an op's re-read and a tick
//! never wait on a silent feed), the clock (a store read can block for
//! `--timeout`; the countdowns must not), and the probe asking a store
//! with a connection for the header's facts.

mod probe;

use super::action::Action;
use super::fleet_reader::FleetReader;
pub use super::heard::{line_of, Heard};
use super::model::store::StoreMsg;
use super::model::EVENTS_RING;
use super::options::DEFAULT_TICK_MS;
use crate::claims::{now_ms, Root};
use crate::store::file::feed::{FeedOpts, DEBOUNCE};
use crate::store::file::FileStore;
use crate::store::mirror::judge::Judge;
use crate::store::mirror::Mirror;
use crate::store::{Backend, Change, Changes, StoreError};
pub use probe::{probe, Source};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

/// How the dashboard watches a file root: bursts settle before they are
/// re-read, and the events pane opens with the log's last lines.
pub const FEED: FeedOpts = FeedOpts {
    debounce: Some(DEBOUNCE),
    follow_log: true,
    log_tail: EVENTS_RING,
    entries: true,
};

/// After a failed listing or feed, before trying again.
const RETRY: Duration = Duration::from_secs(1);
/// Claims in the first screen's head listing.
pub const HEAD: usize = 1000;
/// Most changes the feed thread hands on at once: a burst is one batch.
const FEED_BATCH: usize = 4096;
/// What the collector is asked.
#[derive(Debug)]
pub enum Input {
    /// Changes the store's feed brought, in order.
    Feed(Vec<Change>),
    /// The feed ended: list again, then follow a new one.
    FeedEnded,
    /// Read this key again now (an op's own write: the table should not
    /// wait for the feed to notice it).
    Reread(String),
    /// Read everything again (`doctor --fix` touched the root).
    Rescan,
    /// One second passed (from the clock thread of a store that blocks).
    Tick(i64),
}

/// What the collector has read, readable from other threads (benches
/// assert a change re-read exactly one key).
#[derive(Debug, Default)]
pub struct Counters {
    /// Keys read one by one since start.
    pub reads: AtomicU64,
    /// Full listings since start.
    pub rescans: AtomicU64,
}

impl Counters {
    pub fn reads(&self) -> u64 {
        self.reads.load(Relaxed)
    }

    pub fn rescans(&self) -> u64 {
        self.rescans.load(Relaxed)
    }
}

/// The collector of one store (one root of several: `root` is its index).
pub struct Collector {
    store: Arc<dyn Backend>,
    pub mirror: Mirror,
    root: usize,
    /// Whether this thread owns the clock (a file root, whose reads never
    /// block); otherwise a clock thread ticks the model and this inbox.
    owns_clock: bool,
    fleet: FleetReader,
    pub counters: Arc<Counters>,
    /// How often the clock ticks (the operator's `refresh`): countdowns,
    /// TTL edges and hosts' last-seen are judged again on each tick.
    pub tick_ms: i64,
}

impl Collector {
    /// A collector over `store`, judging with `judge` (None: the store's
    /// own verdicts stand, as on etcd). `root`: which root of several.
    pub fn new(store: Arc<dyn Backend>, judge: Option<Judge>, root: usize, now: i64) -> Collector {
        // A store without a connection (a file root), whose reads never
        // block, has no separate clock thread: its collector ticks.
        let owns_clock = store.link().is_none();
        Collector {
            // The model words the one claim it shows in full.
            mirror: Mirror::new(&*store, judge, now).wordless(),
            store,
            root,
            owns_clock,
            fleet: FleetReader::default(),
            counters: Arc::default(),
            tick_ms: DEFAULT_TICK_MS,
        }
    }

    /// A file root on this machine, watched as the dashboard watches.
    pub fn local(root: &Root, i: usize, now: i64) -> Collector {
        let store = FileStore::new(root.clone()).with_feed(FEED);
        Collector::new(Arc::new(store), Some(Judge::local()), i, now)
    }

    /// What the mirror owes the model, as one message (None: nothing).
    pub fn delta(&mut self) -> Option<Action> {
        self.count();
        let d = self.mirror.take_delta()?;
        Some(Action::Mirror {
            root: self.root,
            delta: Box::new(d),
        })
    }

    fn count(&self) {
        self.counters.reads.store(self.mirror.reads, Relaxed);
        self.counters.rescans.store(self.mirror.listings, Relaxed);
    }

    /// List everything now (a first screen, a resync); the message to send.
    pub fn list(&mut self, now: i64) -> Result<Vec<Action>, StoreError> {
        self.mirror.list_apart(&*self.store, now, None)?;
        let mut out: Vec<Action> = self.delta().into_iter().collect();
        // The store's own claims first, then what hosts publish.
        self.fleet.due();
        out.extend(self.fleet.read(&*self.store, now));
        Ok(out)
    }

    /// Take in what the feed, an op or the clock says; what to send, in
    /// order. A store that stopped answering leaves its keys for later.
    pub fn handle(&mut self, input: Input, now: i64) -> Result<Vec<Action>, StoreError> {
        let mut out = Vec::new();
        match input {
            Input::Feed(changes) => {
                let mut heard = Vec::new();
                for c in changes {
                    if let Some(rest) = self.mirror.apply(c) {
                        self.passed(rest, now, &mut out, &mut heard);
                    }
                }
                let listings = self.mirror.listings;
                self.mirror.settle(&*self.store, now)?;
                if self.mirror.listings != listings {
                    // Changes were lost: the fleet's too, perhaps.
                    self.fleet.due();
                }
                out.extend(self.delta());
                out.extend(self.fleet.read(&*self.store, now));
                if !heard.is_empty() {
                    // Worded after the fleet reading, which names new places.
                    let lines = heard.into_iter().map(|e| self.fleet.line(e)).collect();
                    out.push(Action::EventsAppended(lines));
                }
            }
            Input::Reread(key) => {
                self.mirror.apply(Change::Claim { key });
                self.mirror.settle(&*self.store, now)?;
                out.extend(self.delta());
            }
            Input::Rescan => {
                self.mirror.relist_soon();
                self.mirror.settle(&*self.store, now)?;
                out.extend(self.delta());
            }
            Input::Tick(at) => out.extend(self.tick(at)?),
            Input::FeedEnded => {}
        }
        Ok(out)
    }

    /// A second passed: what time changed, then (owning the clock) the
    /// tick itself, so every countdown moves with its re-judged state.
    pub fn tick(&mut self, now: i64) -> Result<Vec<Action>, StoreError> {
        self.mirror.tick(now);
        self.fleet.tick(now);
        let settled = self.mirror.settle(&*self.store, now);
        let mut out: Vec<Action> = self.delta().into_iter().collect();
        if self.owns_clock {
            out.push(Action::Tick(now));
        }
        settled.map(|()| out)
    }

    /// A change the mirror hands back: what the model or the fleet reader
    /// makes of it.
    fn passed(&mut self, c: Change, now: i64, out: &mut Vec<Action>, heard: &mut Vec<Heard>) {
        match c {
            Change::LogAppended(lines) => out.push(Action::EventsAppended(lines)),
            Change::LogReset => out.push(Action::EventsReset),
            Change::LogTrouble(why) => out.push(Action::EventsError(why)),
            Change::Event(e) => heard.push(Heard::Own(e)),
            Change::PublishedEvent {
                host_id,
                root_id,
                event,
            } => {
                self.fleet.place(&host_id, &root_id);
                heard.push(Heard::Published {
                    host_id,
                    root_id,
                    event,
                });
            }
            Change::Host { .. } => self.fleet.due(),
            Change::Published {
                host_id,
                root_id,
                key,
            } => self.fleet.named(host_id, root_id, key),
            Change::Disconnected { why } if self.owns_clock => out.push(Action::Warning(
                crate::sanitize::sanitize(&why).into_owned(),
            )),
            Change::Disconnected { why } => {
                out.push(Action::Store(Box::new(StoreMsg::WatchDown {
                    why,
                    at: now,
                })))
            }
            Change::Connected { revision } => {
                out.push(Action::Store(Box::new(StoreMsg::WatchUp {
                    revision,
                    at: now,
                })))
            }
            // The mirror keeps these.
            Change::Claim { .. }
            | Change::Misnamed { .. }
            | Change::Entry { .. }
            | Change::Resync { .. } => {}
        }
    }

    /// List, then follow the store until the model hangs up. A store that
    /// cannot be listed (away at start) is tried again each `RETRY`.
    pub fn run(
        mut self,
        out: Sender<Action>,
        events: Sender<Action>,
        inbox: Receiver<Input>,
        to_self: Sender<Input>,
    ) {
        if !self.owns_clock {
            let (model, me, every) = (out.clone(), to_self.clone(), self.tick_ms.max(1));
            let _ = std::thread::Builder::new()
                .name("claimtop-clock".into())
                .spawn(move || tick_each_second(model, me, every));
        }
        let send = |actions: Vec<Action>| -> bool {
            actions.into_iter().all(|a| {
                let to = match a {
                    Action::EventsAppended(_) | Action::EventsReset | Action::EventsError(_) => {
                        &events
                    }
                    _ => &out,
                };
                to.send(a).is_ok()
            })
        };
        // A big store takes seconds to list: its first page shows at once.
        let head = self.mirror.list_head(&*self.store, HEAD, now_ms());
        if head.unwrap_or(false) && !send(self.delta().into_iter().collect()) {
            return;
        }
        let mut first = true;
        loop {
            // The feed first, so nothing written during the listing is
            // missed (a change in both is read twice, never lost).
            let feed = match self.store.changes(None) {
                Ok(f) => f,
                Err(e) => {
                    if !send(vec![unreachable(&e)]) {
                        return;
                    }
                    std::thread::sleep(RETRY);
                    continue;
                }
            };
            let listed = match self.list(now_ms()) {
                Ok(a) => a,
                Err(e) => {
                    if !send(vec![unreachable(&e)]) {
                        return;
                    }
                    std::thread::sleep(RETRY);
                    continue;
                }
            };
            if !send(listed) {
                return;
            }
            give_back_memory();
            if std::mem::take(&mut first) && !self.owns_clock && !send(self.opening_events()) {
                return;
            }
            let me = to_self.clone();
            let _ = std::thread::Builder::new()
                .name("claimtop-feed".into())
                .spawn(move || drain_feed(feed, me));
            match self.follow(&inbox, &send) {
                Follow::Over => return,
                Follow::Again => std::thread::sleep(RETRY),
            }
        }
    }

    /// Serve the inbox until the model hangs up (Over) or the feed ends
    /// (Again: list and follow anew).
    fn follow(&mut self, inbox: &Receiver<Input>, send: &dyn Fn(Vec<Action>) -> bool) -> Follow {
        let every = self.tick_ms.max(1);
        let next_second = |now: i64| next_tick_after(now, every);
        let mut next_tick = next_second(now_ms());
        // The first listing was just sent.
        let mut trim_at = Some(now_ms() + 1000);
        loop {
            let now = now_ms();
            let input = if self.owns_clock && now >= next_tick {
                next_tick = next_second(now);
                Input::Tick(now)
            } else {
                let wait = match (self.owns_clock, self.mirror.has_unread()) {
                    (true, _) => Duration::from_millis((next_tick - now).max(0) as u64),
                    (false, true) => RETRY / 4,
                    (false, false) => RETRY,
                };
                match inbox.recv_timeout(wait) {
                    Ok(Input::FeedEnded) => return Follow::Again,
                    Ok(i) => i,
                    Err(RecvTimeoutError::Timeout) if self.owns_clock => continue,
                    // Keys the store did not answer for: ask again.
                    Err(RecvTimeoutError::Timeout) => Input::Feed(Vec::new()),
                    Err(RecvTimeoutError::Disconnected) => return Follow::Over,
                }
            };
            match self.handle(input, now_ms()) {
                Ok(actions) => {
                    // The model frees the listing it replaced once it took
                    // the new one in: give that back at the first quiet
                    // round (nothing but the clock to say).
                    // A listing replaces rows the model frees once it has
                    // taken the new ones in: a second later, give that back.
                    let now = now_ms();
                    if trim_at.is_some_and(|t| now >= t) {
                        trim_at = None;
                        give_back_memory();
                    }
                    let whole = actions.iter().any(
                        |a| matches!(a, Action::Mirror { delta, .. } if delta.whole.is_some()),
                    );
                    if whole {
                        trim_at = Some(now + 1000);
                    }
                    if !send(actions) {
                        return Follow::Over;
                    }
                }
                // A listing failed (the store away): start over.
                Err(_) if self.mirror.wants_listing() => return Follow::Again,
                Err(_) => {}
            }
        }
    }

    /// What a store with a connection kept of its events (and what its
    /// publishing hosts mirrored), as the events pane opens; a file root's
    /// log tail comes first on its feed instead.
    fn opening_events(&mut self) -> Vec<Action> {
        let store = &*self.store;
        let Some(Ok(mut events)) = store.audit().map(|a| a.events(EVENTS_RING)) else {
            return Vec::new();
        };
        if let Some(Ok(published)) = store.fleet().map(|f| f.events(EVENTS_RING)) {
            if !published.is_empty() {
                events.extend(published);
                events.sort_by(|a, b| a.ts().cmp(&b.ts()));
                let from = events.len().saturating_sub(EVENTS_RING);
                events.drain(..from);
            }
        }
        vec![Action::EventsAppended(events.iter().map(line_of).collect())]
    }
}

enum Follow {
    Over,
    Again,
}

fn unreachable(e: &StoreError) -> Action {
    Action::Store(Box::new(StoreMsg::Unreachable {
        why: e.to_string(),
        at: now_ms(),
    }))
}

/// Hand the feed's changes to the collector, a burst at a time, until
/// either side ends.
fn drain_feed(mut feed: Box<dyn Changes>, to: Sender<Input>) {
    loop {
        let first = match feed.next(Duration::from_secs(3600)) {
            Ok(Some(c)) => c,
            Ok(None) => continue,
            Err(_) => {
                let _ = to.send(Input::FeedEnded);
                return;
            }
        };
        let mut batch = vec![first];
        while batch.len() < FEED_BATCH {
            match feed.next(Duration::ZERO) {
                Ok(Some(c)) => batch.push(c),
                _ => break,
            }
        }
        if to.send(Input::Feed(batch)).is_err() {
            return;
        }
    }
}

/// One tick every `every` ms (a second unless the operator's `refresh`
/// says otherwise), on the second, to the model and the collector, until
/// the model hangs up.
fn tick_each_second(model: Sender<Action>, collector: Sender<Input>, every: i64) {
    loop {
        let now = now_ms();
        let next = next_tick_after(now, every);
        std::thread::sleep(Duration::from_millis((next - now) as u64));
        let now = now_ms();
        let _ = collector.send(Input::Tick(now));
        if model.send(Action::Tick(now)).is_err() {
            return;
        }
    }
}

/// The next tick after `now`: on the second (on a whole multiple of
/// `every` ms), so the header's clock turns with the wall clock's.
pub fn next_tick_after(now: i64, every: i64) -> i64 {
    now - now.rem_euclid(every) + every
}

/// Start a collector over `store` on its own thread; its inbox.
pub fn spawn(
    collector: Collector,
    out: Sender<Action>,
    events: Sender<Action>,
) -> std::io::Result<Sender<Input>> {
    keep_big_buffers_mapped();
    let (tx, rx) = channel();
    let me = tx.clone();
    std::thread::Builder::new()
        .name("claimtop-collect".into())
        .spawn(move || collector.run(out, events, rx, me))?;
    Ok(tx)
}

/// glibc raises its mmap threshold to the size of each mapped buffer
/// freed (up to 32 MiB); a big listing frees several, after which its
/// next buffers of megabytes come from the heap, among the rows the
/// mirror keeps, and leave holes `malloc_trim` cannot hand back. A fixed
/// threshold keeps them mapped: over 100 000 lockfiles that was 6 MB of
/// resident memory (60 bytes a claim).
///
/// No fastbins either: a small chunk freed into one never merges with its
/// neighbours until the next consolidation, and a thread arena's top is
/// handed back only when a free merges into it (`malloc_trim` leaves a
/// thread arena's top alone). A listing freed apart (see the mirror's
/// `apart`) then kept 35 to 45 MB of its freed arena resident in one run
/// of two; with none, none (tcache still serves the small allocations).
fn keep_big_buffers_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes how later allocations are served; the
    // threshold is glibc's own default.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

/// A big listing's raw pages are freed by now, but glibc keeps the pages in
/// this thread's arena: hand them back, so that a dashboard over 100 000
/// claims does not keep its start-up peak for as long as it runs.
fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap memory; no pointer of
    // ours is involved.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `operator:<user>@<host>`: the holder id the dashboard acquires as. The
/// user is found exactly as the audit's operator name is (one person, one
/// name, on every face).
pub fn operator_id(me: &crate::claims::LocalIdentity) -> String {
    let user = crate::claims::operator::user_name().unwrap_or_else(|| "unknown".into());
    let host = if me.hostname.is_empty() {
        crate::claims::hostname()
    } else {
        me.hostname.clone()
    };
    format!("operator:{user}@{host}")
}

#[cfg(test)]
mod tests;
