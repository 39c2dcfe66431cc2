//! Every etcd key claimtop reads or writes, built in one place.
//!
//! The contract fixes the first three so any other implementation can share
//! a prefix: `PREFIX/claims/<encoded-key>`, `PREFIX/events/<id>`,
//! `PREFIX/expired/<encoded-key>.<ms>`. `PREFIX/ended/` is claimtop's own:
//! one marker per finished tenure, so that a tenure's end is recorded once
//! however many observers see it.

use crate::claims::{decode_key, encode_key};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    prefix: String,
}

impl Layout {
    /// `prefix` as [`super::super::url::EtcdTarget`] keeps it: `/fno`.
    pub fn new(prefix: &str) -> Layout {
        Layout {
            prefix: prefix.to_string(),
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Everything claimtop keeps: what the change watch covers.
    pub fn all(&self) -> String {
        format!("{}/", self.prefix)
    }

    pub fn claims(&self) -> String {
        format!("{}/claims/", self.prefix)
    }

    /// The record's key: the same percent-encoding as the lockfile name, so
    /// a key is one name in both stores.
    pub fn claim(&self, key: &str) -> String {
        format!("{}/claims/{}", self.prefix, encode_key(key))
    }

    /// The claim key an etcd key stands for, if it is a claim's.
    pub fn key_of_claim(&self, etcd_key: &[u8]) -> Option<String> {
        let s = std::str::from_utf8(etcd_key).ok()?;
        s.strip_prefix(&self.claims()).map(decode_key)
    }

    pub fn events(&self) -> String {
        format!("{}/events/", self.prefix)
    }

    /// A fresh event key. Ids sort by time first (so a key listing reads in
    /// order even without revisions); the random tail keeps two writers in
    /// the same millisecond apart.
    pub fn new_event(&self, now_ms: i64) -> String {
        format!("{}/events/{now_ms:013}-{:016x}", self.prefix, unique())
    }

    pub fn expired(&self, key: &str, now_ms: i64) -> String {
        format!("{}/expired/{}.{now_ms}", self.prefix, encode_key(key))
    }

    /// The end-of-tenure marker: a tenure is one create_revision of a key.
    pub fn ended(&self, key: &str, create_revision: i64) -> String {
        format!(
            "{}/ended/{}.{create_revision}",
            self.prefix,
            encode_key(key)
        )
    }

    pub fn ended_all(&self) -> String {
        format!("{}/ended/", self.prefix)
    }

    /// The retention lease of the hour `now_ms` falls in. Derived, not stored:
    /// every writer of this prefix computes the same id, so events share a
    /// handful of leases instead of one each, and nobody reads a registry to
    /// find it. The top bits name the prefix, the low 32 the hour.
    pub fn retention_lease(&self, now_ms: i64) -> i64 {
        // FNV-1a: stable across builds and Rust releases, unlike std's hasher.
        let fnv = self.prefix.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let tag = (fnv & 0x3fff_ffff) as i64;
        let hour = (now_ms / 3_600_000).max(1) & 0xffff_ffff;
        (tag << 32) | hour
    }
}

/// 64 bits no other writer will pick: this process's random hasher keys,
/// the clock and a counter.
fn unique() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

/// The end of the range that holds every key starting with `prefix`.
pub fn range_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_key_is_named_as_its_lockfile_and_decodes_back() {
        let l = Layout::new("/fno");
        let k = l.claim("issue/42 a");
        assert_eq!(k, format!("/fno/claims/{}", encode_key("issue/42 a")));
        assert_eq!(l.key_of_claim(k.as_bytes()).as_deref(), Some("issue/42 a"));
        assert_eq!(l.key_of_claim(b"/fno/events/x"), None);
    }

    #[test]
    fn event_ids_are_unique_and_sort_by_time() {
        let l = Layout::new("/p");
        let a = l.new_event(1_000);
        let b = l.new_event(1_000);
        let c = l.new_event(2_000);
        assert_ne!(a, b);
        assert!(a.starts_with("/p/events/0000000001000-"));
        assert!(c > a && c > b);
    }

    #[test]
    fn retention_leases_differ_per_hour_and_per_prefix_and_are_positive() {
        let l = Layout::new("/fno");
        let h1 = l.retention_lease(3_600_000 * 500_000);
        let h2 = l.retention_lease(3_600_000 * 500_001);
        assert_ne!(h1, h2);
        assert_eq!(h1, l.retention_lease(3_600_000 * 500_000 + 59_000));
        assert_ne!(
            h1,
            Layout::new("/other").retention_lease(3_600_000 * 500_000)
        );
        assert!(h1 > 0 && h2 > 0);
    }

    #[test]
    fn the_range_end_of_a_prefix_covers_exactly_its_keys() {
        assert_eq!(range_end("/fno/claims/"), b"/fno/claims0".to_vec());
    }
}
