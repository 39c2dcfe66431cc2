//! Strings that PyYAML reads as something else are written as PyYAML's
//! `safe_dump` writes them; every other byte stays the seed's.
//!
//! The seed's writer (serde_yaml_ng) follows YAML 1.2, so it writes `yes`,
//! `12:30` or `2001-12-14` plain, and the Python side of the protocol,
//! reading with PyYAML (YAML 1.1), takes them for a bool, a number or a
//! date. The differential runs real PyYAML over claimtop's bytes and the
//! seed's for the same record: claimtop's must always read back as the
//! record; where they differ from the seed's, the seed's must be the ones
//! PyYAML misreads, and claimtop's must be `safe_dump`'s exact bytes.

use super::parity::python_with_yaml;
use claimtop::claims::ClaimRecord;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::process::{Command, Stdio};

const JUDGE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/safe_load_check.py"
);

/// A record with every string field and a metadata map (key, value, list
/// item, nested value) set to `s`; the rest plain in every writer.
fn everywhere(s: &str) -> ClaimRecord {
    let mut metadata = Map::new();
    metadata.insert(s.to_string(), json!(s));
    metadata.insert("list".into(), json!([s, {"k": s}]));
    ClaimRecord {
        schema_version: 1,
        key: s.to_string(),
        holder: s.to_string(),
        acquired_at: 1_700_000_000_000,
        pid: 4242,
        host: "box".into(),
        expires_at: Some(1_700_003_600_000),
        reason: Some(s.to_string()),
        harness: Some("codex".into()),
        machine_id: Some("0123abcd:4026531836".into()),
        metadata: metadata.into(),
    }
}

fn holder_only(s: &str) -> ClaimRecord {
    ClaimRecord {
        key: "k".into(),
        reason: None,
        metadata: Default::default(),
        ..everywhere(s)
    }
}

/// What PyYAML says of each record's two renderings.
struct Judged {
    ours_reads_back: bool,
    seed_reads_back: bool,
    safe_dump: String,
}

fn judge(cases: &[(ClaimRecord, String, String)]) -> Vec<Judged> {
    let input: Vec<Value> = cases
        .iter()
        .map(|(rec, ours, seed)| json!({"record": rec, "ours": ours, "seed": seed}))
        .collect();
    let mut child = Command::new("python3")
        .arg(JUDGE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the PyYAML judge");
    let mut stdin = child.stdin.take().unwrap();
    let body = serde_json::to_vec(&input).unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "judge failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Judged> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            Judged {
                ours_reads_back: v["ours_reads_back"].as_bool().unwrap(),
                seed_reads_back: v["seed_reads_back"].as_bool().unwrap(),
                safe_dump: v["safe_dump"].as_str().unwrap().to_string(),
            }
        })
        .collect();
    assert_eq!(lines.len(), cases.len());
    lines
}

/// Run the differential over `records`: what went wrong, and the holders
/// whose bytes differ from the seed's.
fn differential(records: Vec<ClaimRecord>) -> (Vec<String>, Vec<String>) {
    let cases: Vec<(ClaimRecord, String, String)> = records
        .into_iter()
        .map(|rec| {
            let ours = rec.to_yaml().unwrap();
            // The seed's writer: serde_yaml_ng over the same struct.
            let seed = serde_yaml_ng::to_string(&rec).unwrap();
            (rec, ours, seed)
        })
        .collect();
    let mut wrong = Vec::new();
    let mut requoted = Vec::new();
    for ((rec, ours, seed), j) in cases.iter().zip(judge(&cases)) {
        let s = &rec.holder;
        if !j.ours_reads_back {
            wrong.push(format!("{s:?}: PyYAML misreads claimtop's bytes:\n{ours}"));
        }
        // claimtop's own reader, and the seed's, read it back too.
        if ClaimRecord::from_yaml(ours).as_ref() != Ok(rec) {
            wrong.push(format!("{s:?}: claimtop's reader does not read it back"));
        }
        if serde_yaml_ng::from_str::<ClaimRecord>(ours).ok().as_ref() != Some(rec) {
            wrong.push(format!("{s:?}: the seed's reader does not read it back"));
        }
        if ours == seed {
            continue;
        }
        requoted.push(s.clone());
        if j.seed_reads_back {
            wrong.push(format!(
                "{s:?}: changed bytes PyYAML already reads right:\n{seed}---\n{ours}"
            ));
        }
        if *ours != j.safe_dump {
            wrong.push(format!(
                "{s:?}: not safe_dump's bytes:\n{ours}---\n{}",
                j.safe_dump
            ));
        }
    }
    (wrong, requoted)
}

