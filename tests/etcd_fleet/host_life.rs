//! A host's life as the fleet sees it: offline within its lease when its
//! publisher dies or stops, its claims last known and never free, a
//! restart that re-syncs without duplicating events, a decommission that
//! leaves nothing behind, and hosts that share a hostname.

use super::common::{claimtop, Sleeper};
use super::{
    acquire_in, events_of_host, json_of, published, py_write, root_dir, wait_for, Fleet, Publisher,
    LEASE_S, PATIENCE,
};
use std::time::{Duration, Instant};

#[test]
fn a_killed_publishers_host_goes_offline_within_its_lease_and_its_claims_are_not_shown_free() {
    let Some(f) = Fleet::start("/fleet4") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "held", "agent-1", holder.pid());
    assert!(wait_for(PATIENCE, || {
        !published(&f.list(), "host-a", "held").is_empty()
    }));
    pa.signal(libc::SIGKILL);
    let killed = Instant::now();
    let offline = wait_for(Duration::from_secs(LEASE_S + 1), || {
        f.host("host-a").is_some_and(|h| h["online"] == false)
    });
    assert!(offline, "still online {:?} after kill -9", killed.elapsed());
    eprintln!("kill -9 → offline: {:?}", killed.elapsed());
    let list = f.list();
    assert!(
        list["claims"]
            .as_array()
            .expect("claims")
            .iter()
            .all(|c| c["key"] != "held" || c["state"] != "free"),
        "{list}"
    );
    let host = f.host("host-a").expect("an offline host is still listed");
    assert!(host["last_seen_ms"].as_i64().unwrap_or(0) > 0, "{host}");
    let text = String::from_utf8_lossy(&f.over(&["list"]).stdout).into_owned();
    assert!(text.contains("OFFLINE, last seen"), "{text}");
}

#[test]
fn a_restarted_publisher_resyncs_its_claims_without_duplicating_events() {
    let Some(f) = Fleet::start("/fleet5") else {
        return;
    };
    let a = root_dir();
    let acquire = |key: &str| acquire_in(&f, a.path(), key);
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    acquire("one");
    assert!(wait_for(PATIENCE, || {
        events_of_host(&f.events(), "host-a").len() == 1
    }));
    pa.signal(libc::SIGKILL);
    pa.kill();
    // While the host is down: one claim released, another taken.
    let o = claimtop(f.home.path())
        .arg("--root")
        .arg(a.path())
        .args(["release", "one", "--holder", "w"])
        .output()
        .expect("release");
    assert!(o.status.success());
    acquire("two");
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let log_lines = std::fs::read_to_string(a.path().join(".fno/events.jsonl"))
        .expect("log")
        .lines()
        .count();
    assert_eq!(log_lines, 3);
    let mut mirrored = Vec::new();
    let caught_up = wait_for(Duration::from_secs(3), || {
        mirrored = events_of_host(&f.events(), "host-a");
        mirrored.len() >= 3
    });
    assert!(caught_up, "{mirrored:?}");
    // A line appended after the re-sync, once mirrored, says the re-sync
    // and everything it could have written twice are behind us.
    acquire("three");
    let mut mirrored = Vec::new();
    let past = wait_for(PATIENCE, || {
        mirrored = events_of_host(&f.events(), "host-a");
        mirrored.iter().any(|e| e["data"]["key"] == "three")
    });
    assert!(past, "{mirrored:?}");
    let kinds: Vec<&str> = mirrored.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "claim_acquired",
            "claim_released",
            "claim_acquired",
            "claim_acquired"
        ],
        "every line of the log exactly once"
    );
    let list = f.list();
    assert!(published(&list, "host-a", "one").is_empty(), "{list}");
    assert_eq!(published(&list, "host-a", "two").len(), 1, "{list}");
}

