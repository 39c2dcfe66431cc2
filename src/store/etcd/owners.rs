//! Who publishes which root: one publisher per root, many per machine.
//!
//! A root is taken by creating its owner key (`hosts/<machine>/owners/<root-id>`)
//! on the publisher's lease in a transaction that succeeds only if the key is
//! absent. A key already there names the pid that holds the root: while that
//! process runs, a second publisher refuses; once it is gone (killed, its
//! lease not yet expired) the key is taken over. Either way a crashed
//! publisher never blocks a new one for longer than it takes to see its pid
//! gone, and a pid reused meanwhile blocks at most until the lease expires.
//!
//! The host record is shared by every publisher of the machine, so each
//! merges its own roots into it with a compare-and-swap, and never drops
//! another's.

use super::Core;
use crate::store::fleet::PublishedRoot;
pub use crate::store::sink::PublishError;
use crate::store::sink::{HostRecord, RootOwner};
use crate::store::StoreError;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp, TxnOpResponse};

/// Compare-and-swap rounds before giving up on a key others keep changing.
const CAS_TRIES: usize = 20;

impl Core {
    /// Take `root` for the publisher `me` (on `me.lease`). The lease of a
    /// dead publisher (or of this one before a reconnect) that held it is
    /// returned, to be revoked once everything it carried is on ours.
    pub(crate) fn own_root(
        &self,
        machine: &str,
        root: &PublishedRoot,
        me: &RootOwner,
    ) -> Result<Option<i64>, PublishError> {
        let key = self.layout.root_owner(machine, &root.id);
        let body = serde_json::to_string(me).unwrap_or_default();
        let lease = me.lease;
        for _ in 0..CAS_TRIES {
            let resp = self.conn.call(|mut c| {
                let (key, body) = (key.clone(), body.clone());
                let txn = Txn::new()
                    .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(
                        key.clone(),
                        body,
                        Some(PutOptions::new().with_lease(lease)),
                    )])
                    .or_else([TxnOp::get(key, None)]);
                async move { c.txn(txn).await }
            })?;
            if resp.succeeded() {
                return Ok(None);
            }
            let Some(kv) = resp.op_responses().into_iter().find_map(|r| match r {
                TxnOpResponse::Get(g) => g.kvs().first().cloned(),
                _ => None,
            }) else {
                continue;
            };
            let theirs = serde_json::from_slice::<RootOwner>(kv.value()).ok();
            if let Some(o) = &theirs {
                let alive = !crate::sys::pid_gone_since(o.pid as i32, o.since_ms);
                if o.pid != me.pid && alive {
                    return Err(PublishError::RootTaken {
                        root: root.path.clone(),
                        pid: o.pid,
                    });
                }
            }
            let rev = kv.mod_revision();
            let took = self.conn.call(|mut c| {
                let (key, body) = (key.clone(), body.clone());
                let txn = Txn::new()
                    .when([Compare::mod_revision(key.clone(), CompareOp::Equal, rev)])
                    .and_then([TxnOp::put(
                        key,
                        body,
                        Some(PutOptions::new().with_lease(lease)),
                    )]);
                async move { c.txn(txn).await }
            })?;
            if took.succeeded() {
                return Ok(theirs.map(|o| o.lease).filter(|old| *old != lease));
            }
        }
        Err(busy(&self.conn, &key).into())
    }

    /// Say again what the publisher `me` knows of its root (readable or
    /// not), on its lease.
    pub(crate) fn put_root_owner(
        &self,
        machine: &str,
        root_id: &str,
        me: &RootOwner,
    ) -> Result<(), StoreError> {
        let key = self.layout.root_owner(machine, root_id);
        let body = serde_json::to_string(me).unwrap_or_default();
        let lease = me.lease;
        self.conn.call(|mut c| {
            let (key, body) = (key.clone(), body.clone());
            async move {
                c.put(key, body, Some(PutOptions::new().with_lease(lease)))
                    .await
            }
        })?;
        Ok(())
    }

    /// Write the host record with `rec.roots` merged into the roots it
    /// already names: another publisher's roots on this machine stay.
    pub(crate) fn merge_host_record(&self, rec: &HostRecord) -> Result<(), StoreError> {
        let key = self.layout.host_record(&rec.machine_id);
        let index = self.layout.host_index_entry(&rec.machine_id);
        for _ in 0..CAS_TRIES {
            let resp = self.conn.call(|mut c| {
                let key = key.clone();
                async move { c.get(key, None).await }
            })?;
            let (before, rev) = match resp.kvs().first() {
                Some(kv) => (
                    serde_json::from_slice::<HostRecord>(kv.value()).ok(),
                    kv.mod_revision(),
                ),
                None => (None, 0),
            };
            let mut merged = rec.clone();
            let others = before.map(|b| b.roots).unwrap_or_default();
            for r in others {
                if !merged.roots.iter().any(|m| m.id == r.id) {
                    merged.roots.push(r);
                }
            }
            // What a root's state is, readers learn from its owner key.
            for r in &mut merged.roots {
                *r = PublishedRoot::new(r.id.clone(), r.path.clone());
            }
            let body = serde_json::to_string(&merged).unwrap_or_default();
            let put = self.conn.call(|mut c| {
                let (key, body) = (key.clone(), body.clone());
                // The host's index entry with its record: a reader that
                // finds the record through the index finds every host.
                let txn = Txn::new()
                    .when([Compare::mod_revision(key.clone(), CompareOp::Equal, rev)])
                    .and_then([
                        TxnOp::put(key, body, None),
                        TxnOp::put(index.clone(), "", None),
                    ]);
                async move { c.txn(txn).await }
            })?;
            if put.succeeded() {
                return Ok(());
            }
        }
        Err(busy(&self.conn, &key))
    }
}

fn busy(conn: &super::Conn, key: &str) -> StoreError {
    super::conn::answered(
        conn.endpoints(),
        format!("{key} kept changing under {CAS_TRIES} compare-and-swap tries"),
    )
}
