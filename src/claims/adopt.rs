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
