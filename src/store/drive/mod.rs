//! The one driver of a member's mirror: feed → mirror → clock → retry →
//! deltas, written once. Every face that follows a store subscribes to
//! what it says: the dashboard (every member on a lane of its own,
//! [`spawn_all`]), `metrics` (brought up to date at each scrape,
//! [`Driver::catch_up`]), the publisher (each root's driver waited on in
//! turn, [`Driver::wait`]), and `acquire --wait` / `run` (a driver of the
//! named keys alone, [`Want::Keys`], read again when their watch wakes).
//!
//! A driver owns one member's [`Mirror`] and, for a whole mirror, its
//! change feed. It opens the feed before it lists (a change in both is
//! read twice, never lost), lists (a head first when asked, so a big
//! store's first screen comes at once), then takes what the feed, an op or
//! the clock says ([`Input`]) and answers with what changed ([`Update`]):
//! the rows, counts and hazards as a [`Delta`], the member's facts (its
//! link up or down, its hosts), and the clock it judged to. How its rows
//! are judged is the member's [`Claims::rules`](super::Claims::rules): a
//! root's lockfiles by this machine's pids (one [`Judge`] per driver), a
//! store's keys and a host's copies by the verdict they are read with.
//!
//! A read that fails leaves what it named for the next round (a tick, or
//! the next change) and says so as an error; a feed that ends is opened
//! again at the next round, and everything listed again, since what it
//! missed cannot be known.

mod burst;
mod lanes;
pub mod memory;
mod pages;
#[cfg(test)]
mod tests;

pub(crate) use burst::burst;
pub use lanes::{next_tick_after, spawn_all, Lanes, HEAD, PROBE_EVERY, PROBE_TIMEOUT};

use super::backend::{Backend, MemberListing};
use super::compose::{Member, OriginIx};
use super::fleet::HostInfo;
use super::mirror::judge::Judge;
use super::mirror::{Delta, Mirror, Tally};
use super::sink::FleetSummary;
use super::{Change, Changes, LinkFacts, StoreError, Tenure, Wake};
use crate::claims::root::RootProblem;
use crate::claims::{ItemRules, Status};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a driver mirrors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// Every claim of the member, its first `head` in key order first (0:
    /// no head).
    Whole { head: usize },
    /// These keys alone (a waiter, a holder): never a listing, and no feed
    /// of its own; the face says when to look again.
    Keys(BTreeSet<String>),
}

/// How a driver runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriveOpts {
    /// How often the clock judges again what time changes (the operator's
    /// `refresh` in the dashboard, `--judge-every` in the publisher).
    pub tick_ms: i64,
    /// Keep each claim's reason in words. A face that words only the claim
    /// it shows in full keeps none (see [`Mirror::wordless`]).
    pub words: bool,
    /// Let a burst of changes go quiet this long before it is read (the
    /// dashboard), so a create, a write and a rename are one re-read; None
    /// reads each change as it comes.
    pub debounce: Option<Duration>,
    /// The mirror's slow safety re-list ([`Mirror::with_safety_net`]); off
    /// only where a test must see a lost notification stay lost.
    pub safety_net: bool,
}

impl Default for DriveOpts {
    fn default() -> DriveOpts {
        DriveOpts {
            tick_ms: 1000,
            words: true,
            debounce: None,
            safety_net: true,
        }
    }
}

/// What a driver is told, in order.
#[derive(Debug)]
pub enum Input {
    /// Changes the member's feed brought, oldest first.
    Feed(Vec<Change>),
    /// The feed ended: open another at the next round, and list again.
    FeedEnded,
    /// Read this key again now (an op's own write: the face should not
    /// wait for the feed to notice it).
    Reread(String),
    /// Read everything again (`doctor --fix` touched it); a driver of
    /// named keys reads its keys again.
    Relist,
    /// The safety net is due (a publisher's resweep): list everything
    /// again, unless the member's mark says nothing was made, replaced or
    /// removed since the last listing ([`Mirror::net_soon`]).
    Net,
    /// The clock moved to this epoch ms: judge again what time changes.
    Tick(i64),
}

/// What one member's driver says, in the order it happened: the rows
/// first, then the member's facts, then the clock it judged them at (a
/// face applies `delta` before it moves its clock to `tick`, so every
/// countdown moves with its re-judged state).
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub at: OriginIx,
    /// What changed in the mirror (rows carry their place, stamped with
    /// `at`); `whole` set when the rows are every row (`partial` for a
    /// head).
    pub delta: Option<Delta>,
    /// What changed of the member beside its rows.
    pub facts: Option<Facts>,
    /// The clock this member was judged at. Every lane of [`spawn_all`]
    /// sends each tick: a face moves its clock to the newest it has.
    pub tick: Option<i64>,
}

