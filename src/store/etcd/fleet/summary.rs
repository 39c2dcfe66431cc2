//! The fleet from its summaries: each host's record, owner keys and roots'
//! summaries in one transaction — O(hosts) requests whatever the claims,
//! for `fleet`, a scrape and a first screen.

use super::HostRecord;
use crate::claims::{ClaimState, Counts};
use crate::store::etcd::Core;
use crate::store::fleet::{HostInfo, RootState};
use crate::store::host_names::label_hosts;
use crate::store::sink::{FleetSummary, RootSummary, RootSummaryAt};
use crate::store::StoreError;
use std::collections::HashMap;

impl Core {
    /// Every host with its counts and every root's summary; None when a
    /// root has no summary yet (its publisher has not written one, or
    /// predates them): read the copies then.
    pub(in crate::store::etcd) fn read_fleet_summaries(
        &self,
    ) -> Result<Option<FleetSummary>, StoreError> {
        let mut out = FleetSummary::default();
        let mut missing = false;
        self.each_host_summed(|rec, online, kvs| {
            let prefix = self.layout.host_summaries(&rec.machine_id);
            let mut of = summaries_in(&prefix, &kvs);
            let (host, roots) = counted(rec, online, &mut of);
            missing |= roots.is_none();
            out.hosts.push(host);
            out.roots.extend(roots.unwrap_or_default());
            !missing
        })?;
        if missing {
            return Ok(None);
        }
        label_hosts(&mut out.hosts);
        Ok(Some(out))
    }
}

/// The summaries among `kvs` (keys under `prefix`), by root id.
fn summaries_in(prefix: &str, kvs: &[etcd_client::KeyValue]) -> HashMap<String, RootSummary> {
    kvs.iter()
        .filter_map(|kv| {
            let id = std::str::from_utf8(kv.key()).ok()?.strip_prefix(prefix)?;
            let summary = serde_json::from_slice::<RootSummary>(kv.value()).ok()?;
            Some((id.to_string(), summary))
        })
        .collect()
}

/// The host as [`crate::store::Fleet::state`] lists it, counted from its
/// roots' summaries as the copies would be (an unreadable root's claims
/// are unknown, an offline root's or host's are last known); None for the
/// roots when one of them has no summary.
fn counted(
    rec: HostRecord,
    online: bool,
    of: &mut HashMap<String, RootSummary>,
) -> (HostInfo, Option<Vec<RootSummaryAt>>) {
    let mut counts = Counts::default();
    let mut roots = Some(Vec::new());
    for root in &rec.roots {
        let Some(summary) = of.remove(&root.id) else {
            roots = None;
            continue;
        };
        let last_known = match (online, root.state) {
            (true, RootState::Unreadable) => continue,
            (true, RootState::Published) => false,
            _ => true,
        };
        if last_known {
            counts.last_known += summary.total();
        } else {
            for (state, n) in &summary.counts {
                if let Some(s) = ClaimState::parse(state) {
                    for _ in 0..*n {
                        counts.add(s);
                    }
                }
            }
        }
        if let Some(r) = roots.as_mut() {
            r.push(RootSummaryAt {
                host_id: rec.machine_id.clone(),
                root: root.clone(),
                last_known,
                summary,
            });
        }
    }
    let host = HostInfo {
        host_id: rec.machine_id,
        label: rec.hostname.clone(),
        hostname: rec.hostname,
        online,
        last_seen_ms: if online {
            crate::claims::now_ms()
        } else {
            rec.last_seen_ms
        },
        counts,
        roots: rec.roots,
    };
    (host, roots)
}
