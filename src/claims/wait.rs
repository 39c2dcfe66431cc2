//! Waiting for a key, and holding it once taken, over any store.
//!
//! Both drive a `&dyn Store` and nothing else: its verbs (acquire, status,
//! renew, release, keep-alive) and a [`Wakeups`] feed saying "something
//! about this key may have changed", which a face builds on the store's
//! own [`Store::watch_key`] (inotify on the lockfile and a pidfd on a local
//! holder on a file store; the watch on etcd) and merges with whatever else
//! should wake it (signals).
//!
//! Neither side polls fast. A wait re-tries when the store says the key
//! changed, when the holder's TTL runs out (a time event, computed from the
//! record or the lease), when the feed reports the holder's exit, and on a
//! slow safety re-check for what nothing reports (a holder on another
//! machine that dies). A hold renews a TTL claim when a third of the TTL is
//! left (or, on a store with leases, keeps the lease alive and watches that
//! keep-alive), and checks the claim is still its own whenever the key
//! changes.

use super::{
    now_ms, AcquireKind, AcquireOpts, AcquireOutcome, ClaimRecord, NoRenew, ReleaseOutcome,
    RenewOutcome, Status,
};
use crate::store::{Fenced, Kept, Store, StoreError, Tenure};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A waiter re-tries at least this often: a holder that dies changes no
/// file, and only a local one can be watched.
pub const WAIT_RECHECK: Duration = Duration::from_secs(2);
/// A holder re-reads its claim at least this often, in case a notification
/// was lost (a claims dir replaced under the watch, an overflowed queue).
pub const HOLD_RECHECK: Duration = Duration::from_secs(5);
/// A holder on a store with leases looks at its keep-alive this often: a
/// loss reaches the work within this plus the keep-alive's own round.
pub const LEASE_CHECK: Duration = Duration::from_millis(100);
/// After a renewal the peer's recovery mutex refused, try again this soon
/// (the mutex is held for well under a second by an honest peer).
const RENEW_RETRY_MS: i64 = 1_000;

/// Why a [`Wakeups::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The key may have changed: look again.
    Changed,
    /// The timeout passed with no news.
    TimedOut,
    /// The face asked the wait to stop (a signal arrived).
    Interrupted,
}

/// A feed of "this key may have changed". Spurious wake-ups are fine (the
/// caller re-reads); a missed one costs at most one safety re-check.
pub trait Wakeups {
    fn wait(&mut self, timeout: Duration) -> Wake;

    /// The key is held by `blocker` now. A feed that can watch the holder
    /// itself (a local pid's exit) may start doing so; the default cannot.
    fn blocked_by(&mut self, _blocker: &Blocker) {}
}

/// A channel is a feed: whoever holds the sender (a watcher callback, a
/// thread draining a store's watch, a signal thread) wakes the waiter.
impl Wakeups for Receiver<Wake> {
    fn wait(&mut self, timeout: Duration) -> Wake {
        match self.recv_timeout(timeout) {
            Ok(w) => w,
            Err(RecvTimeoutError::Timeout) => Wake::TimedOut,
            // Every sender is gone: no more news, but the safety re-check
            // still runs on time.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(timeout);
                Wake::TimedOut
            }
        }
    }
}

/// Who a waiter is waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    pub holder: String,
    pub pid: i32,
    pub host: String,
    /// When the claim's TTL (or lease) runs out (epoch ms), if it has one.
    pub expires_at: Option<i64>,
}

/// How a wait ended.
// Returned once per wait, never stored in bulk.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Waited {
    /// Acquired (at once or after waiting), with the store's tenure.
    Acquired {
        record: ClaimRecord,
        kind: AcquireKind,
        tenure: Option<Tenure>,
    },
    /// The deadline passed; the key was still held by this holder.
    TimedOut(Blocker),
    /// The wakeup feed said stop.
    Interrupted,
}

/// When to look again while `blocker` holds the key: at its TTL's end (a
/// time event no file announces), else at the next safety re-check, and
/// never past the caller's deadline.
pub fn next_look(
    now: Instant,
    now_ms: i64,
    expires_at: Option<i64>,
    deadline: Option<Instant>,
) -> Instant {
    let mut at = now + WAIT_RECHECK;
    if let Some(exp) = expires_at.filter(|e| *e >= now_ms) {
        // One millisecond past: the classifier calls a claim expired only
        // once `now >= expires_at`.
        at = at.min(now + Duration::from_millis((exp - now_ms) as u64 + 1));
    }
    deadline.map_or(at, |d| at.min(d))
}

