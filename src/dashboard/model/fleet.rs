//! The fleet in the dashboard's model over a store: the claims hosts publish into it
//! (`claimtop publish`), shown beside the store's own as read-only copies,
//! and the hosts themselves (online with their counts, offline with when
//! they were last seen).
//!
//! A published row lives in the same claim set as the store's rows, keyed
//! by its [`RowId::Copy`] (host, root, key), so the table, filter, sort,
//! selection and detail pane need nothing new. Where it comes from (the
//! host's name, its root's path, the lockfile there) is kept here.

use super::row_id::{CopyId, RowId};
use crate::claims::Hazard;
use crate::claims::Status;
use crate::store::fleet::HostInfo;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
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
    pub rows: HashMap<Arc<CopyId>, Origin>,
    /// Published rows per host id, kept as rows come and go (a recount of
    /// a big fleet per change is what the header cannot afford).
    pub counts: HashMap<String, usize>,
    /// What each host found in its roots, as it published it (litter,
    /// mutex corpses, corrupted and foreign claims): the hosts' share of
    /// the hazard count, as `list` counts it.
    pub hazards: Vec<Hazard>,
}

impl FleetView {
    /// Does anybody publish here? Only then does the table show the host
    /// and source columns.
    pub fn is_active(&self) -> bool {
        !self.hosts.is_empty()
    }

    /// Where row `id` comes from, if it is a copy.
    pub fn origin(&self, id: &RowId) -> Option<&Origin> {
        match id {
            RowId::Copy(c) => self.rows.get(c),
            RowId::Claim(_) => None,
        }
    }

    pub fn host(&self, host_id: &str) -> Option<&HostInfo> {
        self.hosts.iter().find(|h| h.host_id == host_id)
    }

    /// Note that `path` now holds a row of `origin` (None: it is gone).
    pub(crate) fn track(&mut self, path: &Arc<CopyId>, origin: Option<Origin>) {
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

/// A published item (`list --json`'s claim object) as a row. The host
/// judged it: its state and its words are taken as they are. None when the
/// item is not a claim object at all.
pub fn status_of(path: PathBuf, item: &Value) -> Option<Status> {
    crate::store::fleet::copy_status(path, item)
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

pub(crate) fn host_file(item: &Value) -> String {
    item.get("file")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The row that says "no longer there": a free claim is dropped.
pub(crate) fn gone() -> Status {
    Status::free(String::new(), PathBuf::new(), String::new())
}