#[test]
fn a_decommissioned_host_is_forgotten_only_once_offline_and_leaves_nothing_behind() {
    let Some(f) = Fleet::start("/fleetforget") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    acquire_in(&f, a.path(), "kept");
    assert!(wait_for(PATIENCE, || {
        !published(&f.list(), "host-a", "kept").is_empty()
    }));
    let listed = json_of(&f.over(&["fleet", "--json"]));
    assert!(
        listed["hosts"].as_array().is_some_and(|h| h
            .iter()
            .any(|h| h["host_id"] == "host-a" && h["online"] == true)),
        "{listed}"
    );
    // Online: refused, exit 3, nothing removed.
    let o = f.over(&["fleet", "forget", "host-a", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(json_of(&o)["outcome"], "refused");
    assert!(!published(&f.list(), "host-a", "kept").is_empty());
    pa.signal(libc::SIGKILL);
    assert!(wait_for(Duration::from_secs(LEASE_S + 2), || {
        f.host("host-a").is_some_and(|h| h["online"] == false)
    }));
    let o = f.over(&["fleet", "forget", "host-a"]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.starts_with("forgot host "), "{text}");
    assert!(f.host("host-a").is_none(), "the host is no longer listed");
    // Nothing of the host is left under the prefix; its own root is untouched.
    let (rt, mut client) = f.etcd.client();
    let left = rt
        .block_on(
            client.get(
                "/fleetforget/hosts/",
                Some(
                    etcd_client::GetOptions::new()
                        .with_prefix()
                        .with_count_only(),
                ),
            ),
        )
        .expect("count");
    assert_eq!(left.count(), 0);
    assert!(a
        .path()
        .join(".fno/claims")
        .read_dir()
        .expect("root")
        .next()
        .is_some());
    // A second forget names no host: an error, not a silent success.
    let o = f.over(&["fleet", "forget", "host-a"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no host named host-a"));
}

#[test]
fn sigterm_stops_the_publisher_with_status_0_and_its_host_goes_offline_at_once() {
    let Some(f) = Fleet::start("/fleet6") else {
        return;
    };
    let a = root_dir();
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    pa.signal(libc::SIGTERM);
    let status = pa.child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{}", pa.log());
    let host = f.host("host-a").expect("listed");
    assert_eq!(host["online"], false, "offline as soon as it exits: {host}");
    assert!(pa.log().contains("level=info stopped"), "{}", pa.log());
}

#[test]
fn a_dead_hosts_claims_stay_listed_as_last_known_and_a_shared_hostname_needs_its_suffix() {
    let Some(f) = Fleet::start("/fleetlastknown") else {
        return;
    };
    let (a, b) = (root_dir(), root_dir());
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let _pb = Publisher::spawn(&f, b.path(), "host-b", "5s");
    for key in ["a1", "a2", "a3"] {
        acquire_in(&f, a.path(), key);
    }
    for key in ["b1", "b2"] {
        acquire_in(&f, b.path(), key);
    }
    assert!(
        wait_for(PATIENCE, || f.list()["counts"]["live"] == 5),
        "{}",
        f.list()
    );
    pa.signal(libc::SIGKILL);
    assert!(wait_for(Duration::from_secs(LEASE_S) + PATIENCE, || {
        f.host("host-a").is_some_and(|h| h["online"] == false)
    }));
    // Not live (nobody vouches for them), not gone: last known.
    let list = f.list();
    assert_eq!(list["counts"]["live"], 2, "{list}");
    assert_eq!(list["counts"]["last_known"], 3, "{list}");
    let kept = list["last_known"].as_array().expect("last_known");
    assert_eq!(kept.len(), 3, "{list}");
    assert!(kept
        .iter()
        .all(|c| c["host_id"] == "host-a" && c["last_known_at_ms"].as_i64() > Some(0)));
    assert!(
        published(&list, "host-a", "a1").is_empty(),
        "never among the claims"
    );
    let text = String::from_utf8_lossy(&f.over(&["list"]).stdout).into_owned();
    assert!(
        text.contains("2 live") && text.contains("3 last known"),
        "{text}"
    );
    assert!(line_of(&text, "a2").contains("last known at "), "{text}");
    let doctor = json_of(&f.over(&["doctor", "--json"]));
    assert_eq!(doctor["last_known"], 3, "{doctor}");
    // Both publishers run on this machine: one hostname, two hosts.
    let hosts = json_of(&f.over(&["fleet", "--json"]));
    let hosts = hosts["hosts"].as_array().expect("hosts").clone();
    let name = hosts[0]["hostname"].as_str().expect("hostname").to_string();
    let label_a = hosts
        .iter()
        .find(|h| h["host_id"] == "host-a")
        .and_then(|h| h["label"].as_str())
        .expect("a label")
        .to_string();
    assert_eq!(label_a, format!("{name}·host-a"));
    let o = f.over(&["fleet", "forget", &name]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&label_a) && err.contains("host-b"), "{err}");
    assert_eq!(f.list()["counts"]["last_known"], 3, "nothing removed");
    let o = f.over(&["fleet", "forget", &label_a]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let list = f.list();
    assert_eq!(list["counts"]["last_known"], 0, "{list}");
    assert_eq!(list["counts"]["live"], 2, "{list}");
}

fn line_of<'a>(text: &'a str, word: &str) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().any(|w| w == word))
        .unwrap_or_default()
}