/// When the claim `status` shows runs out: its lease's end where the store
/// keeps one (a kept-alive lease outlives the record's `expires_at`), else
/// the record's TTL.
fn ends_at(status: &Status, tenure: Option<&Tenure>, now_ms: i64) -> Option<i64> {
    match tenure {
        Some(t) => Some(now_ms + t.lease.remaining_s.max(0) * 1000),
        None => status.record.as_ref().and_then(|r| r.expires_at),
    }
}

/// Acquire `key`, waiting while another holder has it, until `deadline`
/// (None: forever). `on_block` is told once, at the first refusal, whom the
/// wait is for. `wakeups` must already be watching when this is called, so
/// that a release between an attempt and the wait is not missed.
pub fn acquire_waiting(
    store: &dyn Store,
    wakeups: &mut dyn Wakeups,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
    deadline: Option<Instant>,
    mut on_block: impl FnMut(&Blocker),
) -> Result<Waited, StoreError> {
    let mut told = false;
    let mut last: Option<Blocker> = None;
    // Whether the store keeps the claim on a lease (its status has a tenure).
    let mut leased = false;
    loop {
        let got = store.acquire(key, holder, opts)?;
        let (h, pid, host) = match got.outcome {
            AcquireOutcome::Acquired { record, kind } => {
                return Ok(Waited::Acquired {
                    record,
                    kind,
                    tenure: got.tenure,
                })
            }
            AcquireOutcome::HeldByOther { holder, pid, host } => (holder, pid, host),
        };
        let known = last
            .as_ref()
            .filter(|b| b.holder == h && b.pid == pid && b.host == host);
        let expires_at = match known {
            // A store with leases says when a lease ends (its key goes), so
            // the same holder's deadline need not be read at every look.
            Some(b) if leased => b.expires_at,
            // The TTL is read separately: acquire's refusal names the
            // holder, not its deadline. A stale read only moves one look.
            _ => {
                let status = store.status(key)?;
                leased = status.tenure.is_some();
                match &status.outcome.record {
                    Some(r) if r.holder == h => {
                        ends_at(&status.outcome, status.tenure.as_ref(), now_ms())
                    }
                    _ => None,
                }
            }
        };
        let new_holder = known.is_none();
        let blocker = Blocker {
            holder: h,
            pid,
            host,
            expires_at,
        };
        // Watch first, then say so: whoever reads the line may act on it.
        // Only a new holder is news: the same one re-read is not.
        if new_holder {
            wakeups.blocked_by(&blocker);
        }
        last = Some(blocker.clone());
        if !told {
            on_block(&blocker);
            told = true;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return Ok(Waited::TimedOut(blocker));
        }
        let at = next_look(now, now_ms(), expires_at, deadline);
        if wakeups.wait(at.saturating_duration_since(now)) == Wake::Interrupted {
            return Ok(Waited::Interrupted);
        }
    }
}

/// Milliseconds since the epoch, from somewhere a test can move.
pub trait Clock {
    fn now_ms(&self) -> i64;
}

/// The wall clock, as every record is stamped with.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// Why a held claim is no longer ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lost {
    /// The claim is gone: force-released (archived) or released by
    /// someone using our holder name.
    Gone,
    /// Another claim stands on the key now.
    Replaced { holder: String, pid: i32 },
    /// The lockfile no longer parses as a claim.
    Corrupted(String),
    /// The store refused to renew it.
    RenewRefused(NoRenew),
    /// The store's keep-alive ended (an etcd lease expired or was revoked,
    /// the key taken away): its own words.
    LeaseEnded(String),
    /// The store has not confirmed the claim for `silent_ms`, and it may
    /// run out in `left_ms`: the work is stopped while it is surely still
    /// held, rather than risk it outliving the claim.
    Unconfirmed { silent_ms: i64, left_ms: i64 },
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lost::Gone => f.write_str("the claim was removed (force-released or released)"),
            Lost::Replaced { holder, pid } => {
                write!(f, "the key is now held by {holder} (pid {pid})")
            }
            Lost::Corrupted(why) => write!(f, "the claim file was overwritten: {why}"),
            Lost::RenewRefused(no) => write!(f, "renew refused: {}", no.describe()),
            Lost::LeaseEnded(why) => f.write_str(why),
            Lost::Unconfirmed { silent_ms, left_ms } => write!(
                f,
                "the store has not confirmed the claim's lease for {}, and it may run out in {}",
                crate::time::human_ms(*silent_ms),
                crate::time::human_ms(*left_ms)
            ),
        }
    }
}

