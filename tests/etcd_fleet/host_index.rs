//! The host index: a publisher puts `PREFIX/host-index/<machine>` with its
//! host record, `fleet forget` deletes it with the host, and readers find
//! every host with one range read over it, walking `hosts/` only while it
//! is empty (hosts written by an older publisher).

use super::{etcd_common, json_of, root_dir, wait_for, Fleet, Publisher, PATIENCE};
use claimtop::store::Backend;

/// Whether `key` exists.
fn exists(f: &Fleet, key: &str) -> bool {
    let (rt, mut client) = f.etcd.client();
    let got = rt
        .block_on(client.get(key, Some(etcd_client::GetOptions::new().with_count_only())))
        .expect("count");
    got.count() == 1
}

/// Put `keys` as they are, straight through the store.
fn put_all(f: &Fleet, keys: &[(String, String)]) {
    let (rt, mut client) = f.etcd.client();
    for (k, v) in keys {
        rt.block_on(client.put(k.as_str(), v.as_str(), None))
            .expect("put");
    }
}

/// A host record as a publisher (of any version) writes it, with a few
/// copies under one root beside it.
fn host_by_hand(prefix: &str, machine: &str) -> Vec<(String, String)> {
    let record = serde_json::json!({
        "machine_id": machine, "hostname": machine, "roots": [],
        "last_seen_ms": 1_000, "ttl_s": 10, "pid": 1,
    });
    let dir = format!("{prefix}/hosts/{machine}");
    let mut keys = vec![(format!("{dir}/host"), record.to_string())];
    for i in 0..20 {
        for kind in ["claims", "known"] {
            keys.push((
                format!("{dir}/00000000000000aa/{kind}/k{i:03}"),
                "{}".into(),
            ));
        }
    }
    keys
}

fn host_ids(f: &Fleet) -> Vec<String> {
    let store = f.etcd.store(&f.prefix);
    let fleet = store.fleet().expect("a fleet");
    let mut ids: Vec<String> = fleet
        .hosts()
        .expect("read the hosts")
        .into_iter()
        .map(|h| h.host_id)
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_publisher_indexes_its_host_and_forget_removes_the_entry_with_the_host() {
    let Some(f) = Fleet::start("/hostidx") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    let entry = "/hostidx/host-index/host-a";
    assert!(
        wait_for(PATIENCE, || exists(&f, entry)),
        "no index entry\n{}",
        pa.log()
    );
    assert_eq!(host_ids(&f), ["host-a"]);
    pa.signal(libc::SIGTERM);
    assert!(wait_for(PATIENCE, || {
        f.host("host-a").is_some_and(|h| h["online"] == false)
    }));
    // Offline, the host stays listed: the entry has no lease.
    assert!(exists(&f, entry));
    let o = f.over(&["fleet", "forget", "host-a", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", json_of(&o));
    assert_eq!(json_of(&o)["outcome"], "forgotten");
    assert!(!exists(&f, entry), "the index entry outlived the host");
    assert!(host_ids(&f).is_empty());
}

#[test]
fn hosts_an_older_publisher_wrote_are_found_by_the_walk_while_the_index_is_empty() {
    let Some(f) = Fleet::start("/hostold") else {
        return;
    };
    let mut keys = host_by_hand("/hostold", "old-1");
    keys.extend(host_by_hand("/hostold", "old-2"));
    put_all(&f, &keys);
    assert_eq!(host_ids(&f), ["old-1", "old-2"]);
}

/// Finding N hosts costs one range request through the index; the walk,
/// without one, costs a few a host (which is what the counter is checked
/// against here).
#[test]
fn the_hosts_are_found_with_one_range_request_whatever_their_number() {
    let Some(f) = Fleet::start("/hostone") else {
        return;
    };
    const N: usize = 12;
    let ids: Vec<String> = (0..N).map(|i| format!("host-{i:02}")).collect();
    let mut keys: Vec<(String, String)> = Vec::new();
    for id in &ids {
        keys.extend(host_by_hand("/hostone", id));
    }
    put_all(&f, &keys);
    let store = f.etcd.store("/hostone");
    let fleet = store.fleet().expect("a fleet");
    let etcd = f.etcd.members[0].endpoint();
    let ranges = || {
        etcd_common::grpc_started(&etcd)
            .get("Range")
            .copied()
            .unwrap_or(0.0)
    };
    let count = |want: usize| {
        let before = ranges();
        let hosts = fleet.hosts().expect("read the hosts");
        assert_eq!(hosts.len(), want);
        ranges() - before
    };
    // No index yet: the walk, one narrow search (or more) a host.
    let walked = count(N);
    assert!(walked >= N as f64, "the walk made {walked} range requests");
    let index: Vec<(String, String)> = ids
        .iter()
        .map(|id| (format!("/hostone/host-index/{id}"), String::new()))
        .collect();
    put_all(&f, &index);
    assert_eq!(count(N), 1.0, "range requests to find {N} hosts");
}
