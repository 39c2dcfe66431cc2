//! The compare-the-revision verbs: a tenure that is over refused, a live
//! claim force-released only when allowed, the same holder's claim from
//! another process, a record over the read cap.

use super::*;

#[test]
fn release_renew_and_force_release_refuse_a_tenure_that_is_over() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/cas");
    let first = s
        .acquire("k", "alice", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    s.release("k", "alice", None).expect("release");
    let second = s
        .acquire("k", "alice", &ttl(60))
        .expect("acquire")
        .tenure
        .expect("tenure");
    assert!(second.revision > first.revision);

    let stale = s
        .release("k", "alice", Some(Fence::new(first.revision as u64)))
        .expect("release");
    assert!(
        matches!(stale.outcome, ReleaseOutcome::NotHeld { .. }),
        "{stale:?}"
    );
    let stale = s
        .renew_fenced("k", "alice", 120_000, first.revision)
        .expect("renew");
    assert_eq!(
        stale.outcome,
        RenewOutcome::NotRenewed(NoRenew::OtherHolder)
    );
    let guarded = ForceOpts {
        expect_holder: Some("bob".into()),
        allow_live: true,
        ..Default::default()
    };
    let refused = s.force_release("k", &guarded).expect("force").outcome;
    assert!(matches!(refused, ForceOutcome::Refused(_)), "{refused:?}");
    // The current tenure is untouched by all three.
    let now = s.status("k", &mut fresh()).expect("status");
    assert_eq!(now.tenure.map(|t| t.revision), Some(second.revision));

    let renewed = s
        .renew_fenced("k", "alice", 120_000, second.revision)
        .expect("renew");
    assert!(matches!(renewed.outcome, RenewOutcome::Renewed { .. }));
    assert_eq!(renewed.tenure.map(|t| t.revision), Some(second.revision));
    let done = s
        .release("k", "alice", Some(Fence::new(second.revision as u64)))
        .expect("release");
    assert_eq!(done.outcome.as_str(), "released");
}

#[test]
fn a_live_claim_is_force_released_only_when_allowed_and_then_archived() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/force");
    s.acquire("k", "alice", &ttl(60)).expect("acquire");
    let refused = s
        .force_release("k", &ForceOpts::default())
        .expect("force")
        .outcome;
    assert!(
        matches!(refused, ForceOutcome::Refused(ref why) if why.contains("live")),
        "{refused:?}"
    );
    let opts = ForceOpts {
        allow_live: true,
        operator: Some("ops".into()),
        ..Default::default()
    };
    let forced = s.force_release("k", &opts).expect("force");
    let ForceOutcome::Archived { archived_to, .. } = forced.outcome else {
        panic!("not archived");
    };
    assert!(archived_to
        .to_string_lossy()
        .starts_with("/force/expired/k."));
    // The tenure it ended, in whole seconds: taken for 60 s moments ago.
    let lease = forced.tenure.expect("the ended tenure").lease;
    assert_eq!(lease.ttl_s, 60, "{lease:?}");
    assert!((55..=60).contains(&lease.remaining_s), "{lease:?}");
    assert_eq!(
        s.status("k", &mut fresh())
            .expect("status")
            .outcome
            .state
            .as_str(),
        "free"
    );
    assert_eq!(
        etcd_common::kinds(&s),
        vec!["claim_acquired", "claim_force_released"]
    );
}

#[test]
fn a_claim_of_the_same_holder_made_by_another_process_is_continued_only_by_a_plain_acquire() {
    use claimtop::claims::{AcquireKind, Adopt};
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/adopt");
    let mine = AcquireOpts {
        pid: Some(std::process::id()),
        ..ttl(60)
    };
    let first = s.acquire("k", "w0", &mine).expect("acquire").tenure;
    let first = first.expect("tenure").revision;
    // A process started after the claim was made: never its maker.
    let mut other = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let theirs = AcquireOpts {
        pid: Some(other.id()),
        adopt: Adopt::SameOwner,
        ..ttl(60)
    };
    let got = etcd.store("/adopt").acquire("k", "w0", &theirs);
    let _ = other.kill();
    let _ = other.wait();
    match got.expect("acquire").outcome {
        AcquireOutcome::HeldByOther { holder, pid, .. } => {
            assert_eq!((holder.as_str(), pid), ("w0", std::process::id() as i32));
        }
        o => panic!("another process's claim was continued: {o:?}"),
    }
    // The very process the claim names continues it, as the seed has it.
    let same = AcquireOpts {
        adopt: Adopt::SameOwner,
        ..mine.clone()
    };
    let continues_the_tenure = |opts: &AcquireOpts| {
        let got = etcd
            .store("/adopt")
            .acquire("k", "w0", opts)
            .expect("acquire");
        assert!(matches!(
            got.outcome,
            AcquireOutcome::Acquired {
                kind: AcquireKind::Reacquired,
                ..
            }
        ));
        assert_eq!(got.tenure.expect("tenure").revision, first);
    };
    continues_the_tenure(&same);
    // And a plain acquire keeps the seed's rule: same holder, same tenure.
    continues_the_tenure(&AcquireOpts {
        pid: Some(1),
        ..ttl(60)
    });
}

#[test]
fn a_record_over_the_read_cap_is_refused_before_etcd_sees_it_and_the_key_stays_free() {
    let Some(etcd) = Etcd::single() else { return };
    let s = etcd.store("/big");
    let cap = claimtop::claims::record::MAX_LOCKFILE_BYTES as usize;
    let mut metadata = serde_json::Map::new();
    // Over the cap, yet under etcd's own request limit (1.5 MiB): only the
    // writer's own check keeps it out.
    metadata.insert("pad".into(), "p".repeat(cap + 1).into());
    let opts = AcquireOpts {
        metadata: Some(metadata),
        ..ttl(60)
    };
    match s.acquire("k", "alice", &opts) {
        Err(StoreError::Claim(claimtop::claims::ClaimError::Unwritable { bytes, .. })) => {
            assert!(bytes > cap, "{bytes}")
        }
        other => panic!("expected a refusal before writing, got {other:?}"),
    }
    let st = s.status("k", &mut fresh()).expect("status");
    assert_eq!(st.outcome.state, claimtop::claims::ClaimState::Free);
    // Nothing was written: no event either.
    assert!(s.events(10).expect("events").is_empty());
}
