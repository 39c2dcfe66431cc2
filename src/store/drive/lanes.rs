//! Every member of a store driven at once, each on a lane of its own: a
//! change re-reads exactly its own member's key, and a member that blocks
//! on a read (a store away, for up to its `--timeout`) never delays
//! another. Beside the lanes: one thread per lane draining its feed into
//! its inbox, one clock for all, and a probe per member reached over a
//! connection.
//!
//! What a lane says goes to one channel of [`Update`]s, each lane's in its
//! own order (its deltas before the tick they were judged at).

use super::memory::{give_back_memory, keep_big_buffers_mapped};
use super::{burst, DriveOpts, Driver, Facts, Input, LinkState, Update, Want};
use crate::claims::now_ms;
use crate::store::compose::{OriginIx, Store};
use crate::store::{Backend, Changes, StoreError};
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Claims in a first screen's head listing.
pub const HEAD: usize = 1000;
/// A probe's own timeout: a stopped store must show as unreachable well
/// before a command's `--timeout` would give up on it.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Between two probes.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);
/// How long a drain thread waits on a quiet feed before it looks again
/// (its feed's closer ends the wait at once where the feed has one).
const QUIET_WAIT: Duration = Duration::from_secs(3600);

/// Each member's inbox and counters, by [`OriginIx`].
pub struct Lanes {
    /// Where a face tells a lane what it did ([`Input::Reread`] after an
    /// op, [`Input::Relist`] after a repair).
    pub inboxes: Vec<Sender<Input>>,
    pub counters: Vec<Arc<super::Counters>>,
}

/// Every member of `store` on a lane of its own, its head first, then
/// its whole listing, then what changes; one clock ticking them all every
/// `opts.tick_ms`, on the tick; a probe once a second for every member
/// reached over a connection. Runs until `out`'s receiver is dropped.
pub fn spawn_all(store: &Arc<Store>, opts: DriveOpts, out: Sender<Update>) -> io::Result<Lanes> {
    keep_big_buffers_mapped();
    let now = now_ms();
    let mut lanes = Lanes {
        inboxes: Vec::new(),
        counters: Vec::new(),
    };
    let mut clocked = Vec::new();
    let fleets = store
        .members()
        .iter()
        .filter(|m| m.backend().fleet().is_some())
        .count();
    let gate = Arc::new(Gate {
        left: Mutex::new(fleets),
        opened: Condvar::new(),
    });
    for m in store.members() {
        let (tx, rx) = channel();
        let gate = match (fleets, m.backend().fleet().is_some()) {
            (0, _) => Turn::Free,
            (_, true) => Turn::Opens(Arc::clone(&gate)),
            (_, false) => Turn::Waits(Arc::clone(&gate)),
        };
        let driver = Driver::new(m, None, Want::Whole { head: HEAD }, opts, now);
        lanes.counters.push(driver.counters());
        let shown = Arc::new(Ticks::default());
        let lane = Lane {
            driver,
            inbox: rx,
            to_self: tx.clone(),
            out: out.clone(),
            ticks: Arc::clone(&shown),
            debounce: opts.debounce,
            closer: None,
            gate,
        };
        std::thread::Builder::new()
            .name(format!("claimtop-lane{}", m.ix.0))
            .spawn(move || lane.run())?;
        if m.backend().link().is_some() {
            let (probed, out, at) = (m.shared(), out.clone(), m.ix);
            std::thread::Builder::new()
                .name(format!("claimtop-probe{}", m.ix.0))
                .spawn(move || probe(probed, at, &out))?;
        }
        clocked.push((m.ix, tx.clone(), shown));
        lanes.inboxes.push(tx);
    }
    let every = opts.tick_ms.max(1);
    std::thread::Builder::new()
        .name("claimtop-clock".into())
        .spawn(move || tick_every(clocked, out, every))?;
    Ok(lanes)
}

/// Where one lane's clock stands.
struct Ticks {
    /// The newest tick the lane has judged at.
    judged: AtomicI64,
    /// The newest tick said for the member, by the lane or by the clock.
    said: AtomicI64,
}

impl Default for Ticks {
    fn default() -> Ticks {
        Ticks {
            judged: AtomicI64::new(i64::MIN),
            said: AtomicI64::new(i64::MIN),
        }
    }
}

/// One member's lane.
struct Lane {
    driver: Driver<'static>,
    inbox: Receiver<Input>,
    to_self: Sender<Input>,
    out: Sender<Update>,
    ticks: Arc<Ticks>,
    debounce: Option<Duration>,
    /// Ends the feed lent to the drain thread, so it stops with the lane.
    closer: Option<Box<dyn FnOnce() + Send>>,
    /// Where its first listing waits for the fleets' summaries.
    gate: Turn,
}

/// The longest a lane waits for the fleets' summaries before it lists.
const SUMMARIES_FIRST: Duration = Duration::from_secs(1);