/// When a claim expiring at `expires_at` after a `ttl_ms` window should be
/// renewed: once a third of the window is left, so that a renewal that has
/// to wait out a peer's mutex still lands well before the deadline.
pub fn renew_due(expires_at: i64, ttl_ms: i64) -> i64 {
    expires_at - ttl_ms / 3
}

/// A claim being kept: renewed before each deadline when it has a TTL (or
/// its lease kept alive, on a store with leases), re-checked whenever the
/// key changes. Single-threaded: the owner calls [`Hold::changed`] on each
/// wake-up and [`Hold::tick`] once [`Hold::due_in`] has passed.
pub struct Hold<'s, C: Clock = SystemClock> {
    store: &'s dyn Store,
    clock: C,
    record: ClaimRecord,
    /// The store's fencing token and lease, where it has them.
    tenure: Option<Tenure>,
    /// The lease's keep-alive, while the claim has a lease.
    kept: Option<Box<dyn Kept>>,
    ttl_ms: Option<i64>,
    renew_at: Option<i64>,
    check_at: i64,
}

impl<C: Clock> std::fmt::Debug for Hold<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hold")
            .field("store", &self.store.url())
            .field("record", &self.record)
            .field("tenure", &self.tenure)
            .field("renew_at", &self.renew_at)
            .finish()
    }
}

