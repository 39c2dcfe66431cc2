//! The verbs as etcd transactions.
//!
//! acquire is one `create_revision == 0` transaction that puts the record
//! (on its own lease) and its event together. release, renew and
//! force-release read the claim, then act in a transaction that compares the
//! `mod_revision` they read: if anyone touched the key in between, nothing
//! happens and the verb starts over from a fresh read. Never a blind delete.

use super::expiry::{open_close, open_put};
use super::Core;
use crate::claims::audit::force_released_fields;
use crate::claims::{acquired_data, force_refusal, new_record, ParseError};
use crate::claims::{
    now_ms, validate_inputs, AcquireKind, AcquireOpts, AcquireOutcome, ClaimError, ClaimRecord,
    ClaimState, ForceOpts, ForceOutcome, NoRenew, ReleaseOutcome, RenewOutcome, MAX_TTL_MS,
    MIN_TTL_MS,
};
use crate::events::EventKind;
use crate::store::{Fenced, LeaseInfo, StoreError, Tenure};
use etcd_client::{
    Compare, CompareOp, KeyValue, PutOptions, Txn, TxnOp, TxnOpResponse, TxnResponse,
};
use serde_json::Value;
use std::path::PathBuf;

/// Each retry follows a peer's successful write to the same key, so
/// running out means pathological churn; reported as contention.
const MAX_ATTEMPTS: usize = 5;

impl Core {
    pub(super) fn acquire_claim(
        &self,
        key: &str,
        holder: &str,
        opts: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        validate_inputs(key, holder, opts.ttl_ms)?;
        let ttl_ms = opts.ttl_ms.ok_or_else(ttl_required)?;
        if let Some(pid) = opts.pid.filter(|p| *p == 0 || *p > i32::MAX as u32) {
            return Err(ClaimError::BadPid(pid).into());
        }
        let ck = self.layout.claim(key);
        let open = self.layout.open(key);
        let ttl_s = ttl_secs(ttl_ms);
        for _ in 0..MAX_ATTEMPTS {
            let rec = new_record(key, holder, opts);
            let yaml = rec.to_lockfile()?;
            let lease = self.lease_for(ttl_s)?;
            let data = acquired_data(&rec);
            // A new tenure begins only where no earlier one is still open:
            // one that ended with nobody recording it is recorded first.
            let resp = self.txn_with_events(|ev| {
                Txn::new()
                    .when([
                        Compare::create_revision(ck.clone(), CompareOp::Equal, 0),
                        Compare::create_revision(open.clone(), CompareOp::Equal, 0),
                    ])
                    .and_then([
                        put_on_lease(&ck, &yaml, lease),
                        open_put(&self.layout, &rec, lease),
                        self.event_op(ev, EventKind::Acquired, data.clone()),
                    ])
                    .or_else([TxnOp::get(ck.clone(), None), TxnOp::get(open.clone(), None)])
            });
            let resp = match resp {
                Ok(r) => r,
                Err(e) => {
                    self.revoke_quietly(lease);
                    return Err(e);
                }
            };
            if resp.succeeded() {
                // The key was created by this very transaction, so its
                // create_revision is the transaction's revision.
                let at = revision_of(&resp);
                let seen = Seen {
                    create: at,
                    modified: at,
                    lease,
                };
                self.remember(&ck, &rec, seen, ttl_s);
                return Ok(acquired(
                    rec,
                    AcquireKind::Fresh,
                    tenure(at, lease, ttl_s, ttl_s),
                ));
            }
            let (claim, opened) = got_kvs(&resp);
            if let Some(opened) = &opened {
                if self.settle_open(opened, claim.as_ref())? {
                    self.spare(lease, ttl_s);
                    continue;
                }
            }
            let Some(kv) = claim else {
                // Released between the compare and the read: try again.
                self.spare(lease, ttl_s);
                continue;
            };
            let existing = match ClaimRecord::from_bytes(kv.value()) {
                Ok(r) => r,
                Err(e) => {
                    self.spare(lease, ttl_s);
                    return Err(parse_error(&ck, e).into());
                }
            };
            // Only `opts.adopt` decides which claim of the same holder is
            // continued. `run` and `acquire --wait` continue none made by
            // another process: a holder told its claim was lost (the lease
            // unconfirmed past its TTL) may find etcd back with that lease
            // alive, and its restarted successor must begin a new tenure,
            // with a new revision, once that one has run out.
            if !opts.adopts(&existing, holder) {
                self.spare(lease, ttl_s);
                return Ok(Fenced {
                    outcome: AcquireOutcome::HeldByOther {
                        holder: existing.holder,
                        pid: existing.pid,
                        host: existing.host,
                    },
                    tenure: None,
                });
            }
            // The same holder again: the seed's idempotent re-acquire, a
            // rewrite of the record (metadata replaced) in the same tenure.
            let mut data = rec.event_fields();
            data.insert(
                "previous_acquired_at".into(),
                Value::from(existing.acquired_at),
            );
            let resp = self.txn_with_events(|ev| {
                Txn::new()
                    .when([unchanged(&ck, kv.mod_revision())])
                    .and_then([
                        put_on_lease(&ck, &yaml, lease),
                        self.event_op(ev, EventKind::Reacquired, data.clone()),
                    ])
            })?;
            if resp.succeeded() {
                // The same lease when our own first try did land but its
                // answer was lost: that lease now carries the claim.
                if kv.lease() != lease {
                    self.let_go(kv.lease());
                }
                let seen = Seen {
                    create: kv.create_revision(),
                    modified: revision_of(&resp),
                    lease,
                };
                self.remember(&ck, &rec, seen, ttl_s);
                let tenure = tenure(kv.create_revision(), lease, ttl_s, ttl_s);
                return Ok(acquired(rec, AcquireKind::Reacquired, tenure));
            }
            self.spare(lease, ttl_s);
        }
        Err(contention(key))
    }

