//! Audit events on etcd: `PREFIX/events/<id>`, each value exactly one
//! events.jsonl line (the seed's envelope), kept under a retention lease.

use super::layout::range_end;
use super::Core;
use crate::claims::now_ms;
use crate::events::emit::envelope;
use crate::events::{parse_event, Event, EventKind};
use crate::store::StoreError;
use etcd_client::{
    GetOptions, KeyValue, LeaseGrantOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnResponse,
};
use serde_json::{Map, Value};

/// What etcd says when a put names a lease it does not have.
const LEASE_NOT_FOUND: &str = "requested lease not found";
const LEASE_EXISTS: &str = "lease already exists";

impl Core {
    /// The put of one event, under the retention lease `lease`.
    pub(super) fn event_op(&self, lease: i64, kind: EventKind, data: Map<String, Value>) -> TxnOp {
        event_put(&self.layout, lease, kind, data)
    }

    /// Run a transaction whose event puts hang on this hour's retention
    /// lease. The lease is granted by whoever first needs it in the hour
    /// (at most one extra round trip per writer per hour); its TTL is the
    /// retention plus that hour, so no event lives less than the retention.
    pub(crate) fn txn_with_events(
        &self,
        build: impl Fn(i64) -> Txn,
    ) -> Result<TxnResponse, StoreError> {
        let lease = self.layout.retention_lease(now_ms());
        let run = |txn: Txn| {
            self.conn.call(|mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })
        };
        match run(build(lease)) {
            Err(StoreError::Backend { detail, .. }) if lease_not_found(&detail) => {
                let ttl = retention_ttl_s(self.retention);
                let granted = self.conn.call(|mut c| async move {
                    c.lease_grant(ttl, Some(LeaseGrantOptions::new().with_id(lease)))
                        .await
                });
                match granted {
                    Ok(_) => {}
                    // A peer granted it first: the same lease, ours to use.
                    Err(StoreError::Backend { detail, .. }) if lease_exists(&detail) => {}
                    Err(e) => return Err(e),
                }
                run(build(lease))
            }
            other => other,
        }
    }

    /// The last `n` events, oldest first, in the order etcd recorded them.
    pub(super) fn read_events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        let prefix = self.layout.events();
        let opts = GetOptions::new()
            .with_range(range_end(&prefix))
            .with_sort(SortTarget::Create, SortOrder::Descend)
            .with_limit(n as i64);
        let resp = self.conn.call(|mut c| {
            let (prefix, opts) = (prefix.clone(), opts.clone());
            async move { c.get(prefix, Some(opts)).await }
        })?;
        let mut out: Vec<Event> = resp.kvs().iter().rev().filter_map(event_of).collect();
        out.truncate(n);
        Ok(out)
    }

    /// The put of an end-of-tenure marker (kept as long as the events).
    pub(super) fn end_marker_op(&self, marker: &str, lease: i64) -> TxnOp {
        end_marker_put(marker, lease)
    }
}

/// The put of one event under the retention lease `lease`, for code that
/// runs without a [`Core`] (a keep-alive's task).
pub(super) fn event_put(
    layout: &super::Layout,
    lease: i64,
    kind: EventKind,
    data: Map<String, Value>,
) -> TxnOp {
    let line = envelope(kind.name(), data).to_string();
    TxnOp::put(
        layout.new_event(now_ms()),
        line,
        Some(PutOptions::new().with_lease(lease)),
    )
}

pub(super) fn end_marker_put(marker: &str, lease: i64) -> TxnOp {
    TxnOp::put(marker, "", Some(PutOptions::new().with_lease(lease)))
}

/// The TTL of a retention lease: the retention plus the hour it is named
/// after, so that no event lives less than the retention.
pub(super) fn retention_ttl_s(retention: std::time::Duration) -> i64 {
    retention.as_secs() as i64 + 3600
}

/// Whether an etcd error says the put named a lease etcd does not have.
pub(super) fn lease_not_found(detail: &str) -> bool {
    detail.contains(LEASE_NOT_FOUND)
}

/// Whether an etcd error says a lease of that id was granted already.
pub(super) fn lease_exists(detail: &str) -> bool {
    detail.contains(LEASE_EXISTS)
}

/// A stored event, if its value is one events.jsonl line, marked with the
/// revision it was written at.
pub(super) fn event_of(kv: &KeyValue) -> Option<Event> {
    std::str::from_utf8(kv.value())
        .ok()
        .and_then(|s| parse_event(s).ok())
        .map(|e| e.at_revision(kv.mod_revision()))
}
