//! Never stricter than the seed on a valid claim.
//!
//! A defensive limit (size, nesting, alias expansion) or a file this user
//! cannot read must never make a claim easier to take away: what the seed
//! reads as a valid record, claimtop reads as the same record, or - only
//! when it is refused for its size or cost - as `unreadable`, which every
//! verb treats as held. Never as `corrupted`, which force-release archives
//! without `--allow-live` and a holder's release reports as left.
//!
//! The differential test writes records with Python's own `yaml.safe_dump`
//! (PyYAML); it skips, saying why, when python3 or PyYAML is missing, and
//! fails instead under CI.

use crate::common::*;
use claimtop::claims::record::MAX_LOCKFILE_BYTES;
use claimtop::claims::{
    doctor, force_release, read_claim_file, release, status, ClaimState, ForceOpts, ForceOutcome,
    LocalIdentity, ReadError, ReleaseOutcome, Root, SCHEMA_VERSION,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::process::Command;
use tempfile::TempDir;

const GENERATOR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/safe_dump_records.py"
);

/// The seed's record shape, field for field (its struct, not ours: the
/// comparison must not share claimtop's reader in any part).
#[derive(Debug, Serialize, Deserialize)]
struct SeedRecord {
    #[serde(default = "one")]
    schema_version: u32,
    key: String,
    holder: String,
    acquired_at: i64,
    pid: i32,
    host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    harness: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine_id: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    metadata: Map<String, Value>,
}

fn one() -> u32 {
    1
}

/// The seed's reader: a bare serde_yaml_ng parse plus its schema checks.
fn seed_read(text: &str) -> Option<Value> {
    let rec: SeedRecord = serde_yaml_ng::from_str(text).ok()?;
    if rec.schema_version > SCHEMA_VERSION || rec.key.is_empty() || rec.holder.is_empty() {
        return None;
    }
    serde_json::to_value(rec).ok()
}

