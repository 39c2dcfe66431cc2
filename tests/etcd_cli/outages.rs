//! An etcd stopped, killed or restarted: commands fail within `--timeout`
//! naming the endpoints, then serve again with the claim intact.

use super::*;

#[test]
fn a_stopped_or_killed_etcd_makes_cli_commands_fail_within_the_timeout_naming_the_endpoints() {
    let Some(mut etcd) = Etcd::single() else {
        return;
    };
    let url = etcd.url("/down");
    let endpoint = etcd.endpoints()[0].clone();
    let home = tempfile::tempdir().expect("tempdir");
    let ok = run(over(home.path(), &url), &["status", "k"]);
    assert_eq!(code(&ok), 0, "{ok:?}");
    etcd.members[0].pause();
    fail_within_the_timeout(home.path(), &url, &endpoint, "stopped");
    etcd.members[0].signal(libc::SIGCONT);
    etcd.members[0].kill();
    fail_within_the_timeout(home.path(), &url, &endpoint, "killed");
}

/// `list`, `acquire` and `status` with `--timeout 1s` against a cluster
/// that does not answer: each exits 1 within 3 s, naming `endpoint`.
fn fail_within_the_timeout(home: &Path, url: &str, endpoint: &str, what: &str) {
    for args in [
        &["--timeout", "1s", "status", "k"][..],
        &["--timeout", "1s", "list"],
        &[
            "--timeout",
            "1s",
            "acquire",
            "k",
            "--holder",
            "h",
            "--ttl",
            "2m",
        ],
    ] {
        let t0 = Instant::now();
        let o = run(over(home, url), args);
        let took = t0.elapsed();
        assert_eq!(code(&o), 1, "{what} {args:?}: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(endpoint),
            "{what} {args:?}: names the endpoints: {err}"
        );
        assert!(
            took < Duration::from_millis(3000),
            "{what} {args:?}: took {took:?} with --timeout 1s"
        );
    }
}

#[test]
fn a_killed_and_restarted_etcd_fails_commands_meanwhile_then_serves_them_with_the_claim_intact() {
    let Some(mut etcd) = Etcd::single() else {
        return;
    };
    let url = etcd.url("/restart");
    let endpoint = etcd.endpoints()[0].clone();
    let home = tempfile::tempdir().expect("tempdir");
    let taken = run(
        over(home.path(), &url),
        &["--json", "acquire", "k", "--holder", "a", "--ttl", "2m"],
    );
    assert_eq!(code(&taken), 0, "{taken:?}");
    let revision = json_of(&taken)["record"]["revision"].clone();
    assert!(revision.as_i64().is_some_and(|r| r > 0), "{revision}");

    etcd.members[0].kill();
    fail_within_the_timeout(home.path(), &url, &endpoint, "killed");

    // Same ports, same data dir; no step of ours between it and the CLI.
    etcd.start_again(0);
    let status = run(over(home.path(), &url), &["--json", "status", "k"]);
    assert_eq!(code(&status), 0, "{status:?}");
    let s = json_of(&status);
    assert_eq!(s["state"], "live", "the claim survived the restart: {s}");
    assert_eq!(s["record"]["holder"], "a", "{s}");
    assert_eq!(s["record"]["revision"], revision, "same tenure: {s}");
    let left = s["record"]["lease"]["remaining_s"].as_i64().unwrap_or(0);
    assert!(left > 0 && left <= 120, "its lease still runs: {s}");

    let list = run(over(home.path(), &url), &["--json", "list"]);
    assert_eq!(code(&list), 0, "{list:?}");
    let l = json_of(&list);
    assert_eq!(l["claims"][0]["key"], "k", "{l}");
    assert_eq!(l["claims"][0]["record"]["revision"], revision, "{l}");

    let held = run(
        over(home.path(), &url),
        &["--json", "acquire", "k", "--holder", "b", "--ttl", "2m"],
    );
    assert_eq!(code(&held), 3, "still a's: {held:?}");
    let other = run(
        over(home.path(), &url),
        &["--json", "acquire", "k2", "--holder", "b", "--ttl", "2m"],
    );
    assert_eq!(code(&other), 0, "{other:?}");
    let later = json_of(&other)["record"]["revision"].as_i64().unwrap_or(0);
    assert!(
        later > revision.as_i64().unwrap_or(i64::MAX),
        "revisions go on from where they were: {later} after {revision}"
    );
}