impl<'s, C: Clock> Hold<'s, C> {
    /// Keep `record` (just acquired, with the store's `tenure`). A claim
    /// with a lease has it kept alive by the store; any other is renewed
    /// here with `ttl_ms` if given.
    pub fn new(
        store: &'s dyn Store,
        clock: C,
        record: ClaimRecord,
        tenure: Option<Tenure>,
        ttl_ms: Option<i64>,
    ) -> Result<Hold<'s, C>, StoreError> {
        let kept = match &tenure {
            Some(t) => Some(store.keep_alive(&record.key, t)?),
            None => None,
        };
        let now = clock.now_ms();
        // The keep-alive renews a lease; renewing the record as well would
        // only rewrite it.
        let renew_at = match kept {
            Some(_) => None,
            None => ttl_ms.zip(record.expires_at).map(|(t, e)| renew_due(e, t)),
        };
        Ok(Hold {
            store,
            clock,
            record,
            tenure,
            kept,
            ttl_ms,
            renew_at,
            check_at: 0,
        }
        .with_recheck_from(now))
    }

    /// Schedule the slow safety re-check from `now`. A kept-alive lease
    /// has none: each keep-alive round already checks the key is still
    /// this tenure's, and a store read here would block the holder for
    /// its whole timeout while the store is unreachable.
    fn with_recheck_from(mut self, now: i64) -> Self {
        self.recheck_from(now);
        self
    }

    fn recheck_from(&mut self, now: i64) {
        self.check_at = match self.kept {
            Some(_) => i64::MAX,
            None => now + HOLD_RECHECK.as_millis() as i64,
        };
    }

    /// The record as last renewed.
    pub fn record(&self) -> &ClaimRecord {
        &self.record
    }

    /// The store's tenure of the claim, where it has one.
    pub fn tenure(&self) -> Option<&Tenure> {
        self.tenure.as_ref()
    }

    /// Until when the claim is surely still held even if the store is not
    /// reached again (see [`Kept::safe_until`]); None where nothing but the
    /// store's own verbs can end it.
    pub fn safe_until(&self) -> Option<Instant> {
        self.kept.as_ref().and_then(|k| k.safe_until())
    }

    /// The epoch ms at which the next renewal is due, if any.
    pub fn renew_at(&self) -> Option<i64> {
        self.renew_at
    }

    /// How long until [`Hold::tick`] has work to do.
    pub fn due_in(&self) -> Duration {
        let next = self
            .renew_at
            .map_or(self.check_at, |r| r.min(self.check_at));
        let due = Duration::from_millis(next.saturating_sub(self.clock.now_ms()).max(0) as u64);
        match self.kept {
            Some(_) => due.min(LEASE_CHECK),
            None => due,
        }
    }

    /// The key changed: is it still ours?
    pub fn changed(&mut self) -> Result<Option<Lost>, StoreError> {
        self.recheck_from(self.clock.now_ms());
        let s = self.store.status(&self.record.key)?;
        Ok(self.judge(&s.outcome, s.tenure.as_ref()))
    }

    /// Whether the key's current status is still our tenure. Our own
    /// renewal moves only `expires_at`; anything else that differs is
    /// somebody else's claim, even under our holder name (and, where the
    /// store fences, another tenure is another claim whatever it says).
    fn judge(&self, s: &Status, tenure: Option<&Tenure>) -> Option<Lost> {
        match (&s.record, &s.error) {
            (Some(r), _) => {
                let same_tenure = match (&self.tenure, tenure) {
                    (Some(ours), Some(now)) => ours.revision == now.revision,
                    _ => true,
                };
                let ours = same_tenure
                    && r.holder == self.record.holder
                    && r.pid == self.record.pid
                    && r.acquired_at == self.record.acquired_at;
                (!ours).then(|| Lost::Replaced {
                    holder: r.holder.clone(),
                    pid: r.pid,
                })
            }
            // Unreadable may still be ours: a limit of this reader is no
            // evidence of loss.
            (None, Some(_)) if s.state == super::ClaimState::Unreadable => None,
            (None, Some(e)) => Some(Lost::Corrupted(e.clone())),
            (None, None) => Some(Lost::Gone),
        }
    }

    /// Do what is due: notice a keep-alive that ended, renew when a third
    /// of the TTL is left, re-check on the slow safety interval.
    pub fn tick(&mut self) -> Result<Option<Lost>, StoreError> {
        if let Some(why) = self.kept.as_ref().and_then(|k| k.lost()) {
            return Ok(Some(Lost::LeaseEnded(why)));
        }
        let now = self.clock.now_ms();
        if let (Some(at), Some(ttl)) = (self.renew_at, self.ttl_ms) {
            if now >= at {
                // Retry soon on an error; the deadline is still a third away.
                self.renew_at = Some(now + RENEW_RETRY_MS);
                let renewed = self
                    .store
                    .renew(&self.record.key, &self.record.holder, ttl, None)?;
                match renewed.outcome {
                    RenewOutcome::Renewed { record, .. } => {
                        self.renew_at = record.expires_at.map(|e| renew_due(e, ttl));
                        self.record = record;
                    }
                    RenewOutcome::NotRenewed(NoRenew::MutexBusy) => {}
                    RenewOutcome::NotRenewed(no) => return Ok(Some(Lost::RenewRefused(no))),
                }
            }
        }
        if now >= self.check_at {
            return self.changed();
        }
        Ok(None)
    }

    /// One last look before giving the claim back: a loss in the instant
    /// the work ended may have overlapped it, and must not be released.
    pub fn last_look(&mut self) -> Option<Lost> {
        if let Some(why) = self.kept.as_ref().and_then(|k| k.lost()) {
            return Some(Lost::LeaseEnded(why));
        }
        self.changed().ok().flatten()
    }

    /// No longer hold the claim, without giving it back: it was lost, or
    /// is given up ahead of a deadline. The store records the tenure's end
    /// once it comes (over etcd, when the lease runs out).
    pub fn give_up(self) {
        if let Some(k) = &self.kept {
            k.give_up();
        }
    }

    /// Give the claim back (only while it is still ours): only this tenure,
    /// where the store fences, so an expired hold never ends a newer one.
    pub fn release(mut self) -> Result<ReleaseOutcome, StoreError> {
        // Stop renewing first: a keep-alive racing the release is wasted.
        self.kept = None;
        give_back(
            self.store,
            &self.record.key,
            &self.record.holder,
            self.tenure.as_ref(),
        )
        .map(|f| f.outcome)
    }
}

