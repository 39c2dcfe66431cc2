//! The three filesystem moves of the protocol: exclusive create (temp +
//! `link(2)`), replace (temp + `rename(2)`), and archive (rename into
//! `.expired/`, never unlink).

use super::key::{archive_name, temp_path};
use super::lockfile_read::read_lockfile_bytes;
use super::{ClaimError, EXPIRED_SUBDIR};
use crate::sys::rename_noreplace;
// Re-exported where they lived before: other code names them by these paths.
pub use super::key::{CREATE_TMP_PREFIX, REPLACE_TMP_INFIX};
use std::io::ErrorKind;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why an exclusive create did not publish.
#[derive(Debug)]
pub enum CreateError {
    /// The path exists: a concurrent winner published first.
    AlreadyHeld,
    Io(std::io::Error),
}

/// Write `content` to a new file at `tmp` (O_EXCL, so a planted file or
/// symlink at that name is never written through). On failure nothing is left.
fn write_new(tmp: &Path, content: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)?;
    // No fsync: once write returns a same-filesystem reader sees the bytes via
    // the page cache, which is all the publish needs; a lockfile does not have
    // to survive a power cut.
    if let Err(e) = f.write_all(content) {
        drop(f);
        let _ = std::fs::remove_file(tmp);
        return Err(e);
    }
    Ok(())
}

/// How often a create re-makes a claims dir that keeps vanishing.
const CREATE_DIR_TRIES: usize = 3;

/// Atomically create `path` with `content`, failing if it exists.
///
/// The temp file lives in the claims dir itself and is `link(2)`ed into place:
/// a reader sees no file or a whole one, never a created-but-empty file that
/// would parse as Corrupted, and EEXIST names the loser. A missing parent is
/// created and the create retried (a few times, if it keeps vanishing). Any other failure (ENOSPC,
/// EACCES, EROFS) leaves neither a partial lockfile nor the temp behind.
pub fn create_exclusive(path: &Path, content: &[u8]) -> Result<(), CreateError> {
    let Some(parent) = path.parent() else {
        return Err(CreateError::Io(std::io::Error::new(
            ErrorKind::InvalidInput,
            "claim path has no parent",
        )));
    };
    let mut res = create_via_link(parent, path, content);
    // A missing claims dir is made and the create retried; a dir deleted
    // again in between (an operator's `rm -rf`) gets a few more tries.
    // `create_dir_all` itself answers EEXIST when the dir vanishes between
    // its mkdir and its is-a-dir check: that EEXIST names no lockfile, so it
    // must never reach the caller as "held" or as a "File exists" error.
    for _ in 0..CREATE_DIR_TRIES {
        match &res {
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            _ => break,
        }
        match std::fs::create_dir_all(parent) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(CreateError::Io(e)),
        }
        res = create_via_link(parent, path, content);
    }
    res.map_err(|e| {
        if e.kind() == ErrorKind::AlreadyExists {
            CreateError::AlreadyHeld
        } else {
            CreateError::Io(e)
        }
    })
}

fn create_via_link(parent: &Path, path: &Path, content: &[u8]) -> std::io::Result<()> {
    let tmp = temp_path(parent);
    write_new(&tmp, content)?;
    let res = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    res
}

/// Replace `path` with `content` via a temp file in the same dir + rename.
pub fn replace(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let Some(parent) = path.parent() else {
        return Err(std::io::Error::new(
            ErrorKind::InvalidInput,
            "claim path has no parent",
        ));
    };
    let tmp = temp_path(parent);
    write_new(&tmp, content)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// What an archive did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Archived {
    /// Moved to this path in `.expired/`.
    To(PathBuf),
    /// The source had already gone (another actor archived or released it).
    Gone,
    /// The file changed between the caller's judgement and the rename (its
    /// holder rewrote it); it was linked back into place, untouched.
    PutBack,
    /// Changed, and the key was re-created meanwhile so it could not be put
    /// back; the changed file stays in `.expired/` (nothing is lost).
    ChangedAndKept(PathBuf),
}

