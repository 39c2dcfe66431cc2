//! When `run` stops CMD: at once on a loss it is told of, and ahead of the
//! deadline when the claim could run out unseen (a lease on a store it
//! cannot reach).

use std::time::{Duration, Instant};

/// How long CMD has to stop after SIGTERM before SIGKILL, when the loss was
/// learnt from the store (a force-release, an expired lease, a refused
/// renewal): the claim is already gone, and the contract's 10 s apply.
pub const KILL_GRACE: Duration = Duration::from_secs(10);

/// The least margin between CMD's SIGKILL and the earliest instant its lease
/// can end: it absorbs the rates of two clocks, the SIGKILL's delivery and a
/// loaded machine's scheduling delays.
pub const MIN_MARGIN: Duration = Duration::from_secs(2);

/// The margin kept before a lease of `ttl` can end: a tenth of the TTL, and
/// at least [`MIN_MARGIN`]. Clock rates drift in proportion to the time
/// measured, so the margin grows with the TTL.
pub fn margin(ttl: Duration) -> Duration {
    (ttl / 10).max(MIN_MARGIN)
}

/// The grace between SIGTERM and SIGKILL in a stop ahead of a deadline:
/// [`KILL_GRACE`], shrunk to a quarter of the TTL for a short one, so that
/// CMD is never stopped after less than about half its TTL without a word
/// from the store (a store that restarts within that costs no work).
pub fn deadline_grace(ttl: Duration) -> Duration {
    KILL_GRACE.min(ttl / 4)
}

/// The instants of a stop: SIGTERM, then SIGKILL to the whole group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    pub term_at: Instant,
    pub kill_at: Instant,
}

impl Schedule {
    /// A stop for a claim that is safe until `safe_until` under a lease of
    /// `ttl`: SIGKILL a [`margin`] before it, SIGTERM a [`deadline_grace`]
    /// before that.
    pub fn ahead_of(safe_until: Instant, ttl: Duration) -> Schedule {
        let kill_at = safe_until.checked_sub(margin(ttl)).unwrap_or(safe_until);
        let term_at = kill_at.checked_sub(deadline_grace(ttl)).unwrap_or(kill_at);
        Schedule { term_at, kill_at }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_minute_lease_is_stopped_with_the_full_grace_six_seconds_before_it_can_end() {
        let safe = Instant::now() + Duration::from_secs(60);
        let s = Schedule::ahead_of(safe, Duration::from_secs(60));
        assert_eq!(safe - s.kill_at, Duration::from_secs(6));
        assert_eq!(s.kill_at - s.term_at, KILL_GRACE);
    }

    #[test]
    fn a_short_lease_keeps_the_two_second_margin_and_shrinks_the_grace_to_a_quarter_ttl() {
        let safe = Instant::now() + Duration::from_secs(12);
        let s = Schedule::ahead_of(safe, Duration::from_secs(12));
        assert_eq!(safe - s.kill_at, MIN_MARGIN);
        assert_eq!(s.kill_at - s.term_at, Duration::from_secs(3));
    }

    #[test]
    fn a_long_lease_keeps_a_tenth_of_its_ttl_as_margin() {
        let ttl = Duration::from_secs(3600);
        let safe = Instant::now() + ttl;
        let s = Schedule::ahead_of(safe, ttl);
        assert_eq!(safe - s.kill_at, Duration::from_secs(360));
        assert_eq!(s.kill_at - s.term_at, KILL_GRACE);
    }
}
