//! Acquire, as the seed pins it: fresh create, idempotent re-acquire, refusal
//! of a live or TTL-protected holder, stale reclaim with an archive, refusal of
//! what cannot be verified, validation before any write, and one winner among
//! simultaneous acquirers.

use crate::common::*;
use claimtop::claims::acquire::resolve_harness_from;
use claimtop::claims::{
    acquire, now_ms, release, resolve_harness, status, AcquireKind, AcquireOpts, AcquireOutcome,
    ClaimError, ClaimRecord, ClaimState, ReleaseOutcome,
};
use serde_json::{json, Value};
use tempfile::TempDir;

#[test]
fn a_fresh_acquire_writes_the_lockfile_and_one_claim_acquired_event() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let opts = AcquireOpts {
        reason: Some("testing".into()),
        ..Default::default()
    };
    let (rec, kind) = must_acquire(&root, "session:fresh", "pty:me", &opts);
    assert_eq!(kind, AcquireKind::Fresh);
    assert_eq!(rec.pid, std::process::id() as i32);
    assert_eq!(rec.expires_at, None);

    // The file sits at the encoded name and holds exactly the returned record;
    // no temp file from the link publish is left beside it.
    let path = td.path().join(".fno/claims/session%3Afresh.lock");
    let on_disk = ClaimRecord::from_yaml(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(on_disk, rec);
    assert_eq!(names(&root.claims_dir()), vec!["session%3Afresh.lock"]);

    let ev = events(&root);
    assert_eq!(ev.len(), 1, "{ev:?}");
    let e = &ev[0];
    assert_eq!(e["type"], "claim_acquired");
    assert_eq!(e["source"], "fno-loop");
    assert_eq!(e["data"]["key"], "session:fresh");
    assert_eq!(e["data"]["holder"], "pty:me");
    assert_eq!(e["data"]["pid"], rec.pid);
    assert_eq!(e["data"]["host"], rec.host.as_str());
    assert_eq!(e["data"]["acquired_at"], rec.acquired_at);
    assert_eq!(e["data"]["reason"], "testing");
    // The event carries an explicit null where the lockfile omits the key.
    assert_eq!(e["data"].get("expires_at"), Some(&Value::Null));
}

#[test]
fn a_ttl_acquire_records_its_deadline_in_the_file_and_the_event() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let opts = AcquireOpts {
        ttl_ms: Some(90_000),
        ..Default::default()
    };
    let (rec, _) = must_acquire(&root, "node:ttl", "pty:me", &opts);
    assert_eq!(rec.expires_at, Some(rec.acquired_at + 90_000));
    let text = std::fs::read_to_string(root.lockfile("node:ttl")).unwrap();
    assert!(
        text.contains(&format!("\nexpires_at: {}\n", rec.acquired_at + 90_000)),
        "{text}"
    );
    let e = &events(&root)[0];
    assert_eq!(e["data"]["expires_at"], rec.acquired_at + 90_000);
    // No reason given: the acquired event has no reason field at all.
    assert!(e["data"].get("reason").is_none(), "unexpected reason: {e}");
}

#[test]
fn reacquire_by_the_same_holder_refreshes_pid_and_time_and_replaces_metadata() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let first_opts = AcquireOpts {
        metadata: Some(meta(json!({"old": 1, "shared": "a"}))),
        reason: Some("first".into()),
        ..Default::default()
    };
    let (first, _) = must_acquire(&root, "session:idem", "pty:me", &first_opts);
    std::thread::sleep(std::time::Duration::from_millis(3));
    let second_opts = AcquireOpts {
        pid: Some(4242),
        metadata: Some(meta(json!({"shared": "b"}))),
        ..Default::default()
    };
    let (second, kind) = must_acquire(&root, "session:idem", "pty:me", &second_opts);
    assert_eq!(kind, AcquireKind::Reacquired);
    assert_eq!(second.pid, 4242);
    assert!(second.acquired_at > first.acquired_at);

    let on_disk = claimtop::claims::read_claim_file(&root.lockfile("session:idem")).unwrap();
    assert_eq!(on_disk, second);
    // Replaced wholesale, not merged: the old key is gone, and so is the
    // reason the second call did not give.
    assert_eq!(on_disk.metadata, meta(json!({"shared": "b"})));
    assert_eq!(on_disk.reason, None);
    // The replace left no temp file behind.
    assert_eq!(names(&root.claims_dir()), vec!["session%3Aidem.lock"]);

    let ev = events(&root);
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(ev[1]["type"], "claim_idempotent_reacquired");
    assert_eq!(ev[1]["data"]["previous_acquired_at"], first.acquired_at);
    assert_eq!(ev[1]["data"]["acquired_at"], second.acquired_at);
    assert_eq!(ev[1]["data"]["pid"], 4242);
}

