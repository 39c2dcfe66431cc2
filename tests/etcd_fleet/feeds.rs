//! A site's change feed and its published member's, over one watch of
//! the prefix: each names its own claims, a copy by its copy key
//! (`<host_id>/<root_id>/<key>`), and both hear of the hosts. Written
//! straight into etcd, as a publisher would: no python, no publisher.

use super::etcd_common::Etcd;
use claimtop::claims::AcquireOpts;
use claimtop::store::{Change, Changes, OpenCtx, Origin, Store, StoreName};
use std::time::{Duration, Instant};

/// Everything `feed` brings until `done` holds of it, or 10 s.
fn until(feed: &mut dyn Changes, done: impl Fn(&[Change]) -> bool) -> Vec<Change> {
    let (mut seen, deadline) = (Vec::new(), Instant::now() + Duration::from_secs(10));
    while !done(&seen) && Instant::now() < deadline {
        if let Ok(Some(c)) = feed.next(Duration::from_millis(100)) {
            seen.push(c);
        }
    }
    seen
}

fn claim(key: &str) -> Change {
    Change::Claim { key: key.into() }
}

#[test]
fn a_sites_feed_names_its_own_claims_and_its_published_members_names_each_copy_by_its_place() {
    let Some(etcd) = Etcd::single() else { return };
    let prefix = "/feeds";
    let name = StoreName::parse(&etcd.url(prefix)).expect("a store URL");
    let store = Store::open(&[name], &[], &OpenCtx::default()).expect("open");
    let member = |site: bool| {
        store
            .members()
            .iter()
            .find(|m| matches!(m.origin, Origin::Site { .. }) == site)
            .expect("a member")
            .backend()
    };
    let (site, copies) = (member(true), member(false));
    let mut site_feed = site.changes(None).expect("the site's feed");
    let mut copies_feed = copies.changes(None).expect("the copies' feed");

    let opts = AcquireOpts {
        ttl_ms: Some(60_000),
        ..Default::default()
    };
    site.acquire("own", "h", &opts).expect("acquire");
    let (rt, mut raw) = etcd.client();
    let host = format!("{prefix}/hosts/m1/");
    rt.block_on(raw.put(format!("{host}host"), "{}", None))
        .expect("a host record");
    rt.block_on(raw.put(format!("{host}r1/claims/k"), "{}", None))
        .expect("a published copy");

    let copy = claim("m1/r1/k");
    let got = until(&mut *copies_feed, |s| {
        s.contains(&copy) && s.contains(&Change::Members)
    });
    assert!(got.contains(&copy), "the copy unnamed: {got:?}");
    assert!(got.contains(&Change::Members), "the host unsaid: {got:?}");
    assert!(!got.contains(&claim("own")), "the site's claim: {got:?}");

    let got = until(&mut *site_feed, |s| {
        s.contains(&claim("own")) && s.contains(&Change::Members)
    });
    assert!(
        got.contains(&claim("own")),
        "its own claim unnamed: {got:?}"
    );
    assert!(got.contains(&Change::Members), "the host unsaid: {got:?}");
    assert!(
        !got.iter()
            .any(|c| matches!(c, Change::Claim { key } if key != "own")),
        "a copy named as the site's claim: {got:?}"
    );
}
