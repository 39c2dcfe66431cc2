//! Every etcd key claimtop reads or writes, built in one place.
//!
//! The contract fixes the first three so any other implementation can share
//! a prefix: `PREFIX/claims/<encoded-key>`, `PREFIX/events/<id>`,
//! `PREFIX/expired/<encoded-key>.<ms>`. `PREFIX/ended/`, `PREFIX/open/` and
//! `PREFIX/kept/` are claimtop's own. `ended/<encoded-key>.<revision>`: one
//! marker per finished tenure, so that a tenure's end is recorded once
//! however many observers see it. `open/<encoded-key>`: the tenure a claim
//! key's acquire began, with no lease (so it outlives a lease that runs
//! out), written in the acquire's transaction (its `mod_revision` is the
//! tenure's revision) and removed with the tenure's end: an entry whose
//! claim key is gone, or names another revision, is a tenure that ended
//! with nobody recording it, and the next acquire or list records it.
//! `kept/<encoded-key>`: put by a holder that keeps its claim's lease alive
//! (`run`), on that same lease, so it goes with the lease. Another
//! process's verb never moves a claim off a lease that carries anything
//! besides the claim, nor revokes one (see `verbs`): this mark is how a
//! keeping holder says so. A release or force-release deletes it with the
//! claim.
//!
//! # Published hosts (`claimtop publish`)
//!
//! `PREFIX/host-index/<machine-id>`: one empty key a host, with NO lease,
//! put in the transaction that writes its host record and deleted by
//! `fleet forget` in the one that removes the host: readers find every
//! host with one keys-only range read over it. A host whose record was
//! written by an older publisher has no entry: while the index is empty,
//! readers walk `hosts/` instead (`Core::each_machine`).
//!
//! A publisher mirrors the file roots of one machine under
//! `PREFIX/hosts/<machine-id>/` (the machine id percent-encoded as a key is):
//!
//! - `host`: the host record, with NO lease, so that it outlives the host:
//!   `{"machine_id", "hostname", "roots": [{"id", "path"}], "last_seen_ms",
//!   "ttl_s", "pid"}`. `last_seen_ms` is refreshed once a minute, which is
//!   what "offline since" is read from once the host is gone. Several
//!   publishers may share one machine, each with its own roots: each merges
//!   its roots into `roots` (a compare-and-swap on the record), never
//!   replacing another's. A root's state is not kept here: readers take it
//!   from its owner key.
//! - `owners/<root-id>`: on the lease of the one publisher of that root
//!   (`{"pid", "lease", "since_ms", "path", "unreadable", "resyncing"}`),
//!   created only if absent: a second publisher of the root finds it and
//!   refuses while that pid lives. The root is published exactly while this
//!   key exists (and is not resyncing), and the host is online while any of
//!   its roots is: a killed or cut-off
//!   publisher loses its keys within its lease's TTL, a stopped one at once.
//!   `unreadable` (the reason, or null) says the root's claims dir cannot be
//!   listed: its claims are unknown, not free. `"resyncing": true` (absent
//!   otherwise) says the publisher has taken the root but not yet written
//!   all its copies back on its lease (at start, after a reconnect):
//!   readers show such a root as an offline one, by its last known copies,
//!   and it keeps no host online by itself.
//! - `<root-id>/claims/<encoded-key>`: on the lease, one item exactly as
//!   `list --json` prints it for that root (the status object).
//! - `<root-id>/known/<encoded-key>`: with NO lease, the same item again,
//!   written and deleted in the same transaction as its `claims/` twin: what
//!   the host last published, which outlives the host (a dead publisher's
//!   lease takes `claims/` with it). Read only while the host is offline
//!   (or the root is, see `resyncing`), as last known; `fleet forget`
//!   removes it with the rest of the host.
//! - `<root-id>/hazards`: on the lease, the root's hazards as one JSON array
//!   (written only when the set changes).
//! - `<root-id>/events/<log-id>.<offset>`: one events.jsonl line as the root's
//!   log holds it, on the events' retention lease (the audit trail outlives
//!   the host). The id is the log file's identity and the line's byte offset,
//!   written create-if-absent: a restarted publisher cannot duplicate one.
//! - `<root-id>/requests/<id>`: a force-release asked for from elsewhere
//!   (`{"key", "expect_holder", "expect_acquired_at", "operator",
//!   "allow_live", "at_ms"}`), on the requester's lease. The publisher takes
//!   it before acting (adding `"taken": {"pid", "at_ms"}` in a transaction
//!   that finds it as it was put) and deletes it as it answers; a requester
//!   that gives up withdraws it with a transaction that fails once taken.
//! - `<root-id>/answers/<id>`: the outcome, as `force-release --json` prints
//!   it, on the publisher's lease.
//!
//! `<root-id>` is 16 hex digits of a hash of the root's path, canonical and
//! resolved through bind mounts (`crate::publish`): stable across restarts,
//! and the same root always lands in the same place.

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

    /// The open-tenure entry of a claim key (see the module's notes).
    pub fn open(&self, key: &str) -> String {
        format!("{}/open/{}", self.prefix, encode_key(key))
    }

    pub fn opens(&self) -> String {
        format!("{}/open/", self.prefix)
    }

    /// The mark a holder keeping the claim's lease alive puts on that lease
    /// (see the module's notes).
    pub fn kept(&self, key: &str) -> String {
        format!("{}/kept/{}", self.prefix, encode_key(key))
    }

    /// The claim key an open-tenure entry stands for.
    pub fn key_of_open(&self, etcd_key: &[u8]) -> Option<String> {
        let s = std::str::from_utf8(etcd_key).ok()?;
        s.strip_prefix(&self.opens()).map(decode_key)
    }

    /// The retention lease of the hour `now_ms` falls in. Derived, not stored:
    /// every writer of this prefix computes the same id, so events share a
    /// handful of leases instead of one each, and nobody reads a registry to
    /// find it. The top bits name the prefix, the low 32 the hour.
    pub fn retention_lease(&self, now_ms: i64) -> i64 {
        let fnv = fnv1a(self.prefix.as_bytes());
        let tag = (fnv & 0x3fff_ffff) as i64;
        let hour = (now_ms / 3_600_000).max(1) & 0xffff_ffff;
        (tag << 32) | hour
    }
}

