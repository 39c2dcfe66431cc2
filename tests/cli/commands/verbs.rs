//! acquire, release, renew and status: what each prints and exits with, and
//! what each leaves on disk.

use super::*;

#[test]
fn acquire_fresh_succeeds_and_prints_the_record_as_the_lockfile_maps_it() {
    let s = Sandbox::new();
    let (rc, v) = s.json(&["acquire", "node:x", "--holder", "a", "--reason", "fix"]);
    assert_eq!(rc, 0);
    assert_eq!(v["outcome"], "acquired");
    let rec = &v["record"];
    assert_eq!(rec["key"], "node:x");
    assert_eq!(rec["holder"], "a");
    assert_eq!(rec["reason"], "fix");
    // A PID-bound claim: expires_at omitted, never null.
    assert!(rec.get("expires_at").is_none(), "{rec}");
    assert_eq!(
        &keys(rec)[..6],
        [
            "schema_version",
            "key",
            "holder",
            "acquired_at",
            "pid",
            "host"
        ]
    );
    // Bound to the caller (this test), not to the short-lived claimtop.
    assert_eq!(rec["pid"], json!(std::process::id()));
    assert!(s.lockfile("node%3Ax").is_file());
}

#[test]
fn a_second_holder_is_told_who_holds_the_key_and_exits_3() {
    let s = Sandbox::new();
    assert_eq!(s.json(&["acquire", "k", "--holder", "a"]).0, 0);
    let (rc, v) = s.json(&["acquire", "k", "--holder", "b", "--ttl", "1h"]);
    assert_eq!(rc, 3);
    assert_eq!(v["outcome"], "held_by_other");
    assert_eq!(v["holder"], "a");
    assert_eq!(v["pid"], json!(std::process::id()));
    assert_eq!(v["host"], json!(hostname()));
}

