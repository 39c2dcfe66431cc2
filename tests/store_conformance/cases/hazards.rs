//! What a claim is by itself that it should not be, and that `list` and
//! `doctor` count alike.

use super::Target;
use crate::under_test::{record_of, StoreUnderTest};
use claimtop::claims::hazard;
use claimtop::store::backend::list_now;

pub fn a_record_naming_another_key_is_a_key_mismatch_at_its_place(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    let rec = record_of("other", "alice", Some(super::TEN_MIN));
    u.plant("k", rec.to_yaml().expect("yaml").as_bytes());
    let l = list_now(b).expect("list");
    let at = u.place_of("k");
    let mismatches: Vec<_> = l
        .sweep
        .hazards
        .iter()
        .filter(|h| h.kind == hazard::KEY_MISMATCH)
        .collect();
    assert_eq!(mismatches.len(), 1, "{:?}", l.sweep.hazards);
    assert_eq!(mismatches[0].path().to_string_lossy(), at);
    assert!(
        mismatches[0].detail.contains("other"),
        "{}",
        mismatches[0].detail
    );
}

pub fn list_and_doctor_count_a_corrupted_claim_once_alike(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    u.plant("k", b"{{{ not a claim");
    let count = |l: &claimtop::store::Listing| {
        l.members
            .iter()
            .flat_map(|m| &m.sweep.hazards)
            .filter(|h| h.kind == hazard::CORRUPTED_CLAIM)
            .count()
    };
    let list = t.store.list().expect("list");
    let doctor = t.store.doctor().expect("doctor");
    assert_eq!((count(&list), count(&doctor)), (1, 1));
    assert_eq!(list.counts(), doctor.counts());
}