    pub(super) fn release_fenced(
        &self,
        key: &str,
        holder: &str,
        fence: Option<i64>,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        non_empty(key, holder)?;
        let ck = self.layout.claim(key);
        // This process wrote the key last (its own acquire or renew): try
        // ending the tenure straight away. The compare on the revision we
        // wrote at makes it safe; if anyone touched the key since, it fails
        // and we read, as any other caller would.
        if let Some(mine) = self.remembered(&ck) {
            let ours = mine.record.holder == holder && fence.is_none_or(|f| f == mine.seen.create);
            if ours {
                if let Some(done) =
                    self.end_tenure(key, &ck, &mine.record, mine.seen, Some(mine.ttl_s))?
                {
                    return Ok(done);
                }
            }
        }
        for _ in 0..MAX_ATTEMPTS {
            let Some(kv) = self.get_claim(&ck)? else {
                return Ok(Fenced::plain(ReleaseOutcome::Absent));
            };
            let rec = match ClaimRecord::from_bytes(kv.value()) {
                Ok(r) => r,
                Err(ParseError::Invalid(reason)) => {
                    return Ok(Fenced::plain(ReleaseOutcome::CorruptedLeft { reason }))
                }
                // It may be ours: say so rather than report it left as corrupted.
                Err(e @ ParseError::TooCostly(_)) => return Err(parse_error(&ck, e).into()),
            };
            if rec.holder != holder || fence.is_some_and(|f| f != kv.create_revision()) {
                return Ok(Fenced::plain(ReleaseOutcome::NotHeld {
                    holder: rec.holder,
                }));
            }
            #[cfg(test)]
            crate::fault::at(crate::fault::Point::EtcdGuardedWrite, ck.as_ref());
            if let Some(done) = self.end_tenure(key, &ck, &rec, Seen::of(&kv), None)? {
                return Ok(done);
            }
        }
        Err(contention(key))
    }

