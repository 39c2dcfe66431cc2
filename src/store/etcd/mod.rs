//! Claims on etcd (feature `etcd`): the contract's layout, one transaction
//! per verb, a lease on every claim, and the fencing revision.
//!
//! - `conn`: endpoints, TLS, auth, `--timeout`.
//! - `layout`: every key path.
//! - `verbs`: acquire, release, renew, force-release as transactions.
//! - `leases`: the leases claims hang on, and when one may be revoked.
//! - `events`: the audit events under `PREFIX/events/` and their retention
//!   lease.
//! - `expiry`: the exactly-once `claim_expired`, recorded by whoever first
//!   learns a tenure's lease ran out.
//! - `list`: status and the paged listing.
//! - `watch`: the resumable change feed.
//! - `doctor`: the etcd hazards.
//! - `hold`: a lease kept alive while the holder works (`run`).
//! - `info`: members, leader and revision, for a dashboard header.
//! - `owners`: one publisher per root, many per machine.
//! - `fleet`: reading the published hosts back, and requests to them.
//! - `next_key`: the next host's first key, in windows that start narrow.
//! - `history`: an events prefix browsed, searched and counted in pages.

mod conn;
mod doctor;
mod events;
mod expiry;
pub mod fleet;
mod forget;
pub mod history;
mod hold;
mod info;
pub mod layout;
mod leases;
mod list;
mod list_pages;
mod log;
mod next_key;
mod owners;
mod published;
mod read_buffer;
pub mod sink;
mod site;
mod verbs;
mod watch;
#[cfg(test)]
mod window_tests;

pub use conn::{Conn, ConnOpts};
/// The hazard kinds only etcd finds (its opener lists them too).
pub use doctor::HAZARDS;
pub use hold::KeepAlive;
pub use layout::Layout;
pub use owners::PublishError;
pub use site::{conn_opts, OPENER};

use super::url::EtcdTarget;
use super::{Fenced, StoreError, Tenure, DEFAULT_EVENTS_RETENTION};
use crate::claims::{ForceOpts, LocalIdentity, RenewOutcome};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One etcd cluster, one prefix. Cheap to share: a change feed holds the
/// same connection to record the expiries it observes.
pub struct EtcdStore {
    core: Arc<Core>,
}

/// What every verb needs; the verbs are `impl Core` blocks in the modules.
pub(crate) struct Core {
    pub(crate) conn: Conn,
    pub(crate) layout: Layout,
    url: String,
    retention: Duration,
    me: LocalIdentity,
    /// Keys this process wrote last, as it wrote them: a release of one's
    /// own claim then needs no read first.
    held: Mutex<HashMap<String, verbs::Held>>,
    /// Lease revocations and expiry records still in flight (a holder's
    /// keep-alive adds to it from the runtime).
    pending: expiry::Pending,
    /// Leases of released claims, `(id, ttl_s)`, kept for the next acquire
    /// (shared with the task that revokes each once it has idled).
    spares: Arc<Mutex<Vec<(i64, i64)>>>,
}

impl Drop for Core {
    fn drop(&mut self) {
        let pending = self
            .pending
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        let spares = self
            .spares
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        let mut client = self.conn.client();
        let timeout = self.conn.timeout();
        // Spare leases die with their process rather than idling to their TTL.
        self.conn.runtime().block_on(async move {
            let _ = tokio::time::timeout(timeout, async {
                for (lease, _) in spares {
                    let _ = client.lease_revoke(lease).await;
                }
            })
            .await;
            // Each record of a tenure's end bounds itself: the timeout from
            // when its lease can end at the earliest (a holder that gave its
            // claim up ahead of that instant waits for it, so that the end
            // is recorded even when no one else is watching).
            for task in pending {
                let _ = task.await;
            }
        });
    }
}

impl Core {
    /// Ask host `host_id`'s publisher to force-release `key` in its root
    /// `root_id`, waiting up to `wait`: its answer, or why not in words
    /// that name the host.
    pub(crate) fn ask_host(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
        opts: &ForceOpts,
        wait: Duration,
    ) -> Result<serde_json::Value, StoreError> {
        let ask = fleet::FleetAsk {
            host: host_id,
            root_id: Some(root_id),
            key,
        };
        self.request_force_release(&ask, opts, wait)
            .map_err(|e| match e {
                fleet::FleetError::Store(e) => e,
                // Words for the status line: which host, and why not.
                e => StoreError::Host(e.to_string()),
            })
    }
}

impl EtcdStore {
    /// The connection and layout every verb uses, for the publisher
    /// (`crate::publish`), which writes a host's copies through them.
    pub(crate) fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// Connect (with auth when a user is given). Fails within the timeout,
    /// naming the endpoints, when the cluster does not answer.
    pub fn connect(target: &EtcdTarget, opts: &ConnOpts) -> Result<EtcdStore, StoreError> {
        Ok(EtcdStore {
            core: Arc::new(Core {
                conn: Conn::open(target, opts)?,
                layout: Layout::new(&target.prefix),
                url: target.url(),
                retention: opts.events_retention.unwrap_or(DEFAULT_EVENTS_RETENTION),
                me: LocalIdentity::current(),
                held: Mutex::new(HashMap::new()),
                pending: Arc::new(Mutex::new(Vec::new())),
                spares: Arc::new(Mutex::new(Vec::new())),
            }),
        })
    }

    pub fn layout(&self) -> &Layout {
        &self.core.layout
    }

    pub fn conn(&self) -> &Conn {
        &self.core.conn
    }

    /// Renew only the tenure `revision` names.
    pub fn renew_fenced(
        &self,
        key: &str,
        holder: &str,
        ttl_ms: i64,
        revision: i64,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        self.core
            .renew_fenced(key, holder, ttl_ms, Some(revision), None)
    }

    /// Keep the claim `tenure` names alive until the handle is dropped
    /// (`claimtop run` while CMD runs); [`KeepAlive::lost`] says when and
    /// why it stopped being held.
    pub fn keep_alive(&self, key: &str, tenure: &Tenure) -> Result<KeepAlive, StoreError> {
        self.core.keep_alive(key, tenure)
    }

    /// Ask a publishing host to force-release a claim of one of its roots,
    /// and wait up to `wait` for its answer.
    pub fn request_force_release(
        &self,
        ask: &fleet::FleetAsk<'_>,
        opts: &ForceOpts,
        wait: Duration,
    ) -> Result<serde_json::Value, fleet::FleetError> {
        self.core.request_force_release(ask, opts, wait)
    }

    /// A change feed resuming after `revision` (a dashboard reconnecting
    /// from the last revision it showed).
    pub fn changes_from(&self, revision: i64) -> Result<watch::EtcdChanges, StoreError> {
        watch::EtcdChanges::start(&self.core, Some(revision + 1))
    }
}
