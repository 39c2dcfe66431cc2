//! `list` over etcd handed on a page at a time, in the order a whole
//! listing has (claims by key, as decoded), so a reader that streams
//! (`list --json`) writes its first claim long before the last range read.
//!
//! Two things hold a page back. Etcd returns keys in the order of their
//! encoding, and a key's encoding does not always sort as the key does
//! (`a b` is `a%20b`): a claim is handed on once no key still to come can
//! sort before it. And while a listing has at most
//! [`LEASE_LOOKUPS_MAX`] distinct leases each lease's time left is asked
//! of etcd at the end, which changes the rows: nothing is handed on until
//! the listing has more leases than that (no lookup will be made) or ends.

use super::doctor::CLAIM_WITHOUT_LEASE;
use super::list::{LEASE_LOOKUPS_MAX, PAGE};
use super::Core;
use crate::claims::{Counts, Hazard, ItemRules, Status, Sweep};
use crate::store::{Cursor, Flow, ListEnd, ListSink, MemberListing, StoreError, Tenure};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// Claims read but not handed on yet, in the order they came.
#[derive(Default)]
struct Held {
    claims: Vec<Status>,
    tenures: Vec<Option<Tenure>>,
    leases: Vec<i64>,
}

impl Core {
    /// Every claim, judged, handed to `sink` in pages in key order; the
    /// last page carries the listing's hazards (the census of every claim,
    /// then the store's own) and where the feed resumes.
    pub(super) fn list_claims_paged(&self, sink: &mut dyn ListSink) -> Result<ListEnd, StoreError> {
        let mut held = Held::default();
        // What the end needs of every claim handed on: its key and
        // tenure (to settle ended tenures) and its own hazards.
        let mut done = Done::default();
        let mut store_hazards = Vec::new();
        let mut pids = HashMap::new();
        let no_ttls = HashMap::new();
        let mut distinct: Option<HashSet<i64>> = Some(HashSet::new());
        let mut flow = Flow::Go;
        let claims_prefix = self.layout.claims();
        let at = self.for_each_page(&claims_prefix, PAGE, |page| {
            let mut last = None;
            for kv in &page {
                let Some(key) = self.layout.key_of_claim(kv.key()) else {
                    continue;
                };
                let ck = String::from_utf8_lossy(kv.key()).into_owned();
                if kv.lease() == 0 {
                    store_hazards.push(Hazard::at_key(
                        CLAIM_WITHOUT_LEASE,
                        ck.clone(),
                        "this claim has no lease, so it never expires; force-release it".into(),
                    ));
                }
                if let (Some(d), true) = (distinct.as_mut(), kv.lease() != 0) {
                    d.insert(kv.lease());
                    if d.len() > LEASE_LOOKUPS_MAX {
                        distinct = None;
                    }
                }
                held.leases.push(kv.lease());
                let (s, t) = self.item(&key, &ck, kv, &no_ttls, &mut pids);
                held.claims.push(s);
                held.tenures.push(Some(t));
                last = Some(ck);
            }
            if distinct.is_some() {
                // Lookups may still be made: every row may change yet.
                return true;
            }
            let floor = last
                .as_deref()
                .map(|ck| floor_of(&ck[claims_prefix.len()..]));
            let (claims, tenures) = held.take_below(floor.as_deref());
            flow = done.hand_on(sink, &self.url, claims, tenures);
            flow == Flow::Go
        })?;
        if flow == Flow::Go {
            if distinct.is_some() {
                self.look_up_leases(&mut held)?;
            }
            let (claims, tenures) = held.take_below(None);
            flow = done.hand_on(sink, &self.url, claims, tenures);
        }
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
                end: end.clone(),
            });
        }
        Ok(end)
    }

    /// Each lease's time left from etcd, in place of the record's deadline
    /// the rows were judged with.
    fn look_up_leases(&self, held: &mut Held) -> Result<(), StoreError> {
        let mut ids: Vec<i64> = held.leases.iter().copied().filter(|l| *l != 0).collect();
        ids.sort_unstable();
        ids.dedup();
        let ttls = self.lease_ttls(ids)?;
        for (tenure, lease) in held.tenures.iter_mut().flatten().zip(&held.leases) {
            if let Some((ttl_s, remaining_s)) = ttls.get(lease) {
                tenure.lease.ttl_s = *ttl_s;
                tenure.lease.remaining_s = *remaining_s;
            }
        }
        Ok(())
    }
}

