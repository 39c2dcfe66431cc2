//! Every verb on one key: its library outcome, and where a CLI reaches the
//! store, its exit status and JSON.

use super::{holder_of, take, ttl, Target, TEN_MIN};
use crate::under_test::{json_of, lacks, Cap, StoreUnderTest};
use claimtop::claims::{
    AcquireKind, AcquireOutcome, ClaimError, ClaimState, ForceOpts, ForceOutcome, ReleaseOutcome,
    RenewOutcome,
};
use claimtop::store::backend::{list_now, status_now};
use claimtop::store::StoreError;

pub fn acquire_takes_a_free_key_and_exits_0(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    let got = take(b, "k1", "alice");
    assert!(matches!(
        got.outcome,
        AcquireOutcome::Acquired {
            kind: AcquireKind::Fresh,
            ..
        }
    ));
    let s = status_now(b, "k1").expect("status").outcome;
    assert_eq!(s.state, ClaimState::Live);
    assert_eq!(holder_of(b, "k1").as_deref(), Some("alice"));
    if let Some((code, out)) =
        u.cli_one(&["acquire", "k2", "--holder", "bob", "--ttl", "10m", "--json"])
    {
        let v = json_of(&out);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["outcome"], "acquired");
        assert_eq!(v["record"]["holder"], "bob");
        assert_eq!(holder_of(b, "k2").as_deref(), Some("bob"));
    }
}

pub fn acquire_of_a_held_key_exits_3_naming_the_holder(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "k", "alice");
    let peer = u.peer();
    let other = peer.backend(u.target()).expect("target");
    let got = other.acquire("k", "bob", &ttl(TEN_MIN)).expect("acquire");
    match got.outcome {
        AcquireOutcome::HeldByOther { holder, .. } => assert_eq!(holder, "alice"),
        other => panic!("bob took alice's claim: {other:?}"),
    }
    if let Some((code, out)) = u.cli_one(&[
        "acquire", "k", "--holder", "carol", "--ttl", "10m", "--json",
    ]) {
        let v = json_of(&out);
        assert_eq!(
            (code, v["outcome"].as_str()),
            (3, Some("held_by_other")),
            "{v}"
        );
        assert_eq!(v["holder"], "alice");
    }
    assert_eq!(holder_of(b, "k").as_deref(), Some("alice"));
}

pub fn reacquire_by_the_holder_is_idempotent(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "k", "alice");
    let again = b
        .acquire("k", "alice", &ttl(TEN_MIN))
        .expect("acquire again");
    assert!(
        matches!(
            again.outcome,
            AcquireOutcome::Acquired {
                kind: AcquireKind::Reacquired,
                ..
            }
        ),
        "{:?}",
        again.outcome
    );
    let listed = list_now(b).expect("list");
    let ks: Vec<&str> = listed.sweep.claims.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(ks, ["k"], "one claim, not two");
}

pub fn release_by_another_holder_is_not_held_and_writes_nothing(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "k", "alice");
    let before = status_now(b, "k").expect("status").outcome;
    let got = b.release("k", "bob", None).expect("release");
    assert_eq!(
        got.outcome,
        ReleaseOutcome::NotHeld {
            holder: "alice".into()
        }
    );
    if let Some((code, out)) = u.cli_one(&["release", "k", "--holder", "mallory", "--json"]) {
        let v = json_of(&out);
        assert_eq!((code, v["outcome"].as_str()), (0, Some("not_held")), "{v}");
    }
    let after = status_now(b, "k").expect("status").outcome;
    assert_eq!(after.record, before.record, "the claim is as it was");
}

pub fn release_of_an_absent_key_exits_0(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    let got = b.release("nobody-here", "alice", None).expect("release");
    assert_eq!(got.outcome, ReleaseOutcome::Absent);
    if let Some((code, out)) = u.cli_one(&["release", "nobody-here", "--holder", "a", "--json"]) {
        let v = json_of(&out);
        assert_eq!((code, v["outcome"].as_str()), (0, Some("absent")), "{v}");
    }
}

