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
        use std::hash::{BuildHasher, Hasher};
        let mut h = keys().build_hasher();
        h.write_u64(st.st_dev as u64);
        h.write_u64(st.st_ino as u64);
        h.write_i64(st.st_size as i64);
        h.write_i64(st.st_mtime as i64);
        h.write_i64(st.st_mtime_nsec as i64);
        h.write_i64(st.st_ctime as i64);
        h.write_i64(st.st_ctime_nsec as i64);
        Stamp(h.finish())
    }

    /// The stamp of a regular file whose last change is settled as of
    /// `now` (epoch ms, the real clock); None for anything else, which is
    /// read each time.
    pub fn settled(st: &libc::stat, now: i64) -> Option<Stamp> {
        // The fields' types differ from one platform to another.
        #[allow(clippy::unnecessary_cast)]
        let ctime_ms = (st.st_ctime as i64)
            .saturating_mul(1000)
            .saturating_add(st.st_ctime_nsec as i64 / 1_000_000);
        let regular = st.st_mode & libc::S_IFMT == libc::S_IFREG;
        let settled = ctime_ms <= now.saturating_sub(SETTLED_MS);
        (regular && settled).then(|| Stamp::of(st))
    }
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
