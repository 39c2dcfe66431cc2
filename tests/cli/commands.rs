//! The CLI as scripts see it: the real binary, a temp root, the JSON shapes
//! and exit statuses of the contract.

use crate::common::{cannot_run, claimtop, dead_holder_yaml, BIN};
use claimtop::claims::liveness::hostname;
use claimtop::claims::mutex;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use tempfile::TempDir;

/// A claims root plus a separate fake `$HOME`, so nothing ever touches the
/// real one.
struct Sandbox {
    root: TempDir,
    home: TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            root: TempDir::new().expect("root"),
            home: TempDir::new().expect("home"),
        }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn claims_dir(&self) -> PathBuf {
        self.root().join(".fno/claims")
    }

    fn lockfile(&self, encoded: &str) -> PathBuf {
        self.claims_dir().join(format!("{encoded}.lock"))
    }

    fn events_file(&self) -> PathBuf {
        self.root().join(".fno/events.jsonl")
    }

    /// The binary with a clean environment: no claims root but the sandbox's.
    fn bare(&self) -> Command {
        claimtop(self.home.path())
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut c = self.bare();
        c.arg("--root").arg(self.root()).args(args);
        c.output().expect("run claimtop")
    }

    /// Run with `--json`; the exit status and the one document on stdout.
    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        (code(&out), one_document(&out))
    }

    fn write_lock(&self, encoded: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(self.claims_dir()).expect("claims dir");
        let p = self.lockfile(encoded);
        std::fs::write(&p, text).expect("write lockfile");
        p
    }

    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.events_file())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("event line"))
            .collect()
    }

    fn claim_files(&self) -> Vec<String> {
        std::fs::read_dir(self.claims_dir())
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not signalled")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// stdout must be exactly one JSON document.
fn one_document(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {:?}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    })
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn acquire_fresh_succeeds_and_prints_the_record_as_the_lockfile_maps_it() {
    let s = Sandbox::new();
    let (rc, v) = s.json(&["acquire", "node:x", "--holder", "a", "--reason", "fix"]);
    assert_eq!(rc, 0);
    assert_eq!(v["outcome"], "acquired");
    let rec = &v["record"];
    assert_eq!(rec["key"], "node:x");
    assert_eq!(rec["holder"], "a");
    assert_eq!(rec["reason"], "fix");
    // A PID-bound claim: expires_at omitted, never null.
    assert!(rec.get("expires_at").is_none(), "{rec}");
    assert_eq!(
        &keys(rec)[..6],
        [
            "schema_version",
            "key",
            "holder",
            "acquired_at",
            "pid",
            "host"
        ]
    );
    // Bound to the caller (this test), not to the short-lived claimtop.
    assert_eq!(rec["pid"], json!(std::process::id()));
    assert!(s.lockfile("node%3Ax").is_file());
}

#[test]
fn a_second_holder_is_told_who_holds_the_key_and_exits_3() {
    let s = Sandbox::new();
    assert_eq!(s.json(&["acquire", "k", "--holder", "a"]).0, 0);
    let (rc, v) = s.json(&["acquire", "k", "--holder", "b", "--ttl", "1h"]);
    assert_eq!(rc, 3);
    assert_eq!(v["outcome"], "held_by_other");
    assert_eq!(v["holder"], "a");
    assert_eq!(v["pid"], json!(std::process::id()));
    assert_eq!(v["host"], json!(hostname()));
}

