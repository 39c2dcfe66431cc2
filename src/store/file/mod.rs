//! The file store: the lockfile verbs behind the seam, and the root's one
//! change feed ([`feed`]).
//!
//! Every verb is one call into `claims::verbs` / `claims::sweep` /
//! `events::tail`; nothing is re-read or re-shaped, so the wire and the
//! figures stay what they were.

mod backend;
pub mod feed;
mod inotify;
pub mod list_json;

pub use backend::{open_root, OPENER};

use super::wake::FileKeyWatch;
use super::{Changes, Fenced, KeyWatch, Listing, Store, StoreError, Wake};
use crate::claims::{
    self, AcquireOpts, AcquireOutcome, Fix, ForceOpts, ForceOutcome, ItemRules, ReleaseOutcome,
    RenewOutcome, Root, Status, WaitHook,
};
use crate::events::tail::read_last_lines;
use crate::events::Event;
use feed::{FeedOpts, FileFeed};
use std::path::PathBuf;

/// Claims as lockfiles under one root.
#[derive(Debug, Clone)]
pub struct FileStore {
    root: Root,
    /// Told whenever an acquire waits on a peer's recovery mutex, so that a
    /// face can say why it sits silent.
    on_mutex: Option<WaitHook>,
    /// How [`Store::changes`] watches the root.
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

    /// The same store, its [`Store::changes`] watching as `opts` says (the
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

impl Store for FileStore {
    fn url(&self) -> String {
        format!("file:{}", self.root.root.to_string_lossy())
    }

    fn item_rules(&self) -> ItemRules {
        ItemRules::Lockfile
    }

    fn acquire(
        &self,
        key: &str,
        holder: &str,
        opts: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        Ok(Fenced::plain(claims::acquire_watched(
            &self.root,
            key,
            holder,
            opts,
            self.on_mutex.as_ref(),
        )?))
    }

    fn release(&self, key: &str, holder: &str) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        Ok(Fenced::plain(claims::release(&self.root, key, holder)?))
    }

    fn status(&self, key: &str) -> Result<Fenced<Status>, StoreError> {
        Ok(Fenced::plain(claims::status(&self.root, key)))
    }

    fn renew(
        &self,
        key: &str,
        holder: &str,
        ttl_ms: i64,
        operator: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        Ok(Fenced::plain(claims::renew_as(
            &self.root, key, holder, ttl_ms, operator,
        )?))
    }

    fn force_release(
        &self,
        key: &str,
        opts: &ForceOpts,
    ) -> Result<Fenced<ForceOutcome>, StoreError> {
        Ok(Fenced::plain(claims::force_release(&self.root, key, opts)?))
    }

    fn problem(&self) -> Option<crate::claims::root::RootProblem> {
        self.root.problem()
    }

    fn locate(&self, key: &str) -> PathBuf {
        self.root.lockfile(key)
    }

    fn list(&self) -> Result<Listing, StoreError> {
        Ok(Listing::of_sweep(claims::sweep(&self.root)))
    }

    fn doctor(&self) -> Result<Listing, StoreError> {
        // The sweep already carries every hazard a file root can have.
        self.list()
    }

    fn repair(&self) -> Result<Vec<Fix>, StoreError> {
        Ok(claims::doctor_fix(&self.root))
    }

    fn history(
        &self,
        log: &crate::events::history::Log,
    ) -> Result<Box<dyn crate::events::history::History>, StoreError> {
        match log {
            crate::events::history::Log::Own => self.own_history(),
            crate::events::history::Log::Root(dir) if *dir == self.root.root => self.own_history(),
            // A file root's hosts publish into a store; it holds no copies.
            other => Err(StoreError::Unsupported(format!(
                "{} keeps no {other:?} events history",
                self.url()
            ))),
        }
    }

    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        let chunk = read_last_lines(&self.root.events_file(), n)?;
        // Lines that do not parse are skipped, as `events` always has.
        Ok(chunk.lines.iter().filter_map(|l| l.parse().ok()).collect())
    }

    fn changes(&self) -> Result<Box<dyn Changes>, StoreError> {
        Ok(Box::new(FileFeed::start(&self.root, self.feed)))
    }

    /// The root's feed filtered to the key's lockfile, plus the exit of a
    /// local holder's pid, which changes no file.
    fn watch_key(&self, key: &str, wake: Wake) -> Result<Box<dyn KeyWatch>, StoreError> {
        Ok(Box::new(FileKeyWatch::start(&self.root, key, wake)?))
    }

    /// Every name is listed and sorted, but only the first `n` files read:
    /// a root of 100 000 lockfiles shows its first screen in a tenth of
    /// its full listing's time.
    fn list_head(&self, n: usize) -> Result<Option<Listing>, StoreError> {
        Ok(claims::sweep_head(&self.root, n).map(Listing::of_sweep))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Change, Store};
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
        let listing = s.list().expect("list");
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
        assert_eq!(timeless(listing.to_json()), timeless(direct));
        assert!(listing.to_json().get("store").is_none());
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
        let rel = s.release("k", "h").expect("release");
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
        let head = s.list_head(3).expect("head").expect("more than 3");
        let keys: Vec<&str> = head.sweep.claims.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert!(s.list_head(5).expect("head").is_none());
    }

    #[test]
    fn the_file_change_feed_names_the_key_a_peer_acquires() {
        let (dir, s) = store();
        std::fs::create_dir_all(s.root().claims_dir()).expect("claims dir");
        let mut feed = s.changes().expect("feed");
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
        let mut feed = s.changes().expect("feed");
        let opts = AcquireOpts {
            ttl_ms: Some(600_000),
            ..Default::default()
        };
        claims::acquire(&Root::with_events_here(dir.path()), "first", "h", &opts).expect("acquire");
        let mut seen = Vec::new();
        while let Some(c) = feed.next(Duration::from_secs(2)).expect("feed") {
            if matches!(c, Change::Resync { .. }) {
                return;
            }
            seen.push(c);
        }
        panic!("the new claims dir went unnoticed; saw {seen:?}");
    }
}
