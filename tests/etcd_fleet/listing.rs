//! What `list` over the store shows of a fleet: a claim written on a
//! host's root within a second, the history as of a time from every
//! host's mirrored log, and a listing limited to one host or root.

use super::common::Sleeper;
use super::{
    acquire_in, events_of_host, json_of, published, py_write, root_dir, wait_for, Fleet, Publisher,
    PATIENCE,
};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

#[test]
fn a_claim_written_on_one_hosts_root_appears_in_the_fleet_listing_within_a_second() {
    let Some(f) = Fleet::start("/fleet1") else {
        return;
    };
    let (a, b) = (root_dir(), root_dir());
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let _pb = Publisher::spawn(&f, b.path(), "host-b", "5s");
    let holder = Sleeper::spawn();
    let started = Instant::now();
    py_write(a.path(), "issue/7", "agent-1", holder.pid());
    let mut seen = Value::Null;
    let shown = wait_for(Duration::from_secs(1), || {
        seen = f.list();
        !published(&seen, "host-a", "issue/7").is_empty()
    });
    assert!(shown, "not listed within 1 s: {seen}");
    eprintln!("write → listed: {:?}", started.elapsed());
    let item = &published(&seen, "host-a", "issue/7")[0];
    assert_eq!(item["source"], "published");
    assert_eq!(item["state"], "live");
    assert_eq!(item["record"]["holder"], "agent-1");
    assert!(published(&seen, "host-b", "issue/7").is_empty());
    let hosts = seen["hosts"].as_array().expect("hosts");
    assert_eq!(hosts.len(), 2, "{seen}");
    assert!(hosts.iter().all(|h| h["online"] == true));
    let text = f.over(&["list"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.starts_with("HOST") && text.contains("SOURCE"),
        "{text}"
    );
}

#[test]
fn list_as_of_over_the_store_reads_its_own_log_and_every_hosts_mirrored_one() {
    let Some(f) = Fleet::start("/fleetasof") else {
        return;
    };
    let a = root_dir();
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    acquire_in(&f, a.path(), "asof/on-host");
    let o = f.over(&["acquire", "asof/in-store", "--holder", "w", "--ttl", "1h"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        wait_for(PATIENCE, || !events_of_host(&f.events(), "host-a")
            .is_empty()),
        "the host's acquire was never mirrored"
    );
    // An instant after both acquires, in whole seconds.
    std::thread::sleep(Duration::from_millis(1100));
    let at = claimtop::time::utc_hms(claimtop::time::now_ms() / 1000 * 1000);
    let v = json_of(&f.over(&["list", "--as-of", &at, "--json"]));
    let rows: Vec<(String, String)> = v["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("key"), s("root"))
        })
        .collect();
    let dir = a
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    assert!(
        rows.iter()
            .any(|(k, r)| k == "asof/on-host" && r.ends_with(&dir) && r.contains(':')),
        "the host's claim, named by host and root: {v}"
    );
    assert!(
        rows.contains(&("asof/in-store".into(), "etcd".into())),
        "the store's own claim: {v}"
    );
}

/// The host ids among a listing's published items.
fn item_hosts(list: &Value) -> BTreeSet<String> {
    let items = list["claims"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter(|c| c["source"] == "published")
        .filter_map(|c| c["host_id"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn list_limited_to_a_host_or_a_root_keeps_only_what_it_publishes() {
    let Some(f) = Fleet::start("/fleetonly") else {
        return;
    };
    let (a, b) = (root_dir(), root_dir());
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let _pb = Publisher::spawn(&f, b.path(), "host-b", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "only/1", "agent-a", holder.pid());
    py_write(b.path(), "only/1", "agent-b", holder.pid());
    let mut all = Value::Null;
    let both = wait_for(PATIENCE, || {
        all = f.list();
        item_hosts(&all).len() == 2
    });
    assert!(both, "both hosts' claims were never listed: {all}");
    let only_a = json_of(&f.over(&["list", "--json", "--host", "host-a"]));
    assert_eq!(item_hosts(&only_a), BTreeSet::from(["host-a".to_string()]));
    let hosts = only_a["hosts"].as_array().expect("hosts");
    assert_eq!(hosts.len(), 1, "{only_a}");
    let b_root = published(&all, "host-b", "only/1")[0]["root_id"]
        .as_str()
        .expect("a root id")
        .to_string();
    let only_b = json_of(&f.over(&["list", "--json", "--root-id", &b_root]));
    assert_eq!(item_hosts(&only_b), BTreeSet::from(["host-b".to_string()]));
    // The text table is limited alike.
    let text = f.over(&["list", "--host", "host-b"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("agent-b") && !text.contains("agent-a"),
        "{text}"
    );
}
