//! The etcd store against a real etcd: exclusivity and fencing, the
//! compare-the-revision verbs, lease expiry, an unreachable cluster, a leader
//! killed mid-run, and auth. Run with `cargo test --features etcd --test etcd_store`.
#![cfg(feature = "etcd")]

mod etcd_common;

use claimtop::claims::Classifier;
use claimtop::claims::{
    AcquireOpts, AcquireOutcome, ForceOpts, ForceOutcome, NoRenew, ReleaseOutcome, RenewOutcome,
};
use claimtop::store::backend::list_whole;
use claimtop::store::etcd::{ConnOpts, EtcdStore};
use claimtop::store::{Audit, Change, Changes, Claims, Feed, Fence, MemberListing, StoreError};
use etcd_common::Etcd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A classifier as the CLI makes one: fresh, at now.
fn fresh() -> Classifier {
    Classifier::new(claimtop::claims::now_ms())
}

/// The whole listing, as `list` reads it.
fn list_of(store: &EtcdStore) -> Result<MemberListing, StoreError> {
    list_whole(store, &mut fresh())
}

/// The listing and the hazards that cost more to find, as `doctor` reads
/// them.
fn doctor_of(store: &EtcdStore) -> MemberListing {
    let mut l = list_of(store).expect("list");
    l.store_hazards
        .extend(store.deep_hazards().expect("doctor"));
    l
}

fn ttl(secs: i64) -> AcquireOpts {
    AcquireOpts {
        ttl_ms: Some(secs * 1000),
        ..Default::default()
    }
}

