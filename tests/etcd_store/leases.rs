//! Leases: granted for the TTL rounded up, kept alive and moved on by each
//! renewal, a kept-alive claim force-released said lost.

use super::*;

#[test]
fn a_kept_alive_claim_that_is_force_released_says_it_is_lost() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/hold");
    let tenure = s
        .acquire("k", "runner", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    let held = s.keep_alive("k", &tenure).expect("keep alive");
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(held.lost(), None, "lost while nobody touched it");
    let opts = ForceOpts {
        allow_live: true,
        ..Default::default()
    };
    assert!(matches!(
        s.force_release("k", &opts).expect("force").outcome,
        ForceOutcome::Archived { .. }
    ));
    let deadline = Instant::now() + Duration::from_secs(8);
    while held.lost().is_none() {
        assert!(Instant::now() < deadline, "the loss went unnoticed");
        std::thread::sleep(Duration::from_millis(100));
    }
    let why = held.lost().unwrap_or_default();
    assert!(
        why.contains("taken away") || why.contains("revoked"),
        "{why}"
    );
}

#[test]
fn a_kept_alive_lease_is_safe_until_no_later_than_etcd_says_and_each_renewal_moves_it_on() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/safe");
    let tenure = s
        .acquire("k", "runner", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    let held = s.keep_alive("k", &tenure).expect("keep alive");
    let first = held.safe_until().expect("known from the start");
    let (rt, mut raw) = etcd.client();
    let etcd_left = |raw: &mut etcd_client::Client| {
        let asked = Instant::now();
        let left = rt
            .block_on(raw.lease_time_to_live(tenure.lease.id, None))
            .expect("time to live")
            .ttl();
        // etcd counts whole seconds: its end is at most a second later.
        asked + Duration::from_secs(left.max(0) as u64 + 1)
    };
    assert!(first <= etcd_left(&mut raw), "safe past etcd's own end");
    assert!(
        first > Instant::now() + Duration::from_secs(55),
        "{first:?}"
    );
    // Renewed every 2 s: the bound moves on with each answer.
    std::thread::sleep(Duration::from_millis(4500));
    let later = held.safe_until().expect("still known");
    assert!(later >= first + Duration::from_secs(2), "never moved on");
    assert!(later <= etcd_left(&mut raw), "safe past etcd's own end");
}

#[test]
fn a_claims_lease_is_granted_for_its_ttl_rounded_up_to_whole_seconds_never_less() {
    // etcd counts leases in whole seconds: rounding 60.5 s down would end
    // the lease, and free the key, before the record's own deadline.
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/granted");
    let opts = AcquireOpts {
        ttl_ms: Some(60_500),
        ..Default::default()
    };
    let tenure = s
        .acquire("k", "h", &opts)
        .expect("acquire")
        .tenure
        .expect("tenure");
    let (rt, mut raw) = etcd.client();
    let granted = rt
        .block_on(raw.lease_time_to_live(tenure.lease.id, None))
        .expect("time to live")
        .granted_ttl();
    assert_eq!(granted, 61);
}
