//! The driver against a scripted member (a feed the test writes, reads
//! that fail or block when told) and a real file root.

use super::*;
use crate::claims::{
    AcquireOpts, AcquireOutcome, ClaimRecord, ClaimState, Classifier, Counts, ForceOpts,
    ForceOutcome, Loc, LocalIdentity, ReleaseOutcome, RenewOutcome, Root, Sweep,
};
use crate::store::backend::{Claims, Feed, Link, ListEnd, ListSink, MemberListing, Words};
use crate::store::compose::{Origin, Store};
use crate::store::{Cursor, Fence, Fenced};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Condvar, Mutex};

mod lanes;

const NOW: i64 = 1_800_000_000_000;
/// The bound on "it never came" (not a timing assertion).
const NEVER: Duration = Duration::from_secs(20);

fn rec(key: &str, expires_at: Option<i64>) -> ClaimRecord {
    ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: "h".into(),
        acquired_at: NOW - 60_000,
        pid: 1,
        host: "elsewhere".into(),
        expires_at,
        reason: None,
        harness: None,
        machine_id: Some("m-elsewhere:1".into()),
        metadata: Default::default(),
    }
}

/// A member whose claims are what the test says, judged by their TTL
/// against the clock they are read at.
#[derive(Default)]
struct Scripted {
    claims: Mutex<BTreeMap<String, ClaimRecord>>,
    /// The feeds opened, each fed by the test.
    feeds: Mutex<Vec<Sender<Result<Change, StoreError>>>>,
    opened: AtomicUsize,
    /// Fail this many reads (a store away).
    fail: AtomicUsize,
    /// Hold every listing until released.
    blocked: Mutex<bool>,
    released: Condvar,
    listings: AtomicUsize,
    linked: AtomicBool,
    /// List this many claims a page (0: all in one).
    page: usize,
}

impl Scripted {
    fn put(&self, key: &str, r: ClaimRecord) {
        self.claims.lock().expect("claims").insert(key.into(), r);
    }

    fn say(&self, c: Change) {
        for f in self.feeds.lock().expect("feeds").iter() {
            let _ = f.send(Ok(c.clone()));
        }
    }

    fn end_feeds(&self) {
        for f in self.feeds.lock().expect("feeds").drain(..) {
            let _ = f.send(Err(StoreError::FeedClosed));
        }
    }

    fn status_of(&self, key: &str, now: i64) -> Status {
        let place = Loc::new(0, ItemRules::StoreKey, Path::new(key));
        let mut s = Status::free(key.into(), place, "no claim".into());
        if let Some(r) = self.claims.lock().expect("claims").get(key) {
            s.state = match r.expires_at {
                Some(at) if at <= now => ClaimState::Stale,
                _ => ClaimState::Live,
            };
            s.why = "scripted".into();
            s.record = Some(r.clone());
        }
        s
    }

    fn failing(&self) -> Result<(), StoreError> {
        let left = self.fail.load(Ordering::SeqCst);
        if left == 0 {
            return Ok(());
        }
        self.fail.store(left - 1, Ordering::SeqCst);
        Err(StoreError::Unsupported("away".into()))
    }
}

use std::sync::atomic::Ordering;

static WORDS: Words = Words {
    noun: "key",
    archive: "nowhere",
};

fn unsupported<T>() -> Result<T, StoreError> {
    Err(StoreError::Unsupported("scripted".into()))
}

