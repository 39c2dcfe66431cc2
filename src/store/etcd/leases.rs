//! The leases claims hang on: granted, reused, refreshed, and given up.
//!
//! A claim's lease is not always the claim's alone. Session-style clients
//! hang several keys on one lease (a few claims and keys of their own), and
//! a holder that keeps its claim's lease alive (`run`) marks it with
//! `PREFIX/kept/<key>`. So a verb of another process that ends or moves a
//! claim never revokes its lease outright: it revokes it only once nothing
//! is attached to it any more ([`Core::let_go`]).
//!
//! etcd has no "revoke if empty": the look at the lease's keys and the
//! revoke are two requests, and a key attached in between goes with the
//! lease. claimtop attaches to no lease it did not grant itself for that
//! claim (an acquire takes a fresh lease or a spare of its own process; a
//! `kept/` mark goes only on a lease that still carries its holder's
//! claim, in a transaction that checks so). What the window can cost is a
//! client of another implementation that leaves a lease with no key at all
//! and attaches one again later: such a lease is indistinguishable from a
//! leaked one, and `doctor` reports it as one.

use super::Core;
use crate::store::StoreError;
use etcd_client::{Client, LeaseTimeToLiveOptions};

/// Spare leases one process keeps for its next acquires.
const MAX_SPARE_LEASES: usize = 4;
/// How long a spare lease waits for an acquire to take it: a loop of
/// acquires and releases reuses it at once; longer, it is a lease with no
/// key that `doctor` reports.
const SPARE_IDLE: std::time::Duration = std::time::Duration::from_secs(1);

/// One renewal of `lease`: the TTL etcd answered with (0 or less: the lease
/// is gone).
pub(super) async fn renew(client: &mut Client, lease: i64) -> Result<i64, etcd_client::Error> {
    let (mut keeper, mut stream) = client.lease_keep_alive(lease).await?;
    keeper.keep_alive().await?;
    Ok(stream.message().await?.map_or(0, |a| a.ttl()))
}

/// The keys attached to `lease`, or None when the lease is gone.
async fn keys_of(
    client: &mut Client,
    lease: i64,
) -> Result<Option<Vec<Vec<u8>>>, etcd_client::Error> {
    let opts = LeaseTimeToLiveOptions::new().with_keys();
    let ttl = client.lease_time_to_live(lease, Some(opts)).await?;
    Ok((ttl.ttl() > 0).then(|| ttl.keys().to_vec()))
}

impl Core {
    /// A lease of `ttl_s` for a new claim: a spare one of this process,
    /// refreshed to its full TTL (a keep-alive, which etcd answers without
    /// a write through raft), else a fresh grant.
    pub(super) fn lease_for(&self, ttl_s: i64) -> Result<i64, StoreError> {
        let spare = self.spares.lock().ok().and_then(|mut spares| {
            let at = spares.iter().position(|(_, t)| *t == ttl_s)?;
            Some(spares.swap_remove(at).0)
        });
        if let Some(lease) = spare {
            let refreshed = self
                .conn
                .call(|mut c| async move { c.lease_keep_alive(lease).await.map(|_| ()) });
            if refreshed.is_ok() {
                return Ok(lease);
            }
        }
        self.grant(ttl_s)
    }

    /// Keep a lease no key is attached to any more for this process's next
    /// acquire of the same TTL; past a few, revoke it. Only leases this
    /// process granted for a claim of its own, and known to carry nothing
    /// now, come here: never one whose transaction's answer was lost.
    ///
    /// A spare no acquire took within [`SPARE_IDLE`] is revoked: a process
    /// that lives on after its release (the dashboard) would otherwise keep
    /// it to its TTL, and `doctor` rightly reports a lease with no key as
    /// leaked while the dashboard shows no such hazard.
    pub(super) fn spare(&self, lease: i64, ttl_s: i64) {
        if let Ok(mut spares) = self.spares.lock() {
            if spares.len() < MAX_SPARE_LEASES {
                spares.push((lease, ttl_s));
                let spares = std::sync::Arc::clone(&self.spares);
                let mut c = self.conn.client();
                self.conn.runtime().spawn(async move {
                    tokio::time::sleep(SPARE_IDLE).await;
                    let idle = spares.lock().is_ok_and(|mut s| {
                        let at = s.iter().position(|(l, _)| *l == lease);
                        at.map(|i| s.swap_remove(i)).is_some()
                    });
                    if idle {
                        let _ = c.lease_revoke(lease).await;
                    }
                });
                return;
            }
        }
        self.revoke_quietly(lease);
    }

    pub(super) fn grant(&self, ttl_s: i64) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .call(|mut c| async move { c.lease_grant(ttl_s, None).await })?
            .id())
    }

    /// Renew `lease` once: its TTL as granted, or None when it is gone.
    pub(super) fn refresh(&self, lease: i64) -> Result<Option<i64>, StoreError> {
        let left = self
            .conn
            .call(|mut c| async move { renew(&mut c, lease).await })?;
        Ok((left > 0).then_some(left))
    }

    /// Whether `lease` carries a key other than those in `own` (a claim
    /// and its `kept/` mark): then it is not the claim's alone.
    pub(super) fn carries_more(&self, lease: i64, own: &[&str]) -> Result<bool, StoreError> {
        if lease == 0 {
            return Ok(false);
        }
        let keys = self
            .conn
            .call(|mut c| async move { keys_of(&mut c, lease).await })?;
        Ok(keys
            .unwrap_or_default()
            .iter()
            .any(|k| !own.iter().any(|o| o.as_bytes() == k.as_slice())))
    }

    /// A claim on `lease` was just deleted or moved by a verb: revoke the
    /// lease if nothing is attached to it any more, else leave it to
    /// whoever keeps it (see the module's notes). Off the caller's path,
    /// like [`Core::revoke_quietly`].
    pub(super) fn let_go(&self, lease: i64) {
        if lease == 0 {
            return;
        }
        self.in_background(move |mut c| async move {
            if let Ok(Some(keys)) = keys_of(&mut c, lease).await {
                if keys.is_empty() {
                    let _ = c.lease_revoke(lease).await;
                }
            }
        });
    }

    /// Revoke a lease no key needs any more, off the caller's path: the verb
    /// is done once its transaction is. Only for a lease this process
    /// granted and attached nothing to, or a spare. A failure only leaves
    /// the lease to run out on its own (doctor shows it until then).
    pub(super) fn revoke_quietly(&self, lease: i64) {
        if lease == 0 {
            return;
        }
        self.in_background(move |mut c| async move {
            let _ = c.lease_revoke(lease).await;
        });
    }

    /// Run `work` on the store's runtime within the timeout; dropping the
    /// store waits for what is still in flight.
    fn in_background<F, Fut>(&self, work: F)
    where
        F: FnOnce(Client) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let c = self.conn.client();
        let timeout = self.conn.timeout();
        let task = self.conn.runtime().spawn(async move {
            let _ = tokio::time::timeout(timeout, work(c)).await;
        });
        if let Ok(mut pending) = self.pending.lock() {
            pending.retain(|t| !t.is_finished());
            pending.push(task);
        }
    }
}
