//! The etcd hazards doctor reports (each documented in the README).

use super::layout::range_end;
use super::Core;
use crate::claims::hazard::{Hazard, HazardSpec};
use crate::store::StoreError;
use etcd_client::{AlarmAction, AlarmType, GetOptions, LeaseTimeToLiveOptions, WatchOptions};

/// A claim key with no lease: it would never expire.
pub const CLAIM_WITHOUT_LEASE: &HazardSpec = &HazardSpec {
    name: "etcd_claim_without_lease",
    rank: 11,
    cleanable: false,
    fix: "force-release it",
    metric: false,
};
/// A lease attached to no key: leaked by a crashed writer, holding memory
/// and (if it is a claim's) a TTL that ends nothing.
pub const LEASE_WITHOUT_KEYS: &HazardSpec = &HazardSpec {
    name: "etcd_lease_without_keys",
    rank: 12,
    cleanable: false,
    fix: "revoke it (etcdctl lease revoke)",
    metric: false,
};
/// An event with no retention lease: kept forever.
pub const EVENTS_WITHOUT_RETENTION: &HazardSpec = &HazardSpec {
    name: "etcd_events_without_retention",
    rank: 13,
    cleanable: false,
    fix: "delete the old events by hand",
    metric: false,
};
/// The cluster's NOSPACE alarm: every write (every acquire) is refused.
pub const NOSPACE_ALARM: &HazardSpec = &HazardSpec {
    name: "etcd_nospace_alarm",
    rank: 10,
    cleanable: false,
    fix: "compact, defragment, then etcdctl alarm disarm",
    metric: false,
};
/// History never compacted although it is long: the database only grows
/// until NOSPACE.
pub const AUTO_COMPACTION_OFF: &HazardSpec = &HazardSpec {
    name: "etcd_auto_compaction_off",
    rank: 14,
    cleanable: false,
    fix: "start etcd with --auto-compaction-mode and --auto-compaction-retention",
    metric: false,
};

/// Every kind only etcd finds (its opener lists them). `metrics` reads a
/// store's mirror, which holds the claims' hazards, not these: none is
/// exported.
pub const HAZARDS: &[&HazardSpec] = &[
    NOSPACE_ALARM,
    CLAIM_WITHOUT_LEASE,
    LEASE_WITHOUT_KEYS,
    EVENTS_WITHOUT_RETENTION,
    AUTO_COMPACTION_OFF,
];

/// Revisions of history past which never having compacted is a hazard.
const UNCOMPACTED_REVISIONS: i64 = 100_000;
/// Leases inspected at most (one round trip each).
const LEASES_INSPECTED_MAX: usize = 10_000;

impl Core {
    /// The store-wide hazards. A check the credentials may not run (a role
    /// limited to the prefix cannot read alarms or every lease) is skipped,
    /// not failed: doctor reports what it can see.
    pub(super) fn hazards(&self) -> Result<Vec<Hazard>, StoreError> {
        let mut out = Vec::new();
        let at = |path: String, kind, detail: String| Hazard::at_key(kind, path, detail);
        if let Ok(resp) = self
            .conn
            .call(|mut c| async move { c.alarm(AlarmAction::Get, AlarmType::None, None).await })
        {
            for a in resp
                .alarms()
                .iter()
                .filter(|a| a.alarm() == AlarmType::Nospace)
            {
                out.push(at(
                    self.conn.endpoints().to_string(),
                    NOSPACE_ALARM,
                    format!(
                        "member {:x} raised NOSPACE: every write is refused until space is freed (compact, defragment, then `etcdctl alarm disarm`)",
                        a.member_id()
                    ),
                ));
            }
        }
        let events = self.layout.events();
        let opts = GetOptions::new()
            .with_range(range_end(&events))
            .with_keys_only();
        let ev = events.clone();
        let resp = self.conn.call(|mut c| {
            let (ev, opts) = (ev.clone(), opts.clone());
            async move { c.get(ev, Some(opts)).await }
        })?;
        let bare = resp.kvs().iter().filter(|kv| kv.lease() == 0).count();
        if bare > 0 {
            out.push(at(
                events,
                EVENTS_WITHOUT_RETENTION,
                format!("{bare} event(s) have no retention lease and are kept forever"),
            ));
        }
        let revision = resp.header().map(|h| h.revision()).unwrap_or(0);
        if revision > UNCOMPACTED_REVISIONS && !self.history_compacted()? {
            out.push(at(
                self.conn.endpoints().to_string(),
                AUTO_COMPACTION_OFF,
                format!("{revision} revisions and none compacted: start etcd with --auto-compaction-mode/--auto-compaction-retention"),
            ));
        }
        if let Ok(leases) = self.conn.call(|mut c| async move { c.leases().await }) {
            for l in leases.leases().iter().take(LEASES_INSPECTED_MAX) {
                let id = l.id();
                let opts = LeaseTimeToLiveOptions::new().with_keys();
                let Ok(ttl) = self.conn.call(|mut c| {
                    let opts = opts.clone();
                    async move { c.lease_time_to_live(id, Some(opts)).await }
                }) else {
                    continue;
                };
                if ttl.ttl() > 0 && ttl.keys().is_empty() {
                    out.push(at(
                        format!("lease {}", crate::store::lease_hex(id)),
                        LEASE_WITHOUT_KEYS,
                        format!("a lease with no keys ({} s left): leaked by a writer that died between grant and use", ttl.ttl()),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Has etcd ever compacted? A watch from revision 1 is refused with the
    /// compact revision if so.
    fn history_compacted(&self) -> Result<bool, StoreError> {
        let probe = format!("{}doctor-probe", self.layout.all());
        self.conn.call(|mut c| {
            let probe = probe.clone();
            async move {
                let opts = WatchOptions::new().with_start_revision(1);
                let mut stream = c.watch(probe, Some(opts)).await?;
                Ok(match stream.message().await? {
                    Some(r) => r.compact_revision() > 0,
                    None => false,
                })
            }
        })
    }
}
