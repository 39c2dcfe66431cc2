//! Prometheus metrics over claims: what a sweep found, and what the events
//! logs have said, in the text exposition format.
//!
//! The exporter knows nothing of where its numbers come from: a [`Snapshot`]
//! is built from a store's mirror (a file root's or etcd's), and
//! [`EventCounts`] from whatever reads an events log. The mirror is brought
//! up to date at scrape time, so a scrape shows the root as it is.

pub mod events;

mod fleet;

use crate::claims::hazard::{HazardSpec, PROTOCOL_HAZARDS};
use crate::claims::{ClaimState, Counts, Status};
use crate::store::fleet::FleetState;
use crate::store::mirror::Tally;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, HashMap};
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

/// Every hazard kind exported, each (at 0) before it first happens: an
/// alert on `claimtop_hazards > 0` needs the series to exist.
pub fn hazard_kinds() -> impl Iterator<Item = &'static HazardSpec> {
    PROTOCOL_HAZARDS.iter().copied().filter(|s| s.metric)
}

/// The `host` and `host_id` labels of a root a publishing host mirrors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLabel {
    pub hostname: String,
    pub host_id: String,
}

/// What one root (or store) looks like at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The `root` label: set only when several roots are exported, so one
    /// root's series carry no label that says nothing.
    pub root: Option<String>,
    /// Set for a root a host publishes into the store (`claimtop publish`):
    /// its series carry `host`, `host_id` and `root`.
    pub host: Option<HostLabel>,
    pub counts: Counts,
    /// Age in seconds of the oldest claim in each state that has a record
    /// (a corrupted or unreadable file has no `acquired_at`).
    pub oldest_s: BTreeMap<&'static str, f64>,
    pub hazards: BTreeMap<&'static str, usize>,
    /// Could the claims be read at all?
    pub store_up: bool,
}

