//! The fleet: hosts that publish their file roots into a store
//! (`claimtop publish`), as a store reads them back for `list` and `events`.
//!
//! Plain data, in every build: the etcd store fills it, the faces print it.
//! Mirrored claims are read-only copies; each host's file root stays the
//! truth, and anything done to one goes through that host's publisher.

use crate::claims::census::count_copies;
use crate::claims::{ClaimRecord, ClaimState, Counts, Hazard, Status};
use crate::events::Event;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// `"source"` of a claim kept natively in the store.
pub const SOURCE_STORE: &str = "etcd";
/// `"source"` of a claim mirrored from a host's file root.
pub const SOURCE_PUBLISHED: &str = "published";

/// Say where a mirrored event comes from: `"host"`, `"host_id"` and
/// `"root"` added to the line as its host wrote it. `events` prints these
/// fields the same way whether it reads the history or follows the feed.
pub fn mark_published(event: Event, hostname: &str, host_id: &str, root_path: &str) -> Event {
    event
        .with_field("host", Value::from(hostname))
        .with_field("host_id", Value::from(host_id))
        .with_field("root", Value::from(root_path))
}

/// Where each publishing host's roots are, by (host id, root id): the
/// hostname and root path a mirrored event heard on the change feed (which
/// carries only the ids) is marked with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Places(HashMap<(String, String), (String, String)>);

impl Places {
    pub fn of(hosts: &[HostInfo]) -> Places {
        Places(
            hosts
                .iter()
                .flat_map(|h| {
                    h.roots.iter().map(|r| {
                        let at = (h.host_id.clone(), r.id.clone());
                        (at, (h.hostname.clone(), r.path.clone()))
                    })
                })
                .collect(),
        )
    }

    pub fn knows(&self, host_id: &str, root_id: &str) -> bool {
        self.0
            .contains_key(&(host_id.to_string(), root_id.to_string()))
    }

    /// `event` with where it comes from; a place not known (yet) is named
    /// by its ids.
    pub fn mark(&self, host_id: &str, root_id: &str, event: Event) -> Event {
        let (host, root) = self
            .0
            .get(&(host_id.to_string(), root_id.to_string()))
            .map_or((host_id, root_id), |(h, r)| (h.as_str(), r.as_str()));
        mark_published(event, host, host_id, root)
    }
}

/// One publishing host, online or not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostInfo {
    /// The host's address in the fleet (`--host`), its machine id.
    pub host_id: String,
    pub hostname: String,
    /// What the host is called wherever it is named: its hostname, with
    /// the start of its machine id when another host shares the hostname
    /// (see [`super::host_names::label_hosts`]).
    pub label: String,
    /// While any of its publishers holds its lease. An offline host's
    /// claims are unknown, never free: what it last published is listed
    /// apart, as last known ([`FleetState::last_known`]), and never counted
    /// as live (nor are the claims of a root it cannot read, see
    /// [`PublishedRoot::state`]).
    pub online: bool,
    /// When the publisher last said it was there (epoch ms); for an offline
    /// host, the time it was last seen.
    pub last_seen_ms: i64,
    pub roots: Vec<PublishedRoot>,
    /// Its published claims by state; while offline, only `last_known`.
    pub counts: Counts,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PublishedRoot {
    /// Stable across restarts: a hash of the canonical root path.
    pub id: String,
    /// The root's path on its host.
    pub path: String,
    /// Whether its claims are known: only a published root's are.
    #[serde(default)]
    pub state: RootState,
    /// Why an unreadable root cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PublishedRoot {
    pub fn new(id: String, path: String) -> PublishedRoot {
        PublishedRoot {
            id,
            path,
            ..PublishedRoot::default()
        }
    }

    /// Its claims are listed and counted; otherwise they are unknown, and
    /// never shown as free.
    pub fn is_known(&self) -> bool {
        self.state == RootState::Published
    }
}

/// What the fleet knows of one root of a host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RootState {
    /// Its publisher runs and reads it: its claims are what is published.
    #[default]
    Published,
    /// Its publisher runs but cannot list its claims dir.
    Unreadable,
    /// No publisher serves it (any more): its claims are unknown.
    Offline,
}

