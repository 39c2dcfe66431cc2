//! `doctor`, `events --follow` and `metrics` over the store: each says
//! what the publishing hosts found, mirror and count, marked with the host
//! and root.

use super::common::claimtop;
use super::etcd_common;
use super::{
    acquire_in, events_of_host, json_of, published, root_dir, wait_for, Fleet, Publisher, LEASE_S,
    PATIENCE,
};
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn doctor_over_the_store_reports_what_a_publishing_host_found_in_its_root() {
    let Some(f) = Fleet::start("/fleetdoc") else {
        return;
    };
    let a = root_dir();
    // No full re-sweep within the test (the claims dir exists before the
    // publisher starts, and its tick is a minute): the changed lockfile's
    // own re-read must carry its hazard to the store.
    let claims = a.path().join(".fno/claims");
    std::fs::create_dir_all(&claims).expect("claims dir");
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "60s");
    std::fs::write(claims.join("broken.lock"), b"{{{ not yaml").expect("plant");
    let mut doc = Value::Null;
    let found = wait_for(Duration::from_secs(5), || {
        doc = json_of(&f.over(&["doctor", "--json"]));
        doc["hazards"]
            .as_array()
            .is_some_and(|hs| hs.iter().any(|h| h["host_id"] == "host-a"))
    });
    assert!(found, "the host's hazard is not in doctor: {doc}");
    let h = doc["hazards"]
        .as_array()
        .and_then(|hs| hs.iter().find(|h| h["host_id"] == "host-a"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(h["kind"], "corrupted_claim", "{h}");
    assert_eq!(h["root"], a.path().to_string_lossy().as_ref(), "{h}");
    let text = f.over(&["doctor"]);
    assert_eq!(text.status.code(), Some(3), "hazards decline: {text:?}");
    let words = String::from_utf8_lossy(&text.stdout);
    // The host is named as the HOST column names it, not by its machine id.
    let label = f
        .host("host-a")
        .map(|h| h["label"].clone())
        .unwrap_or_default();
    let label = label.as_str().unwrap_or("(no label)");
    let line = words.lines().find(|l| l.contains("corrupted_claim"));
    assert!(
        line.is_some_and(|l| l.contains(&format!("host={label} "))),
        "{words}"
    );
    // The published copy names its own hazards, as the host's list does.
    let copy = published(&f.list(), "host-a", "broken");
    assert_eq!(copy[0]["hazards"], json!(["corrupted_claim"]), "{copy:?}");
}

/// `events --follow` over the store prints a host's events as the host
/// mirrors them, marked with its host and root exactly as `events` marks
/// the history.
#[test]
fn events_follow_over_the_store_prints_a_hosts_events_as_they_are_mirrored() {
    use std::io::{BufRead, BufReader};
    let Some(f) = Fleet::start("/fleetfollow") else {
        return;
    };
    let a = root_dir();
    let acquire = |key: &str| acquire_in(&f, a.path(), key);
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    acquire("before");
    assert!(wait_for(PATIENCE, || {
        events_of_host(&f.events(), "host-a").len() == 1
    }));

    let mut follow = claimtop(f.home.path())
        .env_remove("FNO_CLAIMS_STORE")
        .args(["--store", &f.url, "events", "--follow", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start events --follow");
    let stdout = follow.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                if tx.send(v).is_err() {
                    return;
                }
            }
        }
    });
    let key_of = |v: &Value| v["data"]["key"].as_str().unwrap_or("").to_string();
    // The history first: its feed is open by the time this is printed.
    let history = rx.recv_timeout(PATIENCE).expect("the history's line");
    assert_eq!(key_of(&history), "before", "{history}");
    assert_eq!(history["host_id"], "host-a", "{history}");

    let written = Instant::now();
    acquire("live");
    let live = rx.recv_timeout(PATIENCE);
    let latency = written.elapsed();
    let _ = follow.kill();
    let _ = follow.wait();
    let live = live.expect("the host's new event, followed");
    eprintln!("acquire in host-a's root → line of events --follow over the store: {latency:?}");
    assert_eq!(key_of(&live), "live", "{live}");
    let printed = events_of_host(&f.events(), "host-a");
    let same = printed
        .iter()
        .find(|e| key_of(e) == "live")
        .expect("the event in the history too");
    assert_eq!(&live, same, "followed and read back, one shape");
    for field in ["host", "host_id", "root"] {
        assert!(live[field].is_string(), "{field} missing: {live}");
    }
}

