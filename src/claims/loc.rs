//! Where a claim lives: its origin (which member of a composed store), how
//! its row is judged, and its place — a lockfile's path, a store key, a
//! published copy's id.
//!
//! Two sites both under `/fno` have the same keys, so a row's identity
//! must say its origin; a table of 100 000 rows keys three maps by it, so
//! it must cost no more than the `Arc<Path>` it replaces (16 bytes on the
//! stack, one shared allocation). The origin and the rules therefore live
//! in the path's own allocation, in a short head before the place. A path
//! never holds a NUL byte, so a head is told from a place by its first
//! byte, and the protocol's own reads (a lockfile of origin 0, by far the
//! most rows) need no head at all: their allocation is the path's, byte for
//! byte what it was.

use super::census::ItemRules;
use serde::Serialize;
use std::cmp::Ordering;
use std::ffi::OsStr;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A head's first byte: no path holds one.
const MARK: u8 = 0;
/// A head: the mark, the origin (little-endian u16), the rules.
const HEAD: usize = 4;

/// A claim's place, its origin and its rules, in one shared allocation.
/// Derefs to the place as a [`Path`], so `s.file.parent()` and the like
/// read as they always have; serializes as that path (lossily), so a
/// status's `"file"` keeps its bytes.
#[derive(Clone)]
pub struct Loc(Arc<[u8]>);

impl Loc {
    pub fn new(origin: u16, rules: ItemRules, place: &Path) -> Loc {
        let place = place.as_os_str().as_bytes();
        let plain = origin == 0 && rules == ItemRules::Lockfile && place.first() != Some(&MARK);
        if plain {
            return Loc(Arc::from(place));
        }
        let mut bytes = Vec::with_capacity(HEAD + place.len());
        bytes.push(MARK);
        bytes.extend_from_slice(&origin.to_le_bytes());
        bytes.push(rules_byte(rules));
        bytes.extend_from_slice(place);
        Loc(Arc::from(bytes))
    }

    /// The head's bytes, if it has one.
    #[inline]
    fn head(&self) -> Option<&[u8]> {
        match self.0.first() {
            Some(&MARK) => self.0.get(..HEAD),
            _ => None,
        }
    }

    /// Which member of the store it came from (0: the only one, or not
    /// stamped yet — what the protocol's own reads write).
    #[inline]
    pub fn origin(&self) -> u16 {
        self.head().map_or(0, |h| u16::from_le_bytes([h[1], h[2]]))
    }

    /// How its row is judged (a lockfile, a store key, a published copy).
    #[inline]
    pub fn rules(&self) -> ItemRules {
        self.head().map_or(ItemRules::Lockfile, |h| rules_of(h[3]))
    }

    /// The place's bytes: past the head, where there is one.
    #[inline]
    fn place_bytes(&self) -> &[u8] {
        match self.0.first() {
            Some(&MARK) => self.0.get(HEAD..).unwrap_or_default(),
            _ => &self.0,
        }
    }

    #[inline]
    pub fn place(&self) -> &Path {
        Path::new(OsStr::from_bytes(self.place_bytes()))
    }

    /// The same place with this origin and these rules: itself when they
    /// are already so, else a fresh allocation.
    pub fn stamped(&self, origin: u16, rules: ItemRules) -> Loc {
        if self.origin() == origin && self.rules() == rules {
            return self.clone();
        }
        Loc::new(origin, rules, self.place())
    }

    /// A fresh allocation holding the same bytes, never shared with this
    /// one (a mirror keeps its rows apart from a listing's buffers).
    pub fn fresh(&self) -> Loc {
        Loc(Arc::from(&*self.0))
    }
}

fn rules_byte(r: ItemRules) -> u8 {
    match r {
        ItemRules::Lockfile => 0,
        ItemRules::StoreKey => 1,
        ItemRules::Copy => 2,
    }
}

fn rules_of(b: u8) -> ItemRules {
    match b {
        1 => ItemRules::StoreKey,
        2 => ItemRules::Copy,
        _ => ItemRules::Lockfile,
    }
}

impl Deref for Loc {
    type Target = Path;
    #[inline]
    fn deref(&self) -> &Path {
        self.place()
    }
}

impl AsRef<Path> for Loc {
    fn as_ref(&self) -> &Path {
        self.place()
    }
}

/// A row is its origin and its place: the rules follow from the origin
/// (one member judges all its rows one way), so they are no part of it.
impl PartialEq for Loc {
    fn eq(&self, other: &Loc) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.origin() == other.origin() && self.place_bytes() == other.place_bytes())
    }
}

impl Eq for Loc {}

impl Hash for Loc {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u16(self.origin());
        h.write(self.place_bytes());
    }
}

