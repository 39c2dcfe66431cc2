//! Opening a file that another user could have planted where a verb reads
//! or appends: a mutex's `owner`, the events log, a config file.
//!
//! Whatever stands at the path, the open never blocks (`O_NONBLOCK`: a FIFO
//! would otherwise wait for a writer for ever, and a verb stuck there may
//! already hold a claim it can no longer give back), what was opened is used
//! only if `fstat` says it is a regular file (a socket, a device or a
//! directory is nothing the protocol writes), and a read stops at a bound
//! (a symlink to `/dev/zero` never ends). Where the protocol names the file
//! itself rather than whatever it points to, a symlink is refused too.

use std::fmt;
use std::fs::{File, FileType, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Whether a symlink at the path is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// The protocol writes a regular file here, never a link: a link is
    /// someone else's object (`O_NOFOLLOW`).
    Refuse,
    /// A user's own file, which may well be a link (a dotfile manager's).
    Follow,
}

/// What stands at a path instead of a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Foreign {
    Symlink,
    Dir,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
}

impl Foreign {
    /// The kind of a non-regular file type; None for a regular file.
    pub fn of(ft: FileType) -> Option<Foreign> {
        if ft.is_file() {
            return None;
        }
        Some(if ft.is_symlink() {
            Foreign::Symlink
        } else if ft.is_dir() {
            Foreign::Dir
        } else if ft.is_fifo() {
            Foreign::Fifo
        } else if ft.is_socket() {
            Foreign::Socket
        } else if ft.is_block_device() {
            Foreign::BlockDevice
        } else {
            Foreign::CharDevice
        })
    }

    pub fn words(self) -> &'static str {
        match self {
            Foreign::Symlink => "a symlink",
            Foreign::Dir => "a directory",
            Foreign::Fifo => "a FIFO",
            Foreign::Socket => "a socket",
            Foreign::CharDevice => "a character device",
            Foreign::BlockDevice => "a block device",
        }
    }
}

impl fmt::Display for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.words())
    }
}

/// Why a plain file could not be had.
#[derive(Debug, thiserror::Error)]
pub enum PlainError {
    /// The open, stat or read failed (`NotFound` among them).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("it is {0}, not a regular file")]
    Foreign(Foreign),
    #[error("it holds more than {0} bytes")]
    TooBig(u64),
}

impl PlainError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, PlainError::Io(e) if e.kind() == ErrorKind::NotFound)
    }

    /// As an `io::Error`, for callers whose errors carry one.
    pub fn into_io(self) -> std::io::Error {
        match self {
            PlainError::Io(e) => e,
            other => std::io::Error::new(ErrorKind::InvalidData, other.to_string()),
        }
    }
}

/// Open `path` with `opts` (read, or append and create), never blocking, and
/// only if it is a regular file. Returns the file and its length then.
pub fn open(path: &Path, links: Links, opts: &mut OpenOptions) -> Result<(File, u64), PlainError> {
    let nofollow = if links == Links::Refuse {
        libc::O_NOFOLLOW
    } else {
        0
    };
    let file = match opts
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | nofollow)
        .open(path)
    {
        Ok(f) => f,
        Err(e) => return Err(open_error(path, links, e)),
    };
    let md = file.metadata()?;
    match Foreign::of(md.file_type()) {
        None => Ok((file, md.len())),
        Some(what) => Err(PlainError::Foreign(what)),
    }
}

/// What a failed open says about the path: ELOOP under `O_NOFOLLOW` is a
/// symlink; ENXIO is a socket, or a FIFO opened for writing that nobody
/// reads; EISDIR a directory opened for writing. A look without opening
/// tells which.
fn open_error(path: &Path, links: Links, e: std::io::Error) -> PlainError {
    let telling = [libc::ELOOP, libc::ENXIO, libc::EISDIR];
    if !e.raw_os_error().is_some_and(|n| telling.contains(&n)) {
        return PlainError::Io(e);
    }
    let looked = match links {
        Links::Refuse => std::fs::symlink_metadata(path),
        Links::Follow => std::fs::metadata(path),
    };
    match looked.ok().and_then(|md| Foreign::of(md.file_type())) {
        Some(what) => PlainError::Foreign(what),
        None => PlainError::Io(e),
    }
}

/// The whole of a regular file at `path`, if it holds at most `cap` bytes.
pub fn read(path: &Path, links: Links, cap: u64) -> Result<Vec<u8>, PlainError> {
    let (file, len) = open(path, links, OpenOptions::new().read(true))?;
    if len > cap {
        return Err(PlainError::TooBig(cap));
    }
    // One read of what fstat promised, plus a byte: a regular file that
    // delivers exactly its length is whole (the EOF probe `read_to_end`
    // would add is a syscall on every mutex release). Anything else - a
    // short read, a file that grew - reads on, never past `cap + 1`.
    let mut bytes = vec![0u8; len as usize + 1];
    let mut file = file;
    let first = loop {
        match file.read(&mut bytes) {
            Ok(n) => break n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    };
    bytes.truncate(first);
    if first as u64 != len {
        file.take(cap + 1 - first as u64).read_to_end(&mut bytes)?;
    }
    if bytes.len() as u64 > cap {
        return Err(PlainError::TooBig(cap));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn mkfifo(p: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).expect("path");
        // SAFETY: c is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn a_regular_file_is_read_whole_up_to_its_bound_and_refused_past_it() {
        let td = tempfile::tempdir().expect("tempdir");
        let p = td.path().join("f");
        std::fs::write(&p, b"host:1:2").expect("write");
        assert_eq!(read(&p, Links::Refuse, 8).expect("read"), b"host:1:2");
        assert!(matches!(
            read(&p, Links::Refuse, 7),
            Err(PlainError::TooBig(7))
        ));
        assert!(read(&td.path().join("none"), Links::Refuse, 8)
            .expect_err("absent")
            .is_not_found());
    }

    #[test]
    fn nothing_but_a_regular_file_is_opened_and_nothing_blocks() {
        let td = tempfile::tempdir().expect("tempdir");
        let fifo = td.path().join("fifo");
        mkfifo(&fifo);
        let sock = td.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).expect("bind");
        let zero = td.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let dir = td.path().join("dir");
        std::fs::create_dir(&dir).expect("mkdir");
        let t = Instant::now();
        for (p, links, what) in [
            (&fifo, Links::Refuse, Foreign::Fifo),
            (&sock, Links::Refuse, Foreign::Socket),
            (&zero, Links::Refuse, Foreign::Symlink),
            (&zero, Links::Follow, Foreign::CharDevice),
            (&dir, Links::Refuse, Foreign::Dir),
        ] {
            match read(p, links, 1 << 20) {
                Err(PlainError::Foreign(w)) => assert_eq!(w, what, "{p:?}"),
                other => panic!("{p:?} {links:?}: {other:?}"),
            }
            let mut append = OpenOptions::new();
            append.append(true).create(true);
            match open(p, links, &mut append) {
                Err(PlainError::Foreign(w)) => assert_eq!(w, what, "{p:?} for append"),
                other => panic!("{p:?} {links:?} for append: {other:?}"),
            }
        }
        // Does not hang: a generous bound, the property is "returns at all".
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }
}
