//! Several file roots as one store (`--root A --root B`, `FNO_CLAIMS_ROOT=A:B`).
//!
//! What covers every root (list, doctor, repair, events, the change feed)
//! covers each root in turn and merges; what names one key (the verbs, a
//! key's watch) refuses, because which root a key lives in is the
//! operator's choice, never a guess: the refusal is the usage error the
//! CLI has always given (`RootsError::NotOne`).

use super::file::FileStore;
use super::{Change, Changes, Fenced, KeyWatch, Listing, Origins, Store, StoreError, Wake};
use crate::claims::{
    sweep_roots, AcquireOpts, AcquireOutcome, Fix, ForceOpts, ForceOutcome, ItemRules,
    ReleaseOutcome, RenewOutcome, Roots, Status, Sweep,
};
use crate::events::history::{History, Log};
use crate::events::Event;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// Every root of a [`Roots`] of two or more, each a [`FileStore`].
pub struct MultiStore {
    roots: Roots,
    stores: Vec<FileStore>,
}

impl MultiStore {
    pub fn new(roots: Roots) -> MultiStore {
        let stores = roots
            .as_slice()
            .iter()
            .cloned()
            .map(FileStore::new)
            .collect();
        MultiStore { roots, stores }
    }

    /// The refusal of a verb on one key: several roots were named.
    fn one_key(&self, verb: &'static str) -> StoreError {
        match self.roots.single(verb) {
            Err(e) => StoreError::Roots(e),
            // Never reached: a MultiStore has two roots or more. Said in
            // words all the same rather than acting on the only root.
            Ok(_) => StoreError::Unsupported(format!("{verb} needs one claims root")),
        }
    }
}

/// One listing of every root: the claims sorted by key (then by the order
/// the roots were named, so one key held in two roots shows twice, side by
/// side), the counts added up, the hazards root by root, and where each
/// came from.
fn merged(roots: &Roots) -> Listing {
    let several = sweep_roots(roots);
    let mut origins = Origins {
        roots: roots.as_slice().iter().map(|r| r.root.clone()).collect(),
        claims: Vec::new(),
        hazards: Vec::new(),
    };
    let counts = several.counts();
    let mut claims = Vec::new();
    let mut hazards = Vec::new();
    let mut tagged: Vec<(usize, _)> = Vec::new();
    for (i, sweep) in several.sweeps.into_iter().enumerate() {
        tagged.extend(sweep.claims.into_iter().map(|c| (i, c)));
        origins
            .hazards
            .extend(std::iter::repeat_n(i, sweep.hazards.len()));
        hazards.extend(sweep.hazards);
    }
    tagged.sort_by(|a, b| a.1.key.cmp(&b.1.key).then(a.0.cmp(&b.0)));
    for (i, c) in tagged {
        origins.claims.push(i);
        claims.push(c);
    }
    let mut listing = Listing::of_sweep(Sweep {
        root: roots.first().root.clone(),
        claims,
        counts,
        hazards,
    });
    listing.origins = Some(origins);
    listing
}

impl Store for MultiStore {
    fn url(&self) -> String {
        let dirs: Vec<String> = self
            .roots
            .as_slice()
            .iter()
            .map(|r| r.root.to_string_lossy().into_owned())
            .collect();
        format!("file:{}", dirs.join(":"))
    }

    /// Every root's claims are lockfiles.
    fn item_rules(&self) -> ItemRules {
        ItemRules::Lockfile
    }

    fn acquire(
        &self,
        _: &str,
        _: &str,
        _: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        Err(self.one_key("acquire"))
    }

    fn release(&self, _: &str, _: &str) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        Err(self.one_key("release"))
    }

    fn status(&self, _: &str) -> Result<Fenced<Status>, StoreError> {
        Err(self.one_key("status"))
    }

    fn renew(
        &self,
        _: &str,
        _: &str,
        _: i64,
        _: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        Err(self.one_key("renew"))
    }

    fn force_release(&self, _: &str, _: &ForceOpts) -> Result<Fenced<ForceOutcome>, StoreError> {
        Err(self.one_key("force-release"))
    }

    /// A key has no one place under several roots: each root's own store
    /// names it (the dashboard runs a verb on the root of the row).
    fn locate(&self, _: &str) -> PathBuf {
        PathBuf::new()
    }

    fn list(&self) -> Result<Listing, StoreError> {
        Ok(merged(&self.roots))
    }

    /// Each root's head would still be merged with every other root's
    /// listing: the whole listing costs no more.
    fn list_head(&self, _: usize) -> Result<Option<Listing>, StoreError> {
        Ok(None)
    }

    fn doctor(&self) -> Result<Listing, StoreError> {
        // The sweep already carries every hazard a file root can have.
        self.list()
    }

    fn repair(&self) -> Result<Vec<Fix>, StoreError> {
        let mut fixes = Vec::new();
        for store in &self.stores {
            fixes.extend(store.repair()?);
        }
        Ok(fixes)
    }

    /// The last `n` of every root's events, by time.
    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        let mut all = Vec::new();
        for store in &self.stores {
            all.extend(store.events(n)?);
        }
        all.sort_by(|a, b| a.ts().cmp(&b.ts()));
        let from = all.len().saturating_sub(n);
        all.drain(..from);
        Ok(all)
    }

    /// Each root keeps its own log: a face reads the history of the root
    /// it shows (the dashboard's selected row's), through that root's store.
    fn history(&self, log: &Log) -> Result<Box<dyn History>, StoreError> {
        if let Log::Root(dir) = log {
            if let Some(store) = self.stores.iter().find(|s| s.root().root == *dir) {
                return store.history(&Log::Own);
            }
        }
        Err(StoreError::Unsupported(format!(
            "{} roots keep {} events logs: read one root's history",
            self.stores.len(),
            self.stores.len()
        )))
    }

    fn parts(&self) -> Option<Vec<(String, &dyn Store)>> {
        Some(
            self.stores
                .iter()
                .map(|s| (root_name(s), s as &dyn Store))
                .collect(),
        )
    }

    fn logs(&self) -> Result<Vec<(Option<String>, Log)>, StoreError> {
        Ok(self
            .stores
            .iter()
            .map(|s| (Some(root_name(s)), Log::Root(s.root().root.clone())))
            .collect())
    }

    fn changes(&self) -> Result<Box<dyn Changes>, StoreError> {
        let feeds = self
            .stores
            .iter()
            .map(|s| s.changes())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Box::new(Merged::start(feeds)))
    }

    fn watch_key(&self, _: &str, _: Wake) -> Result<Box<dyn KeyWatch>, StoreError> {
        Err(self.one_key("acquire --wait or run"))
    }
}

