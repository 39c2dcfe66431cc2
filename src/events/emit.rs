//! Appending audit events in the envelope every implementation writes:
//! `{"ts", "type", "source": "fno-loop", "data"}`, one JSON object a line.

use crate::diag::warn;
use crate::mutex;
use crate::plain_file::{self, Links, PlainError};
use serde_json::{json, Map, Value};
use std::io::Write;
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
    #[error("{path}: the events log is {what}, not a regular file")]
    NotRegular {
        path: PathBuf,
        what: plain_file::Foreign,
    },
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
    let mut line = event.to_string();
    line.push('\n');
    let res = append_whole_line(path, line.as_bytes());
    drop(guard);
    res
}

/// Open the log for appending, under the events mutex. `O_NOFOLLOW`: a
/// symlink planted as the log would make every claim operation append to a
/// file outside the root. Never blocking, and only a regular file: a FIFO
/// there must not hang an acquire (the append fails and is logged).
///
/// Opened for reading too, so that the end can be checked for a torn line;
/// a log this user may append to but not read is appended to blind.
fn open_log(path: &Path) -> Result<(std::fs::File, u64, Readable), EmitError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).append(true).create(true);
    let opened = match plain_file::open(path, Links::Refuse, &mut opts) {
        Err(PlainError::Io(e)) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            let mut blind = std::fs::OpenOptions::new();
            blind.append(true).create(true);
            plain_file::open(path, Links::Refuse, &mut blind).map(|(f, len)| (f, len, false))
        }
        other => other.map(|(f, len)| (f, len, true)),
    };
    opened.map_err(|e| match e {
        PlainError::Foreign(what) => EmitError::NotRegular {
            path: path.to_path_buf(),
            what,
        },
        e => EmitError::Io {
            op: "append",
            path: path.to_path_buf(),
            source: e.into_io(),
        },
    })
}

/// Whether the log was opened for reading as well as appending.
type Readable = bool;

/// Append `line` so that it lands whole or not at all, and never glued to a
/// line torn before it.
///
/// A full disk makes a write land part of its bytes: left there, the
/// fragment has no newline, the next event is appended onto it, and every
/// reader skips both. So a failed append is cut back to the length the log
/// had (the events mutex serialises every protocol writer, so those bytes
/// are ours); and a log that does not end in a newline - a writer of
/// another implementation that tore its line and did not undo it, or a cut
/// that failed - gets one before our line, so only the fragment is lost.
/// Every reader skips the fragment's line as it skips any unparseable one.
fn append_whole_line(path: &Path, line: &[u8]) -> Result<(), EmitError> {
    let (file, start, readable) = open_log(path)?;
    let io = |op, source| EmitError::Io {
        op,
        path: path.to_path_buf(),
        source,
    };
    let torn = readable && ends_torn(&file, start).map_err(|e| io("read the end of", e))?;
    let mut bytes = Vec::with_capacity(line.len() + 1);
    if torn {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(line);
    // One write of the whole line: O_APPEND makes a single write atomic with
    // respect to other appenders even if one of them ignores the mutex.
    let mut written = 0usize;
    let failed = loop {
        match (&file).write(&bytes[written..]) {
            Ok(0) => break Some(std::io::Error::from(std::io::ErrorKind::WriteZero)),
            Ok(n) => {
                written += n;
                if written == bytes.len() {
                    break None;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Some(e),
        }
    };
    let Some(e) = failed else {
        return Ok(());
    };
    // Cut back only what is provably ours: a log that grew by more than we
    // wrote took a line from a writer that ignores the mutex, and cutting
    // would take that too (the next append terminates ours instead).
    // Truncating even when nothing landed tells a watcher (inotify's
    // IN_MODIFY) that an append just failed, so a dashboard looks again.
    if file
        .metadata()
        .is_ok_and(|md| md.len() == start + written as u64)
    {
        let _ = file.set_len(start);
    }
    Err(io("append", e))
}

/// Whether a log of `len` bytes ends in anything but a newline: the tail
/// of a line some writer tore.
fn ends_torn(file: &std::fs::File, len: u64) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] != b'\n')
}

/// What an operator should know of the log at `path` beyond its shape: its
/// last line torn (with no writer at it), or no room left to append.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogTrouble {
    /// The log does not end in a newline and nobody holds the events mutex:
    /// an append failed part-way (or a writer died mid-line), and that
    /// event is lost.
    pub torn: bool,
    /// The log's file system has no space for an append, so every event is
    /// being lost now.
    pub full: bool,
}

impl LogTrouble {
    pub fn any(self) -> bool {
        self.torn || self.full
    }
}

