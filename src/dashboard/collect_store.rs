//! The store collector: the dashboard over a store with a connection
//! (etcd). It lists once, then drains the store's one change feed and turns
//! each change into the model's own messages: a claim re-read with
//! `Store::status`, an event into the events pane, a re-list (with a
//! notice) when the store lost changes, and the watch's ups and downs.
//!
//! Three threads, so that none waits on another's silence:
//! - the collector (this file's [`Collector`]): the feed and the reads it
//!   causes; a read of a store that stopped answering blocks it for up to
//!   `--timeout`, which is why it does not own the clock;
//! - the clock: one tick a second, on the second, so every countdown (ages,
//!   TTLs, leases, "disconnected 12s ago") moves together whatever the
//!   store does;
//! - the probe: once a second, on its own connection with a short timeout,
//!   asks the store for the header's facts (members, leader, revision). Its
//!   failing is how a stopped store shows as disconnected within a couple
//!   of seconds, even while the watch's connection just hangs silent.

use super::action::Action;
use super::app::EVENTS_RING;
use super::store_view::StoreMsg;
use crate::claims::now_ms;
use crate::events::tail::{Event, Line};
use crate::store::fleet::Places;
use crate::store::{open, Change, Changes, OpenOpts, Store, StoreError, StoreUrl, Tenure};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::sync::mpsc::Sender;
use std::time::Duration;

/// How to open the store again (the probe and the op worker each have
/// their own connection).
#[derive(Debug, Clone)]
pub struct Source {
    pub url: StoreUrl,
    pub opts: OpenOpts,
}

impl Source {
    pub fn open(&self) -> Result<Box<dyn Store>, StoreError> {
        open(&self.url, &self.opts)
    }
}

/// The probe's own timeout: a stopped store must show as disconnected
/// well before a command's `--timeout` would give up on it.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Between two probes.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);
/// After a read failed, before trying the claims it concerned again.
const RETRY: Duration = Duration::from_secs(1);
/// Claims in the first screen's head listing: one page of etcd's.
pub const HEAD: usize = 1000;
/// Most changes taken in one go before the reads they call for.
const BATCH: usize = 1024;

/// An events-log line for the events pane: the event exactly as stored.
pub fn line_of(event: &Event) -> Line {
    Line {
        text: event.value().to_string(),
        offset: 0,
        truncated: false,
    }
}

/// Start the clock and the probe; the collector runs on the caller's
/// `store` (opened already, so that a store that cannot be opened is said
/// before the terminal is taken).
pub fn spawn(store: Box<dyn Store>, source: &Source, tx: &Sender<Action>) -> std::io::Result<()> {
    let out = tx.clone();
    std::thread::Builder::new()
        .name("claimtop-clock".into())
        .spawn(move || tick_each_second(out))?;
    let (src, out) = (source.clone(), tx.clone());
    std::thread::Builder::new()
        .name("claimtop-probe".into())
        .spawn(move || probe(src, out))?;
    let out = tx.clone();
    std::thread::Builder::new()
        .name("claimtop-collect".into())
        .spawn(move || Collector::new(store).run(&out))?;
    Ok(())
}

/// One tick a second, on the second, until the model hangs up.
fn tick_each_second(out: Sender<Action>) {
    loop {
        let now = now_ms();
        let next = now - now.rem_euclid(1000) + 1000;
        std::thread::sleep(Duration::from_millis((next - now) as u64));
        if out.send(Action::Tick(now_ms())).is_err() {
            return;
        }
    }
}

/// Ask the store for its header facts once a second; a failure (or a store
/// that cannot be opened) is the store being unreachable.
fn probe(source: Source, out: Sender<Action>) {
    let mut opts = source.opts.clone();
    opts.timeout = Some(opts.timeout.map_or(PROBE_TIMEOUT, |t| t.min(PROBE_TIMEOUT)));
    let source = Source { opts, ..source };
    let mut store: Option<Box<dyn Store>> = None;
    loop {
        let answer = match &store {
            Some(s) => s.info(),
            None => source.open().and_then(|s| {
                let info = s.info();
                store = Some(s);
                info
            }),
        };
        let msg = match answer {
            Ok(Some(info)) => StoreMsg::Info { info, at: now_ms() },
            // A store with nothing to say in a header has no connection to
            // lose: the probe has no more to do.
            Ok(None) => return,
            Err(e) => StoreMsg::Unreachable {
                why: e.to_string(),
                at: now_ms(),
            },
        };
        if out.send(Action::Store(Box::new(msg))).is_err() {
            return;
        }
        std::thread::sleep(PROBE_EVERY);
    }
}

