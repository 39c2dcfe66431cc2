//! Waiting for a key, and holding it once taken, over any store.
//!
//! This sits above the store seam, beside the faces: the protocol core
//! (`claims`) knows nothing of stores, and a store knows nothing of who
//! waits on it.
//!
//! Both drive one member's `&dyn Backend` and nothing else: its verbs (acquire, status,
//! renew, release, keep-alive) and a [`Wakeups`] feed saying "something
//! about this key may have changed", which a face builds on the store's
//! own [`crate::store::Feed::watch_key`] (inotify on the lockfile and a pidfd on a local
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

mod hold;
#[cfg(test)]
mod tests;

pub use crate::claims::Blocker;
pub use hold::{give_back, renew_due, Clock, Hold, Lost, SystemClock, HOLD_RECHECK, LEASE_CHECK};

use crate::claims::{now_ms, AcquireKind, AcquireOpts, AcquireOutcome, ClaimRecord, Status};
use crate::store::mirror::{judge::Judge, Mirror};
use crate::store::{Backend, StoreError, Tenure};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A waiter re-tries at least this often: a holder that dies changes no
/// file, and only a local one can be watched.
pub const WAIT_RECHECK: Duration = Duration::from_secs(2);

/// Why a [`Wakeups::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woke {
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
    fn wait(&mut self, timeout: Duration) -> Woke;

    /// The key is held by `blocker` now. A feed that can watch the holder
    /// itself (a local pid's exit) may start doing so; the default cannot.
    fn blocked_by(&mut self, _blocker: &Blocker) {}
}

/// A channel is a feed: whoever holds the sender (a watcher callback, a
/// thread draining a store's watch, a signal thread) wakes the waiter.
impl Wakeups for Receiver<Woke> {
    fn wait(&mut self, timeout: Duration) -> Woke {
        match self.recv_timeout(timeout) {
            Ok(w) => w,
            Err(RecvTimeoutError::Timeout) => Woke::TimedOut,
            // Every sender is gone: no more news, but the safety re-check
            // still runs on time.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(timeout);
                Woke::TimedOut
            }
        }
    }
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
    store: &dyn Backend,
    wakeups: &mut dyn Wakeups,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
    deadline: Option<Instant>,
    mut on_block: impl FnMut(&Blocker),
) -> Result<Waited, StoreError> {
    let mut told = false;
    let mut last: Option<Blocker> = None;
    // The key as the store says it stands: a mirror of this key alone,
    // judged as every face judges a claim, and never a listing.
    let mut mirror = Mirror::of_keys(store, Some(Judge::local()), [key.to_string()], now_ms());
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
        // Whether the store keeps the claim on a lease (its row has a tenure).
        let leased = mirror.row_of_key(key).is_some_and(|(_, t)| t.is_some());
        let expires_at = match known {
            // A store with leases says when a lease ends (its key goes), so
            // the same holder's deadline need not be read at every look.
            Some(b) if leased => b.expires_at,
            // The TTL is read separately: acquire's refusal names the
            // holder, not its deadline. A stale read only moves one look.
            _ => {
                let now = now_ms();
                mirror.look_again(key);
                mirror.settle(store, now)?;
                match mirror.row_of_key(key) {
                    Some((s, tenure)) => match &s.record {
                        Some(r) if r.holder == h => ends_at(s, tenure, now),
                        _ => None,
                    },
                    None => None,
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
        if wakeups.wait(at.saturating_duration_since(now)) == Woke::Interrupted {
            return Ok(Waited::Interrupted);
        }
    }
}
