//! Expiry: an ended lease frees the key and is recorded once, whoever
//! watched or nobody did; a release is never an expiry.

use super::*;

#[test]
fn an_expired_lease_frees_the_key_and_three_observers_record_one_claim_expired() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/exp");
    let tenure = s
        .acquire("k", "gone", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    // Started after the acquire: the first change naming "k" is its end.
    let mut feeds: Vec<Box<dyn Changes>> = (0..3)
        .map(|_| etcd.store("/exp").changes(None).expect("feed"))
        .collect();
    // Revoking is what expiry does to the key (it is deleted with its
    // lease), without waiting out the protocol's 60 s minimum TTL.
    let (rt, mut raw) = etcd.client();
    rt.block_on(raw.lease_revoke(tenure.lease.id))
        .expect("revoke");
    let observers: Vec<_> = feeds
        .drain(..)
        .map(|mut feed| {
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(10);
                while Instant::now() < deadline {
                    if let Ok(Some(Change::Claim { key })) = feed.next(Duration::from_millis(200)) {
                        if key == "k" {
                            return true;
                        }
                    }
                }
                false
            })
        })
        .collect();
    for o in observers {
        assert!(
            o.join().expect("observer"),
            "an observer never saw the key go"
        );
    }
    assert_eq!(
        s.status("k", &mut fresh())
            .expect("status")
            .outcome
            .state
            .as_str(),
        "free"
    );
    let expired: Vec<_> = s
        .events(50)
        .expect("events")
        .into_iter()
        .filter(|e| e.kind() == "claim_expired")
        .collect();
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0].key(), Some("k"));
    assert_eq!(expired[0].holder(), Some("gone"));
}

#[test]
fn a_released_claim_is_never_recorded_as_expired() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/rel");
    let mut feed = etcd.store("/rel").changes(None).expect("feed");
    s.acquire("k", "h", &ttl(60)).expect("acquire");
    s.release("k", "h", None).expect("release");
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let _ = feed.next(Duration::from_millis(100));
    }
    assert_eq!(
        etcd_common::kinds(&s),
        vec!["claim_acquired", "claim_released"]
    );
}

/// The `claim_expired` events in the last 50, as (key, revision).
fn expiries(s: &EtcdStore) -> Vec<(String, i64)> {
    s.events(50)
        .expect("events")
        .into_iter()
        .filter(|e| e.kind() == "claim_expired")
        .map(|e| {
            let rev = e
                .data()
                .and_then(|d| d.get("revision"))
                .and_then(|r| r.as_i64())
                .unwrap_or(0);
            (e.key().unwrap_or_default().to_string(), rev)
        })
        .collect()
}

/// Take `key` for `holder` on a 60 s lease, then revoke that lease behind
/// everyone's back: what an expiry nobody watched leaves. The revision.
fn expire_unwatched(etcd: &Etcd, s: &EtcdStore, key: &str, holder: &str) -> i64 {
    let tenure = s
        .acquire(key, holder, &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    let (rt, mut raw) = etcd.client();
    rt.block_on(raw.lease_revoke(tenure.lease.id))
        .expect("revoke");
    assert_eq!(
        s.status(key, &mut fresh())
            .expect("status")
            .outcome
            .state
            .as_str(),
        "free"
    );
    tenure.revision
}

#[test]
fn an_expiry_nobody_watched_is_recorded_once_by_the_next_acquire_before_its_own_tenure() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/unwatched");
    let first = expire_unwatched(&etcd, &s, "k", "gone");
    assert!(expiries(&s).is_empty(), "nobody has seen it yet");
    let got = etcd
        .store("/unwatched")
        .acquire("k", "next", &ttl(60))
        .expect("acquire");
    assert!(matches!(got.outcome, AcquireOutcome::Acquired { .. }));
    let second = got.tenure.expect("tenure").revision;
    assert!(second > first, "{second} after {first}");
    assert_eq!(expiries(&s), vec![("k".to_string(), first)]);
    assert_eq!(
        etcd_common::kinds(&s),
        vec!["claim_acquired", "claim_expired", "claim_acquired"],
        "the first tenure's end is recorded before the next one begins"
    );
    s.release("k", "next", None).expect("release");
    s.acquire("k", "third", &ttl(60)).expect("acquire");
    assert_eq!(expiries(&s).len(), 1, "a released tenure is no expiry");
}

#[test]
fn an_expiry_nobody_watched_is_recorded_once_by_the_next_full_list() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/unlisted");
    s.acquire("stays", "h", &ttl(60)).expect("acquire");
    let first = expire_unwatched(&etcd, &s, "k", "gone");
    let listing = list_of(&etcd.store("/unlisted")).expect("list");
    assert_eq!(listing.sweep.claims.len(), 1);
    assert_eq!(expiries(&s), vec![("k".to_string(), first)]);
    list_of(&etcd.store("/unlisted")).expect("list again");
    etcd.store("/unlisted")
        .acquire("k", "next", &ttl(60))
        .expect("acquire");
    assert_eq!(expiries(&s).len(), 1, "recorded once: {:?}", expiries(&s));
}

#[test]
fn a_holders_keep_alive_records_its_own_claims_expiry_when_no_one_else_watches() {
    let Some(etcd) = Etcd::single() else { return };
    let holder = etcd.store("/selfexp");
    let tenure = holder
        .acquire("k", "alone", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    let kept = holder.keep_alive("k", &tenure).expect("keep-alive");
    let (rt, mut raw) = etcd.client();
    rt.block_on(raw.lease_revoke(tenure.lease.id))
        .expect("revoke");
    let deadline = Instant::now() + Duration::from_secs(10);
    while kept.lost().is_none() {
        assert!(Instant::now() < deadline, "the keep-alive never noticed");
        std::thread::sleep(Duration::from_millis(20));
    }
    // As `run` does once its command has stopped: the store's drop waits
    // for what the keep-alive set going.
    drop(kept);
    drop(holder);
    let s = etcd.store("/selfexp");
    assert_eq!(expiries(&s), vec![("k".to_string(), tenure.revision)]);
}