impl Held {
    /// The held claims that sort before `floor` (all of them without one),
    /// in key order (one key seen twice keeps the order it came in); the
    /// rest stay held, in that order too.
    fn take_below(&mut self, floor: Option<&str>) -> (Vec<Status>, Vec<Option<Tenure>>) {
        let mut order: Vec<usize> = (0..self.claims.len()).collect();
        order.sort_by(|a, b| self.claims[*a].key.cmp(&self.claims[*b].key));
        let cut = floor.map_or(order.len(), |f| {
            order.partition_point(|i| self.claims[*i].key.as_str() < f)
        });
        let mut claims: Vec<Option<Status>> = self.claims.drain(..).map(Some).collect();
        let mut tenures: Vec<Option<Tenure>> = std::mem::take(&mut self.tenures);
        let leases = std::mem::take(&mut self.leases);
        let mut out = (Vec::with_capacity(cut), Vec::with_capacity(cut));
        for (n, i) in order.into_iter().enumerate() {
            let Some(s) = claims[i].take() else { continue };
            let t = tenures.get_mut(i).and_then(Option::take);
            if n < cut {
                out.0.push(s);
                out.1.push(t);
            } else {
                self.claims.push(s);
                self.tenures.push(t);
                self.leases.push(leases.get(i).copied().unwrap_or(0));
            }
        }
        out
    }
}

/// The least key whose encoding sorts at or after `encoded`: its part
/// before the first byte the encoder would not write as it is. Every
/// encoding from `encoded` on decodes to a key at least that: the safe
/// bytes all sort after `%`, and decode to themselves.
fn floor_of(encoded: &str) -> String {
    let safe = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'~' | b'-');
    let n = encoded.bytes().take_while(safe).count();
    encoded[..n].to_string()
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
        claims: Vec<Status>,
        tenures: Vec<Option<Tenure>>,
    ) -> Flow {
        if claims.is_empty() {
            return Flow::Go;
        }
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
            end: ListEnd::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::key::encode_key;
    use crate::claims::Loc;

    fn row(key: &str) -> Status {
        let place = Loc::new(0, ItemRules::StoreKey, std::path::Path::new(key));
        Status::free(key.to_string(), place, "no claim".into())
    }

    #[test]
    fn claims_handed_on_as_etcd_pages_them_come_out_in_key_order() {
        // Escaped bytes (` `, `!`, `%`, non-ASCII) sort as `%`, before
        // every byte written as it is: etcd's order is not the keys'.
        let keys = [
            "a b", "a!", "a-b", "a", "b", "a%", "~x", "A", "a\u{e9}", "a b c", "ab", "a~",
        ];
        let mut by_encoding: Vec<&str> = keys.to_vec();
        by_encoding.sort_by_key(|k| encode_key(k));
        let mut held = Held::default();
        let mut out = Vec::new();
        for k in by_encoding {
            held.claims.push(row(k));
            held.tenures.push(None);
            held.leases.push(0);
            let floor = floor_of(&encode_key(k));
            out.extend(held.take_below(Some(&floor)).0);
        }
        out.extend(held.take_below(None).0);
        let got: Vec<&str> = out.iter().map(|s| s.key.as_str()).collect();
        let mut want = keys.to_vec();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn the_floor_of_an_encoding_is_its_part_before_the_first_escape() {
        assert_eq!(floor_of("a%20b"), "a");
        assert_eq!(floor_of("node-1.x~"), "node-1.x~");
        assert_eq!(floor_of("%41"), "");
    }
}
