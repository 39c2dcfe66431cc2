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
use crate::store::compose::{labels, Store};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The origins one dashboard shows, by their index in the store (a row's
/// place says its origin): a root's own places, every origin's short
/// label, and which were named (a site's published copies are not).
#[derive(Debug, Clone, PartialEq)]
pub struct ShownRoots {
    roots: Vec<Option<Root>>,
    labels: Vec<String>,
    named: Vec<bool>,
}

impl ShownRoots {
    /// `first` and then `more`, roots alone (a model fed by hand); a root
    /// named twice is kept once (its claims would otherwise show twice).
    pub fn new(first: Root, more: &[Root]) -> ShownRoots {
        let mut roots = vec![first];
        for r in more {
            if !roots.iter().any(|x| x.root == r.root) {
                roots.push(r.clone());
            }
        }
        let paths: Vec<&Path> = roots.iter().map(|r| r.root.as_path()).collect();
        let labels = labels(&paths);
        ShownRoots {
            named: vec![true; roots.len()],
            roots: roots.into_iter().map(Some).collect(),
            labels,
        }
    }

    /// One site named by `url` (origin 0) and the copies hosts publish
    /// into it (origin 1), as a store of one `--store` opens them.
    pub fn of_site(url: &str) -> ShownRoots {
        ShownRoots {
            roots: vec![None, None],
            labels: vec![url.to_string(), format!("{url} hosts")],
            named: vec![true, false],
        }
    }

    /// Every member of `store`, in its order; `roots` are the roots' own
    /// places (an events log kept apart), found by their directory.
    pub fn of_store(store: &Store, roots: &[Root]) -> ShownRoots {
        let members = store.members();
        ShownRoots {
            roots: members
                .iter()
                .map(|m| {
                    let d = m.root_dir()?;
                    Some(
                        roots
                            .iter()
                            .find(|r| r.root == d)
                            .cloned()
                            .unwrap_or_else(|| Root::with_events_here(d)),
                    )
                })
                .collect(),
            labels: members.iter().map(|m| m.label.clone()).collect(),
            named: members.iter().map(|m| m.named).collect(),
        }
    }

    /// How many origins were named.
    pub fn len(&self) -> usize {
        self.named.iter().filter(|n| **n).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// More than one origin named: the views name the origin of each row.
    pub fn is_several(&self) -> bool {
        self.len() > 1
    }

    /// Origin `i`'s root, when it is one.
    pub fn get(&self, i: usize) -> Option<&Root> {
        self.roots.get(i)?.as_ref()
    }

    /// The named origins' indexes, in order.
    pub fn shown(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.named.len()).filter(|i| self.named[*i])
    }

    /// The short name of origin `i` (untrusted text: sanitise to show).
    pub fn label(&self, i: usize) -> &str {
        self.labels.get(i).map_or("", String::as_str)
    }

    /// The root whose claims dir holds the entry `path` (a lockfile, a
    /// mutex, a temp file), or whose tree holds it (an archive dir).
    pub fn of_path(&self, path: &Path) -> Option<usize> {
        let roots = || {
            self.roots
                .iter()
                .enumerate()
                .filter_map(|(i, r)| Some((i, r.as_ref()?)))
        };
        if let Some((i, _)) = roots().find(|(_, r)| is_entry_of(&r.claims_dir(), path)) {
            return Some(i);
        }
        // Roots may nest: the deepest one that holds the path owns it.
        roots()
            .filter(|(_, r)| path.starts_with(&r.root))
            .max_by_key(|(_, r)| r.root.components().count())
            .map(|(i, _)| i)
    }

    /// The origin of a claim, as an index: its place says it.
    pub fn of(&self, s: &Status) -> usize {
        usize::from(s.file.origin())
    }

    /// The root a sweep of `root_dir` came from.
    pub fn position(&self, root_dir: &Path) -> Option<usize> {
        self.roots
            .iter()
            .position(|r| r.as_ref().is_some_and(|r| r.root == root_dir))
    }

    /// The origin an operator typed: a label, or a root's path in full.
    pub fn find(&self, typed: &str) -> Option<usize> {
        let t = typed.trim();
        self.shown().find(|i| self.labels[*i] == t).or_else(|| {
            self.shown().find(|i| {
                self.get(*i)
                    .is_some_and(|r| r.root == Path::new(t) || r.root.to_string_lossy() == t)
            })
        })
    }

    /// Every named origin's label, for a prompt that lists them.
    pub fn labels(&self) -> Vec<&str> {
        self.shown().map(|i| self.label(i)).collect()
    }

    /// `op` as the worker must run it: on origin `i` when there are
    /// several, as it is when there is one (so a one-root dashboard queues
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
