//! A fleet's series from its roots' summaries: what a scrape costs is a few
//! requests a host, whatever the claims (`metrics --per-claim` reads every
//! copy instead, [`Snapshot::of_fleet`]).

use super::{HostLabel, Snapshot, STATES};
use crate::claims::hazard::HazardKind;
use crate::claims::Counts;
use crate::store::sink::FleetSummary;
use std::collections::BTreeMap;

impl Snapshot {
    /// One snapshot per root of every online host, and per offline root
    /// that last said it held claims, as [`Snapshot::of_fleet`] makes them
    /// from the copies: an online root's counts, ages and hazards; an
    /// offline one's claims as last known only, its store marked down; a
    /// root its host cannot read, none.
    pub fn of_summaries(fleet: &FleetSummary, now_ms: i64) -> Vec<Snapshot> {
        let label = |id: &str| {
            let h = fleet.hosts.iter().find(|h| h.host_id == id);
            HostLabel {
                hostname: h.map_or_else(String::new, |h| h.label.clone()),
                host_id: id.to_string(),
            }
        };
        let mut out = Vec::new();
        for r in &fleet.roots {
            let s = &r.summary;
            let mut snap = Snapshot {
                root: Some(r.root.path.clone()),
                host: Some(label(&r.host_id)),
                counts: Counts::default(),
                oldest_s: BTreeMap::new(),
                hazards: BTreeMap::new(),
                store_up: !r.last_known,
            };
            if r.last_known {
                snap.counts.last_known = s.total();
                if snap.counts.last_known > 0 {
                    out.push(snap);
                }
                continue;
            }
            for state in STATES {
                let n = s.counts.get(state.as_str()).copied().unwrap_or(0);
                for _ in 0..n {
                    snap.counts.add(state);
                }
                if let Some(t) = s.oldest_acquired_ms.get(state.as_str()) {
                    let age = (now_ms - t).max(0) as f64 / 1000.0;
                    snap.oldest_s.insert(state.as_str(), age);
                }
            }
            for (name, n) in &s.hazards {
                // A kind this build does not export is not counted.
                if let Some(k) = HazardKind::parse(name).spec().filter(|k| k.metric) {
                    *snap.hazards.entry(k.name).or_insert(0) += n;
                }
            }
            out.push(snap);
        }
        out
    }
}