/// The archive dir, refusing anything but a real directory there: a symlink
/// planted as `.expired` would make the archive rename move a claim out of
/// the claims dir.
pub fn expired_dir(claims_dir: &Path) -> Result<PathBuf, ClaimError> {
    let dir = claims_dir.join(EXPIRED_SUBDIR);
    match std::fs::symlink_metadata(&dir) {
        Ok(md) if md.is_dir() => Ok(dir),
        Ok(_) => Err(ClaimError::Unsafe {
            path: dir,
            why: "the archive dir is not a real directory (symlink or file)".into(),
        }),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound) => match std::fs::create_dir(&dir) {
            Ok(()) => Ok(dir),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => expired_dir(claims_dir),
            Err(e) => Err(ClaimError::io("create archive dir", dir, e)),
        },
        Err(e) => Err(ClaimError::io("stat archive dir", dir, e)),
    }
}

/// Archive the lockfile at `path` as `.expired/<enc>.<now_ms>.lock`.
///
/// `judged` is the content the caller classified. The holder can rewrite the
/// file (idempotent re-acquire, renew) between that judgement and the rename,
/// and archiving the NEW content would take a live claim away. So after the
/// rename the archived bytes are compared, and a changed file is put back with
/// `link(2)` (never a rename, which could clobber a claim created meanwhile).
pub fn archive(path: &Path, now_ms: i64, judged: Option<&[u8]>) -> Result<Archived, ClaimError> {
    let name = path.file_name().and_then(std::ffi::OsStr::to_str);
    let (Some(parent), Some(name)) = (path.parent(), name) else {
        return Err(ClaimError::Unsafe {
            path: path.to_path_buf(),
            why: "not a lockfile path".into(),
        });
    };
    // Once: the key "a.lock" lives in "a.lock.lock".
    let stem = match name.strip_suffix(".lock") {
        Some(stem) => stem,
        None => name,
    };
    let dir = expired_dir(parent)?;
    // Same key archived twice within one millisecond must not overwrite the
    // first archive: bump the stamp instead of clobbering the forensic trail.
    let mut stamp = now_ms;
    #[cfg(test)]
    crate::fault::at(crate::fault::Point::ArchiveRename, path);
    let target = loop {
        let target = dir.join(archive_name(stem, stamp));
        match rename_noreplace(path, &target) {
            Ok(()) => break target,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound) => return Ok(Archived::Gone),
            Err(e) if e.kind() == ErrorKind::AlreadyExists && stamp < now_ms + 1000 => {
                stamp += 1;
            }
            Err(e) => return Err(ClaimError::io("archive", path, e)),
        }
    };
    let Some(judged) = judged else {
        return Ok(Archived::To(target));
    };
    // Read as any lockfile is (bounded, no link followed, never waiting on
    // a FIFO): what was judged was a claim, and anything swapped in since -
    // a FIFO, a link to /dev/zero - is "changed", never a reason to hang.
    match read_lockfile_bytes(&target) {
        Ok(now) if now == judged => Ok(Archived::To(target)),
        _ => match std::fs::hard_link(&target, path) {
            Ok(()) => {
                let _ = std::fs::remove_file(&target);
                Ok(Archived::PutBack)
            }
            Err(_) => Ok(Archived::ChangedAndKept(target)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn exclusive_create_publishes_once_and_leaves_no_temp() {
        let td = TempDir::new().unwrap();
        let p = td.path().join("claims/k.lock");
        create_exclusive(&p, b"one").unwrap();
        assert!(matches!(
            create_exclusive(&p, b"two"),
            Err(CreateError::AlreadyHeld)
        ));
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        assert_eq!(names(&td.path().join("claims")), vec!["k.lock"]);
    }

    #[test]
    fn a_read_only_claims_dir_fails_cleanly_with_nothing_left() {
        if unsafe { libc::geteuid() } == 0 {
            // root ignores directory permissions; the tmpfs/EROFS variants in
            // the fault suite cover this case there.
            return;
        }
        let td = TempDir::new().unwrap();
        let dir = td.path().join("claims");
        std::fs::create_dir(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        assert!(matches!(
            create_exclusive(&dir.join("k.lock"), b"x"),
            Err(CreateError::Io(_))
        ));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(names(&dir).is_empty());
    }

    #[test]
    fn replace_swaps_content_and_leaves_no_temp() {
        let td = TempDir::new().unwrap();
        let p = td.path().join("k.lock");
        std::fs::write(&p, b"old").unwrap();
        replace(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(names(td.path()), vec!["k.lock"]);
    }

    #[test]
    fn replace_works_for_a_lockfile_name_at_the_length_limit() {
        let td = TempDir::new().unwrap();
        let p = td.path().join(format!("{}.lock", "k".repeat(240)));
        create_exclusive(&p, b"old").unwrap();
        replace(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(names(td.path()).len(), 1);
    }

    #[test]
    fn archive_renames_into_expired_never_unlinks() {
        let td = TempDir::new().unwrap();
        let p = td.path().join("node%3Ax.lock");
        std::fs::write(&p, b"body").unwrap();
        let out = archive(&p, 1234, Some(b"body")).unwrap();
        let want = td.path().join(".expired/node%3Ax.1234.lock");
        assert_eq!(out, Archived::To(want.clone()));
        assert_eq!(std::fs::read(want).unwrap(), b"body");
        assert!(!p.exists());
        assert_eq!(archive(&p, 1235, None).unwrap(), Archived::Gone);
    }

    #[test]
    fn a_lockfile_at_the_name_limit_is_archived_under_a_shortened_name() {
        let td = TempDir::new().unwrap();
        let stem = "k".repeat(240);
        let p = td.path().join(format!("{stem}.lock"));
        std::fs::write(&p, b"body").unwrap();
        let stamp = 1_796_000_000_000;
        let Archived::To(to) = archive(&p, stamp, Some(b"body")).unwrap() else {
            panic!("not archived");
        };
        let name = to.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), 255);
        assert!(name.starts_with("kkk") && name.ends_with(&format!(".{stamp}.lock")));
        assert_eq!(std::fs::read(&to).unwrap(), b"body");
        assert!(!p.exists());
        // Short names are untouched, and a cut never splits a character.
        assert_eq!(archive_name("node%3Ax", 7), "node%3Ax.7.lock");
        let wide = archive_name(&"é".repeat(120), stamp);
        assert!(wide.len() <= 255 && wide.ends_with(".lock"));
    }

    #[test]
    fn two_archives_in_one_millisecond_keep_both_files() {
        let td = TempDir::new().unwrap();
        let p = td.path().join("k.lock");
        std::fs::write(&p, b"first").unwrap();
        archive(&p, 7, None).unwrap();
        std::fs::write(&p, b"second").unwrap();
        archive(&p, 7, None).unwrap();
        assert_eq!(
            names(&td.path().join(".expired")),
            vec!["k.7.lock", "k.8.lock"]
        );
    }

    #[test]
    fn a_claim_rewritten_after_judgement_is_put_back_not_archived() {
        let td = TempDir::new().unwrap();
        let p = td.path().join("k.lock");
        std::fs::write(&p, b"renewed by its holder").unwrap();
        let out = archive(&p, 9, Some(b"what was judged stale")).unwrap();
        assert_eq!(out, Archived::PutBack);
        assert_eq!(std::fs::read(&p).unwrap(), b"renewed by its holder");
        assert!(names(&td.path().join(".expired")).is_empty());
    }

    #[test]
    fn a_symlinked_archive_dir_is_refused() {
        let td = TempDir::new().unwrap();
        let outside = TempDir::new().unwrap();
        std::os::unix::fs::symlink(outside.path(), td.path().join(".expired")).unwrap();
        let p = td.path().join("k.lock");
        std::fs::write(&p, b"x").unwrap();
        assert!(matches!(
            archive(&p, 1, None),
            Err(ClaimError::Unsafe { .. })
        ));
        assert!(p.exists());
        assert!(names(outside.path()).is_empty());
    }
}
