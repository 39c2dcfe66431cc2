//! Where `claimtop publish` writes, over etcd: the publisher's lease and
//! its keep-alive, the roots it owns, each root's copies (a claim on the
//! lease and its last known twin, in transactions under etcd's limit), its
//! mirrored log lines (create-if-absent, on the retention lease), and the
//! force-release requests it takes and answers. The publisher keeps its
//! loop, its fingerprints and its words; every etcd call it makes is here.

use super::fleet::{HostRecord, RootOwner};
use super::{Core, EtcdStore, PublishError};
use crate::store::fleet::PublishedRoot;
use crate::store::StoreError;
use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Operations per transaction, under etcd's default limit of 128 (each claim
/// write is two: the claim and its last known twin).
const BATCH: usize = 100;

/// One key as etcd keeps it.
#[derive(Debug, Clone)]
pub struct Stored {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    /// The lease it hangs on (0: none).
    pub lease: i64,
    pub mod_revision: i64,
}

impl Stored {
    fn of(kv: &etcd_client::KeyValue) -> Stored {
        Stored {
            key: kv.key().to_vec(),
            value: kv.value().to_vec(),
            lease: kv.lease(),
            mod_revision: kv.mod_revision(),
        }
    }
}

/// What makes etcd hold a root's copy of one claim: the claim on the
/// publisher's lease and its last known twin without one, together.
#[derive(Debug, Clone)]
pub enum CopyWrite {
    Put {
        claim: String,
        known: String,
        text: String,
    },
    Delete {
        claim: String,
        known: String,
    },
}

/// The keep-alive of the publisher's lease, on the connection's runtime.
pub struct LeaseKeeper {
    task: tokio::task::JoinHandle<()>,
    lost: Arc<AtomicBool>,
}

impl LeaseKeeper {
    /// etcd said the lease is gone, or nothing confirmed it for longer
    /// than its TTL.
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The publisher's way into one etcd store.
pub struct EtcdSink {
    core: Arc<Core>,
}

impl EtcdSink {
    pub fn of(store: &EtcdStore) -> EtcdSink {
        EtcdSink {
            core: Arc::clone(store.core()),
        }
    }

    pub fn layout(&self) -> &super::Layout {
        &self.core.layout
    }

    /// The endpoints, for the log.
    pub fn endpoints(&self) -> &str {
        self.core.conn.endpoints()
    }

    pub fn grant(&self, ttl_s: i64) -> Result<i64, StoreError> {
        let granted = self
            .core
            .conn
            .call(|mut c| async move { c.lease_grant(ttl_s, None).await })?;
        Ok(granted.id())
    }

    pub fn revoke(&self, lease: i64) -> Result<(), StoreError> {
        self.core
            .conn
            .call(|mut c| async move { c.lease_revoke(lease).await })?;
        Ok(())
    }

    /// Keep `lease` alive from the connection's runtime, whatever the
    /// publisher's loop is busy with (a first sync of thousands of keys can
    /// take longer than the TTL).
    pub fn keep_alive(&self, lease: i64, ttl_s: i64) -> LeaseKeeper {
        let ttl = Duration::from_secs(ttl_s.max(3) as u64);
        let every = ttl / 3;
        let lost = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&lost);
        let mut client = self.core.conn.client();
        let task = self.core.conn.runtime().spawn(async move {
            let mut confirmed = tokio::time::Instant::now();
            loop {
                let renewed = tokio::time::timeout(every, async {
                    let (mut keeper, mut stream) = client.lease_keep_alive(lease).await?;
                    keeper.keep_alive().await?;
                    Ok::<_, etcd_client::Error>(stream.message().await?.map(|m| m.ttl()))
                })
                .await;
                match renewed {
                    Ok(Ok(Some(left))) if left > 0 => confirmed = tokio::time::Instant::now(),
                    Ok(Ok(_)) => break,
                    // Unreachable for now: fine while the lease may still run.
                    _ if confirmed.elapsed() < ttl => {}
                    _ => break,
                }
                tokio::time::sleep(every).await;
            }
            flag.store(true, Ordering::SeqCst);
        });
        LeaseKeeper { task, lost }
    }

    /// Take `root` for `me` (refused, naming the pid, when a live publisher
    /// holds it); the lease its previous owner left, if any.
    pub fn own_root(
        &self,
        machine_id: &str,
        root: &PublishedRoot,
        me: &RootOwner,
    ) -> Result<Option<i64>, PublishError> {
        self.core.own_root(machine_id, root, me)
    }

    pub fn put_root_owner(
        &self,
        machine_id: &str,
        root_id: &str,
        me: &RootOwner,
    ) -> Result<(), StoreError> {
        self.core.put_root_owner(machine_id, root_id, me)
    }