impl Ord for Loc {
    /// By origin, then by place as paths order (component by component, as
    /// the rows were sorted when they were keyed by path), the raw bytes
    /// breaking what paths call a tie (`a//b` and `a/b`).
    fn cmp(&self, other: &Loc) -> Ordering {
        self.origin()
            .cmp(&other.origin())
            .then_with(|| self.place().cmp(other.place()))
            .then_with(|| self.place_bytes().cmp(other.place_bytes()))
    }
}

impl PartialOrd for Loc {
    fn partial_cmp(&self, other: &Loc) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.origin() {
            0 => write!(f, "{:?}", self.place()),
            o => write!(f, "{o}:{:?}", self.place()),
        }
    }
}

impl Serialize for Loc {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.place().to_string_lossy())
    }
}

/// A lockfile of origin 0: what the protocol's reads name.
impl From<&Path> for Loc {
    fn from(p: &Path) -> Loc {
        Loc::new(0, ItemRules::Lockfile, p)
    }
}

impl From<PathBuf> for Loc {
    fn from(p: PathBuf) -> Loc {
        Loc::from(p.as_path())
    }
}

impl From<&PathBuf> for Loc {
    fn from(p: &PathBuf) -> Loc {
        Loc::from(p.as_path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loc_costs_what_a_shared_path_cost() {
        assert_eq!(std::mem::size_of::<Loc>(), std::mem::size_of::<Arc<Path>>());
        assert_eq!(std::mem::size_of::<Option<Loc>>(), 16);
    }

    #[test]
    fn a_loc_keeps_its_origin_rules_and_place_apart() {
        let l = Loc::new(513, ItemRules::Copy, Path::new("/fno/claims/a%2Fb"));
        assert_eq!(l.origin(), 513);
        assert_eq!(l.rules(), ItemRules::Copy);
        assert_eq!(l.place(), Path::new("/fno/claims/a%2Fb"));
        assert_eq!(l.file_name(), Some(OsStr::new("a%2Fb")));
        assert_eq!(
            serde_json::to_string(&l).ok().as_deref(),
            Some("\"/fno/claims/a%2Fb\"")
        );
    }

    #[test]
    fn the_same_place_in_two_origins_is_two_rows() {
        let a = Loc::new(0, ItemRules::StoreKey, Path::new("/fno/claims/k"));
        let b = a.stamped(1, ItemRules::StoreKey);
        assert_ne!(a, b);
        assert!(a < b);
        let set: std::collections::HashSet<Loc> = [a.clone(), b, a.fresh()].into();
        assert_eq!(set.len(), 2);
        assert_eq!(a.stamped(0, ItemRules::StoreKey), a);
        // The rules follow from the origin: no part of the row's identity.
        let judged_as_lockfile = a.stamped(0, ItemRules::Lockfile);
        assert_eq!(judged_as_lockfile, a);
        assert_eq!(judged_as_lockfile.rules(), ItemRules::Lockfile);
    }

    #[test]
    fn locs_of_one_origin_sort_as_their_paths_do() {
        let mut v: Vec<Loc> = ["/r/a-b", "/r/a/b", "/r/a"]
            .iter()
            .map(|p| Loc::from(Path::new(p)))
            .collect();
        v.sort();
        let sorted: Vec<&Path> = v.iter().map(|l| l.place()).collect();
        let mut paths = vec![Path::new("/r/a-b"), Path::new("/r/a/b"), Path::new("/r/a")];
        paths.sort();
        assert_eq!(sorted, paths);
    }

    #[test]
    fn a_lockfile_of_origin_zero_is_its_path_alone_and_any_other_has_a_head() {
        let p = Path::new("/r/.fno/claims/k.lock");
        let plain = Loc::from(p);
        assert_eq!(
            plain.0.len(),
            p.as_os_str().len(),
            "no byte beyond the path"
        );
        let stamped = plain.stamped(1, ItemRules::Lockfile);
        assert_eq!(stamped.0.len(), p.as_os_str().len() + HEAD);
        assert_eq!((stamped.origin(), stamped.place()), (1, p));
        // A place that starts as a head would is given one of its own.
        let odd = Path::new(OsStr::from_bytes(b"\0\x05\0\x02x"));
        let l = Loc::from(odd);
        assert_eq!(
            (l.origin(), l.rules(), l.place()),
            (0, ItemRules::Lockfile, odd)
        );
    }

    #[test]
    fn a_place_that_is_not_utf8_is_kept_byte_for_byte() {
        let raw = OsStr::from_bytes(b"/r/\xff\xfe.lock");
        let l = Loc::from(Path::new(raw));
        assert_eq!(l.as_os_str().as_bytes(), b"/r/\xff\xfe.lock");
    }
}