impl RootState {
    pub fn as_str(self) -> &'static str {
        match self {
            RootState::Published => "published",
            RootState::Unreadable => "unreadable",
            RootState::Offline => "offline",
        }
    }
}

impl HostInfo {
    /// The roots whose claims are unknown although the host is online
    /// (unreadable, or their publisher gone while another still runs).
    pub fn unknown_roots(&self) -> impl Iterator<Item = &PublishedRoot> {
        self.roots.iter().filter(|r| self.online && !r.is_known())
    }
}

/// One mirrored claim: the item as `list --json` prints it on its host.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetItem {
    pub host_id: String,
    pub hostname: String,
    pub root: PublishedRoot,
    pub item: Value,
}

impl FleetItem {
    pub fn key(&self) -> &str {
        self.item.get("key").and_then(Value::as_str).unwrap_or("")
    }

    pub fn state(&self) -> &str {
        self.item.get("state").and_then(Value::as_str).unwrap_or("")
    }

    /// The item with where it comes from added (the additive JSON).
    pub fn to_json(&self) -> Value {
        self.clone().into_json()
    }

    /// [`FleetItem::to_json`], without copying the item.
    pub fn into_json(self) -> Value {
        let mut v = self.item;
        if let Some(o) = v.as_object_mut() {
            tag(o, &self.hostname, SOURCE_PUBLISHED);
            o.insert("host_id".into(), Value::from(self.host_id));
            o.insert("root".into(), Value::from(self.root.path));
            o.insert("root_id".into(), Value::from(self.root.id));
        }
        v
    }
}

/// What [`crate::store::Fleet::forget`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forgot {
    /// The host's keys are gone, this many of them.
    Forgotten { removed: i64 },
    /// The host is publishing (`roots` of its roots held): nothing removed.
    Online { roots: i64 },
    /// No host by that id publishes into the store.
    Unknown,
}

/// A published item (`list --json`'s claim object) as a status at
/// `place`. Its host judged it: its state and its words are taken as they
/// are. None when the item is not a claim object at all.
pub fn copy_status(place: impl Into<crate::claims::Loc>, item: &Value) -> Option<Status> {
    let text = |k: &str| item.get(k).and_then(Value::as_str);
    let key = text("key")?.to_string();
    let state = ClaimState::parse(text("state")?)?;
    let record = item
        .get("record")
        .filter(|r| !r.is_null())
        .and_then(|r| serde_json::from_value::<ClaimRecord>(r.clone()).ok());
    Some(Status {
        key,
        file: place.into(),
        state,
        record,
        why: text("why").unwrap_or_default().to_string(),
        error: text("error").map(String::from),
        locality: None,
        head: Box::default(),
    })
}

/// Everything published into a store.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FleetState {
    pub hosts: Vec<HostInfo>,
    /// The claims online hosts publish now.
    pub items: Vec<FleetItem>,
    /// What hosts found in their roots, each saying where.
    pub hazards: Vec<Hazard>,
    /// What offline hosts last published: kept apart from `items`, so that
    /// nothing counts them as what a host vouches for now (see
    /// [`crate::claims::census::copy_state`]).
    pub last_known: Vec<FleetItem>,
}

impl FleetState {
    /// A store nobody publishes into: its listing is printed as it always was.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// What hosts publish into another site, taken in beside this one's.
    pub fn merge(&mut self, other: FleetState) {
        self.hosts.extend(other.hosts);
        self.items.extend(other.items);
        self.hazards.extend(other.hazards);
        self.last_known.extend(other.last_known);
    }

