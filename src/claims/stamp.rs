//! A lockfile's stamp: what `lstat` said of it when it was read, so that a
//! listing that holds the claim already may skip a file that has not
//! changed since (the mirror's slow safety net, which repairs a lost
//! notification, need not read and parse every lockfile again).
//!
//! A lockfile is replaced by rename(2), so a new tenure is a new inode;
//! anything written into a file in place changes its ctime, which no
//! caller can set back. The stamp is taken before the file is read: a
//! change after the stat makes the next stat differ, a change before it is
//! in what was read. A file whose ctime is too close to the clock at its stat
//! gets no stamp (see [`SETTLED_MS`]) and is read again next time.
//! On NFS an `lstat` may answer from the client's attribute cache (up to a
//! minute by default), so a change made on another host may be seen one
//! re-list later than a read would have seen it.

use super::dir_listing::DirListing;
use super::sweep_read::Listed;
use std::path::{Path, PathBuf};

/// A write in place within the same tick of the filesystem's clock as
/// the change before it leaves the ctime as it was; so a file is trusted
/// by its stamp only once its ctime is this far behind the clock when it
/// is stat'ed (coarse kernel ticks are milliseconds; some filesystems keep
/// whole seconds). As git's index treats a racily clean entry.
pub const SETTLED_MS: i64 = 2_000;

/// What `lstat` says of a regular file that tells one content from
/// another: its device and inode (a new tenure is a new one), its size and
/// its times to the nanosecond (any write in place moves ctime), kept as
/// one 64-bit digest of them (8 bytes a row, where the fields are 40):
/// keyed afresh by each process, so no writer can aim at a collision, and
/// a change is missed by one only once in 2^64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp(u64);

/// The digest's keys, drawn once a process.
fn keys() -> &'static std::collections::hash_map::RandomState {
    static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    KEYS.get_or_init(Default::default)
}

impl Stamp {
    /// The stamp of what `st` describes.
    // The fields' types differ from one platform to another.
    #[allow(clippy::unnecessary_cast)]
    pub fn of(st: &libc::stat) -> Stamp {
        Stamp::digest([
            st.st_dev as i64,
            st.st_ino as i64,
            st.st_size as i64,
            st.st_mtime as i64,
            st.st_mtime_nsec as i64,
            st.st_ctime as i64,
            st.st_ctime_nsec as i64,
        ])
    }

    fn digest(fields: [i64; 7]) -> Stamp {
        use std::hash::{BuildHasher, Hasher};
        let mut h = keys().build_hasher();
        for f in fields {
            h.write_i64(f);
        }
        Stamp(h.finish())
    }

    /// The stamp of a regular file whose last change is settled as of
    /// `now` (epoch ms, the real clock); None for anything else, which is
    /// read each time.
    pub fn settled(st: &libc::stat, now: i64) -> Option<Stamp> {
        // The fields' types differ from one platform to another.
        #[allow(clippy::unnecessary_cast)]
        let settled = settled(st.st_ctime as i64, st.st_ctime_nsec as i64, now);
        let regular = st.st_mode & libc::S_IFMT == libc::S_IFREG;
        (regular && settled).then(|| Stamp::of(st))
    }

    /// The stamp of the directory at `dir` (followed, as a listing follows
    /// it), when its last change is settled as of `now`: an entry made,
    /// removed or renamed in it moves its mtime and ctime, a chmod its
    /// ctime, and a directory put in its place has another inode. What is
    /// written into an entry in place does not move it: a stamp of the
    /// directory says its listing names the same files, not that each
    /// holds what it held.
    pub fn of_dir(dir: &Path, now: i64) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(dir).ok().filter(|m| m.is_dir())?;
        settled(m.ctime(), m.ctime_nsec(), now).then(|| {
            Stamp::digest([
                m.dev() as i64,
                m.ino() as i64,
                m.size() as i64,
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            ])
        })
    }
}

