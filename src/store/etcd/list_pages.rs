//! `list` over etcd handed on a page at a time, in the order a whole
//! listing has (claims by key, as decoded), so a reader that streams
//! (`list --json`) writes its first claim long before the last range read.
//!
//! Etcd returns keys in the order of their encoding, and a key's encoding
//! does not always sort as the key does (`a b` is `a%20b`, after `a-b`'s
//! encoding but before it as a key). So the keys are read first, alone (a
//! tenth of the bytes, at one revision), which gives every claim its place;
//! then the values at that same revision, each claim handed on once every
//! claim before it is. The keys also tell how many distinct leases there
//! are: up to [`LEASE_LOOKUPS_MAX`] each one's time left is asked of etcd
//! before the values are read, as a whole listing asks it after.

use super::list::LEASE_LOOKUPS_MAX;
use super::Core;
use crate::claims::{Counts, Hazard, ItemRules, Status, Sweep};
use crate::store::{Cursor, Flow, ListEnd, ListSink, MemberListing, StoreError, Tenure};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Items that come in one order and go out in another: each has its place
/// known beforehand, and goes out once every place before it has.
struct InOrder<T> {
    /// The place of the `i`th item to come.
    place: Vec<usize>,
    /// The next place to go out.
    next: usize,
    waiting: BTreeMap<usize, T>,
}

impl<T> InOrder<T> {
    /// Places from the items' sort keys, in the order they will come (one
    /// key twice keeps the order it came in).
    fn of<K: Ord>(keys: &[K]) -> InOrder<T> {
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by(|a, b| keys[*a].cmp(&keys[*b]));
        let mut place = vec![0; keys.len()];
        for (p, i) in order.into_iter().enumerate() {
            place[i] = p;
        }
        InOrder {
            place,
            next: 0,
            waiting: BTreeMap::new(),
        }
    }

    /// The `i`th item came; what can go out now, in order.
    fn came(&mut self, i: usize, item: T, out: &mut Vec<T>) {
        let Some(&p) = self.place.get(i) else {
            return;
        };
        self.waiting.insert(p, item);
        while let Some(item) = self.waiting.remove(&self.next) {
            out.push(item);
            self.next += 1;
        }
    }
}

impl Core {
    /// Every claim, judged, handed to `sink` in pages in key order; the
    /// last page carries the listing's hazards (the census of every claim,
    /// then the store's own) and where the feed resumes.
    pub(super) fn list_claims_paged(&self, sink: &mut dyn ListSink) -> Result<ListEnd, StoreError> {
        let prefix = self.layout.claims();
        let (mut keys, mut leases) = (Vec::new(), Vec::new());
        let at = self.keys_through(&prefix, |page| {
            for kv in &page {
                if let Some(key) = self.layout.key_of_claim(kv.key()) {
                    keys.push(key);
                    leases.push(kv.lease());
                }
            }
            true
        })?;
        let mut order: InOrder<(Status, Option<Tenure>)> = InOrder::of(&keys);
        drop(keys);
        leases.sort_unstable();
        leases.dedup();
        leases.retain(|l| *l != 0);
        let ttls = match leases.len() <= LEASE_LOOKUPS_MAX {
            true => self.lease_ttls(leases)?,
            false => HashMap::new(),
        };
        let mut done = Done::default();
        let mut store_hazards = Vec::new();
        let mut pids = HashMap::new();
        let no_ttls = HashMap::new();
        let mut flow = Flow::Go;
        let mut i = 0;
        self.page_through(&prefix, at, false, |page| {
            let mut ready = Vec::new();
            for kv in &page {
                let Some((key, ck)) = self.claim_of(kv, &mut store_hazards) else {
                    continue;
                };
                // Judged by the record's deadline; the lease's own time
                // left, where it was asked, goes on the tenure.
                let (s, mut t) = self.item(&key, &ck, kv, &no_ttls, &mut pids);
                if let Some((ttl_s, remaining_s)) = ttls.get(&kv.lease()) {
                    t.lease.ttl_s = *ttl_s;
                    t.lease.remaining_s = *remaining_s;
                }
                order.came(i, (s, Some(t)), &mut ready);
                i += 1;
            }
            flow = done.hand_on(sink, &self.url, ready);
            flow == Flow::Go
        })?;
        let complete = flow == Flow::Go;
        if complete {
            // Best effort: a reader without write access still gets its
            // listing, and the next acquire or watcher records the end.
            let _ = self.settle_opens(at, &done.carried);
        }
        // As a census of every claim sorts them (a stable sort: each
        // page's were in claim order already).
        let mut hazards = done.hazards;
        hazards.sort_by(|a, b| a.path().cmp(b.path()));
        let end = ListEnd {
            // The feed resumes right after the revision it was read at.
            at: Some(Cursor::of_u64(u64::try_from(at).unwrap_or(0))),
            complete,
        };
        if complete {
            sink.page(MemberListing {
                at: Default::default(),
                rules: ItemRules::StoreKey,
                sweep: Sweep {
                    root: PathBuf::from(&self.url),
                    claims: Vec::new(),
                    counts: Counts::default(),
                    hazards,
                },
                tenures: Vec::new(),
                store_hazards,
                stamps: Vec::new(),
                kept: Vec::new(),
                end: end.clone(),
            });
        }
        Ok(end)
    }
}

