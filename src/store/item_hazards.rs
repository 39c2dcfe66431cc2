//! The hazards a claim is by itself on a store whose keys are not files
//! (etcd): a value that does not parse, and a record that names another key.
//! A lockfile's own name rules and machine checks do not apply there — the
//! key is the name, and the lease is the liveness on every machine alike.

use crate::claims::{Hazard, HazardKind, Status};

/// Append `s`'s hazards to `out`.
pub fn item_hazards(s: &Status, out: &mut Vec<Hazard>) {
    if let Some(reason) = &s.error {
        out.push(Hazard {
            kind: HazardKind::CorruptedClaim,
            path: s.file.clone(),
            detail: reason.clone(),
        });
    }
    if let Some(rec) = s.record.as_ref().filter(|r| r.key != s.key) {
        out.push(Hazard {
            kind: HazardKind::KeyMismatch,
            path: s.file.clone(),
            detail: format!("the record names key {:?}", rec.key),
        });
    }
}

/// How many hazards [`item_hazards`] reports for `s`, without building them.
pub fn item_hazard_count(s: &Status) -> usize {
    usize::from(s.error.is_some()) + usize::from(s.record.as_ref().is_some_and(|r| r.key != s.key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::ClaimState;

    #[test]
    fn a_store_claim_from_another_machine_is_no_hazard_but_an_unparsable_one_is() {
        let s = Status {
            key: "k".into(),
            file: "/fno/claims/k".into(),
            state: ClaimState::Corrupted,
            record: None,
            why: String::new(),
            error: Some("not YAML".into()),
            locality: None,
            head: Vec::new(),
        };
        let mut out = Vec::new();
        item_hazards(&s, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(item_hazard_count(&s), 1);
        assert_eq!(out[0].kind, HazardKind::CorruptedClaim);
    }
}