/// The feed and the reads it causes.
pub struct Collector {
    store: Box<dyn Store>,
    /// Keys the feed named whose re-read failed: read again on the next
    /// round.
    unread: BTreeSet<String>,
    /// When each claim's lease should run out, as last read: a claim still
    /// there after its lease's end was kept alive (`claimtop run`), which
    /// changes no key, so it is re-read to learn its new remaining time.
    deadlines: BinaryHeap<Reverse<(i64, String)>>,
    /// The revision the view is known complete at (the last listing's).
    revision: Option<i64>,
    /// The fleet must be read again (a host came, went or rewrote its
    /// record, the store was re-listed, or the last reading failed).
    fleet_due: bool,
    /// The hosts of the last fleet reading: a published claim of any other
    /// host calls for a fleet reading, which names it.
    hosts: BTreeSet<String>,
    /// Each host's roots, from the last fleet reading: what a mirrored
    /// event says of where it comes from.
    places: Places,
}

/// An event of this round, in the order the feed gave it.
enum Heard {
    Own(Event),
    /// Mirrored by a publishing host from one of its roots.
    Published {
        host_id: String,
        root_id: String,
        event: Event,
    },
}

impl Collector {
    pub fn new(store: Box<dyn Store>) -> Collector {
        Collector {
            store,
            unread: BTreeSet::new(),
            deadlines: BinaryHeap::new(),
            revision: None,
            fleet_due: true,
            hosts: BTreeSet::new(),
            places: Places::default(),
        }
    }

    /// Read the fleet again if it is due; a failure leaves it due for the
    /// next round.
    pub fn read_fleet(&mut self) -> Option<Action> {
        if !std::mem::take(&mut self.fleet_due) {
            return None;
        }
        match self.store.fleet() {
            Ok(fleet) => {
                let fleet = fleet.unwrap_or_default();
                self.hosts = fleet.hosts.iter().map(|h| h.host_id.clone()).collect();
                self.places = Places::of(&fleet.hosts);
                Some(Action::Store(Box::new(StoreMsg::Fleet {
                    fleet: Box::new(fleet),
                    at: now_ms(),
                })))
            }
            Err(_) => {
                self.fleet_due = true;
                None
            }
        }
    }

    /// Re-read these published claims, each (host, root, key); the ones
    /// that cannot be read now are left to a fleet reading.
    fn read_published(&mut self, named: BTreeSet<(String, String, String)>) -> Vec<Action> {
        let mut out = Vec::with_capacity(named.len());
        for (host_id, root_id, key) in named {
            if self.fleet_due {
                break;
            }
            match self.store.fleet_item(&host_id, &root_id, &key) {
                Ok(item) => out.push(Action::Store(Box::new(StoreMsg::Published {
                    host_id,
                    root_id,
                    key,
                    item,
                    at: now_ms(),
                }))),
                Err(_) => self.fleet_due = true,
            }
        }
        out
    }

    /// List everything (a first screen, or a re-list after lost changes).
    pub fn list(&mut self, resync: Option<String>) -> Result<Action, StoreError> {
        let listing = self.store.list()?;
        let at = now_ms();
        self.revision = listing.revision.or(self.revision);
        self.deadlines.clear();
        for (s, t) in listing.sweep.claims.iter().zip(&listing.tenures) {
            self.expect_end(&s.key, t.as_ref(), at);
        }
        self.unread.clear();
        Ok(Action::Store(Box::new(StoreMsg::Listed {
            listing: Box::new(listing),
            at,
            resync,
        })))
    }

    /// Re-read these keys; those that cannot be read now stay for later.
    pub fn read(&mut self, keys: BTreeSet<String>) -> Option<Action> {
        let mut items = Vec::with_capacity(keys.len());
        let mut failed = false;
        for key in keys {
            if failed {
                // The store stopped answering: do not spend a timeout per key.
                self.unread.insert(key);
                continue;
            }
            match self.store.status(&key) {
                Ok(f) => {
                    self.expect_end(&key, f.tenure.as_ref(), now_ms());
                    items.push((f.outcome, f.tenure));
                }
                Err(_) => {
                    failed = true;
                    self.unread.insert(key);
                }
            }
        }
        (!items.is_empty()).then(|| {
            Action::Store(Box::new(StoreMsg::Claims {
                items,
                at: now_ms(),
            }))
        })
    }

