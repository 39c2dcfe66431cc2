//! Release, force-release and renew over etcd: only their key deleted, only
//! a bare lease revoked, a holder's lease kept by a renew from elsewhere,
//! an expiry with no valid lease naming none.

use super::*;

/// A claim record as another implementation's session-style client writes
/// it for `key`: held by `holder` on another machine.
fn session_record(key: &str, holder: &str) -> String {
    let now = claimtop::claims::now_ms();
    claimtop::claims::ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: holder.into(),
        acquired_at: now,
        pid: 4242,
        host: "session-host".into(),
        expires_at: Some(now + 300_000),
        reason: None,
        harness: None,
        machine_id: Some("session-machine".into()),
        metadata: Default::default(),
    }
    .to_lockfile()
    .expect("a record")
}

/// The keys under `prefix` that exist now, and the seconds `lease` has
/// left (-1: gone).
fn keys_and_lease(etcd: &Etcd, prefix: &str, lease: i64) -> (Vec<String>, i64) {
    let (rt, mut c) = etcd.client();
    let opts = etcd_client::GetOptions::new()
        .with_prefix()
        .with_keys_only();
    let keys = rt
        .block_on(c.get(prefix, Some(opts)))
        .expect("list keys")
        .kvs()
        .iter()
        .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
        .collect();
    let ttl = rt
        .block_on(c.lease_time_to_live(lease, None))
        .expect("lease ttl")
        .ttl();
    (keys, ttl)
}

/// The `"type"` of every event over the store, oldest first.
fn event_types(home: &Path, url: &str) -> Vec<String> {
    events_json(home, url, &[])
        .iter()
        .filter_map(|e| e["type"].as_str().map(String::from))
        .collect()
}

/// Four claims and an application key on one lease, as a session-style
/// client keeps them: a release or force-release of one claim deletes that
/// key only, and the lease lives on while anything hangs on it. A lease
/// claimtop granted for a claim alone still goes with its claim. (Each
/// verb's lease work runs off its path and is awaited before the process
/// exits, so a command that has exited has done all it will.)
#[test]
fn release_and_force_release_over_etcd_delete_only_their_key_and_revoke_only_a_bare_lease() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/hz");
    let home = tempfile::tempdir().expect("tempdir");
    let (rt, mut c) = etcd.client();
    let lease = rt.block_on(c.lease_grant(300, None)).expect("grant").id();
    let on_lease = || Some(etcd_client::PutOptions::new().with_lease(lease));
    for k in ["s1", "s2", "s3", "s4"] {
        let put = c.put(
            format!("/hz/claims/{k}"),
            session_record(k, "h"),
            on_lease(),
        );
        rt.block_on(put).expect("put a claim");
    }
    rt.block_on(c.put("/hz/app/session-key", "app", on_lease()))
        .expect("put the application's key");
    let ok = |args: &[&str]| {
        let o = run(over(home.path(), &url), args);
        assert_eq!(code(&o), 0, "{args:?}: {o:?}");
    };
    let claims = |keys: &[String]| -> Vec<String> {
        keys.iter()
            .filter(|k| k.starts_with("/hz/claims/") || k.starts_with("/hz/app/"))
            .cloned()
            .collect()
    };
    ok(&["release", "s1", "--holder", "h"]);
    let (keys, ttl) = keys_and_lease(&etcd, "/hz/", lease);
    assert_eq!(
        claims(&keys),
        [
            "/hz/app/session-key",
            "/hz/claims/s2",
            "/hz/claims/s3",
            "/hz/claims/s4"
        ],
        "release s1 took only s1"
    );
    assert!(ttl > 0, "the session's lease lives on: {ttl}");
    ok(&["force-release", "s2", "--allow-live", "--operator", "ops"]);
    let (keys, ttl) = keys_and_lease(&etcd, "/hz/", lease);
    assert_eq!(
        claims(&keys),
        ["/hz/app/session-key", "/hz/claims/s3", "/hz/claims/s4"],
        "force-release s2 took only s2"
    );
    assert!(ttl > 0, "the session's lease lives on: {ttl}");
    ok(&["release", "s3", "--holder", "h"]);
    ok(&["release", "s4", "--holder", "h"]);
    let (keys, ttl) = keys_and_lease(&etcd, "/hz/", lease);
    assert_eq!(claims(&keys), ["/hz/app/session-key"]);
    assert!(ttl > 0, "the application's key still hangs on it: {ttl}");
    assert_eq!(
        event_types(home.path(), &url),
        [
            "claim_released",
            "claim_force_released",
            "claim_released",
            "claim_released"
        ]
    );

    // Claims claimtop took, each on a lease of its own: released or
    // force-released by another process, the lease goes too.
    for (key, end) in [
        ("own", &["release", "own", "--holder", "me"][..]),
        (
            "own2",
            &["force-release", "own2", "--allow-live", "--operator", "ops"][..],
        ),
    ] {
        let o = run(
            over(home.path(), &url),
            &["--json", "acquire", key, "--holder", "me", "--ttl", "1m"],
        );
        assert_eq!(code(&o), 0, "{o:?}");
        let own = json_of(&o)["record"]["lease"]["id"]
            .as_i64()
            .expect("lease");
        ok(end);
        let (_, ttl) = keys_and_lease(&etcd, "/hz/", own);
        assert_eq!(ttl, -1, "{key}: a lease with nothing left on it is revoked");
    }
}