/// `claimtop metrics` over the store exports each online host's roots,
/// labelled with the host and root, counts what the host mirrors as the
/// feed brings it, says which hosts are up, and passes `promtool`.
#[test]
fn metrics_over_the_store_export_each_hosts_roots_and_whether_the_host_is_up() {
    let Some(f) = Fleet::start("/fleetmetrics") else {
        return;
    };
    let a = root_dir();
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    acquire_in(&f, a.path(), "one");
    assert!(wait_for(PATIENCE, || {
        events_of_host(&f.events(), "host-a").len() == 1
    }));
    let host = f
        .host("host-a")
        .and_then(|h| h["hostname"].as_str().map(String::from))
        .expect("host-a's hostname");
    let root = std::fs::canonicalize(a.path()).expect("root path");
    let labels = format!(
        "host=\"{host}\",host_id=\"host-a\",root=\"{}\"",
        root.display()
    );

    let mut over = claimtop(f.home.path());
    over.env_remove("FNO_CLAIMS_STORE")
        .args(["--store", &f.url]);
    let (mut server, addr) = etcd_common::start_metrics(over);
    let series = |name: &str, extra: &str| format!("{name}{{{labels},{extra}}}");
    // A scrape reads the root's summary, written at most once a second.
    let mut m = etcd_common::scrape(&addr);
    let one = wait_for(PATIENCE, || {
        m = etcd_common::scrape(&addr);
        m.get(&series("claimtop_claims", "state=\"live\"")) == Some(&1.0)
    });
    assert!(one, "{m:?}");
    assert_eq!(
        m[&series("claimtop_events_total", "type=\"claim_acquired\"")],
        1.0,
        "the history's event: {m:?}"
    );
    assert_eq!(
        m[&format!("claimtop_host_up{{host=\"{host}\",host_id=\"host-a\"}}")],
        1.0
    );

    // A second claim: its event comes by the feed, its claim by the listing.
    acquire_in(&f, a.path(), "two");
    let acquired = series("claimtop_events_total", "type=\"claim_acquired\"");
    let live = series("claimtop_claims", "state=\"live\"");
    let mut m = etcd_common::scrape(&addr);
    // The publisher mirrors the event and the claim in separate writes, so
    // a scrape may see one before the other: wait for both.
    let counted = wait_for(PATIENCE, || {
        m = etcd_common::scrape(&addr);
        m.get(&acquired) == Some(&2.0) && m.get(&live) == Some(&2.0)
    });
    assert!(counted, "{m:?}");

    let text = etcd_common::metrics_text(&addr);
    if let Ok(mut lint) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        use std::io::Write;
        lint.stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("feed promtool");
        let out = lint.wait_with_output().expect("promtool");
        assert!(
            out.status.success(),
            "promtool: {}{}\n{text}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    } else if std::env::var_os("CI").is_some() {
        panic!("promtool is not installed, and CI installs it");
    }

    // The host dies: it is down, and its claims are not exported as zero.
    pa.signal(libc::SIGKILL);
    pa.kill();
    let up = format!("claimtop_host_up{{host=\"{host}\",host_id=\"host-a\"}}");
    let down = wait_for(Duration::from_secs(LEASE_S + 5), || {
        m = etcd_common::scrape(&addr);
        m.get(&up) == Some(&0.0)
    });
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let _ = server.wait();
    assert!(down, "{m:?}");
    assert!(
        !m.contains_key(&series("claimtop_claims", "state=\"live\"")),
        "an offline host's claims are unknown, not 0: {m:?}"
    );
}
