//! Several claims roots in one CLI run: `--root` repeated and a
//! `:`-separated `$FNO_CLAIMS_ROOT`, as scripts see them.

use crate::common::{claimtop, dead_holder_yaml};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tempfile::TempDir;

/// Three claims roots and a fake `$HOME`.
struct Roots {
    dirs: Vec<TempDir>,
    home: TempDir,
}

impl Roots {
    fn new(n: usize) -> Roots {
        Roots {
            dirs: (0..n).map(|_| TempDir::new().expect("root")).collect(),
            home: TempDir::new().expect("home"),
        }
    }

    fn root(&self, i: usize) -> &Path {
        self.dirs[i].path()
    }

    fn name(&self, i: usize) -> String {
        self.root(i).to_string_lossy().into_owned()
    }

    /// The binary with every root given as `--root`.
    fn cmd(&self) -> Command {
        let mut c = claimtop(self.home.path());
        for d in &self.dirs {
            c.arg("--root").arg(d.path());
        }
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("run claimtop")
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = self.run(&[args, &["--json"]].concat());
        (code(&out), one_document(&out))
    }

    fn write_lock(&self, i: usize, encoded: &str, text: &str) -> PathBuf {
        let dir = self.root(i).join(".fno/claims");
        std::fs::create_dir_all(&dir).expect("claims dir");
        let p = dir.join(format!("{encoded}.lock"));
        std::fs::write(&p, text).expect("write lockfile");
        p
    }

    fn write_events(&self, i: usize, lines: &[&str]) {
        let dir = self.root(i).join(".fno");
        std::fs::create_dir_all(&dir).expect("fno dir");
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(dir.join("events.jsonl"), text).expect("events");
    }

