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

/// `list --json` as it streams, and as the whole listing wrote it, a
/// moment apart (see [`digits_as_one`]).
fn both_documents(store: &claimtop::store::Store) -> (String, String) {
    let mut streamed = Vec::new();
    store
        .write_list_json(&mut streamed, &Default::default())
        .expect("streamed");
    let mut whole = Vec::new();
    let listing = store.list().expect("list");
    listing.write_json(store, &mut whole).expect("whole");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8");
    (digits_as_one(&text(streamed)), digits_as_one(&text(whole)))
}

/// Every run of digits as one `0`: two listings a moment apart differ in
/// the time a claim has left ("9m59s", "10m00s"), and in nothing else.
fn digits_as_one(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_digits = false;
    for c in text.chars() {
        match (c.is_ascii_digit(), in_digits) {
            (true, true) => {}
            (true, false) => out.push('0'),
            (false, _) => out.push(c),
        }
        in_digits = c.is_ascii_digit();
    }
    out
}

pub fn list_json_streamed_is_the_document_the_whole_listing_writes(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    // Keys whose encodings sort otherwise than they do (` ` and `!` are
    // escaped, `-` is not), a corrupted value (a hazard), and nothing.
    let (empty_streamed, empty_whole) = both_documents(&t.store);
    assert_eq!(empty_streamed, empty_whole, "an empty store");
    for k in ["b", "a b", "a!", "a-b", "a", "c~"] {
        take(b, k, "alice");
    }
    u.plant("d", b"{{{ not a claim");
    let (streamed, whole) = both_documents(&t.store);
    assert_eq!(streamed, whole);
    let doc: serde_json::Value = serde_json::from_str(&streamed).expect("one JSON document");
    assert!(
        doc["hazards"].as_array().is_some_and(|h| !h.is_empty()),
        "{doc}"
    );
}
