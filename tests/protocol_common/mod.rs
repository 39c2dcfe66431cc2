//! Helpers shared by the `protocol_*` parity tests. Each test file pulls this
//! in with `mod protocol_common;`; not every file uses every helper.
#![allow(dead_code)]

use claimtop::claims::{
    acquire, AcquireKind, AcquireOpts, AcquireOutcome, ClaimRecord, Root, EXPIRED_SUBDIR,
};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A throwaway root whose audit log lives beside its claims.
pub fn root_in(td: &TempDir) -> Root {
    Root::with_events_here(td.path())
}

/// Every line of the root's audit log, parsed. Panics on a line that is not
/// JSON: a torn or garbled line is exactly what these tests must catch.
pub fn events(root: &Root) -> Vec<Value> {
    let text = std::fs::read_to_string(root.events_file()).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad event line {l:?}: {e}")))
        .collect()
}

/// The events of one type.
pub fn events_of(root: &Root, type_name: &str) -> Vec<Value> {
    events(root)
        .into_iter()
        .filter(|e| e["type"] == type_name)
        .collect()
}

/// A pid that belonged to a process which has exited and been reaped, so
/// nothing runs under it (short of the kernel handing it out again at once).
pub fn dead_pid() -> i32 {
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("spawn `true`");
    let pid = child.id() as i32;
    child.wait().expect("reap `true`");
    pid
}

/// Acquire and insist it succeeded; returns the record and how.
pub fn must_acquire(
    root: &Root,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
) -> (ClaimRecord, AcquireKind) {
    match acquire(root, key, holder, opts) {
        Ok(AcquireOutcome::Acquired { record, kind }) => (record, kind),
        other => panic!("acquire {key:?} by {holder:?}: {other:?}"),
    }
}

/// A record as this machine's writer would make it, with the parts a test
/// wants to control given.
pub fn record(key: &str, holder: &str, pid: i32, acquired_at: i64) -> ClaimRecord {
    let id = claimtop::claims::LocalIdentity::current();
    ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: holder.into(),
        acquired_at,
        pid,
        host: id.hostname,
        expires_at: None,
        reason: None,
        harness: None,
        machine_id: Some(id.machine_id).filter(|m| !m.is_empty()),
        metadata: Map::new(),
    }
}

/// Plant a record at `key`'s lockfile as a peer writer would (bypassing
/// acquire, which would refuse or reclaim). Returns the bytes written.
pub fn plant(root: &Root, rec: &ClaimRecord) -> Vec<u8> {
    let bytes = rec.to_yaml().expect("serialize").into_bytes();
    plant_bytes(root, &rec.key, &bytes);
    bytes
}

/// Plant arbitrary bytes as `key`'s lockfile.
pub fn plant_bytes(root: &Root, key: &str, bytes: &[u8]) -> PathBuf {
    let path = root.lockfile(key);
    std::fs::create_dir_all(path.parent().expect("claims dir")).expect("mkdir claims");
    std::fs::write(&path, bytes).expect("write lockfile");
    path
}

/// Names in a directory, sorted; empty when it does not exist.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .map(|e| {
                e.expect("dir entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// The archive dir of a root.
pub fn expired_dir(root: &Root) -> PathBuf {
    root.claims_dir().join(EXPIRED_SUBDIR)
}

/// Archived copies of `key`: `.expired/<enc>.<ms>.lock`.
pub fn archives_of(root: &Root, key: &str) -> Vec<PathBuf> {
    let stem = claimtop::claims::encode_key(key);
    names(&expired_dir(root))
        .into_iter()
        .filter(|n| {
            n.strip_prefix(&format!("{stem}."))
                .and_then(|rest| rest.strip_suffix(".lock"))
                .is_some_and(|ms| !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|n| expired_dir(root).join(n))
        .collect()
}

/// A metadata map from a JSON object literal.
pub fn meta(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("metadata must be an object, got {other}"),
    }
}