/// Opened once every lane of a member with a fleet has said what it says
/// first (its summaries): the other lanes list after that, so a first
/// screen's few summary reads are not read against every copy's listing
/// at once (on a busy store that made them wait a second).
struct Gate {
    /// Fleets' lanes yet to say their first.
    left: Mutex<usize>,
    opened: Condvar,
}

impl Gate {
    fn open(&self) {
        if let Ok(mut left) = self.left.lock() {
            *left = left.saturating_sub(1);
        }
        self.opened.notify_all();
    }

    fn wait(&self, most: Duration) {
        if let Ok(left) = self.left.lock() {
            let _ = self.opened.wait_timeout_while(left, most, |left| *left > 0);
        }
    }
}

/// A lane's part at the gate.
enum Turn {
    /// No member has a fleet: nothing to wait for.
    Free,
    /// Its member has a fleet: it opens the gate once it said its first.
    Opens(Arc<Gate>),
    /// It lists once the gate is open (or [`SUMMARIES_FIRST`] passed).
    Waits(Arc<Gate>),
}

impl Lane {
    fn run(mut self) {
        let (out, ticks, at) = (self.out.clone(), Arc::clone(&self.ticks), self.driver.at());
        if let Turn::Waits(gate) = &self.gate {
            gate.wait(SUMMARIES_FIRST);
        }
        let mut opens = match &self.gate {
            Turn::Opens(gate) => Some(Arc::clone(gate)),
            _ => None,
        };
        // The summaries and the head go out as soon as they are read: a
        // face shows them while the whole listing is read.
        let mut gone = false;
        let first = self.driver.start_saying(now_ms(), &mut |us| {
            gone |= !send_to(&out, &ticks, at, Ok(us), None);
            if let Some(gate) = opens.take() {
                gate.open();
            }
            !gone
        });
        // Said nothing first (no summaries, no head): open it now.
        if let Some(gate) = opens.take() {
            gate.open();
        }
        if gone || !self.send(first, None) {
            return self.stop();
        }
        // The listing's raw pages are freed by now.
        give_back_memory();
        let mut pending = VecDeque::new();
        // The face frees the rows a listing replaced once it took the new
        // ones: a second later, that is given back too.
        let mut trim_at = Some(now_ms() + 1000);
        loop {
            if let Some(feed) = self.driver.lend_feed() {
                self.lend(feed);
            }
            let Some(input) = next_input(&self.inbox, &mut pending) else {
                return self.stop();
            };
            let tick = match &input {
                Input::Tick(t) => Some(*t),
                _ => None,
            };
            let got = self.driver.handle(input, now_ms());
            if let Some(t) = tick {
                self.ticks.judged.fetch_max(t, Ordering::SeqCst);
            }
            let whole = matches!(&got, Ok(us) if us.iter().any(|u| u.delta.as_ref().is_some_and(|d| d.whole.is_some())));
            if !self.send(got, tick) {
                return self.stop();
            }
            let now = now_ms();
            if trim_at.is_some_and(|t| now >= t) {
                trim_at = None;
                give_back_memory();
            }
            if whole {
                trim_at = Some(now + 1000);
            }
        }
    }

    /// Drain `feed` into this lane's inbox on a thread of its own.
    fn lend(&mut self, feed: Box<dyn Changes>) {
        if let Some(old) = self.closer.take() {
            old();
        }
        self.closer = feed.closer();
        let (to, debounce) = (self.to_self.clone(), self.debounce);
        let started = std::thread::Builder::new()
            .name(format!("claimtop-feed{}", self.driver.at().0))
            .spawn(move || drain(feed, &to, debounce));
        if started.is_err() {
            // No thread for it: the feed is gone, so say it ended (the
            // next round opens another and lists again).
            let _ = self.to_self.send(Input::FeedEnded);
        }
    }

    /// Say what the driver said (a failure as the member unreachable), the
    /// tick only if no newer one was said for this member; false once the
    /// face is gone.
    fn send(&self, got: Result<Vec<Update>, StoreError>, tick: Option<i64>) -> bool {
        send_to(&self.out, &self.ticks, self.driver.at(), got, tick)
    }

    fn stop(mut self) {
        if let Some(close) = self.closer.take() {
            close();
        }
    }
}

/// Say what a lane's driver said (a failure as the member unreachable),
/// the tick only if no newer one was said for this member; false once the
/// face is gone.
fn send_to(
    out: &Sender<Update>,
    ticks: &Ticks,
    at: OriginIx,
    got: Result<Vec<Update>, StoreError>,
    tick: Option<i64>,
) -> bool {
    let updates = match got {
        Ok(us) => us,
        Err(e) => vec![Update {
            at,
            delta: None,
            facts: Some(Facts {
                link: Some(LinkState::Unreachable(e.to_string())),
                ..Facts::default()
            }),
            tick,
        }],
    };
    for mut u in updates {
        if let Some(t) = u.tick {
            if ticks.said.fetch_max(t, Ordering::SeqCst) >= t {
                u.tick = None;
            }
        }
        if u.is_empty() {
            continue;
        }
        if out.send(u).is_err() {
            return false;
        }
    }
    true
}

