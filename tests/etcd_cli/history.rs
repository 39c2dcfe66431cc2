//! The history over etcd: `events --since/--until` and `list --as-of`.

use super::*;

#[test]
fn events_since_and_until_over_etcd_print_exactly_the_window_read_through_the_history() {
    use etcd_common::{event_line, put_events};
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/evwin");
    let base = 1_764_547_200_000_i64; // 2025-12-01T00:00:00Z
                                      // 2 500 events a minute apart (more than two range pages), a key each
                                      // of four.
    let lines: Vec<(i64, String)> = (0..2500)
        .map(|i| {
            let at = base + i * 60_000;
            let data = serde_json::json!({"key": format!("w{}", i % 4), "holder": format!("h{i}"),
                                          "pid": 1, "host": "x", "acquired_at": at, "expires_at": null});
            // One writer's clock in the next century, inside the window:
            // its line must not end the window early.
            let stamp = if i == 1250 { 4_102_444_800_000 } else { at };
            (at, event_line(stamp, "claim_acquired", data))
        })
        .collect();
    put_events(&etcd, "/evwin", &lines);
    let home = tempfile::tempdir().expect("tempdir");
    let holders = |args: &[&str]| -> Vec<String> {
        let o = run(over(home.path(), &url), args);
        assert_eq!(code(&o), 0, "{o:?}");
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("a JSON line");
                v["data"]["holder"].as_str().unwrap_or_default().to_string()
            })
            .collect()
    };
    let at = |i: i64| claimtop::time::utc_hms(base + i * 60_000);
    // [h1200, h1300): since included, until left out.
    let got = holders(&[
        "--json",
        "events",
        "--since",
        &at(1200),
        "--until",
        &at(1300),
    ]);
    let want: Vec<String> = (1200..1300)
        .filter(|i| *i != 1250)
        .map(|i| format!("h{i}"))
        .collect();
    assert_eq!(got, want);
    // The last 3 of the window that are key w1.
    let got = holders(&[
        "--json",
        "events",
        "--since",
        &at(1200),
        "--until",
        &at(1300),
        "--key",
        "w1",
        "-n",
        "3",
    ]);
    assert_eq!(got, ["h1289", "h1293", "h1297"]);
    // Since alone runs to the end; -n alone is the last few.
    let got = holders(&["--json", "events", "--since", &at(2497)]);
    assert_eq!(got, ["h2497", "h2498", "h2499"]);
    let got = holders(&["--json", "events", "-n", "2"]);
    assert_eq!(got, ["h2498", "h2499"]);
}

#[test]
fn list_as_of_over_etcd_is_the_table_of_the_tenures_that_covered_that_instant() {
    use etcd_common::{event_line, put_events};
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/asof");
    let t0 = 1_764_547_200_000_i64; // 2025-12-01T00:00:00Z
    let at = |m: i64| t0 + m * 60_000;
    let ev = |kind: &str, m: i64, key: &str, holder: &str, since: i64| {
        let data = serde_json::json!({"key": key, "holder": holder, "pid": 1, "host": "x",
            "acquired_at": at(since), "duration_held_ms": at(m) - at(since)});
        (at(m), event_line(at(m), kind, data))
    };
    // a by w1 [0, 10), a by w2 [20, ..); b by w3 [5, 40) expired (its lease).
    put_events(
        &etcd,
        "/asof",
        &[
            ev("claim_acquired", 0, "a", "w1", 0),
            ev("claim_acquired", 5, "b", "w3", 5),
            ev("claim_released", 10, "a", "w1", 0),
            ev("claim_acquired", 20, "a", "w2", 20),
            ev("claim_expired", 40, "b", "w3", 5),
        ],
    );
    let home = tempfile::tempdir().expect("tempdir");
    let held = |m: i64| -> Value {
        let stamp = claimtop::time::utc_hms(at(m));
        let o = run(
            over(home.path(), &url),
            &["--json", "list", "--as-of", &stamp],
        );
        assert_eq!(code(&o), 0, "{o:?}");
        serde_json::from_slice(&o.stdout).expect("one JSON document")
    };
    let keys = |v: &Value| -> Vec<String> {
        v["claims"]
            .as_array()
            .expect("claims")
            .iter()
            .map(|c| {
                format!(
                    "{}={}",
                    c["key"].as_str().unwrap_or(""),
                    c["holder"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    assert_eq!(keys(&held(7)), ["a=w1", "b=w3"]);
    assert_eq!(keys(&held(15)), ["b=w3"]);
    let v = held(30);
    assert_eq!(keys(&v), ["a=w2", "b=w3"]);
    assert_eq!(v["claims"][1]["ended"]["how"], "expired");
    // Read from the store's first event: nothing is out of sight.
    assert_eq!(v["complete"], true, "{v}");
    assert_eq!(keys(&held(45)), ["a=w2"]);
}
