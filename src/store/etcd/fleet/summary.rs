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
        // Two threads on each other's heels: one finds the hosts, one reads
        // each host (its record, owner keys and summaries) as soon as it is
        // found, so a scrape waits for one round trip a host, not two.
        let (found, read) = std::thread::scope(|scope| {
            let (to_read, found) = std::sync::mpsc::sync_channel::<String>(HOSTS_AHEAD);
            let finder = scope.spawn(move || self.each_machine(|m| Ok(to_read.send(m).is_ok())));
            let mut read = Ok(());
            for m in found.iter() {
                let sums = self.layout.host_summaries(&m);
                let (rec, kvs) = match self.host_and(&m, Some(&sums)) {
                    Ok((Some(rec), kvs)) => (rec, kvs),
                    Ok((None, _)) => continue,
                    Err(e) => {
                        read = Err(e);
                        break;
                    }
                };
                let (host, roots) = counted(rec.0, rec.1, &mut summaries_in(&sums, &kvs));
                missing |= roots.is_none();
                out.hosts.push(host);
                out.roots.extend(roots.unwrap_or_default());
                if missing {
                    break;
                }
            }
            // Ends the finder early: nobody reads what it finds.
            drop(found);
            let found = finder
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (found, read)
        });
        read?;
        found?;
        if missing {
            return Ok(None);
        }
        label_hosts(&mut out.hosts);
        Ok(Some(out))
    }
}

/// Hosts found ahead of the one being read.
const HOSTS_AHEAD: usize = 64;

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
