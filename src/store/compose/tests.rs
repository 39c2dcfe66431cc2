use super::*;
use crate::claims::{AcquireOpts, AcquireOutcome, ClaimState};
use crate::store::backend::{Claims, Feed};
use crate::store::file::FileStore;

fn root() -> (tempfile::TempDir, Arc<dyn Backend>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = FileStore::new(Root::with_events_here(dir.path()));
    (dir, Arc::new(store))
}

fn rooted(parts: Vec<(&tempfile::TempDir, Arc<dyn Backend>)>) -> Store {
    Store::of_parts(
        parts
            .into_iter()
            .map(|(d, b)| (Origin::Root(d.path().to_path_buf()), true, b))
            .collect(),
    )
}

fn take(b: &dyn Backend, key: &str) {
    let got = b
        .acquire(key, "h", &AcquireOpts::default())
        .expect("acquire");
    assert!(matches!(got.outcome, AcquireOutcome::Acquired { .. }));
}

/// A member of copies: what it lists is a root's, but it takes no claims.
struct Copies(FileStore);

impl Claims for Copies {
    fn url(&self) -> String {
        "copies:".into()
    }
    fn words(&self) -> &'static crate::store::backend::Words {
        self.0.words()
    }
    fn rules(&self) -> crate::claims::ItemRules {
        crate::claims::ItemRules::Copy
    }
    fn takes_claims(&self) -> bool {
        false
    }
    fn acquire(
        &self,
        k: &str,
        h: &str,
        o: &AcquireOpts,
    ) -> Result<crate::store::Fenced<AcquireOutcome>, StoreError> {
        self.0.acquire(k, h, o)
    }
    fn release(
        &self,
        k: &str,
        h: &str,
        f: Option<crate::store::cursor::Fence>,
    ) -> Result<crate::store::Fenced<crate::claims::ReleaseOutcome>, StoreError> {
        Claims::release(&self.0, k, h, f)
    }
    fn renew(
        &self,
        k: &str,
        h: &str,
        t: i64,
        o: Option<&str>,
    ) -> Result<crate::store::Fenced<crate::claims::RenewOutcome>, StoreError> {
        Claims::renew(&self.0, k, h, t, o)
    }
    fn force_release(
        &self,
        k: &str,
        o: &crate::claims::ForceOpts,
    ) -> Result<crate::store::Fenced<crate::claims::ForceOutcome>, StoreError> {
        Claims::force_release(&self.0, k, o)
    }
    fn status(
        &self,
        k: &str,
        c: &mut Classifier,
    ) -> Result<crate::store::Fenced<crate::claims::Status>, StoreError> {
        Claims::status(&self.0, k, c)
    }
    fn list(
        &self,
        c: &mut Classifier,
        sink: &mut dyn crate::store::backend::ListSink,
    ) -> Result<crate::store::backend::ListEnd, StoreError> {
        Claims::list(&self.0, c, sink)
    }
}

impl Feed for Copies {
    fn changes(
        &self,
        after: Option<&crate::store::cursor::Cursor>,
    ) -> Result<Box<dyn crate::store::Changes>, StoreError> {
        Feed::changes(&self.0, after)
    }
}

impl Backend for Copies {}

#[test]
fn a_one_key_verb_over_one_root_goes_to_it_and_over_two_refuses_naming_both() {
    let (a, ba) = root();
    let one = rooted(vec![(&a, Arc::clone(&ba))]);
    assert_eq!(one.one("acquire").map(|m| m.ix).ok(), Some(OriginIx(0)));
    assert!(!one.several());
    let (b, bb) = root();
    let two = rooted(vec![(&a, ba), (&b, bb)]);
    let err = two.one("acquire").expect_err("two roots");
    assert!(matches!(err, StoreError::SeveralOrigins { .. }), "{err}");
    let words = err.to_string();
    // The words several roots have always had.
    assert!(words.contains("pass one --root"), "{words}");
    for dir in [&a, &b] {
        assert!(words.contains(&*dir.path().to_string_lossy()), "{words}");
    }
    assert!(two.several());
}