#[test]
fn the_same_holder_reacquires_and_replaces_metadata() {
    let s = Sandbox::new();
    let first = s.json(&["acquire", "k", "--holder", "a", "--metadata", r#"{"a":1}"#]);
    assert_eq!(first.0, 0);
    let (rc, v) = s.json(&[
        "acquire",
        "k",
        "--holder",
        "a",
        "--ttl",
        "30m",
        "--metadata",
        r#"{"b":[true]}"#,
    ]);
    assert_eq!(rc, 0);
    assert_eq!(v["kind"], "reacquired");
    assert_eq!(v["record"]["metadata"], json!({"b": [true]}));
    assert!(v["record"]["expires_at"].is_i64());
    let types: Vec<_> = s.events().iter().map(|e| e["type"].clone()).collect();
    assert_eq!(
        types,
        [
            json!("claim_acquired"),
            json!("claim_idempotent_reacquired")
        ]
    );
}

#[test]
fn release_by_another_holder_leaves_the_claim_and_still_exits_0() {
    let s = Sandbox::new();
    s.json(&["acquire", "k", "--holder", "a"]);
    let (rc, v) = s.json(&["release", "k", "--holder", "b"]);
    assert_eq!(
        (rc, v["outcome"].clone(), v["key"].clone()),
        (0, json!("not_held"), json!("k"))
    );
    assert!(s.lockfile("k").exists());

    let (rc, v) = s.json(&["release", "k", "--holder", "a"]);
    assert_eq!((rc, v["outcome"].clone()), (0, json!("released")));
    assert!(!s.lockfile("k").exists());

    let (rc, v) = s.json(&["release", "k", "--holder", "a"]);
    assert_eq!((rc, v["outcome"].clone()), (0, json!("absent")));
    let released = s
        .events()
        .iter()
        .filter(|e| e["type"] == "claim_released")
        .count();
    assert_eq!(released, 1, "a release that does nothing writes no event");
}

#[test]
fn release_leaves_a_corrupted_file_in_place() {
    let s = Sandbox::new();
    let p = s.write_lock("k", "{{{{ not yaml");
    let (rc, v) = s.json(&["release", "k", "--holder", "a"]);
    assert_eq!((rc, v["outcome"].clone()), (0, json!("corrupted_left")));
    assert!(p.exists());
}

#[test]
fn renew_extends_a_ttl_claim_and_declines_a_pid_claim_with_exit_3() {
    let s = Sandbox::new();
    s.json(&["acquire", "ttl", "--holder", "a", "--ttl", "2m"]);
    s.json(&["acquire", "pid", "--holder", "a"]);

    let (rc, v) = s.json(&["renew", "ttl", "--holder", "a", "--ttl", "1h"]);
    assert_eq!(rc, 0);
    assert_eq!(
        (v["renewed"].clone(), v["key"].clone()),
        (json!(true), json!("ttl"))
    );
    let (_, st) = s.json(&["status", "ttl"]);
    let rec = &st["record"];
    let window = rec["expires_at"].as_i64().unwrap() - rec["acquired_at"].as_i64().unwrap();
    assert!(window >= 3_600_000, "renewed window {window}");

    let (rc, v) = s.json(&["renew", "pid", "--holder", "a", "--ttl", "1h"]);
    assert_eq!(rc, 3);
    assert_eq!(
        (v["renewed"].clone(), v["key"].clone()),
        (json!(false), json!("pid"))
    );
    assert!(v["why"].as_str().unwrap().contains("PID"), "{v}");

    let renewed: Vec<_> = s
        .events()
        .into_iter()
        .filter(|e| e["type"] == "claim_renewed")
        .collect();
    assert_eq!(renewed.len(), 1);
}

#[test]
fn renew_with_operator_records_who_renewed_on_the_holders_behalf() {
    let s = Sandbox::new();
    s.json(&["acquire", "k", "--holder", "a", "--ttl", "10m"]);
    let (rc, _) = s.json(&["renew", "k", "--holder", "a", "--ttl", "10m"]);
    assert_eq!(rc, 0);
    let args = [
        "renew",
        "k",
        "--holder",
        "a",
        "--ttl",
        "10m",
        "--operator",
        "ops:alice",
    ];
    let (rc, v) = s.json(&args);
    assert_eq!((rc, v["renewed"].clone()), (0, json!(true)));
    let renewed: Vec<_> = s
        .events()
        .into_iter()
        .filter(|e| e["type"] == "claim_renewed")
        .collect();
    assert_eq!(renewed.len(), 2);
    assert!(
        renewed[0]["data"].get("operator").is_none(),
        "the holder's own renewal has no operator field: {}",
        renewed[0]
    );
    assert_eq!(renewed[1]["data"]["operator"], "ops:alice");
}

#[test]
fn renew_by_another_holder_is_a_benign_no_op() {
    let s = Sandbox::new();
    s.json(&["acquire", "k", "--holder", "a", "--ttl", "1h"]);
    let (rc, v) = s.json(&["renew", "k", "--holder", "b", "--ttl", "1h"]);
    assert_eq!((rc, v["renewed"].clone()), (3, json!(false)));
}

#[test]
fn status_reports_free_live_stale_and_corrupted_with_the_contract_fields() {
    let s = Sandbox::new();
    let (rc, free) = s.json(&["status", "nothing"]);
    assert_eq!(rc, 0);
    assert_eq!(
        keys(&free),
        ["key", "file", "state", "record", "why", "error", "hazards"]
    );
    assert_eq!(free["hazards"], json!([]));
    assert_eq!(free["state"], "free");
    assert_eq!(free["record"], Value::Null);
    assert_eq!(free["error"], Value::Null);

    s.json(&["acquire", "live", "--holder", "a"]);
    let (_, live) = s.json(&["status", "live"]);
    assert_eq!(live["state"], "live");
    assert_eq!(live["record"]["holder"], "a");
    assert!(live["file"]
        .as_str()
        .unwrap()
        .ends_with(".fno/claims/live.lock"));

    s.write_lock("stale", &dead_holder_yaml("stale", "gone"));
    let (_, stale) = s.json(&["status", "stale"]);
    assert_eq!(stale["state"], "stale");
    assert!(stale["why"].as_str().unwrap().contains("gone"), "{stale}");

    s.write_lock(
        "bad",
        "schema_version: 9\nkey: bad\nholder: h\nacquired_at: 1\npid: 1\nhost: x\n",
    );
    let (_, bad) = s.json(&["status", "bad"]);
    assert_eq!(bad["state"], "corrupted");
    assert_eq!(bad["record"], Value::Null);
    assert!(
        bad["error"].as_str().unwrap().contains("schema_version"),
        "{bad}"
    );
    assert_eq!(bad["hazards"], json!(["corrupted_claim"]));
}

#[test]
fn list_counts_sorts_by_key_and_reports_hazards_but_never_lists_them_as_claims() {
    let s = Sandbox::new();
    s.json(&["acquire", "b-live", "--holder", "a"]);
    s.write_lock("c-stale", &dead_holder_yaml("c-stale", "gone"));
    s.write_lock("a-corrupt", "- not\n- a mapping\n");
    let corpse = s.claims_dir().join("b-live.lock.recovery.d");
    std::fs::create_dir(&corpse).unwrap();
    mutex::backdate(&corpse, 600).unwrap();
    let litter = s.claims_dir().join(".claim-tmp-1234-5-6");
    std::fs::write(&litter, "half").unwrap();
    mutex::backdate(&litter, 600).unwrap();
    std::fs::create_dir_all(s.claims_dir().join(".expired")).unwrap();

    let (rc, v) = s.json(&["list"]);
    assert_eq!(rc, 0);
    assert_eq!(keys(&v), ["root", "claims", "counts", "hazards"]);
    assert_eq!(v["root"], json!(s.root().to_string_lossy()));
    let listed: Vec<_> = v["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["key"].as_str().unwrap(), c["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [
            ("a-corrupt", "corrupted"),
            ("b-live", "live"),
            ("c-stale", "stale")
        ]
    );
    assert_eq!(
        v["counts"],
        json!({"live": 1, "suspect": 0, "stale": 1, "corrupted": 1, "unreadable": 0})
    );
    let hazards: Vec<_> = v["hazards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            assert_eq!(keys(h), ["kind", "path", "detail"]);
            h["kind"].as_str().unwrap()
        })
        .collect();
    for kind in ["stale_mutex", "temp_litter", "corrupted_claim"] {
        assert!(hazards.contains(&kind), "{kind} missing from {hazards:?}");
    }
}

#[test]
fn list_json_survives_a_lockfile_name_that_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let s = Sandbox::new();
    s.json(&["acquire", "ok", "--holder", "a"]);
    let odd = s
        .claims_dir()
        .join(std::ffi::OsStr::from_bytes(b"x\xff.lock"));
    std::fs::write(&odd, "key: x\n").unwrap();
    let (rc, v) = s.json(&["list"]);
    assert_eq!(rc, 0);
    assert_eq!(v["claims"].as_array().map(Vec::len), Some(1));
    let kinds: Vec<_> = v["hazards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["unreadable"]);
}

#[test]
fn list_text_escapes_a_hostile_holder() {
    let s = Sandbox::new();
    let out = s.run(&["acquire", "k", "--holder", "evil\u{1b}]0;pwned\u{7}"]);
    assert_eq!(code(&out), 0);
    for out in [
        out,
        s.run(&["list"]),
        s.run(&["status", "k"]),
        s.run(&["events"]),
    ] {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        assert!(text.contains("evil\\e]0;pwned\\x07"), "{text:?}");
    }
}

#[test]
fn force_release_archives_a_corrupted_claim_and_audits_who_did_it() {
    let s = Sandbox::new();
    let p = s.write_lock("node%3Abad", "garbage: [");
    let (rc, v) = s.json(&["force-release", "node:bad", "--operator", "ops@desk"]);
    assert_eq!(rc, 0, "{v}");
    assert_eq!(v["outcome"], "archived");
    assert_eq!(v["previous"], Value::Null);
    let archived = PathBuf::from(v["archived_to"].as_str().unwrap());
    assert!(
        archived.starts_with(s.claims_dir().join(".expired")),
        "{archived:?}"
    );
    assert!(archived.is_file());
    assert!(!p.exists());

    let ev = s
        .events()
        .into_iter()
        .find(|e| e["type"] == "claim_force_released")
        .expect("claim_force_released event");
    assert_eq!(ev["source"], "fno-loop");
    assert_eq!(ev["data"]["key"], "node:bad");
    assert_eq!(ev["data"]["holder"], Value::Null);
    assert_eq!(ev["data"]["operator"], "ops@desk");
    assert_eq!(ev["data"]["previous_state"], "corrupted");
}

#[test]
fn force_release_operator_defaults_to_user_at_host() {
    let s = Sandbox::new();
    s.write_lock("k", &dead_holder_yaml("k", "gone"));
    let (rc, v) = s.json(&["force-release", "k"]);
    assert_eq!(rc, 0);
    assert_eq!(v["previous"]["holder"], "gone");
    assert_eq!(v["previous_state"], "stale");
    let ev = s.events().pop().expect("event");
    assert_eq!(
        ev["data"]["operator"],
        json!(format!("tester@{}", hostname()))
    );
}

#[test]
fn force_release_refuses_a_live_claim_unless_allowed() {
    let s = Sandbox::new();
    s.json(&["acquire", "k", "--holder", "a"]);
    let (rc, v) = s.json(&["force-release", "k"]);
    assert_eq!(rc, 3);
    assert_eq!(v["outcome"], "refused");
    assert!(v["reason"].as_str().unwrap().contains("live"), "{v}");
    assert!(s.lockfile("k").exists());

    let (rc, v) = s.json(&["force-release", "k", "--allow-live"]);
    assert_eq!((rc, v["outcome"].clone()), (0, json!("archived")));
    assert_eq!(v["previous"]["holder"], "a");
    assert!(!s.lockfile("k").exists());
}

#[test]
fn force_release_refuses_when_the_claim_is_no_longer_the_one_expected() {
    let s = Sandbox::new();
    s.write_lock("k", &dead_holder_yaml("k", "gone"));
    let (rc, v) = s.json(&["force-release", "k", "--expect-holder", "someone-else"]);
    assert_eq!((rc, v["outcome"].clone()), (3, json!("refused")));
    let (rc, _) = s.json(&["force-release", "k", "--expect-acquired-at", "5"]);
    assert_eq!(rc, 3);
    assert!(s.lockfile("k").exists());
    let (rc, _) = s.json(&[
        "force-release",
        "k",
        "--expect-holder",
        "gone",
        "--expect-acquired-at",
        "1700000000000",
    ]);
    assert_eq!(rc, 0);
}

#[test]
fn force_release_of_a_free_key_is_refused() {
    let s = Sandbox::new();
    let (rc, v) = s.json(&["force-release", "nothing"]);
    assert_eq!((rc, v["outcome"].clone()), (3, json!("refused")));
}

#[test]
fn doctor_is_clean_on_an_empty_root_and_exits_3_on_hazards_without_changing_them() {
    let s = Sandbox::new();
    let (rc, v) = s.json(&["doctor"]);
    assert_eq!(rc, 0);
    assert_eq!(
        v,
        json!({"root": s.root().to_string_lossy(), "hazards": []})
    );

    std::fs::create_dir_all(s.claims_dir()).unwrap();
    let corpse = s.claims_dir().join("k.lock.recovery.d");
    std::fs::create_dir(&corpse).unwrap();
    mutex::backdate(&corpse, 600).unwrap();
    let (rc, v) = s.json(&["doctor"]);
    assert_eq!(rc, 3);
    assert_eq!(v["hazards"][0]["kind"], "stale_mutex");
    assert!(corpse.exists(), "doctor without --fix changes nothing");

    let (rc, v) = s.json(&["doctor", "--fix"]);
    assert_eq!(rc, 0, "{v}");
    assert_eq!(v["hazards"], json!([]));
    assert_eq!(v["fixed"][0]["fixed"], json!(true));
    assert!(!corpse.exists());
}

#[test]
fn doctor_fix_leaves_a_corrupted_claim_and_still_exits_3() {
    let s = Sandbox::new();
    let p = s.write_lock("k", "not: [a claim");
    let (rc, v) = s.json(&["doctor", "--fix"]);
    assert_eq!(rc, 3);
    assert_eq!(v["hazards"][0]["kind"], "corrupted_claim");
    assert!(p.exists());
}

/// A log with three claim events, one of another key, and a garbage line.
fn seeded_log(s: &Sandbox) {
    s.json(&["acquire", "a", "--holder", "h"]);
    s.json(&["acquire", "b", "--holder", "h"]);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(s.events_file())
        .unwrap();
    f.write_all(b"this is not json\n").unwrap();
    drop(f);
    s.json(&["release", "a", "--holder", "h"]);
}

#[test]
fn events_json_prints_each_event_as_it_stands_and_counts_garbage_on_stderr() {
    let s = Sandbox::new();
    seeded_log(&s);
    let out = s.run(&["events", "--json"]);
    assert_eq!(code(&out), 0);
    let raw = std::fs::read_to_string(s.events_file()).unwrap();
    let expected: Vec<&str> = raw.lines().filter(|l| l.starts_with('{')).collect();
    let got: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(got, expected);
    assert!(
        stderr(&out).contains("skipped 1 unparseable"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn events_filter_by_key_and_type_then_limit_to_the_last_n() {
    let s = Sandbox::new();
    seeded_log(&s);
    let lines = |args: &[&str]| -> Vec<Value> {
        let out = s.run(args);
        assert_eq!(code(&out), 0);
        std::str::from_utf8(&out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let last = lines(&["events", "--json", "-n", "1"]);
    assert_eq!(last.len(), 1);
    assert_eq!(last[0]["type"], "claim_released");

    let a = lines(&["events", "--json", "--key", "a"]);
    let types: Vec<_> = a.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["claim_acquired", "claim_released"]);

    let acq = lines(&["events", "--json", "--type", "claim_acquired", "-n", "1"]);
    assert_eq!(acq.len(), 1);
    assert_eq!(acq[0]["data"]["key"], "b");

    let text = s.run(&["events", "--key", "b"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains("claim_acquired key=b holder=h"), "{text}");
}

#[test]
fn events_on_a_missing_log_print_nothing_and_succeed() {
    let s = Sandbox::new();
    let out = s.run(&["events", "--json"]);
    assert_eq!(code(&out), 0);
    assert!(out.stdout.is_empty());
}

#[test]
fn events_end_quietly_when_the_reader_goes_away() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.root().join(".fno")).unwrap();
    let line = r#"{"ts":"2026-01-01T00:00:00Z","type":"claim_acquired","source":"fno-loop","data":{"key":"k"}}"#;
    let mut log = String::new();
    for _ in 0..20_000 {
        log.push_str(line);
        log.push('\n');
    }
    std::fs::write(s.events_file(), log).unwrap();
    let mut child = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .args(["events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the rest of the output meets a closed pipe.
    let out = child.wait_with_output().unwrap();
    assert!(first.contains("claim_acquired"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn events_follow_prints_new_events_and_stops_on_sigint() {
    let s = Sandbox::new();
    s.json(&["acquire", "first", "--holder", "h"]);
    let mut child = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .args(["events", "--follow", "--json", "--type", "claim_acquired"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Generous bounds: they only keep a broken follower from hanging the suite.
    let wait = std::time::Duration::from_secs(30);
    let first: Value = serde_json::from_str(&rx.recv_timeout(wait).unwrap()).unwrap();
    assert_eq!(first["data"]["key"], "first");
    s.json(&["release", "first", "--holder", "h"]);
    s.json(&["acquire", "second", "--holder", "h"]);
    let second: Value = serde_json::from_str(&rx.recv_timeout(wait).unwrap()).unwrap();
    assert_eq!(
        second["data"]["key"], "second",
        "the release was filtered out"
    );
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn usage_errors_exit_2_and_name_the_bad_argument() {
    let s = Sandbox::new();
    for (args, named) in [
        (
            &["acquire", "k", "--holder", "a", "--ttl", "abc"][..],
            "--ttl",
        ),
        (
            &["acquire", "k", "--holder", "a", "--ttl", "0"][..],
            "--ttl",
        ),
        (
            &["acquire", "k", "--holder", "a", "--ttl", "-5m"][..],
            "--ttl",
        ),
        (&["renew", "k", "--holder", "a", "--ttl", "1d"][..], "--ttl"),
        (
            &["acquire", "k", "--holder", "a", "--metadata", "[1]"][..],
            "--metadata",
        ),
        (
            &["acquire", "k", "--holder", "a", "--metadata", "{"][..],
            "--metadata",
        ),
        (&["acquire", "k"][..], "--holder"),
        (&["release", "k"][..], "--holder"),
        (&["renew", "k", "--holder", "a"][..], "--ttl"),
        (
            &["acquire", "k", "--holder", "a", "--pid", "x"][..],
            "--pid",
        ),
        (
            &["force-release", "k", "--expect-acquired-at", "soon"][..],
            "--expect-acquired-at",
        ),
        (&["events", "-n", "many"][..], "-n"),
        (&["--read-only", "list"][..], "--read-only"),
    ] {
        let out = s.run(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(named), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(s.claim_files().is_empty());
    assert!(!s.events_file().exists());
}

#[test]
fn protocol_refusals_exit_1_and_write_nothing() {
    let s = Sandbox::new();
    let long_key = "k".repeat(300);
    let spaced_key = " ".repeat(100);
    for args in [
        &["acquire", "k", "--holder", "a", "--ttl", "30s"][..],
        &["acquire", "k", "--holder", "a", "--ttl", "25h"][..],
        &["acquire", &long_key, "--holder", "a"][..],
        &["acquire", &spaced_key, "--holder", "a"][..],
        &["acquire", "", "--holder", "a"][..],
        &["acquire", "k", "--holder", ""][..],
        &["renew", "k", "--holder", "a", "--ttl", "30s"][..],
        &["status", &long_key][..],
        &["force-release", &long_key][..],
        &["release", "", "--holder", "a"][..],
    ] {
        let (rc, v) = s.json(args);
        assert_eq!(rc, 1, "{args:?}: {v}");
        assert_eq!(v["outcome"], "error", "{args:?}");
        assert!(!v["error"].as_str().unwrap().is_empty());
    }
    assert!(s.claim_files().is_empty(), "{:?}", s.claim_files());
    assert!(!s.events_file().exists());
}

#[test]
fn text_errors_go_to_stderr_with_exit_1() {
    let s = Sandbox::new();
    let out = s.run(&["acquire", "k", "--holder", "a", "--ttl", "30s"]);
    assert_eq!(code(&out), 1);
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("out of range"), "{}", stderr(&out));
}

#[test]
fn an_empty_fno_claims_root_falls_back_to_home() {
    let s = Sandbox::new();
    let out = s
        .bare()
        .env("FNO_CLAIMS_ROOT", "")
        .args(["acquire", "k", "--holder", "a", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(s.home.path().join(".fno/claims/k.lock").is_file());
    assert!(s.home.path().join(".fno/events.jsonl").is_file());
}

#[test]
fn fno_claims_root_wins_over_home_and_root_wins_over_both() {
    let s = Sandbox::new();
    let other = TempDir::new().unwrap();
    let out = s
        .bare()
        .env("FNO_CLAIMS_ROOT", other.path())
        .args(["acquire", "k", "--holder", "a"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    assert!(other.path().join(".fno/claims/k.lock").is_file());
    assert!(!s.home.path().join(".fno").exists());

    let out = s
        .bare()
        .env("FNO_CLAIMS_ROOT", other.path())
        .args(["--root"])
        .arg(s.root())
        .args(["status", "k", "--json"])
        .output()
        .unwrap();
    assert_eq!(one_document(&out)["state"], "free");
}

#[test]
fn no_root_at_all_is_a_usage_error() {
    let s = Sandbox::new();
    let out = s
        .bare()
        .env("HOME", "")
        .args(["list", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--root"), "{}", stderr(&out));
}

#[test]
fn events_dir_moves_the_audit_log_only() {
    let s = Sandbox::new();
    let ev = TempDir::new().unwrap();
    let out = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .arg("--events-dir")
        .arg(ev.path())
        .args(["acquire", "k", "--holder", "a"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    assert!(s.lockfile("k").is_file());
    assert!(ev.path().join(".fno/events.jsonl").is_file());
    assert!(!s.events_file().exists());
}

#[test]
fn completions_are_generated_for_bash() {
    let out = Command::new(BIN)
        .args(["completions", "bash"])
        .env_remove("HOME")
        .env_remove("FNO_CLAIMS_ROOT")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(script.contains("force-release"));
}

#[test]
fn every_subcommand_prints_one_json_document() {
    let s = Sandbox::new();
    for args in [
        &["list"][..],
        &["status", "k"][..],
        &["acquire", "k", "--holder", "a", "--ttl", "1h"][..],
        &["renew", "k", "--holder", "a", "--ttl", "1h"][..],
        &["release", "k", "--holder", "a"][..],
        &["force-release", "k"][..],
        &["doctor"][..],
    ] {
        // `json` panics unless stdout is exactly one document.
        let (rc, v) = s.json(args);
        assert!(rc == 0 || rc == 3, "{args:?} {rc} {v}");
    }
}

#[test]
fn usage_errors_under_json_print_one_usage_error_document() {
    let s = Sandbox::new();
    for (args, named) in [
        (
            &["acquire", "k", "--holder", "a", "--ttl", "0"][..],
            "--ttl",
        ),
        (&["acquire", "k"][..], "--holder"),
        (&["force-release", "k", "--operator", ""][..], "--operator"),
        (&["list", "--bogus"][..], "--bogus"),
    ] {
        let (rc, v) = s.json(args);
        assert_eq!(rc, 2, "{args:?}: {v}");
        assert_eq!(v["outcome"], "usage_error", "{args:?}");
        assert!(
            v["error"].as_str().unwrap().contains(named),
            "{args:?}: {v}"
        );
    }
    let out = s
        .bare()
        .args(["list", "--json"])
        .env_remove("HOME")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert_eq!(one_document(&out)["outcome"], "usage_error");
    assert!(s.claim_files().is_empty());
}

#[test]
fn an_empty_operator_is_refused_and_nothing_is_archived() {
    let s = Sandbox::new();
    let lock = s.write_lock("k", "not: [valid");
    let out = s.run(&["force-release", "k", "--operator", ""]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--operator"), "{}", stderr(&out));
    assert!(lock.exists());
}

#[test]
fn an_acquire_whose_report_cannot_be_written_gives_the_claim_back_and_exits_1() {
    let s = Sandbox::new();
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        cannot_run("no /dev/full on this system");
        return;
    };
    let out = s
        .bare()
        .args(["--root"])
        .arg(s.root())
        .args(["acquire", "k", "--holder", "a", "--json"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("released k again"),
        "{}",
        stderr(&out)
    );
    assert!(!s.lockfile("k").exists(), "the claim was left behind");
    let kinds: Vec<Value> = s.events().iter().map(|e| e["type"].clone()).collect();
    assert_eq!(kinds, [json!("claim_acquired"), json!("claim_released")]);
}

#[test]
fn a_release_whose_report_cannot_be_written_exits_1_and_says_what_stands() {
    let s = Sandbox::new();
    assert_eq!(
        code(&s.run(&["acquire", "k", "--holder", "a", "--ttl", "1h"])),
        0
    );
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        cannot_run("no /dev/full on this system");
        return;
    };
    let out = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .args(["release", "k", "--holder", "a"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("released k, and that cannot be undone"),
        "{}",
        stderr(&out)
    );
}

/// Run `claimtop acquire` in the background of a shell that exits at once
/// (so it is adopted by init or a subreaper), and return the orphan's stderr
/// once it has finished. The sleep makes the adoption come first: a claimtop
/// that started while the shell still lived would bind to the shell's pid,
/// which is dead soon after, and that claim goes stale as it should.
fn orphaned_acquire(s: &Sandbox, extra: &str) -> String {
    let log = s.home.path().join("orphan.log");
    let done = s.home.path().join("orphan.done");
    let script = format!(
        "(sleep 0.3; exec {BIN} --root '{}' acquire k --holder a {extra} 2>'{}') & echo $! >'{}'; exit 0",
        s.root().display(),
        log.display(),
        done.display()
    );
    let status = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env("HOME", s.home.path())
        .env_remove("FNO_CLAIMS_ROOT")
        .status()
        .unwrap();
    assert!(status.success());
    let pid: i32 = std::fs::read_to_string(&done)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The orphan is not our child: wait for its pid to disappear.
    for _ in 0..500 {
        // SAFETY: signal 0 only probes for existence.
        if unsafe { libc::kill(pid, 0) } != 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::fs::read_to_string(&log).unwrap_or_default()
}

#[test]
fn an_orphaned_acquire_without_pid_or_ttl_refuses_and_writes_nothing() {
    let s = Sandbox::new();
    let err = orphaned_acquire(&s, "");
    assert!(err.contains("--pid") && err.contains("--ttl"), "{err:?}");
    assert!(
        !s.lockfile("k").exists(),
        "bound to an adopter: {:?}",
        std::fs::read_to_string(s.lockfile("k"))
    );
    assert!(!s.events_file().exists());
}

#[test]
fn an_orphaned_acquire_with_a_ttl_is_never_bound_to_init() {
    let s = Sandbox::new();
    let err = orphaned_acquire(&s, "--ttl 1h");
    let text = std::fs::read_to_string(s.lockfile("k")).unwrap_or_else(|e| panic!("{e}: {err}"));
    let rec = claimtop::claims::ClaimRecord::from_yaml(&text).unwrap();
    assert_ne!(rec.pid, 1, "{text}");
    let (_, v) = s.json(&["status", "k"]);
    assert_eq!(v["state"], "suspect", "the TTL alone protects it: {v}");
}

#[test]
fn the_cli_and_the_dashboard_audit_one_operator_the_same_way() {
    use claimtop::claims::{operator_name, Root};
    use claimtop::dashboard::testing::{ForceOptsShown, Verb};
    let s = Sandbox::new();
    s.write_lock("a", "not: [valid");
    s.write_lock("b", "not: [valid");
    let user = claimtop::claims::operator::user_name().expect("a user name");
    let out = s
        .bare()
        .env("USER", &user)
        .arg("--root")
        .arg(s.root())
        .args(["force-release", "a"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let root = Root {
        root: s.root().to_path_buf(),
        events_dir: Some(s.root().to_path_buf()),
    };
    let op = Verb::ForceRelease {
        key: "b".into(),
        opts: ForceOptsShown {
            operator: "operator:someone@else".into(),
            ..ForceOptsShown::default()
        },
    };
    assert!(claimtop::dashboard::testing::run_op(&root, &op).ok);
    let operators: Vec<Value> = s
        .events()
        .iter()
        .map(|e| e["data"]["operator"].clone())
        .collect();
    assert_eq!(operators, [json!(operator_name()), json!(operator_name())]);
}

/// Make `path` look older than every abandonment rule.
fn backdate(path: &Path) {
    mutex::backdate(path, mutex::STALE_MUTEX_STEAL.as_secs() + 60).expect("backdate");
}

#[test]
fn doctor_fix_removes_only_the_exact_shapes_the_protocol_writes() {
    let s = Sandbox::new();
    let d = s.claims_dir();
    std::fs::create_dir_all(&d).unwrap();
    // What the protocol really leaves behind.
    let real_temp = d.join(".claim-tmp-42-1700000000000000000-0");
    let real_replace = d.join("k.lock.tmp.42.0");
    let real_mutex = d.join("k.lock.recovery.d");
    let real_reap = d.join("k.lock.recovery.d.reap.42.0");
    std::fs::write(&real_temp, "key: k\n").unwrap();
    std::fs::write(&real_replace, "key: k\n").unwrap();
    for dir in [&real_mutex, &real_reap] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(dir.join("owner"), "host:1:2").unwrap();
        backdate(dir);
    }
    // Look-alikes holding someone's data.
    let lookalikes = [
        d.join("x.recovery.d/important/data"),
        d.join("k2.lock.recovery.d/notes.txt"),
        d.join("backup.reap.2024.01/file"),
        d.join(".claim-tmp-data/sub/file"),
        d.join("k3.lock.recovery.d.reap.1.2/keep"),
    ];
    for f in &lookalikes {
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, "precious").unwrap();
        backdate(f.parent().unwrap());
    }
    let bak = d.join("k.lock.tmp.1.0.bak");
    std::fs::write(&bak, "precious").unwrap();
    for f in [&real_temp, &real_replace, &bak] {
        backdate(f);
    }

    let (rc, v) = s.json(&["doctor", "--fix"]);
    assert_eq!(rc, 3, "look-alikes remain as hazards: {v}");
    for gone in [&real_temp, &real_replace, &real_mutex, &real_reap] {
        assert!(
            std::fs::symlink_metadata(gone).is_err(),
            "{} survived: {v}",
            gone.display()
        );
    }
    for kept in lookalikes.iter().chain([&bak]) {
        assert_eq!(
            std::fs::read_to_string(kept).ok().as_deref(),
            Some("precious"),
            "{} was removed: {v}",
            kept.display()
        );
    }
    let left: Vec<&Value> = v["fixed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["fixed"] == false)
        .collect();
    assert!(
        left.iter()
            .all(|f| f["action"].as_str().unwrap().contains("human")),
        "{left:?}"
    );
}

#[test]
fn doctor_reports_an_archive_dir_that_is_not_a_directory() {
    for plant in ["symlink", "file"] {
        let s = Sandbox::new();
        std::fs::create_dir_all(s.claims_dir()).unwrap();
        let expired = s.claims_dir().join(".expired");
        match plant {
            "symlink" => std::os::unix::fs::symlink(s.home.path(), &expired).unwrap(),
            _ => std::fs::write(&expired, "").unwrap(),
        }
        let (rc, v) = s.json(&["doctor"]);
        assert_eq!(rc, 3, "{v}");
        let h = &v["hazards"][0];
        assert_eq!(h["kind"], "archive_dir_broken", "{v}");
        assert!(h["detail"].as_str().unwrap().contains(plant), "{v}");
        // --fix leaves it for a human: moving it could lose what it holds.
        let (rc, _) = s.json(&["doctor", "--fix"]);
        assert_eq!(rc, 3);
        assert!(std::fs::symlink_metadata(&expired).is_ok());
    }
}

#[test]
fn a_key_mismatch_names_the_key_found_in_the_record() {
    let s = Sandbox::new();
    let text = dead_holder_yaml("node:y", "a");
    s.write_lock("node%3ax", &text);
    let (_, v) = s.json(&["doctor"]);
    let details: Vec<&str> = v["hazards"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["kind"] == "key_mismatch")
        .map(|h| h["detail"].as_str().unwrap())
        .collect();
    assert_eq!(details.len(), 1, "{v}");
    assert!(
        details[0].contains("record claims key \"node:y\""),
        "{}",
        details[0]
    );
}

/// Run claimtop with stdout to /dev/null and return the largest peak
/// resident size (VmHWM, in MiB) seen while it ran. Polled from /proc: the
/// rusage of a child forked from this big test process counts the pages it
/// shared before exec, and VmHWM starts afresh at exec.
fn peak_rss_mib(s: &Sandbox, args: &[&str]) -> u64 {
    let mut child = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .args(args)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    loop {
        // Read before checking for exit, so the last sample is the latest.
        let hwm = std::fs::read_to_string(&status)
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
            .unwrap_or(0);
        peak_kib = peak_kib.max(hwm);
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success());
            return peak_kib / 1024;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// An events log with one event of `reason_bytes` among short ones, valid
/// objects without a string `type`, and garbage: the events in order.
fn log_with_a_long_line(s: &Sandbox, reason_bytes: usize) -> Vec<String> {
    std::fs::create_dir_all(s.root().join(".fno")).unwrap();
    let first = r#"{"ts":"t1","type":"claim_acquired","source":"fno-loop","data":{"key":"a"}}"#;
    let long = format!(
        r#"{{"ts":"t2","type":"claim_released","source":"fno-loop","data":{{"key":"a","reason":"{}"}}}}"#,
        "r".repeat(reason_bytes)
    );
    let typeless = r#"{"ts":"t3","data":{"key":"b"},"note":"no type field"}"#;
    let odd_type = r#"{"ts":"t4","type":7}"#;
    let last = r#"{"ts":"t5","type":"claim_acquired","source":"fno-loop","data":{"key":"c"}}"#;
    let log = [first, &long, typeless, "not json", "[1,2]", odd_type, last].join("\n") + "\n";
    std::fs::write(s.events_file(), &log).unwrap();
    [first, &long, typeless, odd_type, last]
        .map(String::from)
        .to_vec()
}

#[test]
fn events_print_every_object_whole_however_long_and_skip_only_what_does_not_parse() {
    let s = Sandbox::new();
    // Over the 1 MiB in-memory limit, so it is streamed from the file.
    let want = log_with_a_long_line(&s, 2 * 1024 * 1024);
    let out = s.run(&["events", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(got.len(), want.len());
    assert!(got.iter().zip(&want).all(|(g, w)| g == w), "a line changed");
    assert!(
        stderr(&out).contains("skipped 2 unparseable"),
        "{}",
        stderr(&out)
    );

    let out = s.run(&["events", "--json", "--key", "a", "-n", "1"]);
    assert_eq!(out.stdout, format!("{}\n", want[1]).into_bytes());

    let out = s.run(&["events", "--type", "claim_released"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("t2 claim_released key=a"), "{text:.200}");
    assert!(text.contains("too long to show as text"), "{text:.200}");
    assert_eq!(text.lines().count(), 1);
}

#[test]
fn a_line_over_32_mib_no_longer_hides_the_lines_before_it_and_memory_stays_flat() {
    let s = Sandbox::new();
    let want = log_with_a_long_line(&s, 40 * 1024 * 1024);
    let out = s.run(&["events", "--json", "-n", "7"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(got.len(), want.len(), "{}", stderr(&out));
    assert!(got.iter().zip(&want).all(|(g, w)| g == w), "a line changed");
    let mib = peak_rss_mib(&s, &["events", "--json", "-n", "7"]);
    assert!(mib < 24, "the 40 MiB line was held: {mib} MiB resident");
}

#[test]
fn events_json_prints_claimtops_own_event_with_a_long_reason() {
    let s = Sandbox::new();
    // Over the old 64 KiB line cap, under the 128 KiB limit of one argv word.
    let reason = "why ".repeat(25_000);
    let (rc, _) = s.json(&["acquire", "k", "--holder", "h", "--reason", &reason]);
    assert_eq!(rc, 0);
    let out = s.run(&["events", "--json"]);
    assert!(out.status.success());
    let raw = std::fs::read(s.events_file()).unwrap();
    assert_eq!(out.stdout, raw, "every line, byte for byte");
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn events_follow_prints_a_long_line_whole() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.root().join(".fno")).unwrap();
    std::fs::write(s.events_file(), "").unwrap();
    let mut child = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .args(["events", "--follow", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let long = format!(
        r#"{{"type":"x","data":{{"reason":"{}"}}}}"#,
        "z".repeat(300_000)
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(s.events_file())
        .unwrap();
    f.write_all(format!("{long}\n").as_bytes()).unwrap();
    let line = reader.join().unwrap().unwrap();
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_eq!(line.trim_end(), long);
}

#[test]
fn a_literal_backslash_escape_and_a_real_escape_look_different_in_text() {
    let s = Sandbox::new();
    for holder in ["job\\e[2J", "job\u{1b}[2J"] {
        let out = s.run(&["acquire", holder, "--holder", holder, "--ttl", "1h"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let out = s.run(&["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("job\\\\e[2J"), "the literal one: {text}");
    assert!(text.contains("job\\e[2J"), "the real ESC, escaped: {text}");
    assert!(!text.contains('\u{1b}'));
}

#[test]
fn a_record_too_big_for_any_reader_is_refused_with_exit_1_and_nothing_written() {
    let s = Sandbox::new();
    // Control characters are written escaped (`\x01`, four bytes each), so
    // these arguments (each under the kernel's 128 KiB per argument) make a
    // record over the 1 MiB read cap.
    let holder = "\u{1}".repeat(130_000);
    let metadata = json!({"blob": "\u{1}".repeat(21_000)}).to_string();
    let args = [
        "acquire",
        "big",
        "--holder",
        &holder,
        "--reason",
        &holder,
        "--metadata",
        &metadata,
        "--ttl",
        "60",
    ];
    let (rc, v) = s.json(&args);
    assert_eq!(rc, 1, "{v}");
    assert_eq!(v["outcome"], "error");
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("larger than 1048576 bytes"), "{error}");
    assert!(s.claim_files().is_empty(), "{:?}", s.claim_files());
    assert!(s.events().is_empty(), "{:?}", s.events());
    // The key stays free: a sane record takes it at once.
    let (rc, v) = s.json(&["acquire", "big", "--holder", "me", "--ttl", "60"]);
    assert_eq!((rc, &v["outcome"]), (0, &json!("acquired")), "{v}");
}

#[test]
fn a_broken_events_log_is_a_hazard_in_doctor_and_list_and_the_verbs_still_work() {
    for plant in ["directory", "FIFO"] {
        let s = Sandbox::new();
        std::fs::create_dir_all(s.root().join(".fno")).unwrap();
        let log = s.events_file();
        match plant {
            "directory" => std::fs::create_dir(&log).unwrap(),
            _ => {
                let c = std::ffi::CString::new(log.to_str().unwrap()).unwrap();
                // SAFETY: a valid NUL-terminated path; mkfifo only makes the node.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            }
        }
        // The claim itself is taken: the log is observability, not the lock.
        let out = s.run(&["acquire", "k", "--holder", "a", "--ttl", "60"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stderr(&out).contains("failed to emit"), "{}", stderr(&out));

        let (rc, v) = s.json(&["doctor"]);
        assert_eq!(rc, 3, "{plant}: {v}");
        let h = &v["hazards"][0];
        assert_eq!(h["kind"], "events_log_broken", "{v}");
        assert_eq!(h["path"], log.to_str().unwrap(), "{v}");
        assert!(h["detail"].as_str().unwrap().contains(plant), "{v}");
        let (rc, v) = s.json(&["list"]);
        assert_eq!(rc, 0);
        assert_eq!(v["hazards"][0]["kind"], "events_log_broken", "{v}");
        let out = s.run(&["doctor"]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("events_log_broken"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        // --fix leaves it for a human: what it holds may be the lost events.
        let (rc, _) = s.json(&["doctor", "--fix"]);
        assert_eq!(rc, 3);
        assert!(std::fs::symlink_metadata(&log).is_ok());
    }
}

#[test]
fn fleet_over_a_file_root_is_a_usage_error_that_names_the_store_flag() {
    let s = Sandbox::new();
    for verb in [&["fleet"][..], &["fleet", "forget", "h"]] {
        let (rc, v) = s.json(verb);
        assert_eq!(rc, 2, "{verb:?}: {v}");
        assert_eq!(v["outcome"], "usage_error");
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.contains("--store etcd://")),
            "{v}"
        );
    }
}

#[test]
fn a_mistyped_root_is_said_on_stderr_and_is_a_root_missing_hazard_while_an_empty_root_stays_quiet()
{
    let s = Sandbox::new();
    let typo = s.root().join("clams");
    let typo_arg = typo.to_string_lossy().into_owned();
    let over_typo = |args: &[&str]| {
        s.bare()
            .arg("--root")
            .arg(&typo_arg)
            .args(args)
            .output()
            .expect("run claimtop")
    };
    for args in [&["list"][..], &["status", "k"], &["doctor"], &["events"]] {
        let out = over_typo(args);
        assert!(
            stderr(&out).contains("does not exist (a mistyped --root?)"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = over_typo(&["list", "--json"]);
    let v = one_document(&out);
    assert_eq!(v["hazards"][0]["kind"], "root_missing", "{v}");
    assert_eq!(v["hazards"][0]["path"], typo_arg.as_str());
    let out = over_typo(&["doctor", "--json"]);
    assert_eq!(code(&out), 3);
    assert_eq!(one_document(&out)["hazards"][0]["kind"], "root_missing");
    // The sandbox's own root exists and has no .fno yet: no hazard, no word.
    let out = s.run(&["doctor"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}