#[test]
fn a_live_claim_of_another_holder_is_refused_with_its_identity() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let (owner, _) = must_acquire(&root, "session:held", "pty:owner", &AcquireOpts::default());
    let before = std::fs::read(root.lockfile("session:held")).unwrap();
    match acquire(
        &root,
        "session:held",
        "pty:intruder",
        &AcquireOpts::default(),
    ) {
        Ok(AcquireOutcome::HeldByOther { holder, pid, host }) => {
            assert_eq!(holder, "pty:owner");
            assert_eq!(pid, std::process::id() as i32);
            assert_eq!(host, owner.host);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        std::fs::read(root.lockfile("session:held")).unwrap(),
        before
    );
    assert_eq!(events(&root).len(), 1, "a refusal writes no event");
}

#[test]
fn a_suspect_claim_with_running_ttl_and_dead_pid_is_never_stolen() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let opts = AcquireOpts {
        pid: Some(dead_pid() as u32),
        ttl_ms: Some(600_000),
        ..Default::default()
    };
    must_acquire(&root, "node:suspect", "pty:respawned", &opts);
    let before = std::fs::read(root.lockfile("node:suspect")).unwrap();
    assert_eq!(status(&root, "node:suspect").state, ClaimState::Suspect);

    match acquire(&root, "node:suspect", "pty:thief", &AcquireOpts::default()) {
        Ok(AcquireOutcome::HeldByOther { holder, .. }) => assert_eq!(holder, "pty:respawned"),
        other => panic!("a TTL-protected claim was not refused: {other:?}"),
    }
    assert_eq!(
        std::fs::read(root.lockfile("node:suspect")).unwrap(),
        before
    );
    assert!(archives_of(&root, "node:suspect").is_empty());
}

#[test]
fn an_expired_ttl_with_a_live_pid_is_still_live_and_refused() {
    // The hybrid arm: a suspended-but-alive session keeps its claim even after
    // its TTL ran out.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let now = now_ms();
    let mut rec = record("node:hybrid", "pty:sleeper", std::process::id() as i32, now);
    rec.expires_at = Some(now - 1);
    let before = plant(&root, &rec);
    assert_eq!(status(&root, "node:hybrid").state, ClaimState::Live);
    assert!(matches!(
        acquire(&root, "node:hybrid", "pty:thief", &AcquireOpts::default()),
        Ok(AcquireOutcome::HeldByOther { .. })
    ));
    assert_eq!(std::fs::read(root.lockfile("node:hybrid")).unwrap(), before);
}

