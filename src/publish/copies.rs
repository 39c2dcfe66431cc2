//! A root's copy in etcd: its claims and hazards written only where what a
//! reader would see differs, re-synced whole after a (re)connect, in
//! transactions of [`BATCH`] writes.

use super::{Publisher, BATCH};
use crate::claims::census::Judged;
use crate::claims::hazard::UNREADABLE;
use crate::claims::{ClaimState, Status};
use crate::store::StoreError;
use etcd_client::{PutOptions, Txn, TxnOp};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};

impl Publisher {
    /// Re-sync root `i` after a (re)connect: what etcd holds for it is read
    /// (keys on another lease count as absent, since that lease is about to
    /// end), then everything the mirror holds is written where it differs.
    pub(super) fn sync_root(&mut self, i: usize, now: i64) -> Result<(), StoreError> {
        let lease = self.lease.unwrap_or(0);
        let r = &self.roots[i];
        let (kvs, _) = self.core.range_all(&r.place.claims())?;
        let mut held = HashMap::new();
        for kv in &kvs {
            let Some(key) = r.place.key_of_claim(kv.key()) else {
                continue;
            };
            match serde_json::from_slice::<Value>(kv.value()) {
                Ok(v) if kv.lease() == lease => {
                    held.insert(key, fingerprint(&v));
                }
                // Keys on an old lease, or unreadable, are re-put or
                // deleted below.
                _ => {
                    held.insert(key, String::from("?"));
                }
            }
        }
        // A last known copy with no claim beside it (the claim went with
        // an old lease) is re-put or deleted below, like a claim of an old
        // lease: the two are written together from here on.
        let (known, _) = self.core.range_all(&r.place.known())?;
        for kv in &known {
            if let Some(key) = r.place.key_of_known(kv.key()) {
                held.entry(key).or_insert_with(|| String::from("?"));
            }
        }
        let r = &mut self.roots[i];
        r.claims = held;
        // Written again on this lease whatever it was.
        r.hazards = None;
        self.start_events(i)?;
        // A mirror that never listed lists now; one that did is current.
        let r = &mut self.roots[i];
        if r.mirror.is_empty() {
            r.mirror.relist_soon();
        }
        self.publish_changes(i, now)?;
        self.publish_all(i)
    }

    /// Bring root `i`'s mirror up to date and write what a reader would see
    /// differently: the claims that changed, and the hazards when they did.
    pub(super) fn publish_changes(&mut self, i: usize, now: i64) -> Result<(), StoreError> {
        let r = &mut self.roots[i];
        // A store that cannot be read now: its keys wait for the next round.
        let _ = r.mirror.settle(&r.store, now);
        let Some(delta) = r.mirror.take_delta() else {
            return Ok(());
        };
        if delta.tally.is_some() {
            self.publish_unreadable(i)?;
            self.publish_hazards(i)?;
        }
        if self.roots[i].unreadable.is_some() {
            // Its claims are unknown: what was published stays as it was
            // (readers do not show it), and nothing is published as gone.
            return Ok(());
        }
        if delta.whole.is_some() {
            return self.publish_all(i);
        }
        let mut ops = Vec::new();
        for row in delta.rows {
            let s = &*row.status;
            let item = (s.state != ClaimState::Free).then(|| s.clone());
            ops.extend(self.plan_claim(i, &s.key, item));
        }
        self.apply(ops)
    }