/// A change under a host's prefix, as [`Layout::published_of`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    Host {
        host_id: String,
    },
    /// The hazards one of its roots holds.
    Hazards {
        host_id: String,
    },
    Claim {
        host_id: String,
        root_id: String,
        key: String,
    },
    /// One events.jsonl line a host mirrored from one of its roots.
    Event {
        host_id: String,
        root_id: String,
    },
}

/// Where one published root lives: `PREFIX/hosts/<machine>/<root-id>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootPlace {
    base: String,
}

impl Layout {
    pub fn hosts(&self) -> String {
        format!("{}/hosts/", self.prefix)
    }

    /// `PREFIX/hosts/<machine>/`.
    pub fn host_dir(&self, machine: &str) -> String {
        format!("{}/hosts/{}/", self.prefix, encode_key(machine))
    }

    /// The host record (no lease).
    pub fn host_record(&self, machine: &str) -> String {
        format!("{}host", self.host_dir(machine))
    }

    /// Where the owner keys of the host's published roots are: the host
    /// is online while any exists.
    pub fn host_owners(&self, machine: &str) -> String {
        format!("{}owners/", self.host_dir(machine))
    }

    /// Where a host's roots' summaries are: one range read tells a reader
    /// every root's counts.
    pub fn host_summaries(&self, machine: &str) -> String {
        format!("{}summaries/", self.host_dir(machine))
    }

    /// A root's summary: counts, hazards, when it last changed.
    pub fn root_summary(&self, machine: &str, root_id: &str) -> String {
        format!("{}{root_id}", self.host_summaries(machine))
    }

    /// The key that exists exactly while a publisher holds root `root_id`.
    pub fn root_owner(&self, machine: &str, root_id: &str) -> String {
        format!("{}{root_id}", self.host_owners(machine))
    }

    /// The host index: one key a host, `PREFIX/host-index/<machine>`, so
    /// that one keys-only range read finds every host (a range over
    /// `hosts/` would return every copy's key too). Outside `hosts/`: no
    /// feed of published changes reads it.
    pub fn host_index(&self) -> String {
        format!("{}/host-index/", self.prefix)
    }

    /// A host's entry in the index (empty, no lease: it is listed until
    /// `fleet forget` removes it with the host).
    pub fn host_index_entry(&self, machine: &str) -> String {
        format!("{}{}", self.host_index(), encode_key(machine))
    }

    /// The machine an index entry names.
    pub fn machine_of_index(&self, etcd_key: &[u8]) -> Option<String> {
        let s = std::str::from_utf8(etcd_key).ok()?;
        let rest = s.strip_prefix(&self.host_index())?;
        (!rest.is_empty() && !rest.contains('/')).then(|| decode_key(rest))
    }

    /// The machine an etcd key under [`Layout::hosts`] belongs to.
    pub fn machine_of(&self, etcd_key: &[u8]) -> Option<String> {
        let s = std::str::from_utf8(etcd_key).ok()?;
        let rest = s.strip_prefix(&self.hosts())?;
        let (machine, _) = rest.split_once('/')?;
        Some(decode_key(machine))
    }