#[test]
fn several_origins_are_worded_as_stores_once_one_is_no_root() {
    let (a, ba) = root();
    let (_b, bb) = root();
    let store = Store::of_parts(vec![
        (Origin::Root(a.path().to_path_buf()), true, ba),
        (Origin::Site { url: bb.url() }, true, bb),
    ]);
    let words = store.one("status").expect_err("two origins").to_string();
    assert!(words.contains("one --store or one --root"), "{words}");
    assert!(words.contains("file:"), "{words}");
}

#[test]
fn copies_that_take_no_claims_leave_one_site_one_origin() {
    let (_a, site) = root();
    let b = tempfile::tempdir().expect("tempdir");
    let copies: Arc<dyn Backend> =
        Arc::new(Copies(FileStore::new(Root::with_events_here(b.path()))));
    let store = Store::of_parts(vec![
        (Origin::Site { url: site.url() }, true, site),
        (Origin::Published { site: OriginIx(0) }, false, copies),
    ]);
    assert!(!store.several());
    assert_eq!(store.one("release").map(|m| m.ix).ok(), Some(OriginIx(0)));
    assert_eq!(
        store.members()[1].label,
        format!("{} hosts", store.members()[0].label)
    );
}

#[test]
fn a_listing_covers_every_member_that_takes_claims_each_at_its_origin() {
    let (a, ba) = root();
    let (b, bb) = root();
    take(&*ba, "k1");
    take(&*bb, "k1");
    take(&*bb, "k2");
    let store = rooted(vec![(&a, ba), (&b, bb)]);
    let listing = store.list().expect("list");
    let got: Vec<(OriginIx, usize)> = listing
        .members
        .iter()
        .map(|l| (l.at, l.sweep.claims.len()))
        .collect();
    assert_eq!(got, [(OriginIx(0), 1), (OriginIx(1), 2)]);
    assert!(listing.members[1]
        .sweep
        .claims
        .iter()
        .all(|s| s.state == ClaimState::Live));
    assert!(listing.fleet.is_none());
}

#[test]
fn several_roots_name_each_log_by_its_root_and_one_root_leaves_its_log_unnamed() {
    let (a, ba) = root();
    let one = rooted(vec![(&a, Arc::clone(&ba))]);
    let logs = one.logs().expect("logs");
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].name, None);
    let (b, bb) = root();
    let two = rooted(vec![(&a, ba), (&b, bb)]);
    let names: Vec<Option<String>> = two
        .logs()
        .expect("logs")
        .into_iter()
        .map(|l| l.name)
        .collect();
    assert_eq!(
        names,
        [
            Some(a.path().to_string_lossy().into_owned()),
            Some(b.path().to_string_lossy().into_owned())
        ]
    );
}

#[test]
fn repair_is_each_repairing_members_and_refused_where_none_repairs() {
    let (a, ba) = root();
    let store = rooted(vec![(&a, ba)]);
    let fixes = store.repair().expect("a root repairs");
    assert_eq!(fixes.len(), 1);
    assert_eq!(fixes[0].0, OriginIx(0));
    let b = tempfile::tempdir().expect("tempdir");
    let none = Store::of(vec![Arc::new(Copies(FileStore::new(
        Root::with_events_here(b.path()),
    )))]);
    assert!(matches!(none.repair(), Err(StoreError::Unsupported(_))));
}

#[test]
fn roots_are_labelled_by_the_fewest_components_that_tell_them_apart() {
    let p: Vec<&Path> = ["/srv/a/repo", "/srv/b/repo", "/x/tools"]
        .iter()
        .map(Path::new)
        .collect();
    assert_eq!(labels(&p), ["a/repo", "b/repo", "tools"]);
    let p: Vec<&Path> = ["/x/a", "/y/x/a"].iter().map(Path::new).collect();
    assert_eq!(labels(&p), ["/x/a", "y/x/a"]);
}
