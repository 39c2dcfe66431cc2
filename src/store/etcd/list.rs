//! `status` and `list` over etcd, and the states a present key can be in.
//!
//! An expired lease leaves no key, so a present claim is `live` unless its
//! record names this machine and the pid there is gone (`suspect`), or its
//! value does not parse (`corrupted`). `stale` never appears here: expiry is
//! the `claim_expired` event.

use super::doctor::CLAIM_WITHOUT_LEASE;
use super::layout::{key_after, range_end};
use super::verbs::tenure;
use super::Core;
use crate::claims::Hazard;
use crate::claims::ParseError;
use crate::claims::{
    now_ms, process_create_time_ms, ClaimRecord, ClaimState, Locality, Status, Sweep,
};
use crate::claims::{ItemRules, Loc};
use crate::store::{Cursor, Fenced, ListEnd, MemberListing, StoreError, Tenure};
use etcd_client::{GetOptions, KeyValue};
use std::collections::HashMap;
use std::path::PathBuf;

/// Keys per range request: big enough that 100 000 claims take 100 round
/// trips, small enough that one page stays far below gRPC's 4 MiB limit.
pub(super) const PAGE: i64 = 1000;
/// Up to this many distinct leases, `list` asks etcd for each one's time to
/// live (concurrently); beyond it, the record's own deadline stands in, so a
/// listing of a huge store costs its range reads and nothing more.
pub(super) const LEASE_LOOKUPS_MAX: usize = 1000;
/// Keys per range request when only keys are read: a key and its metadata
/// are a few tens of bytes, so ten times a page of values is still far
/// below the limit, in a tenth of the round trips.
const KEY_PAGE: i64 = 10_000;

impl Core {
    pub(super) fn status_of(&self, key: &str) -> Result<Fenced<Status>, StoreError> {
        let ck = self.layout.claim(key);
        let Some(kv) = self.get_claim(&ck)? else {
            return Ok(Fenced::plain(free(key, &ck)));
        };
        let ttls = self.lease_ttls(vec![kv.lease()])?;
        let (status, tenure) = self.item(key, &ck, &kv, &ttls, &mut HashMap::new());
        Ok(Fenced {
            outcome: status,
            tenure: Some(tenure),
        })
    }

    /// The listing of the first `limit` claims in key order (every claim
    /// when None): a dashboard's first screen need not wait for 100 pages.
    pub(super) fn list_claims_upto(
        &self,
        limit: Option<usize>,
    ) -> Result<MemberListing, StoreError> {
        // Each page is judged as it arrives and its raw values dropped, so a
        // listing of 100 000 claims never holds them all twice; claims and
        // tenures are kept apart from the start and sorted in place, so
        // they are never copied into a second pair of vectors either.
        let mut claims: Vec<Status> = Vec::new();
        let mut tenures: Vec<Option<Tenure>> = Vec::new();
        let mut leases: Vec<i64> = Vec::new();
        let mut store_hazards = Vec::new();
        let mut pids = HashMap::new();
        let no_ttls = HashMap::new();
        let page = limit.map_or(PAGE, |n| (n as i64).min(PAGE));
        let at = self.for_each_page(&self.layout.claims(), page, |page| {
            for kv in &page {
                let Some((key, ck)) = self.claim_of(kv, &mut store_hazards) else {
                    continue;
                };
                leases.push(kv.lease());
                let (s, t) = self.item(&key, &ck, kv, &no_ttls, &mut pids);
                claims.push(s);
                tenures.push(Some(t));
            }
            limit.is_none_or(|n| claims.len() < n)
        })?;
        // Few enough leases: ask etcd for each one's time left, in place of
        // the record's deadline the rows were judged with.
        let mut distinct: Vec<i64> = leases.iter().copied().filter(|l| *l != 0).collect();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() <= LEASE_LOOKUPS_MAX {
            let ttls = self.lease_ttls(distinct)?;
            for (tenure, lease) in tenures.iter_mut().flatten().zip(&leases) {
                if let Some((ttl_s, remaining_s)) = ttls.get(lease) {
                    tenure.lease.ttl_s = *ttl_s;
                    tenure.lease.remaining_s = *remaining_s;
                }
            }
        }
        drop(leases);
        sort_together(&mut claims, &mut tenures);
        if limit.is_none() {
            // Best effort: a reader without write access still gets its
            // listing, and the next acquire or watcher records the end.
            let _ = self.settle_opens(at, &carried(&claims, &tenures));
        }
        // `foreign_machine` does not apply: claims from other machines are
        // the point of etcd.
        let all = crate::claims::census(&claims, Vec::new(), |_| ItemRules::StoreKey);
        Ok(MemberListing {
            at: Default::default(),
            rules: ItemRules::StoreKey,
            sweep: Sweep {
                root: PathBuf::from(&self.url),
                claims,
                counts: all.counts,
                hazards: all.hazards,
            },
            tenures,
            store_hazards,
            stamps: Vec::new(),
            kept: Vec::new(),
            // The feed resumes right after the revision it was read at.
            end: ListEnd {
                at: Some(Cursor::of_u64(u64::try_from(at).unwrap_or(0))),
                complete: limit.is_none(),
            },
        })
    }

