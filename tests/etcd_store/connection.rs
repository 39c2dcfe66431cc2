//! Reaching etcd: a stopped etcd or an unreachable cluster fails within the
//! timeout naming the endpoints; a role limited to the prefix; TLS.

use super::*;

#[test]
fn a_stopped_etcd_makes_a_verb_fail_within_the_timeout_naming_the_endpoints() {
    let Some(etcd) = Etcd::single() else { return };
    let opts = ConnOpts {
        timeout: Some(Duration::from_secs(1)),
        ..Default::default()
    };
    let s = etcd.store_with("/stop", &opts);
    s.status("warm", &mut fresh())
        .expect("status before the stop");
    etcd.members[0].pause();
    let t0 = Instant::now();
    let err = s.acquire("k", "h", &ttl(60)).expect_err("etcd is stopped");
    let took = t0.elapsed();
    etcd.members[0].signal(libc::SIGCONT);
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&etcd.endpoints()[0]), "{msg}");
    assert!(
        took < Duration::from_millis(2500),
        "took {took:?} with a 1 s timeout"
    );
    // And it recovers without a reconnect by hand.
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.status("k", &mut fresh()).is_err() {
        assert!(Instant::now() < deadline, "never recovered");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_unreachable_cluster_fails_within_the_timeout_at_connect() {
    // Nothing listens here: connect (or the first call) must give up in time.
    let Some(_bin) = etcd_common::etcd_binary() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let target = match claimtop::store::StoreUrl::parse(&format!("etcd://127.0.0.1:{port}")) {
        Ok(claimtop::store::StoreUrl::Etcd(t)) => t,
        other => panic!("{other:?}"),
    };
    let opts = ConnOpts {
        timeout: Some(Duration::from_millis(700)),
        ..Default::default()
    };
    let t0 = Instant::now();
    let err = match EtcdStore::connect(&target, &opts) {
        Err(e) => e,
        Ok(s) => s.status("k", &mut fresh()).expect_err("nothing listens"),
    };
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn a_role_limited_to_the_prefix_can_do_everything_and_a_wrong_password_fails_clearly() {
    let Some(etcd) = Etcd::single() else { return };
    let (rt, mut root) = etcd.client();
    rt.block_on(async {
        root.user_add("root", "rootpw", None).await?;
        root.user_grant_role("root", "root").await?;
        root.role_add("claims").await?;
        root.role_grant_permission(
            "claims",
            etcd_client::Permission::read_write("/team/").with_prefix(),
        )
        .await?;
        root.user_add("worker", "s3cret-pw", None).await?;
        root.user_grant_role("worker", "claims").await?;
        root.auth_enable().await
    })
    .expect("set up auth");
    let good = ConnOpts {
        user: Some("worker".into()),
        password: Some("s3cret-pw".into()),
        ..Default::default()
    };
    let s = etcd.store_with("/team", &good);
    let got = s.acquire("k", "h", &ttl(60)).expect("acquire under auth");
    assert!(matches!(got.outcome, AcquireOutcome::Acquired { .. }));
    assert_eq!(list_of(&s).expect("list").sweep.claims.len(), 1);
    assert_eq!(
        s.release("k", "h", None).expect("release").outcome.as_str(),
        "released"
    );
    assert_eq!(s.events(10).expect("events").len(), 2);

    let bad = ConnOpts {
        password: Some("not-the-password".into()),
        ..good.clone()
    };
    let err = match EtcdStore::connect(&etcd.target("/team"), &bad) {
        Err(e) => e,
        Ok(s) => s.status("k", &mut fresh()).expect_err("wrong password"),
    };
    let msg = err.to_string();
    assert!(msg.contains("authentication failed"), "{msg}");
    assert!(
        !msg.contains("not-the-password"),
        "the password leaked: {msg}"
    );
    assert!(
        !format!("{bad:?}").contains("not-the-password"),
        "Debug shows the password"
    );
    // Outside its prefix the role is refused, and says so.
    let elsewhere = etcd.store_with("/other", &good);
    let err = elsewhere
        .acquire("k", "h", &ttl(60))
        .expect_err("outside the prefix");
    assert!(err.to_string().contains("permission denied"), "{err}");
}

#[test]
fn an_etcds_store_speaks_tls_with_the_given_ca_and_refuses_to_go_without_one() {
    let Some(etcd) = Etcd::single_tls() else {
        return;
    };
    let s = etcd.store("/tls");
    let got = s.acquire("k", "h", &ttl(60)).expect("acquire over TLS");
    assert!(matches!(got.outcome, AcquireOutcome::Acquired { .. }));
    assert_eq!(
        s.release("k", "h", None).expect("release").outcome.as_str(),
        "released"
    );
    let err = match EtcdStore::connect(&etcd.target("/tls"), &ConnOpts::default()) {
        Err(e) => e,
        Ok(_) => panic!("etcds:// without --etcd-cacert connected"),
    };
    assert!(err.to_string().contains("--etcd-cacert"), "{err}");
}
