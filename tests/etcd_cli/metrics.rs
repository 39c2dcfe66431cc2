//! `metrics` over etcd alone and beside a root.

use super::*;

#[test]
fn metrics_over_etcd_reports_the_stores_claims_and_counts_its_events_from_the_watch() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/metrics");
    let home = tempfile::tempdir().expect("tempdir");
    run(
        over(home.path(), &url),
        &["acquire", "k", "--holder", "w", "--ttl", "2m"],
    );
    let (mut server, addr) = start_metrics(over(home.path(), &url));
    let m = scrape(&addr);
    assert_eq!(m["claimtop_claims{state=\"live\"}"], 1.0, "{m:?}");
    assert_eq!(m["claimtop_store_up"], 1.0, "{m:?}");
    assert_eq!(
        m["claimtop_events_total{type=\"claim_acquired\"}"], 1.0,
        "{m:?}"
    );
    run(over(home.path(), &url), &["release", "k", "--holder", "w"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    let m = loop {
        let m = scrape(&addr);
        if m["claimtop_events_total{type=\"claim_released\"}"] == 1.0 || Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let _ = server.wait();
    assert_eq!(
        m["claimtop_events_total{type=\"claim_released\"}"], 1.0,
        "{m:?}"
    );
    assert_eq!(
        m["claimtop_events_total{type=\"claim_acquired\"}"], 1.0,
        "counted once: {m:?}"
    );
    assert_eq!(m["claimtop_claims{state=\"live\"}"], 0.0, "{m:?}");
}

#[test]
fn metrics_over_a_root_and_an_etcd_store_keep_a_series_for_each_labelled_by_where() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/metrics-mix");
    let home = tempfile::tempdir().expect("tempdir");
    let root = tempfile::tempdir().expect("root");
    run(
        over(home.path(), &url),
        &["acquire", "in-etcd", "--holder", "w", "--ttl", "2m"],
    );
    let mut on_root = claimtop(home.path());
    on_root.arg("--root").arg(root.path());
    let got = run(
        on_root,
        &["acquire", "on-disk", "--holder", "w", "--ttl", "2m"],
    );
    assert_eq!(code(&got), 0, "{got:?}");
    let mut both = over(home.path(), &url);
    both.arg("--root").arg(root.path());
    let (mut server, addr) = start_metrics(both);
    let m = scrape(&addr);
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let _ = server.wait();
    let dir = root.path().to_string_lossy();
    for label in [url.as_str(), dir.as_ref()] {
        let live = format!("claimtop_claims{{root=\"{label}\",state=\"live\"}}");
        assert_eq!(m.get(&live), Some(&1.0), "{live} in {m:?}");
        let up = format!("claimtop_store_up{{root=\"{label}\"}}");
        assert_eq!(m.get(&up), Some(&1.0), "{up} in {m:?}");
    }
}