    /// Every key under `prefix`, paged, and the revision they were read at.
    pub(crate) fn range_all(&self, prefix: &str) -> Result<(Vec<KeyValue>, i64), StoreError> {
        let mut kvs: Vec<KeyValue> = Vec::new();
        let at = self.for_each_page(prefix, PAGE, |page| {
            kvs.extend(page);
            true
        })?;
        Ok((kvs, at))
    }

    /// Hand every page of `page` keys under `prefix` to `each` until it
    /// answers false or the keys run out; the revision they were read at.
    /// Every page reads at the first page's revision: one consistent
    /// snapshot, however the store moves while we page.
    pub(super) fn for_each_page(
        &self,
        prefix: &str,
        page: i64,
        each: impl FnMut(Vec<KeyValue>) -> bool,
    ) -> Result<i64, StoreError> {
        self.pages(prefix, page, 0, false, each)
    }

    /// Every key under `prefix` as of revision `at`, a page at a time, to
    /// `each` (keys and revisions only when `keys_only`).
    pub(super) fn page_through(
        &self,
        prefix: &str,
        at: i64,
        keys_only: bool,
        each: impl FnMut(Vec<KeyValue>) -> bool,
    ) -> Result<i64, StoreError> {
        self.pages(prefix, PAGE, at, keys_only, each)
    }

    /// Every key under `prefix` (no values), in pages of [`KEY_PAGE`], and
    /// the revision they were read at.
    pub(super) fn keys_through(
        &self,
        prefix: &str,
        each: impl FnMut(Vec<KeyValue>) -> bool,
    ) -> Result<i64, StoreError> {
        self.pages(prefix, KEY_PAGE, 0, true, each)
    }

    /// [`Core::for_each_page`] from revision `at` (0: the first page's).
    fn pages(
        &self,
        prefix: &str,
        page: i64,
        mut at: i64,
        keys_only: bool,
        mut each: impl FnMut(Vec<KeyValue>) -> bool,
    ) -> Result<i64, StoreError> {
        let end = range_end(prefix);
        let mut from = prefix.as_bytes().to_vec();
        loop {
            let mut opts = GetOptions::new().with_range(end.clone()).with_limit(page);
            if keys_only {
                opts = opts.with_keys_only();
            }
            if at > 0 {
                opts = opts.with_revision(at);
            }
            let start = from.clone();
            let mut resp = self.conn.call(|mut c| {
                let (start, opts) = (start.clone(), opts.clone());
                async move { c.get(start, Some(opts)).await }
            })?;
            if at == 0 {
                at = resp.header().map(|h| h.revision()).unwrap_or(0);
            }
            let more = resp.more();
            let kvs = resp.take_kvs();
            let Some(last) = kvs.last() else {
                return Ok(at);
            };
            from = key_after(last.key());
            if !each(kvs) || !more {
                return Ok(at);
            }
        }
    }

