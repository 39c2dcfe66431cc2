//! Holding a claim once taken: renewing a TTL before it runs out, keeping a
//! lease alive, noticing the claim is no longer ours, and giving it back
//! fenced to our own tenure.

use crate::claims::{now_ms, ClaimRecord, NoRenew, ReleaseOutcome, RenewOutcome, Status};
use crate::store::mirror::{judge::Judge, Mirror};
use crate::store::{Backend, Fenced, Kept, StoreError, Tenure};
use std::time::{Duration, Instant};

/// A holder re-reads its claim at least this often, in case a notification
/// was lost (a claims dir replaced under the watch, an overflowed queue).
pub const HOLD_RECHECK: Duration = Duration::from_secs(5);
/// A holder on a store with leases looks at its keep-alive this often: a
/// loss reaches the work within this plus the keep-alive's own round.
pub const LEASE_CHECK: Duration = Duration::from_millis(100);
/// After a renewal the peer's recovery mutex refused, try again this soon
/// (the mutex is held for well under a second by an honest peer).
const RENEW_RETRY_MS: i64 = 1_000;

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
    /// A TTL claim was last renewed `silent_ms` ago and its TTL ends in
    /// `left_ms` (or ended, when not positive): the holder could not renew
    /// it in time (renewals failing, or the holder stopped or blocked), so
    /// the work is stopped before anyone can take the key as expired.
    Unrenewed { silent_ms: i64, left_ms: i64 },
    /// The process the claim is bound to has ended (killed by someone): the
    /// claim reads stale from that instant.
    HolderGone { pid: i32 },
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
            Lost::HolderGone { pid } => write!(
                f,
                "the process the claim is bound to (pid {pid}) has ended, so the claim reads stale"
            ),
            Lost::Unrenewed { silent_ms, left_ms } if *left_ms > 0 => write!(
                f,
                "the claim was last renewed {} ago, and its TTL ends in {}",
                crate::time::human_ms(*silent_ms),
                crate::time::human_ms(*left_ms)
            ),
            Lost::Unrenewed { silent_ms, left_ms } => write!(
                f,
                "the claim was last renewed {} ago, and its TTL ended {} ago",
                crate::time::human_ms(*silent_ms),
                crate::time::human_ms(-*left_ms)
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
    store: &'s dyn Backend,
    clock: C,
    record: ClaimRecord,
    /// The store's fencing token and lease, where it has them.
    tenure: Option<Tenure>,
    /// The lease's keep-alive, while the claim has a lease.
    kept: Option<Box<dyn Kept>>,
    /// The key as the store says it stands: a mirror of this key alone.
    mirror: Mirror,
    ttl_ms: Option<i64>,
    renew_at: Option<i64>,
    /// The instant the record's `expires_at` passes, by the monotonic
    /// clock, for a TTL claim without a lease, and the time that was left
    /// when it was learnt: set whenever the record is.
    expiry: Option<(Instant, Duration)>,
    pub(super) check_at: i64,
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
        store: &'s dyn Backend,
        clock: C,
        record: ClaimRecord,
        tenure: Option<Tenure>,
        ttl_ms: Option<i64>,
    ) -> Result<Hold<'s, C>, StoreError> {
        let kept = match (&tenure, store.leases()) {
            (Some(t), Some(leases)) => Some(leases.keep_alive(&record.key, t)?),
            _ => None,
        };
        let now = clock.now_ms();
        let mirror = Mirror::of_keys(store, Some(Judge::local()), [record.key.clone()], now);
        // The keep-alive renews a lease; renewing the record as well would
        // only rewrite it.
        let mut hold = Hold {
            store,
            clock,
            record,
            tenure,
            kept,
            mirror,
            ttl_ms,
            renew_at: None,
            expiry: None,
            check_at: 0,
        };
        hold.scheduled_from_record(now);
        Ok(hold.with_recheck_from(now))
    }

    /// The renewal and the expiry, from the record's `expires_at` (read at
    /// `now` by the hold's clock). A lease's keep-alive renews it; renewing
    /// the record as well would only rewrite it.
    fn scheduled_from_record(&mut self, now: i64) {
        if self.kept.is_some() {
            return;
        }
        let expires_at = self.record.expires_at;
        self.renew_at = self.ttl_ms.zip(expires_at).map(|(t, e)| renew_due(e, t));
        self.expiry = expires_at.map(|e| {
            let at = Instant::now();
            let left = Duration::from_millis(e.abs_diff(now));
            match e >= now {
                true => (at + left, left),
                false => (at.checked_sub(left).unwrap_or(at), Duration::ZERO),
            }
        });
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

    /// Until when the claim surely stands if the holder does nothing more
    /// (it is cut off from the store, or stopped, or blocked), and the
    /// window that instant was set with: a lease's confirmed end and TTL
    /// (see [`Kept::safe_until`]), or a TTL claim's `expires_at` and the
    /// time it had left when last renewed (by us: our TTL; by another
    /// process under our name: what it left). None for a claim that lasts
    /// as long as its pid: nothing but the store's own verbs can end it.
    pub fn deadline(&self) -> Option<(Instant, Duration)> {
        match (&self.kept, &self.tenure) {
            (Some(k), Some(t)) => k
                .safe_until()
                .map(|safe| (safe, Duration::from_secs(t.lease.ttl_s.max(0) as u64))),
            (Some(_), None) => None,
            (None, _) => self.expiry,
        }
    }

    /// Why the claim is given up at `now`, ahead of its [`Hold::deadline`]
    /// `(until, ttl)`: the store did not confirm it, or it was not renewed.
    pub fn unconfirmed(&self, until: Instant, ttl: Duration, now: Instant) -> Lost {
        let left = until.saturating_duration_since(now).as_millis() as i64
            - now.saturating_duration_since(until).as_millis() as i64;
        let silent_ms = (ttl.as_millis() as i64 - left).max(0);
        match self.kept {
            Some(_) => Lost::Unconfirmed {
                silent_ms,
                left_ms: left.max(0),
            },
            None => Lost::Unrenewed {
                silent_ms,
                left_ms: left,
            },
        }
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
        let now = self.clock.now_ms();
        self.recheck_from(now);
        let key = &self.record.key;
        self.mirror.look_again(key);
        self.mirror.settle(self.store, now)?;
        let (lost, expires_at) = match self.mirror.row_of_key(key) {
            Some((s, tenure)) => (
                self.judge(s, tenure),
                s.record.as_ref().and_then(|r| r.expires_at),
            ),
            // No row: the key is free.
            None => (Some(Lost::Gone), None),
        };
        // Still ours, but renewed by someone else under our name (a
        // `renew` from another process): what every contender judges by is
        // the deadline on disk now, so it is ours too. One that came closer
        // is renewed at once by our own TTL's rule.
        if lost.is_none() && expires_at != self.record.expires_at {
            self.record.expires_at = expires_at;
            self.scheduled_from_record(now);
            return self.renew_if_due(now);
        }
        Ok(lost)
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
            (None, Some(_)) if s.state == crate::claims::ClaimState::Unreadable => None,
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
        if let Some(lost) = self.renew_if_due(now)? {
            return Ok(Some(lost));
        }
        if now >= self.check_at {
            return self.changed();
        }
        Ok(None)
    }

    /// Renew once a third of the TTL is left (by `now`).
    fn renew_if_due(&mut self, now: i64) -> Result<Option<Lost>, StoreError> {
        let (Some(at), Some(ttl)) = (self.renew_at, self.ttl_ms) else {
            return Ok(None);
        };
        if now < at {
            return Ok(None);
        }
        // Retry soon on an error; the deadline is still a third away.
        self.renew_at = Some(now + RENEW_RETRY_MS);
        let renewed = self
            .store
            .renew(&self.record.key, &self.record.holder, ttl, None)?;
        match renewed.outcome {
            RenewOutcome::Renewed { record, .. } => {
                self.record = record;
                self.scheduled_from_record(self.clock.now_ms());
                Ok(None)
            }
            RenewOutcome::NotRenewed(NoRenew::MutexBusy) => Ok(None),
            RenewOutcome::NotRenewed(no) => Ok(Some(Lost::RenewRefused(no))),
        }
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
    store: &dyn Backend,
    key: &str,
    holder: &str,
    tenure: Option<&Tenure>,
) -> Result<Fenced<ReleaseOutcome>, StoreError> {
    store.release(key, holder, tenure.map(Tenure::fence))
}