    /// Add the fleet to a store's `list --json` document: every native item
    /// gains `"host"` and `"source": "etcd"`, the published items join them
    /// (sorted by key, then host), their states join the counts, their
    /// hazards the hazards, and `"hosts"` lists every host with its state.
    /// The fleet's items are moved into the document, not copied: a fleet
    /// of 100 000 claims is big.
    pub fn into_list_json(self, doc: &mut Value) {
        let Some(obj) = doc.as_object_mut() else {
            return;
        };
        let (copies, rest) = self.into_copies();
        // Taken and put back in place: the document keeps its member order.
        let mut items: Vec<Value> = match obj.get_mut("claims").map(Value::take) {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        for item in &mut items {
            // A root's item among several origins is no store's.
            if item.get("root").is_none() {
                tag_store_item(item);
            }
        }
        items.reserve(copies.len());
        items.extend(copies);
        items.sort_by_cached_key(list_order);
        obj.insert("claims".into(), Value::Array(items));
        rest.finish(obj);
    }

    /// The published items as `list --json` shows them, in its order
    /// ([`list_order`]), and the rest of what the fleet adds to the
    /// document.
    pub fn into_copies(self) -> (Vec<Value>, FleetRest) {
        let published = self.counts();
        let last_seen: Vec<(String, String, i64)> = self
            .hosts
            .iter()
            .map(|h| (h.host_id.clone(), h.label.clone(), h.last_seen_ms))
            .collect();
        let FleetState {
            hosts,
            items,
            hazards,
            last_known,
        } = self;
        let mut copies: Vec<Value> = items.into_iter().map(FleetItem::into_json).collect();
        copies.sort_by_cached_key(list_order);
        let rest = FleetRest {
            published,
            last_seen,
            hosts,
            hazards,
            last_known,
        };
        (copies, rest)
    }

    pub fn host(&self, host_id: &str) -> Option<&HostInfo> {
        self.hosts.iter().find(|h| h.host_id == host_id)
    }

    /// Every copy counted as [`crate::claims::census::copy_state`] says:
    /// online hosts' by their states, offline hosts' as last known.
    pub fn counts(&self) -> Counts {
        let mut c = count_copies(self.items.iter().map(FleetItem::state), true);
        c += count_copies(self.last_known.iter().map(FleetItem::state), false);
        c
    }
}

/// Where an item of `list --json` goes among the others over a store
/// hosts publish into: by key, then host id, then root id (a store's own
/// claim, which has neither, first); equals keep their order.
pub fn list_order(v: &Value) -> (String, String, String) {
    let s = |field: &str| {
        v.get(field)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (s("key"), s("host_id"), s("root_id"))
}

/// A store's own item as it shows beside published ones: `"host"` (its
/// record's) and `"source"`.
pub fn tag_store_item(item: &mut Value) {
    let host = item
        .pointer("/record/host")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if let Some(o) = item.as_object_mut() {
        tag(o, &host, SOURCE_STORE);
    }
}

/// What the fleet adds to `list --json` besides its items: its states to
/// the counts, its hazards, `"last_known"` and `"hosts"`.
pub struct FleetRest {
    pub(super) published: Counts,
    last_seen: Vec<(String, String, i64)>,
    hosts: Vec<HostInfo>,
    hazards: Vec<Hazard>,
    last_known: Vec<FleetItem>,
}

impl FleetRest {
    /// Into a document whose `"counts"` and `"hazards"` are the store's.
    pub fn finish(self, obj: &mut Map<String, Value>) {
        let FleetRest {
            published,
            last_seen,
            hosts,
            hazards: fleet_hazards,
            last_known: fleet_last_known,
        } = self;
        if let Some(counts) = obj.get_mut("counts").and_then(Value::as_object_mut) {
            for (state, n) in [
                ("live", published.live),
                ("suspect", published.suspect),
                ("stale", published.stale),
                ("corrupted", published.corrupted),
                ("unreadable", published.unreadable),
            ] {
                if let Some(c) = counts.get_mut(state) {
                    *c = Value::from(c.as_u64().unwrap_or(0) + n as u64);
                }
            }
            counts.insert("last_known".into(), Value::from(published.last_known));
        }
        if let Some(Value::Array(hazards)) = obj.get_mut("hazards") {
            hazards.extend(
                fleet_hazards
                    .iter()
                    .filter_map(|h| serde_json::to_value(h).ok()),
            );
        }
        let mut last_known: Vec<Value> = fleet_last_known
            .into_iter()
            .map(|i| {
                let seen = last_seen.iter().find(|(id, _, _)| *id == i.host_id);
                let mut v = i.into_json();
                if let (Some(o), Some((_, label, at))) = (v.as_object_mut(), seen) {
                    o.insert("host_label".into(), Value::from(label.as_str()));
                    o.insert("last_known_at_ms".into(), Value::from(*at));
                }
                v
            })
            .collect();
        last_known.sort_by_cached_key(list_order);
        obj.insert("last_known".into(), Value::Array(last_known));
        obj.insert(
            "hosts".into(),
            serde_json::to_value(&hosts).unwrap_or(Value::Null),
        );
    }
}

/// `"host"` and `"source"` on one item.
fn tag(o: &mut Map<String, Value>, host: &str, source: &str) {
    o.insert("host".into(), Value::from(host));
    o.insert("source".into(), Value::from(source));
}

/// Counts of an online host's published items, by the state words they
/// carry.
pub fn count_states<'a>(states: impl Iterator<Item = &'a str>) -> Counts {
    count_copies(states, true)
}

/// The events logs of a store hosts publish into: its own, and the log of
/// every root a host mirrors (online or not: what a host recorded stays
/// its history until the host is forgotten). With hosts, each is named:
/// the store's own by its [`SOURCE_STORE`], a mirrored root's by its host
/// and path; without, the store's own log stands alone, unnamed.
pub fn logs_of(hosts: &[HostInfo]) -> Vec<(Option<String>, crate::events::history::Log)> {
    use crate::events::history::Log;
    let mirrored: Vec<(Option<String>, Log)> = hosts
        .iter()
        .flat_map(|h| {
            h.roots.iter().map(move |r| {
                (
                    Some(format!("{}:{}", h.label, r.path)),
                    Log::Mirrored {
                        host_id: h.host_id.clone(),
                        root_id: r.id.clone(),
                    },
                )
            })
        })
        .collect();
    let own = (!mirrored.is_empty()).then(|| SOURCE_STORE.to_string());
    std::iter::once((own, Log::Own)).chain(mirrored).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fleet() -> FleetState {
        let root = PublishedRoot::new("00000000000000aa".into(), "/srv/a".into());
        FleetState {
            hosts: vec![HostInfo {
                host_id: "m1".into(),
                hostname: "alpha".into(),
                label: "alpha".into(),
                online: true,
                last_seen_ms: 1,
                roots: vec![root.clone()],
                counts: Counts::default(),
            }],
            items: vec![FleetItem {
                host_id: "m1".into(),
                hostname: "alpha".into(),
                root: root.clone(),
                item: json!({"key": "a", "state": "live", "record": null}),
            }],
            hazards: vec![Hazard::published(
                &json!({"kind": "temp_litter", "path": "/srv/a/x", "detail": "old"}),
                "m1",
                &root.id,
                &root.path,
            )],
            last_known: Vec::new(),
        }
    }

    #[test]
    fn published_items_join_the_native_ones_in_key_order_with_host_and_source() {
        let mut doc = json!({
            "root": "etcd://x/fno",
            "claims": [{"key": "b", "state": "live", "record": {"host": "beta"}}],
            "counts": {"live": 1, "suspect": 0, "stale": 0, "corrupted": 0},
            "hazards": [],
        });
        fleet().into_list_json(&mut doc);
        let claims = doc["claims"].as_array().unwrap();
        assert_eq!(claims[0]["key"], "a");
        assert_eq!(claims[0]["source"], "published");
        assert_eq!(claims[0]["host"], "alpha");
        assert_eq!(claims[0]["root_id"], "00000000000000aa");
        assert_eq!(claims[1]["source"], "etcd");
        assert_eq!(claims[1]["host"], "beta");
        assert_eq!(doc["counts"]["live"], 2);
        assert_eq!(doc["hazards"][0]["host_id"], "m1");
        assert_eq!(doc["hosts"][0]["online"], true);
    }

    proptest::proptest! {
        #[test]
        fn the_claims_are_ordered_as_a_stable_sort_by_key_host_and_root_orders_them(
            native in proptest::collection::vec(0u8..3, 0..6),
            copies in proptest::collection::vec((0u8..3, 0u8..2, 0u8..2, 0u8..4), 0..12),
        ) {
            let root = |r: u8| PublishedRoot::new(format!("r{r}"), format!("/srv/{r}"));
            let mut f = fleet();
            f.items = copies
                .iter()
                .map(|(k, h, r, n)| FleetItem {
                    host_id: format!("m{h}"),
                    hostname: "alpha".into(),
                    root: root(*r),
                    item: json!({"key": format!("k{k}"), "state": "live", "n": n}),
                })
                .collect();
            let claims: Vec<Value> = native
                .iter()
                .enumerate()
                .map(|(i, k)| json!({"key": format!("k{k}"), "state": "live", "record": {"host": "h"}, "i": i}))
                .collect();
            let mut doc = json!({"claims": claims.clone(), "counts": {}, "hazards": []});
            // The order as it was first written: every item tagged, then
            // sorted by its (key, host_id, root_id) read at each comparison.
            let mut want: Vec<Value> = claims
                .into_iter()
                .map(|mut c| {
                    tag(c.as_object_mut().unwrap(), "h", SOURCE_STORE);
                    c
                })
                .chain(f.items.iter().map(FleetItem::to_json))
                .collect();
            want.sort_by_key(|v| {
                let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
                (s("/key"), s("/host_id"), s("/root_id"))
            });
            f.into_list_json(&mut doc);
            proptest::prop_assert_eq!(&doc["claims"], &Value::Array(want));
        }
    }

    #[test]
    fn an_offline_hosts_last_known_claims_are_listed_apart_and_counted_apart_never_as_live() {
        let mut f = fleet();
        let root = f.hosts[0].roots[0].clone();
        f.hosts.push(HostInfo {
            host_id: "m2".into(),
            hostname: "beta".into(),
            label: "beta".into(),
            online: false,
            last_seen_ms: 1_700_000_000_000,
            roots: vec![root.clone()],
            counts: Counts::default(),
        });
        for key in ["x", "y", "z"] {
            f.last_known.push(FleetItem {
                host_id: "m2".into(),
                hostname: "beta".into(),
                root: root.clone(),
                item: json!({"key": key, "state": "live", "record": null}),
            });
        }
        let mut doc = json!({
            "root": "etcd://x/fno",
            "claims": [{"key": "b", "state": "live", "record": {"host": "gamma"}}],
            "counts": {"live": 1, "suspect": 0, "stale": 0, "corrupted": 0},
            "hazards": [],
        });
        f.clone().into_list_json(&mut doc);
        assert_eq!(doc["counts"]["live"], 2, "the native one and alpha's");
        assert_eq!(doc["counts"]["last_known"], 3);
        assert_eq!(doc["claims"].as_array().unwrap().len(), 2);
        let kept = doc["last_known"].as_array().unwrap();
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[0]["host"], "beta");
        assert_eq!(kept[0]["last_known_at_ms"], 1_700_000_000_000_i64);
        assert_eq!(f.counts().last_known, 3);
        assert_eq!(f.counts().live, 1);
    }

    #[test]
    fn a_fleets_logs_are_the_stores_own_and_every_mirrored_root_each_named() {
        use crate::events::history::Log;
        assert_eq!(
            logs_of(&[]),
            [(None, Log::Own)],
            "no hosts: one unnamed log"
        );
        let mut hosts = fleet().hosts;
        hosts[0].roots.push(PublishedRoot::new(
            "00000000000000bb".into(),
            "/srv/b".into(),
        ));
        let got = logs_of(&hosts);
        let mirrored = |id: &str| Log::Mirrored {
            host_id: "m1".into(),
            root_id: id.into(),
        };
        assert_eq!(
            got,
            [
                (Some(SOURCE_STORE.to_string()), Log::Own),
                (Some("alpha:/srv/a".into()), mirrored("00000000000000aa")),
                (Some("alpha:/srv/b".into()), mirrored("00000000000000bb")),
            ]
        );
    }
}
