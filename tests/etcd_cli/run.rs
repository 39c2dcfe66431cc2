//! `run` over etcd: the key held while the command runs, through a restart,
//! lost to a force-release, kept until the whole group ends, freed by a
//! killed holder's lease.

use super::*;

#[test]
fn run_over_etcd_holds_the_key_while_cmd_runs_and_releases_only_its_own_tenure() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/run");
    let home = tempfile::tempdir().expect("tempdir");
    let o = run(
        over(home.path(), &url),
        &[
            "--json", "run", "k", "--holder", "r", "--ttl", "1m", "--", "sh", "-c", "exit 7",
        ],
    );
    assert_eq!(code(&o), 7, "CMD's status is run's: {o:?}");
    let v = json_of(&o);
    assert_eq!(v["outcome"], "exited", "{v}");
    assert_eq!(v["release"], "released", "{v}");
    let s = json_of(&run(over(home.path(), &url), &["--json", "status", "k"]));
    assert_eq!(s["state"], "free", "{s}");
    let marker = home.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let no_ttl = run(
        over(home.path(), &url),
        &["run", "k", "--holder", "r", "--", "sh", "-c", &touch],
    );
    assert_eq!(code(&no_ttl), 2, "a lease needs a TTL: {no_ttl:?}");
    assert!(
        !marker.exists(),
        "CMD must not start when the claim cannot be taken"
    );
}