/// Plant a stale claim, reclaim it as `pty:heir`, and check the archive and
/// the audit trail.
fn reclaim_and_check(rec: ClaimRecord) {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let key = rec.key.clone();
    let original = plant(&root, &rec);
    assert_eq!(status(&root, &key).state, ClaimState::Stale);

    let (new, kind) = must_acquire(&root, &key, "pty:heir", &AcquireOpts::default());
    assert_eq!(
        kind,
        AcquireKind::Reclaimed {
            previous_holder: rec.holder.clone(),
            previous_pid: rec.pid,
        }
    );
    assert_eq!(new.holder, "pty:heir");
    assert_eq!(status(&root, &key).state, ClaimState::Live);

    // Archived by rename, byte for byte, never unlinked.
    let archived = archives_of(&root, &key);
    assert_eq!(archived.len(), 1, "{:?}", names(&expired_dir(&root)));
    assert_eq!(std::fs::read(&archived[0]).unwrap(), original);
    // The recovery mutex was released and nothing else was left behind.
    assert_eq!(
        names(&root.claims_dir()),
        vec![
            ".expired".to_string(),
            format!("{}.lock", claimtop::claims::encode_key(&key))
        ]
    );

    let ev = events_of(&root, "claim_stale_reclaimed");
    assert_eq!(ev.len(), 1, "{:?}", events(&root));
    assert_eq!(ev[0]["data"]["holder"], "pty:heir");
    assert_eq!(ev[0]["data"]["previous_holder"], rec.holder.as_str());
    assert_eq!(ev[0]["data"]["previous_pid"], rec.pid);
    assert_eq!(ev[0]["data"]["acquired_at"], new.acquired_at);
}

#[test]
fn a_claim_whose_pid_is_gone_is_reclaimed_archived_and_audited() {
    reclaim_and_check(record("session:x", "pty:dead", dead_pid(), now_ms()));
}

#[test]
fn a_claim_whose_pid_was_reused_after_it_was_filed_is_reclaimed() {
    // Our own (live) pid, but the claim predates this process: PID reuse.
    reclaim_and_check(record("session:reuse", "h", std::process::id() as i32, 1));
}

#[test]
fn an_expired_ttl_claim_with_a_dead_pid_is_reclaimed() {
    let now = now_ms();
    let mut rec = record("node:expired", "pty:gone", dead_pid(), now - 120_000);
    rec.expires_at = Some(now - 60_000);
    reclaim_and_check(rec);
}

#[test]
fn a_claim_written_on_another_machine_is_not_live_here() {
    let mut rec = record("node:far", "pty:far", std::process::id() as i32, now_ms());
    rec.machine_id = Some("00000000000000000000000000000000:1".into());
    rec.host = "elsewhere.example".into();
    reclaim_and_check(rec);
}

#[test]
fn a_corrupted_claim_reads_corrupted_refuses_acquire_and_survives_release() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let path = plant_bytes(&root, "session:bad", b"{{{{not yaml");

    let st = status(&root, "session:bad");
    assert_eq!(st.state, ClaimState::Corrupted);
    assert!(st.record.is_none());
    assert!(st.error.is_some());

    match acquire(&root, "session:bad", "pty:x", &AcquireOpts::default()) {
        Err(ClaimError::Corrupted { path: p, .. }) => assert_eq!(p, path),
        other => panic!("acquire over a corrupted claim: {other:?}"),
    }
    assert!(matches!(
        release(&root, "session:bad", "pty:x"),
        Ok(ReleaseOutcome::CorruptedLeft { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), b"{{{{not yaml");
    assert!(archives_of(&root, "session:bad").is_empty());
    assert!(events(&root).is_empty());
}

#[test]
fn a_record_from_a_newer_schema_is_corrupted_and_left_alone() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let text = format!(
        "schema_version: 2\nkey: node:v2\nholder: h\nacquired_at: {}\npid: {}\nhost: x\n",
        now_ms(),
        dead_pid()
    );
    let path = plant_bytes(&root, "node:v2", text.as_bytes());
    assert_eq!(status(&root, "node:v2").state, ClaimState::Corrupted);
    assert!(matches!(
        acquire(&root, "node:v2", "pty:x", &AcquireOpts::default()),
        Err(ClaimError::Corrupted { .. })
    ));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn invalid_inputs_are_refused_before_anything_is_written() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let o = AcquireOpts::default();
    let ttl = |ms| AcquireOpts {
        ttl_ms: Some(ms),
        ..Default::default()
    };
    assert!(matches!(
        acquire(&root, "", "h", &o),
        Err(ClaimError::EmptyKey)
    ));
    assert!(matches!(
        acquire(&root, "k", "", &o),
        Err(ClaimError::EmptyHolder)
    ));
    assert!(matches!(
        acquire(&root, &"k".repeat(257), "h", &o),
        Err(ClaimError::KeyTooLong(257))
    ));
    // The raw cap admits 256 bytes, as the seed's does: such a key is
    // refused for its filename (cap 240), and the words say so.
    assert!(matches!(
        acquire(&root, &"k".repeat(256), "h", &o),
        Err(ClaimError::EncodedKeyTooLong(256))
    ));
    // Short enough raw, too long once each ':' becomes '%3A'.
    assert!(matches!(
        acquire(&root, &":".repeat(81), "h", &o),
        Err(ClaimError::EncodedKeyTooLong(243))
    ));
    assert!(matches!(
        acquire(&root, "k", "h", &ttl(59_999)),
        Err(ClaimError::TtlOutOfRange(59_999))
    ));
    assert!(matches!(
        acquire(&root, "k", "h", &ttl(86_400_001)),
        Err(ClaimError::TtlOutOfRange(86_400_001))
    ));
    for pid in [0, i32::MAX as u32 + 1, u32::MAX] {
        let o = AcquireOpts {
            pid: Some(pid),
            ..Default::default()
        };
        assert!(
            matches!(acquire(&root, "k", "h", &o), Err(ClaimError::BadPid(p)) if p == pid),
            "pid {pid} accepted"
        );
    }
    assert!(
        !td.path().join(".fno").exists(),
        "validation wrote something: {:?}",
        names(td.path())
    );
    // The bounds themselves are accepted.
    must_acquire(&root, "k", "h", &ttl(60_000));
    must_acquire(&root, "k2", "h", &ttl(86_400_000));
    must_acquire(&root, &"k".repeat(240), "h", &o);
}