    pub(super) fn renew_fenced(
        &self,
        key: &str,
        holder: &str,
        ttl_ms: i64,
        fence: Option<i64>,
        operator: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        non_empty(key, holder)?;
        if ttl_ms <= 0 {
            return Err(ClaimError::TtlNotPositive.into());
        }
        if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl_ms) {
            return Err(ClaimError::TtlOutOfRange(ttl_ms).into());
        }
        let (ck, kept) = (self.layout.claim(key), self.layout.kept(key));
        let ttl_s = ttl_secs(ttl_ms);
        let not = |why| Ok(Fenced::plain(RenewOutcome::NotRenewed(why)));
        for _ in 0..MAX_ATTEMPTS {
            let (claim, mark) = self.read_pair(&ck, &kept)?;
            let Some(kv) = claim else {
                return not(NoRenew::Absent);
            };
            let Ok(mut rec) = ClaimRecord::from_bytes(kv.value()) else {
                return not(NoRenew::Corrupted);
            };
            if rec.holder != holder || fence.is_some_and(|f| f != kv.create_revision()) {
                return not(NoRenew::OtherHolder);
            }
            let now = now_ms();
            let previous = rec.expires_at.unwrap_or(now);
            rec.expires_at = Some(now + ttl_ms);
            let yaml = rec.to_lockfile()?;
            let mut data = rec.event_fields();
            data.insert("previous_expires_at".into(), Value::from(previous));
            data.insert("ttl_ms".into(), Value::from(ttl_ms));
            if let Some(op) = operator {
                data.insert("operator".into(), Value::from(op));
            }
            let renewed = |lease, ttl_s| {
                Ok(Fenced {
                    outcome: RenewOutcome::Renewed {
                        record: rec.clone(),
                        previous_expires_at: previous,
                    },
                    tenure: Some(tenure(kv.create_revision(), lease, ttl_s, ttl_s)),
                })
            };
            // A lease its holder keeps alive (its `kept/` mark is on it), or
            // one carrying keys besides the claim (a session's), is not ours
            // to take the claim off: moving the claim would leave the holder
            // keeping a lease with no claim on it, and its claim on a lease
            // nobody keeps. The claim stays on it, refreshed; the record
            // says the deadline asked for, and the lease lasts as long as
            // its keeper keeps it (and its TTL after that).
            let held_by_keeper = mark.as_ref().is_some_and(|m| m.lease() == kv.lease());
            if held_by_keeper || self.carries_more(kv.lease(), &[&ck, &kept])? {
                if let Some(granted) = self.refresh(kv.lease())? {
                    let resp = self.txn_with_events(|ev| {
                        Txn::new()
                            .when([unchanged(&ck, kv.mod_revision())])
                            .and_then([
                                put_on_lease(&ck, &yaml, kv.lease()),
                                self.event_op(ev, EventKind::Renewed, data.clone()),
                            ])
                    })?;
                    if resp.succeeded() {
                        // Not ours to reuse once released: the next release
                        // reads the key, and gives the lease up only bare.
                        self.forget(&ck);
                        return renewed(kv.lease(), granted);
                    }
                    continue;
                }
                // The lease is gone (the key goes with it any moment):
                // nothing keeps it, so the claim moves like any other.
            }
            // A fresh lease of the new TTL: a lease's TTL is fixed when it is
            // granted, and the record's deadline must match the lease's. The
            // transaction also finds the `kept/` mark as read, so a holder
            // that began keeping the lease meanwhile is never left behind.
            let lease = self.grant(ttl_s)?;
            let mark_rev = mark.as_ref().map_or(0, KeyValue::mod_revision);
            let resp = self.txn_with_events(|ev| {
                Txn::new()
                    .when([
                        unchanged(&ck, kv.mod_revision()),
                        unchanged(&kept, mark_rev),
                    ])
                    .and_then([
                        put_on_lease(&ck, &yaml, lease),
                        self.event_op(ev, EventKind::Renewed, data.clone()),
                    ])
            });
            match resp {
                Ok(r) if r.succeeded() => {
                    self.let_go(kv.lease());
                    let seen = Seen {
                        create: kv.create_revision(),
                        modified: revision_of(&r),
                        lease,
                    };
                    self.remember(&ck, &rec, seen, ttl_s);
                    return renewed(lease, ttl_s);
                }
                Ok(_) => self.revoke_quietly(lease),
                Err(e) => {
                    self.revoke_quietly(lease);
                    return Err(e);
                }
            }
        }
        Err(contention(key))
    }

    pub(super) fn force_release_claim(
        &self,
        key: &str,
        opts: &ForceOpts,
    ) -> Result<Fenced<ForceOutcome>, StoreError> {
        if key.is_empty() {
            return Err(ClaimError::EmptyKey.into());
        }
        let ck = self.layout.claim(key);
        let refuse = |s: String| Ok(Fenced::plain(ForceOutcome::Refused(s)));
        let Some(kv) = self.get_claim(&ck)? else {
            return refuse(format!("no claim for {key:?}"));
        };
        let (previous, state, why) = match ClaimRecord::from_bytes(kv.value()) {
            Ok(rec) => {
                let (state, _, why) = self.judge(&rec);
                (Some(rec), state, why)
            }
            Err(ParseError::Invalid(reason)) => (None, ClaimState::Corrupted, reason),
            Err(ParseError::TooCostly(reason)) => (None, ClaimState::Unreadable, reason),
        };
        if let Some(why_not) = force_refusal(previous.as_ref(), state, &why, opts, "record") {
            return refuse(why_not);
        }
        let archived_to = self.layout.expired(key, now_ms());
        let mut data = force_released_fields(
            key,
            previous.as_ref(),
            opts.operator.as_deref(),
            state.as_str(),
            &archived_to,
        );
        data.insert("revision".into(), Value::from(kv.create_revision()));
        let marker = self.layout.ended(key, kv.create_revision());
        #[cfg(test)]
        crate::fault::at(crate::fault::Point::EtcdGuardedWrite, ck.as_ref());
        let resp = self.txn_with_events(|ev| {
            Txn::new()
                .when([unchanged(&ck, kv.mod_revision())])
                .and_then([
                    TxnOp::delete(ck.clone(), None),
                    TxnOp::delete(self.layout.kept(key), None),
                    // The archive is forensic: kept as long as the events are.
                    TxnOp::put(
                        archived_to.clone(),
                        kv.value().to_vec(),
                        Some(PutOptions::new().with_lease(ev)),
                    ),
                    self.end_marker_op(&marker, ev),
                    open_close(&self.layout, key, kv.create_revision()),
                    self.event_op(ev, EventKind::ForceReleased, data.clone()),
                ])
        })?;
        if !resp.succeeded() {
            return refuse(format!(
                "the claim on {key:?} changed since it was read (released or re-acquired?); nothing done"
            ));
        }
        self.forget(&ck);
        self.let_go(kv.lease());
        // The lease as the record shows it when read: the lease itself may
        // be revoked now, and asking etcd for its TTL first would cost a call.
        let held = previous.as_ref().and_then(|r| {
            let until = r.expires_at?;
            Some(tenure(
                kv.create_revision(),
                kv.lease(),
                (until - r.acquired_at) / 1000,
                ((until - now_ms()) / 1000).max(0),
            ))
        });
        Ok(Fenced {
            outcome: ForceOutcome::Archived {
                archived_to: PathBuf::from(archived_to),
                previous,
                previous_state: state,
            },
            tenure: held,
        })
    }

    /// Delete the key as `seen`, with its end marker and `claim_released`,
    /// in one transaction. None when the key moved on since `seen`.
    fn end_tenure(
        &self,
        key: &str,
        ck: &str,
        rec: &ClaimRecord,
        seen: Seen,
        lease_ttl: Option<i64>,
    ) -> Result<Option<Fenced<ReleaseOutcome>>, StoreError> {
        let held_ms = (now_ms() - rec.acquired_at).max(0);
        let mut data = rec.event_fields();
        data.insert("duration_held_ms".into(), Value::from(held_ms));
        data.insert("revision".into(), Value::from(seen.create));
        let marker = self.layout.ended(key, seen.create);
        let resp = self.txn_with_events(|ev| {
            Txn::new().when([unchanged(ck, seen.modified)]).and_then([
                TxnOp::delete(ck, None),
                TxnOp::delete(self.layout.kept(key), None),
                self.end_marker_op(&marker, ev),
                open_close(&self.layout, key, seen.create),
                self.event_op(ev, EventKind::Released, data.clone()),
            ])
        })?;
        self.forget(ck);
        if !resp.succeeded() {
            return Ok(None);
        }
        // The key is gone. A lease this process granted for it serves its
        // next acquire; any other is revoked once nothing else hangs on it
        // (left alone, a bare one would idle until its TTL and show up in
        // doctor as a lease with no keys).
        match lease_ttl {
            Some(ttl_s) => self.spare(seen.lease, ttl_s),
            None => self.let_go(seen.lease),
        }
        Ok(Some(Fenced {
            outcome: ReleaseOutcome::Released {
                record: rec.clone(),
                held_ms,
            },
            tenure: Some(tenure(seen.create, seen.lease, 0, 0)),
        }))
    }

    fn remember(&self, ck: &str, record: &ClaimRecord, seen: Seen, ttl_s: i64) {
        if let Ok(mut held) = self.held.lock() {
            held.insert(
                ck.to_string(),
                Held {
                    record: record.clone(),
                    seen,
                    ttl_s,
                },
            );
        }
    }

    fn remembered(&self, ck: &str) -> Option<Held> {
        self.held.lock().ok()?.get(ck).cloned()
    }

    fn forget(&self, ck: &str) {
        if let Ok(mut held) = self.held.lock() {
            held.remove(ck);
        }
    }

    /// Two keys' key-values, read at one revision.
    fn read_pair(
        &self,
        a: &str,
        b: &str,
    ) -> Result<(Option<KeyValue>, Option<KeyValue>), StoreError> {
        let read = Txn::new().and_then([TxnOp::get(a, None), TxnOp::get(b, None)]);
        let resp = self.conn.call(|mut c| {
            let read = read.clone();
            async move { c.txn(read).await }
        })?;
        Ok(got_kvs(&resp))
    }

    /// The claim's key-value, if the key exists.
    pub(super) fn get_claim(&self, ck: &str) -> Result<Option<KeyValue>, StoreError> {
        let ck = ck.to_string();
        let mut resp = self.conn.call(|mut c| {
            let ck = ck.clone();
            async move { c.get(ck, None).await }
        })?;
        Ok(resp.take_kvs().into_iter().next())
    }
}

