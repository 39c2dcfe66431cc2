//! The fleet from its summaries: each host's record, owner keys and roots'
//! summaries, read for many hosts in one transaction — a few requests for
//! the whole fleet, whatever its claims, for `fleet`, a scrape and a first
//! screen.
//!
//! The hosts are found by one read of the host index (or, while it is
//! empty, by the walk of `Core::each_machine`, one narrow search a host),
//! afresh at each read: a host that came is in the next answer.

use super::HostRecord;
use crate::claims::{ClaimState, Counts};
use crate::store::etcd::Core;
use crate::store::fleet::{HostInfo, RootState};
use crate::store::host_names::label_hosts;
use crate::store::sink::{FleetSummary, RootSummary, RootSummaryAt};
use crate::store::StoreError;
use etcd_client::{Txn, TxnOpResponse};
use std::collections::HashMap;

/// Hosts read in one transaction: three reads each, under etcd's default
/// of 128 operations a transaction.
const HOSTS_A_TXN: usize = 40;

impl Core {
    /// Every host with its counts and every root's summary; None when a
    /// root has no summary yet (its publisher has not written one, or
    /// predates them): read the copies then.
    pub(in crate::store::etcd) fn read_fleet_summaries(
        &self,
    ) -> Result<Option<FleetSummary>, StoreError> {
        let machines = self.find_hosts()?;
        let mut out = FleetSummary::default();
        for (rec, online, mut sums) in self.hosts_with_summaries(&machines)? {
            let (host, roots) = counted(rec, online, &mut sums);
            let Some(roots) = roots else {
                return Ok(None);
            };
            out.hosts.push(host);
            out.roots.extend(roots);
        }
        label_hosts(&mut out.hosts);
        Ok(Some(out))
    }

    /// Every host's machine id (the index, else the walk).
    fn find_hosts(&self) -> Result<Vec<String>, StoreError> {
        let mut found = Vec::new();
        self.each_machine(|m| {
            found.push(m);
            Ok(true)
        })?;
        Ok(found)
    }

    /// Each of `machines` that has a record, whether it is online, and its
    /// roots' summaries by root id: [`HOSTS_A_TXN`] hosts a transaction,
    /// the transactions at once.
    fn hosts_with_summaries(&self, machines: &[String]) -> Result<Vec<HostSummaries>, StoreError> {
        std::thread::scope(|scope| {
            let reads: Vec<_> = machines
                .chunks(HOSTS_A_TXN)
                .map(|chunk| scope.spawn(move || self.read_hosts_summaries(chunk)))
                .collect();
            let mut out = Vec::new();
            for read in reads {
                let got = read
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                out.extend(got);
            }
            Ok(out)
        })
    }

    /// [`Core::hosts_with_summaries`] of a few hosts, in one transaction.
    fn read_hosts_summaries(&self, machines: &[String]) -> Result<Vec<HostSummaries>, StoreError> {
        let sums: Vec<String> = machines
            .iter()
            .map(|m| self.layout.host_summaries(m))
            .collect();
        let ops: Vec<_> = machines
            .iter()
            .zip(&sums)
            .flat_map(|(m, s)| self.host_ops(m, Some(s)))
            .collect();
        let resp = self.conn.call(|mut c| {
            let txn = Txn::new().and_then(ops.clone());
            async move { c.txn(txn).await }
        })?;
        let mut got = resp.op_responses().into_iter().filter_map(|r| match r {
            TxnOpResponse::Get(g) => Some(g),
            _ => None,
        });
        let mut out = Vec::new();
        for (m, prefix) in machines.iter().zip(&sums) {
            let (rec, owners, summaries) = (got.next(), got.next(), got.next());
            let Some((rec, online)) = self.host_of(m, rec.as_ref(), owners.as_ref()) else {
                continue;
            };
            let kvs = summaries.map(|g| g.kvs().to_vec()).unwrap_or_default();
            out.push((rec, online, summaries_in(prefix, &kvs)));
        }
        Ok(out)
    }
}

/// A host's record, whether it is online, and its roots' summaries.
type HostSummaries = (HostRecord, bool, HashMap<String, RootSummary>);

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
