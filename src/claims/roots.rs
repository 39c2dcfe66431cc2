//! Several claims roots seen as one: resolving the list, and sweeping it.
//!
//! Agents working in several repositories each keep a root of their own; an
//! operator wants one view over all of them without any agent writing
//! anything differently. Each root stays exactly what the protocol says it is
//! (its own lockfiles, its own mutexes, its own events log): this module only
//! names the set and gathers one sweep per root. Nothing is ever written
//! across roots, which is why verbs on one key accept exactly one.

use super::census::Judged;
use super::liveness::Classifier;
use super::sweep::{sweep_with, Counts, Hazard, Sweep, SweepItem};
use super::{now_ms, Root};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why no usable set of roots could be named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RootsError {
    #[error("no claims root: pass --root DIR, or set FNO_CLAIMS_ROOT or HOME")]
    NoRoot,
    /// One events dir for several roots would make every root's events land
    /// in, and be read from, one log that belongs to none of them.
    #[error(
        "--events-dir names one events log, but {0} claims roots were given; \
         with several roots each root's log is read from the root itself"
    )]
    EventsDirWithSeveral(usize),
    #[error(
        "{verb} works on exactly one claims root, but {count} were given ({list}); pass one --root"
    )]
    NotOne {
        verb: String,
        count: usize,
        list: String,
    },
}

/// A non-empty, duplicate-free list of roots, in the order they were named.
#[derive(Debug, Clone, PartialEq)]
pub struct Roots {
    roots: Vec<Root>,
}

impl Roots {
    /// The roots the flags name, else `$FNO_CLAIMS_ROOT` (`:`-separated),
    /// else `$HOME`. `events_dir` applies to a single root only.
    pub fn resolve(flags: &[PathBuf], events_dir: Option<&Path>) -> Result<Roots, RootsError> {
        let env = std::env::var_os;
        Roots::resolve_from(flags, events_dir, env("FNO_CLAIMS_ROOT"), env("HOME"))
    }

    /// [`Roots::resolve`] with the environment passed in.
    ///
    /// `$FNO_CLAIMS_ROOT` splits on `:` like `$PATH`; empty segments are
    /// skipped, and a variable with nothing but separators counts as unset,
    /// the same as a set-but-empty one (see `global_claims_root_from`).
    /// `$HOME` is one directory and is never split.
    pub fn resolve_from(
        flags: &[PathBuf],
        events_dir: Option<&Path>,
        claims_root_env: Option<OsString>,
        home: Option<OsString>,
    ) -> Result<Roots, RootsError> {
        let mut dirs: Vec<PathBuf> = flags.to_vec();
        if dirs.is_empty() {
            dirs = claims_root_env
                .as_deref()
                .map(split_list)
                .unwrap_or_default();
        }
        if dirs.is_empty() {
            dirs.extend(home.filter(|h| !h.is_empty()).map(PathBuf::from));
        }
        // The same directory twice would show every claim in it twice.
        let mut unique: Vec<PathBuf> = Vec::with_capacity(dirs.len());
        for d in dirs {
            if !unique.contains(&d) {
                unique.push(d);
            }
        }
        match (unique.len(), events_dir) {
            (0, _) => Err(RootsError::NoRoot),
            (1, events) => {
                let root = unique.remove(0);
                let events_dir = events.map_or_else(|| root.clone(), Path::to_path_buf);
                Ok(Roots {
                    roots: vec![Root {
                        root,
                        events_dir: Some(events_dir),
                    }],
                })
            }
            (n, Some(_)) => Err(RootsError::EventsDirWithSeveral(n)),
            (_, None) => Ok(Roots {
                roots: unique.into_iter().map(Root::with_events_here).collect(),
            }),
        }
    }

    /// Exactly this root, as it stands.
    pub fn one(root: &Root) -> Roots {
        Roots {
            roots: vec![root.clone()],
        }
    }

    pub fn as_slice(&self) -> &[Root] {
        &self.roots
    }

    /// The first root named: what a single-root field (`list --json`'s
    /// `root`) reports.
    pub fn first(&self) -> &Root {
        &self.roots[0]
    }

    pub fn len(&self) -> usize {
        self.roots.len()
    }

