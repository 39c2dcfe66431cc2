//! `list --as-of TIME`: the table at an instant equals the tenures of a
//! generated log that covered it.

use crate::common::{claimtop, Sandbox};
use claimtop::time::{now_ms, utc_hms};
use serde_json::Value;
use std::io::Write;

fn ev(kind: &str, at: i64, key: &str, holder: &str, since: i64) -> String {
    format!(
        "{{\"ts\":\"{}\",\"type\":\"{kind}\",\"source\":\"fno-loop\",\"data\":{{\"key\":\"{key}\",\"holder\":\"{holder}\",\"pid\":1,\"acquired_at\":{since},\"duration_held_ms\":{}}}}}\n",
        utc_hms(at),
        at - since
    )
}

fn as_of(s: &Sandbox, at: i64) -> Value {
    let out = s.run(&["list", "--as-of", &utc_hms(at), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

fn held(v: &Value) -> Vec<(String, String)> {
    v["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|c| {
            (
                c["key"].as_str().unwrap_or("").to_string(),
                c["holder"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn the_table_as_of_an_instant_is_the_tenures_of_the_log_that_covered_it() {
    let s = Sandbox::new();
    // Whole seconds, some hours ago: the log's timestamps have no millis.
    let t0 = (now_ms() - 6 * 3600 * 1000) / 1000 * 1000;
    let at = |m: i64| t0 + m * 60_000;
    // Known tenures (minutes from t0): a by w1 [0, 10), a by w2 [20, ...);
    // b by w3 [5, 40) force-released; c by w4 [50, 60).
    let lines = [
        ev("claim_acquired", at(0), "a", "w1", at(0)),
        ev("claim_acquired", at(5), "b", "w3", at(5)),
        ev("claim_released", at(10), "a", "w1", at(0)),
        ev("claim_acquired", at(20), "a", "w2", at(20)),
        ev("claim_force_released", at(40), "b", "w3", at(5)),
        ev("claim_acquired", at(50), "c", "w4", at(50)),
        ev("claim_released", at(60), "c", "w4", at(50)),
    ];
    std::fs::create_dir_all(s.root().join(".fno")).unwrap();
    let mut f = std::fs::File::create(s.root().join(".fno/events.jsonl")).unwrap();
    for l in &lines {
        f.write_all(l.as_bytes()).unwrap();
    }
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(k, h)| (k.to_string(), h.to_string()))
            .collect()
    };
    assert_eq!(held(&as_of(&s, at(-1))), pairs(&[]));
    assert_eq!(held(&as_of(&s, at(7))), pairs(&[("a", "w1"), ("b", "w3")]));
    assert_eq!(held(&as_of(&s, at(10))), pairs(&[("b", "w3")]));
    assert_eq!(held(&as_of(&s, at(30))), pairs(&[("a", "w2"), ("b", "w3")]));
    assert_eq!(held(&as_of(&s, at(55))), pairs(&[("a", "w2"), ("c", "w4")]));
    // How each tenure ended, later.
    let v = as_of(&s, at(30));
    assert_eq!(
        v["claims"][0]["ended"],
        Value::Null,
        "a is still held by w2"
    );
    assert_eq!(v["claims"][1]["ended"]["how"], "forced");
    assert_eq!(v["claims"][1]["held_ms"], 25 * 60_000);
    // Text: the header says which instant, and the row says how it ended.
    let out = s.run(&["list", "--as-of", &utc_hms(at(7))]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.starts_with(&format!(
            "as of {} · history",
            utc_hms(at(7)).replace('T', " ")
        )),
        "{text}"
    );
    assert!(text.contains("released at"), "{text}");
    // A time that is no time, or one in the future, is a usage error.
    for bad in ["yesterday-ish", "2999-01-01T00:00:00Z"] {
        let out = s.run(&["list", "--as-of", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
}

#[test]
fn over_several_roots_the_table_reads_every_roots_log_and_names_the_root() {
    let (a, b) = (Sandbox::new(), Sandbox::new());
    let t0 = (now_ms() - 6 * 3600 * 1000) / 1000 * 1000;
    let at = |m: i64| t0 + m * 60_000;
    let write = |s: &Sandbox, lines: &[String]| {
        std::fs::create_dir_all(s.root().join(".fno")).unwrap();
        std::fs::write(s.root().join(".fno/events.jsonl"), lines.concat()).unwrap();
    };
    // The same key held in both roots at minute 5, by different holders;
    // b's "solo" only in b.
    write(
        &a,
        &[
            ev("claim_acquired", at(0), "shared", "wa", at(0)),
            ev("claim_released", at(10), "shared", "wa", at(0)),
        ],
    );
    write(
        &b,
        &[
            ev("claim_acquired", at(2), "shared", "wb", at(2)),
            ev("claim_acquired", at(3), "solo", "wb", at(3)),
            ev("claim_released", at(8), "solo", "wb", at(3)),
        ],
    );
    let run = |json: bool| {
        let mut cmd = claimtop(a.home.path());
        cmd.arg("--root").arg(a.root()).arg("--root").arg(b.root());
        cmd.args(["list", "--as-of", &utc_hms(at(5))]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let v: Value = serde_json::from_slice(&run(true)).expect("one JSON document");
    let rows: Vec<(String, String, String)> = v["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|c| {
            let s = |f: &str| c[f].as_str().unwrap_or("").to_string();
            (s("root"), s("key"), s("holder"))
        })
        .collect();
    let (ra, rb) = (
        a.root().display().to_string(),
        b.root().display().to_string(),
    );
    assert_eq!(
        rows,
        [
            (ra.clone(), "shared".into(), "wa".into()),
            (rb.clone(), "shared".into(), "wb".into()),
            (rb.clone(), "solo".into(), "wb".into()),
        ]
    );
    let text = String::from_utf8_lossy(&run(false)).into_owned();
    assert!(
        text.lines().nth(1).is_some_and(|l| l.starts_with("ROOT")),
        "{text}"
    );
    assert!(text.contains(&rb), "{text}");
    assert!(text.contains("3 keys held then"), "{text}");
}

fn write_log(s: &Sandbox, lines: &[String]) {
    std::fs::create_dir_all(s.root().join(".fno")).unwrap();
    std::fs::write(s.root().join(".fno/events.jsonl"), lines.concat()).unwrap();
}

#[test]
fn a_handover_logged_new_holder_first_shows_the_new_holder_from_then_on() {
    let s = Sandbox::new();
    let t0 = (now_ms() - 3 * 3600 * 1000) / 1000 * 1000;
    // w2 woke on w1's unlink and appended its acquire before w1's release.
    write_log(
        &s,
        &[
            ev("claim_acquired", t0, "k", "w1", t0),
            ev("claim_acquired", t0 + 60_005, "k", "w2", t0 + 60_005),
            ev("claim_released", t0 + 60_000, "k", "w1", t0),
        ],
    );
    let p = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(k, h)| (k.to_string(), h.to_string()))
            .collect()
    };
    assert_eq!(held(&as_of(&s, t0 + 30_000)), p(&[("k", "w1")]));
    assert_eq!(held(&as_of(&s, t0 + 61_000)), p(&[("k", "w2")]));
    assert_eq!(held(&as_of(&s, t0 + 3_600_000)), p(&[("k", "w2")]));
}

#[test]
fn a_claim_held_since_long_before_the_window_is_listed_and_what_the_window_cannot_see_is_said() {
    let s = Sandbox::new();
    let now = now_ms() / 1000 * 1000;
    let hour = 3_600_000;
    let at = now - 14 * hour;
    // Forty hours of traffic, a 3 s tenure every 10 s: a log too big to
    // read whole for one instant (6 MB), so the window is bisected.
    let mut lines = Vec::new();
    let mut t = now - 40 * hour + 5_000;
    while t < now - hour / 2 {
        lines.push(ev("claim_acquired", t, "tick", "t", t));
        lines.push(ev("claim_released", t + 3_000, "tick", "t", t));
        t += 10_000;
    }
    // "gone" was held from 20 h before the instant to 12 h after it, and
    // is not held now: the window around the instant sees neither end.
    lines.push(ev(
        "claim_released",
        at + 12 * hour,
        "gone",
        "w1",
        at - 20 * hour,
    ));
    lines.sort_by_key(|l| l[7..27].to_string());
    write_log(&s, &lines);
    // "long" was taken 20 h before the instant and is still held (its pid
    // is gone: suspect), with no line about it in the log.
    let root = crate::common::root_in(s.root());
    crate::common::plant(
        &root,
        &crate::common::record("long", "w0", crate::common::dead_pid(), at - 20 * hour),
    );

    let v = as_of(&s, at);
    let rows: Vec<(String, String, String)> = v["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let f = |n: &str| c[n].as_str().unwrap_or("").to_string();
            (f("key"), f("holder"), f("known_from"))
        })
        .collect();
    assert_eq!(rows, [("long".into(), "w0".into(), "store".into())]);
    assert_eq!(v["claims"][0]["since"], at - 20 * hour);
    assert_eq!(v["complete"], false, "gone's tenure is out of sight");
    let (from, to) = (v["span"]["from"].as_i64(), v["span"]["to"].as_i64());
    assert!(
        from.is_some_and(|f| f <= at) && to.is_some_and(|t| t > at && t < at + 12 * hour),
        "{}",
        v["span"]
    );
    let out = s.run(&["list", "--as-of", &utc_hms(at)]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("long") && text.contains("still held"),
        "{text}"
    );
    assert!(
        text.contains("not complete: the log was read from"),
        "{text}"
    );

    // Near now the window reaches the log's end: every end after the
    // instant is in it (gone's too), and the answer is whole.
    let v = as_of(&s, now - 5 * hour / 2);
    assert_eq!(v["complete"], true, "{v}");
    let keys: Vec<&str> = v["claims"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["key"].as_str())
        .collect();
    assert_eq!(keys, ["gone", "long"]);
}

#[test]
fn a_claim_acquired_with_a_reason_of_120_kb_is_read_from_the_log() {
    let s = Sandbox::new();
    let reason = "r".repeat(120_000);
    for (key, why) in [
        ("a", "short"),
        ("b", "short"),
        ("fat", reason.as_str()),
        ("d", "short"),
    ] {
        let out = s.run(&[
            "acquire", key, "--holder", "w", "--ttl", "1h", "--reason", why,
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let at = now_ms();
    let out = s.run(&[
        "list",
        "--json",
        "--as-of",
        &chrono::DateTime::from_timestamp_millis(at)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows: Vec<(String, String)> = v["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let f = |n: &str| c[n].as_str().unwrap_or("").to_string();
            (f("key"), f("known_from"))
        })
        .collect();
    // Every one from the log itself (what the store holds would list them
    // too, but only as "store").
    let want: Vec<(String, String)> = ["a", "b", "d", "fat"]
        .iter()
        .map(|k| (k.to_string(), "log".to_string()))
        .collect();
    assert_eq!(rows, want);
    assert_eq!(v["complete"], true);
}