impl Update {
    /// Nothing but the clock.
    pub fn tick(at: OriginIx, t: i64) -> Update {
        Update {
            at,
            delta: None,
            facts: None,
            tick: Some(t),
        }
    }

    fn is_empty(&self) -> bool {
        self.delta.is_none() && self.facts.is_none() && self.tick.is_none()
    }
}

/// A member's facts beside its rows; each field set only when it moved.
/// (What keeps a root from being read as one rides in the delta, which
/// the mirror keeps: [`Delta::problem`].)
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// Its link: reached (a probe's facts), unreachable, its feed down or
    /// up again.
    pub link: Option<LinkState>,
    /// The hosts publishing into it, read again when they changed (a
    /// member with a [`super::Fleet`]): `last_seen_ms` is each host
    /// record's own, as `fleet --json` prints it.
    pub hosts: Option<Arc<Vec<HostInfo>>>,
    /// The hosts and their roots' counts as their summaries say them, read
    /// before the first listing (a member with a [`super::Fleet`] that keeps
    /// summaries): what a first screen shows while the copies are listed.
    pub summary: Option<Arc<FleetSummary>>,
}

impl Facts {
    fn is_empty(&self) -> bool {
        self.link.is_none() && self.hosts.is_none() && self.summary.is_none()
    }
}

/// How a member is reached, as last heard.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkState {
    /// A probe reached it: what a header says of it ([`super::Link`]).
    Reached(LinkFacts),
    /// A probe, a listing or a read could not reach it: why. What the
    /// member last said stays shown, marked so.
    Unreachable(String),
    /// Its feed stopped (a store that stopped answering; a file root whose
    /// changes cannot be watched): why. Reads may still work.
    FeedDown(String),
    /// Its feed answers again, at this point of the store's history (etcd:
    /// its revision), when it has one.
    FeedUp(Option<i64>),
}

/// What a driver has read, readable from other threads (benches assert a
/// change re-read exactly one key).
#[derive(Debug, Default)]
pub struct Counters {
    reads: AtomicU64,
    listings: AtomicU64,
    stood_in: AtomicU64,
}

impl Counters {
    /// Keys read one by one since start.
    pub fn reads(&self) -> u64 {
        self.reads.load(Relaxed)
    }

    /// Full listings since start (a head not counted).
    pub fn listings(&self) -> u64 {
        self.listings.load(Relaxed)
    }

    /// Full listings, and safety nets the member's mark stood in for,
    /// since start: how often the member was looked at whole.
    pub fn looks(&self) -> u64 {
        self.listings() + self.stood_in.load(Relaxed)
    }
}

/// The member a driver reads: shared (a lane's, on a thread of its own) or
/// borrowed (a waiter's, for as long as it waits).
enum Held<'b> {
    Shared(Arc<dyn Backend>),
    Lent(&'b dyn Backend),
}

/// A whole mirror's feed: none open, open here, or lent to a thread that
/// drains it into the driver's inbox ([`Driver::lend_feed`]).
enum Slot {
    Empty,
    Owned(Box<dyn Changes>),
    Lent,
}

/// One member's mirror, driven.
pub struct Driver<'b> {
    at: OriginIx,
    backend: Held<'b>,
    mirror: Mirror,
    whole: bool,
    head: usize,
    opts: DriveOpts,
    feed: Slot,
    /// A whole listing was taken since start.
    listed: bool,
    /// When the clock last judged (for [`Driver::catch_up`] and
    /// [`Driver::wait`], which keep their own time).
    judged_at: i64,
    /// The hosts are to be read again (a change said they moved).
    hosts_due: bool,
    /// Facts not yet said.
    facts: Facts,
    counters: Arc<Counters>,
    /// The open feed's waker, behind one handle that outlives the feed
    /// ([`Driver::waker`]).
    poke: Arc<std::sync::Mutex<Option<Wake>>>,
}

