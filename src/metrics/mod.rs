//! Prometheus metrics over claims: what a sweep found, and what the events
//! logs have said, in the text exposition format.
//!
//! The exporter knows nothing of where its numbers come from: a [`Snapshot`]
//! is built from a sweep result (of a file root today, of any store behind
//! the store seam later), and [`EventCounts`] from whatever reads an events
//! log. Collection happens at scrape time, so a scrape always shows the root
//! as it is, never a cached guess.

pub mod events;

use crate::claims::{ClaimState, Counts, HazardKind, Root, Sweep};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

pub use events::{EventCounter, EventCounts};

/// The states a claim can be listed in (free keys have no lockfile).
pub const STATES: [ClaimState; 5] = [
    ClaimState::Live,
    ClaimState::Suspect,
    ClaimState::Stale,
    ClaimState::Corrupted,
    ClaimState::Unreadable,
];

/// Every hazard kind, so each is exported (at 0) before it first happens:
/// an alert on `claimtop_hazards > 0` needs the series to exist.
pub const HAZARD_KINDS: [HazardKind; 7] = [
    HazardKind::StaleMutex,
    HazardKind::TempLitter,
    HazardKind::CorruptedClaim,
    HazardKind::ForeignMachine,
    HazardKind::Unreadable,
    HazardKind::KeyMismatch,
    HazardKind::ArchiveDirBroken,
];

/// Fails to compile when a kind is added and not listed above.
const fn _every_kind_listed(k: HazardKind) -> usize {
    match k {
        HazardKind::StaleMutex
        | HazardKind::TempLitter
        | HazardKind::CorruptedClaim
        | HazardKind::ForeignMachine
        | HazardKind::Unreadable
        | HazardKind::KeyMismatch
        | HazardKind::ArchiveDirBroken => HAZARD_KINDS.len(),
    }
}

/// What one root (or store) looks like at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The `root` label: set only when several roots are exported, so one
    /// root's series carry no label that says nothing.
    pub root: Option<String>,
    pub counts: Counts,
    /// Age in seconds of the oldest claim in each state that has a record
    /// (a corrupted or unreadable file has no `acquired_at`).
    pub oldest_s: BTreeMap<&'static str, f64>,
    pub hazards: BTreeMap<&'static str, usize>,
    /// Could the claims be read at all?
    pub store_up: bool,
}

impl Snapshot {
    /// From a file root's sweep. The store is up when its claims dir can be
    /// listed (a root with nothing claimed yet has none, and is up).
    pub fn of_file_root(root: &Root, sweep: &Sweep, label: Option<String>, now_ms: i64) -> Self {
        let store_up = match std::fs::read_dir(root.claims_dir()) {
            Ok(_) => true,
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        };
        Snapshot::of_sweep(sweep, label, now_ms, store_up)
    }

    /// From any sweep result, whichever store produced it.
    pub fn of_sweep(sweep: &Sweep, root: Option<String>, now_ms: i64, store_up: bool) -> Self {
        let mut oldest_s: BTreeMap<&'static str, f64> = BTreeMap::new();
        for item in &sweep.claims {
            let Some(rec) = &item.record else { continue };
            let age = (now_ms - rec.acquired_at).max(0) as f64 / 1000.0;
            let slot = oldest_s.entry(item.state.as_str()).or_insert(0.0);
            *slot = slot.max(age);
        }
        let mut hazards: BTreeMap<&'static str, usize> = BTreeMap::new();
        for h in &sweep.hazards {
            *hazards.entry(h.kind.as_str()).or_insert(0) += 1;
        }
        Snapshot {
            root,
            counts: sweep.counts,
            oldest_s,
            hazards,
            store_up,
        }
    }

    fn count(&self, s: ClaimState) -> usize {
        let c = &self.counts;
        match s {
            ClaimState::Live => c.live,
            ClaimState::Suspect => c.suspect,
            ClaimState::Stale => c.stale,
            ClaimState::Corrupted => c.corrupted,
            ClaimState::Unreadable => c.unreadable,
            ClaimState::Free => 0,
        }
    }
}

type Labels = Vec<(String, String)>;

/// `[(root, R)] + [(name, value)]`: the root label first, when there is one.
fn labels(root: Option<&str>, name: &str, value: &str) -> Labels {
    let mut l: Labels = root
        .map(|r| ("root".to_string(), r.to_string()))
        .into_iter()
        .collect();
    l.push((name.to_string(), value.to_string()));
    l
}

fn root_only(root: Option<&str>) -> Labels {
    root.map(|r| vec![("root".to_string(), r.to_string())])
        .unwrap_or_default()
}

/// The registry and its families, kept across scrapes so counters only
/// ever go up.
pub struct Exporter {
    registry: Registry,
    claims: Family<Labels, Gauge>,
    age: Family<Labels, Gauge<f64, AtomicU64>>,
    hazards: Family<Labels, Gauge>,
    events: Family<Labels, Counter>,
    unparseable: Family<Labels, Counter>,
    up: Gauge,
    store_up: Family<Labels, Gauge>,
}

impl Default for Exporter {
    fn default() -> Self {
        Exporter::new()
    }
}

