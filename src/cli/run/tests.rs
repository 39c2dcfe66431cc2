//! `supervise` driving a real command and a real file-store claim, with
//! the hold's clock moved so that what takes minutes takes seconds.

use super::child::{Argv, Blocked, ChildStatus};
use super::guard::Guard;
use super::supervise::{supervise, Ended};
use crate::claims::Root;
use crate::claims::{AcquireOpts, AcquireOutcome, Adopt, ReleaseOutcome};
use crate::store::{OpenCtx, Store};
use crate::wait::{Clock, Hold, Lost};
use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;
use std::sync::mpsc::channel;

/// The wall clock, this many ms ahead.
struct Ahead(i64);

impl Clock for Ahead {
    fn now_ms(&self) -> i64 {
        crate::claims::now_ms() + self.0
    }
}

/// `CMD` started under a 60 s claim on `k` in the file store at `root`,
/// bound to its guard, and supervised to its end with the hold's clock
/// `ahead_ms` ahead; what `meanwhile` returns (given the claim's lockfile)
/// once the claim is taken is kept until the end.
fn supervised<T>(
    root: &Path,
    cmd: &[&str],
    ahead_ms: i64,
    meanwhile: impl FnOnce(&Path) -> T,
) -> (Ended, i64) {
    let root = Root::with_events_here(root);
    let opened =
        Store::open(&[], std::slice::from_ref(&root), &OpenCtx::default()).expect("a file store");
    let store = opened.one("run").expect("one root").backend();
    let command: Vec<OsString> = cmd.iter().map(OsString::from).collect();
    let argv = Argv::resolve(&command).expect("the command");
    let blocked = Blocked::spawn(&argv, false).expect("fork");
    let mut guard = Guard::start(blocked.pid).expect("guard");
    let opts = AcquireOpts {
        pid: Some(guard.pid() as u32),
        ttl_ms: Some(60_000),
        adopt: Adopt::SameOwner,
        ..AcquireOpts::default()
    };
    let got = store.acquire("k", "h", &opts).expect("acquire");
    let AcquireOutcome::Acquired { record, .. } = got.outcome else {
        panic!("not acquired: {:?}", got.outcome);
    };
    let first = record.expires_at.expect("a TTL claim");
    let hold = Hold::new(store, Ahead(ahead_ms), record, got.tenure, Some(60_000)).expect("hold");
    let _kept = meanwhile(&root.lockfile("k"));
    let running = blocked.go().expect("exec");
    // No store watch and no signals: only the hold's own schedule and
    // the command's end move the loop.
    let (_tx, rx) = channel();
    let ended = supervise(running, hold, &rx, &mut guard, "k");
    guard.disarm();
    (ended, first)
}

fn renewals(root: &Path) -> Vec<i64> {
    let log = std::fs::read_to_string(root.join(".fno/events.jsonl")).unwrap_or_default();
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "claim_renewed")
        .filter_map(|e| e["data"]["expires_at"].as_i64())
        .collect()
}

#[test]
fn supervise_renews_a_ttl_claim_on_a_file_store_each_time_the_hold_finds_it_due() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = td.path();
    // 39 s ahead, a 60 s claim has a third of its TTL left one second after
    // each renewal: a renewal a second while the command runs.
    let (ended, first) = supervised(root, &["sleep", "3.5"], 39_000, |_| ());
    let Ended { outcome, leader } = ended;
    leader.reap();
    assert!(outcome.lost.is_none(), "{:?}", outcome.lost);
    assert!(matches!(outcome.status, ChildStatus::Exited(0)));
    assert!(
        matches!(outcome.released, Some(Ok(ReleaseOutcome::Released { .. }))),
        "{:?}",
        outcome
            .released
            .as_ref()
            .map(|r| r.as_ref().map(|o| o.as_str()))
    );
    let renewed = renewals(root);
    assert!(
        renewed.len() >= 2,
        "renewed to {renewed:?} (first expiry {first})"
    );
    assert!(renewed[0] > first, "the first renewal moved the deadline");
    assert!(
        renewed.windows(2).all(|w| w[1] > w[0]),
        "every renewal moved it on: {renewed:?}"
    );
    assert_eq!(outcome.record.expires_at, renewed.last().copied());
}

#[test]
fn supervise_stops_the_group_ahead_of_a_file_claims_ttl_when_no_renewal_lands() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = td.path();
    let started = std::time::Instant::now();
    // 52 s ahead, the 60 s claim has 8 s left by the hold's clock: SIGTERM
    // is due a margin (2 s) and a grace (a quarter of 8 s) before that,
    // at 4 s. Every renewal meets the recovery mutex held here.
    let (ended, _) = supervised(root, &["sleep", "30"], 52_000, |lockfile| {
        let mutex = crate::mutex::recovery_mutex_path(lockfile);
        crate::mutex::try_lock(&mutex)
            .expect("mkdir")
            .expect("the recovery mutex")
    });
    let took = started.elapsed();
    let Ended { outcome, leader } = ended;
    leader.reap();
    assert!(
        matches!(outcome.lost, Some(Lost::Unrenewed { .. })),
        "{:?}",
        outcome.lost
    );
    assert!(matches!(
        outcome.status,
        ChildStatus::Signaled(libc::SIGTERM)
    ));
    assert!(
        outcome.released.is_none(),
        "a claim given up is not released"
    );
    assert!(renewals(root).is_empty(), "no renewal could land");
    // Bound for a loaded machine (the property: long before the command's
    // own 30 s, and not before SIGTERM's instant).
    assert!(took >= std::time::Duration::from_millis(3_500), "{took:?}");
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
}

#[test]
fn a_claim_taken_but_not_kept_is_reported_as_standing_when_it_could_not_be_given_back() {
    use crate::store::StoreError;
    let why = StoreError::Refused("no answer".into());
    let given = super::not_kept("k", &why, None);
    assert!(
        given.contains("given back") && given.contains("did not run"),
        "{given}"
    );
    let back = StoreError::Refused("still no answer".into());
    let standing = super::not_kept("k", &why, Some(&back));
    assert!(
        standing.contains("stands until its TTL or lease runs out")
            && standing.contains("still no answer")
            && standing.contains("did not run"),
        "{standing}"
    );
}