impl Driver<'static> {
    /// A driver of `member`, on a handle of its own (a lane's thread, a
    /// face that keeps it). `judge` stands in for this machine's pids
    /// where the member's rows are judged by them (tests inject a world);
    /// None: this machine.
    pub fn new(
        member: &Member,
        judge: Option<Judge>,
        want: Want,
        opts: DriveOpts,
        now: i64,
    ) -> Driver<'static> {
        Driver::shared(member.shared(), member.ix, judge, want, opts, now)
    }

    /// A driver of `backend` (the member at `at`) on a handle it keeps (a
    /// face that follows backends of its own, as the publisher its roots).
    pub fn shared(
        backend: Arc<dyn Backend>,
        at: OriginIx,
        judge: Option<Judge>,
        want: Want,
        opts: DriveOpts,
        now: i64,
    ) -> Driver<'static> {
        Driver::build(Held::Shared(backend), at, judge, want, opts, now)
    }
}

impl<'b> Driver<'b> {
    /// A driver of `backend` (the member at `at`), borrowed for as long as
    /// the driver lives: a waiter's or a holder's, which own no handle.
    pub fn over(
        backend: &'b dyn Backend,
        at: OriginIx,
        judge: Option<Judge>,
        want: Want,
        opts: DriveOpts,
        now: i64,
    ) -> Driver<'b> {
        Driver::build(Held::Lent(backend), at, judge, want, opts, now)
    }

    fn build(
        backend: Held<'b>,
        at: OriginIx,
        judge: Option<Judge>,
        want: Want,
        opts: DriveOpts,
        now: i64,
    ) -> Driver<'b> {
        let rules = match &backend {
            Held::Shared(b) => b.rules(),
            Held::Lent(b) => b.rules(),
        };
        // Only a root's lockfiles are judged by this machine's pids.
        let judge = match rules {
            ItemRules::Lockfile => Some(judge.unwrap_or_else(Judge::local)),
            ItemRules::StoreKey | ItemRules::Copy => None,
        };
        let (mirror, whole, head) = match want {
            Want::Whole { head } => (Mirror::new(at, rules, judge, now), true, head),
            Want::Keys(keys) => (Mirror::of_keys(at, rules, judge, keys, now), false, 0),
        };
        let mirror = match opts.words {
            true => mirror,
            false => mirror.wordless(),
        }
        .with_safety_net(opts.safety_net);
        Driver {
            at,
            backend,
            mirror,
            whole,
            head,
            opts,
            feed: Slot::Empty,
            listed: false,
            judged_at: now,
            hosts_due: true,
            facts: Facts::default(),
            counters: Arc::default(),
            poke: Arc::default(),
        }
    }

    pub fn at(&self) -> OriginIx {
        self.at
    }

    /// The member it reads.
    pub fn backend(&self) -> &dyn Backend {
        match &self.backend {
            Held::Shared(b) => &**b,
            Held::Lent(b) => *b,
        }
    }

    /// The feed first, so nothing written during the listing is missed;
    /// then, before anything is listed, the fleet's summaries (when a head
    /// is asked and the member has a fleet that keeps them), then the head (when asked, and
    /// nothing was listed yet), then the whole listing. A driver of named
    /// keys reads its keys.
    pub fn start(&mut self, now: i64) -> Result<Vec<Update>, StoreError> {
        let mut early = Vec::new();
        let rest = self.start_saying(now, &mut |us: Vec<Update>| {
            early.extend(us);
            true
        })?;
        early.extend(rest);
        Ok(early)
    }

    /// [`Driver::start`], what comes before the whole listing (the
    /// summaries, the head, then the first listing's pages as rows, each
    /// batch at least as big as all before it) handed to `say` as soon as
    /// it is read, so a face shows it while the listing is read; the rest
    /// returned.
    pub fn start_saying(
        &mut self,
        now: i64,
        say: &mut (dyn FnMut(Vec<Update>) -> bool + Send),
    ) -> Result<Vec<Update>, StoreError> {
        if !self.whole {
            return self.handle(Input::Feed(Vec::new()), now);
        }
        self.open_feed()?;
        // Only a first screen (a driver asked for a head) wants what the
        // summaries say before the listing; a scrape reads them itself.
        if self.head > 0 && !self.listed {
            self.read_summaries();
            let first = self.update(None);
            if !first.is_empty() {
                say(first);
            }
        }
        if self.head > 0 && !self.listed {
            let backend = borrow(&self.backend);
            if self.mirror.list_head(backend, self.head, now)? {
                say(self.update(None));
            }
        }
        // Read apart from the rows kept (see the mirror's `apart`).
        let backend = borrow(&self.backend);
        let mut pages = pages::Pages::new(self.at, backend.rules(), self.opts.words, now);
        let first = !self.listed;
        let mut on_page = |page: &MemberListing| {
            if first {
                pages.take(page, &mut *say);
            }
        };
        let listed = self
            .mirror
            .list_apart_paged(backend, now, None, &mut on_page);
        self.count();
        listed?;
        self.listed = true;
        self.hosts_due = true;
        self.read_hosts();
        Ok(self.update(None))
    }

    /// The fleet's summaries, when the member has a fleet and every root
    /// has one (O(hosts) reads, whatever the claims); nothing otherwise,
    /// and a failed read is left to the listing, which says the member is
    /// away.
    fn read_summaries(&mut self) {
        let Some(fleet) = self.backend().fleet() else {
            return;
        };
        if let Ok(Some(s)) = fleet.summaries() {
            self.facts.hosts = Some(Arc::new(s.hosts.clone()));
            self.facts.summary = Some(Arc::new(s));
        }
    }

    /// Take one input in; what changed, in order (nothing: an empty list).
    /// A tick is said even when nothing moved, so a face's clock turns.
    pub fn handle(&mut self, input: Input, now: i64) -> Result<Vec<Update>, StoreError> {
        let mut tick = None;
        match input {
            Input::Feed(changes) => changes.into_iter().for_each(|c| self.take(c)),
            Input::FeedEnded => {
                self.feed = Slot::Empty;
            }
            Input::Reread(key) => self.mirror.look_again(&key),
            Input::Relist => self.mirror.relist_soon(),
            Input::Net => self.mirror.net_soon(),
            Input::Tick(t) => {
                self.mirror.tick(t);
                self.judged_at = t;
                tick = Some(t);
            }
        }
        self.round(now, tick)
    }

    /// Bring the mirror up to date without blocking: what the feed brought
    /// since, the clock if a tick is due, every key named read (`metrics`
    /// at each scrape).
    pub fn catch_up(&mut self, now: i64) -> Result<Vec<Update>, StoreError> {
        if self.whole {
            self.open_feed()?;
            self.drain(Duration::ZERO);
        }
        let tick = self.tick_if_due(now);
        self.round(now, tick)
    }

    /// [`Driver::catch_up`], first waiting up to `timeout` for the feed to
    /// bring something (the publisher, which waits on each root in turn).
    /// `now` is when the wait began.
    pub fn wait(&mut self, timeout: Duration, now: i64) -> Result<Vec<Update>, StoreError> {
        let began = Instant::now();
        if self.whole {
            self.open_feed()?;
            self.drain(timeout);
        }
        let now = now + began.elapsed().as_millis() as i64;
        let tick = self.tick_if_due(now);
        self.round(now, tick)
    }

    /// A handle that ends a [`Driver::wait`] blocked on whichever feed is
    /// open then, from any thread (else the wait lasts its timeout).
    pub fn waker(&self) -> Wake {
        let poke = Arc::clone(&self.poke);
        Arc::new(move || {
            let feed = poke.lock().unwrap_or_else(|e| e.into_inner());
            feed.iter().for_each(|wake| wake());
        })
    }

    /// Read `key` again at the next round, whatever the feed said (a
    /// waiter's safety re-check, a holder's look before it gives its claim
    /// back).
    pub fn look_again(&mut self, key: &str) {
        self.mirror.look_again(key);
    }

    /// The row of `key` and its tenure, None while the key is free. A walk
    /// of every row: meant for a driver of named keys, which has few.
    pub fn row(&self, key: &str) -> Option<(&Status, Option<&Tenure>)> {
        self.mirror.row_of_key(key)
    }

    /// The counts and hazards now: the one count of this member.
    pub fn tally(&mut self) -> Tally {
        self.mirror.tally()
    }

    /// Every row, in no order.
    pub fn rows(&self) -> impl Iterator<Item = &Status> + '_ {
        self.mirror.rows()
    }

    /// What keeps the member from being read as a normal one now.
    pub fn problem(&self) -> Option<&RootProblem> {
        self.mirror.problem()
    }

    /// Nothing listed, or nothing in it.
    pub fn is_empty(&self) -> bool {
        self.mirror.is_empty()
    }

    /// A whole listing was taken since start.
    pub fn listed(&self) -> bool {
        self.listed
    }

    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// The feed this driver opened, for a thread that drains it into the
    /// driver's inbox as [`Input::Feed`] (and [`Input::FeedEnded`] when it
    /// ends). None: none was opened since the last one was lent.
    pub fn lend_feed(&mut self) -> Option<Box<dyn Changes>> {
        match std::mem::replace(&mut self.feed, Slot::Lent) {
            Slot::Owned(f) => Some(f),
            other => {
                self.feed = other;
                None
            }
        }
    }

    /// A whole mirror's feed, opened when there is none (the first, or one
    /// that ended: then everything is listed again, since what it missed
    /// cannot be known).
    fn open_feed(&mut self) -> Result<(), StoreError> {
        if !matches!(self.feed, Slot::Empty) {
            return Ok(());
        }
        let feed = self.backend().changes(None)?;
        *self.poke.lock().unwrap_or_else(|e| e.into_inner()) = feed.waker();
        self.feed = Slot::Owned(feed);
        if self.listed {
            self.mirror.relist_soon();
            self.hosts_due = true;
        }
        Ok(())
    }

    /// What an owned feed brings within `first` (then whatever else its
    /// burst brings).
    fn drain(&mut self, first: Duration) {
        let Slot::Owned(feed) = &mut self.feed else {
            return;
        };
        let (changes, ended) = burst(&mut **feed, first, self.opts.debounce);
        changes.into_iter().for_each(|c| self.take(c));
        if let Some(why) = ended {
            self.feed = Slot::Empty;
            self.facts.link = Some(LinkState::FeedDown(why));
        }
    }

    fn tick_if_due(&mut self, now: i64) -> Option<i64> {
        if now - self.judged_at < self.opts.tick_ms {
            return None;
        }
        self.mirror.tick(now);
        self.judged_at = now;
        Some(now)
    }

    /// One change in: what the mirror keeps, it keeps; the member's own
    /// facts become facts.
    fn take(&mut self, c: Change) {
        let Some(rest) = self.mirror.apply(c) else {
            return;
        };
        match rest {
            Change::Down { why } => self.facts.link = Some(LinkState::FeedDown(why)),
            Change::Up { at } => {
                let at = at.and_then(|c| c.as_u64()).map(|n| n as i64);
                self.facts.link = Some(LinkState::FeedUp(at))
            }
            Change::Members => self.hosts_due = true,
            // What the mirror keeps, it has kept.
            Change::Claim { .. } | Change::Entry { .. } | Change::Relist { .. } => {}
        }
    }

    /// List (when never listed), read what was named, and say what moved.
    fn round(&mut self, now: i64, tick: Option<i64>) -> Result<Vec<Update>, StoreError> {
        if self.whole && !self.listed {
            let mut out = self.start(now)?;
            if let Some(t) = tick {
                match out.last_mut() {
                    Some(u) => u.tick = Some(t),
                    None => out.push(Update::tick(self.at, t)),
                }
            }
            return Ok(out);
        }
        if self.whole {
            // A feed that ended is opened again (and all listed again).
            self.open_feed()?;
        }
        let listings = self.mirror.listings;
        let backend = borrow(&self.backend);
        let settled = self.mirror.settle(backend, now);
        if self.mirror.listings != listings {
            // Changes were lost: the hosts' too, perhaps.
            self.hosts_due = true;
        }
        self.count();
        settled?;
        self.read_hosts();
        Ok(self.update(tick))
    }

    /// The hosts, when they are due and the member has them. A failed read
    /// stays due (the listing that follows says the member is away).
    fn read_hosts(&mut self) {
        // A driver of named keys says nothing but their rows: a waiter or
        // a holder never waits on a read of the hosts.
        if !self.hosts_due || !self.whole {
            return;
        }
        let Some(fleet) = self.backend().fleet() else {
            self.hosts_due = false;
            return;
        };
        if let Ok(hosts) = fleet.hosts() {
            self.facts.hosts = Some(Arc::new(hosts));
            self.hosts_due = false;
        }
    }

    fn count(&self) {
        self.counters.reads.store(self.mirror.reads, Relaxed);
        self.counters.listings.store(self.mirror.listings, Relaxed);
        self.counters.stood_in.store(self.mirror.stood_in, Relaxed);
    }

    /// What the mirror and the facts owe the face, and the clock.
    fn update(&mut self, tick: Option<i64>) -> Vec<Update> {
        let facts = std::mem::take(&mut self.facts);
        let u = Update {
            at: self.at,
            delta: self.mirror.take_delta(),
            facts: (!facts.is_empty()).then_some(facts),
            tick,
        };
        if u.is_empty() {
            return Vec::new();
        }
        vec![u]
    }
}

/// The member behind `held`, borrowed apart from the driver's other
/// fields (the mirror reads through it while it changes).
fn borrow<'a>(held: &'a Held<'_>) -> &'a dyn Backend {
    match held {
        Held::Shared(b) => &**b,
        Held::Lent(b) => *b,
    }
}