impl Claims for Scripted {
    fn url(&self) -> String {
        "scripted:".into()
    }
    fn words(&self) -> &'static Words {
        &WORDS
    }
    fn rules(&self) -> ItemRules {
        ItemRules::StoreKey
    }
    fn acquire(
        &self,
        _: &str,
        _: &str,
        _: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        unsupported()
    }
    fn release(
        &self,
        _: &str,
        _: &str,
        _: Option<Fence>,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        unsupported()
    }
    fn renew(
        &self,
        _: &str,
        _: &str,
        _: i64,
        _: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        unsupported()
    }
    fn force_release(&self, _: &str, _: &ForceOpts) -> Result<Fenced<ForceOutcome>, StoreError> {
        unsupported()
    }
    fn status(&self, key: &str, c: &mut Classifier) -> Result<Fenced<Status>, StoreError> {
        self.failing()?;
        Ok(Fenced::plain(self.status_of(key, c.now())))
    }
    fn list(&self, c: &mut Classifier, sink: &mut dyn ListSink) -> Result<ListEnd, StoreError> {
        let mut blocked = self.blocked.lock().expect("blocked");
        while *blocked {
            blocked = self.released.wait(blocked).expect("blocked");
        }
        drop(blocked);
        self.failing()?;
        self.listings.fetch_add(1, Ordering::SeqCst);
        let keys: Vec<String> = self
            .claims
            .lock()
            .expect("claims")
            .keys()
            .cloned()
            .collect();
        let take = sink.wants().unwrap_or(usize::MAX);
        let claims: Vec<Status> = keys
            .iter()
            .take(take)
            .map(|k| self.status_of(k, c.now()))
            .collect();
        let complete = claims.len() == keys.len();
        let per = if self.page == 0 {
            claims.len().max(1)
        } else {
            self.page
        };
        let mut claims = claims.into_iter().peekable();
        while claims.peek().is_some() {
            let page: Vec<Status> = claims.by_ref().take(per).collect();
            let mut counts = Counts::default();
            page.iter().for_each(|s| counts.add(s.state));
            sink.page(MemberListing::of_sweep(
                Sweep {
                    root: PathBuf::from("scripted:"),
                    claims: page,
                    counts,
                    hazards: Vec::new(),
                },
                ItemRules::StoreKey,
            ));
        }
        Ok(ListEnd { at: None, complete })
    }
}

struct ScriptedFeed(Receiver<Result<Change, StoreError>>);

impl Changes for ScriptedFeed {
    fn next(&mut self, timeout: Duration) -> Result<Option<Change>, StoreError> {
        match self.0.recv_timeout(timeout) {
            Ok(got) => got.map(Some),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(StoreError::FeedClosed),
        }
    }
}

impl Feed for Scripted {
    fn changes(&self, _: Option<&Cursor>) -> Result<Box<dyn Changes>, StoreError> {
        let (tx, rx) = channel();
        self.feeds.lock().expect("feeds").push(tx);
        self.opened.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(ScriptedFeed(rx)))
    }
}

impl Link for Scripted {
    fn probe(&self, _: Duration) -> Result<LinkFacts, StoreError> {
        Ok(LinkFacts {
            reached: "scripted:1".into(),
            leader: None,
            at: Some(7),
        })
    }
}

impl Backend for Scripted {
    fn link(&self) -> Option<&dyn Link> {
        self.linked
            .load(Ordering::SeqCst)
            .then_some(self as &dyn Link)
    }
}

fn whole(head: usize) -> Want {
    Want::Whole { head }
}

fn delta_keys(us: &[Update]) -> Vec<(String, ClaimState)> {
    let mut keys: Vec<(String, ClaimState)> = us
        .iter()
        .filter_map(|u| u.delta.as_ref())
        .flat_map(|d| {
            d.rows
                .iter()
                .map(|r| (r.status.key.clone(), r.status.state))
        })
        .collect();
    keys.sort();
    keys
}

#[test]
fn a_driver_opens_its_feed_before_it_lists_and_says_every_row_as_a_whole() {
    let s = Scripted::default();
    s.put("a", rec("a", None));
    s.put("b", rec("b", None));
    let mut d = Driver::over(&s, OriginIx(3), None, whole(0), DriveOpts::default(), NOW);
    let us = d.start(NOW).expect("start");
    assert_eq!(s.opened.load(Ordering::SeqCst), 1, "the feed first");
    assert_eq!(us.len(), 1, "{us:?}");
    let delta = us[0].delta.as_ref().expect("a delta");
    assert!(delta.whole.is_some());
    assert_eq!(us[0].at, OriginIx(3));
    assert!(
        delta.rows.iter().all(|r| r.path.origin() == 3),
        "stamped with its origin"
    );
    assert_eq!(delta.tally.as_ref().map(|t| t.counts.live), Some(2));
    assert_eq!(d.counters().listings(), 1);
}