/// What the end needs of the claims handed on.
#[derive(Default)]
struct Done {
    carried: Vec<(String, Option<i64>)>,
    hazards: Vec<Hazard>,
}

impl Done {
    /// One page to the sink, what the end needs of it kept.
    fn hand_on(
        &mut self,
        sink: &mut dyn ListSink,
        url: &str,
        ready: Vec<(Status, Option<Tenure>)>,
    ) -> Flow {
        if ready.is_empty() {
            return Flow::Go;
        }
        let (claims, tenures): (Vec<Status>, Vec<Option<Tenure>>) = ready.into_iter().unzip();
        // `foreign_machine` does not apply: claims from other machines are
        // the point of etcd.
        let census = crate::claims::census(&claims, Vec::new(), |_| ItemRules::StoreKey);
        self.hazards.extend(census.hazards);
        self.carried.extend(super::list::carried(&claims, &tenures));
        sink.page(MemberListing {
            at: Default::default(),
            rules: ItemRules::StoreKey,
            sweep: Sweep {
                root: PathBuf::from(url),
                claims,
                counts: census.counts,
                hazards: Vec::new(),
            },
            tenures,
            store_hazards: Vec::new(),
            stamps: Vec::new(),
            kept: Vec::new(),
            end: ListEnd::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::key::{decode_key, encode_key};

    #[test]
    fn claims_that_come_in_their_encodings_order_go_out_in_key_order() {
        // Escaped bytes (` `, `!`, `/`, `%`, non-ASCII) sort as `%`, before
        // every byte written as it is: etcd's order is not the keys'.
        let keys = [
            "a b", "a!", "a-b", "a", "b", "a%", "~x", "A", "a\u{e9}", "a b c", "ab", "a~", "a/1",
            "a.2",
        ];
        let mut encoded: Vec<String> = keys.iter().map(|k| encode_key(k)).collect();
        encoded.sort();
        let decoded: Vec<String> = encoded.iter().map(|e| decode_key(e)).collect();
        let mut order = InOrder::of(&decoded);
        let mut out = Vec::new();
        for (i, k) in decoded.iter().enumerate() {
            order.came(i, k.clone(), &mut out);
        }
        let mut want: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        want.sort();
        assert_eq!(out, want);
    }

    #[test]
    fn a_claim_goes_out_as_soon_as_every_claim_before_it_has() {
        let keys = ["t/1", "t/2", "t/3"];
        let mut order = InOrder::of(&keys);
        let mut out = Vec::new();
        order.came(0, "t/1", &mut out);
        assert_eq!(out, ["t/1"], "the first goes out at once");
        order.came(2, "t/3", &mut out);
        assert_eq!(out, ["t/1"], "the third waits for the second");
        order.came(1, "t/2", &mut out);
        assert_eq!(out, ["t/1", "t/2", "t/3"]);
    }
}