#[test]
fn simultaneous_acquirers_of_one_key_produce_exactly_one_winner() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let (root, barrier) = (root.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                acquire(
                    &root,
                    "session:race",
                    &format!("pty:w{i}"),
                    &AcquireOpts::default(),
                )
            })
        })
        .collect();
    let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<&ClaimRecord> = outcomes
        .iter()
        .filter_map(|o| match o {
            Ok(AcquireOutcome::Acquired { record, .. }) => Some(record),
            _ => None,
        })
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let winner = winners[0].holder.clone();
    // Every loser saw the winner, never an error.
    for o in &outcomes {
        match o {
            Ok(AcquireOutcome::Acquired { .. }) => {}
            Ok(AcquireOutcome::HeldByOther { holder, .. }) => assert_eq!(holder, &winner),
            Err(e) => panic!("a loser errored: {e}"),
        }
    }
    let on_disk = claimtop::claims::read_claim_file(&root.lockfile("session:race")).unwrap();
    assert_eq!(on_disk.holder, winner);
    assert_eq!(events_of(&root, "claim_acquired").len(), 1);
    assert_eq!(names(&root.claims_dir()), vec!["session%3Arace.lock"]);
}

#[test]
fn status_reads_free_then_live_with_the_full_record() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let free = status(&root, "session:s");
    assert_eq!(free.state, ClaimState::Free);
    assert!(free.record.is_none());

    let opts = AcquireOpts {
        ttl_ms: Some(3_600_000),
        reason: Some("because".into()),
        metadata: Some(meta(json!({"k": "v", "n": [1, 2]}))),
        harness: Some("gemini".into()),
        ..Default::default()
    };
    let (rec, _) = must_acquire(&root, "session:s", "pty:me", &opts);
    let st = status(&root, "session:s");
    assert_eq!(st.state, ClaimState::Live);
    assert_eq!(st.key, "session:s");
    assert_eq!(*st.file, *root.lockfile("session:s"));
    assert_eq!(st.record.as_ref(), Some(&rec));
    let r = st.record.unwrap();
    assert_eq!(r.reason.as_deref(), Some("because"));
    assert_eq!(r.harness.as_deref(), Some("gemini"));
    assert_eq!(r.metadata, meta(json!({"k": "v", "n": [1, 2]})));
}

