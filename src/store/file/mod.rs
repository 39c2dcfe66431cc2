//! The file store: the lockfile verbs behind the seam, and the root's one
//! change feed ([`feed`]).
//!
//! Every verb is one call into `claims::verbs` / `claims::sweep` /
//! `events::tail`; nothing is re-read or re-shaped, so the wire and the
//! figures stay what they were.

mod backend;
pub mod feed;
pub mod follow;
mod inotify;
pub mod list_json;
pub mod log;

pub use backend::{open_root, OPENER};

use super::StoreError;
use crate::claims::{Root, WaitHook};
use feed::FeedOpts;

/// Claims as lockfiles under one root.
#[derive(Debug, Clone)]
pub struct FileStore {
    root: Root,
    /// Told whenever an acquire waits on a peer's recovery mutex, so that a
    /// face can say why it sits silent.
    on_mutex: Option<WaitHook>,
    /// How [`super::Feed::changes`] watches the root.
    feed: FeedOpts,
}

impl FileStore {
    pub fn new(root: Root) -> FileStore {
        FileStore {
            root,
            on_mutex: None,
            feed: FeedOpts::default(),
        }
    }

    /// The same store, its [`super::Feed::changes`] watching as `opts` says (the
    /// dashboard lets bursts settle and opens with the log's tail).
    pub fn with_feed(self, opts: FeedOpts) -> FileStore {
        FileStore { feed: opts, ..self }
    }

    /// The same store, telling `hook` when an acquire waits on a peer's
    /// recovery mutex.
    pub fn with_mutex_hook(self, hook: WaitHook) -> FileStore {
        FileStore {
            on_mutex: Some(hook),
            ..self
        }
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    fn own_history(&self) -> Result<Box<dyn crate::events::history::History>, StoreError> {
        Ok(Box::new(crate::events::file_history::FileHistory::new(
            self.root.events_file(),
            crate::events::service::limits(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{self, AcquireOpts, AcquireOutcome};
    use crate::store::backend::{head_now, list_now, Audit, Claims, Feed};
    use crate::store::Change;
    use std::time::Duration;

    fn store() -> (tempfile::TempDir, FileStore) {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = FileStore::new(Root::with_events_here(dir.path()));
        (dir, s)
    }

    #[test]
    fn the_file_store_lists_exactly_what_the_sweep_serialises() {
        let (dir, s) = store();
        let opts = AcquireOpts {
            ttl_ms: Some(600_000),
            ..Default::default()
        };
        s.acquire("k1", "h", &opts).expect("acquire");
        let listing = list_now(&s).expect("list");
        let direct =
            serde_json::to_value(claims::sweep(&Root::with_events_here(dir.path()))).expect("json");
        // `why` words the time left, which may tick between the two sweeps.
        let timeless = |mut v: serde_json::Value| {
            if let Some(items) = v["claims"].as_array_mut() {
                items
                    .iter_mut()
                    .for_each(|i| i["why"] = serde_json::Value::Null);
            }
            v
        };
        assert_eq!(timeless(listing.to_json(None)), timeless(direct));
        let mut fast = Vec::new();
        s.write_list_json(&listing, &mut fast)
            .expect("a root has its own writer")
            .expect("written");
        let fast: serde_json::Value = serde_json::from_slice(&fast).expect("json");
        assert_eq!(timeless(fast), timeless(listing.to_json(None)));
    }

    #[test]
    fn the_file_store_reports_its_acquire_and_release_as_events() {
        let (_dir, s) = store();
        let opts = AcquireOpts {
            ttl_ms: Some(600_000),
            ..Default::default()
        };
        let got = s.acquire("k", "h", &opts).expect("acquire");
        assert!(matches!(got.outcome, AcquireOutcome::Acquired { .. }));
        assert_eq!(got.tenure, None);
        let rel = s.release("k", "h", None).expect("release");
        assert_eq!(rel.outcome.as_str(), "released");
        let kinds: Vec<String> = s
            .events(10)
            .expect("events")
            .iter()
            .map(|e| e.kind().to_string())
            .collect();
        assert_eq!(kinds, vec!["claim_acquired", "claim_released"]);
    }

    #[test]
    fn a_head_is_the_first_keys_in_order_and_a_root_no_bigger_has_none() {
        let (_dir, s) = store();
        let opts = AcquireOpts {
            ttl_ms: Some(600_000),
            ..Default::default()
        };
        for k in ["e", "b", "d", "a", "c"] {
            s.acquire(k, "h", &opts).expect("acquire");
        }
        let head = head_now(&s, 3).expect("head").expect("more than 3");
        let keys: Vec<&str> = head.sweep.claims.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert!(head_now(&s, 5).expect("head").is_none());
    }

    #[test]
    fn the_file_change_feed_names_the_key_a_peer_acquires() {
        let (dir, s) = store();
        std::fs::create_dir_all(s.root().claims_dir()).expect("claims dir");
        let mut feed = s.changes(None).expect("feed");
        let opts = AcquireOpts {
            ttl_ms: Some(600_000),
            ..Default::default()
        };
        claims::acquire(&Root::with_events_here(dir.path()), "watched", "h", &opts)
            .expect("acquire");
        let mut seen = Vec::new();
        while let Some(c) = feed.next(Duration::from_secs(2)).expect("feed") {
            seen.push(c);
            if seen
                .iter()
                .any(|c| matches!(c, Change::Claim { key } if key == "watched"))
            {
                return;
            }
        }
        panic!("no change named the key; saw {seen:?}");
    }

    #[test]
    fn a_claims_dir_that_appears_under_the_feed_asks_for_a_full_reread() {
        let (dir, s) = store();
        let mut feed = s.changes(None).expect("feed");
        let opts = AcquireOpts {
            ttl_ms: Some(600_000),
            ..Default::default()
        };
        claims::acquire(&Root::with_events_here(dir.path()), "first", "h", &opts).expect("acquire");
        let mut seen = Vec::new();
        while let Some(c) = feed.next(Duration::from_secs(2)).expect("feed") {
            if matches!(c, Change::Relist { why: Some(_) }) {
                return;
            }
            seen.push(c);
        }
        panic!("the new claims dir went unnoticed; saw {seen:?}");
    }
}
