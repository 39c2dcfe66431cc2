//! The publisher against a sink that records what it is asked to write:
//! what an idle root costs at a resweep, and that what changed is still
//! written.

use super::*;
use crate::claims::{ClaimRecord, LocalIdentity};
use crate::store::compose::Origin;
use crate::store::file::feed::FeedOpts;
use crate::store::file::FileStore;
use crate::store::sink::{CopyOp, FleetRequest, HeldCopy, Mirrored, RootSummary};
use std::sync::Mutex;

/// Every claim op written, in order.
type Written = Arc<Mutex<Vec<CopyOp>>>;

struct Recorder(Written);

impl Sink for Recorder {
    fn describe(&self) -> String {
        "recorder".into()
    }
    fn begin(&mut self, _: i64) -> Result<i64, StoreError> {
        Ok(1)
    }
    fn alive(&self) -> Result<(), StoreError> {
        Ok(())
    }
    fn own(&mut self, _: &PublishedRoot, _: &RootOwner) -> Result<(), PublishError> {
        Ok(())
    }
    fn say_owner(&mut self, _: &str, _: &RootOwner) -> Result<(), StoreError> {
        Ok(())
    }
    fn settle(&mut self) {}
    fn host(&mut self, _: &HostRecord) -> Result<(), StoreError> {
        Ok(())
    }
    fn held(&mut self, _: &str) -> Result<Vec<HeldCopy>, StoreError> {
        Ok(Vec::new())
    }
    fn write(
        &mut self,
        _: &str,
        ops: &[CopyOp],
        written: &mut dyn FnMut(usize),
    ) -> Result<(), StoreError> {
        if let Ok(mut w) = self.0.lock() {
            w.extend(ops.iter().cloned());
        }
        written(ops.len());
        Ok(())
    }
    fn hazards(&mut self, _: &str, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
    fn summary(&mut self, _: &str, _: &RootSummary) -> Result<(), StoreError> {
        Ok(())
    }
    fn mirrored(&mut self, _: &str, _: &str) -> Result<Mirrored, StoreError> {
        Ok(Mirrored::Nothing)
    }
    fn append_event(&mut self, _: &str, _: &str, _: u64, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
    fn requests(&mut self, _: &str) -> Result<Vec<Request>, StoreError> {
        Ok(Vec::new())
    }
    fn take(&mut self, _: &Request, _: &FleetRequest) -> Result<bool, StoreError> {
        Ok(false)
    }
    fn answer(&mut self, _: &Request, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
    fn end(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// A live TTL claim of this process on `key`, held by `holder`.
fn write_claim(root: &Root, key: &str, holder: &str, now: i64) {
    let id = LocalIdentity::current();
    let rec = ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: holder.into(),
        acquired_at: now,
        pid: std::process::id() as i32,
        host: id.hostname.clone(),
        expires_at: Some(now + 3_600_000),
        reason: None,
        harness: None,
        machine_id: Some(id.machine_id.clone()).filter(|m| !m.is_empty()),
        metadata: Default::default(),
    };
    let yaml = rec.to_yaml().expect("yaml");
    std::fs::write(root.lockfile(key), yaml).expect("lockfile");
}

/// A publisher of one root holding `keys`, synced into a recorder.
fn synced(dir: &std::path::Path, keys: &[&str], now: i64) -> (Publisher, Root, Written) {
    let root = Root::new(dir.to_path_buf());
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    for key in keys {
        write_claim(&root, key, "agent", now);
    }
    let roots = Roots::resolve(&[dir.to_path_buf()], None).expect("roots");
    let backend: Arc<dyn Backend> =
        Arc::new(FileStore::new(root.clone()).with_feed(FeedOpts::default()));
    let store = Store::of_parts(vec![(Origin::Root(root.root.clone()), true, backend)]);
    let written = Written::default();
    let opts = PublishOpts::new("m".into(), "h".into(), 10);
    let sink = Box::new(Recorder(Arc::clone(&written)));
    let mut p = Publisher::new(sink, "recorder:".into(), store, &roots, opts);
    p.lease = Some(1);
    p.sync_root(0, now).expect("sync");
    (p, root, written)
}

fn puts(w: &Written) -> Vec<String> {
    let w = w.lock().expect("written");
    w.iter()
        .filter_map(|op| match op {
            CopyOp::Put { key, .. } => Some(key.clone()),
            CopyOp::Delete { .. } => None,
        })
        .collect()
}

#[test]
fn a_resweep_of_an_unchanged_root_writes_nothing_and_one_that_changed_writes_only_that() {
    let dir = tempfile::tempdir().expect("dir");
    let now = now_ms();
    let (mut p, root, written) = synced(dir.path(), &["a", "b", "c"], now);
    let mut first = puts(&written);
    first.sort();
    assert_eq!(first, ["a", "b", "c"], "the sync puts every claim");
    written.lock().expect("written").clear();

    // Listed again, nothing changed: nothing is written.
    p.roots[0].drive(Input::Relist, now);
    p.publish_changes(0, now).expect("publish");
    assert!(puts(&written).is_empty(), "{:?}", puts(&written));

    // A record that changed under the same state (another holder) is
    // written, and it alone.
    write_claim(&root, "b", "another", now);
    p.roots[0].drive(Input::Relist, now);
    p.publish_changes(0, now).expect("publish");
    assert_eq!(puts(&written), ["b"]);
}

#[test]
fn a_resweep_lists_a_root_only_when_its_mirror_did_not_since_the_last_one() {
    let dir = tempfile::tempdir().expect("dir");
    let now = now_ms();
    let (mut p, _root, _written) = synced(dir.path(), &["a"], now);
    let listings = |p: &Publisher| p.roots[0].driver.counters().listings();
    let synced_at = listings(&p);
    // The sync's listing is this period's.
    p.roots[0].resweep(now);
    assert_eq!(listings(&p), synced_at);
    // None since: the resweep lists.
    p.roots[0].resweep(now);
    assert_eq!(listings(&p), synced_at + 1);
    // The mirror's own safety net listed meanwhile: not again.
    let later = now + crate::store::mirror::RELIST_EVERY_MS + 1;
    p.roots[0].drive(Input::Tick(later), later);
    assert_eq!(listings(&p), synced_at + 2, "the safety net listed");
    p.roots[0].resweep(later);
    assert_eq!(listings(&p), synced_at + 2);
}

#[test]
fn a_resweep_of_an_idle_root_stands_on_its_claims_dir_s_stamp_and_lists_a_changed_one() {
    let dir = tempfile::tempdir().expect("dir");
    let now = now_ms();
    let (mut p, root, written) = synced(dir.path(), &["a"], now);
    std::thread::sleep(Duration::from_millis(
        crate::claims::SETTLED_MS as u64 + 100,
    ));
    // Listed once the claims dir has settled: the listing's mark holds.
    p.roots[0].drive(Input::Relist, now);
    let (listings, looks) = {
        let c = p.roots[0].driver.counters();
        (c.listings(), c.looks())
    };
    p.roots[0].resweep(now);
    p.roots[0].resweep(now);
    let c = p.roots[0].driver.counters();
    assert_eq!(c.listings(), listings, "an idle root was listed again");
    assert_eq!(c.looks(), looks + 1, "the resweep looked at its mark");
    // A claim made with no notification heard: the next resweep lists it.
    written.lock().expect("written").clear();
    write_claim(&root, "b", "another", now);
    p.roots[0].resweep(now);
    p.publish_changes(0, now).expect("publish");
    assert_eq!(p.roots[0].driver.counters().listings(), listings + 1);
    assert_eq!(puts(&written), ["b"]);
}