#[test]
fn the_same_holder_reacquires_and_replaces_metadata() {
    let s = Sandbox::new();
    let first = s.json(&["acquire", "k", "--holder", "a", "--metadata", r#"{"a":1}"#]);
    assert_eq!(first.0, 0);
    let (rc, v) = s.json(&[
        "acquire",
        "k",
        "--holder",
        "a",
        "--ttl",
        "30m",
        "--metadata",
        r#"{"b":[true]}"#,
    ]);
    assert_eq!(rc, 0);
    assert_eq!(v["kind"], "reacquired");
    assert_eq!(v["record"]["metadata"], json!({"b": [true]}));
    assert!(v["record"]["expires_at"].is_i64());
    let types: Vec<_> = s.events().iter().map(|e| e["type"].clone()).collect();
    assert_eq!(
        types,
        [
            json!("claim_acquired"),
            json!("claim_idempotent_reacquired")
        ]
    );
}

#[test]
fn release_by_another_holder_leaves_the_claim_and_still_exits_0() {
    let s = Sandbox::new();
    s.json(&["acquire", "k", "--holder", "a"]);
    let (rc, v) = s.json(&["release", "k", "--holder", "b"]);
    assert_eq!(
        (rc, v["outcome"].clone(), v["key"].clone()),
        (0, json!("not_held"), json!("k"))
    );
    assert!(s.lockfile("k").exists());

    let (rc, v) = s.json(&["release", "k", "--holder", "a"]);
    assert_eq!((rc, v["outcome"].clone()), (0, json!("released")));
    assert!(!s.lockfile("k").exists());

    let (rc, v) = s.json(&["release", "k", "--holder", "a"]);
    assert_eq!((rc, v["outcome"].clone()), (0, json!("absent")));
    let released = s
        .events()
        .iter()
        .filter(|e| e["type"] == "claim_released")
        .count();
    assert_eq!(released, 1, "a release that does nothing writes no event");
}

#[test]
fn release_leaves_a_corrupted_file_in_place() {
    let s = Sandbox::new();
    let p = s.write_lock("k", "{{{{ not yaml");
    let (rc, v) = s.json(&["release", "k", "--holder", "a"]);
    assert_eq!((rc, v["outcome"].clone()), (0, json!("corrupted_left")));
    assert!(p.exists());
}

#[test]
fn renew_extends_a_ttl_claim_and_declines_a_pid_claim_with_exit_3() {
    let s = Sandbox::new();
    s.json(&["acquire", "ttl", "--holder", "a", "--ttl", "2m"]);
    s.json(&["acquire", "pid", "--holder", "a"]);

    let (rc, v) = s.json(&["renew", "ttl", "--holder", "a", "--ttl", "1h"]);
    assert_eq!(rc, 0);
    assert_eq!(
        (v["renewed"].clone(), v["key"].clone()),
        (json!(true), json!("ttl"))
    );
    let (_, st) = s.json(&["status", "ttl"]);
    let rec = &st["record"];
    let window = rec["expires_at"].as_i64().unwrap() - rec["acquired_at"].as_i64().unwrap();
    assert!(window >= 3_600_000, "renewed window {window}");

    let (rc, v) = s.json(&["renew", "pid", "--holder", "a", "--ttl", "1h"]);
    assert_eq!(rc, 3);
    assert_eq!(
        (v["renewed"].clone(), v["key"].clone()),
        (json!(false), json!("pid"))
    );
    assert!(v["why"].as_str().unwrap().contains("PID"), "{v}");

    let renewed: Vec<_> = s
        .events()
        .into_iter()
        .filter(|e| e["type"] == "claim_renewed")
        .collect();
    assert_eq!(renewed.len(), 1);
}

#[test]
fn renew_with_operator_records_who_renewed_on_the_holders_behalf() {
    let s = Sandbox::new();
    s.json(&["acquire", "k", "--holder", "a", "--ttl", "10m"]);
    let (rc, _) = s.json(&["renew", "k", "--holder", "a", "--ttl", "10m"]);
    assert_eq!(rc, 0);
    let args = [
        "renew",
        "k",
        "--holder",
        "a",
        "--ttl",
        "10m",
        "--operator",
        "ops:alice",
    ];
    let (rc, v) = s.json(&args);
    assert_eq!((rc, v["renewed"].clone()), (0, json!(true)));
    let renewed: Vec<_> = s
        .events()
        .into_iter()
        .filter(|e| e["type"] == "claim_renewed")
        .collect();
    assert_eq!(renewed.len(), 2);
    assert!(
        renewed[0]["data"].get("operator").is_none(),
        "the holder's own renewal has no operator field: {}",
        renewed[0]
    );
    assert_eq!(renewed[1]["data"]["operator"], "ops:alice");
}

#[test]
fn renew_by_another_holder_is_a_benign_no_op() {
    let s = Sandbox::new();
    s.json(&["acquire", "k", "--holder", "a", "--ttl", "1h"]);
    let (rc, v) = s.json(&["renew", "k", "--holder", "b", "--ttl", "1h"]);
    assert_eq!((rc, v["renewed"].clone()), (3, json!(false)));
}

#[test]
fn status_reports_free_live_stale_and_corrupted_with_the_contract_fields() {
    let s = Sandbox::new();
    let (rc, free) = s.json(&["status", "nothing"]);
    assert_eq!(rc, 0);
    assert_eq!(
        keys(&free),
        ["key", "file", "state", "record", "why", "error", "hazards"]
    );
    assert_eq!(free["hazards"], json!([]));
    assert_eq!(free["state"], "free");
    assert_eq!(free["record"], Value::Null);
    assert_eq!(free["error"], Value::Null);

    s.json(&["acquire", "live", "--holder", "a"]);
    let (_, live) = s.json(&["status", "live"]);
    assert_eq!(live["state"], "live");
    assert_eq!(live["record"]["holder"], "a");
    assert!(live["file"]
        .as_str()
        .unwrap()
        .ends_with(".fno/claims/live.lock"));

    s.write_lock("stale", &dead_holder_yaml("stale", "gone"));
    let (_, stale) = s.json(&["status", "stale"]);
    assert_eq!(stale["state"], "stale");
    assert!(stale["why"].as_str().unwrap().contains("gone"), "{stale}");

    s.write_lock(
        "bad",
        "schema_version: 9\nkey: bad\nholder: h\nacquired_at: 1\npid: 1\nhost: x\n",
    );
    let (_, bad) = s.json(&["status", "bad"]);
    assert_eq!(bad["state"], "corrupted");
    assert_eq!(bad["record"], Value::Null);
    assert!(
        bad["error"].as_str().unwrap().contains("schema_version"),
        "{bad}"
    );
    assert_eq!(bad["hazards"], json!(["corrupted_claim"]));
}