    pub fn merge_host_record(&self, rec: &HostRecord) -> Result<(), StoreError> {
        self.core.merge_host_record(rec)
    }

    /// Put `value` at `key` on `lease`.
    pub fn put_on(&self, lease: i64, key: &str, value: &str) -> Result<(), StoreError> {
        self.core.conn.call(|mut c| {
            let (key, value) = (key.to_string(), value.to_string());
            async move {
                c.put(key, value, Some(PutOptions::new().with_lease(lease)))
                    .await
            }
        })?;
        Ok(())
    }

    /// Every key under `prefix`, read at one revision.
    pub fn read_all(&self, prefix: &str) -> Result<Vec<Stored>, StoreError> {
        let (kvs, _) = self.core.range_all(prefix)?;
        Ok(kvs.iter().map(Stored::of).collect())
    }

    /// The last key under `prefix`, by key or by when it was created.
    pub fn last(&self, prefix: &str, by_key: bool) -> Result<Option<Stored>, StoreError> {
        let target = match by_key {
            true => SortTarget::Key,
            false => SortTarget::Create,
        };
        let opts = GetOptions::new()
            .with_range(super::layout::range_end(prefix))
            .with_sort(target, SortOrder::Descend)
            .with_limit(1);
        let resp = self.core.conn.call(move |mut c| {
            let (prefix, opts) = (prefix.to_string(), opts.clone());
            async move { c.get(prefix, Some(opts)).await }
        })?;
        Ok(resp.kvs().first().map(Stored::of))
    }

    /// Write each copy, [`BATCH`] operations to a transaction: one change
    /// is one transaction (one store revision), and a re-sync of thousands
    /// of keys takes tens of round trips. How many were written, each time
    /// a transaction went through.
    pub fn write_copies(
        &self,
        lease: i64,
        writes: &[CopyWrite],
        written: &mut dyn FnMut(usize),
    ) -> Result<(), StoreError> {
        for chunk in writes.chunks(BATCH / 2) {
            let ops: Vec<TxnOp> = chunk.iter().flat_map(|w| ops_of(w, lease)).collect();
            let txn = Txn::new().and_then(ops);
            self.core.conn.call(|mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })?;
            written(chunk.len());
        }
        Ok(())
    }

    /// Put `text` at `key` unless something is there, on the events
    /// retention lease: a mirrored line is written once.
    pub fn put_event_once(&self, key: &str, text: &str) -> Result<(), StoreError> {
        self.core.txn_with_events(|lease| {
            Txn::new()
                .when([Compare::create_revision(key, CompareOp::Equal, 0)])
                .and_then([TxnOp::put(
                    key,
                    text,
                    Some(PutOptions::new().with_lease(lease)),
                )])
        })?;
        Ok(())
    }

    /// Take the request at `key` by writing `taken` over it, only if it is
    /// still as it was at `revision` (a requester that gave up withdrew
    /// it). The requester's lease stays on it: a requester that dies still
    /// leaves nothing behind.
    pub fn take_request(&self, key: &[u8], revision: i64, taken: &str) -> Result<bool, StoreError> {
        let took = self.core.conn.call(|mut c| {
            let txn = Txn::new()
                .when([Compare::mod_revision(key, CompareOp::Equal, revision)])
                .and_then([TxnOp::put(
                    key,
                    taken,
                    Some(PutOptions::new().with_ignore_lease()),
                )]);
            async move { c.txn(txn).await }
        })?;
        Ok(took.succeeded())
    }

    /// Answer the request at `request` with `body` at `answer` (on
    /// `lease`), deleting the request, in one transaction.
    pub fn answer(
        &self,
        lease: i64,
        request: &[u8],
        answer: &str,
        body: &str,
    ) -> Result<(), StoreError> {
        self.core.conn.call(|mut c| {
            let txn = Txn::new().and_then([
                TxnOp::delete(request, None),
                TxnOp::put(answer, body, Some(PutOptions::new().with_lease(lease))),
            ]);
            async move { c.txn(txn).await }
        })?;
        Ok(())
    }
}

fn ops_of(w: &CopyWrite, lease: i64) -> [TxnOp; 2] {
    match w {
        CopyWrite::Put { claim, known, text } => [
            TxnOp::put(
                claim.as_str(),
                text.as_str(),
                Some(PutOptions::new().with_lease(lease)),
            ),
            TxnOp::put(known.as_str(), text.as_str(), None),
        ],
        CopyWrite::Delete { claim, known } => [
            TxnOp::delete(claim.as_str(), None),
            TxnOp::delete(known.as_str(), None),
        ],
    }
}