    /// What a change under [`Layout::hosts`] is to a fleet view: a host
    /// came, went or refreshed its record (`host`, `owners/`) or the hazards
    /// of one of its roots (all three re-read the host's part of the
    /// fleet), one published claim changed, or a host mirrored an event.
    /// Requests and answers are none of a reader's business.
    pub fn published_of(&self, etcd_key: &[u8]) -> Option<Published> {
        let s = std::str::from_utf8(etcd_key).ok()?;
        let rest = s.strip_prefix(&self.hosts())?;
        let (machine, rest) = rest.split_once('/')?;
        let host_id = decode_key(machine);
        if rest == "host" || rest.starts_with("owners/") {
            return Some(Published::Host { host_id });
        }
        // A root's summary is written up to once a second per busy root:
        // as a host change it would re-read every host that often, and the
        // faces that show summaries (`fleet`, `metrics`) read them when
        // asked, so no feed names it.
        if rest.starts_with("summaries/") {
            return None;
        }
        let (root_id, rest) = rest.split_once('/')?;
        // Written only when the array changes (a corpse aged, a corrupted
        // claim came): rare enough for the fleet's re-read.
        if rest == "hazards" {
            return Some(Published::Hazards { host_id });
        }
        if rest.starts_with("events/") {
            return Some(Published::Event {
                host_id,
                root_id: root_id.to_string(),
            });
        }
        let key = rest.strip_prefix("claims/")?;
        Some(Published::Claim {
            host_id,
            root_id: root_id.to_string(),
            key: decode_key(key),
        })
    }

    pub fn root_place(&self, machine: &str, root_id: &str) -> RootPlace {
        RootPlace {
            base: format!("{}{root_id}/", self.host_dir(machine)),
        }
    }
}

impl RootPlace {
    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn claims(&self) -> String {
        format!("{}claims/", self.base)
    }

    pub fn claim(&self, key: &str) -> String {
        format!("{}claims/{}", self.base, encode_key(key))
    }

    pub fn key_of_claim(&self, etcd_key: &[u8]) -> Option<String> {
        let s = std::str::from_utf8(etcd_key).ok()?;
        s.strip_prefix(&self.claims()).map(decode_key)
    }

    /// Where the last known copies are, the claims' lease-less twins.
    pub fn known(&self) -> String {
        format!("{}known/", self.base)
    }

    pub fn known_claim(&self, key: &str) -> String {
        format!("{}known/{}", self.base, encode_key(key))
    }

    pub fn key_of_known(&self, etcd_key: &[u8]) -> Option<String> {
        let s = std::str::from_utf8(etcd_key).ok()?;
        s.strip_prefix(&self.known()).map(decode_key)
    }

    pub fn hazards(&self) -> String {
        format!("{}hazards", self.base)
    }

    pub fn events(&self) -> String {
        format!("{}events/", self.base)
    }

    /// One log line's key: the log file's identity, then the line's byte
    /// offset, zero-padded so that keys of one log sort in log order.
    pub fn event(&self, log_id: &str, offset: u64) -> String {
        format!("{}events/{log_id}.{offset:016}", self.base)
    }

    /// The offset an event key names, if it belongs to log `log_id`.
    pub fn offset_of_event(&self, etcd_key: &[u8], log_id: &str) -> Option<u64> {
        let s = std::str::from_utf8(etcd_key).ok()?;
        let rest = s.strip_prefix(&self.events())?;
        rest.strip_prefix(log_id)?.strip_prefix('.')?.parse().ok()
    }

    pub fn requests(&self) -> String {
        format!("{}requests/", self.base)
    }

    pub fn request(&self, id: &str) -> String {
        format!("{}requests/{id}", self.base)
    }

    pub fn answer(&self, id: &str) -> String {
        format!("{}answers/{id}", self.base)
    }

    pub fn answer_of(&self, request_key: &[u8]) -> Option<String> {
        let s = std::str::from_utf8(request_key).ok()?;
        s.strip_prefix(&self.requests()).map(|id| self.answer(id))
    }
}

use crate::store::sink::fnv1a;
pub use crate::store::sink::root_id;

/// A fresh request id: time first, so requests read in the order they came.
pub fn new_request_id(now_ms: i64) -> String {
    format!("{now_ms:013}-{:016x}", unique())
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
    super::next_key::prefix_end(prefix.as_bytes())
}

/// The key right after `key`: where a range that goes on from it starts.
pub fn key_after(key: &[u8]) -> Vec<u8> {
    let mut k = key.to_vec();
    k.push(0);
    k
}

/// A copy's place: which host, which of its roots, which key.
pub fn copy_key(host_id: &str, root_id: &str, key: &str) -> String {
    format!("{host_id}/{root_id}/{key}")
}

