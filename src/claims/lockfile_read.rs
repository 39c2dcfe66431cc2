//! Reading a lockfile: bounded, never following a symlink, never blocking
//! on a FIFO, and every failure a verdict a sweep can act on (gone,
//! corrupted, or unreadable and so treated as held).

use super::record::{ClaimRecord, ParseError, MAX_LOCKFILE_BYTES};
use std::io::ErrorKind;
use std::io::Read;
use std::path::Path;

/// Why a lockfile could not be turned into a record.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    /// The file vanished between listing (or collision) and read: a release or
    /// an archive won the race. Callers treat it as Free and retry.
    GoneAway,
    /// Present but not a claim we can verify.
    Corrupted { reason: String, head: Vec<u8> },
    /// Present, perhaps a valid claim, but not readable here (permission,
    /// I/O, or refused for its size or parse cost): treated as held.
    Unreadable { reason: String },
}

impl ReadError {
    pub fn reason(&self) -> &str {
        match self {
            ReadError::GoneAway => "claim file vanished while being read",
            ReadError::Corrupted { reason, .. } | ReadError::Unreadable { reason } => reason,
        }
    }
}

/// How many leading bytes of a corrupted file are kept for display.
pub const CORRUPT_HEAD_BYTES: usize = 256;

/// Read a lockfile's bytes, refusing anything that is not a plain file.
///
/// O_NOFOLLOW: a symlink planted as a lockfile is not a claim, and following
/// it would let a sweep read (and a verdict act on) a file outside the claims
/// dir. O_NONBLOCK: a FIFO named `*.lock` must never hang a sweep in open().
pub fn read_lockfile_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    let corrupted = |reason: String| ReadError::Corrupted {
        reason,
        head: Vec::new(),
    };
    let unreadable = |reason: String| ReadError::Unreadable { reason };
    let file = open_lockfile(path)?;
    let meta = file
        .metadata()
        .map_err(|e| unreadable(format!("claim stat failed: {e}")))?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(corrupted(format!("lockfile is {what}")));
    }
    let expect = meta.len().min(MAX_LOCKFILE_BYTES) as usize;
    let mut bytes = vec![0u8; expect + 1];
    let mut file = file;
    // A published lockfile is never written in place (writers link or rename
    // a finished temp), so once a read has delivered every byte fstat
    // promised, the EOF probe read_to_end would add is a wasted syscall on
    // every file of every sweep. Anything else (a short read, a file longer
    // than its stat) falls through to reading until EOF.
    let first = loop {
        match file.read(&mut bytes) {
            Ok(n) => break n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(unreadable(format!("claim read failed: {e}"))),
        }
    };
    bytes.truncate(first);
    if first != expect {
        file.take(MAX_LOCKFILE_BYTES + 1 - first as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| unreadable(format!("claim read failed: {e}")))?;
    }
    Ok(bytes)
}

/// Open a lockfile for reading: no symlink followed, no FIFO waited on.
fn open_lockfile(path: &Path) -> Result<std::fs::File, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => Ok(f),
        Err(e) => Err(open_error(e)),
    }
}

/// What a failed open of a lockfile says about it.
fn open_error(e: std::io::Error) -> ReadError {
    if matches!(e.kind(), ErrorKind::NotFound) {
        ReadError::GoneAway
    } else if e.raw_os_error() == Some(libc::ELOOP) {
        ReadError::Corrupted {
            reason: "lockfile is a symlink; refusing to follow it".into(),
            head: Vec::new(),
        }
    } else {
        // EACCES, EIO...: the file may be a perfectly good claim that this
        // user cannot read. Calling it corrupted would let them archive a
        // live claim they cannot even see.
        ReadError::Unreadable {
            reason: format!("claim read failed: {e}"),
        }
    }
}

/// Most lockfiles are a few hundred bytes: one read of this size takes a
/// whole one (a bigger one, with metadata, takes the guarded way).
const LISTED_READ: usize = 1024;

/// [`read_lockfile_bytes`] for an entry the directory listing already
/// called a regular file (`d_type`): a short, non-empty read is the whole
/// file, so the `fstat` (a syscall per file of every sweep) is left out.
/// Anything else (an empty or larger file, an error, an entry swapped for a
/// directory or FIFO since the listing) is read again the guarded way, so
/// every verdict stays that of [`read_lockfile_bytes`].
pub fn read_listed_lockfile_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    read_listed_lockfile_into(path, &mut bytes)?;
    Ok(bytes)
}

/// [`read_listed_lockfile_bytes`] into the caller's buffer, which a sweep
/// keeps from one file to the next rather than allocating one per file.
pub fn read_listed_lockfile_into(path: &Path, bytes: &mut Vec<u8>) -> Result<(), ReadError> {
    let file = open_lockfile(path)?;
    read_listed_open(file, path, bytes)
}

/// [`read_listed_lockfile_into`] for an entry of an open listing of the
/// claims dir: `name` is opened relative to it (same flags, same verdicts),
/// and `path` is only for the guarded re-read of an unusual file.
pub fn read_listed_at(
    dir: &super::dir_listing::DirListing,
    name: &[u8],
    path: &Path,
    bytes: &mut Vec<u8>,
) -> Result<(), ReadError> {
    let file = dir.open_file(name).map_err(open_error)?;
    read_listed_open(file, path, bytes)
}