impl Snapshot {
    /// From a store's mirror: its tally (the counts and hazards `list`
    /// and `doctor` give) and the ages of its rows.
    pub fn of_tally<'a>(
        tally: &Tally,
        rows: impl Iterator<Item = &'a Status>,
        root: Option<String>,
        now_ms: i64,
        store_up: bool,
    ) -> Self {
        let mut oldest_s: BTreeMap<&'static str, f64> = BTreeMap::new();
        for item in rows {
            let Some(rec) = &item.record else { continue };
            let age = (now_ms - rec.acquired_at).max(0) as f64 / 1000.0;
            let slot = oldest_s.entry(item.state.as_str()).or_insert(0.0);
            *slot = slot.max(age);
        }
        let mut hazards: BTreeMap<&'static str, usize> = BTreeMap::new();
        for k in tally.hazards.iter().filter_map(|h| h.kind.spec()) {
            *hazards.entry(k.name).or_insert(0) += 1;
        }
        Snapshot {
            root,
            host: None,
            counts: tally.counts,
            oldest_s,
            hazards,
            store_up,
        }
    }

    /// One snapshot per root of every online host in `fleet`, as its host
    /// published it. An offline host's claims are unknown, not zero: its
    /// roots are left out, and `claimtop_host_up` says why; so is a root
    /// its host cannot read, and `claimtop_root_known` says so.
    pub fn of_fleet(fleet: &FleetState, now_ms: i64) -> Vec<Snapshot> {
        let mut out = Vec::new();
        // Each root's place in `out`: items and hazards are then filed in
        // one pass each, however many hosts there are.
        let mut at: HashMap<(&str, &str), usize> = HashMap::new();
        for h in fleet.hosts.iter().filter(|h| h.online) {
            // An unreadable root's claims are unknown too: no zeros for it.
            for r in h.roots.iter().filter(|r| r.is_known()) {
                at.insert((&h.host_id, &r.id), out.len());
                out.push(Snapshot {
                    root: Some(r.path.clone()),
                    host: Some(HostLabel {
                        hostname: h.label.clone(),
                        host_id: h.host_id.clone(),
                    }),
                    counts: Counts::default(),
                    oldest_s: BTreeMap::new(),
                    hazards: BTreeMap::new(),
                    store_up: true,
                });
            }
        }
        // An offline host's roots: only what it last said, counted as last
        // known (never live), as `list` and the dashboard count it.
        for i in &fleet.last_known {
            let place = (i.host_id.as_str(), i.root.id.as_str());
            let s = *at.entry(place).or_insert_with(|| {
                out.push(Snapshot {
                    root: Some(i.root.path.clone()),
                    host: Some(HostLabel {
                        hostname: fleet
                            .host(&i.host_id)
                            .map_or(i.hostname.clone(), |h| h.label.clone()),
                        host_id: i.host_id.clone(),
                    }),
                    counts: Counts::default(),
                    oldest_s: BTreeMap::new(),
                    hazards: BTreeMap::new(),
                    // Its claims cannot be read now, only what it last said.
                    store_up: false,
                });
                out.len() - 1
            });
            if let Some(state) = ClaimState::parse(i.state()) {
                out[s]
                    .counts
                    .add(crate::claims::census::copy_state(state, false));
            }
        }
        for i in &fleet.items {
            let Some(s) = at.get(&(i.host_id.as_str(), i.root.id.as_str())) else {
                continue;
            };
            let Some(state) = STATES.into_iter().find(|st| st.as_str() == i.state()) else {
                continue;
            };
            let snap = &mut out[*s];
            snap.counts.add(state);
            let acquired = i.item.get("record").and_then(|r| r.get("acquired_at"));
            if let Some(t) = acquired.and_then(serde_json::Value::as_i64) {
                let slot = snap.oldest_s.entry(state.as_str()).or_insert(0.0);
                *slot = slot.max((now_ms - t).max(0) as f64 / 1000.0);
            }
        }
        for hz in &fleet.hazards {
            let Some(c) = hz.copy() else { continue };
            let Some(s) = at.get(&(c.host_id.as_str(), c.root_id.as_str())) else {
                continue;
            };
            // A kind this build does not export is not counted.
            if let Some(k) = hz.kind.spec().filter(|k| k.metric) {
                *out[*s].hazards.entry(k.name).or_insert(0) += 1;
            }
        }
        out
    }

    fn count(&self, s: ClaimState) -> usize {
        let c = &self.counts;
        match s {
            ClaimState::Live => c.live,
            ClaimState::Suspect => c.suspect,
            ClaimState::Stale => c.stale,
            ClaimState::Corrupted => c.corrupted,
            ClaimState::Unreadable => c.unreadable,
            ClaimState::LastKnown => c.last_known,
            ClaimState::Free => 0,
        }
    }
}

type Labels = Vec<(String, String)>;

/// Where a snapshot's series come from: `host` and `host_id` for a
/// published root, then `root` when there is one.
fn place(s: &Snapshot) -> Labels {
    let mut l = Labels::new();
    if let Some(h) = &s.host {
        l.extend(host_labels(h));
    }
    if let Some(r) = &s.root {
        l.push(("root".into(), label_value(r)));
    }
    l
}

/// `host` and `host_id`, as a publishing host wrote them.
fn host_labels(h: &HostLabel) -> [(String, String); 2] {
    [
        ("host".into(), label_value(&h.hostname)),
        ("host_id".into(), label_value(&h.host_id)),
    ]
}

/// A label value from a host's own record. The exposition format escapes
/// only `\`, `"` and newlines, and a scrape is read on terminals (`curl`):
/// every other control is escaped here. Ordinary names are unchanged.
fn label_value(v: &str) -> String {
    crate::sanitize::guard_lines(v).into_owned()
}

/// [`place`] plus one `(name, value)`.
fn labels(s: &Snapshot, name: &str, value: &str) -> Labels {
    let mut l = place(s);
    l.push((name.to_string(), value.to_string()));
    l
}