/// Release `key` as `holder`: only the tenure `tenure` names where the store
/// fences, so a holder whose claim ran out never ends a newer one.
pub fn give_back(
    store: &dyn Store,
    key: &str,
    holder: &str,
    tenure: Option<&Tenure>,
) -> Result<Fenced<ReleaseOutcome>, StoreError> {
    match tenure {
        Some(t) => store.release_fenced(key, holder, t.revision),
        None => store.release(key, holder),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{ClaimState, ForceOpts, ForceOutcome};
    use crate::events::tail::Event;
    use crate::store::{Changes, LeaseInfo, Listing};
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::sync::Mutex;

    struct FakeClock<'a>(&'a AtomicI64);

    impl Clock for FakeClock<'_> {
        fn now_ms(&self) -> i64 {
            self.0.load(Ordering::SeqCst)
        }
    }

    /// A store of one claim, in memory: renew moves its deadline, and the
    /// test can take it away.
    struct FakeStore<'a> {
        clock: &'a AtomicI64,
        claim: Mutex<Option<ClaimRecord>>,
        renewals: Mutex<Vec<i64>>,
        busy_once: AtomicBool,
        /// The tenure `status` reports (a store with leases).
        tenure: Mutex<Option<Tenure>>,
        /// What the keep-alive says once the lease is gone.
        lease_lost: Arc<Mutex<Option<String>>>,
        /// The revisions fenced releases named.
        fenced: Mutex<Vec<i64>>,
        /// How many times `status` was read.
        reads: AtomicUsize,
    }

    /// The fake store's keep-alive: lost when the test says so.
    struct FakeKept(Arc<Mutex<Option<String>>>);

    impl Kept for FakeKept {
        fn lost(&self) -> Option<String> {
            self.0.lock().expect("lost").clone()
        }
    }

    impl FakeStore<'_> {
        fn now(&self) -> i64 {
            self.clock.load(Ordering::SeqCst)
        }

        fn claim(&self) -> std::sync::MutexGuard<'_, Option<ClaimRecord>> {
            self.claim.lock().expect("claim")
        }

        fn renewals(&self) -> Vec<i64> {
            self.renewals.lock().expect("renewals").clone()
        }
    }

    /// What the fake keeps no model of.
    fn not_kept() -> StoreError {
        StoreError::Config("the fake store keeps one claim and nothing else".into())
    }

    impl Store for FakeStore<'_> {
        fn url(&self) -> String {
            "fake:".into()
        }
        fn acquire(
            &self,
            _: &str,
            holder: &str,
            _: &AcquireOpts,
        ) -> Result<Fenced<AcquireOutcome>, StoreError> {
            let mut c = self.claim();
            let outcome = match c.as_ref() {
                Some(r) if r.holder != holder => AcquireOutcome::HeldByOther {
                    holder: r.holder.clone(),
                    pid: r.pid,
                    host: r.host.clone(),
                },
                _ => {
                    let record = ClaimRecord {
                        holder: holder.into(),
                        ..record(self.now(), None)
                    };
                    *c = Some(record.clone());
                    AcquireOutcome::Acquired {
                        record,
                        kind: AcquireKind::Fresh,
                    }
                }
            };
            Ok(Fenced::plain(outcome))
        }
        fn status(&self, key: &str) -> Result<Fenced<Status>, StoreError> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let record = self.claim().clone();
            let status = Status {
                key: key.into(),
                file: PathBuf::from("k.lock"),
                state: if record.is_some() {
                    ClaimState::Live
                } else {
                    ClaimState::Free
                },
                record,
                why: String::new(),
                error: None,
                locality: None,
                head: Vec::new(),
            };
            Ok(Fenced {
                outcome: status,
                tenure: *self.tenure.lock().expect("tenure"),
            })
        }
        fn renew(
            &self,
            _: &str,
            holder: &str,
            ttl: i64,
            _: Option<&str>,
        ) -> Result<Fenced<RenewOutcome>, StoreError> {
            let now = self.now();
            self.renewals.lock().expect("renewals").push(now);
            if self.busy_once.swap(false, Ordering::SeqCst) {
                return Ok(Fenced::plain(RenewOutcome::NotRenewed(NoRenew::MutexBusy)));
            }
            let mut c = self.claim();
            let outcome = match c.as_mut() {
                Some(r) if r.holder == holder => {
                    let previous_expires_at = r.expires_at.unwrap_or(now);
                    r.expires_at = Some(now + ttl);
                    RenewOutcome::Renewed {
                        record: r.clone(),
                        previous_expires_at,
                    }
                }
                Some(_) => RenewOutcome::NotRenewed(NoRenew::OtherHolder),
                None => RenewOutcome::NotRenewed(NoRenew::Absent),
            };
            Ok(Fenced::plain(outcome))
        }
        fn release(&self, _: &str, _: &str) -> Result<Fenced<ReleaseOutcome>, StoreError> {
            Ok(Fenced::plain(ReleaseOutcome::Absent))
        }
        fn release_fenced(
            &self,
            _: &str,
            _: &str,
            revision: i64,
        ) -> Result<Fenced<ReleaseOutcome>, StoreError> {
            self.fenced.lock().expect("fenced").push(revision);
            Ok(Fenced::plain(ReleaseOutcome::Absent))
        }
        fn keep_alive(&self, _: &str, _: &Tenure) -> Result<Box<dyn Kept>, StoreError> {
            Ok(Box::new(FakeKept(Arc::clone(&self.lease_lost))))
        }
        fn force_release(
            &self,
            _: &str,
            _: &ForceOpts,
        ) -> Result<Fenced<ForceOutcome>, StoreError> {
            Err(not_kept())
        }
        fn list(&self) -> Result<Listing, StoreError> {
            Err(not_kept())
        }
        fn doctor(&self) -> Result<Listing, StoreError> {
            Err(not_kept())
        }
        fn events(&self, _: usize) -> Result<Vec<Event>, StoreError> {
            Err(not_kept())
        }
        fn changes(&self) -> Result<Box<dyn Changes>, StoreError> {
            Err(not_kept())
        }
    }

    fn record(acquired_at: i64, ttl: Option<i64>) -> ClaimRecord {
        ClaimRecord {
            schema_version: 1,
            key: "k".into(),
            holder: "h".into(),
            acquired_at,
            pid: 42,
            host: "box".into(),
            expires_at: ttl.map(|t| acquired_at + t),
            reason: None,
            harness: None,
            machine_id: None,
            metadata: Default::default(),
        }
    }

    fn store<'a>(clock: &'a AtomicI64, rec: &ClaimRecord) -> FakeStore<'a> {
        FakeStore {
            clock,
            claim: Mutex::new(Some(rec.clone())),
            renewals: Mutex::new(Vec::new()),
            busy_once: AtomicBool::new(false),
            tenure: Mutex::new(None),
            lease_lost: Arc::new(Mutex::new(None)),
            fenced: Mutex::new(Vec::new()),
            reads: AtomicUsize::new(0),
        }
    }

    fn leased(revision: i64) -> Tenure {
        Tenure {
            revision,
            lease: LeaseInfo {
                id: 7,
                ttl_s: 60,
                remaining_s: 60,
            },
        }
    }

    #[test]
    fn a_leased_hold_leaves_renewal_and_rechecks_to_the_keep_alive_and_is_lost_when_it_ends() {
        let clock = AtomicI64::new(0);
        let rec = record(0, Some(60_000));
        let s = store(&clock, &rec);
        *s.tenure.lock().expect("tenure") = Some(leased(5));
        let mut hold =
            Hold::new(&s, FakeClock(&clock), rec, Some(leased(5)), Some(60_000)).expect("hold");
        assert_eq!(hold.renew_at(), None);
        assert!(hold.due_in() <= LEASE_CHECK, "{:?}", hold.due_in());
        assert_eq!(run_until(&mut hold, &clock, 200_000), None);
        assert!(s.renewals().is_empty(), "the record is never rewritten");
        assert_eq!(
            s.reads.load(Ordering::SeqCst),
            0,
            "the keep-alive is the re-check: no store reads on a schedule"
        );
        *s.lease_lost.lock().expect("lost") = Some("the lease was revoked".into());
        assert_eq!(
            run_until(&mut hold, &clock, 200_500),
            Some(Lost::LeaseEnded("the lease was revoked".into()))
        );
    }

    #[test]
    fn a_leased_hold_is_lost_to_another_tenure_under_the_same_record_and_releases_only_its_own() {
        let clock = AtomicI64::new(0);
        let rec = record(0, Some(60_000));
        let s = store(&clock, &rec);
        *s.tenure.lock().expect("tenure") = Some(leased(5));
        let mut hold =
            Hold::new(&s, FakeClock(&clock), rec, Some(leased(5)), Some(60_000)).expect("hold");
        assert_eq!(hold.changed().ok().flatten(), None);
        hold.release().expect("release");
        assert_eq!(*s.fenced.lock().expect("fenced"), vec![5]);
        // Byte for byte the same record, but a later tenure of the key.
        let rec = record(0, Some(60_000));
        let mut hold =
            Hold::new(&s, FakeClock(&clock), rec, Some(leased(5)), Some(60_000)).expect("hold");
        *s.tenure.lock().expect("tenure") = Some(leased(9));
        assert_eq!(
            hold.changed().ok().flatten(),
            Some(Lost::Replaced {
                holder: "h".into(),
                pid: 42
            })
        );
    }

    /// Run the hold's own schedule for `until_ms`, as a face would: sleep
    /// `due_in`, then tick.
    fn run_until(
        hold: &mut Hold<'_, FakeClock<'_>>,
        clock: &AtomicI64,
        until_ms: i64,
    ) -> Option<Lost> {
        while clock.load(Ordering::SeqCst) < until_ms {
            let step = hold.due_in().as_millis().max(1) as i64;
            clock.store(
                (clock.load(Ordering::SeqCst) + step).min(until_ms),
                Ordering::SeqCst,
            );
            if let Ok(Some(lost)) = hold.tick() {
                return Some(lost);
            }
        }
        None
    }

    #[test]
    fn a_ttl_claim_is_renewed_each_time_a_third_of_its_ttl_is_left() {
        let clock = AtomicI64::new(1_000_000);
        let rec = record(1_000_000, Some(60_000));
        let s = store(&clock, &rec);
        let mut hold = Hold::new(&s, FakeClock(&clock), rec, None, Some(60_000)).expect("hold");
        assert_eq!(hold.renew_at(), Some(1_040_000));
        assert_eq!(run_until(&mut hold, &clock, 1_000_000 + 200_000), None);
        // First at 40 s (20 s left), then every 40 s after each renewal.
        assert_eq!(
            s.renewals(),
            vec![1_040_000, 1_080_000, 1_120_000, 1_160_000, 1_200_000]
        );
        let exp = s.claim().as_ref().and_then(|r| r.expires_at);
        assert_eq!(exp, Some(1_260_000), "never let it come within 20 s");
    }

    #[test]
    fn a_renewal_the_mutex_refused_is_retried_a_second_later() {
        let clock = AtomicI64::new(0);
        let rec = record(0, Some(60_000));
        let s = store(&clock, &rec);
        s.busy_once.store(true, Ordering::SeqCst);
        let mut hold = Hold::new(&s, FakeClock(&clock), rec, None, Some(60_000)).expect("hold");
        assert_eq!(run_until(&mut hold, &clock, 45_000), None);
        assert_eq!(s.renewals(), vec![40_000, 41_000]);
        assert_eq!(hold.record().expires_at, Some(101_000));
    }

    #[test]
    fn a_pid_bound_hold_never_renews_and_only_rechecks_slowly() {
        let clock = AtomicI64::new(0);
        let rec = record(0, None);
        let s = store(&clock, &rec);
        let mut hold = Hold::new(&s, FakeClock(&clock), rec, None, None).expect("hold");
        assert_eq!(hold.due_in(), HOLD_RECHECK);
        assert_eq!(run_until(&mut hold, &clock, 60_000), None);
        assert!(s.renewals().is_empty());
    }

    #[test]
    fn a_refused_renewal_is_a_lost_claim() {
        let clock = AtomicI64::new(0);
        let rec = record(0, Some(60_000));
        let s = store(&clock, &rec);
        let mut hold = Hold::new(&s, FakeClock(&clock), rec, None, Some(60_000)).expect("hold");
        // Another holder took the key over meanwhile; the safety re-check
        // is pushed past the renewal so the renewal is what notices.
        *s.claim() = Some(ClaimRecord {
            holder: "other".into(),
            ..record(1, Some(60_000))
        });
        clock.store(39_999, Ordering::SeqCst);
        hold.check_at = i64::MAX;
        assert_eq!(
            run_until(&mut hold, &clock, 50_000),
            Some(Lost::RenewRefused(NoRenew::OtherHolder))
        );
    }

    #[test]
    fn a_changed_lockfile_is_judged_by_holder_pid_and_acquired_at() {
        let clock = AtomicI64::new(0);
        let rec = record(0, Some(60_000));
        let s = store(&clock, &rec);
        let mut hold =
            Hold::new(&s, FakeClock(&clock), rec.clone(), None, Some(60_000)).expect("hold");
        // Our own renewal moved only the deadline: still ours.
        if let Some(r) = s.claim().as_mut() {
            r.expires_at = Some(99_999);
        }
        assert_eq!(hold.changed().ok().flatten(), None);
        // The same holder name from another process: not our tenure.
        *s.claim() = Some(ClaimRecord {
            pid: 7,
            ..rec.clone()
        });
        assert_eq!(
            hold.changed().ok().flatten(),
            Some(Lost::Replaced {
                holder: "h".into(),
                pid: 7
            })
        );
        *s.claim() = None;
        assert_eq!(hold.changed().ok().flatten(), Some(Lost::Gone));
    }

    /// A feed that plays a script: each wait runs the next step against
    /// the store and answers its wake.
    struct Script<'a> {
        steps: Vec<(Wake, Box<dyn Fn() + 'a>)>,
        waits: usize,
    }

    impl Wakeups for Script<'_> {
        fn wait(&mut self, _: Duration) -> Wake {
            let (wake, step) = self.steps.remove(0);
            step();
            self.waits += 1;
            wake
        }
    }

    fn held_by_other(clock: &AtomicI64) -> FakeStore<'_> {
        let other = ClaimRecord {
            holder: "other".into(),
            ..record(0, Some(60_000))
        };
        store(clock, &other)
    }

    /// What a wait by `h` did: its end, whom it named, how often it slept.
    struct Run {
        waited: Waited,
        told: Vec<Blocker>,
        waits: usize,
    }

    fn wait_as_h<'a>(
        s: &FakeStore<'_>,
        steps: Vec<(Wake, Box<dyn Fn() + 'a>)>,
        deadline: Option<Instant>,
    ) -> Run {
        let mut feed = Script { steps, waits: 0 };
        let mut told = Vec::new();
        let opts = AcquireOpts::default();
        let waited = acquire_waiting(s, &mut feed, "k", "h", &opts, deadline, |b| {
            told.push(b.clone())
        })
        .expect("the fake store cannot fail");
        Run {
            waited,
            told,
            waits: feed.waits,
        }
    }

    /// A wait by `h`, woken by a change, a timeout, then the key's release.
    fn freed_at_the_third_wake(s: &FakeStore<'_>) -> Run {
        let free = || *s.claim() = None;
        wait_as_h(
            s,
            vec![
                (Wake::Changed, Box::new(|| {})),
                (Wake::TimedOut, Box::new(|| {})),
                (Wake::Changed, Box::new(free)),
            ],
            None,
        )
    }

    #[test]
    fn a_waiter_says_whom_it_waits_for_once_and_acquires_once_the_key_is_freed() {
        let clock = AtomicI64::new(0);
        let s = held_by_other(&clock);
        let run = freed_at_the_third_wake(&s);
        assert!(matches!(run.waited, Waited::Acquired { ref record, .. } if record.holder == "h"));
        assert_eq!(run.waits, 3);
        assert_eq!(run.told.len(), 1, "one line, not one per wake-up");
        assert_eq!(run.told[0].holder, "other");
        assert_eq!(
            run.told[0].expires_at,
            Some(60_000),
            "the deadline comes from the record"
        );
    }

    #[test]
    fn a_waiter_reads_a_leased_holders_deadline_once_and_a_lockfiles_at_every_look() {
        for (on_lease, reads) in [(true, 1), (false, 3)] {
            let clock = AtomicI64::new(0);
            let s = held_by_other(&clock);
            if on_lease {
                *s.tenure.lock().expect("tenure") = Some(leased(3));
            }
            let run = freed_at_the_third_wake(&s);
            assert!(matches!(run.waited, Waited::Acquired { .. }));
            assert_eq!(
                s.reads.load(Ordering::SeqCst),
                reads,
                "on a lease: {on_lease}"
            );
        }
    }

    #[test]
    fn a_waiter_past_its_deadline_answers_who_still_holds_the_key() {
        let clock = AtomicI64::new(0);
        let s = held_by_other(&clock);
        let run = wait_as_h(&s, Vec::new(), Some(Instant::now()));
        assert!(matches!(run.waited, Waited::TimedOut(ref b) if b.holder == "other"));
        assert_eq!(run.waits, 0);
    }

    #[test]
    fn a_waiter_whose_feed_is_interrupted_stops_without_taking_anything() {
        let clock = AtomicI64::new(0);
        let s = held_by_other(&clock);
        let run = wait_as_h(&s, vec![(Wake::Interrupted, Box::new(|| {}))], None);
        assert_eq!(run.waited, Waited::Interrupted);
        let holder = s.claim().as_ref().map(|r| r.holder.clone());
        assert_eq!(holder, Some("other".into()));
    }

    #[test]
    fn a_waiter_looks_again_at_the_holders_deadline_or_the_safety_recheck() {
        let now = Instant::now();
        let far = next_look(now, 0, Some(60_000), None);
        assert_eq!(far, now + WAIT_RECHECK);
        let soon = next_look(now, 0, Some(500), None);
        assert_eq!(soon, now + Duration::from_millis(501));
        // An expiry already past is no time event; the deadline caps all.
        let past = next_look(now, 10_000, Some(500), Some(now + Duration::from_millis(3)));
        assert_eq!(past, now + Duration::from_millis(3));
    }
}
