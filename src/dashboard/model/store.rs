//! A site among the origins (a store reached over a connection, as etcd):
//! what the model knows of it beside its claims — the cluster's members,
//! leader and revision, whether it answers, the lease behind each leased
//! row, and the hosts publishing into it.
//!
//! Rows stay keyed by their place, as on a file root: a site row's place
//! is its key in the store, so the table, the filter, the selection and the
//! detail pane work unchanged.

use super::fleet::FleetView;
use crate::claims::Loc;
use crate::store::{LeaseInfo, LinkFacts, Tenure};
use crate::time::{clock, human_ms};
use std::collections::HashMap;

/// A cluster's state as the header shows it: who answers, who leads, and
/// the newest revision seen (the probe's, or a row's or a listing's if
/// newer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    /// The endpoints the client was given, `a:1,b:2`.
    pub endpoints: String,
    /// The leader's member name, or None while there is none or it cannot
    /// be asked.
    pub leader: Option<String>,
    pub revision: i64,
}

impl From<LinkFacts> for StoreInfo {
    fn from(f: LinkFacts) -> StoreInfo {
        StoreInfo {
            endpoints: f.reached,
            leader: f.leader,
            revision: f.at.unwrap_or(0),
        }
    }
}

/// What the view keeps of a claim's tenure: its fence, its lease, and when
/// the lease runs out as far as the read knew (read time + what was left
/// then). One per leased row, beside the mirror's own copy: the tenure and
/// its read time were 40 bytes, this is 32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The tenure's fencing revision.
    pub revision: i64,
    lease_id: i64,
    ttl_s: i64,
    /// Epoch ms the lease ends, unless its holder keeps it alive.
    ends_at: i64,
}

impl Held {
    /// `tenure` as read at `read_at`.
    pub fn new(tenure: &Tenure, read_at: i64) -> Held {
        Held {
            revision: tenure.revision,
            lease_id: tenure.lease.id,
            ttl_s: tenure.lease.ttl_s,
            ends_at: read_at + tenure.lease.remaining_s * 1000,
        }
    }

    /// The lease as of `now`.
    pub fn lease(&self, now: i64) -> LeaseInfo {
        LeaseInfo {
            id: self.lease_id,
            ttl_s: self.ttl_s,
            remaining_s: self.remaining_ms(now) / 1000,
        }
    }

    /// Milliseconds left on the lease at `now`, as far as the last read
    /// knows (a holder keeping it alive moves it back up, and its lane
    /// re-reads a claim whose lease should have run out).
    pub fn remaining_ms(&self, now: i64) -> i64 {
        (self.ends_at - now).max(0)
    }
}

/// Is the store there?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Connected,
    /// The store does not answer; the view is the one as of `last_seen`.
    Disconnected {
        since: i64,
        last_seen: i64,
    },
    /// The store answers again, the watch is not delivering yet.
    Reconnecting {
        since: i64,
        last_seen: i64,
    },
}

/// The store part of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreView {
    pub url: String,
    /// The last probe's answer (kept while disconnected: it says what was).
    pub info: Option<StoreInfo>,
    pub tenures: HashMap<Loc, Held>,
    /// Did the last probe answer?
    probe_ok: bool,
    /// Is the watch delivering?
    watch_ok: bool,
    /// When the store was last seen whole (probe and watch both well).
    last_seen: i64,
    /// When it stopped being whole, while it is not.
    since: Option<i64>,
    /// Set while only the head of the store is shown: how many claims.
    pub partial: Option<usize>,
    /// The hosts publishing here and where each published row comes from.
    pub fleet: FleetView,
    /// The origin of the copies hosts publish here, by index.
    pub copies: Option<usize>,
    /// The site whose link the header says, by index (the first named).
    pub site: usize,
}

impl StoreView {
    pub fn new(url: String, now: i64) -> StoreView {
        StoreView {
            url,
            info: None,
            tenures: HashMap::new(),
            probe_ok: true,
            watch_ok: true,
            last_seen: now,
            since: None,
            partial: None,
            fleet: FleetView::default(),
            copies: None,
            site: 0,
        }
    }

    pub fn link(&self) -> Link {
        match (self.since, self.probe_ok) {
            (None, _) => Link::Connected,
            (Some(since), false) => Link::Disconnected {
                since,
                last_seen: self.last_seen,
            },
            (Some(since), true) => Link::Reconnecting {
                since,
                last_seen: self.last_seen,
            },
        }
    }

    /// Apply a probe or watch verdict at `at`; true when the link moved.
    pub(crate) fn judge(
        &mut self,
        at: i64,
        probe_ok: Option<bool>,
        watch_ok: Option<bool>,
    ) -> bool {
        let before = self.link();
        self.probe_ok = probe_ok.unwrap_or(self.probe_ok);
        self.watch_ok = watch_ok.unwrap_or(self.watch_ok);
        if self.probe_ok && self.watch_ok {
            self.since = None;
            self.last_seen = at;
        } else if self.since.is_none() {
            self.since = Some(at);
        }
        self.link() != before
    }

    pub fn held(&self, loc: &Loc) -> Option<&Held> {
        self.tenures.get(loc)
    }

    /// The header's connection words: `connected`, `disconnected since
    /// 12:00:03`, `reconnecting`.
    pub fn link_text(&self, local: bool) -> String {
        match self.link() {
            Link::Connected => "connected".into(),
            Link::Disconnected { since, .. } => {
                format!("disconnected since {}", clock(since, local, "%H:%M:%S"))
            }
            Link::Reconnecting { .. } => "reconnecting".into(),
        }
    }

    /// While the store is away, what the view is: `disconnected 12s ago —
    /// showing the view as of 12:00:02`.
    pub fn stale_view_text(&self, now: i64, local: bool) -> Option<String> {
        let (word, since, last_seen) = match self.link() {
            Link::Connected => return None,
            Link::Disconnected { since, last_seen } => ("disconnected", since, last_seen),
            Link::Reconnecting { since, last_seen } => {
                ("reconnecting: disconnected", since, last_seen)
            }
        };
        Some(format!(
            "{word} {} ago — showing the view as of {}",
            human_ms(now - since),
            clock(last_seen, local, "%H:%M:%S")
        ))
    }
}
