//! Roots, pids and the audit log: throwaway roots, a dead pid, planted
//! records and bytes, the archive, the events a root recorded.

use super::*;

/// A throwaway root whose audit log lives beside its claims. Takes a temp
/// dir or any path (a mounted tmpfs, a subdirectory).
/// Why a test cannot run here. Under `CI` that is a failure: a skip there
/// would hide a class of behaviour never tried (the tmux, interop and etcd
/// tests hold the same rule). Elsewhere it is said on stderr and the test
/// passes vacuously.
pub fn cannot_run(why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("CI is set, so this test must run, but: {why}");
    }
    eprintln!("skipped: {why} (set CI to make this a failure)");
}

pub fn root_in(dir: impl AsRef<Path>) -> Root {
    Root::with_events_here(dir.as_ref())
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
        metadata: Default::default(),
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

pub fn temp_root() -> (tempfile::TempDir, Root) {
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    (td, root)
}

/// Write `r` as the lockfile of its key under `root`.
pub fn write_claim(root: &Root, r: &ClaimRecord) -> PathBuf {
    let path = root.lockfile(&r.key);
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    std::fs::write(&path, r.to_yaml().expect("yaml")).expect("write lockfile");
    path
}
