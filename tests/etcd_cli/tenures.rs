//! A tenure is its own: no run or wait continues a claim of its holder name
//! made by another process, and a lost claim's successor gets a higher
//! revision.

use super::*;

#[test]
fn run_and_acquire_wait_never_continue_a_claim_of_their_holder_name_made_by_another_process() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/adopt");
    let home = tempfile::tempdir().expect("tempdir");
    // Bound to this test process: alive, and not the process of anything below.
    let first = run(
        over(home.path(), &url),
        &["--json", "acquire", "k", "--holder", "w0", "--ttl", "1m"],
    );
    assert_eq!(code(&first), 0, "{first:?}");
    let revision = json_of(&first)["record"]["revision"].clone();
    let marker = home.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let o = run(
        over(home.path(), &url),
        &[
            "run", "k", "--holder", "w0", "--ttl", "1m", "--", "sh", "-c", &touch,
        ],
    );
    assert_eq!(code(&o), 3, "the claim is another process's: {o:?}");
    assert!(!marker.exists(), "CMD ran under another process's claim");
    let mut other = Command::new("sleep").arg("30").spawn().expect("sleep");
    let pid = other.id().to_string();
    let o = run(
        over(home.path(), &url),
        &[
            "--json",
            "acquire",
            "k",
            "--holder",
            "w0",
            "--ttl",
            "1m",
            "--pid",
            &pid,
            "--wait=1s",
        ],
    );
    assert_eq!(code(&o), 3, "a wait is for the key to be free: {o:?}");
    // The seed's idempotent re-acquire stays with the plain acquire.
    let o = run(
        over(home.path(), &url),
        &[
            "--json", "acquire", "k", "--holder", "w0", "--ttl", "1m", "--pid", &pid,
        ],
    );
    let _ = other.kill();
    let _ = other.wait();
    assert_eq!(code(&o), 0, "{o:?}");
    let v = json_of(&o);
    assert_eq!(v["kind"], "reacquired", "{v}");
    assert_eq!(v["record"]["revision"], revision, "{v}");
}

#[test]
fn after_a_run_is_told_its_claim_is_lost_the_next_run_gets_a_higher_revision_even_when_etcd_returns_with_the_lease(
) {
    let Some(mut etcd) = Etcd::single() else {
        return;
    };
    let url = etcd.url("/relost");
    let home = tempfile::tempdir().expect("tempdir");
    // CMD is run's own child, not a shell's: a grandchild left behind by a
    // stopped shell would keep run's output pipes open.
    let hold = |extra: &[&str], cmd: &[&str]| {
        let mut args = vec!["--json", "--timeout", "2s", "run", "k", "--holder", "w0"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--ttl", "1m", "--"]);
        args.extend_from_slice(cmd);
        over(home.path(), &url)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn run")
    };
    let mut first = hold(&[], &["sleep", "600"]);
    let taken = await_status(home.path(), &url, "k", Duration::from_secs(10), |s| {
        s["state"] == "live"
    });
    let r1 = taken["record"]["revision"].as_i64().expect("revision");
    // Down for longer than the lease's TTL: the holder cannot know the lease
    // is still there, so it gives the claim up.
    etcd.members[0].kill();
    exits_within(&mut first, Duration::from_secs(75));
    let o = first.wait_with_output().expect("run ends");
    assert_eq!(code(&o), 4, "{o:?}");
    // A restarted etcd restores its leases with their whole TTL to run.
    etcd.start_again(0);
    let s = json_of(&run(over(home.path(), &url), &["--json", "status", "k"]));
    assert_eq!(s["record"]["revision"].as_i64(), Some(r1), "{s}");
    // The holder's successor, under the same name.
    let second = hold(&["--wait"], &["true"]);
    let o = second.wait_with_output().expect("run ends");
    assert_eq!(code(&o), 0, "{o:?}");
    let r2 = json_of(&o)["record"]["revision"]
        .as_i64()
        .expect("revision");
    eprintln!("tenures: lost run at revision {r1}, its successor at {r2}");
    assert!(r2 > r1, "a new tenure, a higher revision: {r1} then {r2}");
    assert_eq!(
        expired_revisions(home.path(), &url),
        vec![r1],
        "the lost tenure's end is recorded once"
    );
}