fn non_empty(key: &str, holder: &str) -> Result<(), ClaimError> {
    if key.is_empty() {
        return Err(ClaimError::EmptyKey);
    }
    if holder.is_empty() {
        return Err(ClaimError::EmptyHolder);
    }
    Ok(())
}

fn contention(key: &str) -> StoreError {
    ClaimError::Contention {
        attempts: MAX_ATTEMPTS,
        key: key.to_string(),
    }
    .into()
}

/// Whole seconds, rounded up: a lease must never end before the record's
/// deadline says it does.
fn ttl_secs(ttl_ms: i64) -> i64 {
    (ttl_ms + 999) / 1000
}

/// The compare every mutate makes: the key is exactly as we read it.
fn unchanged(ck: &str, mod_revision: i64) -> Compare {
    Compare::mod_revision(ck, CompareOp::Equal, mod_revision)
}

/// The revisions and lease of a key as someone read or wrote it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    create: i64,
    modified: i64,
    lease: i64,
}

impl Seen {
    fn of(kv: &KeyValue) -> Seen {
        Seen {
            create: kv.create_revision(),
            modified: kv.mod_revision(),
            lease: kv.lease(),
        }
    }
}

/// A key this process wrote last, as it wrote it.
#[derive(Debug, Clone)]
pub(super) struct Held {
    record: ClaimRecord,
    seen: Seen,
    /// The TTL its lease was granted with, so the lease can be reused.
    ttl_s: i64,
}