#[test]
fn the_harness_tag_follows_marker_precedence_and_blank_is_unset() {
    type Env = &'static [(&'static str, &'static str)];
    let table: [(Env, Option<&str>); 7] = [
        (
            &[("CLAUDE_CODE_SESSION_ID", "cl"), ("CODEX_THREAD_ID", "cx")],
            Some("codex"),
        ),
        // A blank higher-precedence marker is unset; the next real one wins.
        (
            &[("CODEX_THREAD_ID", "  "), ("CLAUDE_CODE_SESSION_ID", "cl")],
            Some("claude"),
        ),
        (
            &[("GEMINI_SESSION_ID", "g"), ("CODEX_SESSION_ID", "c")],
            Some("codex"),
        ),
        (
            &[("OPENCODE_SESSION_ID", "o"), ("GEMINI_SESSION_ID", "g")],
            Some("gemini"),
        ),
        (&[("OPENCODE_SESSION_ID", "ses_1")], Some("opencode")),
        (&[("OPENCODE_SESSION_ID", "")], None),
        (&[], None),
    ];
    for (env, want) in table {
        let got = resolve_harness_from(|k| {
            env.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        });
        assert_eq!(got.as_deref(), want, "{env:?}");
    }
}

#[test]
fn an_acquire_without_an_explicit_harness_tags_the_ambient_one() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let (rec, _) = must_acquire(&root, "session:h", "pty:me", &AcquireOpts::default());
    assert_eq!(rec.harness, resolve_harness());
    let text = std::fs::read_to_string(root.lockfile("session:h")).unwrap();
    // Absent, never null, when there is no marker.
    assert_eq!(text.contains("harness:"), rec.harness.is_some(), "{text}");
}

#[test]
fn a_holder_reacquiring_its_own_stale_claim_rewrites_it_without_an_archive() {
    // Same holder wins before liveness is even looked at: a restarted worker
    // takes its claim back in place, with no reclaim and no archive.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let old = record("node:mine", "pty:restarted", dead_pid(), now_ms() - 1000);
    plant(&root, &old);
    assert_eq!(status(&root, "node:mine").state, ClaimState::Stale);
    let (rec, kind) = must_acquire(&root, "node:mine", "pty:restarted", &AcquireOpts::default());
    assert_eq!(kind, AcquireKind::Reacquired);
    assert_eq!(rec.pid, std::process::id() as i32);
    assert_eq!(status(&root, "node:mine").state, ClaimState::Live);
    assert!(!expired_dir(&root).exists());
    let ev = events(&root);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["type"], "claim_idempotent_reacquired");
    assert_eq!(ev[0]["data"]["previous_acquired_at"], old.acquired_at);
}

#[test]
fn a_new_claim_records_the_machine_id_beside_the_hostname() {
    // Both writers must record (and compare) the same machine id, or each
    // reads the other's live claims as foreign; `host` stays the hostname an
    // older reader compares. No id on this machine means the field is absent.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let me = claimtop::claims::LocalIdentity::current();
    let (rec, _) = must_acquire(&root, "session:mid", "pty:me", &AcquireOpts::default());
    assert_eq!(rec.host, me.hostname);
    if me.machine_id.is_empty() {
        assert_eq!(rec.machine_id, None);
    } else {
        assert_eq!(rec.machine_id.as_deref(), Some(me.machine_id.as_str()));
        // The pid namespace keeps containers sharing one image's machine-id
        // apart.
        if let Ok(ns) = std::fs::metadata("/proc/self/ns/pid") {
            use std::os::unix::fs::MetadataExt;
            let want = format!(":{}", ns.ino());
            assert!(me.machine_id.ends_with(&want), "{}", me.machine_id);
        }
    }
}

/// A claim whose metadata pads it by `n` bytes.
fn padded(n: usize) -> AcquireOpts {
    AcquireOpts {
        pid: Some(std::process::id()),
        ttl_ms: Some(claimtop::claims::MIN_TTL_MS),
        metadata: Some(meta(json!({"pad": "p".repeat(n)}))),
        ..Default::default()
    }
}

