//! The roots one dashboard watches: their short labels, which root a
//! lockfile or hazard belongs to, and which root an operator's verb acts on.
//!
//! Each root stays its own world (its lockfiles, its mutexes, its events
//! log); the dashboard only shows them side by side. Rows stay keyed by
//! lockfile path, which already says the root, so nothing here is needed to
//! tell two claims on the same key in two roots apart: this module only
//! names the roots for a person and routes each verb to the right one.

use super::action::Op;
use crate::claims::{Root, Status};
use crate::store::compose::labels;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The roots one dashboard shows, in the order they were named (the core's
/// [`crate::claims::Roots`] resolves them; this adds what a person reads
/// and where each verb goes); the first is the one a
/// single-root dashboard shows, exactly as before.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownRoots {
    roots: Vec<Root>,
    labels: Vec<String>,
    /// Claims dirs, compared against a lockfile's parent.
    claims_dirs: Vec<PathBuf>,
}

impl ShownRoots {
    /// `first` and then `more`; a root named twice is kept once (its
    /// claims would otherwise show twice).
    pub fn new(first: Root, more: &[Root]) -> ShownRoots {
        let mut roots = vec![first];
        for r in more {
            if !roots.iter().any(|x| x.root == r.root) {
                roots.push(r.clone());
            }
        }
        let paths: Vec<&Path> = roots.iter().map(|r| r.root.as_path()).collect();
        let labels = labels(&paths);
        let claims_dirs = roots.iter().map(Root::claims_dir).collect();
        ShownRoots {
            roots,
            labels,
            claims_dirs,
        }
    }

    pub fn len(&self) -> usize {
        self.roots.len()
    }

    /// Never true: there is always a first root.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// More than one root: the views name the root of each row.
    pub fn is_several(&self) -> bool {
        self.roots.len() > 1
    }

    pub fn get(&self, i: usize) -> Option<&Root> {
        self.roots.get(i)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Root> {
        self.roots.iter()
    }

    /// The short name of root `i` (untrusted text: sanitise to show).
    pub fn label(&self, i: usize) -> &str {
        self.labels.get(i).map_or("", String::as_str)
    }

    /// The root whose claims dir holds the entry `path` (a lockfile, a
    /// mutex, a temp file), or whose tree holds it (an archive dir).
    pub fn of_path(&self, path: &Path) -> Option<usize> {
        if let Some(i) = self.claims_dirs.iter().position(|d| is_entry_of(d, path)) {
            return Some(i);
        }
        // Roots may nest: the deepest one that holds the path owns it.
        self.roots
            .iter()
            .enumerate()
            .filter(|(_, r)| path.starts_with(&r.root))
            .max_by_key(|(_, r)| r.root.components().count())
            .map(|(i, _)| i)
    }

    /// The root of a claim, as an index (0 when it is in none: a model fed
    /// statuses from elsewhere still has somewhere to act).
    pub fn of(&self, s: &Status) -> usize {
        self.of_path(&s.file).unwrap_or(0)
    }

    /// The root a sweep of `root_dir` came from.
    pub fn position(&self, root_dir: &Path) -> Option<usize> {
        self.roots.iter().position(|r| r.root == root_dir)
    }

    /// The root an operator typed: a label, or the root's path in full.
    pub fn find(&self, typed: &str) -> Option<usize> {
        let t = typed.trim();
        self.labels.iter().position(|l| l == t).or_else(|| {
            self.roots
                .iter()
                .position(|r| r.root == Path::new(t) || r.root.to_string_lossy() == t)
        })
    }

    /// Every label, for a prompt that lists them.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// `op` as the worker must run it: on root `i` when there are several,
    /// as it is when there is one (so a single-root dashboard queues
    /// exactly the ops it always did).
    pub fn route(&self, i: usize, op: Op) -> Op {
        if self.is_several() {
            Op::In {
                root: i,
                op: Box::new(op),
            }
        } else {
            op
        }
    }
}

/// Is `path` an entry directly in `dir`? Compared as bytes: asked of many
/// claims at a time, and parsing paths into components is slower.
fn is_entry_of(dir: &Path, path: &Path) -> bool {
    let (d, p) = (dir.as_os_str().as_bytes(), path.as_os_str().as_bytes());
    p.len() > d.len() + 1
        && p.starts_with(d)
        && p[d.len()] == b'/'
        && !p[d.len() + 1..].contains(&b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(paths: &[&str]) -> Vec<String> {
        let p: Vec<&Path> = paths.iter().map(Path::new).collect();
        labels(&p)
    }

    #[test]
    fn distinct_last_components_are_labels_of_one_component() {
        assert_eq!(of(&["/srv/web", "/home/me/api"]), ["web", "api"]);
    }

    #[test]
    fn a_shared_last_component_takes_the_fewest_more_to_tell_apart() {
        assert_eq!(
            of(&["/srv/a/repo", "/srv/b/repo", "/x/tools"]),
            ["a/repo", "b/repo", "tools"]
        );
    }

    #[test]
    fn a_path_that_is_a_suffix_of_another_is_spelled_in_full() {
        assert_eq!(of(&["/x/a", "/y/x/a"]), ["/x/a", "y/x/a"]);
    }

    #[test]
    fn a_lockfile_belongs_to_the_root_whose_claims_dir_holds_it() {
        let set = ShownRoots::new(
            Root::with_events_here("/srv/a"),
            &[Root::with_events_here("/srv/a/inner")],
        );
        let inner = set.get(1).map(|r| r.lockfile("k")).unwrap_or_default();
        assert_eq!(set.of_path(&inner), Some(1));
        let outer = set.get(0).map(|r| r.lockfile("k")).unwrap_or_default();
        assert_eq!(set.of_path(&outer), Some(0));
        assert_eq!(set.of_path(Path::new("/elsewhere/x")), None);
    }

    #[test]
    fn a_root_named_twice_is_watched_once() {
        let a = Root::with_events_here("/srv/a");
        let set = ShownRoots::new(a.clone(), &[a]);
        assert!(!set.is_several());
    }
}
