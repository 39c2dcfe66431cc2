//! The fleet in the dashboard over a store: the claims hosts publish into it
//! (`claimtop publish`), shown beside the store's own as read-only copies,
//! and the hosts themselves (online with their counts, offline with when
//! they were last seen).
//!
//! A published row lives in the same claim set as the store's rows, keyed
//! by a synthetic path unique per host, root and key (see [`row_path`]), so
//! the table, filter, sort, selection and detail pane need nothing new. What
//! the row's path cannot say (which host, which root) is kept here.

use super::model::App;
use crate::claims::{encode_key, ClaimRecord, ClaimState, Status};
use crate::store::fleet::{FleetHazard, FleetState, HostInfo};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a published row comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub host_id: String,
    pub hostname: String,
    pub root_id: String,
    pub root_path: String,
    /// The lockfile on its host, as the host printed it (`"file"`).
    pub file: String,
}

/// The fleet part of the store view.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FleetView {
    /// Every host that ever published here, as last read.
    pub hosts: Vec<HostInfo>,
    /// Each published row's origin, by its row path.
    pub rows: HashMap<Arc<Path>, Origin>,
    /// Published rows per host id, kept as rows come and go (a recount of
    /// a big fleet per change is what the header cannot afford).
    pub counts: HashMap<String, usize>,
    /// What each host found in its roots, as it published it (litter,
    /// mutex corpses, corrupted and foreign claims): the hosts' share of
    /// the hazard count, as `list` counts it.
    pub hazards: Vec<FleetHazard>,
}

impl FleetView {
    /// Does anybody publish here? Only then does the table show the host
    /// and source columns.
    pub fn is_active(&self) -> bool {
        !self.hosts.is_empty()
    }

    pub fn origin(&self, path: &Path) -> Option<&Origin> {
        self.rows.get(path)
    }

    pub fn host(&self, host_id: &str) -> Option<&HostInfo> {
        self.hosts.iter().find(|h| h.host_id == host_id)
    }

    /// Note that `path` now holds a row of `origin` (None: it is gone).
    fn track(&mut self, path: &Arc<Path>, origin: Option<Origin>) {
        if let Some(old) = self.rows.remove(path) {
            if let Some(n) = self.counts.get_mut(&old.host_id) {
                *n = n.saturating_sub(1);
            }
        }
        if let Some(o) = origin {
            *self.counts.entry(o.host_id.clone()).or_default() += 1;
            self.rows.insert(Arc::clone(path), o);
        }
    }
}

/// The first component of every published row's path.
pub const PUBLISHED_SCHEME: &str = "published:";

/// The row path of `key` published by `host_id` from its root `root_id`.
/// Its scheme is no etcd key and no file path, so it never meets a store
/// row; each part is encoded, so no two (host, root, key) share one.
pub fn row_path(host_id: &str, root_id: &str, key: &str) -> PathBuf {
    PathBuf::from(format!(
        "{PUBLISHED_SCHEME}//{}/{}/{}",
        encode_key(host_id),
        encode_key(root_id),
        encode_key(key)
    ))
}

/// A published item (`list --json`'s claim object) as a row. The host
/// judged it: its state and its words are taken as they are. None when the
/// item is not a claim object at all.
pub fn status_of(path: PathBuf, item: &Value) -> Option<Status> {
    let text = |k: &str| item.get(k).and_then(Value::as_str);
    let key = text("key")?.to_string();
    let state = ClaimState::parse(text("state")?)?;
    let record = item
        .get("record")
        .filter(|r| !r.is_null())
        .and_then(|r| serde_json::from_value::<ClaimRecord>(r.clone()).ok());
    Some(Status {
        key,
        file: path,
        state,
        record,
        why: text("why").unwrap_or_default().to_string(),
        error: text("error").map(String::from),
        locality: None,
        head: Vec::new(),
    })
}

/// Replace every published row with the fleet's, and its hosts. Returns
/// the paths of rows that came, went or changed.
pub fn take_fleet(app: &mut App, fleet: FleetState) -> Vec<Arc<Path>> {
    let Some(view) = app.store.as_mut() else {
        return Vec::new();
    };
    let old: Vec<Arc<Path>> = view.fleet.rows.keys().cloned().collect();
    let FleetState {
        hosts,
        items,
        hazards,
        last_known,
    } = fleet;
    let seen: HashMap<String, i64> = hosts
        .iter()
        .filter(|h| !h.online)
        .map(|h| (h.host_id.clone(), h.last_seen_ms))
        .collect();
    let labels: HashMap<String, String> = hosts
        .iter()
        .map(|h| (h.host_id.clone(), h.label.clone()))
        .collect();
    view.fleet = FleetView {
        hosts,
        hazards,
        ..FleetView::default()
    };
    let mut fresh: HashMap<Arc<Path>, (Origin, Status)> = HashMap::with_capacity(items.len());
    for i in items.into_iter().chain(last_known) {
        let path = row_path(&i.host_id, &i.root.id, i.key());
        let Some(mut s) = status_of(path, &i.item) else {
            continue;
        };
        if let Some(at) = seen.get(&i.host_id) {
            mark_last_known(&mut s, *at);
        }
        let hostname = labels.get(&i.host_id).cloned().unwrap_or(i.hostname);
        let origin = Origin {
            file: host_file(&i.item),
            host_id: i.host_id,
            hostname,
            root_id: i.root.id,
            root_path: i.root.path,
        };
        fresh.insert(Arc::from(s.file.as_path()), (origin, s));
    }
    let mut moved = Vec::with_capacity(old.len() + fresh.len());
    for path in old {
        if !fresh.contains_key(&path) {
            moved.extend(app.claims.live.put_counted(&path, Arc::new(gone(&path))));
        }
    }
    for (path, (origin, s)) in fresh {
        if let Some(view) = app.store.as_mut() {
            view.fleet.track(&path, Some(origin));
        }
        moved.extend(app.claims.live.put_counted(&path, Arc::new(s)));
    }
    moved
}

