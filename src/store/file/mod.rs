//! The file store: today's lockfile verbs behind the seam, unchanged.
//!
//! Every method is one call into `claims::verbs` / `claims::sweep` /
//! `events::tail`; nothing is re-read or re-shaped, so the wire and the
//! figures stay what they were.

use super::fs_events::{touched, Touched};
use super::wake::FileKeyWatch;
use super::{Change, Changes, Fenced, KeyWatch, Listing, Store, StoreError, Wake};
use crate::claims::key_of_lockfile;
use crate::claims::{
    self, AcquireOpts, AcquireOutcome, ForceOpts, ForceOutcome, ReleaseOutcome, RenewOutcome, Root,
    Status, WaitHook,
};
use crate::events::tail::{read_last_lines, Event, Follower};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;

/// Claims as lockfiles under one root.
#[derive(Debug, Clone)]
pub struct FileStore {
    root: Root,
    /// Told whenever an acquire waits on a peer's recovery mutex, so that a
    /// face can say why it sits silent.
    on_mutex: Option<WaitHook>,
}

impl FileStore {
    pub fn new(root: Root) -> FileStore {
        FileStore {
            root,
            on_mutex: None,
        }
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
}

impl Store for FileStore {
    fn url(&self) -> String {
        format!("file:{}", self.root.root.to_string_lossy())
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

    fn list(&self) -> Result<Listing, StoreError> {
        Ok(Listing::of_sweep(claims::sweep(&self.root)))
    }

    fn doctor(&self) -> Result<Listing, StoreError> {
        // The sweep already carries every hazard a file root can have.
        self.list()
    }

    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        let chunk = read_last_lines(&self.root.events_file(), n)
            .map_err(|e| StoreError::Config(e.to_string()))?;
        // Lines that do not parse are skipped, as `events` always has.
        Ok(chunk.lines.iter().filter_map(|l| l.parse().ok()).collect())
    }

    fn changes(&self) -> Result<Box<dyn Changes>, StoreError> {
        Ok(Box::new(FileChanges::start(&self.root)?))
    }

    /// inotify on the key's lockfile alone (not the whole claims dir), plus
    /// the exit of a local holder's pid, which changes no file.
    fn watch_key(&self, key: &str, wake: Wake) -> Result<Box<dyn KeyWatch>, StoreError> {
        Ok(Box::new(FileKeyWatch::start(&self.root, key, wake)?))
    }

    fn file_root(&self) -> Option<&Root> {
        Some(&self.root)
    }
}

/// inotify on the claims dir and the events log's dir. A watch that cannot
/// be set (the dir does not exist yet) is watched one level up instead, and
/// its appearance is a [`Change::Resync`].
struct FileChanges {
    // Dropping it stops the notifications.
    watcher: RecommendedWatcher,
    rx: Receiver<notify::Result<notify::Event>>,
    claims_dir: PathBuf,
    events_file: PathBuf,
    follower: Option<Follower>,
    pending: std::collections::VecDeque<Change>,
}

impl FileChanges {
    fn start(root: &Root) -> Result<FileChanges, StoreError> {
        let (tx, rx) = channel();
        let mut watcher = notify::recommended_watcher(tx).map_err(notify_error)?;
        let claims_dir = root.claims_dir();
        let events_file = root.events_file();
        for dir in [
            claims_dir.as_path(),
            events_file.parent().unwrap_or(Path::new(".")),
        ] {
            watch_nearest(&mut watcher, dir)?;
        }
        // The log's current end: only lines appended from now on are changes.
        let follower = Follower::open(&events_file, 0).ok().map(|(f, _)| f);
        Ok(FileChanges {
            watcher,
            rx,
            claims_dir,
            events_file,
            follower,
            pending: Default::default(),
        })
    }

    fn absorb(&mut self, event: notify::Result<notify::Event>) {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                self.pending.push_back(Change::Resync {
                    why: format!("file notifications failed ({e}); re-reading everything"),
                });
                return;
            }
        };
        if event.need_rescan() {
            self.pending.push_back(Change::Resync {
                why: "the notification queue overflowed; re-reading everything".into(),
            });
        }
        let mut log_touched = false;
        let mut above = false;
        for t in touched(&event, &self.claims_dir, &self.events_file) {
            match t {
                Touched::EventsLog => log_touched = true,
                Touched::Entry(path) => {
                    if let Some(key) = path.file_name().and_then(key_of_lockfile) {
                        let change = Change::Claim { key };
                        if !self.pending.contains(&change) {
                            self.pending.push_back(change);
                        }
                    }
                }
                Touched::Other(path) => above |= self.claims_dir.starts_with(path),
            }
        }
        if above {
            // The claims dir (or a parent) came or went: watch it itself
            // now if it exists, so its keys are named from here on.
            let dirs = [self.claims_dir.clone(), self.events_file.with_file_name("")];
            for dir in dirs {
                let _ = watch_nearest(&mut self.watcher, &dir);
            }
            self.pending.push_back(Change::Resync {
                why: "the claims directory changed".into(),
            });
        }
        if log_touched {
            self.read_log();
        }
    }

    fn read_log(&mut self) {
        if self.follower.is_none() {
            self.follower = Follower::open(&self.events_file, 0).ok().map(|(f, _)| f);
        }
        let Some(f) = self.follower.as_mut() else {
            return;
        };
        loop {
            let Ok(poll) = f.poll() else { return };
            self.pending.extend(
                poll.lines
                    .iter()
                    .filter_map(|l| l.parse().ok())
                    .map(Change::Event),
            );
            if !poll.more {
                return;
            }
        }
    }
}

impl Changes for FileChanges {
    fn next(&mut self, timeout: Duration) -> Result<Option<Change>, StoreError> {
        if let Some(c) = self.pending.pop_front() {
            return Ok(Some(c));
        }
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(ev) => {
                    self.absorb(ev);
                    // Drain what already queued, so one burst is one batch.
                    while let Ok(ev) = self.rx.try_recv() {
                        self.absorb(ev);
                    }
                    if let Some(c) = self.pending.pop_front() {
                        return Ok(Some(c));
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => return Err(StoreError::FeedClosed),
            }
        }
    }
}

/// Watch `dir`, or its nearest existing ancestor when it does not exist yet.
fn watch_nearest(w: &mut RecommendedWatcher, dir: &Path) -> Result<(), StoreError> {
    let mut at = dir;
    loop {
        match w.watch(at, RecursiveMode::NonRecursive) {
            Ok(()) => return Ok(()),
            Err(e) => match at.parent() {
                Some(up) if !at.exists() => at = up,
                _ => return Err(notify_error(e)),
            },
        }
    }
}

fn notify_error(e: notify::Error) -> StoreError {
    StoreError::Config(format!("cannot watch the claims root: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

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