/// Take `key` for `holder`, retrying through errors (a leader election)
/// and waiting while another holds it. Returns the fencing revision.
fn take(store: &EtcdStore, key: &str, holder: &str, give_up: Instant) -> Option<i64> {
    while Instant::now() < give_up {
        match store.acquire(key, holder, &ttl(60)) {
            Ok(got) => match got.outcome {
                AcquireOutcome::Acquired { .. } => return got.tenure.map(|t| t.revision),
                AcquireOutcome::HeldByOther { .. } => std::thread::sleep(Duration::from_millis(2)),
            },
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    None
}

/// Release a tenure, retrying through errors: an answer lost in a leader
/// change must not leave the key stuck.
fn give_back(store: &EtcdStore, key: &str, holder: &str, revision: i64) {
    for _ in 0..200 {
        match store.release(key, holder, Some(Fence::new(revision as u64))) {
            Ok(_) => return,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    panic!("could not release {key} for {holder}");
}

/// `workers` threads, each its own connection, take and give back one key
/// `rounds` times. Each tenure creates a marker file with O_EXCL: a second
/// holder at the same time would find it there. Returns the overlaps and the
/// fencing revisions in tenure order. `during` runs once mid-way.
fn contend(
    etcd: &Etcd,
    prefix: &str,
    workers: usize,
    rounds: usize,
    during: impl FnOnce(),
) -> (usize, Vec<i64>) {
    let dir = tempfile::tempdir().expect("marker dir");
    let marker = dir.path().join("held");
    let overlaps = Arc::new(Mutex::new(0usize));
    let revisions = Arc::new(Mutex::new(Vec::new()));
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let give_up = Instant::now() + Duration::from_secs(240);
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let store = etcd.store(prefix);
            let (marker, overlaps, revisions, done) = (
                marker.clone(),
                overlaps.clone(),
                revisions.clone(),
                done.clone(),
            );
            std::thread::spawn(move || {
                let holder = format!("worker-{w}");
                for _ in 0..rounds {
                    let Some(rev) = take(&store, "shared", &holder, give_up) else {
                        panic!("{holder} never got the key");
                    };
                    match std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&marker)
                    {
                        Ok(_) => {
                            revisions.lock().expect("lock").push(rev);
                            std::thread::sleep(Duration::from_millis(1));
                            std::fs::remove_file(&marker).expect("remove marker");
                        }
                        Err(_) => *overlaps.lock().expect("lock") += 1,
                    }
                    give_back(&store, "shared", &holder, rev);
                    done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            })
        })
        .collect();
    let total = workers * rounds;
    while done.load(std::sync::atomic::Ordering::SeqCst) < total / 3 {
        std::thread::sleep(Duration::from_millis(10));
    }
    during();
    for h in handles {
        h.join().expect("worker panicked");
    }
    let overlaps = *overlaps.lock().expect("lock");
    let revisions = revisions.lock().expect("lock").clone();
    (overlaps, revisions)
}

fn strictly_increasing(revs: &[i64]) -> bool {
    revs.windows(2).all(|w| w[0] < w[1])
}

#[test]
fn many_workers_never_hold_one_key_at_once_and_each_tenure_has_a_higher_revision() {
    let Some(etcd) = Etcd::single() else { return };
    let (overlaps, revs) = contend(&etcd, "/excl", 8, 25, || {});
    assert_eq!(overlaps, 0, "two holders at once");
    assert_eq!(revs.len(), 200);
    assert!(
        strictly_increasing(&revs),
        "fencing revisions went backwards: {revs:?}"
    );
    let left = etcd
        .store("/excl")
        .status("shared", &mut fresh())
        .expect("status")
        .outcome;
    assert_eq!(left.state.as_str(), "free");
}

#[test]
fn release_renew_and_force_release_refuse_a_tenure_that_is_over() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/cas");
    let first = s
        .acquire("k", "alice", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    s.release("k", "alice", None).expect("release");
    let second = s
        .acquire("k", "alice", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    assert!(second.revision > first.revision);

    let stale = s
        .release("k", "alice", Some(Fence::new(first.revision as u64)))
        .expect("release");
    assert!(
        matches!(stale.outcome, ReleaseOutcome::NotHeld { .. }),
        "{stale:?}"
    );
    let stale = s
        .renew_fenced("k", "alice", 120_000, first.revision)
        .expect("renew");
    assert_eq!(
        stale.outcome,
        RenewOutcome::NotRenewed(NoRenew::OtherHolder)
    );
    let guarded = ForceOpts {
        expect_holder: Some("bob".into()),
        allow_live: true,
        ..Default::default()
    };
    let refused = s.force_release("k", &guarded).expect("force").outcome;
    assert!(matches!(refused, ForceOutcome::Refused(_)), "{refused:?}");
    // The current tenure is untouched by all three.
    let now = s.status("k", &mut fresh()).expect("status");
    assert_eq!(now.tenure.map(|t| t.revision), Some(second.revision));

    let renewed = s
        .renew_fenced("k", "alice", 120_000, second.revision)
        .expect("renew");
    assert!(matches!(renewed.outcome, RenewOutcome::Renewed { .. }));
    assert_eq!(renewed.tenure.map(|t| t.revision), Some(second.revision));
    let done = s
        .release("k", "alice", Some(Fence::new(second.revision as u64)))
        .expect("release");
    assert_eq!(done.outcome.as_str(), "released");
}

#[test]
fn a_live_claim_is_force_released_only_when_allowed_and_then_archived() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/force");
    s.acquire("k", "alice", &ttl(60)).expect("acquire");
    let refused = s
        .force_release("k", &ForceOpts::default())
        .expect("force")
        .outcome;
    assert!(
        matches!(refused, ForceOutcome::Refused(ref why) if why.contains("live")),
        "{refused:?}"
    );
    let opts = ForceOpts {
        allow_live: true,
        operator: Some("ops".into()),
        ..Default::default()
    };
    let forced = s.force_release("k", &opts).expect("force");
    let ForceOutcome::Archived { archived_to, .. } = forced.outcome else {
        panic!("not archived");
    };
    assert!(archived_to
        .to_string_lossy()
        .starts_with("/force/expired/k."));
    // The tenure it ended, in whole seconds: taken for 60 s moments ago.
    let lease = forced.tenure.expect("the ended tenure").lease;
    assert_eq!(lease.ttl_s, 60, "{lease:?}");
    assert!((55..=60).contains(&lease.remaining_s), "{lease:?}");
    assert_eq!(
        s.status("k", &mut fresh())
            .expect("status")
            .outcome
            .state
            .as_str(),
        "free"
    );
    assert_eq!(
        etcd_common::kinds(&s),
        vec!["claim_acquired", "claim_force_released"]
    );
}

#[test]
fn list_json_over_etcd_adds_store_revision_and_lease_and_keeps_every_file_field() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/json");
    for k in ["b", "a", "c/d"] {
        s.acquire(k, "h", &ttl(90)).expect("acquire");
    }
    let v = list_of(&s).expect("list").to_json(Some(&s.url()));
    assert_eq!(v["store"], etcd.url("/json"));
    let items = v["claims"].as_array().expect("claims");
    let keys: Vec<&str> = items.iter().filter_map(|i| i["key"].as_str()).collect();
    assert_eq!(keys, vec!["a", "b", "c/d"]);
    for item in items {
        for field in ["key", "file", "state", "record", "why", "error"] {
            assert!(item.get(field).is_some(), "{field} missing from {item}");
        }
        assert_eq!(item["state"], "live");
        let rec = &item["record"];
        assert!(rec["revision"].as_i64().unwrap_or(0) > 0, "{rec}");
        assert!(rec["lease"]["id"].as_i64().unwrap_or(0) != 0, "{rec}");
        assert_eq!(rec["lease"]["ttl_s"], 90);
        assert!(
            rec["lease"]["remaining_s"].as_i64().unwrap_or(0) > 80,
            "{rec}"
        );
    }
    assert_eq!(v["counts"]["live"], 3);
}

#[test]
fn an_expired_lease_frees_the_key_and_three_observers_record_one_claim_expired() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/exp");
    let tenure = s
        .acquire("k", "gone", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    // Started after the acquire: the first change naming "k" is its end.
    let mut feeds: Vec<Box<dyn Changes>> = (0..3)
        .map(|_| etcd.store("/exp").changes(None).expect("feed"))
        .collect();
    // Revoking is what expiry does to the key (it is deleted with its
    // lease), without waiting out the protocol's 60 s minimum TTL.
    let (rt, mut raw) = etcd.client();
    rt.block_on(raw.lease_revoke(tenure.lease.id))
        .expect("revoke");
    let observers: Vec<_> = feeds
        .drain(..)
        .map(|mut feed| {
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    if let Ok(Some(Change::Claim { key })) = feed.next(Duration::from_millis(200)) {
                        if key == "k" {
                            return true;
                        }
                    }
                }
                false
            })
        })
        .collect();
    for o in observers {
        assert!(
            o.join().expect("observer"),
            "an observer never saw the key go"
        );
    }
    assert_eq!(
        s.status("k", &mut fresh())
            .expect("status")
            .outcome
            .state
            .as_str(),
        "free"
    );
    let expired: Vec<_> = s
        .events(50)
        .expect("events")
        .into_iter()
        .filter(|e| e.kind() == "claim_expired")
        .collect();
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0].key(), Some("k"));
    assert_eq!(expired[0].holder(), Some("gone"));
}

#[test]
fn a_released_claim_is_never_recorded_as_expired() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/rel");
    let mut feed = etcd.store("/rel").changes(None).expect("feed");
    s.acquire("k", "h", &ttl(60)).expect("acquire");
    s.release("k", "h", None).expect("release");
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let _ = feed.next(Duration::from_millis(100));
    }
    assert_eq!(
        etcd_common::kinds(&s),
        vec!["claim_acquired", "claim_released"]
    );
}