#[test]
fn a_change_the_feed_brings_is_one_reread_of_that_key() {
    let s = Scripted::default();
    s.put("a", rec("a", None));
    let mut d = Driver::over(&s, OriginIx(0), None, whole(0), DriveOpts::default(), NOW);
    d.start(NOW).expect("start");
    s.put("b", rec("b", None));
    s.say(Change::Claim { key: "b".into() });
    let us = d.catch_up(NOW).expect("catch up");
    assert_eq!(delta_keys(&us), vec![("b".to_string(), ClaimState::Live)]);
    assert_eq!((d.counters().reads(), d.counters().listings()), (1, 1));
    assert_eq!(d.tally().counts.live, 2);
}

/// A root of lockfiles on "this" machine (`m-here:1`), whose pid 100 is
/// alive and every other gone, each lockfile written as `(key, pid, ttl)`.
fn root_of(
    claims: &[(&str, i32, Option<i64>)],
    probe: fn(i32) -> Option<i64>,
) -> (
    tempfile::TempDir,
    crate::store::file::FileStore,
    crate::store::mirror::judge::Judge,
) {
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    let me = LocalIdentity {
        machine_id: "m-here:1".into(),
        hostname: "here".into(),
    };
    for (k, pid, expires_at) in claims {
        let mut r = rec(k, *expires_at);
        r.pid = *pid;
        r.machine_id = Some(me.machine_id.clone());
        r.host = "here".into();
        std::fs::write(root.lockfile(k), r.to_yaml().expect("yaml")).expect("write");
    }
    let judge = crate::store::mirror::judge::Judge::with(me, probe);
    (td, crate::store::file::FileStore::new(root), judge)
}

fn pid_100_alive(pid: i32) -> Option<i64> {
    (pid == 100).then_some(NOW - 3_600_000)
}

#[test]
fn a_tick_comes_after_the_rows_it_re_judged_in_the_same_update() {
    // Its holder gone: suspect while its TTL runs, stale once it ran out.
    let (_td, store, judge) = root_of(&[("t", 200, Some(NOW + 1500))], pid_100_alive);
    let mut d = Driver::over(
        &store,
        OriginIx(0),
        Some(judge),
        whole(0),
        DriveOpts::default(),
        NOW,
    );
    let us = d.start(NOW).expect("start");
    assert_eq!(
        delta_keys(&us),
        vec![("t".to_string(), ClaimState::Suspect)]
    );
    let us = d.handle(Input::Tick(NOW + 3000), NOW + 3000).expect("tick");
    assert_eq!(us.len(), 1, "{us:?}");
    assert_eq!(us[0].tick, Some(NOW + 3000));
    assert_eq!(delta_keys(&us), vec![("t".to_string(), ClaimState::Stale)]);
    // Nothing moved: the tick alone is still said.
    let us = d.handle(Input::Tick(NOW + 4000), NOW + 4000).expect("tick");
    assert_eq!(us, vec![Update::tick(OriginIx(0), NOW + 4000)]);
}

#[test]
fn a_driver_of_named_keys_reads_them_and_never_lists_or_opens_a_feed() {
    let s = Scripted::default();
    s.put("a", rec("a", None));
    s.put("k", rec("k", None));
    let keys = BTreeSet::from(["k".to_string()]);
    let mut d = Driver::over(
        &s,
        OriginIx(0),
        None,
        Want::Keys(keys),
        DriveOpts::default(),
        NOW,
    );
    d.start(NOW).expect("start");
    assert_eq!((d.counters().reads(), d.counters().listings()), (1, 0));
    assert_eq!(s.opened.load(Ordering::SeqCst), 0);
    assert!(d.row("k").is_some() && d.row("a").is_none());
    d.handle(Input::Relist, NOW).expect("relist");
    assert_eq!((d.counters().reads(), d.counters().listings()), (2, 0));
    s.claims.lock().expect("claims").remove("k");
    d.look_again("k");
    d.handle(Input::Feed(Vec::new()), NOW).expect("settle");
    assert!(d.row("k").is_none(), "released: free");
}

