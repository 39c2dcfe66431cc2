//! The end of a tenure no verb ended: its lease ran out (or was revoked
//! outside claimtop). Whoever first learns of it records `claim_expired`,
//! once, through the tenure's end marker (`PREFIX/ended/`):
//!
//! - a change feed that sees the claim key deleted (`watch`), with the
//!   record as it was deleted;
//! - the holder's own keep-alive, once it concludes the claim is no longer
//!   held (`hold`): often the only one connected when etcd stalls;
//! - an acquire that finds the key's open-tenure entry (`PREFIX/open/`,
//!   see `layout`) still naming a tenure whose key is gone (`verbs`);
//! - a full `list` that finds more such entries than claims (`list`).
//!
//! The last three record the fields the open-tenure entry kept from the
//! acquire. One transaction decides, however many of them race: it records
//! only while the claim key does not carry that tenure, writes the marker
//! and the event only if the marker is absent, and removes the open-tenure
//! entry only if it still names that tenure.

use super::events::{end_marker_put, event_put, lease_exists, lease_not_found, retention_ttl_s};
use super::layout::range_end;
use super::{Core, Layout};
use crate::claims::audit::event_fields_unknown;
use crate::claims::{now_ms, ClaimRecord};
use crate::events::EventKind;
use crate::store::{StoreError, Tenure};
use etcd_client::{
    Client, Compare, CompareOp, GetOptions, KeyValue, LeaseGrantOptions, Txn, TxnOp, TxnOpResponse,
    TxnResponse,
};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Lease-revocation and recording tasks a store's drop waits for.
pub(super) type Pending = Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>;

/// An open-tenure entry keeps at most this much of the record's fields;
/// past it only the key (a holder name near the record cap must not double
/// the acquire's transaction past etcd's request limit).
const OPEN_VALUE_MAX: usize = 4096;
/// How often a holder that lost its lease looks again for the key to go,
/// until the store's timeout.
const LOOK_AGAIN: Duration = Duration::from_millis(250);

/// One tenure whose claim key is gone (or carries another tenure now).
#[derive(Debug, Clone)]
pub(super) struct Gone {
    pub key: String,
    pub revision: i64,
    /// The claim's lease, when known (0: not; the event then has none).
    pub lease: i64,
    /// The claim's common event fields.
    pub fields: Map<String, Value>,
}

impl Gone {
    /// From the claim's last key-value (a watch's previous value).
    pub fn of_claim(layout: &Layout, kv: &KeyValue) -> Option<Gone> {
        let key = layout.key_of_claim(kv.key())?;
        let fields = match ClaimRecord::from_bytes(kv.value()) {
            Ok(rec) => rec.event_fields(),
            Err(_) => event_fields_unknown(&key),
        };
        Some(Gone {
            key,
            revision: kv.create_revision(),
            lease: kv.lease(),
            fields,
        })
    }

    /// From an open-tenure entry, read with its value.
    pub fn of_open(layout: &Layout, kv: &KeyValue) -> Option<Gone> {
        let key = layout.key_of_open(kv.key())?;
        let kept: Option<Map<String, Value>> = serde_json::from_slice(kv.value()).ok();
        // A lease id is positive: anything else in the entry (written by
        // hand or by another implementation) is no lease at all.
        let lease = kept
            .as_ref()
            .and_then(|m| m.get("lease"))
            .and_then(Value::as_i64)
            .filter(|l| *l > 0)
            .unwrap_or(0);
        let fields = kept
            .and_then(|mut m| match m.remove("fields") {
                Some(Value::Object(f)) => Some(f),
                _ => None,
            })
            .unwrap_or_else(|| event_fields_unknown(&key));
        Some(Gone {
            key,
            revision: kv.mod_revision(),
            lease,
            fields,
        })
    }
}

/// The put of a key's open-tenure entry, in the acquire's transaction. No
/// lease: it must outlive the claim's.
pub(super) fn open_put(layout: &Layout, rec: &ClaimRecord, lease: i64) -> TxnOp {
    let mut fields = rec.event_fields();
    let too_big = serde_json::to_string(&fields)
        .map(|s| s.len() > OPEN_VALUE_MAX)
        .unwrap_or(true);
    if too_big {
        fields = event_fields_unknown(&rec.key);
    }
    let value = serde_json::json!({"lease": lease, "fields": fields}).to_string();
    TxnOp::put(layout.open(&rec.key), value, None)
}

/// In a verb's transaction that ends tenure `revision`: remove the key's
/// open-tenure entry if it names that tenure (never an older one that
/// still waits to be recorded).
pub(super) fn open_close(layout: &Layout, key: &str, revision: i64) -> TxnOp {
    let open = layout.open(key);
    TxnOp::txn(
        Txn::new()
            .when([Compare::mod_revision(
                open.clone(),
                CompareOp::Equal,
                revision,
            )])
            .and_then([TxnOp::delete(open, None)]),
    )
}