impl Exporter {
    pub fn new() -> Exporter {
        let mut registry = Registry::default();
        let claims = Family::<Labels, Gauge>::default();
        let age = Family::<Labels, Gauge<f64, AtomicU64>>::default();
        let hazards = Family::<Labels, Gauge>::default();
        let events = Family::<Labels, Counter>::default();
        let unparseable = Family::<Labels, Counter>::default();
        let up = Gauge::default();
        let store_up = Family::<Labels, Gauge>::default();
        registry.register("claimtop_claims", "Claims by state", claims.clone());
        registry.register(
            "claimtop_claim_age_seconds",
            "Age of the oldest claim in each state (0 when none)",
            age.clone(),
        );
        registry.register("claimtop_hazards", "Hazards by kind", hazards.clone());
        // The registry adds `_total` to counter names.
        registry.register(
            "claimtop_events",
            "Events read from the events log, by type (other: a type claimtop does not know)",
            events.clone(),
        );
        registry.register(
            "claimtop_events_unparseable",
            "Lines of the events log that are not one JSON object",
            unparseable.clone(),
        );
        registry.register("claimtop_up", "1 while the exporter answers", up.clone());
        registry.register(
            "claimtop_store_up",
            "1 when the claims could be read at the last scrape",
            store_up.clone(),
        );
        up.set(1);
        Exporter {
            registry,
            claims,
            age,
            hazards,
            events,
            unparseable,
            up,
            store_up,
        }
    }

    /// Set every gauge from `snaps` (one per root) and bring every counter
    /// up to `events` (the totals read so far, per root in the same order).
    pub fn update(&self, snaps: &[Snapshot], events: &[&EventCounts]) {
        // A root that went away must not leave its last values behind.
        self.claims.clear();
        self.age.clear();
        self.hazards.clear();
        self.store_up.clear();
        self.up.set(1);
        for s in snaps {
            let root = s.root.as_deref();
            for state in STATES {
                let name = state.as_str();
                let l = labels(root, "state", name);
                self.claims.get_or_create(&l).set(s.count(state) as i64);
                let oldest = s.oldest_s.get(name).copied().unwrap_or(0.0);
                self.age.get_or_create(&l).set(oldest);
            }
            for kind in HAZARD_KINDS {
                let n = s.hazards.get(kind.as_str()).copied().unwrap_or(0);
                self.hazards
                    .get_or_create(&labels(root, "kind", kind.as_str()))
                    .set(n as i64);
            }
            self.store_up
                .get_or_create(&root_only(root))
                .set(i64::from(s.store_up));
        }
        for (s, counts) in snaps.iter().zip(events) {
            let root = s.root.as_deref();
            for (kind, n) in counts.by_type() {
                let c = self.events.get_or_create(&labels(root, "type", kind));
                c.inc_by(n.saturating_sub(c.get()));
            }
            let c = self.unparseable.get_or_create(&root_only(root));
            c.inc_by(counts.unparseable.saturating_sub(c.get()));
        }
    }

    /// The exposition text (OpenMetrics, which Prometheus reads natively).
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// The content type of [`Exporter::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of the classic Prometheus text format (0.0.4), served to
/// scrapers that do not ask for OpenMetrics (curl, older tools, `promtool
/// check metrics`), as Prometheus's own client libraries negotiate.
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Does a scraper's `Accept` header ask for OpenMetrics? Prometheus sends
/// `application/openmetrics-text;...` first in its list when it can read it.
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| a.contains("application/openmetrics-text"))
}

/// OpenMetrics text → the classic text format. The two differ, for what
/// this exporter writes, in three places: a counter's HELP and TYPE name
/// the family (`x`) in OpenMetrics but the sample (`x_total`) in the classic
/// format; `# UNIT` lines do not exist there; nor does the `# EOF` trailer.
pub fn to_classic_text(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (p, rest)));
        match meta {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let suffix = if counters.contains(name) {
                    "_total"
                } else {
                    ""
                };
                out.push_str(&format!("{prefix}{name}{suffix} {tail}"));
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classic_text_names_a_counter_by_its_sample_and_drops_what_it_lacks() {
        let om = "# HELP claimtop_events Events by type.\n# TYPE claimtop_events counter\n\
                  claimtop_events_total{type=\"claim_acquired\"} 3\n\
                  # HELP claimtop_up Up.\n# TYPE claimtop_up gauge\n# UNIT claimtop_up x\n\
                  claimtop_up 1\n# EOF\n";
        assert_eq!(
            to_classic_text(om),
            "# HELP claimtop_events_total Events by type.\n# TYPE claimtop_events_total counter\n\
             claimtop_events_total{type=\"claim_acquired\"} 3\n\
             # HELP claimtop_up Up.\n# TYPE claimtop_up gauge\nclaimtop_up 1\n"
        );
        assert!(wants_openmetrics(Some(
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
        )));
        assert!(!wants_openmetrics(Some("*/*")));
        assert!(!wants_openmetrics(None));
    }

    fn snap(root: &str, live: usize) -> Snapshot {
        Snapshot {
            root: Some(root.into()),
            counts: Counts {
                live,
                ..Counts::default()
            },
            oldest_s: BTreeMap::new(),
            hazards: BTreeMap::new(),
            store_up: true,
        }
    }

    #[test]
    fn a_root_no_longer_exported_leaves_no_gauges_behind_and_counters_never_fall() {
        let e = Exporter::new();
        let mut seen = EventCounts::default();
        seen.add(Some("claim_acquired"));
        seen.add(Some("claim_acquired"));
        e.update(&[snap("/a", 2), snap("/b\"\n", 1)], &[&seen, &seen]);
        let text = e.render().unwrap();
        assert!(
            text.contains(r#"claimtop_claims{root="/a",state="live"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"root="/b\"\n""#),
            "label values are escaped: {text}"
        );
        assert!(text.contains(r#"claimtop_events_total{root="/a",type="claim_acquired"} 2"#));
        e.update(&[snap("/a", 0)], &[&EventCounts::default()]);
        let text = e.render().unwrap();
        assert!(!text.contains(r#"claimtop_claims{root="/b"#), "{text}");
        assert!(text.contains(r#"claimtop_claims{root="/a",state="live"} 0"#));
        assert!(
            text.contains(r#"claimtop_events_total{root="/a",type="claim_acquired"} 2"#),
            "{text}"
        );
    }
}