#[test]
fn run_over_etcd_holds_its_claim_through_a_kill_and_restart_within_the_lease() {
    let Some(mut etcd) = Etcd::single() else {
        return;
    };
    let url = etcd.url("/runrestart");
    let home = tempfile::tempdir().expect("tempdir");
    let marker = home.path().join("started");
    let script = format!("touch {} && sleep 6", marker.display());
    let holder = over(home.path(), &url)
        .args([
            "--json",
            "--timeout",
            "2s",
            "run",
            "k",
            "--holder",
            "r",
            "--ttl",
            "1m",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn run");
    let give_up = Instant::now() + Duration::from_secs(10);
    while !marker.exists() {
        assert!(Instant::now() < give_up, "CMD never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let taken = await_status(home.path(), &url, "k", Duration::from_secs(5), |s| {
        s["state"] == "live"
    });
    etcd.members[0].kill();
    std::thread::sleep(Duration::from_secs(1));
    etcd.start_again(0);
    let o = holder.wait_with_output().expect("run ends");
    assert_eq!(code(&o), 0, "the claim was never lost: {o:?}");
    let v = json_of(&o);
    assert_eq!(v["outcome"], "exited", "{v}");
    assert_eq!(v["release"], "released", "{v}");
    assert_eq!(
        v["record"]["revision"], taken["record"]["revision"],
        "one tenure throughout: {v}"
    );
    let s = json_of(&run(over(home.path(), &url), &["--json", "status", "k"]));
    assert_eq!(s["state"], "free", "{s}");
}

#[test]
fn run_over_etcd_stops_cmd_and_exits_4_when_its_claim_is_force_released() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/runlost");
    let home = tempfile::tempdir().expect("tempdir");
    let holder = over(home.path(), &url)
        .args([
            "--json", "run", "k", "--holder", "r", "--ttl", "1m", "--", "sleep", "60",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn run");
    let s = await_status(home.path(), &url, "k", Duration::from_secs(10), |s| {
        s["state"] == "live"
    });
    assert!(s["record"]["revision"].is_i64(), "{s}");
    let t0 = Instant::now();
    let f = run(
        over(home.path(), &url),
        &["force-release", "k", "--allow-live", "--operator", "op"],
    );
    assert_eq!(code(&f), 0, "{f:?}");
    let o = holder.wait_with_output().expect("run ends");
    assert_eq!(code(&o), 4, "{o:?}");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "noticed after {:?}",
        t0.elapsed()
    );
    assert_eq!(json_of(&o)["outcome"], "lost");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("lost the claim on k"),
        "{o:?}"
    );
}

/// As on a file store: a signal to `run` ends its command's leader at
/// once, and the lease is kept until the member still cleaning up is gone.
#[test]
fn a_signal_to_run_over_etcd_keeps_the_key_until_the_last_process_of_the_group_has_ended() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/runterm");
    let home = tempfile::tempdir().expect("tempdir");
    let (log, ready) = (home.path().join("stamps"), home.path().join("ready"));
    let script = format!("{}; exec sleep 30", slow_member(&log, &ready, 40));
    let mut holder = over(home.path(), &url)
        .args([
            "run", "k", "--holder", "r", "--ttl", "1m", "--", "sh", "-c", &script,
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(home.path().join("err")).expect("stderr file"))
        .spawn()
        .expect("spawn run");
    let give_up = Instant::now() + Duration::from_secs(10);
    while !ready.exists() || stamps(&log).is_empty() {
        assert!(Instant::now() < give_up, "CMD never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _member = Grandchild::of(&ready, &log).expect("the member's pid");
    await_status(home.path(), &url, "k", Duration::from_secs(10), |s| {
        s["state"] == "live"
    });
    // SAFETY: kill(2) on a child this test started and has not reaped.
    unsafe { libc::kill(holder.id() as i32, libc::SIGTERM) };
    let sent = wall_ns();
    // Each reading stamped when it was complete.
    let mut seen = Vec::new();
    let status = loop {
        let s = json_of(&run(over(home.path(), &url), &["--json", "status", "k"]));
        seen.push((wall_ns(), s["state"].as_str().unwrap_or("?").to_string()));
        if let Some(st) = holder.try_wait().expect("try_wait") {
            break st;
        }
        assert!(wall_ns() - sent < 30_000_000_000, "run never ended");
    };
    let last = *until_quiet(&log, Duration::from_millis(500), Duration::from_secs(10))
        .last()
        .expect("stamps");
    eprintln!(
        "the member wrote until {} ms after the signal; {} readings before that",
        (last - sent) / 1_000_000,
        seen.iter().filter(|(t, _)| *t < last).count()
    );
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert!(
        last > sent + 300_000_000,
        "the member stopped with its leader"
    );
    let early: Vec<_> = seen.iter().filter(|(t, _)| *t < last).collect();
    assert!(!early.is_empty(), "no reading while the member wrote");
    assert!(
        early.iter().all(|(_, st)| st == "live"),
        "the key read free while the group still ran: {early:?}"
    );
    let s = json_of(&run(over(home.path(), &url), &["--json", "status", "k"]));
    assert_eq!(s["state"], "free", "{s}");
}

#[test]
fn a_killed_run_holder_frees_the_key_within_its_lease_and_three_observers_record_one_expiry() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/kill9");
    let home = tempfile::tempdir().expect("tempdir");
    // The store's minimum TTL: the shortest lease a claim can have.
    let ttl = Duration::from_millis(claimtop::claims::MIN_TTL_MS as u64);
    let observers: Vec<_> = (0..3)
        .map(|_| {
            over(home.path(), &url)
                .args(["--json", "events", "--follow", "--type", "claim_expired"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn an observer")
        })
        .collect();
    let mut holder = over(home.path(), &url)
        .args([
            "run", "k", "--holder", "doomed", "--ttl", "1m", "--", "sleep", "600",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn run");
    await_status(home.path(), &url, "k", Duration::from_secs(10), |s| {
        s["state"] == "live"
    });
    // SAFETY: kill(2) on a child this test started and has not reaped.
    unsafe { libc::kill(holder.id() as i32, libc::SIGKILL) };
    let killed = Instant::now();
    let _ = holder.wait();
    await_status(home.path(), &url, "k", ttl + Duration::from_secs(2), |s| {
        s["state"] == "free"
    });
    let took = killed.elapsed();
    assert!(
        took <= ttl + Duration::from_secs(1),
        "free after {took:?}, lease {ttl:?}"
    );
    // The observers have had time to see the deletion and race to record it.
    std::thread::sleep(Duration::from_secs(2));
    let ev = run(
        over(home.path(), &url),
        &["--json", "events", "--type", "claim_expired"],
    );
    let n = String::from_utf8_lossy(&ev.stdout).lines().count();
    for mut o in observers {
        let _ = o.kill();
        let _ = o.wait();
    }
    assert_eq!(n, 1, "one claim_expired per expiry: {ev:?}");
}
