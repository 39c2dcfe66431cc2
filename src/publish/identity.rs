//! Which directory a root is, whatever path reached it: one root id for one
//! directory.
//!
//! A root's id is a hash of its path, so two paths to one directory would
//! publish it twice, under two ids, and the one-publisher-per-root rule
//! would not see the second. A canonical path already folds symlinks; a
//! bind mount it does not (`/mnt/b` bound onto `/srv/data/a` is a path of
//! its own). So the path a root is known by is the one its file system's
//! own mount gives it: the mount it lies on names the file system
//! (`major:minor`) and the directory's place inside it, and the mount of
//! that file system nearest its top (its own root, usually) turns that
//! place back into a path. The path is kept only if it reaches the very
//! same directory (device and inode): a mount over part of it, or a file
//! system mounted only in pieces, leaves the canonical path as it was.
//! Stable across restarts as long as the mounts are: an unchanged root
//! keeps its id.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The path a root is published under (see the module's notes), from its
/// canonical path.
pub fn root_identity(canonical: &Path) -> PathBuf {
    let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return canonical.to_path_buf();
    };
    resolve(canonical, &mountinfo, |p| {
        std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
    })
}

/// One line of `/proc/self/mountinfo`: the file system, the directory of
/// it mounted, and where.
#[derive(Debug)]
struct Mount {
    dev: String,
    root: PathBuf,
    point: PathBuf,
}

fn parse(mountinfo: &str) -> Vec<Mount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let mut f = line.split(' ');
            let dev = f.nth(2)?.to_string();
            let root = PathBuf::from(unescape(f.next()?));
            let point = PathBuf::from(unescape(f.next()?));
            Some(Mount { dev, root, point })
        })
        .collect()
}

/// A mountinfo path: space, tab, newline and backslash are written as
/// three octal digits after a backslash.
fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `canonical` as the mount of its file system nearest that file system's
/// top reaches it, if that path is the same directory (`id` gives a path's
/// device and inode); else `canonical`.
fn resolve(canonical: &Path, mountinfo: &str, id: impl Fn(&Path) -> Option<(u64, u64)>) -> PathBuf {
    let mounts = parse(mountinfo);
    // The mount `canonical` lies on: the deepest mount point above it, and
    // of several at one point the last mounted (it hides the others).
    let on = mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| canonical.starts_with(&m.point))
        .max_by_key(|(i, m)| (m.point.components().count(), *i))
        .map(|(_, m)| m);
    let Some(on) = on else {
        return canonical.to_path_buf();
    };
    let Ok(below) = canonical.strip_prefix(&on.point) else {
        return canonical.to_path_buf();
    };
    let inside = on.root.join(below);
    let Some(me) = id(canonical) else {
        return canonical.to_path_buf();
    };
    let mut same_fs: Vec<&Mount> = mounts
        .iter()
        .filter(|m| m.dev == on.dev && inside.starts_with(&m.root))
        .collect();
    // Nearest the file system's top first; among equals, the first mounted.
    same_fs.sort_by_key(|m| m.root.components().count());
    same_fs
        .into_iter()
        .filter_map(|m| Some(m.point.join(inside.strip_prefix(&m.root).ok()?)))
        .map(|p| normalised(&p))
        .find(|p| id(p) == Some(me))
        .unwrap_or_else(|| canonical.to_path_buf())
}

/// `p` without a trailing empty component (`/srv/` joined with `` is `/srv/`).
fn normalised(p: &Path) -> PathBuf {
    p.components().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The root file system at `/`, `/data/a` of it bound again at
    /// `/mnt/b`, a tmpfs at `/tmp` and a directory of it bound at `/mnt/t`.
    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:25 / /tmp rw,nosuid shared:5 - tmpfs tmpfs rw
45 22 254:0 /data/a /mnt/b rw,relatime shared:1 - ext4 /dev/vda rw
46 22 0:25 /x\\040y /mnt/t rw,nosuid shared:5 - tmpfs tmpfs rw
";

    /// Device and inode as the mounts above make them: a path under a bind
    /// mount is the directory it binds.
    fn id(p: &Path) -> Option<(u64, u64)> {
        let s = p.to_str()?;
        let s = match s.strip_prefix("/mnt/b") {
            Some(rest) => format!("/data/a{rest}"),
            None => match s.strip_prefix("/mnt/t") {
                Some(rest) => format!("/tmp/x y{rest}"),
                None => s.to_string(),
            },
        };
        let dev = if s.starts_with("/tmp") { 25 } else { 1 };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::hash::Hash::hash(&s, &mut h);
        Some((dev, std::hash::Hasher::finish(&h)))
    }

    #[test]
    fn a_directory_reached_through_a_bind_mount_is_known_by_its_own_file_systems_path() {
        let through_bind = resolve(Path::new("/mnt/b/proj"), MOUNTINFO, id);
        assert_eq!(through_bind, Path::new("/data/a/proj"));
        assert_eq!(
            resolve(Path::new("/mnt/b"), MOUNTINFO, id),
            Path::new("/data/a")
        );
        let direct = resolve(Path::new("/data/a/proj"), MOUNTINFO, id);
        assert_eq!(direct, Path::new("/data/a/proj"));
        let tmp = resolve(Path::new("/mnt/t/r"), MOUNTINFO, id);
        assert_eq!(tmp, Path::new("/tmp/x y/r"), "octal escapes read back");
        assert_eq!(
            resolve(Path::new("/tmp/q"), MOUNTINFO, id),
            Path::new("/tmp/q")
        );
    }

    #[test]
    fn a_path_the_file_systems_mount_does_not_reach_as_the_same_directory_stays_as_it_was() {
        // `/data/a` is shadowed at its own place: the bind is the only way in.
        let other = |p: &Path| {
            let same = p.starts_with("/mnt/b");
            Some((1, if same { 7 } else { 8 }))
        };
        let kept = resolve(Path::new("/mnt/b/proj"), MOUNTINFO, other);
        assert_eq!(kept, Path::new("/mnt/b/proj"));
        // No mountinfo at all: nothing to resolve.
        assert_eq!(resolve(Path::new("/srv/r"), "", id), Path::new("/srv/r"));
    }
}
