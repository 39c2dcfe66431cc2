//! A member's listing: in key order, every state counted, a head that is
//! the first keys, what cannot be read held, never freed.

use super::{take, Target};
use crate::under_test::StoreUnderTest;
use claimtop::claims::{hazard, ClaimState};
use claimtop::store::backend::{head_now, list_now, status_now};

pub fn list_is_sorted_by_key_and_counts_every_state(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    for k in ["b", "a", "c"] {
        take(b, k, "alice");
    }
    u.plant("d", b"{{{ not a claim");
    let l = list_now(b).expect("list");
    let keys: Vec<&str> = l.sweep.claims.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["a", "b", "c", "d"]);
    assert_eq!((l.sweep.counts.live, l.sweep.counts.corrupted), (3, 1));
    assert_eq!(l.sweep.counts.total(), 4);
    let whole = t.store.list().expect("list");
    assert_eq!(whole.counts().live, 3, "the store adds up its members");
}

pub fn a_head_is_the_first_keys_in_order(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    for k in ["e", "b", "d", "a", "c"] {
        take(b, k, "alice");
    }
    let head = head_now(b, 3).expect("head").expect("more than 3");
    let keys: Vec<&str> = head.sweep.claims.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["a", "b", "c"]);
    assert!(!head.end.complete);
    assert!(
        head_now(b, 10).expect("head").is_none(),
        "no bigger: no head"
    );
}

pub fn a_corrupted_value_is_corrupted_and_a_hazard_with_its_location(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    u.plant("k", b"{{{ not a claim");
    let s = status_now(b, "k").expect("status").outcome;
    assert_eq!(s.state, ClaimState::Corrupted);
    assert!(s.error.is_some());
    let l = list_now(b).expect("list");
    let at = u.place_of("k");
    assert!(
        l.sweep
            .hazards
            .iter()
            .any(|h| h.kind == hazard::CORRUPTED_CLAIM && h.path().to_string_lossy() == at),
        "{:?} at {at}",
        l.sweep.hazards
    );
}

/// Flow nesting past what a reader will parse: maybe a live claim, so held.
pub fn too_costly_record(key: &str) -> Vec<u8> {
    format!(
        "schema_version: 1\nkey: {key}\nholder: h\nacquired_at: 1\npid: 1\nhost: x\nmetadata: {}{}\n",
        "[".repeat(200),
        "]".repeat(200)
    )
    .into_bytes()
}

pub fn an_unreadable_value_is_held_not_free(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    u.plant("k", &too_costly_record("k"));
    let s = status_now(b, "k").expect("status").outcome;
    assert_eq!(s.state, ClaimState::Unreadable, "{}", s.why);
    assert!(s.state.may_be_held());
    let l = list_now(b).expect("list");
    assert_eq!(l.sweep.counts.unreadable, 1);
    // Refused, as held or as an error: never taken over.
    let peer = u.peer();
    let got =
        peer.backend(u.target())
            .expect("target")
            .acquire("k", "bob", &super::ttl(super::TEN_MIN));
    assert!(
        !matches!(
            got.as_ref().map(|f| &f.outcome),
            Ok(claimtop::claims::AcquireOutcome::Acquired { .. })
        ),
        "taken over an unreadable claim: {got:?}"
    );
    let still = status_now(b, "k").expect("status").outcome;
    assert_eq!(still.state, ClaimState::Unreadable);
}
