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
use crate::claims::Counts;
use crate::store::fleet::HostInfo;
use crate::store::mirror::Tally;
use crate::store::sink::FleetSummary;
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
    /// The hosts' counts as their roots' summaries said them, read before
    /// the copies are listed: what the header counts and the table's
    /// "loading N of M" say until the copies are all in.
    pub summary: Option<Summed>,
    /// The copies were listed whole: from then on their own rows and
    /// tally are counted, and the summaries no longer (a row is counted
    /// once).
    pub listed: bool,
}

/// What the summaries say of the copies, added up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summed {
    /// Every copy by state (an offline host's or root's as last known), as
    /// `claimtop fleet --json` counts each host.
    pub counts: Counts,
    /// The hazards the online hosts found in the roots they read.
    pub hazards: usize,
    /// Each host's copies, by host id.
    pub by_host: HashMap<String, usize>,
}

impl Summed {
    pub fn of(s: &FleetSummary) -> Summed {
        let mut out = Summed::default();
        for h in &s.hosts {
            out.counts += h.counts;
            out.by_host.insert(h.host_id.clone(), h.counts.total());
        }
        out.hazards = s
            .roots
            .iter()
            .filter(|r| !r.last_known)
            .map(|r| r.summary.hazards_total)
            .sum();
        out
    }
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

    /// While the copies are being listed: what their summaries say.
    pub fn loading(&self) -> Option<&Summed> {
        self.summary.as_ref().filter(|_| !self.listed)
    }

    /// How many copies host `host_id` publishes, as far as the view knows:
    /// its rows once the copies are listed, its summaries' count before.
    pub fn count_of(&self, host_id: &str) -> usize {
        let rows = self.counts.get(host_id).copied().unwrap_or(0);
        match self.loading() {
            Some(s) => s.by_host.get(host_id).copied().unwrap_or(0).max(rows),
            None => rows,
        }
    }

    /// Copy rows in the table now, every host's.
    pub fn rows(&self) -> usize {
        self.counts.values().sum()
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

impl super::App {
    /// While a site's copies are being listed, what their summaries say:
    /// counted in their place until the copies are all in.
    pub fn loading(&self) -> Option<&Summed> {
        self.store.as_ref()?.fleet.loading()
    }

    /// The shown tallies a count adds up: every origin's, but the copies'
    /// while their summaries are counted in their place (a head, the first
    /// pages, are not counted twice).
    pub(super) fn counted_tallies(&self) -> impl Iterator<Item = &Tally> + '_ {
        let skip = self
            .loading()
            .and(self.store.as_ref().and_then(|v| v.copies));
        self.shown_tallies()
            .into_iter()
            .enumerate()
            .filter(move |(i, _)| Some(*i) != skip)
            .map(|(_, t)| t)
    }
}