/// How one root is named wherever several are told apart (its series in
/// `metrics`, its rows "as of").
fn root_name(s: &FileStore) -> String {
    s.root().root.to_string_lossy().into_owned()
}

/// Every root's feed drained by a thread of its own into one channel, so a
/// quiet root never delays a busy one's news.
struct Merged {
    rx: Receiver<Result<Change, StoreError>>,
}

/// How long a root's thread waits for its feed before it looks whether the
/// merged feed is still wanted.
const POLL: Duration = Duration::from_millis(500);

impl Merged {
    fn start(feeds: Vec<Box<dyn Changes>>) -> Merged {
        let (tx, rx) = channel();
        for feed in feeds {
            let tx: Sender<_> = tx.clone();
            std::thread::spawn(move || drain(feed, tx));
        }
        Merged { rx }
    }
}

fn drain(mut feed: Box<dyn Changes>, tx: Sender<Result<Change, StoreError>>) {
    loop {
        let got = match feed.next(POLL) {
            Ok(None) => continue,
            Ok(Some(change)) => Ok(change),
            Err(e) => Err(e),
        };
        let ended = got.is_err();
        // The merged feed was dropped: nobody listens any more.
        if tx.send(got).is_err() || ended {
            return;
        }
    }
}

impl Changes for Merged {
    fn next(&mut self, timeout: Duration) -> Result<Option<Change>, StoreError> {
        match self.rx.recv_timeout(timeout) {
            Ok(got) => got.map(Some),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(StoreError::FeedClosed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Root;

    fn two_roots() -> (tempfile::TempDir, tempfile::TempDir, MultiStore) {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let roots = Roots::resolve_from(
            &[a.path().to_path_buf(), b.path().to_path_buf()],
            None,
            None,
            None,
        )
        .unwrap();
        (a, b, MultiStore::new(roots))
    }

    fn take(dir: &tempfile::TempDir, key: &str) {
        let store = FileStore::new(Root {
            root: dir.path().to_path_buf(),
            events_dir: Some(dir.path().to_path_buf()),
        });
        let got = store.acquire(key, "h", &AcquireOpts::default()).unwrap();
        assert!(matches!(got.outcome, AcquireOutcome::Acquired { .. }));
    }

    #[test]
    fn several_roots_list_as_one_sorted_by_key_each_claim_naming_its_root() {
        let (a, b, store) = two_roots();
        take(&b, "k1");
        take(&a, "k2");
        take(&a, "k1");
        let listing = store.list().unwrap();
        let keys: Vec<&str> = listing
            .sweep
            .claims
            .iter()
            .map(|c| c.key.as_str())
            .collect();
        assert_eq!(keys, ["k1", "k1", "k2"]);
        let origins = listing.origins.as_ref().expect("several roots say where");
        // k1 of the first root named comes first, then the second's.
        assert_eq!(origins.claims, [0, 1, 0]);
        assert_eq!(listing.sweep.counts.live, 3);
        // The JSON is `list --json` over several roots, as it always was.
        let json = listing.to_json();
        assert_eq!(json["roots"].as_array().map(Vec::len), Some(2));
        assert_eq!(
            json["claims"][1]["root"].as_str(),
            Some(b.path().to_string_lossy().as_ref())
        );
    }

    #[test]
    fn a_verb_on_one_key_is_refused_with_the_roots_named_and_nothing_written() {
        let (a, _b, store) = two_roots();
        let err = store
            .acquire("k", "h", &AcquireOpts::default())
            .unwrap_err();
        assert!(matches!(err, StoreError::Roots(_)), "{err}");
        assert!(err.to_string().contains("pass one --root"), "{err}");
        assert!(!a.path().join(".fno").exists());
    }

    #[test]
    fn the_merged_feed_brings_news_of_every_root() {
        let (a, b, store) = two_roots();
        // Claims dirs that exist, so what the feed names is a key (a dir
        // that appears is a re-read of everything instead).
        take(&a, "first");
        take(&b, "first");
        let mut feed = store.changes().unwrap();
        take(&a, "ka");
        take(&b, "kb");
        let mut keys = std::collections::BTreeSet::new();
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while keys.len() < 2 && std::time::Instant::now() < until {
            if let Ok(Some(Change::Claim { key })) = feed.next(Duration::from_millis(200)) {
                keys.insert(key);
            }
        }
        assert_eq!(keys.into_iter().collect::<Vec<_>>(), ["ka", "kb"]);
    }
}