pub fn renew_extends_only_the_holders_claim(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "k", "alice");
    let was = status_now(b, "k").expect("status").outcome;
    let was_until = was.record.and_then(|r| r.expires_at).expect("a TTL");
    let bob = b.renew("k", "bob", 2 * TEN_MIN, None).expect("renew");
    assert!(
        matches!(bob.outcome, RenewOutcome::NotRenewed(_)),
        "{:?}",
        bob.outcome
    );
    let alice = b.renew("k", "alice", 2 * TEN_MIN, None).expect("renew");
    match alice.outcome {
        RenewOutcome::Renewed { record, .. } => {
            assert!(record.expires_at.is_some_and(|e| e > was_until));
        }
        other => panic!("the holder's renewal: {other:?}"),
    }
    if let Some((code, out)) =
        u.cli_one(&["renew", "k", "--holder", "bob", "--ttl", "30m", "--json"])
    {
        let v = json_of(&out);
        assert_eq!((code, v["renewed"].as_bool()), (3, Some(false)), "{v}");
    }
}

pub fn force_release_refuses_a_live_claim_without_allow_live(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "k", "alice");
    let plain = ForceOpts {
        operator: Some("ops:test".into()),
        ..ForceOpts::default()
    };
    let got = b.force_release("k", &plain).expect("force-release");
    assert!(
        matches!(got.outcome, ForceOutcome::Refused(_)),
        "{:?}",
        got.outcome
    );
    if let Some((code, out)) = u.cli_one(&["force-release", "k", "--json"]) {
        let v = json_of(&out);
        assert_eq!((code, v["outcome"].as_str()), (3, Some("refused")), "{v}");
    }
    assert_eq!(holder_of(b, "k").as_deref(), Some("alice"), "still held");
    let live = ForceOpts {
        allow_live: true,
        ..plain
    };
    let got = b.force_release("k", &live).expect("force-release");
    assert!(
        matches!(got.outcome, ForceOutcome::Archived { .. }),
        "{:?}",
        got.outcome
    );
    assert_eq!(holder_of(b, "k"), None);
}

pub fn force_release_refuses_when_the_expected_holder_changed(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "k", "alice");
    let opts = ForceOpts {
        expect_holder: Some("bob".into()),
        allow_live: true,
        operator: Some("ops:test".into()),
        ..ForceOpts::default()
    };
    let got = b.force_release("k", &opts).expect("force-release");
    assert!(
        matches!(got.outcome, ForceOutcome::Refused(_)),
        "{:?}",
        got.outcome
    );
    assert_eq!(holder_of(b, "k").as_deref(), Some("alice"));
}

pub fn a_fenced_release_never_ends_a_newer_tenure(u: &dyn StoreUnderTest) {
    if lacks(u, Cap::Fences, "a_fenced_release_never_ends_a_newer_tenure") {
        return;
    }
    let t = Target::of(u);
    let b = t.backend(u);
    let first = take(b, "k", "alice")
        .tenure
        .expect("a fenced store's tenure");
    // The first tenure ends without its holder (its lease ran out), and
    // the same holder takes the key again: a newer tenure.
    u.end_holder("k");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while holder_of(b, "k").is_some() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second = take(b, "k", "alice").tenure.expect("a tenure");
    assert!(second.fence() > first.fence(), "fences grow");
    let stale = b
        .release("k", "alice", Some(first.fence()))
        .expect("release");
    assert!(
        !matches!(stale.outcome, ReleaseOutcome::Released { .. }),
        "the old tenure ended the new one: {:?}",
        stale.outcome
    );
    let now = status_now(b, "k").expect("status");
    assert_eq!(
        now.outcome.record.map(|r| r.holder).as_deref(),
        Some("alice")
    );
    assert_eq!(now.tenure.map(|t| t.fence()), Some(second.fence()));
    let own = b
        .release("k", "alice", Some(second.fence()))
        .expect("release");
    assert!(
        matches!(own.outcome, ReleaseOutcome::Released { .. }),
        "{:?}",
        own.outcome
    );
}

pub fn a_record_the_reader_would_refuse_is_never_written(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    let short = b.acquire("k", "alice", &ttl(10_000));
    assert!(
        matches!(short, Err(StoreError::Claim(ClaimError::TtlOutOfRange(_)))),
        "{short:?}"
    );
    let long_key = "k".repeat(300);
    assert!(b.acquire(&long_key, "alice", &ttl(TEN_MIN)).is_err());
    let empty = b.acquire("k", "", &ttl(TEN_MIN));
    assert!(empty.is_err(), "{empty:?}");
    assert!(
        list_now(b).expect("list").sweep.claims.is_empty(),
        "nothing written"
    );
}