/// One published claim re-read: `item` None when its host no longer
/// publishes it. A claim of a host the view does not know (yet) is left
/// for the fleet's next reading, which names its host.
pub fn take_published(
    app: &mut App,
    host_id: &str,
    root_id: &str,
    key: &str,
    item: Option<Value>,
) -> Option<Arc<Path>> {
    let view = app.store.as_mut()?;
    let path: Arc<Path> = Arc::from(row_path(host_id, root_id, key).as_path());
    let file = item.as_ref().map(host_file).unwrap_or_default();
    let row = item.and_then(|v| status_of(path.to_path_buf(), &v));
    let origin = match &row {
        Some(_) => {
            let host = view.fleet.host(host_id)?;
            let root = host.roots.iter().find(|r| r.id == root_id)?;
            Some(Origin {
                host_id: host_id.to_string(),
                hostname: host.label.clone(),
                root_id: root_id.to_string(),
                root_path: root.path.clone(),
                file,
            })
        }
        None => None,
    };
    view.fleet.track(&path, origin);
    let s = row.unwrap_or_else(|| gone(&path));
    app.claims.live.put_counted(&path, Arc::new(s))
}

/// A copy its offline host last published, as the row shows it: counted
/// as last known (see [`crate::claims::census::copy_state`]), and its why
/// saying so before what the host last said of it.
pub fn mark_last_known(s: &mut Status, last_seen_ms: i64) {
    let was = s.state;
    s.state = crate::claims::census::copy_state(was, false);
    s.why = format!(
        "{}; it was {was} then: {}",
        last_known_words(last_seen_ms),
        s.why
    );
}

/// "last known at 12:00:03 UTC, host offline".
pub fn last_known_words(last_seen_ms: i64) -> String {
    format!(
        "last known at {}, host offline",
        crate::time::utc_hms(last_seen_ms)
    )
}

/// Why F, r and n do nothing on a last known row: its host is offline, so
/// nobody can carry anything out there; `fleet forget` (or D) removes it.
pub fn refuse_last_known(app: &App, s: &Status) -> Option<String> {
    if s.state != ClaimState::LastKnown {
        return None;
    }
    let o = app.store.as_ref()?.fleet.origin(&s.file)?;
    let host = crate::sanitize::sanitize(&o.hostname);
    Some(format!(
        "{} is what host {host} last published: the host is offline, so nobody can \
         release or force-release it there (D, or `claimtop fleet forget {host}`, \
         removes the offline host and its rows)",
        crate::sanitize::sanitize(&s.key)
    ))
}

fn host_file(item: &Value) -> String {
    item.get("file")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The row that says "no longer there": a free claim is dropped.
fn gone(path: &Path) -> Status {
    Status::free(String::new(), path.to_path_buf(), String::new())
}

/// The host column's cell: the host's label for a published row (its
/// hostname, with its machine id's start when another host shares it), the
/// record's host for a store row.
pub fn host_cell(app: &App, s: &Status) -> String {
    match app.store.as_ref().and_then(|v| v.fleet.origin(&s.file)) {
        Some(o) => o.hostname.clone(),
        None => s
            .record
            .as_ref()
            .map(|r| r.host.clone())
            .unwrap_or_default(),
    }
}

/// The source column's cell, as `list --json` says it; a last known row
/// says when it was last known (its state cell, that its host is offline).
pub fn source_cell(app: &App, s: &Status) -> String {
    use crate::store::fleet::{SOURCE_PUBLISHED, SOURCE_STORE};
    let view = app.store.as_ref();
    if s.state == ClaimState::LastKnown {
        let seen = view
            .and_then(|v| v.fleet.origin(&s.file))
            .and_then(|o| view.and_then(|v| v.fleet.host(&o.host_id)));
        if let Some(h) = seen {
            let at = crate::time::clock(h.last_seen_ms, app.local_time, "%H:%M:%S");
            return format!("last known at {at}");
        }
    }
    if published(app, s) {
        SOURCE_PUBLISHED.to_string()
    } else {
        SOURCE_STORE.to_string()
    }
}

pub fn published(app: &App, s: &Status) -> bool {
    app.store
        .as_ref()
        .is_some_and(|v| v.fleet.origin(&s.file).is_some())
}