    /// Remember when `key`'s lease should end. A lease with no time left
    /// is ending now, and the watch will say so: nothing to expect.
    fn expect_end(&mut self, key: &str, tenure: Option<&Tenure>, at: i64) {
        if let Some(t) = tenure.filter(|t| t.lease.remaining_s > 0) {
            let end = at + t.lease.remaining_s * 1000;
            self.deadlines.push(Reverse((end, key.to_string())));
        }
    }

    /// The keys whose lease should have ended by `now`.
    fn leases_due(&mut self, now: i64) -> BTreeSet<String> {
        let mut due = BTreeSet::new();
        while let Some(Reverse((end, _))) = self.deadlines.peek() {
            // A second's grace: etcd ends a lease on its own clock.
            if *end + 1000 > now {
                break;
            }
            if let Some(Reverse((_, key))) = self.deadlines.pop() {
                due.insert(key);
            }
        }
        due
    }

    /// Take one batch of changes (waiting up to `wait` for the first) and
    /// turn it into actions, in order.
    pub fn drain(
        &mut self,
        feed: &mut dyn Changes,
        wait: Duration,
    ) -> Result<Vec<Action>, StoreError> {
        let mut out = Vec::new();
        let mut keys = std::mem::take(&mut self.unread);
        let mut events = Vec::new();
        let mut relist = None;
        let mut published = BTreeSet::new();
        let mut first = feed.next(wait)?;
        let mut taken = 0;
        while let Some(change) = first.take() {
            taken += 1;
            match change {
                Change::Claim { key } => {
                    keys.insert(key);
                }
                Change::Event(e) => events.push(Heard::Own(e)),
                Change::PublishedEvent {
                    host_id,
                    root_id,
                    event,
                } => {
                    // A root the last reading did not name: the fleet
                    // names it (read below, before the line is worded).
                    if !self.places.knows(&host_id, &root_id) {
                        self.fleet_due = true;
                    }
                    events.push(Heard::Published {
                        host_id,
                        root_id,
                        event,
                    });
                }
                Change::Resync { why } => relist = Some(why),
                Change::Host { .. } => self.fleet_due = true,
                Change::Published {
                    host_id,
                    root_id,
                    key,
                } => {
                    if !self.hosts.contains(&host_id) {
                        self.fleet_due = true;
                    }
                    published.insert((host_id, root_id, key));
                }
                Change::Disconnected { why } => {
                    out.push(Action::Store(Box::new(StoreMsg::WatchDown {
                        why,
                        at: now_ms(),
                    })))
                }
                Change::Connected { revision } => {
                    out.push(Action::Store(Box::new(StoreMsg::WatchUp {
                        revision,
                        at: now_ms(),
                    })))
                }
                // What only a file root's feed says: a file root is not
                // shown through this collector.
                Change::Misnamed { .. }
                | Change::Entry { .. }
                | Change::LogAppended(_)
                | Change::LogReset
                | Change::LogTrouble(_) => {}
            }
            if taken < BATCH {
                first = feed.next(Duration::ZERO)?;
            }
        }
        keys.extend(self.leases_due(now_ms()));
        match relist {
            // A re-list covers every key named so far.
            // A re-list that fails ends the round: `run` starts over with a
            // fresh listing once the store answers.
            Some(why) => {
                out.push(self.list(Some(why))?);
                self.fleet_due = true;
            }
            None if !keys.is_empty() => out.extend(self.read(keys)),
            None => {}
        }
        // A fleet reading covers every published claim named so far.
        if !self.fleet_due {
            let read = self.read_published(published);
            out.extend(read);
        }
        out.extend(self.read_fleet());
        if !events.is_empty() {
            // Worded after the fleet reading, which names new places.
            let lines = events
                .into_iter()
                .map(|e| match e {
                    Heard::Own(e) => line_of(&e),
                    Heard::Published {
                        host_id,
                        root_id,
                        event,
                    } => line_of(&self.places.mark(&host_id, &root_id, event)),
                })
                .collect();
            out.push(Action::EventsAppended(lines));
        }
        Ok(out)
    }