/// python3 with PyYAML, or None (after saying why).
pub(crate) fn python_with_yaml() -> Option<()> {
    let why = match Command::new("python3").args(["-c", "import yaml"]).output() {
        Ok(o) if o.status.success() => return Some(()),
        Ok(o) => format!(
            "PyYAML is not importable (pip install pyyaml, or apt-get install python3-yaml): {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("python3 cannot be run: {e}"),
    };
    // CI installs both (.ci/run): there a skip would hide a lost check.
    assert!(
        std::env::var_os("CI").is_none(),
        "differential test under CI: {why}"
    );
    eprintln!("skipping the safe_dump differential test: {why}");
    None
}

#[test]
fn records_written_by_pythons_safe_dump_read_as_the_seed_reads_them() {
    let Some(()) = python_with_yaml() else { return };
    let td = TempDir::new().unwrap();
    let gen = td.path().join("gen");
    std::fs::create_dir(&gen).unwrap();
    // Records of this process on this host: Live wherever they are valid,
    // so every verb below meets a claim that must not be taken away.
    let host = LocalIdentity::current().hostname;
    let out = Command::new("python3")
        .arg(GENERATOR)
        .arg(&gen)
        .arg(std::process::id().to_string())
        .arg(&host)
        .arg(claimtop::claims::now_ms().to_string())
        .output()
        .expect("run the generator");
    assert!(
        out.status.success(),
        "generator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root = Root::with_events_here(td.path());
    let (mut compared, mut aliased, mut too_big) = (0, 0, 0);
    let mut differences = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let entry: Value = serde_json::from_str(line).expect("generator line");
        let (name, shape) = (
            entry["file"].as_str().unwrap(),
            entry["shape"].as_str().unwrap(),
        );
        let bytes = std::fs::read(gen.join(name)).unwrap();
        let text = String::from_utf8(bytes.clone()).expect("safe_dump writes UTF-8");
        compared += 1;
        aliased += usize::from(text.contains("*id0"));
        let seed = seed_read(&text);
        let Some(seed) = seed else {
            // Refused by the seed: we may refuse too, but never accept.
            let path = gen.join(name);
            if let Ok(rec) = read_claim_file(&path) {
                differences.push(format!("{shape}: accepted what the seed refuses: {rec:?}"));
            }
            continue;
        };
        let key = seed["key"].as_str().unwrap().to_string();
        let holder = seed["holder"].as_str().unwrap().to_string();
        let path = plant_bytes(&root, &key, &bytes);
        let over_cap = bytes.len() as u64 > MAX_LOCKFILE_BYTES;
        too_big += usize::from(over_cap);
        match read_claim_file(&path) {
            Ok(rec) => {
                let ours = serde_json::to_value(&rec).unwrap();
                if ours != seed {
                    differences.push(format!("{shape}: read differently from the seed"));
                }
            }
            Err(ReadError::Unreadable { .. }) if over_cap => {}
            Err(e) => differences.push(format!("{shape}: {}", e.reason())),
        }
        let state = status(&root, &key).state;
        let expected = if over_cap {
            ClaimState::Unreadable
        } else {
            ClaimState::Live
        };
        if state != expected {
            differences.push(format!("{shape}: state {state}, expected {expected}"));
        }
        // An operator without --allow-live may not take it away...
        match force_release(&root, &key, &ForceOpts::default()) {
            Ok(ForceOutcome::Refused(_)) => {}
            other => differences.push(format!(
                "{shape}: force-release without --allow-live: {other:?}"
            )),
        }
        // ...and its holder's own release does what the seed's does.
        match release(&root, &key, &holder) {
            Ok(ReleaseOutcome::Released { .. }) if !over_cap => {}
            Err(_) if over_cap => {}
            other => differences.push(format!(
                "{shape}: release by its holder: {:?}",
                other.map(|o| o.as_str())
            )),
        }
    }
    eprintln!(
        "compared {compared} safe_dump files: {aliased} with aliases, {too_big} over the size cap"
    );
    assert!(
        compared >= 30 && aliased >= 8,
        "the generator wrote too little"
    );
    assert!(differences.is_empty(), "{differences:#?}");
}

#[test]
fn a_claim_too_big_to_read_is_held_by_every_verb_and_reported_as_unreadable() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let mut rec = record("big", "pty:owner", std::process::id() as i32, 1);
    rec.metadata.insert(
        "pad".into(),
        Value::String("x".repeat(MAX_LOCKFILE_BYTES as usize)),
    );
    let bytes = plant(&root, &rec);
    let st = status(&root, "big");
    assert_eq!(st.state, ClaimState::Unreadable, "{}", st.why);
    assert!(st.error.unwrap().contains("larger than"));
    let hazards = doctor(&root);
    assert!(
        hazards
            .iter()
            .any(|h| h.kind == claimtop::claims::hazard::UNREADABLE),
        "{hazards:?}"
    );
    assert!(!hazards
        .iter()
        .any(|h| h.kind == claimtop::claims::hazard::CORRUPTED_CLAIM));
    // Its holder is told it could not be read, not that it was left corrupted.
    assert!(release(&root, "big", "pty:owner").is_err());
    // Without --allow-live, force-release refuses, as for a live claim.
    match force_release(&root, "big", &ForceOpts::default()) {
        Ok(ForceOutcome::Refused(why)) => assert!(why.contains("--allow-live"), "{why}"),
        other => panic!("took an unreadable claim without --allow-live: {other:?}"),
    }
    assert_eq!(std::fs::read(root.lockfile("big")).unwrap(), bytes);
    let allowed = ForceOpts {
        allow_live: true,
        ..ForceOpts::default()
    };
    match force_release(&root, "big", &allowed) {
        Ok(ForceOutcome::Archived {
            previous_state,
            archived_to,
            ..
        }) => {
            assert_eq!(previous_state, ClaimState::Unreadable);
            assert_eq!(std::fs::read(archived_to).unwrap(), bytes);
        }
        other => panic!("{other:?}"),
    }
    let ev = events_of(&root, "claim_force_released");
    assert_eq!(ev[0]["data"]["previous_state"], "unreadable");
}