/// Look at the log's end and its file system. Nothing is reported where
/// nobody can write (a read-only file system): a root nobody appends to
/// loses no events. A log mid-append (its mutex held) is not called torn.
pub fn log_trouble(path: &Path) -> LogTrouble {
    let Some(fs) = path.parent().and_then(fs_room) else {
        return LogTrouble::default();
    };
    if fs.read_only {
        return LogTrouble::default();
    }
    let torn = std::fs::symlink_metadata(events_mutex_path(path)).is_err()
        && plain_file::open(path, Links::Refuse, std::fs::OpenOptions::new().read(true))
            .is_ok_and(|(f, len)| ends_torn(&f, len).unwrap_or(false));
    LogTrouble {
        torn,
        full: fs.blocks_free == 0,
    }
}

struct FsRoom {
    read_only: bool,
    blocks_free: u64,
}

fn fs_room(dir: &Path) -> Option<FsRoom> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs(3) writes only into the zeroed struct we own; c is a
    // valid NUL-terminated path.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        st
    };
    Some(FsRoom {
        read_only: st.f_flag & libc::ST_RDONLY != 0,
        blocks_free: st.f_bavail as u64,
    })
}

/// Terminate a torn last line (doctor --fix): under the events mutex, a
/// newline where the log ends without one. True when one was written.
pub fn mend_torn_tail(path: &Path, budget: Duration) -> Result<bool, EmitError> {
    let lock_dir = events_mutex_path(path);
    let Some(guard) = mutex::lock(&lock_dir, budget, true) else {
        return Err(EmitError::LockTimeout(lock_dir));
    };
    let res = (|| {
        let (file, len, _) = open_log(path)?;
        let io = |source| EmitError::Io {
            op: "terminate the torn line of",
            path: path.to_path_buf(),
            source,
        };
        if !ends_torn(&file, len).map_err(io)? {
            return Ok(false);
        }
        (&file).write_all(b"\n").map_err(io)?;
        Ok(true)
    })();
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

    fn log_in(td: &TempDir) -> PathBuf {
        let path = events_path(Some(td.path()));
        std::fs::create_dir_all(td.path().join(".fno")).unwrap();
        path
    }

    #[test]
    fn a_line_torn_by_another_writer_is_terminated_before_the_next_lands() {
        let td = TempDir::new().unwrap();
        let path = log_in(&td);
        // What a writer that does not undo a short write leaves on a full disk.
        std::fs::write(&path, "{\"a\":1}\n{\"ts\":\"2026-01-0").unwrap();
        assert!(log_trouble(&path).torn);
        append_event(&path, &json!({"b": 2}), EVENTS_LOCK_BUDGET).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"ts\":\"2026-01-0\n{\"b\":2}\n"
        );
        assert!(!log_trouble(&path).torn);
        // A whole log gets no extra newline.
        append_event(&path, &json!({"c": 3}), EVENTS_LOCK_BUDGET).unwrap();
        assert!(std::fs::read_to_string(&path)
            .unwrap()
            .ends_with("{\"b\":2}\n{\"c\":3}\n"));
    }

    #[test]
    fn a_torn_tail_is_told_only_while_no_writer_holds_the_mutex_and_mended_under_it() {
        let td = TempDir::new().unwrap();
        let path = log_in(&td);
        std::fs::write(&path, "{\"a\":1}\n{\"half").unwrap();
        let writer = mutex::try_lock(&events_mutex_path(&path)).unwrap().unwrap();
        assert!(!log_trouble(&path).torn, "a write in flight called torn");
        drop(writer);
        assert!(log_trouble(&path).torn);
        assert!(mend_torn_tail(&path, EVENTS_LOCK_BUDGET).unwrap());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"half\n"
        );
        assert!(!mend_torn_tail(&path, EVENTS_LOCK_BUDGET).unwrap());
        assert_eq!(log_trouble(&path), LogTrouble::default());
    }

    #[test]
    fn a_fifo_planted_as_the_log_fails_the_append_even_with_a_reader_on_it() {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::OpenOptionsExt;
        let td = TempDir::new().unwrap();
        let path = log_in(&td);
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: c is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        // With a reader, a non-blocking open for writing succeeds: only
        // fstat tells that the event would vanish into a pipe.
        let _reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .unwrap();
        match append_event(&path, &json!({"x": 1}), EVENTS_LOCK_BUDGET) {
            Err(e @ EmitError::NotRegular { .. }) => {
                assert!(e.to_string().contains("a FIFO"), "{e}")
            }
            other => panic!("{other:?}"),
        }
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
