//! Several origins named at once: `--store` repeated and mixed with
//! `--root`, `file:` URLs, `$FNO_CLAIMS_STORE` with several URLs. Every
//! item, hazard and event says where it came from (`"origin"`) exactly
//! when more than one origin is named; a verb on one key refuses them.

use crate::common::claimtop;
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use tempfile::TempDir;

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
}

fn origin(dir: &Path) -> String {
    format!("file:{}", dir.to_string_lossy())
}

/// Two roots, each holding a claim, one a corrupted lockfile too.
fn two_roots(home: &Path) -> (TempDir, TempDir) {
    let (a, b) = (TempDir::new().expect("a"), TempDir::new().expect("b"));
    for (dir, key) in [(&a, "ka"), (&b, "kb")] {
        let out = claimtop(home)
            .arg("--root")
            .arg(dir.path())
            .args(["acquire", key, "--holder", "h", "--ttl", "10m"])
            .output()
            .expect("acquire");
        assert_eq!(code(&out), 0, "{out:?}");
    }
    std::fs::write(b.path().join(".fno/claims/bad.lock"), "{{{ not a claim").expect("plant");
    (a, b)
}

#[test]
fn a_file_store_and_a_root_list_as_two_origins_each_item_and_hazard_naming_its_own() {
    let home = TempDir::new().expect("home");
    let (a, b) = two_roots(home.path());
    let store = format!("file:{}", a.path().to_string_lossy());
    let out = claimtop(home.path())
        .args(["--store", &store, "--root"])
        .arg(b.path())
        .args(["list", "--json"])
        .output()
        .expect("list");
    assert_eq!(code(&out), 0, "{out:?}");
    let v = json(&out);
    assert_eq!(
        v["origins"],
        serde_json::json!([origin(a.path()), origin(b.path())])
    );
    assert_eq!(v["roots"].as_array().map(Vec::len), Some(2), "{v}");
    let items = v["claims"].as_array().expect("claims");
    let of = |key: &str| items.iter().find(|i| i["key"] == key).expect(key);
    assert_eq!(of("ka")["origin"], origin(a.path()));
    assert_eq!(of("kb")["origin"], origin(b.path()));
    assert_eq!(of("kb")["root"], b.path().to_string_lossy().as_ref());
    let hazards = v["hazards"].as_array().expect("hazards");
    assert!(!hazards.is_empty());
    assert!(
        hazards.iter().all(|h| h["origin"] == origin(b.path())),
        "{v}"
    );
}

#[test]
fn the_environment_names_several_stores_separated_by_spaces() {
    let home = TempDir::new().expect("home");
    let (a, b) = two_roots(home.path());
    let stores = format!("{}  {}", origin(a.path()), origin(b.path()));
    let out = claimtop(home.path())
        .env("FNO_CLAIMS_STORE", &stores)
        .args(["list", "--json"])
        .output()
        .expect("list");
    assert_eq!(code(&out), 0, "{out:?}");
    let keys: Vec<Value> = json(&out)["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|i| i["key"].clone())
        .collect();
    assert_eq!(keys, ["bad", "ka", "kb"]);
    // The flag is nearer than the environment: --root alone is one root.
    let one = claimtop(home.path())
        .env("FNO_CLAIMS_STORE", &stores)
        .arg("--root")
        .arg(a.path())
        .args(["list", "--json"])
        .output()
        .expect("list");
    let v = json(&one);
    assert!(v.get("origins").is_none(), "{v}");
    assert!(v["claims"][0].get("origin").is_none(), "{v}");
}

#[test]
fn a_verb_on_one_key_over_a_store_and_a_root_exits_2_naming_both() {
    let home = TempDir::new().expect("home");
    let (a, b) = two_roots(home.path());
    let out = claimtop(home.path())
        .args(["--store", &origin(a.path()), "--root"])
        .arg(b.path())
        .args(["release", "ka", "--holder", "h", "--json"])
        .output()
        .expect("release");
    assert_eq!(code(&out), 2, "{out:?}");
    let v = json(&out);
    assert_eq!(v["outcome"], "usage_error");
    let msg = v["error"].as_str().expect("words");
    for dir in [a.path(), b.path()] {
        assert!(msg.contains(&*dir.to_string_lossy()), "{msg}");
    }
    let still = std::fs::read_to_string(a.path().join(".fno/claims/ka.lock"));
    assert!(still.is_ok(), "nothing released");
}

#[test]
fn doctor_and_events_over_several_origins_say_whose_each_line_is() {
    let home = TempDir::new().expect("home");
    let (a, b) = two_roots(home.path());
    let run = |args: &[&str]| {
        claimtop(home.path())
            .arg("--root")
            .arg(a.path())
            .arg("--root")
            .arg(b.path())
            .args(args)
            .output()
            .expect("run")
    };
    let doctor = run(&["doctor", "--json"]);
    assert_eq!(
        code(&doctor),
        3,
        "a corrupted claim is a hazard: {doctor:?}"
    );
    let v = json(&doctor);
    assert_eq!(v["origins"].as_array().map(Vec::len), Some(2), "{v}");
    assert!(
        v["hazards"]
            .as_array()
            .expect("hazards")
            .iter()
            .all(|h| h["origin"] == origin(b.path())
                && h["root"] == b.path().to_string_lossy().as_ref()),
        "{v}"
    );
    let events = run(&["events", "--json"]);
    assert_eq!(code(&events), 0, "{events:?}");
    let lines: Vec<Value> = String::from_utf8_lossy(&events.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for l in &lines {
        let root = l["root"].as_str().expect("a root");
        assert_eq!(l["origin"], format!("file:{root}"), "{l}");
    }
}

#[test]
fn the_dashboard_takes_several_stores_rather_than_a_usage_error() {
    let home = TempDir::new().expect("home");
    // No terminal (nor etcd) here: the dashboard gets past the names to
    // opening the stores or the terminal (tests/dashboard_stores covers a
    // mixed view's screen).
    let out = claimtop(home.path())
        .args([
            "--store",
            "etcd://127.0.0.1:1/a",
            "--store",
            "etcd://127.0.0.1:1/b",
        ])
        .output()
        .expect("dashboard");
    assert_ne!(code(&out), 2, "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("one --store"), "{err}");
}
