//! Which claim already standing on a key, under the acquirer's own holder
//! name, an acquire takes over as its own (the seed's idempotent
//! re-acquire) instead of meeting it as somebody else's.
//!
//! A holder name is not a process: the same worker name is reused after a
//! restart, and nothing stops two processes from using one name. The seed's
//! plain `acquire` continues any claim of the same holder, and keeps doing
//! so. A command that is about to run work under the claim (`run`), or one
//! that was asked to wait until the key is free (`acquire --wait`), must
//! not: continuing a claim some other process made would put two pieces of
//! work under one claim, and over etcd it would hand the new work the
//! fencing revision of a tenure that may already have been reported lost.

use super::{process_create_time_ms, ClaimRecord, LocalIdentity, Locality};

/// How an acquire treats a claim of its own holder name.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Adopt {
    /// Any claim of the same holder is continued (the seed's protocol).
    #[default]
    SameHolder,
    /// Only the claim bound to the very process this acquire binds: same
    /// holder, same pid on this machine, and that process already running
    /// when the claim was made (so not a dead process's claim whose pid was
    /// handed on). Any other claim of the same holder is met as another
    /// holder's: waited for while it stands, recovered once stale.
    SameOwner,
}

impl Adopt {
    /// Does an acquire binding `pid` (on this machine) for `holder` take
    /// `existing` over?
    pub fn takes(self, existing: &ClaimRecord, holder: &str, pid: u32) -> bool {
        if existing.holder != holder {
            return false;
        }
        match self {
            Adopt::SameHolder => true,
            Adopt::SameOwner => same_owner(existing, pid),
        }
    }
}

fn same_owner(existing: &ClaimRecord, pid: u32) -> bool {
    let here = LocalIdentity::current().locality(&existing.host, existing.machine_id.as_deref())
        == Locality::Local;
    // A process started after the claim was made cannot be the one that
    // made it: its pid was reused. The same rule the classifier uses.
    here && i64::from(existing.pid) == i64::from(pid)
        && process_create_time_ms(existing.pid).is_some_and(|s| s <= existing.acquired_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::acquire::new_record;
    use crate::claims::AcquireOpts;

    /// A claim of holder "h" as an acquire binding `pid` would write it now.
    fn claim_of(pid: u32) -> ClaimRecord {
        let opts = AcquireOpts {
            pid: Some(pid),
            ..AcquireOpts::default()
        };
        new_record("k", "h", &opts)
    }

    fn me() -> u32 {
        std::process::id()
    }

    #[test]
    fn the_claim_bound_to_this_very_process_is_continued() {
        assert!(Adopt::SameOwner.takes(&claim_of(me()), "h", me()));
    }

    #[test]
    fn a_claim_of_the_same_holder_bound_to_another_live_process_is_not() {
        // Started before the claim was made: only its pid tells it apart.
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let started = process_create_time_ms(other.id() as i32).expect("its start time");
        let mut theirs = claim_of(other.id());
        theirs.acquired_at = started + 1_000;
        let taken = Adopt::SameOwner.takes(&theirs, "h", me());
        let _ = other.kill();
        let _ = other.wait();
        assert!(!taken, "continued another process's claim");
        assert!(
            Adopt::SameHolder.takes(&theirs, "h", me()),
            "the seed's rule"
        );
    }

    #[test]
    fn a_claim_made_before_this_process_started_is_a_reused_pids_not_ours() {
        let mut old = claim_of(me());
        old.acquired_at = 1_000;
        assert!(!Adopt::SameOwner.takes(&old, "h", me()));
    }

    #[test]
    fn a_claim_of_this_pid_made_on_another_machine_is_not_ours() {
        let mut elsewhere = claim_of(me());
        elsewhere.host = "elsewhere".into();
        elsewhere.machine_id = Some("another-machine".into());
        assert!(!Adopt::SameOwner.takes(&elsewhere, "h", me()));
    }
}