#[test]
fn yaml_special_strings_read_back_in_pyyaml_and_are_written_as_safe_dump_writes_them() {
    let Some(()) = python_with_yaml() else { return };
    let long_stamp = format!("2001-12-14 21:59:43.{} -5", "1".repeat(90));
    // Past 128 characters a mapping key is written as a `? ` complex key.
    let longer_stamp = format!("2001-12-14 21:59:43.{} Z", "2".repeat(120));
    let long_word = "x".repeat(200);
    let special = [
        "yes",
        "Yes",
        "YES",
        "no",
        "No",
        "NO",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "true",
        "True",
        "false",
        "FALSE",
        "~",
        "null",
        "Null",
        "NULL",
        "<<",
        "=",
        "!",
        "&",
        "*",
        "12:30",
        "-1:20:30",
        "190:20:30.15",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "2001-12-14 21:59:43.10 -5",
        "2001-12-14 21:59:43.10",
        "2001-1-1 1:00:00Z",
        "2002-12-14 21:59:43Z",
        "0x1F",
        "0b1010",
        "0b1_0",
        "017",
        "0_7",
        "1_000",
        "+1_000",
        "-0",
        "0",
        "42",
        "1e3",
        "1.",
        ".5",
        "1.5",
        "6.8523015e+5",
        "685_230.15",
        "-.inf",
        "+.INF",
        ".NaN",
        ".nan",
        "0o17",
        long_stamp.as_str(),
        longer_stamp.as_str(),
    ];
    let ordinary = [
        "pty:golden",
        "target-session:me",
        "fix bug",
        "y",
        "n",
        "yes please",
        "onion",
        "12:60",
        "2001-12-1",
        "2001-12-14 21:59",
        "1e+3",
        "1.2.3",
        "inf",
        "x: y",
        "- x",
        "#x",
        "a #b",
        "café ☕",
        "tab\there",
        "2001-12-14\t21:59:43",
        "yes\n",
        "line one\nline two",
        " yes",
        "yes ",
        "'yes'",
        "\"no\"",
        "0123",
        "00",
        "1:2:3:",
        long_word.as_str(),
    ];
    let records = special
        .iter()
        .chain(ordinary.iter())
        .map(|s| everywhere(s))
        .collect();
    let (wrong, requoted) = differential(records);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The seed writes these plain; each is requoted, nothing ordinary is.
    for s in [
        "yes",
        "NO",
        "on",
        "12:30",
        "2001-12-14",
        "<<",
        "=",
        "1_000",
        "0_7",
    ] {
        assert!(
            requoted.iter().any(|r| r == s),
            "{s:?} kept the seed's bytes"
        );
    }
    for s in ordinary {
        assert!(!requoted.iter().any(|r| r == s), "{s:?} was requoted");
    }
}

#[test]
fn of_every_short_number_like_holder_only_those_pyyaml_misreads_change() {
    let Some(()) = python_with_yaml() else { return };
    let alphabet = [
        "0", "1", "5", "7", "9", ":", ".", "_", "-", "+", "x", "b", "e", "E",
    ];
    let mut holders: Vec<String> = alphabet.iter().map(|s| s.to_string()).collect();
    for _ in 0..2 {
        let longer: Vec<String> = holders
            .iter()
            .filter(|h| h.len() == holders.last().map_or(0, String::len))
            .flat_map(|h| alphabet.iter().map(move |c| format!("{h}{c}")))
            .collect();
        holders.extend(longer);
    }
    let records = holders.iter().map(|h| holder_only(h)).collect();
    let (wrong, requoted) = differential(records);
    assert!(
        wrong.is_empty(),
        "{} of {}:\n{}",
        wrong.len(),
        holders.len(),
        wrong.join("\n")
    );
    assert!(
        requoted.len() > 100,
        "only {} holders requoted",
        requoted.len()
    );
}
