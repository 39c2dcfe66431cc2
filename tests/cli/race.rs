//! Many `claimtop acquire` processes on one key at once: exactly one wins,
//! every other one is told the key is held, and nobody sees an error.

use crate::common::{claimtop, dead_holder_yaml};
use claimtop::claims::read_claim_file;
use serde_json::Value;
use std::process::{Child, Stdio};
use tempfile::TempDir;

/// Rounds that start from a dead holder's claim, so the racers meet in
/// stale recovery (mutex, archive, create) rather than at the bare create.
const STALE_START_ROUNDS: &[usize] = &[2, 4];
const RACERS: usize = 16;
const ROUNDS: usize = 5;
const KEY: &str = "node:race";

fn spawn_acquire(root: &TempDir, home: &TempDir, holder: &str, ttl: bool) -> Child {
    let mut c = claimtop(home.path());
    c.arg("--root")
        .arg(root.path())
        .args(["acquire", KEY, "--holder", holder, "--json"]);
    if ttl {
        c.args(["--ttl", "10m"]);
    }
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn claimtop acquire")
}

fn plant_dead_claim(lockfile: &std::path::Path) {
    std::fs::create_dir_all(lockfile.parent().expect("claims dir")).expect("mkdir");
    std::fs::write(lockfile, dead_holder_yaml(KEY, "dead-worker")).expect("plant");
}

#[test]
fn sixteen_concurrent_acquires_have_exactly_one_winner_round_after_round() {
    let root = TempDir::new().expect("root");
    let home = TempDir::new().expect("home");
    let lockfile = root.path().join(".fno/claims/node%3Arace.lock");
    for round in 0..ROUNDS {
        // Alternate PID-bound and TTL claims: both go through the same
        // exclusive create, and both must have one winner.
        let ttl = round % 2 == 1;
        if STALE_START_ROUNDS.contains(&round) {
            plant_dead_claim(&lockfile);
        }
        let children: Vec<(String, Child)> = (0..RACERS)
            .map(|i| {
                let holder = format!("worker-{round}-{i}");
                let child = spawn_acquire(&root, &home, &holder, ttl);
                (holder, child)
            })
            .collect();
        let mut winners = Vec::new();
        let mut held = 0;
        for (holder, child) in children {
            let out = child.wait_with_output().expect("wait");
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!(
                    "round {round} {holder}: not one JSON document ({e}); stderr: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
            match out.status.code() {
                Some(0) => {
                    assert_eq!(doc["outcome"], "acquired", "{doc}");
                    winners.push(holder);
                }
                Some(3) => {
                    assert_eq!(doc["outcome"], "held_by_other", "{doc}");
                    held += 1;
                }
                other => panic!("round {round} {holder}: exit {other:?}: {doc}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        assert_eq!(held, RACERS - 1, "round {round}");

        let rec = read_claim_file(&lockfile).expect("the surviving lockfile parses");
        assert_eq!(rec.holder, winners[0], "round {round}");
        assert_eq!(rec.expires_at.is_some(), ttl, "round {round}");

        let out = claimtop(home.path())
            .arg("--root")
            .arg(root.path())
            .args(["release", KEY, "--holder", &winners[0], "--json"])
            .output()
            .expect("release");
        assert_eq!(out.status.code(), Some(0));
        assert!(!lockfile.exists(), "round {round}: released");
    }
    // The dead holders' claims were archived, never unlinked.
    let leftovers: Vec<_> = std::fs::read_dir(root.path().join(".fno/claims"))
        .expect("claims dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|n| n != ".expired")
        .collect();
    assert!(
        leftovers.is_empty(),
        "temp files left behind: {leftovers:?}"
    );
}
