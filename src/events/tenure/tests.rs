//! The tenure index over hand-made event sequences.

use super::*;

fn line(kind: &str, ts: &str, data: &str) -> String {
    format!(r#"{{"ts":"{ts}","type":"{kind}","source":"fno-loop","data":{{{data}}}}}"#)
}

/// `claim_acquired` of key `k` by `holder` at `secs` seconds.
fn acquired(ix: &mut TenureIndex, holder: &str, secs: i64) {
    let ts = format!("1970-01-01T00:00:{secs:02}Z");
    let data = format!(
        r#""key":"k","holder":"{holder}","acquired_at":{}"#,
        secs * 1000
    );
    assert!(ix.apply_line(&line("claim_acquired", &ts, &data)));
}

#[test]
fn acquire_then_release_is_one_released_tenure_with_ms_precision() {
    let mut ix = TenureIndex::new(Limits::default());
    assert!(ix.apply_line(&line(
        "claim_acquired",
        "1970-01-01T00:00:01Z",
        r#""key":"k","holder":"h","acquired_at":1000"#
    )));
    assert!(ix.apply_line(&line(
        "claim_released",
        "1970-01-01T00:00:03Z",
        r#""key":"k","holder":"h","acquired_at":1000,"duration_held_ms":2500"#
    )));
    let t = ix.tenures_of("k");
    assert_eq!(t.len(), 1);
    assert_eq!(
        (t[0].start, t[0].end, t[0].ending),
        (1000, 3500, Ending::Released)
    );
    assert_eq!(ix.holder_name(t[0].holder), "h");
}

#[test]
fn a_stale_reclaim_ends_the_old_tenure_and_starts_the_new_holders() {
    let mut ix = TenureIndex::new(Limits::default());
    acquired(&mut ix, "old", 1);
    ix.apply_line(&line(
        "claim_stale_reclaimed",
        "1970-01-01T00:00:09Z",
        r#""key":"k","holder":"new","acquired_at":9000,"previous_holder":"old""#,
    ));
    let t = ix.tenures_of("k");
    assert_eq!(t.len(), 2);
    assert_eq!((t[0].ending, t[0].end), (Ending::Reclaimed, 9000));
    assert_eq!(ix.holder_name(t[0].by.unwrap()), "new");
    assert!(t[1].is_held());
    assert_eq!(ix.holder_name(t[1].holder), "new");
}

#[test]
fn a_release_whose_acquire_was_never_seen_still_makes_a_whole_tenure() {
    let mut ix = TenureIndex::new(Limits::default());
    ix.apply_line(&line(
        "claim_released",
        "1970-01-01T00:01:40Z",
        r#""key":"k","holder":"h","acquired_at":40000,"duration_held_ms":60000"#,
    ));
    let t = ix.tenures_of("k");
    assert_eq!(
        (t[0].start, t[0].end, t[0].start_seen),
        (40_000, 100_000, true)
    );
}

#[test]
fn an_acquire_over_an_open_tenure_ends_it_as_unseen() {
    let mut ix = TenureIndex::new(Limits::default());
    acquired(&mut ix, "a", 1);
    acquired(&mut ix, "b", 5);
    let t = ix.tenures_of("k");
    assert_eq!((t[0].ending, t[0].end), (Ending::Unseen, 5000));
    assert!(t[1].is_held());
}

#[test]
fn another_holders_release_naming_no_start_never_ends_the_open_tenure_as_its_own() {
    // A writer that logs no `acquired_at`: the holder alone says whose
    // tenure ended. "b" held the key after "a", unseen; "a" did not release.
    let mut ix = TenureIndex::new(Limits::default());
    acquired(&mut ix, "a", 1);
    ix.apply_line(&line(
        "claim_released",
        "1970-01-01T00:00:09Z",
        r#""key":"k","holder":"b""#,
    ));
    let t = ix.tenures_of("k");
    let got: Vec<_> = t
        .iter()
        .map(|t| (ix.holder_name(t.holder), t.ending, t.end))
        .collect();
    assert_eq!(
        got,
        [("a", Ending::Unseen, 9000), ("b", Ending::Released, 9000)]
    );
}

#[test]
fn renew_and_reacquire_continue_the_same_tenure() {
    let mut ix = TenureIndex::new(Limits::default());
    acquired(&mut ix, "a", 1);
    ix.apply_line(&line(
        "claim_renewed",
        "1970-01-01T00:00:05Z",
        r#""key":"k","holder":"a","acquired_at":1000"#,
    ));
    ix.apply_line(&line(
        "claim_idempotent_reacquired",
        "1970-01-01T00:00:06Z",
        r#""key":"k","holder":"a","acquired_at":6000,"previous_acquired_at":1000"#,
    ));
    assert_eq!(ix.tenures_of("k").len(), 1);
    assert!(ix.tenures_of("k")[0].is_held());
}

#[test]
fn force_release_records_the_operator() {
    let mut ix = TenureIndex::new(Limits::default());
    acquired(&mut ix, "a", 1);
    ix.apply_line(&line(
        "claim_force_released",
        "1970-01-01T00:00:07Z",
        r#""key":"k","holder":"a","acquired_at":1000,"operator":"operator:root@h""#,
    ));
    let t = ix.tenures_of("k")[0];
    assert_eq!((t.ending, t.end), (Ending::ForceReleased, 7000));
    assert_eq!(ix.holder_name(t.by.unwrap()), "operator:root@h");
}

#[test]
fn lines_that_are_not_claim_events_are_ignored() {
    let mut ix = TenureIndex::new(Limits::default());
    assert!(!ix.apply_line("not json"));
    assert!(!ix.apply_line(r#"{"type":"loop_started","data":{"key":"k"}}"#));
    assert!(!ix.apply_line(r#"{"type":"claim_acquired","data":{"holder":"h"}}"#));
    assert!(ix.is_empty());
}

#[test]
fn memory_stays_under_the_tenure_limit_and_says_where_history_starts() {
    let mut ix = TenureIndex::new(Limits {
        max_tenures: 100,
        max_names: 10,
    });
    for i in 0..1000i64 {
        let at = i * 1000;
        ix.apply(&ClaimEvent {
            kind: Kind::Acquired,
            at,
            key: "k",
            holder: Some("h"),
            acquired_at: Some(at),
            previous_holder: None,
            previous_acquired_at: None,
            operator: None,
        });
    }
    assert!(ix.len() <= 100, "{}", ix.len());
    assert!(ix.horizon().is_some_and(|h| h > 800_000));
    assert!(ix.tenures_of("k").last().unwrap().is_held());
}

proptest::proptest! {
    #[test]
    fn any_event_sequence_keeps_each_key_sorted_with_at_most_one_open_tenure(
        evs in proptest::collection::vec(
            (0usize..7, 0usize..3, 0usize..3, 0i64..100_000, 0i64..50_000), 0..200),
    ) {
        const KINDS: [Kind; 7] = [Kind::Acquired, Kind::Reacquired, Kind::Reclaimed,
            Kind::Released, Kind::ForceReleased, Kind::Renewed, Kind::Expired];
        let mut ix = TenureIndex::new(Limits { max_tenures: 50, max_names: 10 });
        for (k, key, holder, at, back) in evs {
            let key = format!("k{key}");
            let holder = format!("h{holder}");
            ix.apply(&ClaimEvent {
                kind: KINDS[k],
                at,
                key: &key,
                holder: Some(&holder),
                acquired_at: Some(at - back),
                previous_holder: Some("h0"),
                previous_acquired_at: Some(at - back),
                operator: None,
            });
        }
        let mut total = 0;
        for (_, list) in ix.keys() {
            proptest::prop_assert!(list.windows(2).all(|w| w[0].start <= w[1].start));
            proptest::prop_assert!(list.iter().filter(|t| t.is_held()).count() <= 1);
            proptest::prop_assert!(list.iter().all(|t| t.end >= t.start));
            total += list.len();
        }
        proptest::prop_assert_eq!(total, ix.len());
        // Open tenures are never dropped: one per key at most.
        proptest::prop_assert!(ix.len() <= 50 + ix.key_count());
    }
}

#[test]
fn absurd_times_are_ignored_instead_of_overflowing_a_span() {
    let mut ix = TenureIndex::new(Limits::default());
    let min = i64::MIN;
    let max = i64::MAX;
    assert!(!ix.apply_line(&line(
        "claim_acquired",
        "not a time",
        &format!(r#""key":"k","holder":"h","acquired_at":{min}"#)
    )));
    assert!(ix.apply_line(&line(
        "claim_released",
        "1970-01-01T00:00:09Z",
        &format!(r#""key":"k","holder":"h","acquired_at":{max},"duration_held_ms":{max}"#)
    )));
    let t = ix.tenures_of("k")[0];
    assert_eq!((t.start, t.end, t.start_seen), (9000, 9000, false));
}

#[test]
fn names_past_the_limit_are_skipped_and_counted() {
    let mut ix = TenureIndex::new(Limits {
        max_tenures: 100,
        max_names: 2,
    });
    for k in ["a", "b", "c"] {
        ix.apply_line(&line(
            "claim_acquired",
            "1970-01-01T00:00:01Z",
            &format!(r#""key":"{k}","holder":"h","acquired_at":1000"#),
        ));
    }
    assert_eq!(ix.key_count(), 2);
    assert_eq!(ix.skipped(), 1);
}