#[test]
fn a_feed_that_ends_is_opened_again_and_everything_listed_again() {
    let s = Scripted::default();
    s.put("a", rec("a", None));
    let mut d = Driver::over(&s, OriginIx(0), None, whole(0), DriveOpts::default(), NOW);
    d.start(NOW).expect("start");
    s.end_feeds();
    let us = d.catch_up(NOW).expect("catch up");
    assert_eq!(s.opened.load(Ordering::SeqCst), 2, "opened again");
    assert_eq!(d.counters().listings(), 2, "what it missed is listed");
    let link = us.iter().find_map(|u| u.facts.as_ref()?.link.clone());
    assert!(matches!(link, Some(LinkState::FeedDown(_))), "{us:?}");
}

#[test]
fn a_feed_that_lost_changes_or_cannot_name_them_has_everything_listed_again() {
    let s = Scripted::default();
    s.put("a", rec("a", None));
    let mut d = Driver::over(&s, OriginIx(0), None, whole(0), DriveOpts::default(), NOW);
    d.start(NOW).expect("start");
    // Written while the feed was losing changes: named by nothing else.
    s.put("b", rec("b", None));
    s.say(Change::Relist {
        why: Some("overflow".into()),
    });
    let us = d.catch_up(NOW).expect("catch up");
    assert_eq!(d.counters().listings(), 2, "lost changes are listed again");
    let whole = us.iter().find_map(|u| u.delta.as_ref()?.whole.clone());
    assert_eq!(whole.and_then(|w| w.resync).as_deref(), Some("overflow"));
    assert_eq!(d.tally().counts.live, 2);
    // Nothing lost, but only a listing sees it (a misnamed lockfile).
    s.put("c", rec("c", None));
    s.say(Change::Relist { why: None });
    d.catch_up(NOW).expect("catch up");
    assert_eq!(
        d.counters().listings(),
        3,
        "a change no read names is listed"
    );
    assert_eq!(d.tally().counts.live, 3);
}

#[test]
fn a_read_that_fails_is_an_error_and_its_key_is_read_at_the_next_round() {
    let s = Scripted::default();
    let mut d = Driver::over(&s, OriginIx(0), None, whole(0), DriveOpts::default(), NOW);
    d.start(NOW).expect("start");
    s.put("a", rec("a", None));
    s.fail.store(1, Ordering::SeqCst);
    d.handle(Input::Reread("a".into()), NOW)
        .expect_err("the store is away");
    let us = d.handle(Input::Tick(NOW + 1000), NOW + 1000).expect("back");
    assert_eq!(delta_keys(&us), vec![("a".to_string(), ClaimState::Live)]);
}

#[test]
fn a_listing_that_fails_at_start_is_tried_again_at_the_next_round() {
    let s = Scripted::default();
    s.put("a", rec("a", None));
    s.fail.store(1, Ordering::SeqCst);
    let mut d = Driver::over(&s, OriginIx(0), None, whole(0), DriveOpts::default(), NOW);
    d.start(NOW).expect_err("away");
    assert!(!d.listed());
    let us = d
        .handle(Input::Tick(NOW + 1000), NOW + 1000)
        .expect("listed");
    assert!(us
        .iter()
        .any(|u| u.delta.as_ref().is_some_and(|d| d.whole.is_some())));
    assert_eq!(us.last().and_then(|u| u.tick), Some(NOW + 1000));
    assert_eq!(
        s.opened.load(Ordering::SeqCst),
        1,
        "the feed it opened stays"
    );
}

