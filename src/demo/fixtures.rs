//! The demo's standing hazards: holders that died holding, a claim from
//! another machine, a corrupted lockfile and a recovery-mutex corpse. Planted
//! once at start on keys no worker touches, so they stay put until the
//! operator deals with them (force-release, doctor).

use crate::claims::atomic::{create_exclusive, CreateError};
use crate::claims::{
    acquire, hostname, machine_id, mutex, now_ms, recovery_mutex_path, AcquireOpts, ClaimRecord,
    Root, SCHEMA_VERSION,
};
use crate::diag::warn;
use serde_json::{json, Map, Value};
use std::path::Path;

const MINUTE_MS: i64 = 60_000;

/// The pid of a process that has already exited (and been reaped), so a
/// claim bound to it reads as dead. A real child rather than a made-up
/// number: a guessed pid might belong to something running.
pub(super) fn dead_pid() -> Option<u32> {
    let mut child = match std::process::Command::new("sleep").arg("0").spawn() {
        Ok(c) => c,
        Err(e) => {
            warn(&format!("demo: cannot spawn a short-lived holder: {e}"));
            return None;
        }
    };
    let pid = child.id();
    match child.wait() {
        Ok(_) => Some(pid),
        Err(e) => {
            warn(&format!("demo: cannot reap the short-lived holder: {e}"));
            None
        }
    }
}

pub(super) fn metadata(v: Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// Plant every standing fixture; each failure is reported and skipped, since a
/// demo missing one hazard is still worth showing.
pub(super) fn plant(root: &Root) {
    dead_pid_bound(root);
    dead_ttl(root);
    expired_with_corpse(root);
    foreign(root);
    corrupted(root);
}

/// A PID-bound claim whose holder died: Stale.
fn dead_pid_bound(root: &Root) {
    let Some(pid) = dead_pid() else { return };
    let opts = AcquireOpts {
        pid: Some(pid),
        reason: Some("benchmark sweep on the shared GPU runner".into()),
        metadata: metadata(json!({"suite": "inference", "shards": 8})),
        harness: Some("gemini".into()),
        ..AcquireOpts::default()
    };
    report(
        "node:gpu-runner-2",
        acquire(root, "node:gpu-runner-2", "gemini:cli-7f2e", &opts),
    );
}

/// A TTL claim whose holder died with time left: Suspect until it runs out.
fn dead_ttl(root: &Root) {
    let Some(pid) = dead_pid() else { return };
    let opts = AcquireOpts {
        pid: Some(pid),
        ttl_ms: Some(90 * MINUTE_MS),
        reason: Some("rebase onto main and re-run CI".into()),
        metadata: metadata(json!({"pr": 4807, "branch": "fix/flaky-retry"})),
        harness: Some("opencode".into()),
        ..AcquireOpts::default()
    };
    report(
        "dispatch:pr-4807",
        acquire(root, "dispatch:pr-4807", "opencode:run-19c4", &opts),
    );
}

/// A TTL claim that ran out long ago with its holder dead (Stale, "expired N
/// ago"), beside the recovery mutex of a recoverer killed mid-recovery. The
/// verbs cannot write a claim acquired in the past, so this one is by hand.
fn expired_with_corpse(root: &Root) {
    let key = "session:77aa";
    let Some(pid) = dead_pid() else { return };
    let now = now_ms();
    let rec = ClaimRecord {
        schema_version: SCHEMA_VERSION,
        key: key.into(),
        holder: "claude:session-77aa".into(),
        acquired_at: now - 47 * MINUTE_MS,
        pid: pid as i32,
        host: hostname(),
        expires_at: Some(now - 17 * MINUTE_MS),
        reason: Some("triage the nightly failures".into()),
        harness: Some("claude".into()),
        machine_id: Some(machine_id()).filter(|m| !m.is_empty()),
        metadata: metadata(json!({"ticket": "OPS-2291"}))
            .unwrap_or_default()
            .into(),
    };
    write_by_hand(root, &rec);
    let corpse = recovery_mutex_path(&root.lockfile(key));
    let made = std::fs::create_dir(&corpse)
        .and_then(|()| {
            std::fs::write(
                corpse.join("owner"),
                format!("{}:{pid}:1764460800000000000", hostname()),
            )
        })
        // Backdated last: writing the owner file bumps the dir's mtime.
        .and_then(|()| mutex::backdate(&corpse, 300));
    if let Err(e) = made {
        warn(&format!("demo: cannot plant the mutex corpse: {e}"));
    }
}

/// A claim written on another machine: its pid cannot be checked here.
fn foreign(root: &Root) {
    let now = now_ms();
    let rec = ClaimRecord {
        schema_version: SCHEMA_VERSION,
        key: "node:artifact-store".into(),
        holder: "codex:worker-11".into(),
        acquired_at: now - 6 * MINUTE_MS,
        pid: 31337,
        host: "build-07".into(),
        expires_at: Some(now + 39 * MINUTE_MS),
        reason: Some("compact the artifact store".into()),
        harness: Some("codex".into()),
        machine_id: Some("another-machine-5c1d9e07:4026531836".into()),
        metadata: metadata(json!({"region": "eu-west", "bytes_freed": 0}))
            .unwrap_or_default()
            .into(),
    };
    write_by_hand(root, &rec);
}

/// A lockfile cut short by a writer that did not write atomically: NUL bytes
/// where the rest of the record should be.
fn corrupted(root: &Root) {
    let path = root.lockfile("dispatch:pr-4790");
    let bytes = b"schema_version: 1\nkey: dispatch:pr-4790\nholder: codex:worker-2\nacquired_at: 17\0\0\0\0\0\0\0\0";
    create(&path, bytes);
}

fn write_by_hand(root: &Root, rec: &ClaimRecord) {
    match rec.to_yaml() {
        Ok(text) => create(&root.lockfile(&rec.key), text.as_bytes()),
        Err(e) => warn(&format!("demo: cannot serialise {}: {e}", rec.key)),
    }
}

fn create(path: &Path, bytes: &[u8]) {
    match create_exclusive(path, bytes) {
        Ok(()) => {}
        Err(CreateError::AlreadyHeld) => warn(&format!(
            "demo: {} already exists; fixture skipped",
            path.display()
        )),
        Err(CreateError::Io(e)) => warn(&format!("demo: cannot write {}: {e}", path.display())),
    }
}

fn report<T>(key: &str, res: Result<T, crate::claims::ClaimError>) {
    if let Err(e) = res {
        warn(&format!("demo: fixture {key}: {e}"));
    }
}