fn read_listed_open(
    file: std::fs::File,
    path: &Path,
    bytes: &mut Vec<u8>,
) -> Result<(), ReadError> {
    use std::os::fd::AsRawFd;
    bytes.clear();
    // Into spare capacity: zeroing a buffer first (`vec![0; n]` or a stack
    // array) cost more than the fstat this saves.
    bytes.reserve(LISTED_READ);
    // SAFETY: the pointer is valid for LISTED_READ bytes of the Vec's spare
    // capacity (reserved above, the Vec being empty), read(2) writes at most
    // that many into it, and set_len below covers only the bytes it reported
    // written.
    let n = unsafe { libc::read(file.as_raw_fd(), bytes.as_mut_ptr().cast(), LISTED_READ) };
    match usize::try_from(n) {
        Ok(n) if n > 0 && n < LISTED_READ => {
            // SAFETY: read(2) initialised exactly the first n bytes.
            unsafe { bytes.set_len(n) };
            Ok(())
        }
        // An error (EINTR included), an empty or a longer file: the guarded way.
        _ => {
            *bytes = read_lockfile_bytes(path)?;
            Ok(())
        }
    }
}

/// Read and parse one lockfile.
pub fn read_claim_file(path: &Path) -> Result<ClaimRecord, ReadError> {
    read_claim_file_raw(path).map(|(rec, _)| rec)
}

/// Read and parse one lockfile, keeping the bytes (archive verification
/// compares them; the dashboard shows the head of a corrupted file).
pub fn read_claim_file_raw(path: &Path) -> Result<(ClaimRecord, Vec<u8>), ReadError> {
    parse_claim_bytes(read_lockfile_bytes(path)?)
}

fn parse_claim_bytes(bytes: Vec<u8>) -> Result<(ClaimRecord, Vec<u8>), ReadError> {
    parse_lockfile_bytes(&bytes).map(|rec| (rec, bytes))
}

/// Lockfile bytes as a record, or why they are none: the verdict a read of
/// these bytes gives, keeping the head of a corrupted file for display.
pub fn parse_lockfile_bytes(bytes: &[u8]) -> Result<ClaimRecord, ReadError> {
    match ClaimRecord::from_bytes(bytes) {
        Ok(rec) => Ok(rec),
        Err(ParseError::TooCostly(reason)) => Err(ReadError::Unreadable { reason }),
        Err(ParseError::Invalid(reason)) => Err(ReadError::Corrupted {
            reason,
            head: bytes[..bytes.len().min(CORRUPT_HEAD_BYTES)].to_vec(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::record::tests::rec;

    #[test]
    fn special_files_read_as_corrupted_never_followed() {
        let td = tempfile::TempDir::new().unwrap();
        let dir = td.path().join("d.lock");
        std::fs::create_dir(&dir).unwrap();
        assert!(matches!(
            read_claim_file(&dir),
            Err(ReadError::Corrupted { .. })
        ));
        let target = td.path().join("real");
        std::fs::write(&target, rec().to_yaml().unwrap()).unwrap();
        let link = td.path().join("l.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = read_claim_file(&link).unwrap_err();
        assert!(err.reason().contains("symlink"), "{err:?}");
        // Too big is unreadable (state-neutral), not corrupted.
        let big = td.path().join("big.lock");
        std::fs::write(&big, vec![b'a'; (MAX_LOCKFILE_BYTES + 10) as usize]).unwrap();
        assert!(matches!(
            read_claim_file(&big),
            Err(ReadError::Unreadable { reason }) if reason.contains("larger")
        ));
        assert_eq!(
            read_claim_file(&td.path().join("missing.lock")),
            Err(ReadError::GoneAway)
        );
    }

    #[test]
    fn a_listed_read_answers_exactly_as_the_guarded_read_whatever_the_entry_became() {
        let td = tempfile::TempDir::new().unwrap();
        let p = |n: &str| td.path().join(n);
        std::fs::write(p("small.lock"), rec().to_yaml().unwrap()).unwrap();
        std::fs::write(p("empty.lock"), b"").unwrap();
        std::fs::write(p("edge.lock"), vec![b'k'; LISTED_READ - 1]).unwrap();
        std::fs::write(p("full.lock"), vec![b'k'; LISTED_READ]).unwrap();
        std::fs::write(p("long.lock"), vec![b'k'; 3 * LISTED_READ + 7]).unwrap();
        let huge = vec![b'a'; (MAX_LOCKFILE_BYTES + 10) as usize];
        std::fs::write(p("huge.lock"), huge).unwrap();
        std::fs::create_dir(p("dir.lock")).unwrap();
        std::os::unix::fs::symlink(p("small.lock"), p("link.lock")).unwrap();
        let fifo = std::ffi::CString::new(p("fifo.lock").into_os_string().into_encoded_bytes());
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(fifo.unwrap().as_ptr(), 0o600) }, 0);
        for name in [
            "small.lock",
            "empty.lock",
            "edge.lock",
            "full.lock",
            "long.lock",
            "huge.lock",
            "dir.lock",
            "link.lock",
            "fifo.lock",
            "missing.lock",
        ] {
            assert_eq!(
                read_listed_lockfile_bytes(&p(name)),
                read_lockfile_bytes(&p(name)),
                "{name}"
            );
        }
    }

    #[test]
    fn a_fifo_named_like_a_lockfile_never_blocks_the_reader() {
        let td = tempfile::TempDir::new().unwrap();
        let fifo = td.path().join("f.lock");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_claim_file(&fifo).unwrap_err();
        assert!(err.reason().contains("not a regular file"), "{err:?}");
    }
}