/// The next input, a run of ticks folded into the newest (a lane that was
/// blocked for seconds judges once, at the latest second); None once
/// every sender is gone.
fn next_input(inbox: &Receiver<Input>, pending: &mut VecDeque<Input>) -> Option<Input> {
    if pending.is_empty() {
        pending.push_back(inbox.recv().ok()?);
    }
    loop {
        match inbox.try_recv() {
            Ok(i) => pending.push_back(i),
            Err(TryRecvError::Empty) => break,
            // Said by what is pending; then the next `recv` ends it.
            Err(TryRecvError::Disconnected) => break,
        }
    }
    let first = pending.pop_front()?;
    if !matches!(first, Input::Tick(_)) {
        return Some(first);
    }
    let mut newest = first;
    while matches!(pending.front(), Some(Input::Tick(_))) {
        newest = pending.pop_front()?;
    }
    Some(newest)
}

/// Hand a feed's changes to its lane, a burst at a time, until either
/// side ends.
fn drain(mut feed: Box<dyn Changes>, to: &Sender<Input>, debounce: Option<Duration>) {
    loop {
        let (batch, ended) = burst(&mut *feed, QUIET_WAIT, debounce);
        if !batch.is_empty() && to.send(Input::Feed(batch)).is_err() {
            return;
        }
        if ended.is_some() {
            let _ = to.send(Input::FeedEnded);
            return;
        }
    }
}

/// One tick every `every` ms, on the tick, into every lane. A lane that
/// has not said the previous tick yet (blocked on a read) has this one
/// said for it, so the face's countdowns never freeze on a slow member.
fn tick_every(lanes: Vec<(OriginIx, Sender<Input>, Arc<Ticks>)>, out: Sender<Update>, every: i64) {
    let mut previous: Option<i64> = None;
    loop {
        let now = now_ms();
        let next = next_tick_after(now, every);
        std::thread::sleep(Duration::from_millis((next - now).max(0) as u64));
        let now = now_ms();
        let mut heard = false;
        for (at, inbox, ticks) in &lanes {
            heard |= inbox.send(Input::Tick(now)).is_ok();
            let late = previous.is_some_and(|p| ticks.judged.load(Ordering::SeqCst) < p);
            if late
                && ticks.said.fetch_max(now, Ordering::SeqCst) < now
                && out.send(Update::tick(*at, now)).is_err()
            {
                return;
            }
        }
        if !heard {
            return;
        }
        previous = Some(now);
    }
}

/// The next tick after `now`: on a whole multiple of `every` ms, so a
/// header's clock turns with the wall clock's.
pub fn next_tick_after(now: i64, every: i64) -> i64 {
    now - now.rem_euclid(every) + every
}

/// Ask a member reached over a connection for its header facts every
/// [`PROBE_EVERY`], each answer (or its absence within
/// [`PROBE_TIMEOUT`]) said as its link, until the face is gone. The call
/// runs on a thread of its own, so a member whose connection waits out a
/// longer timeout is said unreachable within the probe's own; one call is
/// asked at a time.
fn probe(member: Arc<dyn Backend>, at: OriginIx, out: &Sender<Update>) {
    if member.link().is_none() {
        return;
    }
    let say = |state: LinkState| {
        let u = Update {
            at,
            delta: None,
            facts: Some(Facts {
                link: Some(state),
                ..Facts::default()
            }),
            tick: None,
        };
        out.send(u).is_ok()
    };
    let (tx, rx) = channel();
    loop {
        let (asked, answer) = (Arc::clone(&member), tx.clone());
        let started = std::thread::Builder::new()
            .name(format!("claimtop-ask{}", at.0))
            .spawn(move || {
                let got = asked.link().map(|l| l.probe(PROBE_TIMEOUT));
                let _ = answer.send(got);
            });
        if started.is_err() {
            return;
        }
        let state = match rx.recv_timeout(PROBE_TIMEOUT) {
            Ok(Some(Ok(facts))) => LinkState::Reached(facts),
            Ok(Some(Err(e))) => LinkState::Unreachable(e.to_string()),
            Ok(None) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {
                let why = format!("no answer within {PROBE_TIMEOUT:?}");
                if !say(LinkState::Unreachable(why)) {
                    return;
                }
                // The call still out is waited for before another is asked.
                match rx.recv() {
                    Ok(Some(Ok(facts))) => LinkState::Reached(facts),
                    Ok(Some(Err(e))) => LinkState::Unreachable(e.to_string()),
                    Ok(None) | Err(_) => return,
                }
            }
        };
        if !say(state) {
            return;
        }
        std::thread::sleep(PROBE_EVERY);
    }
}