    /// Never true: kept for the `len` convention.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    pub fn is_several(&self) -> bool {
        self.roots.len() > 1
    }

    /// The one root a verb on one key may touch, or why not.
    pub fn single(&self, verb: &str) -> Result<&Root, RootsError> {
        match self.roots.as_slice() {
            [one] => Ok(one),
            many => Err(RootsError::NotOne {
                verb: verb.to_string(),
                count: many.len(),
                list: many
                    .iter()
                    .map(|r| r.root.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

/// `a:b::c` → `[a, b, c]`.
pub fn split_list(v: &OsStr) -> Vec<PathBuf> {
    v.as_bytes()
        .split(|b| *b == b':')
        .filter(|s| !s.is_empty())
        .map(|s| PathBuf::from(OsStr::from_bytes(s)))
        .collect()
}

/// One sweep per root, taken back to back with one classifier (so a pid
/// probed for one root is not probed again for the next).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiSweep {
    pub sweeps: Vec<Sweep>,
}

pub fn sweep_roots(roots: &Roots) -> MultiSweep {
    let mut c = Classifier::new(now_ms());
    MultiSweep {
        sweeps: roots
            .as_slice()
            .iter()
            .map(|r| sweep_with(r, &mut c))
            .collect(),
    }
}

impl MultiSweep {
    /// Every root's counts added up.
    pub fn counts(&self) -> Counts {
        let mut total = Counts::default();
        for c in self.sweeps.iter().map(|s| &s.counts) {
            total += *c;
        }
        total
    }

    /// Every claim with the root it lives in, sorted by key (then by the
    /// order the roots were named, so one key held in two roots shows twice,
    /// side by side).
    pub fn claims(&self) -> Vec<(&Path, &SweepItem)> {
        let mut all: Vec<(usize, &Path, &SweepItem)> = self
            .sweeps
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.claims.iter().map(move |c| (i, s.root.as_path(), c)))
            .collect();
        all.sort_by(|a, b| a.2.key.cmp(&b.2.key).then(a.0.cmp(&b.0)));
        all.into_iter().map(|(_, r, c)| (r, c)).collect()
    }

    /// Every hazard with its root, root by root.
    pub fn hazards(&self) -> impl Iterator<Item = (&Path, &Hazard)> {
        self.sweeps
            .iter()
            .flat_map(|s| s.hazards.iter().map(move |h| (s.root.as_path(), h)))
    }
}

/// A serializable value with a `"root"` member added after its own.
pub struct WithRoot<'a, T> {
    pub item: &'a T,
    pub root: &'a Path,
}

impl<T: Serialize> Serialize for WithRoot<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Flat<'a, T> {
            #[serde(flatten)]
            item: &'a T,
            #[serde(serialize_with = "super::lossy_path")]
            root: &'a Path,
        }
        Flat {
            item: self.item,
            root: self.root,
        }
        .serialize(s)
    }
}

/// `list --json` over several roots: the one-root shape, with `root` the
/// first root, a `roots` array added, and every item and hazard carrying the
/// root it came from.
impl Serialize for MultiSweep {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let lossy = |p: &Path| p.to_string_lossy().into_owned();
        let mut m = s.serialize_map(Some(5))?;
        let first = self.sweeps.first().map(|s| lossy(&s.root));
        m.serialize_entry("root", &first)?;
        let roots: Vec<String> = self.sweeps.iter().map(|s| lossy(&s.root)).collect();
        m.serialize_entry("roots", &roots)?;
        let judged: Vec<(&Path, Judged)> = self
            .claims()
            .into_iter()
            .map(|(root, item)| (root, Judged::lockfile(item)))
            .collect();
        let claims: Vec<WithRoot<Judged>> = judged
            .iter()
            .map(|(root, item)| WithRoot { item, root })
            .collect();
        m.serialize_entry("claims", &claims)?;
        m.serialize_entry("counts", &self.counts())?;
        let hazards: Vec<WithRoot<Hazard>> = self
            .hazards()
            .map(|(root, item)| WithRoot { item, root })
            .collect();
        m.serialize_entry("hazards", &hazards)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<OsString> {
        Some(OsString::from(s))
    }

    fn dirs(r: &Roots) -> Vec<&Path> {
        r.as_slice().iter().map(|r| r.root.as_path()).collect()
    }

    #[test]
    fn flags_win_over_the_environment_and_keep_their_order() {
        let flags = [PathBuf::from("/b"), PathBuf::from("/a")];
        let r = Roots::resolve_from(&flags, None, os("/x:/y"), os("/h")).unwrap();
        assert_eq!(dirs(&r), [Path::new("/b"), Path::new("/a")]);
    }

    #[test]
    fn the_environment_splits_on_colons_and_skips_empty_segments() {
        let r = Roots::resolve_from(&[], None, os(":/x::/y:"), os("/h")).unwrap();
        assert_eq!(dirs(&r), [Path::new("/x"), Path::new("/y")]);
    }

    #[test]
    fn an_environment_of_only_separators_falls_back_to_home() {
        let r = Roots::resolve_from(&[], None, os("::"), os("/h")).unwrap();
        assert_eq!(dirs(&r), [Path::new("/h")]);
        assert_eq!(
            Roots::resolve_from(&[], None, os(""), os("")),
            Err(RootsError::NoRoot)
        );
    }

    #[test]
    fn a_root_named_twice_is_swept_once() {
        let flags = [
            PathBuf::from("/a"),
            PathBuf::from("/b"),
            PathBuf::from("/a"),
        ];
        let r = Roots::resolve_from(&flags, None, None, None).unwrap();
        assert_eq!(dirs(&r), [Path::new("/a"), Path::new("/b")]);
    }

    #[test]
    fn one_root_keeps_its_events_dir_and_several_refuse_one() {
        let one =
            Roots::resolve_from(&[PathBuf::from("/a")], Some(Path::new("/e")), None, None).unwrap();
        assert_eq!(one.first().events_dir.as_deref(), Some(Path::new("/e")));
        let flags = [PathBuf::from("/a"), PathBuf::from("/b")];
        assert_eq!(
            Roots::resolve_from(&flags, Some(Path::new("/e")), None, None),
            Err(RootsError::EventsDirWithSeveral(2))
        );
        let many = Roots::resolve_from(&flags, None, None, None).unwrap();
        assert_eq!(
            many.as_slice()[1].events_dir.as_deref(),
            Some(Path::new("/b"))
        );
    }

    #[test]
    fn a_verb_on_one_key_gets_its_root_only_when_exactly_one_is_named() {
        let flags = [PathBuf::from("/a"), PathBuf::from("/b")];
        let many = Roots::resolve_from(&flags, None, None, None).unwrap();
        let err = many.single("acquire").unwrap_err();
        assert!(err.to_string().contains("/a, /b"), "{err}");
        let one = Roots::resolve_from(&flags[..1], None, None, None).unwrap();
        assert_eq!(one.single("acquire").unwrap().root, Path::new("/a"));
    }
}