    /// The claim key and the etcd key of a listed `kv` (None: no claim's);
    /// a claim without a lease is a hazard of the store's.
    pub(super) fn claim_of(
        &self,
        kv: &KeyValue,
        store_hazards: &mut Vec<Hazard>,
    ) -> Option<(String, String)> {
        let key = self.layout.key_of_claim(kv.key())?;
        let ck = String::from_utf8_lossy(kv.key()).into_owned();
        if kv.lease() == 0 {
            store_hazards.push(Hazard::at_key(
                CLAIM_WITHOUT_LEASE,
                ck.clone(),
                "this claim has no lease, so it never expires; force-release it".into(),
            ));
        }
        Some((key, ck))
    }

    /// One present key as a status row and its tenure.
    pub(super) fn item(
        &self,
        key: &str,
        ck: &str,
        kv: &KeyValue,
        ttls: &HashMap<i64, (i64, i64)>,
        pids: &mut HashMap<i32, Option<i64>>,
    ) -> (Status, Tenure) {
        let mut s = free(key, ck);
        let mut deadline = None;
        match ClaimRecord::from_bytes(kv.value()) {
            Ok(rec) => {
                let (state, locality, why) = self.judge_with(&rec, pids);
                s.state = state;
                s.why = why;
                s.locality = Some(locality);
                deadline = rec.expires_at;
                s.record = Some(rec);
            }
            Err(ParseError::Invalid(reason)) => {
                s.state = ClaimState::Corrupted;
                s.why = "the value cannot be parsed as a claim; force-release archives it".into();
                s.error = Some(reason);
                s.head = kv.value().iter().take(256).copied().collect();
            }
            Err(ParseError::TooCostly(reason)) => {
                // Too big or costly for this reader, not proof of garbage: it
                // may be a live claim, so it reads as held, as on the file store.
                s.state = ClaimState::Unreadable;
                s.why = "the value cannot be read here, so it may be a live claim; \
                         treated as held (force-release needs --allow-live)"
                    .into();
                s.error = Some(reason);
            }
        }
        let (ttl_s, remaining_s) = ttls.get(&kv.lease()).copied().unwrap_or_else(|| {
            let left = deadline
                .map(|d| ((d - now_ms()) / 1000).max(0))
                .unwrap_or(0);
            (left, left)
        });
        (
            s,
            tenure(kv.create_revision(), kv.lease(), ttl_s, remaining_s),
        )
    }

    /// The state of a record whose key is present (its lease is running).
    pub(super) fn judge(&self, rec: &ClaimRecord) -> (ClaimState, Locality, String) {
        self.judge_with(rec, &mut HashMap::new())
    }

    /// [`Core::judge`], looking each local pid up once per `pids` cache: a
    /// listing of many claims by few workers reads `/proc` once per worker.
    fn judge_with(
        &self,
        rec: &ClaimRecord,
        pids: &mut HashMap<i32, Option<i64>>,
    ) -> (ClaimState, Locality, String) {
        let locality = self.me.locality(&rec.host, rec.machine_id.as_deref());
        if locality == Locality::Local {
            let started = *pids
                .entry(rec.pid)
                .or_insert_with(|| process_create_time_ms(rec.pid));
            match started {
                None => {
                    return (
                        ClaimState::Suspect,
                        locality,
                        format!(
                            "the lease is running but pid {} is gone on this machine",
                            rec.pid
                        ),
                    )
                }
                // Started after the claim (beyond clock slack): another
                // process now wears the holder's pid.
                Some(started) if started > rec.acquired_at + 1000 => {
                    return (
                        ClaimState::Suspect,
                        locality,
                        format!(
                            "the lease is running but pid {} was reused by a newer process",
                            rec.pid
                        ),
                    )
                }
                Some(_) => {}
            }
        }
        (ClaimState::Live, locality, lease_running(rec, now_ms()))
    }