/// The transaction recording `gone`'s end, its events under `events_lease`.
fn end_txn(layout: &Layout, gone: &Gone, events_lease: i64) -> Txn {
    let marker = layout.ended(&gone.key, gone.revision);
    let mut data = gone.fields.clone();
    data.insert("revision".into(), Value::from(gone.revision));
    // Absent when unknown, never a made-up id.
    if gone.lease > 0 {
        data.insert("lease".into(), Value::from(gone.lease));
    }
    let record = Txn::new()
        .when([Compare::create_revision(
            marker.clone(),
            CompareOp::Equal,
            0,
        )])
        .and_then([
            end_marker_put(&marker, events_lease),
            event_put(layout, events_lease, EventKind::Expired, data),
        ]);
    Txn::new()
        .when([Compare::create_revision(
            layout.claim(&gone.key),
            CompareOp::NotEqual,
            gone.revision,
        )])
        .and_then([
            TxnOp::txn(record),
            open_close(layout, &gone.key, gone.revision),
        ])
}

/// Whether [`end_txn`] wrote `claim_expired`: its first nested
/// transaction (the marker's) went through.
fn wrote_event(resp: &TxnResponse) -> bool {
    resp.succeeded()
        && matches!(
            resp.op_responses().into_iter().next(),
            Some(TxnOpResponse::Txn(t)) if t.succeeded()
        )
}

impl Core {
    /// A change feed saw the claim key `gone` deleted: record its end if no
    /// verb did. Returns whether this call wrote `claim_expired`.
    pub(super) fn record_expiry(&self, gone: &KeyValue) -> Result<bool, StoreError> {
        let Some(gone) = Gone::of_claim(&self.layout, gone) else {
            return Ok(false);
        };
        // Most deletions are releases, already marked: a read answers them
        // without a write through raft for every observer.
        let probe = self.layout.ended(&gone.key, gone.revision);
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
        self.record_ended(&gone)
    }

    /// Record `gone`'s end (see the module's notes). Returns whether this
    /// call wrote `claim_expired`.
    pub(super) fn record_ended(&self, gone: &Gone) -> Result<bool, StoreError> {
        let resp = self.txn_with_events(|lease| end_txn(&self.layout, gone, lease))?;
        Ok(wrote_event(&resp))
    }

    /// An acquire met the key's open-tenure entry `open` beside the claim
    /// key `claim`: if the entry names a tenure that is no longer on the
    /// key, record that tenure's end. Returns whether it did (the acquire
    /// then tries again: the entry is gone).
    pub(super) fn settle_open(
        &self,
        open: &KeyValue,
        claim: Option<&KeyValue>,
    ) -> Result<bool, StoreError> {
        if claim.is_some_and(|c| c.create_revision() == open.mod_revision()) {
            return Ok(false);
        }
        let Some(gone) = Gone::of_open(&self.layout, open) else {
            return Ok(false);
        };
        self.record_ended(&gone)?;
        Ok(true)
    }

    /// After a full listing read at revision `at` (`claims` sorted by key,
    /// each beside its tenure): record the end of every tenure whose
    /// open-tenure entry names a revision no listed key carries. Returns
    /// how many `claim_expired` it wrote.
    ///
    /// A count comes first, so that a listing (which a dashboard and a
    /// metrics scrape repeat) pays one small request when nothing ended
    /// unrecorded: every claim this code acquired has one entry, so more
    /// entries than claims means some tenure ended. A claim written
    /// without an entry (an older claimtop, another implementation on the
    /// prefix) can mask one; the next acquire of that key, or any watcher,
    /// still records it.
    pub(super) fn settle_opens(
        &self,
        at: i64,
        carried: &[(String, Option<i64>)],
    ) -> Result<usize, StoreError> {
        let opens = self.layout.opens();
        let opts = GetOptions::new()
            .with_range(range_end(&opens))
            .with_count_only()
            .with_revision(at);
        let counted = self.conn.call(|mut c| {
            let (opens, opts) = (opens.clone(), opts.clone());
            async move { c.get(opens, Some(opts)).await }
        })?;
        if counted.count() <= carried.len() as i64 {
            return Ok(0);
        }
        let mut ended = Vec::new();
        self.page_through(&self.layout.opens(), at, true, |page| {
            for kv in page {
                let Some(key) = self.layout.key_of_open(kv.key()) else {
                    continue;
                };
                let carried = carried
                    .binary_search_by(|(k, _)| k.as_str().cmp(key.as_str()))
                    .ok()
                    .and_then(|i| carried[i].1);
                if carried != Some(kv.mod_revision()) {
                    ended.push(kv.key().to_vec());
                }
            }
            true
        })?;
        let mut wrote = 0;
        for open in ended {
            // Read again with its value: the keys-only page had none.
            let resp = self.conn.call(|mut c| {
                let open = open.clone();
                async move { c.get(open, None).await }
            })?;
            let Some(kv) = resp.kvs().first() else {
                continue;
            };
            if let Some(gone) = Gone::of_open(&self.layout, kv) {
                wrote += usize::from(self.record_ended(&gone)?);
            }
        }
        Ok(wrote)
    }