    /// List, then follow the feed until the model hangs up. A listing that
    /// fails (the store is away at start) is tried again each [`RETRY`].
    pub fn run(mut self, out: &Sender<Action>) {
        let mut first = true;
        // A big store takes seconds to list: its first page shows at once.
        if let Ok(Some(head)) = self.store.list_head(HEAD) {
            let at = now_ms();
            let msg = StoreMsg::Head {
                listing: Box::new(head),
                at,
            };
            if out.send(Action::Store(Box::new(msg))).is_err() {
                return;
            }
        }
        loop {
            let listed = self.list(None);
            let listed = match listed {
                Ok(a) => a,
                Err(e) => {
                    let msg = StoreMsg::Unreachable {
                        why: e.to_string(),
                        at: now_ms(),
                    };
                    if out.send(Action::Store(Box::new(msg))).is_err() {
                        return;
                    }
                    std::thread::sleep(RETRY);
                    continue;
                }
            };
            if out.send(listed).is_err() {
                return;
            }
            // The store's own claims first, then what hosts publish: the
            // fleet's rows join the listing as soon as they are read.
            self.fleet_due = true;
            if let Some(fleet) = self.read_fleet() {
                if out.send(fleet).is_err() {
                    return;
                }
            }
            give_back_memory();
            // The model frees the listing it replaced only once it has
            // taken the new one in: give that back too, at the first quiet
            // round.
            let mut trim_when_quiet = true;
            if first {
                first = false;
                if let Ok(mut events) = self.store.events(EVENTS_RING) {
                    // What publishing hosts mirrored joins the store's own
                    // by time, as `events` prints them.
                    if let Ok(published) = self.store.fleet_events(EVENTS_RING) {
                        if !published.is_empty() {
                            events.extend(published);
                            events.sort_by(|a, b| a.ts().cmp(&b.ts()));
                            let from = events.len().saturating_sub(EVENTS_RING);
                            events.drain(..from);
                        }
                    }
                    let lines = events.iter().map(line_of).collect();
                    if out.send(Action::EventsAppended(lines)).is_err() {
                        return;
                    }
                }
            }
            let mut feed = match self.store.changes_after(self.revision) {
                Ok(f) => f,
                Err(_) => {
                    std::thread::sleep(RETRY);
                    continue;
                }
            };
            loop {
                let wait = if self.unread.is_empty() {
                    RETRY
                } else {
                    RETRY / 4
                };
                match self.drain(&mut *feed, wait) {
                    Ok(actions) if actions.is_empty() && trim_when_quiet => {
                        trim_when_quiet = false;
                        give_back_memory();
                    }
                    Ok(actions) => {
                        for a in actions {
                            if out.send(a).is_err() {
                                return;
                            }
                        }
                    }
                    // The feed ended or a re-list failed: start over with a
                    // fresh listing and feed.
                    Err(_) => {
                        std::thread::sleep(RETRY);
                        break;
                    }
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Root;
    use crate::store::file::FileStore;
    use std::collections::VecDeque;

    /// A feed that plays a fixed list of changes, then stays quiet.
    struct Played(VecDeque<Change>);

    impl Changes for Played {
        fn next(&mut self, _: Duration) -> Result<Option<Change>, StoreError> {
            Ok(self.0.pop_front())
        }
    }

    /// What one round of `changes` turns into: (published re-reads, fleet
    /// readings, listings).
    fn round(c: &mut Collector, changes: Vec<Change>) -> (usize, usize, usize) {
        let mut feed = Played(changes.into());
        let actions = c.drain(&mut feed, Duration::ZERO).expect("a round");
        let mut n = (0, 0, 0);
        for a in actions {
            if let Action::Store(m) = a {
                match *m {
                    StoreMsg::Published { .. } => n.0 += 1,
                    StoreMsg::Fleet { .. } => n.1 += 1,
                    StoreMsg::Listed { .. } => n.2 += 1,
                    _ => {}
                }
            }
        }
        n
    }

    fn published(host: &str, key: &str) -> Change {
        Change::Published {
            host_id: host.into(),
            root_id: "00000000000000aa".into(),
            key: key.into(),
        }
    }

    /// The events-pane lines one round of `changes` appends, and how many
    /// fleet readings it made.
    fn heard(c: &mut Collector, changes: Vec<Change>) -> (Vec<serde_json::Value>, usize) {
        let mut feed = Played(changes.into());
        let actions = c.drain(&mut feed, Duration::ZERO).expect("a round");
        let (mut lines, mut fleets) = (Vec::new(), 0);
        for a in actions {
            match a {
                Action::EventsAppended(got) => lines.extend(
                    got.iter()
                        .map(|l| serde_json::from_str(&l.text).expect("a JSON line")),
                ),
                Action::Store(m) if matches!(*m, StoreMsg::Fleet { .. }) => fleets += 1,
                _ => {}
            }
        }
        (lines, fleets)
    }

    fn mirrored(host: &str, root: &str, key: &str) -> Change {
        let line = format!(
            r#"{{"ts":"2026-12-01T05:00:00Z","type":"claim_acquired","source":"fno-loop","data":{{"key":"{key}"}}}}"#
        );
        Change::PublishedEvent {
            host_id: host.into(),
            root_id: root.into(),
            event: crate::events::tail::parse_event(&line).expect("an event"),
        }
    }

    #[test]
    fn a_mirrored_event_reaches_the_pane_in_feed_order_marked_with_its_host_and_root() {
        use crate::store::fleet::{HostInfo, PublishedRoot};
        let td = tempfile::TempDir::new().expect("temp root");
        let store = FileStore::new(Root::with_events_here(td.path()));
        let mut c = Collector::new(Box::new(store));
        assert_eq!(round(&mut c, vec![]), (0, 1, 0));
        c.places = Places::of(&[HostInfo {
            host_id: "m1".into(),
            hostname: "alpha".into(),
            online: true,
            last_seen_ms: 0,
            roots: vec![PublishedRoot::new(
                "00000000000000aa".into(),
                "/srv/a".into(),
            )],
            counts: Default::default(),
        }]);
        c.hosts.insert("m1".into());
        let own = Change::Event(
            crate::events::tail::parse_event(r#"{"type":"claim_released","data":{"key":"s"}}"#)
                .expect("an event"),
        );
        let (lines, fleets) = heard(&mut c, vec![mirrored("m1", "00000000000000aa", "k"), own]);
        assert_eq!(fleets, 0, "a known place needs no fleet reading");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["host"], "alpha");
        assert_eq!(lines[0]["host_id"], "m1");
        assert_eq!(lines[0]["root"], "/srv/a");
        assert_eq!(
            lines[0]["data"]["key"], "k",
            "the host's line as it wrote it"
        );
        assert!(
            lines[1].get("host").is_none(),
            "the store's own event: {}",
            lines[1]
        );

        // A root the last reading did not name: the fleet is read (here it
        // names nobody), and the line says what the feed said, its ids.
        let (lines, fleets) = heard(&mut c, vec![mirrored("m9", "00000000000000bb", "q")]);
        assert_eq!(fleets, 1);
        assert_eq!(lines[0]["host"], "m9");
        assert_eq!(lines[0]["root"], "00000000000000bb");
    }

    #[test]
    fn a_published_change_re_reads_that_copy_and_a_host_change_or_resync_re_reads_the_fleet() {
        let td = tempfile::TempDir::new().expect("temp root");
        let store = FileStore::new(Root::with_events_here(td.path()));
        let mut c = Collector::new(Box::new(store));
        // The first round reads the fleet (due from the start), and only it.
        assert_eq!(round(&mut c, vec![]), (0, 1, 0));
        assert_eq!(round(&mut c, vec![]), (0, 0, 0), "no polling");
        c.hosts.insert("m1".into());
        assert_eq!(
            round(&mut c, vec![published("m1", "a"), published("m1", "b")]),
            (2, 0, 0)
        );
        // A copy of a host the last reading did not name: the fleet names it.
        assert_eq!(round(&mut c, vec![published("m9", "a")]), (0, 1, 0));
        c.hosts.insert("m1".into());
        assert_eq!(
            round(
                &mut c,
                vec![
                    published("m1", "a"),
                    Change::Host {
                        host_id: "m1".into()
                    }
                ]
            ),
            (0, 1, 0)
        );
        c.hosts.insert("m1".into());
        let resync = Change::Resync {
            why: "compacted".into(),
        };
        assert_eq!(round(&mut c, vec![resync]), (0, 1, 1));
    }
}