/// `renew` from another process, of a claim `run` holds and keeps alive:
/// the claim stays on the lease `run` keeps (so `run` never hears of a
/// loss), the record takes the deadline asked for, and `run` goes on to
/// release its own tenure when CMD ends.
#[test]
fn a_renew_from_another_process_keeps_a_running_holders_lease_and_the_holder_runs_on() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/renewrun");
    let home = tempfile::tempdir().expect("tempdir");
    let (started, done) = (home.path().join("started"), home.path().join("done"));
    let script = format!(
        "touch {}; while [ ! -e {} ]; do sleep 0.1; done",
        started.display(),
        done.display()
    );
    let holder = over(home.path(), &url)
        .args([
            "--json", "run", "rk", "--holder", "h", "--ttl", "1m", "--", "sh", "-c", &script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn run");
    let give_up = Instant::now() + Duration::from_secs(10);
    while !started.exists() {
        assert!(Instant::now() < give_up, "CMD never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = json_of(&run(over(home.path(), &url), &["--json", "status", "rk"]));
    let lease = before["record"]["lease"]["id"].as_i64().expect("a lease");
    let o = run(
        over(home.path(), &url),
        &[
            "--json",
            "renew",
            "rk",
            "--holder",
            "h",
            "--ttl",
            "10m",
            "--operator",
            "ops",
        ],
    );
    assert_eq!(code(&o), 0, "{o:?}");
    assert_eq!(json_of(&o)["renewed"], true, "{o:?}");
    let after = json_of(&run(over(home.path(), &url), &["--json", "status", "rk"]));
    assert_eq!(
        after["record"]["lease"]["id"], lease,
        "the claim stays on the lease its holder keeps: {after}"
    );
    assert_eq!(after["record"]["revision"], before["record"]["revision"]);
    assert!(
        after["record"]["expires_at"].as_i64() > before["record"]["expires_at"].as_i64(),
        "the record says the deadline asked for: {after}"
    );
    // The renew refreshed the lease to its full TTL; its time left falling
    // and then rising again is `run`'s own keep-alive, whose round also
    // checks the key is still its tenure's: a round has passed since.
    let (rt, mut c) = etcd.client();
    let left = |c: &mut etcd_client::Client| {
        rt.block_on(c.lease_time_to_live(lease, None))
            .expect("ttl")
            .ttl()
    };
    let mut low = left(&mut c);
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let now = left(&mut c);
        assert!(now > 0, "the holder's lease ended");
        if now > low {
            break;
        }
        low = low.min(now);
        assert!(Instant::now() < give_up, "no keep-alive after the renew");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::write(&done, "").expect("let CMD end");
    let o = holder.wait_with_output().expect("run ends");
    assert_eq!(code(&o), 0, "run never lost its claim: {o:?}");
    let v = json_of(&o);
    assert_eq!(v["outcome"], "exited", "{v}");
    assert_eq!(v["release"], "released", "{v}");
    let s = json_of(&run(over(home.path(), &url), &["--json", "status", "rk"]));
    assert_eq!(s["state"], "free", "{s}");
    let (_, ttl) = keys_and_lease(&etcd, "/renewrun/", lease);
    assert_eq!(ttl, -1, "released by its holder, the lease is given up");

    // A claim nobody keeps alive moves to a lease of the TTL asked for,
    // and its old lease, bare, goes.
    let o = run(
        over(home.path(), &url),
        &["--json", "acquire", "rk", "--holder", "h", "--ttl", "1m"],
    );
    let first = json_of(&o)["record"]["lease"]["id"]
        .as_i64()
        .expect("lease");
    let o = run(
        over(home.path(), &url),
        &["renew", "rk", "--holder", "h", "--ttl", "10m"],
    );
    assert_eq!(code(&o), 0, "{o:?}");
    let s = json_of(&run(over(home.path(), &url), &["--json", "status", "rk"]));
    let moved = &s["record"]["lease"];
    assert!(moved["id"].is_i64() && moved["id"] != first, "{s}");
    assert_eq!(moved["ttl_s"], 600, "{s}");
    let (_, ttl) = keys_and_lease(&etcd, "/renewrun/", first);
    assert_eq!(ttl, -1, "the claim's old lease, bare, is revoked");
}

/// Open-tenure entries no acquire wrote (garbage, a negative or a
/// non-numeric lease, a claim without a lease) are recorded as expired by
/// the next full `list`, and their `claim_expired` names no lease at all:
/// never a made-up id such as `-000000000000001`.
#[test]
fn claim_expired_for_an_open_entry_with_no_valid_lease_names_no_lease() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/gopen");
    let home = tempfile::tempdir().expect("tempdir");
    let (rt, mut c) = etcd.client();
    let fields = |k: &str| serde_json::json!({"key": k, "holder": "x", "pid": 1, "host": "h"});
    for (k, v) in [
        ("g1", "not json".to_string()),
        (
            "g2",
            serde_json::json!({"lease": -1, "fields": fields("g2")}).to_string(),
        ),
        (
            "g3",
            serde_json::json!({"lease": "abc", "fields": fields("g3")}).to_string(),
        ),
        (
            "g4",
            serde_json::json!({"lease": 0, "fields": fields("g4")}).to_string(),
        ),
    ] {
        rt.block_on(c.put(format!("/gopen/open/{k}"), v, None))
            .expect("plant an open entry");
    }
    let o = run(over(home.path(), &url), &["list"]);
    assert_eq!(code(&o), 0, "{o:?}");
    let events = events_json(home.path(), &url, &[]);
    assert_eq!(events.len(), 4, "{events:?}");
    for e in &events {
        assert_eq!(e["type"], "claim_expired", "{e}");
        assert!(e["data"].get("lease").is_none(), "a lease made up: {e}");
    }
    let o = run(over(home.path(), &url), &["events"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(!text.contains("-0000"), "{text}");
}