/// One publishing host as `claimtop_host_up` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostUp {
    pub host: HostLabel,
    pub online: bool,
    /// Each root's path, and whether its claims are known (published by a
    /// running publisher that can read it).
    pub roots: Vec<(String, bool)>,
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
    host_up: Family<Labels, Gauge>,
    root_known: Family<Labels, Gauge>,
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
        let host_up = Family::<Labels, Gauge>::default();
        let root_known = Family::<Labels, Gauge>::default();
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
        registry.register(
            "claimtop_host_up",
            "1 while a host publishing into the store holds its lease (its claims are known)",
            host_up.clone(),
        );
        registry.register(
            "claimtop_root_known",
            "1 while a published root's claims are known (0: its host cannot read it, or nothing publishes it)",
            root_known.clone(),
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
            host_up,
            root_known,
        }
    }

    /// Set `claimtop_host_up` for every host publishing into the store
    /// (none over file roots); a host no longer listed leaves no series.
    pub fn update_hosts(&self, hosts: &[HostUp]) {
        self.host_up.clear();
        for h in hosts {
            let l = host_labels(&h.host).to_vec();
            self.host_up.get_or_create(&l).set(i64::from(h.online));
        }
        self.root_known.clear();
        for h in hosts {
            for (root, known) in &h.roots {
                let mut l = host_labels(&h.host).to_vec();
                l.push(("root".to_string(), label_value(root)));
                self.root_known.get_or_create(&l).set(i64::from(*known));
            }
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
            // An offline host's root: its claims now are unknown, not zero;
            // only what it last said is counted (below).
            let unknown = s.host.is_some() && !s.store_up;
            for state in STATES.into_iter().filter(|_| !unknown) {
                let name = state.as_str();
                let l = labels(s, "state", name);
                self.claims.get_or_create(&l).set(s.count(state) as i64);
                let oldest = s.oldest_s.get(name).copied().unwrap_or(0.0);
                self.age.get_or_create(&l).set(oldest);
            }
            // Only a published root can have copies its offline host last
            // said: a file root's series stay exactly what they were.
            if s.host.is_some() {
                let l = labels(s, "state", ClaimState::LastKnown.as_str());
                self.claims
                    .get_or_create(&l)
                    .set(s.count(ClaimState::LastKnown) as i64);
            }
            for kind in hazard_kinds() {
                let n = s.hazards.get(kind.name).copied().unwrap_or(0);
                self.hazards
                    .get_or_create(&labels(s, "kind", kind.name))
                    .set(n as i64);
            }
            self.store_up
                .get_or_create(&place(s))
                .set(i64::from(s.store_up));
        }
        for (s, counts) in snaps.iter().zip(events) {
            for (kind, n) in counts.by_type() {
                let c = self.events.get_or_create(&labels(s, "type", kind));
                c.inc_by(n.saturating_sub(c.get()));
            }
            let c = self.unparseable.get_or_create(&place(s));
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
            host: None,
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
    fn a_fleet_exports_each_online_hosts_roots_with_host_labels_and_every_hosts_up() {
        use crate::store::fleet::{FleetItem, HostInfo, PublishedRoot};
        use serde_json::json;
        let root = |id: &str, path: &str| PublishedRoot::new(id.into(), path.into());
        let unreadable = PublishedRoot {
            state: crate::store::fleet::RootState::Unreadable,
            ..root("r2", "/srv/b")
        };
        let host = |id: &str, name: &str, online: bool| HostInfo {
            host_id: id.into(),
            hostname: name.into(),
            label: name.into(),
            online,
            last_seen_ms: 0,
            roots: vec![root("r1", "/srv/a"), unreadable.clone()],
            counts: Counts::default(),
        };
        let item = |host_id: &str, state: &str, acquired_at: i64| FleetItem {
            host_id: host_id.into(),
            hostname: String::new(),
            root: root("r1", "/srv/a"),
            item: json!({"key": "k", "state": state, "record": {"acquired_at": acquired_at}}),
        };
        let fleet = FleetState {
            hosts: vec![host("m1", "alpha", true), host("m2", "beta", false)],
            items: vec![
                item("m1", "live", 10_000),
                item("m1", "live", 40_000),
                item("m1", "stale", 50_000),
            ],
            hazards: vec![crate::claims::Hazard::published(
                &json!({"kind": "stale_mutex", "path": "/srv/a/.fno/claims/x", "detail": ""}),
                "m1",
                "r1",
                "/srv/a",
            )],
            last_known: vec![item("m2", "live", 0), item("m2", "suspect", 0)],
        };
        let snaps = Snapshot::of_fleet(&fleet, 70_000);
        assert_eq!(
            snaps.len(),
            2,
            "alpha cannot read /srv/b: its claims are unknown; beta's /srv/a is last known"
        );
        assert_eq!(snaps[1].counts.last_known, 2);
        assert_eq!(snaps[1].counts.live, 0);
        assert_eq!(snaps[0].counts.live, 2);
        assert_eq!(snaps[0].oldest_s.get("live"), Some(&60.0));
        let e = Exporter::new();
        let mut heard = EventCounts::default();
        heard.add(Some("claim_acquired"));
        e.update(&snaps, &[&heard, &EventCounts::default()]);
        e.update_hosts(&[
            HostUp {
                host: snaps[0].host.clone().unwrap(),
                online: true,
                roots: vec![("/srv/a".into(), true), ("/srv/b".into(), false)],
            },
            HostUp {
                host: HostLabel {
                    hostname: "beta".into(),
                    host_id: "m2".into(),
                },
                online: false,
                roots: vec![("/srv/a".into(), false)],
            },
        ]);
        let text = e.render().unwrap();
        for want in [
            r#"claimtop_claims{host="alpha",host_id="m1",root="/srv/a",state="live"} 2"#,
            r#"claimtop_claims{host="alpha",host_id="m1",root="/srv/a",state="stale"} 1"#,
            r#"claimtop_hazards{host="alpha",host_id="m1",root="/srv/a",kind="stale_mutex"} 1"#,
            r#"claimtop_events_total{host="alpha",host_id="m1",root="/srv/a",type="claim_acquired"} 1"#,
            r#"claimtop_host_up{host="alpha",host_id="m1"} 1"#,
            r#"claimtop_host_up{host="beta",host_id="m2"} 0"#,
            r#"claimtop_root_known{host="alpha",host_id="m1",root="/srv/a"} 1"#,
            r#"claimtop_root_known{host="alpha",host_id="m1",root="/srv/b"} 0"#,
            r#"claimtop_claims{host="alpha",host_id="m1",root="/srv/a",state="last_known"} 0"#,
            r#"claimtop_claims{host="beta",host_id="m2",root="/srv/a",state="last_known"} 2"#,
        ] {
            assert!(text.contains(want), "{want} missing from:\n{text}");
        }
        // Its claims now are unknown, never zero: only the last known count.
        assert!(
            !text.contains(
                r#"claimtop_claims{host="beta",host_id="m2",root="/srv/a",state="live"}"#
            ),
            "{text}"
        );
        assert!(!text.contains(r#"root="/srv/b",state"#), "{text}");
    }

    #[test]
    fn controls_in_a_label_value_are_escaped_before_a_terminal_reads_the_scrape() {
        let e = Exporter::new();
        e.update(
            &[snap("/c\u{1b}]0;PWNED\u{7}\u{202e}\n", 1)],
            &[&EventCounts::default()],
        );
        let text = e.render().unwrap();
        assert!(
            text.contains(r#"root="/c\\e]0;PWNED\\x07\\u{202e}\n""#),
            "{text}"
        );
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