#[test]
fn a_record_at_the_read_cap_is_written_and_released_and_one_byte_over_is_refused_unwritten() {
    use claimtop::claims::record::MAX_LOCKFILE_BYTES as CAP;
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let size = || std::fs::metadata(root.lockfile("big")).unwrap().len();
    must_acquire(&root, "big", "me", &padded(1));
    let base = size() - 1;
    assert!(matches!(
        release(&root, "big", "me"),
        Ok(ReleaseOutcome::Released { .. })
    ));
    for at in [CAP - 1, CAP] {
        must_acquire(&root, "big", "me", &padded((at - base) as usize));
        assert_eq!(size(), at);
        // Its holder can read it back, so its holder can give it back.
        assert_eq!(status(&root, "big").state, ClaimState::Live);
        assert!(matches!(
            release(&root, "big", "me"),
            Ok(ReleaseOutcome::Released { .. })
        ));
    }
    let events_before = events(&root).len();
    let err = acquire(&root, "big", "me", &padded((CAP + 1 - base) as usize)).unwrap_err();
    assert!(
        matches!(&err, ClaimError::Unwritable { bytes, .. } if *bytes as u64 == CAP + 1),
        "{err:?}"
    );
    assert!(err.to_string().contains("too big to read"), "{err}");
    assert!(!root.lockfile("big").exists());
    assert!(litter(&root.claims_dir()).is_empty());
    assert_eq!(events(&root).len(), events_before, "an event for nothing");
}

#[test]
fn a_re_acquire_that_would_grow_past_the_read_cap_keeps_the_old_record() {
    use claimtop::claims::record::MAX_LOCKFILE_BYTES as CAP;
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, "big", "me", &padded(10));
    let before = std::fs::read(root.lockfile("big")).unwrap();
    let events_before = events(&root).len();
    let err = acquire(&root, "big", "me", &padded(CAP as usize)).unwrap_err();
    assert!(matches!(err, ClaimError::Unwritable { .. }), "{err:?}");
    assert_eq!(std::fs::read(root.lockfile("big")).unwrap(), before);
    assert_eq!(events(&root).len(), events_before);
}

#[test]
fn a_record_nested_deeper_than_the_seed_reads_is_refused_unwritten() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    // The seed reads metadata 126 lists deep (its recursion limit of 128
    // counts the record and the metadata mapping); this is past it.
    let mut deep = json!("leaf");
    for _ in 0..130 {
        deep = json!([deep]);
    }
    let opts = AcquireOpts {
        metadata: Some(meta(json!({"deep": deep}))),
        ..Default::default()
    };
    let err = acquire(&root, "deep", "me", &opts).unwrap_err();
    assert!(matches!(err, ClaimError::Unwritable { .. }), "{err:?}");
    assert!(!root.lockfile("deep").exists());
    assert!(events(&root).is_empty());
}

#[test]
#[ignore = "a figure, not a check: prints what the read-back check costs per write"]
fn figure_the_read_back_check_costs_a_parse_per_write() {
    use claimtop::claims::record::MAX_LOCKFILE_BYTES as CAP;
    let typical = record("node:ab-1234abcd", "target-session:me", 4242, now_ms());
    let mut big = typical.clone();
    big.metadata = meta(json!({"pad": "p".repeat(CAP as usize - 400)})).into();
    // A holder PyYAML would misread takes the placeholder road.
    let mut special = typical.clone();
    special.holder = "12:30".into();
    for (what, rec, n) in [
        ("typical", &typical, 20_000u32),
        ("holder 12:30", &special, 20_000),
        ("1 MiB", &big, 20),
    ] {
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(rec.to_yaml().unwrap());
        }
        let write = t.elapsed() / n;
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(rec.to_lockfile().unwrap());
        }
        let checked = t.elapsed() / n;
        println!("{what} record: serialise {write:?}, serialise + read-back check {checked:?}");
    }
}
