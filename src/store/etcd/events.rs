//! Audit events on etcd: `PREFIX/events/<id>`, each value exactly one
//! events.jsonl line (the seed's envelope), kept under a retention lease.

use super::layout::range_end;
use super::Core;
use crate::claims::audit::event_fields_unknown;
use crate::claims::{now_ms, ClaimRecord};
use crate::events::emit::envelope;
use crate::events::tail::{parse_event, Event};
use crate::store::StoreError;
use etcd_client::{
    Compare, CompareOp, GetOptions, KeyValue, LeaseGrantOptions, PutOptions, SortOrder, SortTarget,
    Txn, TxnOp, TxnResponse,
};
use serde_json::{Map, Value};

/// What etcd says when a put names a lease it does not have.
const LEASE_NOT_FOUND: &str = "requested lease not found";
const LEASE_EXISTS: &str = "lease already exists";

impl Core {
    /// The put of one event, under the retention lease `lease`.
    pub(super) fn event_op(&self, lease: i64, kind: &str, data: Map<String, Value>) -> TxnOp {
        let line = envelope(kind, data).to_string();
        TxnOp::put(
            self.layout.new_event(now_ms()),
            line,
            Some(PutOptions::new().with_lease(lease)),
        )
    }

    /// Run a transaction whose event puts hang on this hour's retention
    /// lease. The lease is granted by whoever first needs it in the hour
    /// (at most one extra round trip per writer per hour); its TTL is the
    /// retention plus that hour, so no event lives less than the retention.
    pub(super) fn txn_with_events(
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
            Err(StoreError::Etcd { detail, .. }) if detail.contains(LEASE_NOT_FOUND) => {
                let ttl = self.retention.as_secs() as i64 + 3600;
                let granted = self.conn.call(|mut c| async move {
                    c.lease_grant(ttl, Some(LeaseGrantOptions::new().with_id(lease)))
                        .await
                });
                match granted {
                    Ok(_) => {}
                    // A peer granted it first: the same lease, ours to use.
                    Err(StoreError::Etcd { detail, .. }) if detail.contains(LEASE_EXISTS) => {}
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

    /// Record the end of a tenure that no verb ended (its lease ran out):
    /// a `claim_expired` event, written only if no one recorded this
    /// tenure's end before. The marker's `create_revision == 0` compare is
    /// what makes it once, however many observers race here; release and
    /// force-release write the same marker, so they never look expired.
    /// Returns whether this call wrote it.
    pub(super) fn record_expiry(&self, gone: &KeyValue) -> Result<bool, StoreError> {
        let Some(key) = self.layout.key_of_claim(gone.key()) else {
            return Ok(false);
        };
        let marker = self.layout.ended(&key, gone.create_revision());
        // Most deletions are releases, already marked: a read answers them
        // without a write through raft for every observer.
        let probe = marker.clone();
        let marked = self.conn.call(|mut c| {
            let probe = probe.clone();
            async move {
                c.get(probe, Some(GetOptions::new().with_count_only()))
                    .await
            }
        })?;
        if marked.count() > 0 {
            return Ok(false);
        }
        let mut data = match ClaimRecord::from_bytes(gone.value()) {
            Ok(rec) => rec.event_fields(),
            Err(_) => event_fields_unknown(&key),
        };
        data.insert("revision".into(), Value::from(gone.create_revision()));
        data.insert("lease".into(), Value::from(gone.lease()));
        let resp = self.txn_with_events(|lease| {
            Txn::new()
                .when([Compare::create_revision(
                    marker.clone(),
                    CompareOp::Equal,
                    0,
                )])
                .and_then([
                    self.end_marker_op(&marker, lease),
                    self.event_op(lease, "claim_expired", data.clone()),
                ])
        })?;
        Ok(resp.succeeded())
    }

    /// The put of an end-of-tenure marker (kept as long as the events).
    pub(super) fn end_marker_op(&self, marker: &str, lease: i64) -> TxnOp {
        TxnOp::put(marker, "", Some(PutOptions::new().with_lease(lease)))
    }
}

/// A stored event, if its value is one events.jsonl line.
pub(super) fn event_of(kv: &KeyValue) -> Option<Event> {
    std::str::from_utf8(kv.value())
        .ok()
        .and_then(|s| parse_event(s).ok())
}
