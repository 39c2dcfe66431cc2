//! The claimtop binary over `--store etcd://...` against a real etcd: every
//! JSON shape the contract gives (the file store's fields, plus `revision`,
//! `lease` and `store`), the usage errors etcd adds, a wait driven by the
//! store's watch, and an unreachable etcd failing within `--timeout`.
//! Run with `cargo test --features etcd --test etcd_cli`.
#![cfg(feature = "etcd")]

#[path = "../common/mod.rs"]
mod common;
#[path = "../etcd_common/mod.rs"]
mod etcd_common;

use common::{
    claimtop, grandchild_writer, slow_member, stamps, until_quiet, wall_ns, Grandchild, Sandbox,
};
use etcd_common::{scrape, start_metrics, Etcd, Proxy};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod contract;
mod cut_off;
mod exclusion;
mod history;
mod metrics;
mod outages;
mod release_renew;
mod run;
mod streaming;
mod tenures;
mod wait;

/// The binary over `url`, with a throwaway `$HOME` so no file root is near.
fn over(home: &Path, url: &str) -> Command {
    let mut c = claimtop(home);
    c.env_remove("FNO_CLAIMS_STORE")
        .env_remove("ETCD_PASSWORD")
        .args(["--store", url]);
    c
}

fn run(mut c: Command, args: &[&str]) -> Output {
    c.args(args).output().expect("run claimtop")
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Poll `status KEY` until `pred` holds of its JSON, or panic after `within`.
fn await_status(
    home: &Path,
    url: &str,
    key: &str,
    within: Duration,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let s = json_of(&run(over(home, url), &["--json", "status", key]));
        if pred(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "status of {key} never matched: {s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The events `events --json ARGS` prints, one per line.
fn events_json(home: &Path, url: &str, args: &[&str]) -> Vec<Value> {
    let ev = run(over(home, url), &[&["--json", "events"], args].concat());
    assert_eq!(code(&ev), 0, "{ev:?}");
    String::from_utf8_lossy(&ev.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// The revisions of the `claim_expired` events the CLI's `events` shows.
fn expired_revisions(home: &Path, url: &str) -> Vec<i64> {
    events_json(home, url, &["--type", "claim_expired"])
        .iter()
        .filter_map(|e| e["data"]["revision"].as_i64())
        .collect()
}

/// Poll until `child` exits, or panic after `within`.
fn exits_within(child: &mut std::process::Child, within: Duration) {
    let deadline = Instant::now() + within;
    while child.try_wait().expect("try_wait").is_none() {
        assert!(Instant::now() < deadline, "still running after {within:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