#[test]
fn a_head_comes_before_the_whole_listing() {
    let s = Scripted::default();
    for k in ["a", "b", "c", "d"] {
        s.put(k, rec(k, None));
    }
    let mut d = Driver::over(&s, OriginIx(0), None, whole(2), DriveOpts::default(), NOW);
    let us = d.start(NOW).expect("start");
    let partial: Vec<bool> = us
        .iter()
        .filter_map(|u| u.delta.as_ref()?.whole.as_ref().map(|w| w.partial))
        .collect();
    assert_eq!(partial, vec![true, false]);
    assert_eq!(us[0].delta.as_ref().map(|d| d.rows.len()), Some(2));
}

#[test]
fn the_feeds_down_and_up_are_said_as_the_members_link() {
    let s = Scripted::default();
    let mut d = Driver::over(&s, OriginIx(0), None, whole(0), DriveOpts::default(), NOW);
    d.start(NOW).expect("start");
    s.say(Change::Down { why: "gone".into() });
    let us = d.catch_up(NOW).expect("catch up");
    let link = us.iter().find_map(|u| u.facts.as_ref()?.link.clone());
    assert_eq!(link, Some(LinkState::FeedDown("gone".into())));
    s.say(Change::Up {
        at: Some(crate::store::Cursor::of_u64(9)),
    });
    let us = d.catch_up(NOW).expect("catch up");
    let link = us.iter().find_map(|u| u.facts.as_ref()?.link.clone());
    assert_eq!(link, Some(LinkState::FeedUp(Some(9))));
}

#[test]
fn a_root_is_judged_by_its_pids_once_per_listing() {
    // pid 100 alive; every other gone. A listing judges each record once:
    // the judge keeps the facts the listing's classifier learnt.
    static PROBES: AtomicUsize = AtomicUsize::new(0);
    fn probe(pid: i32) -> Option<i64> {
        PROBES.fetch_add(1, Ordering::SeqCst);
        (pid == 100).then_some(NOW - 3_600_000)
    }
    let (_td, store, judge) = root_of(
        &[("a", 100, None), ("b", 100, None), ("c", 200, None)],
        probe,
    );
    let mut d = Driver::over(
        &store,
        OriginIx(0),
        Some(judge),
        whole(0),
        DriveOpts::default(),
        NOW,
    );
    let us = d.start(NOW).expect("start");
    let states = delta_keys(&us);
    assert_eq!(states[0].1, ClaimState::Live);
    assert_eq!(states[2].1, ClaimState::Stale);
    assert_eq!(
        PROBES.load(Ordering::SeqCst),
        2,
        "one probe per distinct pid"
    );
}

#[test]
fn a_first_listing_of_many_pages_says_its_rows_in_growing_batches_before_the_whole() {
    let s = Scripted {
        page: 500,
        ..Scripted::default()
    };
    for i in 0..2500 {
        s.put(&format!("k{i:05}"), rec("k", None));
    }
    let mut d = Driver::over(&s, OriginIx(2), None, whole(0), DriveOpts::default(), NOW);
    let mut said: Vec<Update> = Vec::new();
    let rest = d
        .start_saying(NOW, &mut |us: Vec<Update>| {
            said.extend(us);
            true
        })
        .expect("start");
    let batches: Vec<usize> = said
        .iter()
        .map(|u| {
            let delta = u.delta.as_ref().expect("rows");
            assert!(delta.whole.is_none(), "a page is rows, not a listing");
            assert!(delta.rows.iter().all(|r| r.path.origin() == 2));
            delta.rows.len()
        })
        .collect();
    // Said when the next page comes, each at least all before it: 1000
    // (two pages), then 1000 more; the last page only with the whole.
    assert_eq!(batches, [1000, 1000]);
    let whole = rest[0].delta.as_ref().expect("the whole listing");
    assert!(whole.whole.as_ref().is_some_and(|w| !w.partial));
    assert_eq!(whole.rows.len(), 2500);
    assert_eq!(d.counters().listings(), 1, "the pages are one listing's");

    // Listed again (the safety net, a resync): no pages, the whole alone.
    let again = d.handle(Input::Relist, NOW + 1).expect("relist");
    assert!(again
        .iter()
        .filter_map(|u| u.delta.as_ref())
        .all(|delta| delta.whole.is_some() || delta.rows.is_empty()));
}
