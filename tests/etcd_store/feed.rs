//! The change feed over etcd: idle under etcd's ping policy, disconnected
//! and resumed, a restart without data or a compacted revision re-read.

use super::*;

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
fn a_release_at_the_revision_etcd_was_compacted_to_while_the_feed_was_cut_off_is_not_lost() {
    // etcd before 3.4.34 / 3.5.15 (etcd-io/etcd#18089) drops a deletion
    // made at the very revision it is compacted to, and a watch resumed at
    // that revision is not told of the compaction: a feed that resumed
    // where it stood never heard the release, and a face showed the claim
    // until its safety re-list, minutes later on a big store.
    let Some(etcd) = Etcd::single() else { return };
    let member = etcd.endpoints()[0].clone();
    let mut proxy = crate::etcd_common::Proxy::to(&member);
    let target = match claimtop::store::StoreUrl::parse(&format!("etcd://{}/gap", proxy.endpoint()))
    {
        Ok(claimtop::store::StoreUrl::Etcd(t)) => t,
        other => panic!("{other:?}"),
    };
    let opts = ConnOpts {
        timeout: Some(Duration::from_secs(2)),
        ..Default::default()
    };
    let watcher = EtcdStore::connect(&target, &opts).expect("connect through the proxy");
    let writer = etcd.store("/gap");
    let mut feed = watcher.changes(None).expect("feed");
    writer.acquire("k", "h", &ttl(600)).expect("acquire");
    let is_k = |c: &Change| matches!(c, Change::Claim { key } if key == "k");
    assert!(wait_for(feed.as_mut(), Duration::from_secs(10), is_k).is_some());
    proxy.cut();
    // The release is one revision, and the newest when etcd is compacted.
    writer.release("k", "h", None).expect("release");
    let (rt, client) = etcd.client();
    rt.block_on(async {
        let mut c = client.clone();
        let now = c.get("/", None).await.expect("a revision");
        let rev = now.header().map(|h| h.revision()).expect("a header");
        c.compact(rev, None).await.expect("compact");
    });
    let port = proxy.port;
    drop(proxy);
    let _back = crate::etcd_common::Proxy::at(port, &member);
    let heard = wait_for(feed.as_mut(), Duration::from_secs(15), |c| {
        is_k(c) || matches!(c, Change::Relist { .. })
    });
    assert!(heard.is_some(), "the resumed feed never said the release");
}