    /// Write every claim of root `i`'s mirror that differs from etcd, and
    /// delete what etcd holds that the mirror does not.
    pub(super) fn publish_all(&mut self, i: usize) -> Result<(), StoreError> {
        if self.roots[i].unreadable.is_some() {
            return Ok(());
        }
        let rows: Vec<Status> = self.roots[i].mirror.rows().cloned().collect();
        let mut seen = BTreeSet::new();
        let mut ops = Vec::new();
        for s in rows {
            seen.insert(s.key.clone());
            ops.extend(self.plan_claim(i, &s.key.clone(), Some(s)));
        }
        let gone: Vec<String> = self.roots[i]
            .claims
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            ops.extend(self.plan_claim(i, &key, None));
        }
        self.publish_hazards(i)?;
        self.apply(ops)
    }

    /// Say in root `i`'s owner key whether its claims dir can be listed,
    /// when that changed.
    pub(super) fn publish_unreadable(&mut self, i: usize) -> Result<(), StoreError> {
        let dir = self.roots[i].root.claims_dir();
        let unreadable = self.roots[i]
            .mirror
            .tally()
            .hazards
            .iter()
            .find(|h| h.kind == UNREADABLE && h.path() == dir)
            .map(|h| h.detail.clone());
        if unreadable != self.roots[i].unreadable {
            let me = self.owner(self.lease.unwrap_or(0), unreadable.clone(), i);
            let id = self.roots[i].info.id.clone();
            self.core.put_root_owner(&self.opts.machine_id, &id, &me)?;
            self.roots[i].unreadable = unreadable;
        }
        Ok(())
    }

    /// Write root `i`'s hazards if they differ from what etcd holds.
    pub(super) fn publish_hazards(&mut self, i: usize) -> Result<(), StoreError> {
        let tally = self.roots[i].mirror.tally();
        let hazards = serde_json::to_string(&*tally.hazards).unwrap_or_default();
        if self.roots[i].hazards.as_deref() != Some(hazards.as_str()) {
            self.put(&self.roots[i].place.hazards(), &hazards)?;
            self.stats.hazard_writes += 1;
            self.roots[i].hazards = Some(hazards);
        }
        Ok(())
    }

    /// The writes that make etcd hold `item` for `key`, if any are needed:
    /// the claim on the lease, and its last known twin without one (what
    /// readers show once this host is gone), together. What etcd holds is
    /// noted as if it were done (a failed write ends in a reconnect, whose
    /// re-sync reads etcd again).
    pub(super) fn plan_claim(
        &mut self,
        i: usize,
        key: &str,
        item: Option<Status>,
    ) -> Option<[TxnOp; 2]> {
        let lease = self.lease.unwrap_or(0);
        let r = &mut self.roots[i];
        let (ek, kept) = (r.place.claim(key), r.place.known_claim(key));
        match item {
            Some(s) => {
                // As the host's own `list --json` prints it, hazards included.
                let v = serde_json::to_value(Judged::lockfile(&s)).unwrap_or(Value::Null);
                let fp = fingerprint(&v);
                if r.claims.get(key) == Some(&fp) {
                    return None;
                }
                r.claims.insert(key.to_string(), fp);
                let opts = PutOptions::new().with_lease(lease);
                let text = v.to_string();
                Some([
                    TxnOp::put(ek, text.clone(), Some(opts)),
                    TxnOp::put(kept, text, None),
                ])
            }
            None => {
                r.claims.remove(key)?;
                Some([TxnOp::delete(ek, None), TxnOp::delete(kept, None)])
            }
        }
    }

    /// Run claim writes, [`BATCH`] operations to a transaction: one change
    /// is one transaction (one store revision), and a re-sync of thousands
    /// of keys takes tens of round trips.
    pub(super) fn apply(&mut self, writes: Vec<[TxnOp; 2]>) -> Result<(), StoreError> {
        for chunk in writes.chunks(BATCH / 2) {
            let txn = Txn::new().and_then(chunk.iter().flatten().cloned().collect::<Vec<_>>());
            self.core.conn.call(|mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })?;
            self.stats.claim_writes += chunk.len() as u64;
        }
        Ok(())
    }
}

/// What a reader of the mirror sees of one item, without the `why` words
/// (they age with the clock: "TTL expired 3m ago").
fn fingerprint(item: &Value) -> String {
    json!([item.get("state"), item.get("record"), item.get("error")]).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_ignores_the_ageing_why_words_but_not_the_state_or_record() {
        let a = json!({"key": "k", "state": "live", "record": {"pid": 1}, "why": "TTL expires in 5m", "error": null});
        let mut b = a.clone();
        b["why"] = json!("TTL expires in 4m");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        b["state"] = json!("suspect");
        assert_ne!(fingerprint(&a), fingerprint(&b));
        let mut c = a.clone();
        c["record"]["pid"] = json!(2);
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }
}
