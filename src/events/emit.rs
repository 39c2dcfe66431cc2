//! Appending audit events in the envelope every implementation writes:
//! `{"ts", "type", "source": "fno-loop", "data"}`, one JSON object a line.

use crate::diag::warn;
use crate::mutex;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

// Re-exported where it lived before: other code names it by this path.
pub use crate::mutex::events_mutex_path;
use std::time::Duration;

/// `source` of every claim event: readers filter on it, so it is the same
/// whichever implementation performed the operation.
pub const SOURCE: &str = "fno-loop";
/// Budget for the events mutex. These appends sit on agents' hot paths: a
/// wedged log means log-and-skip, never block (the lockfile is authoritative,
/// the log is observability).
pub const EVENTS_LOCK_BUDGET: Duration = Duration::from_secs(2);

/// `<events_dir>/.fno/events.jsonl`; no dir means the current directory, as
/// the Python emitter does.
pub fn events_path(events_dir: Option<&Path>) -> PathBuf {
    events_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".fno/events.jsonl")
}

#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("events.jsonl lock timeout: {0}")]
    LockTimeout(PathBuf),
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The envelope, with second-resolution UTC `ts` as the Python side writes.
pub fn envelope(type_name: &str, data: Map<String, Value>) -> Value {
    json!({
        "ts": crate::time::utc_hms(crate::time::now_ms()),
        "type": type_name,
        "source": SOURCE,
        "data": Value::Object(data),
    })
}

/// Append one event line under the shared `events.jsonl.lock.d` mutex.
pub fn append_event(path: &Path, event: &Value, budget: Duration) -> Result<(), EmitError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| EmitError::Io {
            op: "create events dir",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    let lock_dir = events_mutex_path(path);
    let Some(guard) = mutex::lock(&lock_dir, budget, true) else {
        return Err(EmitError::LockTimeout(lock_dir));
    };
    // One write of the whole line: O_APPEND makes a single write atomic with
    // respect to other appenders even if one of them ignores the mutex.
    let mut line = event.to_string();
    line.push('\n');
    // O_NOFOLLOW: a symlink planted as the log would make every claim
    // operation append to a file outside the root. O_NONBLOCK: a FIFO there
    // must not hang an acquire; the append then fails and is logged.
    let res = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|source| EmitError::Io {
            op: "append",
            path: path.to_path_buf(),
            source,
        });
    drop(guard);
    res
}

/// Best-effort emit: failures are reported through [`crate::diag`] and
/// otherwise ignored, because the claim operation already happened.
pub fn emit(events_dir: Option<&Path>, type_name: &str, data: Map<String, Value>) {
    let path = events_path(events_dir);
    if let Err(e) = append_event(&path, &envelope(type_name, data), EVENTS_LOCK_BUDGET) {
        warn(&format!("failed to emit {type_name:?}: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    #[test]
    fn envelope_has_seed_field_order_and_source() {
        let mut d = Map::new();
        d.insert("key".into(), json!("k"));
        let line = envelope("claim_acquired", d).to_string();
        assert!(line.starts_with("{\"ts\":\""), "{line}");
        assert!(
            line.ends_with(
                "\"type\":\"claim_acquired\",\"source\":\"fno-loop\",\"data\":{\"key\":\"k\"}}"
            ),
            "{line}"
        );
        let ts = line.split('"').nth(3).unwrap();
        assert!(
            chrono::NaiveDateTime::parse_from_str(ts, "%Y-%m-%dT%H:%M:%SZ").is_ok(),
            "{ts}"
        );
    }

    #[test]
    fn a_corpse_events_mutex_is_stolen_within_the_budget() {
        let td = TempDir::new().unwrap();
        let path = events_path(Some(td.path()));
        std::fs::create_dir_all(td.path().join(".fno")).unwrap();
        let lock = events_mutex_path(&path);
        std::fs::create_dir(&lock).unwrap();
        mutex::backdate(&lock, 300).unwrap();
        let t = std::time::Instant::now();
        append_event(&path, &json!({"type": "x"}), EVENTS_LOCK_BUDGET).unwrap();
        assert!(t.elapsed() < EVENTS_LOCK_BUDGET);
        assert!(!lock.exists());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"type\":\"x\"}\n"
        );
    }

    #[test]
    fn a_fresh_events_mutex_times_out_and_appends_nothing() {
        let td = TempDir::new().unwrap();
        let path = events_path(Some(td.path()));
        std::fs::create_dir_all(td.path().join(".fno")).unwrap();
        std::fs::create_dir(events_mutex_path(&path)).unwrap();
        let r = append_event(&path, &json!({}), Duration::from_millis(300));
        assert!(matches!(r, Err(EmitError::LockTimeout(_))));
        assert!(!path.exists());
    }

    #[test]
    fn a_symlink_planted_as_the_log_is_not_followed() {
        let td = TempDir::new().unwrap();
        let outside = TempDir::new().unwrap();
        let target = outside.path().join("victim");
        std::fs::write(&target, "untouched\n").unwrap();
        let path = events_path(Some(td.path()));
        std::fs::create_dir_all(td.path().join(".fno")).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(append_event(&path, &json!({"type": "x"}), EVENTS_LOCK_BUDGET).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched\n");
        assert!(!events_mutex_path(&path).exists(), "mutex left behind");
    }

    #[test]
    fn concurrent_appenders_all_land_whole_lines() {
        let td = TempDir::new().unwrap();
        let path = events_path(Some(td.path()));
        let hs: Vec<_> = (0..8)
            .map(|i| {
                let p = path.clone();
                std::thread::spawn(move || {
                    for j in 0..20 {
                        append_event(&p, &json!({"i": i, "j": j}), Duration::from_secs(30))
                            .unwrap();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 160);
        for l in text.lines() {
            serde_json::from_str::<Value>(l).unwrap();
        }
    }
}
