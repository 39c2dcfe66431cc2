//! Golden lockfiles: the exact bytes claimtop writes for a PID claim and a TTL
//! claim, which must be what the seed's writer (serde_yaml_ng 0.10 over the
//! same field order) writes for the same record. Only what differs per run —
//! acquired_at (and the deadline derived from it), host, machine id, and the
//! ambient harness — is substituted from the returned record.

use crate::common::*;
use claimtop::claims::{resolve_harness, AcquireOpts, ClaimRecord};
use serde_json::json;
use tempfile::TempDir;

/// `name: value\n`, or nothing for an absent optional field (never `null`).
fn opt_line(name: &str, value: Option<&str>) -> String {
    value.map(|v| format!("{name}: {v}\n")).unwrap_or_default()
}

fn written(td: &TempDir, rec: &ClaimRecord) -> String {
    let text = std::fs::read_to_string(root_in(td).lockfile(&rec.key)).unwrap();
    // Whatever the bytes, they must read back as the record acquire returned.
    assert_eq!(&ClaimRecord::from_yaml(&text).unwrap(), rec);
    text
}

#[test]
fn a_pid_claim_is_written_byte_for_byte_as_the_seed_writes_it() {
    let td = TempDir::new().unwrap();
    let opts = AcquireOpts {
        pid: Some(4242),
        reason: Some("ship it".into()),
        metadata: Some(meta(json!({"ticket": "X-1", "attempt": 2}))),
        ..Default::default()
    };
    let (rec, _) = must_acquire(&root_in(&td), "session:golden/pid 1", "pty:golden", &opts);
    assert_eq!(rec.harness, resolve_harness());
    let expected = format!(
        "schema_version: 1\n\
         key: session:golden/pid 1\n\
         holder: pty:golden\n\
         acquired_at: {acquired}\n\
         pid: 4242\n\
         host: {host}\n\
         reason: ship it\n\
         {harness}\
         {machine}\
         metadata:\n  \
           ticket: X-1\n  \
           attempt: 2\n",
        acquired = rec.acquired_at,
        host = rec.host,
        harness = opt_line("harness", rec.harness.as_deref()),
        machine = opt_line("machine_id", rec.machine_id.as_deref()),
    );
    assert_eq!(written(&td, &rec), expected);
}

#[test]
fn a_ttl_claim_is_written_byte_for_byte_as_the_seed_writes_it() {
    let td = TempDir::new().unwrap();
    let opts = AcquireOpts {
        pid: Some(4242),
        ttl_ms: Some(3_600_000),
        // The quoting is part of the bytes: ': ' and a leading-zero number
        // get single quotes, as the seed's writer quotes them; `yes` and
        // `no`, which the seed writes plain (YAML 1.2) and PyYAML would read
        // as booleans, get the single quotes PyYAML's safe_dump gives them.
        reason: Some("fix: the thing".into()),
        harness: Some("codex".into()),
        metadata: Some(meta(json!({
            "paths": ["a b", "c"],
            "flags": {"dry": true, "n": null},
            "zip": "0123",
            "yes": "no",
        }))),
        ..AcquireOpts::default()
    };
    let (rec, _) = must_acquire(
        &root_in(&td),
        "node:ab-1234abcd",
        "target-session:me",
        &opts,
    );
    let expected = format!(
        "schema_version: 1\n\
         key: node:ab-1234abcd\n\
         holder: target-session:me\n\
         acquired_at: {acquired}\n\
         pid: 4242\n\
         host: {host}\n\
         expires_at: {expires}\n\
         reason: 'fix: the thing'\n\
         harness: codex\n\
         {machine}\
         metadata:\n  \
           paths:\n  \
           - a b\n  \
           - c\n  \
           flags:\n    \
             dry: true\n    \
             n: null\n  \
           zip: '0123'\n  \
           'yes': 'no'\n",
        acquired = rec.acquired_at,
        expires = rec.acquired_at + 3_600_000,
        host = rec.host,
        machine = opt_line("machine_id", rec.machine_id.as_deref()),
    );
    assert_eq!(written(&td, &rec), expected);
}

#[test]
fn a_bare_claim_has_only_the_six_required_lines_and_the_machine_id() {
    let td = TempDir::new().unwrap();
    let opts = AcquireOpts {
        pid: Some(7),
        harness: None,
        ..Default::default()
    };
    let (rec, _) = must_acquire(&root_in(&td), "k", "h", &opts);
    let expected = format!(
        "schema_version: 1\nkey: k\nholder: h\nacquired_at: {}\npid: 7\nhost: {}\n{}{}",
        rec.acquired_at,
        rec.host,
        opt_line("harness", rec.harness.as_deref()),
        opt_line("machine_id", rec.machine_id.as_deref()),
    );
    assert_eq!(written(&td, &rec), expected);
}