/// The host, root and key a copy's place names (ids never hold a `/`; a
/// key may).
pub fn split_copy_key(copy: &str) -> Option<(&str, &str, &str)> {
    let (host, rest) = copy.split_once('/')?;
    let (root, key) = rest.split_once('/')?;
    Some((host, root, key))
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
    fn a_published_root_is_placed_under_its_host_and_its_keys_decode_back() {
        let l = Layout::new("/fno");
        let p = l.root_place("m/1", "00ff00ff00ff00ff");
        assert_eq!(p.base(), "/fno/hosts/m%2F1/00ff00ff00ff00ff/");
        let k = p.claim("issue/42");
        assert_eq!(p.key_of_claim(k.as_bytes()).as_deref(), Some("issue/42"));
        let kept = p.known_claim("issue/42");
        assert_eq!(p.key_of_known(kept.as_bytes()).as_deref(), Some("issue/42"));
        assert_eq!(p.key_of_claim(kept.as_bytes()), None);
        // The change feed does not take a last known copy for a claim.
        assert_eq!(l.published_of(kept.as_bytes()), None);
        assert_eq!(l.machine_of(k.as_bytes()).as_deref(), Some("m/1"));
        assert_eq!(l.host_record("m/1"), "/fno/hosts/m%2F1/host");
        let e = p.event("abc", 4096);
        assert_eq!(p.offset_of_event(e.as_bytes(), "abc"), Some(4096));
        assert_eq!(p.offset_of_event(e.as_bytes(), "abd"), None);
        assert!(p.event("abc", 999) < e, "offsets sort in log order");
        let r = p.request("7");
        assert_eq!(p.answer_of(r.as_bytes()), Some(p.answer("7")));
    }

    #[test]
    fn a_change_under_a_host_names_the_host_its_hazards_a_published_claim_or_event_and_nothing_else(
    ) {
        let l = Layout::new("/fno");
        let p = l.root_place("m/1", "00ff00ff00ff00ff");
        assert_eq!(
            l.published_of(l.root_owner("m/1", "00ff00ff00ff00ff").as_bytes()),
            Some(Published::Host {
                host_id: "m/1".into()
            })
        );
        assert_eq!(
            l.published_of(l.host_record("m/1").as_bytes()),
            Some(Published::Host {
                host_id: "m/1".into()
            })
        );
        assert_eq!(
            l.published_of(p.claim("a/b c").as_bytes()),
            Some(Published::Claim {
                host_id: "m/1".into(),
                root_id: "00ff00ff00ff00ff".into(),
                key: "a/b c".into()
            })
        );
        assert_eq!(
            l.published_of(p.hazards().as_bytes()),
            Some(Published::Hazards {
                host_id: "m/1".into()
            })
        );
        assert_eq!(l.published_of(p.request("r1").as_bytes()), None);
        assert_eq!(
            l.published_of(p.event("log", 3).as_bytes()),
            Some(Published::Event {
                host_id: "m/1".into(),
                root_id: "00ff00ff00ff00ff".into(),
            })
        );
        assert_eq!(l.published_of(l.claim("k").as_bytes()), None);
    }

    #[test]
    fn a_host_index_entry_names_its_machine_and_no_feed_takes_it_for_a_claim_or_a_host() {
        let l = Layout::new("/fno");
        let e = l.host_index_entry("m/1");
        assert_eq!(e, "/fno/host-index/m%2F1");
        assert_eq!(l.machine_of_index(e.as_bytes()).as_deref(), Some("m/1"));
        assert_eq!(l.machine_of_index(l.host_record("m/1").as_bytes()), None);
        assert_eq!(l.machine_of_index(l.host_index().as_bytes()), None);
        // Outside `hosts/` and `claims/`: the watchers of both pass it by.
        assert_eq!(l.published_of(e.as_bytes()), None);
        assert_eq!(l.machine_of(e.as_bytes()), None);
        assert_eq!(l.key_of_claim(e.as_bytes()), None);
        assert!(!e.starts_with(&l.hosts()) && !e.starts_with(&l.claims()));
    }

    #[test]
    fn a_root_id_is_stable_and_differs_between_roots() {
        let a = root_id(std::path::Path::new("/srv/a"));
        assert_eq!(a, root_id(std::path::Path::new("/srv/a")));
        assert_ne!(a, root_id(std::path::Path::new("/srv/b")));
        assert_eq!(a.len(), 16);
    }

    #[test]
    fn the_range_end_of_a_prefix_covers_exactly_its_keys() {
        assert_eq!(range_end("/fno/claims/"), b"/fno/claims0".to_vec());
    }
}