fn put_on_lease(ck: &str, yaml: &str, lease: i64) -> TxnOp {
    TxnOp::put(ck, yaml, Some(PutOptions::new().with_lease(lease)))
}

fn revision_of(resp: &TxnResponse) -> i64 {
    resp.header().map(|h| h.revision()).unwrap_or(0)
}

/// The two keys a transaction's gets read (the acquire's failure branch:
/// the claim key and its open-tenure entry).
fn got_kvs(resp: &TxnResponse) -> (Option<KeyValue>, Option<KeyValue>) {
    let mut got = resp.op_responses().into_iter().map(|op| match op {
        TxnOpResponse::Get(mut g) => g.take_kvs().into_iter().next(),
        _ => None,
    });
    (got.next().flatten(), got.next().flatten())
}

/// Claims on etcd live only as long as their lease: there is no pid
/// liveness across machines, so a claim without a TTL would be forever.
pub(super) fn ttl_required() -> StoreError {
    StoreError::Refused(TTL_REQUIRED.into())
}

/// [`ttl_required`]'s words, which `run` says before it starts anything.
pub(super) const TTL_REQUIRED: &str =
    "a claim on etcd needs a TTL (--ttl): its lease is the only thing that ends it \
     if the holder dies";

pub(super) fn tenure(revision: i64, lease: i64, ttl_s: i64, remaining_s: i64) -> Tenure {
    Tenure {
        revision,
        lease: LeaseInfo {
            id: lease,
            ttl_s,
            remaining_s,
        },
    }
}

fn acquired(record: ClaimRecord, kind: AcquireKind, tenure: Tenure) -> Fenced<AcquireOutcome> {
    Fenced {
        outcome: AcquireOutcome::Acquired { record, kind },
        tenure: Some(tenure),
    }
}

/// The error for a value that could not be read as a record: corrupted when
/// no reader would accept it, unreadable when only its cost refused it.
fn parse_error(ck: &str, e: ParseError) -> ClaimError {
    let path = PathBuf::from(ck);
    match e {
        ParseError::Invalid(reason) => ClaimError::Corrupted { path, reason },
        ParseError::TooCostly(reason) => ClaimError::Unreadable { path, reason },
    }
}
