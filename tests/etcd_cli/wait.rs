//! `acquire --wait` over etcd: woken by the store's watch, or giving up.

use super::*;

#[test]
fn acquire_wait_over_etcd_takes_the_key_as_soon_as_its_holder_releases() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/wait");
    let home = tempfile::tempdir().expect("tempdir");
    let first = run(
        over(home.path(), &url),
        &["acquire", "k", "--holder", "a", "--ttl", "2m"],
    );
    assert_eq!(code(&first), 0, "{first:?}");
    let waiter = over(home.path(), &url)
        .args([
            "--json",
            "acquire",
            "k",
            "--holder",
            "b",
            "--ttl",
            "2m",
            "--wait=30s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the waiter");
    // Let it find the key held and start waiting on the watch.
    std::thread::sleep(Duration::from_millis(700));
    let t0 = Instant::now();
    let rel = run(over(home.path(), &url), &["release", "k", "--holder", "a"]);
    assert_eq!(code(&rel), 0, "{rel:?}");
    let got = waiter.wait_with_output().expect("the waiter ends");
    let took = t0.elapsed();
    assert_eq!(code(&got), 0, "{got:?}");
    assert_eq!(json_of(&got)["record"]["holder"], "b");
    assert!(
        String::from_utf8_lossy(&got.stderr).contains("waiting for k"),
        "the wait says whom it waits for: {got:?}"
    );
    // Woken by the watch, not by the 2 s safety re-check.
    assert!(
        took < Duration::from_millis(1500),
        "took {took:?} after the release"
    );
}

#[test]
fn acquire_wait_over_etcd_gives_up_after_its_duration_with_exit_3() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/waitout");
    let home = tempfile::tempdir().expect("tempdir");
    run(
        over(home.path(), &url),
        &["acquire", "k", "--holder", "a", "--ttl", "2m"],
    );
    let t0 = Instant::now();
    let o = run(
        over(home.path(), &url),
        &["acquire", "k", "--holder", "b", "--ttl", "2m", "--wait=1s"],
    );
    assert_eq!(code(&o), 3, "{o:?}");
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
}
