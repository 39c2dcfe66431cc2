//! `publish` and `force-release --host` at the command line, in any build:
//! the usage they require, and the default build's plain refusal.

use crate::common::claimtop;
use serde_json::Value;
use tempfile::TempDir;

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

#[test]
fn publish_without_an_etcd_store_is_a_usage_error_naming_the_flag() {
    let (home, root) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let out = claimtop(home.path())
        .env_remove("FNO_CLAIMS_STORE")
        .arg("publish")
        .arg("--root")
        .arg(root.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v = json(&out);
    assert_eq!(v["outcome"], "usage_error");
    assert!(
        v["error"].as_str().unwrap().contains("--store etcd://"),
        "{v}"
    );
}

#[test]
fn force_release_on_a_host_needs_an_etcd_store() {
    let (home, root) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let out = claimtop(home.path())
        .arg("--root")
        .arg(root.path())
        .args(["force-release", "k", "--host", "h1", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(json(&out)["error"].as_str().unwrap().contains("--host"));
}

#[cfg(not(feature = "etcd"))]
#[test]
fn a_build_without_etcd_refuses_publish_in_words_and_writes_nothing() {
    let (home, root) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let out = claimtop(home.path())
        .arg("publish")
        .arg("--root")
        .arg(root.path())
        .args(["--store", "etcd://127.0.0.1:1", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("without etcd support"),
        "{v}"
    );
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}

// Default build only: with etcd support, a publisher whose etcd does not
// answer keeps retrying (a service outlives its store's restarts).
#[cfg(not(feature = "etcd"))]
#[test]
fn publish_takes_its_store_from_the_environment_even_beside_a_root() {
    let (home, root) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let out = claimtop(home.path())
        .env("FNO_CLAIMS_STORE", "etcd://127.0.0.1:1")
        .arg("publish")
        .arg("--root")
        .arg(root.path())
        .args(["--timeout", "1s", "--json"])
        .output()
        .unwrap();
    // Not the usage error of a missing store: the store was found, and
    // this build cannot serve it.
    assert_eq!(out.status.code(), Some(1), "{}", json(&out));
    assert!(json(&out)["error"]
        .as_str()
        .unwrap()
        .contains("without etcd support"));
}
