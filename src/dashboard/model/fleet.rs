//! The fleet in the dashboard's model: the claims hosts publish into a
//! site (`claimtop publish`), shown beside the site's own as read-only
//! copies, and the hosts themselves (online with their counts, offline
//! with when they were last seen — their own records' word, as `fleet
//! --json` prints it).
//!
//! A copy is a row of the site's published member like any other, keyed by
//! its [`RowId::Copy`] (host, root, key), so the table, filter, sort,
//! selection and detail pane need nothing new. Where it comes from (the
//! host's name, its root's path, the lockfile there) is read from the
//! hosts when asked.

use super::row_id::{CopyId, RowId};
use crate::claims::Hazard;
use crate::store::fleet::HostInfo;
use std::collections::HashMap;
use std::path::Path;

/// Where a published row comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub host_id: String,
    pub hostname: String,
    pub root_id: String,
    pub root_path: String,
    /// The lockfile on its host.
    pub file: String,
}

/// The fleet part of the store view.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FleetView {
    /// Every host that ever published here, as last read.
    pub hosts: Vec<HostInfo>,
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

    /// Where row `id` comes from, if it is a copy of a host known here.
    pub fn origin(&self, id: &RowId) -> Option<Origin> {
        let RowId::Copy(c) = id else {
            return None;
        };
        let host = self.host(&c.host_id)?;
        let root = host.roots.iter().find(|r| r.id == c.root_id)?;
        let file = crate::claims::key::claim_path(Path::new(&root.path), &c.key);
        Some(Origin {
            host_id: c.host_id.clone(),
            hostname: host.label.clone(),
            root_id: c.root_id.clone(),
            root_path: root.path.clone(),
            file: file.to_string_lossy().into_owned(),
        })
    }

    pub fn host(&self, host_id: &str) -> Option<&HostInfo> {
        self.hosts.iter().find(|h| h.host_id == host_id)
    }

    /// Note that the copy `id` came (`here`) or went.
    pub(crate) fn track(&mut self, id: &CopyId, here: bool) {
        let n = self.counts.entry(id.host_id.clone()).or_default();
        if here {
            *n += 1;
        } else {
            *n = n.saturating_sub(1);
        }
    }
}