    /// What a holder's keep-alive hands over once it concludes that
    /// `tenure` is no longer held (the lease gone or unconfirmed past its
    /// TTL, the key taken), to record the tenure's end off the holder's
    /// path: see [`AfterLoss::start`].
    pub(super) fn after_loss(&self, key: &str, tenure: &Tenure) -> AfterLoss {
        AfterLoss {
            client: self.conn.client(),
            layout: self.layout.clone(),
            retention_ttl_s: retention_ttl_s(self.retention),
            key: key.to_string(),
            revision: tenure.revision,
            lease: tenure.lease.id,
            timeout: self.conn.timeout(),
            pending: Arc::clone(&self.pending),
            not_before: None,
        }
    }
}

/// A holder's record of its own tenure's end; see [`Core::after_loss`].
pub(super) struct AfterLoss {
    client: Client,
    layout: Layout,
    retention_ttl_s: i64,
    key: String,
    revision: i64,
    lease: i64,
    timeout: Duration,
    pending: Pending,
    /// The key cannot go before this (the lease's bound when the holder
    /// gave the claim up): the look lasts the timeout from then.
    not_before: Option<std::time::Instant>,
}

impl AfterLoss {
    /// Look from `t` on: a holder that gives its claim up ahead of the
    /// lease's end (to stop its command in time) knows the key stays until
    /// then at least.
    pub fn not_before(mut self, t: std::time::Instant) -> AfterLoss {
        self.not_before = Some(t);
        self
    }

    /// Look, on the store's runtime and for at most the store's timeout,
    /// for this tenure's key to be gone, and record its end if no one has.
    /// The store's drop waits for it, so a `run` that stops right after
    /// still leaves the record: call it before the loss is made known.
    /// Call from a task on the store's runtime.
    pub fn start(self) {
        let pending = Arc::clone(&self.pending);
        let task = tokio::spawn(self.run());
        let registered = pending.lock().map(|mut p| {
            p.retain(|t| !t.is_finished());
            p.push(task);
        });
        drop(registered);
    }

    async fn run(mut self) {
        let from = self
            .not_before
            .map_or_else(tokio::time::Instant::now, tokio::time::Instant::from_std)
            .max(tokio::time::Instant::now());
        let deadline = from + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return;
            }
            if let Ok(Ok(true)) = tokio::time::timeout(left, self.once()).await {
                return;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            tokio::time::sleep(LOOK_AGAIN.min(left)).await;
        }
    }

    /// One look. True when there is nothing more to do: recorded, or the
    /// tenure goes on under another lease (a renew or a re-acquire from
    /// elsewhere).
    async fn once(&mut self) -> Result<bool, etcd_client::Error> {
        let ck = self.layout.claim(&self.key);
        let open = self.layout.open(&self.key);
        let read = Txn::new().and_then([TxnOp::get(ck, None), TxnOp::get(open, None)]);
        let resp = self.client.txn(read).await?;
        let mut got = resp.op_responses().into_iter().map(|op| match op {
            TxnOpResponse::Get(mut g) => g.take_kvs().into_iter().next(),
            _ => None,
        });
        let (claim, open) = (got.next().flatten(), got.next().flatten());
        if let Some(c) = claim.filter(|c| c.create_revision() == self.revision) {
            // Still this tenure's key: on our lease, it has not run out yet
            // (etcd unreachable, or restarted and counting the TTL afresh);
            // on another, the tenure goes on.
            return Ok(c.lease() != self.lease);
        }
        let gone = open
            .filter(|o| o.mod_revision() == self.revision)
            .and_then(|o| Gone::of_open(&self.layout, &o))
            .unwrap_or_else(|| Gone {
                key: self.key.clone(),
                revision: self.revision,
                lease: self.lease,
                fields: event_fields_unknown(&self.key),
            });
        let lease = self.layout.retention_lease(now_ms());
        let txn = end_txn(&self.layout, &gone, lease);
        match self.client.txn(txn.clone()).await {
            Err(e) if lease_not_found(&e.to_string()) => {
                let ttl = self.retention_ttl_s;
                let opts = LeaseGrantOptions::new().with_id(lease);
                match self.client.lease_grant(ttl, Some(opts)).await {
                    Err(e) if !lease_exists(&e.to_string()) => return Err(e),
                    _ => {}
                }
                self.client.txn(txn).await?;
            }
            other => {
                other?;
            }
        }
        Ok(true)
    }
}
