//! Claims on etcd (feature `etcd`): the contract's layout, one transaction
//! per verb, a lease on every claim, and the fencing revision.
//!
//! - `conn`: endpoints, TLS, auth, `--timeout`.
//! - `layout`: every key path.
//! - `verbs`: acquire, release, renew, force-release as transactions.
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
mod list;
mod next_key;
mod owners;
mod published;
mod site;
mod verbs;
mod watch;

pub use conn::Conn;
pub use hold::KeepAlive;
pub use layout::Layout;
pub use owners::PublishError;
pub use site::{conn_opts, OPENER};

use super::fleet::{FleetState, Forgot, HostInfo};
use super::url::EtcdTarget;
use super::{
    Changes, Fenced, Fleet, Kept, Leases, Listing, OpenOpts, Store, StoreError, StoreInfo, Tenure,
    DEFAULT_EVENTS_RETENTION,
};
use crate::claims::{
    AcquireOpts, AcquireOutcome, Fix, ForceOpts, ForceOutcome, LocalIdentity, ReleaseOutcome,
    RenewOutcome, Status,
};
use crate::events::history::{History, Log};
use crate::events::Event;
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
    pub fn connect(target: &EtcdTarget, opts: &OpenOpts) -> Result<EtcdStore, StoreError> {
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

impl Store for EtcdStore {
    fn url(&self) -> String {
        self.core.url.clone()
    }

    fn acquire(
        &self,
        key: &str,
        holder: &str,
        opts: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        self.core.acquire_claim(key, holder, opts)
    }

    fn release(&self, key: &str, holder: &str) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        self.core.release_fenced(key, holder, None)
    }

    fn status(&self, key: &str) -> Result<Fenced<Status>, StoreError> {
        self.core.status_of(key)
    }

    fn renew(
        &self,
        key: &str,
        holder: &str,
        ttl_ms: i64,
        operator: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        self.core.renew_fenced(key, holder, ttl_ms, None, operator)
    }

    fn force_release(
        &self,
        key: &str,
        opts: &ForceOpts,
    ) -> Result<Fenced<ForceOutcome>, StoreError> {
        self.core.force_release_claim(key, opts)
    }

    fn locate(&self, key: &str) -> std::path::PathBuf {
        std::path::PathBuf::from(self.core.layout.claim(key))
    }

    fn list(&self) -> Result<Listing, StoreError> {
        self.core.list_claims()
    }

    fn list_head(&self, n: usize) -> Result<Option<Listing>, StoreError> {
        self.core.list_claims_upto(Some(n)).map(Some)
    }

    fn doctor(&self) -> Result<Listing, StoreError> {
        let mut listing = self.core.list_claims()?;
        listing.store_hazards.extend(self.core.hazards()?);
        Ok(listing)
    }

    /// Nothing on etcd is provably abandoned in the file sense: an
    /// abandoned claim's lease ends it, and what is left is the operator's.
    fn repair(&self) -> Result<Vec<Fix>, StoreError> {
        Err(StoreError::Unsupported(
            "--fix cleans file roots only; over etcd, leases and keys are left to the operator"
                .into(),
        ))
    }

    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        self.core.read_events(n)
    }

    fn changes(&self) -> Result<Box<dyn Changes>, StoreError> {
        Ok(Box::new(watch::EtcdChanges::start(&self.core, None)?))
    }

    fn changes_after(&self, revision: Option<i64>) -> Result<Box<dyn Changes>, StoreError> {
        let start = revision.map(|r| r + 1);
        Ok(Box::new(watch::EtcdChanges::start(&self.core, start)?))
    }

    fn history(&self, log: &Log) -> Result<Box<dyn History>, StoreError> {
        let prefix = match log {
            Log::Own => self.core.layout.events(),
            Log::Mirrored { host_id, root_id } => {
                self.core.layout.root_place(host_id, root_id).events()
            }
            Log::Root(dir) => {
                return Err(StoreError::Unsupported(format!(
                    "{} keeps no file root's log ({}): its events are under {}",
                    self.url(),
                    dir.display(),
                    self.core.layout.events()
                )))
            }
        };
        Ok(Box::new(history::EtcdHistory::new(
            Arc::clone(&self.core),
            prefix,
        )))
    }

    fn logs(&self) -> Result<Vec<(Option<String>, Log)>, StoreError> {
        Ok(crate::store::fleet::logs_of(&self.core.read_fleet_hosts()?))
    }

    fn leases(&self) -> Option<&dyn Leases> {
        Some(self)
    }

    fn fleet(&self) -> Option<&dyn Fleet> {
        Some(self)
    }
}

impl Leases for EtcdStore {
    fn keep_alive(&self, key: &str, tenure: &Tenure) -> Result<Box<dyn Kept>, StoreError> {
        Ok(Box::new(self.core.keep_alive(key, tenure)?))
    }

    /// A holder whose claim expired and was re-taken, even by itself,
    /// cannot end the newer tenure.
    fn release_fenced(
        &self,
        key: &str,
        holder: &str,
        revision: i64,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        self.core.release_fenced(key, holder, Some(revision))
    }

    fn info(&self) -> Result<StoreInfo, StoreError> {
        self.core.info()
    }
}

impl Fleet for EtcdStore {
    fn state(&self) -> Result<FleetState, StoreError> {
        self.core.read_fleet(fleet::Copies::Whole)
    }

    fn brief_state(&self) -> Result<FleetState, StoreError> {
        self.core.read_fleet(fleet::Copies::Brief)
    }

    fn hosts(&self) -> Result<Vec<HostInfo>, StoreError> {
        self.core.read_fleet_hosts()
    }

    fn item(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        let place = self.core.layout.root_place(host_id, root_id);
        self.core.get_value(&place.claim(key))
    }

    fn ask_force_release(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
        opts: &ForceOpts,
        wait: Duration,
    ) -> Result<serde_json::Value, StoreError> {
        self.core.ask_host(host_id, root_id, key, opts, wait)
    }

    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        self.core.read_fleet_events(n)
    }

    fn forget(&self, host_id: &str) -> Result<Forgot, StoreError> {
        self.core.forget_host(host_id)
    }
}