    /// `(granted_ttl, remaining)` of each lease, asked concurrently.
    pub(super) fn lease_ttls(&self, ids: Vec<i64>) -> Result<HashMap<i64, (i64, i64)>, StoreError> {
        self.conn.call(|c| {
            let ids = ids.clone();
            async move {
                let mut set = tokio::task::JoinSet::new();
                for id in ids.into_iter().filter(|id| *id != 0) {
                    let mut c = c.clone();
                    set.spawn(async move {
                        c.lease_time_to_live(id, None)
                            .await
                            .map(|r| (id, (r.granted_ttl(), r.ttl().max(0))))
                    });
                }
                let mut out = HashMap::new();
                while let Some(done) = set.join_next().await {
                    if let Ok(Ok((id, ttl))) = done {
                        out.insert(id, ttl);
                    }
                }
                Ok(out)
            }
        })
    }
}

/// The row of a key with no claim, placed at its etcd key.
fn free(key: &str, ck: &str) -> Status {
    let place = Loc::new(0, ItemRules::StoreKey, std::path::Path::new(ck));
    Status::free(key.to_string(), place, "no claim".into())
}

/// Each claim's key and the revision its tenure began at, in key order:
/// what [`Core::settle_opens`] compares the open tenures with.
pub(super) fn carried(claims: &[Status], tenures: &[Option<Tenure>]) -> Vec<(String, Option<i64>)> {
    claims
        .iter()
        .zip(tenures)
        .map(|(s, t)| (s.key.clone(), t.map(|t| t.revision)))
        .collect()
}

/// Sort `claims` by key and `tenures` along with them, in place: the order
/// is found on indices, then carried out by following its cycles with
/// swaps, so neither vector is ever copied.
fn sort_together<T>(claims: &mut [Status], tenures: &mut [T]) {
    let mut order: Vec<usize> = (0..claims.len()).collect();
    order.sort_by(|a, b| claims[*a].key.cmp(&claims[*b].key));
    // `order[i]` is where position i's item is now; each cycle is closed
    // by swaps, and a placed position is marked by pointing at itself.
    for start in 0..order.len() {
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = at;
            if from == start {
                break;
            }
            claims.swap(at, from);
            tenures.swap(at, from);
            at = from;
        }
    }
}

/// Why a present key is live: its lease is running. A record's `expires_at`
/// is the first lease's end, written at acquire; a holder that keeps its
/// lease alive (`run`, after an etcd restart too) outlives it, and the
/// words say so, so that a past `expires_at` beside a running lease reads
/// as explained rather than as a contradiction.
fn lease_running(rec: &ClaimRecord, now: i64) -> String {
    match rec.expires_at {
        Some(at) if at <= now => format!(
            "the lease is running: its holder kept it alive past the record's \
             expires_at ({} ago), which was only the first lease's end",
            crate::time::human_ms(now - at)
        ),
        _ => "the lease is running".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::Path;

    fn status(key: &str) -> Status {
        Status::free(key.into(), Path::new(key), String::new())
    }

    proptest! {
        #[test]
        fn sorting_together_equals_sorting_the_pairs(keys in proptest::collection::vec("[a-c%]{0,3}", 0..40)) {
            let mut claims: Vec<Status> = keys.iter().map(|k| status(k)).collect();
            let mut tenures: Vec<usize> = (0..keys.len()).collect();
            let mut pairs: Vec<(String, usize)> = keys.iter().cloned().zip(0..).collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            sort_together(&mut claims, &mut tenures);
            let got: Vec<(String, usize)> =
                claims.iter().map(|s| s.key.clone()).zip(tenures.iter().copied()).collect();
            prop_assert_eq!(got, pairs);
        }
    }

    #[test]
    fn a_lease_kept_alive_past_the_records_expires_at_says_why_it_is_still_live() {
        let mut rec = crate::claims::ClaimRecord {
            schema_version: 1,
            key: "k".into(),
            holder: "h".into(),
            acquired_at: 0,
            pid: 1,
            host: "box".into(),
            expires_at: Some(60_000),
            reason: None,
            harness: None,
            machine_id: None,
            metadata: Default::default(),
        };
        assert_eq!(super::lease_running(&rec, 30_000), "the lease is running");
        let why = super::lease_running(&rec, 72_000);
        assert!(
            why.contains("kept it alive past the record's expires_at (12s ago)"),
            "{why}"
        );
        rec.expires_at = None;
        assert_eq!(super::lease_running(&rec, 72_000), "the lease is running");
    }
}