    /// Acquire `key` in root `i` alone, through the real binary.
    fn acquire(&self, i: usize, key: &str, holder: &str) {
        let out = claimtop(self.home.path())
            .arg("--root")
            .arg(self.root(i))
            .args(["acquire", key, "--holder", holder, "--ttl", "1h"])
            .output()
            .expect("acquire");
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not signalled")
}

fn one_document(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {:?}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn event(ts: &str, kind: &str, key: &str) -> String {
    format!(
        r#"{{"ts":"{ts}","type":"{kind}","source":"fno-loop","data":{{"key":"{key}","holder":"h","pid":1}}}}"#
    )
}

#[test]
fn list_covers_every_root_and_tags_each_item_and_hazard_with_its_root() {
    let r = Roots::new(2);
    r.acquire(0, "b", "w0");
    r.acquire(1, "a", "w1");
    r.acquire(1, "b", "w1");
    r.write_lock(0, "c", ": not yaml [");
    let (status, v) = r.json(&["list"]);
    assert_eq!(status, 0);
    assert_eq!(v["root"], r.name(0), "root stays the first root");
    assert_eq!(v["roots"], serde_json::json!([r.name(0), r.name(1)]));
    let items: Vec<(String, String)> = v["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|c| {
            (
                c["key"].as_str().expect("key").to_string(),
                c["root"].as_str().expect("root").to_string(),
            )
        })
        .collect();
    assert_eq!(
        items,
        [
            ("a".to_string(), r.name(1)),
            ("b".to_string(), r.name(0)),
            ("b".to_string(), r.name(1)),
            ("c".to_string(), r.name(0)),
        ],
        "sorted by key, then by the order the roots were named"
    );
    assert_eq!(v["counts"]["live"], 3);
    assert_eq!(v["counts"]["corrupted"], 1);
    let hazards = v["hazards"].as_array().expect("hazards");
    assert!(!hazards.is_empty());
    assert!(
        hazards.iter().all(|h| h["root"] == r.name(0)),
        "{hazards:?}"
    );
}

#[test]
fn list_with_one_root_has_no_root_members_on_items() {
    let r = Roots::new(1);
    r.acquire(0, "k", "w");
    let (_, v) = r.json(&["list"]);
    assert!(v.get("roots").is_none());
    assert!(v["claims"][0].get("root").is_none(), "{v}");
}

#[test]
fn the_environment_may_name_several_roots_separated_by_colons() {
    let r = Roots::new(2);
    r.acquire(0, "x", "w0");
    r.acquire(1, "y", "w1");
    let env = format!("{}::{}", r.name(0), r.name(1));
    let out = claimtop(r.home.path())
        .env("FNO_CLAIMS_ROOT", env)
        .args(["list", "--json"])
        .output()
        .expect("run");
    let v = one_document(&out);
    let keys: Vec<&str> = v["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .filter_map(|c| c["key"].as_str())
        .collect();
    assert_eq!(keys, ["x", "y"]);
    assert_eq!(v["claims"][1]["root"], r.name(1));
}

#[test]
fn list_text_shows_a_root_column() {
    let r = Roots::new(2);
    r.acquire(1, "only-here", "w1");
    let out = r.run(&["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    assert!(lines.next().expect("header").starts_with("ROOT"), "{text}");
    let row = lines.next().expect("row");
    assert!(
        row.starts_with(&r.name(1)) && row.contains("only-here"),
        "{text}"
    );
}

#[test]
fn doctor_reports_hazards_per_root_and_fix_cleans_each_root() {
    let r = Roots::new(2);
    r.write_lock(1, "bad", ": not yaml [");
    let mutex = r.root(0).join(".fno/claims/k.lock.recovery.d");
    std::fs::create_dir_all(&mutex).expect("mutex");
    // Old enough to be a corpse by the steal rule.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::open(&mutex)
        .and_then(|f| f.set_modified(old))
        .expect("age the mutex");
    let (status, v) = r.json(&["doctor"]);
    assert_eq!(status, 3);
    let kinds: Vec<(String, String)> = v["hazards"]
        .as_array()
        .expect("hazards")
        .iter()
        .map(|h| {
            (
                h["kind"].as_str().unwrap_or("").into(),
                h["root"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("stale_mutex".into(), r.name(0))),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&("corrupted_claim".into(), r.name(1))),
        "{kinds:?}"
    );
    let (status, v) = r.json(&["doctor", "--fix"]);
    assert_eq!(status, 3, "the corrupted claim is left for force-release");
    let fixed = v["fixed"].as_array().expect("fixed");
    assert!(
        fixed
            .iter()
            .any(|f| f["kind"] == "stale_mutex" && f["fixed"] == true && f["root"] == r.name(0)),
        "{fixed:?}"
    );
    assert!(!mutex.exists());
    assert_eq!(v["hazards"].as_array().map(Vec::len), Some(1));
}

#[test]
fn events_from_several_logs_are_merged_by_time_and_tagged_with_their_root() {
    let r = Roots::new(2);
    r.write_events(
        0,
        &[
            &event("2026-01-01T00:00:01Z", "claim_acquired", "a"),
            &event("2026-01-01T00:00:03Z", "claim_released", "a"),
        ],
    );
    r.write_events(
        1,
        &[
            &event("2026-01-01T00:00:02Z", "claim_acquired", "b"),
            "not json",
            &event("2026-01-01T00:00:04Z", "claim_released", "b"),
        ],
    );
    let out = r.run(&["events", "--json"]);
    assert_eq!(code(&out), 0);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let seen: Vec<(&str, &str)> = lines
        .iter()
        .map(|e| {
            (
                e["ts"].as_str().unwrap_or(""),
                e["root"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let (r0, r1) = (r.name(0), r.name(1));
    assert_eq!(
        seen,
        [
            ("2026-01-01T00:00:01Z", r0.as_str()),
            ("2026-01-01T00:00:02Z", r1.as_str()),
            ("2026-01-01T00:00:03Z", r0.as_str()),
            ("2026-01-01T00:00:04Z", r1.as_str()),
        ]
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("skipped 1"));

    let out = r.run(&["events", "--json", "-n", "2", "--type", "claim_acquired"]);
    let last: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let keys: Vec<&str> = last
        .iter()
        .filter_map(|e| e["data"]["key"].as_str())
        .collect();
    assert_eq!(keys, ["a", "b"]);

    let out = r.run(&["events", "-n", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains("key=b") && text.contains(&format!("root={r1}")),
        "{text}"
    );
}

#[test]
fn events_follow_prints_new_lines_from_every_root() {
    use std::io::{BufRead, BufReader, Write};
    let r = Roots::new(2);
    r.write_events(0, &[&event("2026-01-01T00:00:01Z", "claim_acquired", "a")]);
    let mut child = r
        .cmd()
        .args(["events", "--json", "--follow"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first: Value = serde_json::from_str(&lines.next().expect("line").expect("read")).unwrap();
    assert_eq!(first["root"], r.name(0));
    // The second root's log did not exist when following began.
    std::fs::create_dir_all(r.root(1).join(".fno")).expect("fno");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(r.root(1).join(".fno/events.jsonl"))
        .expect("open");
    writeln!(
        f,
        "{}",
        event("2026-01-01T00:00:02Z", "claim_acquired", "b")
    )
    .expect("append");
    let second: Value = serde_json::from_str(&lines.next().expect("line").expect("read")).unwrap();
    assert_eq!(second["root"], r.name(1));
    assert_eq!(second["data"]["key"], "b");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn verbs_on_one_key_refuse_several_roots_with_a_usage_error() {
    let r = Roots::new(2);
    for args in [
        &["status", "k"][..],
        &["acquire", "k", "--holder", "h", "--ttl", "1h"],
        &["release", "k", "--holder", "h"],
        &["renew", "k", "--holder", "h", "--ttl", "1h"],
        &["force-release", "k"],
    ] {
        let (status, v) = r.json(args);
        assert_eq!(status, 2, "{args:?}");
        assert_eq!(v["outcome"], "usage_error", "{args:?}");
        let msg = v["error"].as_str().expect("error");
        assert!(msg.contains(args[0]) && msg.contains("one --root"), "{msg}");
    }
    assert!(
        !r.root(0).join(".fno/claims").exists() && !r.root(1).join(".fno/claims").exists(),
        "nothing written"
    );
    // `run` too, before its command can start: the marker is never made.
    let marker = r.root(0).join("ran");
    let marker_arg = marker.to_string_lossy().into_owned();
    let out = r.run(&[
        "--json",
        "run",
        "k",
        "--holder",
        "h",
        "--",
        "touch",
        &marker_arg,
    ]);
    let v = one_document(&out);
    assert_eq!(
        (code(&out), v["outcome"].as_str()),
        (2, Some("usage_error"))
    );
    let msg = v["error"].as_str().expect("error");
    assert!(msg.contains("run") && msg.contains("one --root"), "{msg}");
    assert!(!marker.exists(), "run's command never ran");
}

#[test]
fn events_dir_with_several_roots_is_a_usage_error() {
    let r = Roots::new(2);
    let (status, v) = r.json(&["list", "--events-dir", "/tmp"]);
    assert_eq!(status, 2);
    assert!(
        v["error"].as_str().unwrap_or("").contains("--events-dir"),
        "{v}"
    );
}

#[test]
fn the_dashboard_takes_several_roots_rather_than_a_usage_error() {
    let r = Roots::new(2);
    // No terminal here: the dashboard gets as far as opening one, past the
    // roots' resolution (tests/dashboard covers the screen itself).
    let out = r.run(&[]);
    assert_ne!(code(&out), 2, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("one claims root"));
}

#[test]
fn a_root_given_twice_is_listed_once() {
    let r = Roots::new(1);
    r.write_lock(0, "gone", &dead_holder_yaml("gone", "w"));
    let out = r
        .cmd()
        .arg("--root")
        .arg(r.root(0))
        .args(["list", "--json"])
        .output()
        .expect("run");
    let v = one_document(&out);
    assert_eq!(v["claims"].as_array().map(Vec::len), Some(1), "{v}");
    assert!(v.get("roots").is_none(), "one distinct root is one root");
}

#[test]
fn roots_split_around_the_subcommand_are_a_usage_error_not_a_silent_drop() {
    let r = Roots::new(2);
    let out = claimtop(r.home.path())
        .arg("--root")
        .arg(r.root(0))
        .args(["list", "--json", "--root"])
        .arg(r.root(1))
        .output()
        .expect("run");
    assert_eq!(code(&out), 2);
    let v = one_document(&out);
    assert_eq!(v["outcome"], "usage_error");
    assert!(
        v["error"].as_str().unwrap_or("").contains("same side"),
        "{v}"
    );
}