/// A change whose ctime (seconds and nanoseconds) is [`SETTLED_MS`] old as
/// of `now` is trusted; one from the future (a skewed clock) never is.
fn settled(ctime_s: i64, ctime_ns: i64, now: i64) -> bool {
    let ctime_ms = ctime_s
        .saturating_mul(1000)
        .saturating_add(ctime_ns / 1_000_000);
    ctime_ms <= now.saturating_sub(SETTLED_MS)
}

/// What a listing's caller holds already: the stamp each lockfile (by
/// path) was read at, None where it holds none.
pub type Held<'a> = &'a (dyn Fn(&Path) -> Option<Stamp> + Sync);

/// A listing's lockfiles sorted into those to read, each with its stamp
/// as of now, and those the caller holds unchanged (by path), not read.
pub(super) struct Split {
    pub read: Vec<Listed>,
    pub stamps: Vec<Option<Stamp>>,
    pub kept: Vec<PathBuf>,
}

/// One `lstat` per lockfile, relative to the listing, at `now` (the real
/// clock): a file whose stamp is the one `held` has is kept, every other
/// is read. Without `held` nothing is stat'ed and every file is read,
/// unstamped.
pub(super) fn split(dir: &DirListing, files: Vec<Listed>, held: Option<Held>, now: i64) -> Split {
    let Some(held) = held else {
        return Split {
            read: files,
            stamps: Vec::new(),
            kept: Vec::new(),
        };
    };
    let mut out = Split {
        read: Vec::with_capacity(files.len()),
        stamps: Vec::with_capacity(files.len()),
        kept: Vec::new(),
    };
    for l in files {
        let name = &l.path.as_os_str().as_encoded_bytes()[l.name_at..];
        // A file gone since the listing is read, and found gone.
        let stamp = dir
            .stat_entry(name)
            .ok()
            .and_then(|st| Stamp::settled(&st, now));
        match stamp {
            Some(s) if held(&l.path) == Some(s) => out.kept.push(l.path),
            _ => {
                out.read.push(l);
                out.stamps.push(stamp);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch_ms(t: std::time::SystemTime) -> i64 {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }

    #[test]
    fn a_directory_is_stamped_only_once_its_last_change_has_settled() {
        let td = tempfile::tempdir().expect("tempdir");
        let now = epoch_ms(std::time::SystemTime::now());
        assert_eq!(Stamp::of_dir(td.path(), now), None, "just made");
        let later = now + SETTLED_MS + 1_000;
        assert!(Stamp::of_dir(td.path(), later).is_some());
        // A clock behind the filesystem's trusts nothing.
        assert_eq!(Stamp::of_dir(td.path(), now - 60_000), None);
        let file = td.path().join("f");
        std::fs::write(&file, "x").expect("write");
        assert_eq!(Stamp::of_dir(&file, later), None, "not a directory");
        assert_eq!(Stamp::of_dir(&td.path().join("gone"), later), None);
    }

    #[test]
    fn a_directory_s_stamp_moves_with_each_entry_made_renamed_or_removed() {
        let td = tempfile::tempdir().expect("tempdir");
        let dir = td.path().join("claims");
        std::fs::create_dir(&dir).expect("dir");
        let later = || epoch_ms(std::time::SystemTime::now()) + SETTLED_MS + 1_000;
        let stamp = || Stamp::of_dir(&dir, later()).expect("settled");
        let mut seen = vec![stamp()];
        let changed = |what: &str, seen: &mut Vec<Stamp>| {
            // A coarse filesystem clock: let its tick pass.
            std::thread::sleep(std::time::Duration::from_millis(20));
            let s = stamp();
            assert!(!seen.contains(&s), "{what} left the stamp as it was");
            seen.push(s);
        };
        std::fs::write(dir.join("a.lock"), "one").expect("write");
        changed("a new entry", &mut seen);
        std::fs::write(dir.join("tmp"), "two").expect("write");
        std::fs::rename(dir.join("tmp"), dir.join("a.lock")).expect("rename");
        changed("a rename over an entry", &mut seen);
        std::fs::remove_file(dir.join("a.lock")).expect("remove");
        changed("a removal", &mut seen);
        let before = stamp();
        assert_eq!(stamp(), before, "nothing done, nothing moved");
    }
}
