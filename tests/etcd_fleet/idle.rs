//! Idle is free: a publisher with nothing to publish asks etcd for nothing
//! but its lease's keep-alives, and still answers a request at once,
//! through its watch, even one that a compaction hid from that watch.

use super::{etcd_common, root_dir, wait_for, Fleet, Publisher, PATIENCE};
use std::path::Path;
use std::time::{Duration, Instant};

/// The calls etcd started, keep-alives aside: the sum and the non-zero
/// ones by method.
fn non_keepalive(
    before: &std::collections::BTreeMap<String, f64>,
    after: &std::collections::BTreeMap<String, f64>,
) -> (f64, Vec<(String, f64)>) {
    let mut by = Vec::new();
    for (method, n) in after {
        let d = n - before.get(method).copied().unwrap_or(0.0);
        if method != "LeaseKeepAlive" && d > 0.0 {
            by.push((method.clone(), d));
        }
    }
    (by.iter().map(|(_, d)| d).sum::<f64>().abs(), by)
}

/// Ask host `host`'s root `root_id`, straight through the store, to
/// force-release `key`; the key of its answer.
fn put_request(f: &Fleet, host: &str, root_id: &str, id: &str, key: &str) -> String {
    let request = serde_json::json!({
        "key": key, "expect_holder": null, "expect_acquired_at": null,
        "operator": "probe", "allow_live": false, "at_ms": 0,
    });
    let base = format!("{}/hosts/{host}/{root_id}/", f.prefix);
    let (rt, mut client) = f.etcd.client();
    rt.block_on(client.put(format!("{base}requests/{id}"), request.to_string(), None))
        .expect("put the request");
    format!("{base}answers/{id}")
}

/// How long until `answer` exists (polled every 20 ms), if within `within`.
fn answered_within(f: &Fleet, answer: &str, within: Duration) -> Option<Duration> {
    let (rt, mut client) = f.etcd.client();
    let asked = Instant::now();
    let seen = wait_for(within, || {
        rt.block_on(client.get(answer, None))
            .is_ok_and(|r| !r.kvs().is_empty())
    });
    seen.then(|| asked.elapsed())
}

/// The id of host `host`'s only root, as the fleet lists it.
fn only_root(f: &Fleet, host: &str) -> String {
    let h = f.host(host).expect("the host is listed");
    h["roots"][0]["id"].as_str().expect("a root id").to_string()
}

#[test]
fn an_idle_publisher_asks_etcd_for_nothing_but_keep_alives_and_answers_a_request_at_once() {
    let Some(f) = Fleet::start("/fleet-free") else {
        return;
    };
    let a = root_dir();
    super::acquire_in(&f, a.path(), "held");
    let pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    let root_id = only_root(&f, "host-a");
    let etcd = f.etcd.members[0].endpoint();
    // Ten seconds of nothing: the only sign of life expected is the lease's
    // keep-alive (a renewal every TTL/3 = 1 s here, each a message on one
    // stream); a few of them are the sign that the time has passed with the
    // publisher running.
    let renewals = || {
        etcd_common::grpc_by_method(&etcd, "grpc_server_msg_received_total")
            .get("LeaseKeepAlive")
            .copied()
            .unwrap_or(0.0)
    };
    let before = etcd_common::grpc_started(&etcd);
    let renewed = renewals();
    let start = Instant::now();
    let mut after = before.clone();
    let lived = wait_for(Duration::from_secs(30), || {
        after = etcd_common::grpc_started(&etcd);
        start.elapsed() >= Duration::from_secs(10) && renewals() - renewed >= 3.0
    });
    assert!(lived, "no keep-alive in 30 s\n{}", pa.log());
    let (calls, by) = non_keepalive(&before, &after);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "idle publisher: {calls} calls besides keep-alives in {secs:.1} s ({:.2}/s) {by:?}",
        calls / secs
    );
    assert_eq!(calls, 0.0, "calls while idle: {by:?}\n{}", pa.log());

    // Awake at once all the same. The bound is generous (the property is
    // that the answer does not wait for a poll, or hang).
    let answer = put_request(&f, "host-a", &root_id, "r1", "no-such-claim");
    let took = answered_within(&f, &answer, PATIENCE);
    println!("a request written while idle was answered in {took:?}");
    let took = took.unwrap_or_else(|| panic!("never answered\n{}", pa.log()));
    assert!(took <= Duration::from_secs(1), "answered in {took:?}");
}

#[test]
fn a_request_that_came_while_a_compaction_passed_the_publishers_watch_is_still_answered() {
    let Some(f) = Fleet::start("/fleet-compact") else {
        return;
    };
    let a = root_dir();
    let target = f.etcd.members[0].endpoint();
    let proxy = etcd_common::Proxy::to(&target);
    let port = proxy.port;
    let pa = spawn_through(&f, a.path(), &proxy.endpoint());
    let root_id = only_root(&f, "host-a");
    // Served once through the watch: it is running.
    let first = put_request(&f, "host-a", &root_id, "r1", "no-such-claim");
    assert!(
        answered_within(&f, &first, PATIENCE).is_some(),
        "{}",
        pa.log()
    );

    // The publisher's connections broken; meanwhile a request comes and
    // etcd compacts past it, so the watch cannot resume where it was.
    drop(proxy);
    let answer = put_request(&f, "host-a", &root_id, "r2", "no-such-claim");
    let (rt, mut client) = f.etcd.client();
    let now = rt
        .block_on(client.put("/fleet-compact/filler", "x", None))
        .expect("put")
        .header()
        .map(|h| h.revision())
        .expect("a revision");
    rt.block_on(client.compact(now, None)).expect("compact");
    // Its connections come back (the lease has 10 s: it never lapsed).
    let _back = etcd_common::Proxy::at(port, &target);
    let took = answered_within(&f, &answer, PATIENCE);
    println!("a request hidden by a compaction was answered {took:?} after the reconnect");
    assert!(took.is_some(), "never answered\n{}", pa.log());
    assert!(
        !pa.log().contains("lost etcd"),
        "the session lapsed, so the re-list of a new session answered it, \
         not the watch's own:\n{}",
        pa.log()
    );
}

/// host-a's publisher of `root`, reaching etcd at `endpoint` (a proxy),
/// on a 10 s lease.
fn spawn_through(f: &Fleet, root: &Path, endpoint: &str) -> Publisher {
    let url = format!("etcd://{endpoint}{}", f.prefix);
    let args = ["--store", &url, "--lease-ttl", "10s", "--resweep", "1h"];
    let p = super::spawn_host_a(f, root, &args);
    let online = wait_for(PATIENCE, || {
        f.host("host-a").is_some_and(|h| h["online"] == true)
    });
    assert!(online, "never came online:\n{}", p.log());
    p
}