#[test]
fn a_stopped_etcd_makes_a_verb_fail_within_the_timeout_naming_the_endpoints() {
    let Some(etcd) = Etcd::single() else { return };
    let opts = ConnOpts {
        timeout: Some(Duration::from_secs(1)),
        ..Default::default()
    };
    let s = etcd.store_with("/stop", &opts);
    s.status("warm", &mut fresh())
        .expect("status before the stop");
    etcd.members[0].pause();
    let t0 = Instant::now();
    let err = s.acquire("k", "h", &ttl(60)).expect_err("etcd is stopped");
    let took = t0.elapsed();
    etcd.members[0].signal(libc::SIGCONT);
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&etcd.endpoints()[0]), "{msg}");
    assert!(
        took < Duration::from_millis(2500),
        "took {took:?} with a 1 s timeout"
    );
    // And it recovers without a reconnect by hand.
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.status("k", &mut fresh()).is_err() {
        assert!(Instant::now() < deadline, "never recovered");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_unreachable_cluster_fails_within_the_timeout_at_connect() {
    // Nothing listens here: connect (or the first call) must give up in time.
    let Some(_bin) = etcd_common::etcd_binary() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let target = match claimtop::store::StoreUrl::parse(&format!("etcd://127.0.0.1:{port}")) {
        Ok(claimtop::store::StoreUrl::Etcd(t)) => t,
        other => panic!("{other:?}"),
    };
    let opts = ConnOpts {
        timeout: Some(Duration::from_millis(700)),
        ..Default::default()
    };
    let t0 = Instant::now();
    let err = match EtcdStore::connect(&target, &opts) {
        Err(e) => e,
        Ok(s) => s.status("k", &mut fresh()).expect_err("nothing listens"),
    };
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn killing_the_leader_of_three_mid_run_leaves_no_overlap_and_no_stuck_key() {
    let Some(mut etcd) = Etcd::cluster(3) else {
        return;
    };
    let leader = etcd.leader();
    let victim_pid = etcd.members[leader].pid();
    let (overlaps, revs) = contend(&etcd, "/ha", 4, 30, || {
        // SAFETY: kill(2) on an etcd child this test started.
        unsafe {
            libc::kill(victim_pid, libc::SIGKILL);
        }
    });
    etcd.members[leader].kill();
    assert_eq!(overlaps, 0, "two holders at once across the leader change");
    assert_eq!(revs.len(), 120);
    assert!(
        strictly_increasing(&revs),
        "fencing revisions went backwards: {revs:?}"
    );
    let left = etcd
        .store("/ha")
        .status("shared", &mut fresh())
        .expect("status")
        .outcome;
    assert_eq!(left.state.as_str(), "free", "the key is stuck: {left:?}");
}

#[test]
fn a_role_limited_to_the_prefix_can_do_everything_and_a_wrong_password_fails_clearly() {
    let Some(etcd) = Etcd::single() else { return };
    let (rt, mut root) = etcd.client();
    rt.block_on(async {
        root.user_add("root", "rootpw", None).await?;
        root.user_grant_role("root", "root").await?;
        root.role_add("claims").await?;
        root.role_grant_permission(
            "claims",
            etcd_client::Permission::read_write("/team/").with_prefix(),
        )
        .await?;
        root.user_add("worker", "s3cret-pw", None).await?;
        root.user_grant_role("worker", "claims").await?;
        root.auth_enable().await
    })
    .expect("set up auth");
    let good = ConnOpts {
        user: Some("worker".into()),
        password: Some("s3cret-pw".into()),
        ..Default::default()
    };
    let s = etcd.store_with("/team", &good);
    let got = s.acquire("k", "h", &ttl(60)).expect("acquire under auth");
    assert!(matches!(got.outcome, AcquireOutcome::Acquired { .. }));
    assert_eq!(list_of(&s).expect("list").sweep.claims.len(), 1);
    assert_eq!(
        s.release("k", "h", None).expect("release").outcome.as_str(),
        "released"
    );
    assert_eq!(s.events(10).expect("events").len(), 2);

    let bad = ConnOpts {
        password: Some("not-the-password".into()),
        ..good.clone()
    };
    let err = match EtcdStore::connect(&etcd.target("/team"), &bad) {
        Err(e) => e,
        Ok(s) => s.status("k", &mut fresh()).expect_err("wrong password"),
    };
    let msg = err.to_string();
    assert!(msg.contains("authentication failed"), "{msg}");
    assert!(
        !msg.contains("not-the-password"),
        "the password leaked: {msg}"
    );
    assert!(
        !format!("{bad:?}").contains("not-the-password"),
        "Debug shows the password"
    );
    // Outside its prefix the role is refused, and says so.
    let elsewhere = etcd.store_with("/other", &good);
    let err = elsewhere
        .acquire("k", "h", &ttl(60))
        .expect_err("outside the prefix");
    assert!(err.to_string().contains("permission denied"), "{err}");
}

#[test]
fn a_kept_alive_claim_that_is_force_released_says_it_is_lost() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/hold");
    let tenure = s
        .acquire("k", "runner", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    let held = s.keep_alive("k", &tenure).expect("keep alive");
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(held.lost(), None, "lost while nobody touched it");
    let opts = ForceOpts {
        allow_live: true,
        ..Default::default()
    };
    assert!(matches!(
        s.force_release("k", &opts).expect("force").outcome,
        ForceOutcome::Archived { .. }
    ));
    let deadline = Instant::now() + Duration::from_secs(8);
    while held.lost().is_none() {
        assert!(Instant::now() < deadline, "the loss went unnoticed");
        std::thread::sleep(Duration::from_millis(100));
    }
    let why = held.lost().unwrap_or_default();
    assert!(
        why.contains("taken away") || why.contains("revoked"),
        "{why}"
    );
}

#[test]
fn a_kept_alive_lease_is_safe_until_no_later_than_etcd_says_and_each_renewal_moves_it_on() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/safe");
    let tenure = s
        .acquire("k", "runner", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    let held = s.keep_alive("k", &tenure).expect("keep alive");
    let first = held.safe_until().expect("known from the start");
    let (rt, mut raw) = etcd.client();
    let etcd_left = |raw: &mut etcd_client::Client| {
        let asked = Instant::now();
        let left = rt
            .block_on(raw.lease_time_to_live(tenure.lease.id, None))
            .expect("time to live")
            .ttl();
        // etcd counts whole seconds: its end is at most a second later.
        asked + Duration::from_secs(left.max(0) as u64 + 1)
    };
    assert!(first <= etcd_left(&mut raw), "safe past etcd's own end");
    assert!(
        first > Instant::now() + Duration::from_secs(55),
        "{first:?}"
    );
    // Renewed every 2 s: the bound moves on with each answer.
    std::thread::sleep(Duration::from_millis(4500));
    let later = held.safe_until().expect("still known");
    assert!(later >= first + Duration::from_secs(2), "never moved on");
    assert!(later <= etcd_left(&mut raw), "safe past etcd's own end");
}

/// The next change the feed gives that `want` accepts, within `within`.
fn wait_for(
    feed: &mut dyn Changes,
    within: Duration,
    want: impl Fn(&Change) -> bool,
) -> Option<Change> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Ok(Some(c)) = feed.next(Duration::from_millis(100)) {
            if want(&c) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn an_idle_change_feed_keeps_its_connection_for_20_s_under_etcds_ping_policy() {
    // etcd closes a connection that pings more often than its
    // --grpc-keepalive-min-time (5 s) allows; a feed pinging every 2 s was
    // cut and resumed about every 8 s.
    let Some(etcd) = Etcd::single() else { return };
    let watcher = etcd.store("/calm");
    let mut feed = watcher.changes(None).expect("feed");
    let dropped = wait_for(feed.as_mut(), Duration::from_secs(20), |c| {
        matches!(c, Change::Down { .. } | Change::Relist { .. })
    });
    assert_eq!(dropped, None, "an idle feed lost its connection");
}

#[test]
fn a_change_feed_says_disconnected_while_etcd_is_stopped_and_resumes_by_itself() {
    let Some(etcd) = Etcd::single() else { return };
    let opts = ConnOpts {
        timeout: Some(Duration::from_secs(1)),
        ..Default::default()
    };
    let watcher = etcd.store_with("/feed", &opts);
    let mut feed = watcher.changes(None).expect("feed");
    etcd.members[0].pause();
    let down = wait_for(feed.as_mut(), Duration::from_secs(10), |c| {
        matches!(c, Change::Down { .. })
    });
    etcd.members[0].signal(libc::SIGCONT);
    assert!(down.is_some(), "no Down while etcd was stopped");
    let up = wait_for(feed.as_mut(), Duration::from_secs(15), |c| {
        matches!(c, Change::Up { .. })
    });
    assert!(up.is_some(), "no Up after etcd continued");
    let writer = etcd.store("/feed");
    writer.acquire("after", "h", &ttl(60)).expect("acquire");
    let seen = wait_for(
        feed.as_mut(),
        Duration::from_secs(10),
        |c| matches!(c, Change::Claim { key } if key == "after"),
    );
    assert!(seen.is_some(), "the resumed feed missed a change");
}

#[test]
fn a_change_feed_says_disconnected_across_a_kill_and_restart_and_misses_no_change_made_right_after()
{
    let Some(mut etcd) = Etcd::single() else {
        return;
    };
    let opts = ConnOpts {
        timeout: Some(Duration::from_secs(2)),
        ..Default::default()
    };
    let watcher = etcd.store_with("/restart", &opts);
    // The writer is opened before the kill too: its connection has to come
    // back by itself, as a dashboard's would.
    let writer = etcd.store_with("/restart", &opts);
    let mut feed = watcher.changes(None).expect("feed");
    let before = writer
        .acquire("before", "h", &ttl(60))
        .expect("acquire before the kill")
        .tenure
        .expect("tenure");
    let seen = wait_for(
        feed.as_mut(),
        Duration::from_secs(10),
        |c| matches!(c, Change::Claim { key } if key == "before"),
    );
    assert!(seen.is_some(), "the feed works before the kill");

    etcd.members[0].kill();
    let down = wait_for(feed.as_mut(), Duration::from_secs(10), |c| {
        matches!(c, Change::Down { .. })
    });
    assert!(down.is_some(), "no Down after etcd was killed");

    etcd.start_again(0);
    // Right after the restart, before the feed has said it is back.
    let after = {
        let give_up = Instant::now() + Duration::from_secs(15);
        loop {
            match writer.acquire("after", "h", &ttl(60)) {
                Ok(got) => break got,
                Err(e) if Instant::now() < give_up => {
                    eprintln!("writer not back yet: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("the writer never came back after the restart: {e}"),
            }
        }
    };
    assert!(matches!(after.outcome, AcquireOutcome::Acquired { .. }));
    let mut connected = false;
    let mut resumed = false;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline && !(connected && resumed) {
        match feed.next(Duration::from_millis(100)) {
            Ok(Some(Change::Up { .. })) => connected = true,
            Ok(Some(Change::Claim { key })) if key == "after" => {
                assert!(
                    connected,
                    "a change arrived before Up said the feed is back"
                );
                resumed = true;
            }
            Ok(Some(Change::Relist { .. })) => resumed = true,
            Ok(_) => {}
            Err(e) => panic!("the feed ended: {e}"),
        }
    }
    assert!(connected, "no Up after the restart");
    assert!(
        resumed,
        "the resumed feed missed the change made right after the restart"
    );
    // The claim from before the kill is the same tenure still.
    let status = writer.status("before", &mut fresh()).expect("status");
    assert_eq!(status.tenure.map(|t| t.revision), Some(before.revision));
}

#[test]
fn a_feed_over_an_etcd_restarted_without_its_data_asks_for_a_full_reread_and_goes_on() {
    let Some(mut etcd) = Etcd::single() else {
        return;
    };
    let opts = ConnOpts {
        timeout: Some(Duration::from_secs(2)),
        ..Default::default()
    };
    let s = etcd.store_with("/wiped", &opts);
    for i in 0..10 {
        s.acquire(&format!("k{i}"), "h", &ttl(60)).expect("acquire");
    }
    let mut feed = s.changes(None).expect("feed");
    etcd.members[0].kill();
    // A new, empty cluster on the same endpoints: its revisions start over.
    std::fs::remove_dir_all(etcd.members[0].dir.path().join("data")).expect("wipe");
    etcd.start_again(0);
    let resync = wait_for(feed.as_mut(), Duration::from_secs(15), |c| {
        matches!(c, Change::Relist { .. })
    });
    match resync {
        Some(Change::Relist { why: Some(why) }) => assert!(why.contains("behind"), "{why}"),
        other => panic!("the feed never said its view is void: {other:?}"),
    }
    let give_up = Instant::now() + Duration::from_secs(15);
    while s.acquire("fresh", "h", &ttl(60)).is_err() {
        assert!(Instant::now() < give_up, "the store never came back");
        std::thread::sleep(Duration::from_millis(100));
    }
    let seen = wait_for(
        feed.as_mut(),
        Duration::from_secs(10),
        |c| matches!(c, Change::Claim { key } if key == "fresh"),
    );
    assert!(
        seen.is_some(),
        "the feed did not go on from the new cluster's now"
    );
}

#[test]
fn a_feed_resumed_from_a_compacted_revision_asks_for_a_full_reread() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/compact");
    let first = s
        .acquire("k", "h", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    s.release("k", "h", None).expect("release");
    s.acquire("k", "h", &ttl(60)).expect("acquire again");
    let (rt, mut raw) = etcd.client();
    let now = rt
        .block_on(raw.get("/compact/", None))
        .expect("get")
        .header()
        .map(|h| h.revision())
        .expect("revision");
    rt.block_on(raw.compact(now, None)).expect("compact");
    let mut feed = s.changes_from(first.revision).expect("feed");
    let resync = wait_for(&mut feed, Duration::from_secs(10), |c| {
        matches!(c, Change::Relist { .. })
    });
    match resync {
        Some(Change::Relist { why: Some(why) }) => assert!(why.contains("compacted"), "{why}"),
        other => panic!("no resync: {other:?}"),
    }
}

#[test]
fn doctor_over_etcd_names_leaseless_claims_unretained_events_and_idle_leases() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/doc");
    s.acquire("fine", "h", &ttl(60)).expect("acquire");
    let clean: Vec<String> = kinds_of(&doctor_of(&s).to_json(Some("etcd")));
    assert!(clean.is_empty(), "a healthy prefix has hazards: {clean:?}");
    let (rt, mut raw) = etcd.client();
    let rec = "schema_version: 1\nkey: bare\nholder: h\nacquired_at: 1\npid: 1\nhost: x\n";
    rt.block_on(async {
        raw.put("/doc/claims/bare", rec, None).await?;
        raw.put(
            "/doc/events/0000000000001-x",
            "{\"type\":\"claim_acquired\"}",
            None,
        )
        .await?;
        raw.lease_grant(600, None).await
    })
    .expect("plant hazards");
    let found = kinds_of(&doctor_of(&s).to_json(Some("etcd")));
    for kind in [
        "etcd_claim_without_lease",
        "etcd_events_without_retention",
        "etcd_lease_without_keys",
    ] {
        assert!(
            found.iter().any(|k| k == kind),
            "{kind} missing from {found:?}"
        );
    }
}

fn kinds_of(listing: &serde_json::Value) -> Vec<String> {
    listing["hazards"]
        .as_array()
        .map(|hs| {
            hs.iter()
                .filter_map(|h| h["kind"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn an_etcds_store_speaks_tls_with_the_given_ca_and_refuses_to_go_without_one() {
    let Some(etcd) = Etcd::single_tls() else {
        return;
    };
    let s = etcd.store("/tls");
    let got = s.acquire("k", "h", &ttl(60)).expect("acquire over TLS");
    assert!(matches!(got.outcome, AcquireOutcome::Acquired { .. }));
    assert_eq!(
        s.release("k", "h", None).expect("release").outcome.as_str(),
        "released"
    );
    let err = match EtcdStore::connect(&etcd.target("/tls"), &ConnOpts::default()) {
        Err(e) => e,
        Ok(_) => panic!("etcds:// without --etcd-cacert connected"),
    };
    assert!(err.to_string().contains("--etcd-cacert"), "{err}");
}

#[test]
fn a_claim_of_the_same_holder_made_by_another_process_is_continued_only_by_a_plain_acquire() {
    use claimtop::claims::{AcquireKind, Adopt};
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/adopt");
    let mine = AcquireOpts {
        pid: Some(std::process::id()),
        ..ttl(60)
    };
    let first = s.acquire("k", "w0", &mine).expect("acquire").tenure;
    let first = first.expect("tenure").revision;
    // A process started after the claim was made: never its maker.
    let mut other = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let theirs = AcquireOpts {
        pid: Some(other.id()),
        adopt: Adopt::SameOwner,
        ..ttl(60)
    };
    let got = etcd.store("/adopt").acquire("k", "w0", &theirs);
    let _ = other.kill();
    let _ = other.wait();
    match got.expect("acquire").outcome {
        AcquireOutcome::HeldByOther { holder, pid, .. } => {
            assert_eq!((holder.as_str(), pid), ("w0", std::process::id() as i32));
        }
        o => panic!("another process's claim was continued: {o:?}"),
    }
    // The very process the claim names continues it, as the seed has it.
    let same = AcquireOpts {
        adopt: Adopt::SameOwner,
        ..mine.clone()
    };
    let continues_the_tenure = |opts: &AcquireOpts| {
        let got = etcd
            .store("/adopt")
            .acquire("k", "w0", opts)
            .expect("acquire");
        assert!(matches!(
            got.outcome,
            AcquireOutcome::Acquired {
                kind: AcquireKind::Reacquired,
                ..
            }
        ));
        assert_eq!(got.tenure.expect("tenure").revision, first);
    };
    continues_the_tenure(&same);
    // And a plain acquire keeps the seed's rule: same holder, same tenure.
    continues_the_tenure(&AcquireOpts {
        pid: Some(1),
        ..ttl(60)
    });
}

/// The `claim_expired` events in the last 50, as (key, revision).
fn expiries(s: &EtcdStore) -> Vec<(String, i64)> {
    s.events(50)
        .expect("events")
        .into_iter()
        .filter(|e| e.kind() == "claim_expired")
        .map(|e| {
            let rev = e
                .data()
                .and_then(|d| d.get("revision"))
                .and_then(|r| r.as_i64())
                .unwrap_or(0);
            (e.key().unwrap_or_default().to_string(), rev)
        })
        .collect()
}

/// Take `key` for `holder` on a 60 s lease, then revoke that lease behind
/// everyone's back: what an expiry nobody watched leaves. The revision.
fn expire_unwatched(etcd: &Etcd, s: &EtcdStore, key: &str, holder: &str) -> i64 {
    let tenure = s
        .acquire(key, holder, &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    let (rt, mut raw) = etcd.client();
    rt.block_on(raw.lease_revoke(tenure.lease.id))
        .expect("revoke");
    assert_eq!(
        s.status(key, &mut fresh())
            .expect("status")
            .outcome
            .state
            .as_str(),
        "free"
    );
    tenure.revision
}

#[test]
fn an_expiry_nobody_watched_is_recorded_once_by_the_next_acquire_before_its_own_tenure() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/unwatched");
    let first = expire_unwatched(&etcd, &s, "k", "gone");
    assert!(expiries(&s).is_empty(), "nobody has seen it yet");
    let got = etcd
        .store("/unwatched")
        .acquire("k", "next", &ttl(60))
        .expect("acquire");
    assert!(matches!(got.outcome, AcquireOutcome::Acquired { .. }));
    let second = got.tenure.expect("tenure").revision;
    assert!(second > first, "{second} after {first}");
    assert_eq!(expiries(&s), vec![("k".to_string(), first)]);
    assert_eq!(
        etcd_common::kinds(&s),
        vec!["claim_acquired", "claim_expired", "claim_acquired"],
        "the first tenure's end is recorded before the next one begins"
    );
    s.release("k", "next", None).expect("release");
    s.acquire("k", "third", &ttl(60)).expect("acquire");
    assert_eq!(expiries(&s).len(), 1, "a released tenure is no expiry");
}

#[test]
fn an_expiry_nobody_watched_is_recorded_once_by_the_next_full_list() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/unlisted");
    s.acquire("stays", "h", &ttl(60)).expect("acquire");
    let first = expire_unwatched(&etcd, &s, "k", "gone");
    let listing = list_of(&etcd.store("/unlisted")).expect("list");
    assert_eq!(listing.sweep.claims.len(), 1);
    assert_eq!(expiries(&s), vec![("k".to_string(), first)]);
    list_of(&etcd.store("/unlisted")).expect("list again");
    etcd.store("/unlisted")
        .acquire("k", "next", &ttl(60))
        .expect("acquire");
    assert_eq!(expiries(&s).len(), 1, "recorded once: {:?}", expiries(&s));
}

#[test]
fn a_holders_keep_alive_records_its_own_claims_expiry_when_no_one_else_watches() {
    let Some(etcd) = Etcd::single() else { return };
    let holder = etcd.store("/selfexp");
    let tenure = holder
        .acquire("k", "alone", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    let kept = holder.keep_alive("k", &tenure).expect("keep-alive");
    let (rt, mut raw) = etcd.client();
    rt.block_on(raw.lease_revoke(tenure.lease.id))
        .expect("revoke");
    let deadline = Instant::now() + Duration::from_secs(10);
    while kept.lost().is_none() {
        assert!(Instant::now() < deadline, "the keep-alive never noticed");
        std::thread::sleep(Duration::from_millis(20));
    }
    // As `run` does once its command has stopped: the store's drop waits
    // for what the keep-alive set going.
    drop(kept);
    drop(holder);
    let s = etcd.store("/selfexp");
    assert_eq!(expiries(&s), vec![("k".to_string(), tenure.revision)]);
}

#[test]
#[ignore = "a figure, not a check: prints the cost of a tenure and of a full list on a local etcd"]
fn the_cost_of_one_tenure_and_of_a_full_list_over_etcd() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/cost");
    let n = 300;
    let t0 = Instant::now();
    for i in 0..n {
        let key = format!("k{}", i % 10);
        s.acquire(&key, "h", &ttl(60)).expect("acquire");
        s.release(&key, "h", None).expect("release");
    }
    let tenure = t0.elapsed() / n;
    for i in 0..1000 {
        s.acquire(&format!("held/{i:04}"), "h", &ttl(60))
            .expect("acquire");
    }
    let t0 = Instant::now();
    for _ in 0..20 {
        assert_eq!(list_of(&s).expect("list").sweep.claims.len(), 1000);
    }
    let list = t0.elapsed() / 20;
    eprintln!("acquire + release: {tenure:?} a tenure; list of 1000 claims: {list:?}");
}

#[test]
fn a_record_over_the_read_cap_is_refused_before_etcd_sees_it_and_the_key_stays_free() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/big");
    let cap = claimtop::claims::record::MAX_LOCKFILE_BYTES as usize;
    let mut metadata = serde_json::Map::new();
    // Over the cap, yet under etcd's own request limit (1.5 MiB): only the
    // writer's own check keeps it out.
    metadata.insert("pad".into(), "p".repeat(cap + 1).into());
    let opts = AcquireOpts {
        metadata: Some(metadata),
        ..ttl(60)
    };
    match s.acquire("k", "alice", &opts) {
        Err(StoreError::Claim(claimtop::claims::ClaimError::Unwritable { bytes, .. })) => {
            assert!(bytes > cap, "{bytes}")
        }
        other => panic!("expected a refusal before writing, got {other:?}"),
    }
    let st = s.status("k", &mut fresh()).expect("status");
    assert_eq!(st.outcome.state, claimtop::claims::ClaimState::Free);
    // Nothing was written: no event either.
    assert!(s.events(10).expect("events").is_empty());
}

// ------------------------------------------------------------ history

mod history {
    use super::etcd_common::{event_line, put_events, Etcd};
    use claimtop::events::backward::{Needle, SearchFrom, SearchStep};
    use claimtop::events::history::{Anchor, History, Log, ScanAt, Start, Step};
    use claimtop::store::Audit;
    use serde_json::json;

    const BASE: i64 = 1_764_547_200_000; // 2025-12-01T00:00:00Z

    /// `n` events one second apart, each naming itself `e00000`, `e00001`...
    fn plant(etcd: &Etcd, prefix: &str, n: usize) {
        let times: Vec<i64> = (0..n).map(|i| BASE + i as i64 * 1000).collect();
        plant_at(etcd, prefix, &times);
    }

    /// An event at each time, each naming itself by its place in `times`.
    fn plant_at(etcd: &Etcd, prefix: &str, times: &[i64]) {
        let lines: Vec<(i64, String)> = times
            .iter()
            .enumerate()
            .map(|(i, &at)| {
                let data = json!({"key": format!("k{}", i % 7), "holder": format!("e{i:05}"),
                                  "pid": 1, "host": "h", "acquired_at": at, "expires_at": null});
                (at, event_line(at, "claim_acquired", data))
            })
            .collect();
        put_events(etcd, prefix, &lines);
    }

    /// The `e00000` names of a page's lines.
    fn names(lines: &[claimtop::events::tail::Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(&l.text).expect("a JSON line");
                v["data"]["holder"].as_str().unwrap_or_default().to_string()
            })
            .collect()
    }

    fn expect(range: std::ops::Range<usize>) -> Vec<String> {
        range.map(|i| format!("e{i:05}")).collect()
    }

    /// Run the pass to its end; the count and the end mark it reports.
    fn pass(h: &mut dyn History) -> (u64, u64) {
        loop {
            match h.step().expect("a step") {
                Step::Indexed { lines, end, .. } => return (lines, end),
                Step::Restart => panic!("restarted"),
                _ => {}
            }
        }
    }

    fn search(h: &mut dyn History, text: &str, from: SearchFrom) -> Option<u64> {
        let needle = Needle::new(text);
        let mut from = h.search_from(from).expect("something to search");
        loop {
            match h.search(&needle, from).expect("a search step") {
                SearchStep::Found(m) => return Some(m),
                SearchStep::NotFound => return None,
                SearchStep::Continue(next) => from = next,
            }
        }
    }

    fn holder_at(h: &mut dyn History, mark: u64) -> String {
        let p = h.page(Anchor::At(mark), 0, 1).expect("a page");
        names(&p.lines)[0].clone()
    }

    #[test]
    fn an_empty_prefix_has_nothing_to_index_page_or_find() {
        let Some(etcd) = Etcd::single() else { return };
        let store = etcd.store("/hempty");
        let mut h = store.history(&Log::Own).expect("a history");
        assert!(matches!(h.start().expect("start"), Start::Nothing));
        assert!(!h.indexing());
        let p = h.page(Anchor::End, 10, 0).expect("a page");
        assert!(p.lines.is_empty() && p.at_start && p.at_end, "{p:?}");
        let p = h.page(Anchor::Start, 0, 10).expect("a page");
        assert!(p.lines.is_empty() && p.at_end, "{p:?}");
        assert_eq!(search(&mut *h, "x", SearchFrom::Before(u64::MAX)), None);
        assert!(matches!(h.step().expect("a step"), Step::Idle));
        // An event comes: the next look counts it.
        plant(&etcd, "/hempty", 1);
        assert!(matches!(
            h.step().expect("a step"),
            Step::Counted { lines: 1, .. }
        ));
    }

    #[test]
    fn pages_cross_range_page_and_checkpoint_boundaries_in_order_before_and_after_the_pass() {
        let Some(etcd) = Etcd::single() else { return };
        plant(&etcd, "/hpages", 2500);
        let store = etcd.store("/hpages");
        let mut h = store.history(&Log::Own).expect("a history");
        assert!(matches!(h.start().expect("start"), Start::Tail(t) if !t.is_empty()));
        for round in ["before the pass", "after it"] {
            let p = h.page(Anchor::Start, 0, 1001).expect("first page");
            assert_eq!(names(&p.lines), expect(0..1001), "{round}");
            assert_eq!(p.first_line_no, Some(0));
            assert!(p.at_start && !p.at_end);
            let p = h.page(Anchor::End, 1001, 0).expect("last page");
            assert_eq!(names(&p.lines), expect(1499..2500), "{round}");
            assert_eq!((p.first_line_no, p.anchor), (Some(1499), 1001));
            assert!(p.at_end && !p.at_start);
            // Around a mark handed out above: 600 before it, 601 from it.
            let mark = p.lines[1].offset; // e01500
            let p = h.page(Anchor::At(mark), 600, 601).expect("a middle page");
            assert_eq!(names(&p.lines), expect(900..2101), "{round}");
            assert_eq!((p.first_line_no, p.anchor), (Some(900), 600));
            // A time: the first event at or after it.
            let p = h
                .page(Anchor::Time(BASE + 1234 * 1000), 1, 2)
                .expect("a time");
            assert_eq!(names(&p.lines), expect(1233..1236), "{round}");
            assert_eq!(p.anchor, 1);
            if round == "before the pass" {
                let (lines, end) = pass(&mut *h);
                assert_eq!(lines, 2500);
                assert!(end > mark, "the end mark is past every event read");
            }
        }
    }

    #[test]
    fn a_search_finds_the_nearest_match_each_way_before_and_after_the_pass() {
        let Some(etcd) = Etcd::single() else { return };
        plant(&etcd, "/hsearch", 3000);
        let store = etcd.store("/hsearch");
        let mut h = store.history(&Log::Own).expect("a history");
        h.start().expect("start");
        for round in 0..2 {
            let found = search(&mut *h, "E00017", SearchFrom::Before(u64::MAX)).expect("found");
            assert_eq!(holder_at(&mut *h, found), "e00017", "round {round}");
            // Older than it: nothing; newer from e00010: it again.
            assert_eq!(search(&mut *h, "e00017", SearchFrom::Before(found)), None);
            let from = h.page(Anchor::Start, 0, 11).expect("a page").lines[10].offset;
            let again = search(&mut *h, "e00017", SearchFrom::After(from));
            assert_eq!(again, Some(found));
            // Across every page boundary forward, to the last event.
            let last = search(&mut *h, "e02999", SearchFrom::After(from)).expect("the last");
            assert_eq!(holder_at(&mut *h, last), "e02999");
            assert_eq!(search(&mut *h, "nowhere", SearchFrom::After(from)), None);
            if round == 0 {
                pass(&mut *h);
            }
        }
    }

    /// Count the entries containing `text` from the start, to the end of
    /// what is there; where a later count goes on from.
    fn count(h: &mut dyn History, text: &str, mut at: ScanAt) -> (u64, ScanAt) {
        let needle = Needle::new(text);
        let mut found = Vec::new();
        loop {
            let step = h
                .count_matches(&needle, &at, &mut found)
                .expect("a count step");
            at = step.next;
            if step.at_end {
                return (found.len() as u64, at);
            }
        }
    }

    #[test]
    fn scans_read_every_key_however_unevenly_the_keys_spread() {
        let Some(etcd) = Etcd::single() else { return };
        // A second apart, then a burst within one millisecond, then a few
        // days apart: ranges guessed from one stretch are wrong in the next.
        let mut times: Vec<i64> = (0..1500).map(|i| BASE + i * 1000).collect();
        times.extend(std::iter::repeat_n(BASE + 2_000_000, 1500));
        times.extend((1..=10).map(|i| BASE + i * 300_000_000));
        plant_at(&etcd, "/huneven", &times);
        let store = etcd.store("/huneven");
        let mut h = store.history(&Log::Own).expect("a history");
        h.start().expect("start");
        // Before the pass: back from the end to the very first event.
        let first = search(&mut *h, "e00000", SearchFrom::Before(u64::MAX)).expect("found");
        assert_eq!(holder_at(&mut *h, first), "e00000");
        let (n, at) = count(&mut *h, "claim_acquired", ScanAt::default());
        assert_eq!(n, 3010);
        assert_eq!(pass(&mut *h).0, 3010);
        let last = search(&mut *h, "e03009", SearchFrom::After(first)).expect("the last");
        assert_eq!(holder_at(&mut *h, last), "e03009");
        // What is written after the count reached the end is counted from
        // where it stopped, and only that.
        plant_at(&etcd, "/huneven", &[BASE + 11 * 300_000_000]);
        assert_eq!(count(&mut *h, "claim_acquired", at).0, 1);
    }

    #[test]
    fn a_pass_whose_revision_is_compacted_away_starts_over_and_counts_what_is_there() {
        let Some(etcd) = Etcd::single() else { return };
        plant(&etcd, "/hcompact", 2500);
        let store = etcd.store("/hcompact");
        let mut h = store.history(&Log::Own).expect("a history");
        h.start().expect("start");
        // The first page pins the pass's revision.
        assert!(h.indexing());
        assert!(!matches!(h.step().expect("a step"), Step::Indexed { .. }));
        plant(&etcd, "/hcompact", 10);
        let (rt, mut raw) = etcd.client();
        let rev = rt
            .block_on(raw.get("/hcompact/", None))
            .expect("a read")
            .header()
            .map(|h| h.revision())
            .expect("a revision");
        rt.block_on(raw.compact(rev, None)).expect("compact");
        assert!(matches!(h.step().expect("a step"), Step::Restart));
        h.start().expect("start again");
        assert_eq!(pass(&mut *h).0, 2510);
    }

    #[test]
    fn a_time_window_is_read_again_from_the_checkpoints_around_it() {
        let Some(etcd) = Etcd::single() else { return };
        // More events than a log read whole (16 000), so the window's
        // ends come from the checkpoints.
        plant(&etcd, "/hwindow", 17_000);
        let store = etcd.store("/hwindow");
        let mut h = store.history(&Log::Own).expect("a history");
        h.start().expect("start");
        pass(&mut *h);
        let from = BASE + 2000 * 1000;
        let w = h.window(from, from + 10_000).expect("a window");
        let holders: Vec<String> = (0..7)
            .flat_map(|k| {
                w.tenures_of(&format!("k{k}"))
                    .iter()
                    .map(|t| w.holder_name(t.holder).to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        for i in 2000..2010 {
            assert!(holders.contains(&format!("e{i:05}")), "e{i:05}");
        }
        assert!(
            w.len() < 3000,
            "only the window's part was read: {}",
            w.len()
        );
    }
}

#[test]
fn a_claims_lease_is_granted_for_its_ttl_rounded_up_to_whole_seconds_never_less() {
    // etcd counts leases in whole seconds: rounding 60.5 s down would end
    // the lease, and free the key, before the record's own deadline.
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/granted");
    let opts = AcquireOpts {
        ttl_ms: Some(60_500),
        ..Default::default()
    };
    let tenure = s
        .acquire("k", "h", &opts)
        .expect("acquire")
        .tenure
        .expect("tenure");
    let (rt, mut raw) = etcd.client();
    let granted = rt
        .block_on(raw.lease_time_to_live(tenure.lease.id, None))
        .expect("time to live")
        .granted_ttl();
    assert_eq!(granted, 61);
}
