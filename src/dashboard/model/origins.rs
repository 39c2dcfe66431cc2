//! Where the rows come from: one entry per member of the store the
//! dashboard shows (a root, a site, the copies hosts publish into a site),
//! each with its short label, whether it was named, a root's own places,
//! what its backend can do and how it words its verbs. A row's origin is
//! in its place ([`crate::claims::Loc::origin`]), so nothing here is
//! needed to tell two rows apart: this module names the origins for a
//! person, routes each verb to its row's origin, and answers what the
//! header, the columns and the dialogs ask — by capability, never by which
//! kind of store a member is.

use crate::claims::root::RootProblem;
use crate::claims::{ItemRules, Root, Status};
use crate::dashboard::action::{Op, Verb};
use crate::store::compose::{labels, Store};
use crate::store::mirror::Tally;
use crate::store::OriginIx;
use crate::store::Words;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What a member can do, read from its backend once, at start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    /// A verb on one key may go to it (a site's published copies take none).
    pub takes_claims: bool,
    /// Its claims live on leases: the lease column, the tenure's fields.
    pub leases: bool,
    /// Hosts publish into it: their line, `D`.
    pub fleet: bool,
    /// `doctor --fix` cleans what is abandoned in it (`x`).
    pub repair: bool,
    /// Its claims are judged by this machine's pids: their reasons are
    /// worded here, at the shown clock.
    pub pids_here: bool,
    /// It is reached over a connection that can go away.
    pub link: bool,
}

/// One member, as the dashboard shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct OriginView {
    /// The shortest name that tells it from the others.
    pub label: String,
    /// Named on the command line (a site's copies are not).
    pub named: bool,
    /// A file root's own places (its claims dir, its events log).
    pub root: Option<Root>,
    /// Where it is, in full: a root's directory, a site's URL.
    pub place: PathBuf,
    pub caps: Caps,
    /// Its nouns and where a force-release archives, for dialogs.
    pub words: &'static Words,
    /// Its counts and hazards, as its mirror last tallied them: the one
    /// count `list` and `doctor` make.
    pub tally: Tally,
    /// Why it cannot be read as a normal one now (a root missing, say).
    pub problem: Option<RootProblem>,
    /// While its first screen shows only its head: how many claims.
    pub partial: Option<usize>,
}

/// A root's words, for a model built by hand (the file store's own).
static ROOT_WORDS: Words = Words {
    noun: "lockfile",
    archive: "archived to .expired/",
};
static SITE_WORDS: Words = Words {
    noun: "key",
    archive: "archived under the store's expired/ prefix",
};
static COPY_WORDS: Words = Words {
    noun: "copy",
    archive: "archived on its host by its publisher",
};

const ROOT_CAPS: Caps = Caps {
    takes_claims: true,
    leases: false,
    fleet: false,
    repair: true,
    pids_here: true,
    link: false,
};

/// The origins one dashboard shows, by their index in the store.
#[derive(Debug, Clone, PartialEq)]
pub struct Origins {
    all: Vec<OriginView>,
}

impl Origins {
    /// `first` and then `more`, roots alone (a model fed by hand); a root
    /// named twice is kept once (its claims would otherwise show twice).
    pub fn new(first: Root, more: &[Root]) -> Origins {
        let mut roots = vec![first];
        for r in more {
            if !roots.iter().any(|x| x.root == r.root) {
                roots.push(r.clone());
            }
        }
        let paths: Vec<&Path> = roots.iter().map(|r| r.root.as_path()).collect();
        let labels = labels(&paths);
        let all = roots
            .into_iter()
            .zip(labels)
            .map(|(root, label)| OriginView {
                label,
                named: true,
                place: root.root.clone(),
                root: Some(root),
                caps: ROOT_CAPS,
                words: &ROOT_WORDS,
                tally: Tally::default(),
                problem: None,
                partial: None,
            })
            .collect();
        Origins { all }
    }

    /// One site named by `url` (origin 0) and the copies hosts publish
    /// into it (origin 1), as a store of one `--store` opens them.
    pub fn of_site(url: &str) -> Origins {
        let site = OriginView {
            label: url.to_string(),
            named: true,
            root: None,
            place: PathBuf::from(url),
            caps: Caps {
                takes_claims: true,
                leases: true,
                fleet: true,
                link: true,
                ..Caps::default()
            },
            words: &SITE_WORDS,
            tally: Tally::default(),
            problem: None,
            partial: None,
        };
        let copies = OriginView {
            label: format!("{url} hosts"),
            named: false,
            root: None,
            place: PathBuf::from(url),
            caps: Caps::default(),
            words: &COPY_WORDS,
            tally: Tally::default(),
            problem: None,
            partial: None,
        };
        Origins {
            all: vec![site, copies],
        }
    }

    /// Every member of `store`, in its order, with what its backend can
    /// do; `roots` are the roots' own places (an events log kept apart),
    /// found by their directory.
    pub fn of_store(store: &Store, roots: &[Root]) -> Origins {
        let all = store
            .members()
            .iter()
            .map(|m| {
                let b = m.backend();
                let root = m.root_dir().map(|d| {
                    roots
                        .iter()
                        .find(|r| r.root == d)
                        .cloned()
                        .unwrap_or_else(|| Root::with_events_here(d))
                });
                OriginView {
                    label: m.label.clone(),
                    named: m.named,
                    place: m
                        .root_dir()
                        .map_or_else(|| m.name().into(), Path::to_path_buf),
                    root,
                    caps: Caps {
                        takes_claims: b.takes_claims(),
                        leases: b.leases().is_some(),
                        fleet: b.fleet().is_some(),
                        repair: b.repair().is_some(),
                        pids_here: b.rules() == ItemRules::Lockfile,
                        link: b.link().is_some(),
                    },
                    words: b.words(),
                    tally: Tally::default(),
                    problem: None,
                    partial: None,
                }
            })
            .collect();
        Origins { all }
    }

    /// How many origins were named.
    pub fn len(&self) -> usize {
        self.all.iter().filter(|o| o.named).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// More than one origin named: the views name the origin of each row.
    pub fn several(&self) -> bool {
        self.len() > 1
    }

    /// Origin `i`, named or not.
    pub fn origin(&self, i: usize) -> Option<&OriginView> {
        self.all.get(i)
    }

    /// Every origin, named or not, in order.
    pub fn iter(&self) -> impl Iterator<Item = &OriginView> {
        self.all.iter()
    }

    /// What origin `i` can do (nothing, for an origin not shown).
    pub fn caps(&self, i: usize) -> Caps {
        self.origin(i).map(|o| o.caps).unwrap_or_default()
    }

    /// How origin `i` words its verbs.
    pub fn words(&self, i: usize) -> &'static Words {
        self.origin(i).map_or(&ROOT_WORDS, |o| o.words)
    }

    /// Origin `i`'s tally is `t` now; true when it moved.
    pub fn set_tally(&mut self, i: usize, t: Tally) -> bool {
        let Some(o) = self.all.get_mut(i) else {
            return false;
        };
        // The mirror keeps an unchanged list as the same Arc: a compare of
        // the lists themselves only when it made a new one.
        let moved = o.tally.counts != t.counts
            || (!std::sync::Arc::ptr_eq(&o.tally.hazards, &t.hazards)
                && o.tally.hazards != t.hazards);
        o.tally = t;
        moved
    }

    /// Origin `i`'s problem is `p` now; true when it moved.
    pub fn set_problem(&mut self, i: usize, p: Option<RootProblem>) -> bool {
        self.all
            .get_mut(i)
            .is_some_and(|o| std::mem::replace(&mut o.problem, p) != o.problem)
    }

    /// Origin `i` shows its first `n` claims so far (None: all of them);
    /// true when that moved.
    pub fn set_partial(&mut self, i: usize, n: Option<usize>) -> bool {
        self.all
            .get_mut(i)
            .is_some_and(|o| std::mem::replace(&mut o.partial, n) != o.partial)
    }

    /// Origin `i`'s problem, if it has one.
    pub fn problem(&self, i: usize) -> Option<&RootProblem> {
        self.all.get(i)?.problem.as_ref()
    }

    /// Every origin with a problem, and the problem.
    pub fn problems(&self) -> impl Iterator<Item = (usize, &RootProblem)> {
        self.all
            .iter()
            .enumerate()
            .filter_map(|(i, o)| Some((i, o.problem.as_ref()?)))
    }

    /// Every origin's tally, in order (what `p` freezes).
    pub fn tallies(&self) -> Vec<Tally> {
        self.all.iter().map(|o| o.tally.clone()).collect()
    }

    /// While some origin shows only its head: how many claims so far.
    pub fn listing_head(&self) -> Option<usize> {
        let heads: Vec<usize> = self.all.iter().filter_map(|o| o.partial).collect();
        (!heads.is_empty()).then(|| heads.iter().sum())
    }

    /// Any origin keeps its claims on leases.
    pub fn leases(&self) -> bool {
        self.all.iter().any(|o| o.caps.leases)
    }

    /// The first origin that is a root, when one is.
    pub fn first_root(&self) -> Option<&Root> {
        self.all.iter().find_map(|o| o.root.as_ref())
    }

    /// Origin `i`'s root, when it is one.
    pub fn get(&self, i: usize) -> Option<&Root> {
        self.all.get(i)?.root.as_ref()
    }

    /// The named origins' indexes, in order.
    pub fn shown(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.all.len()).filter(|i| self.all[*i].named)
    }

    /// The short name of origin `i` (untrusted text: sanitise to show).
    pub fn label(&self, i: usize) -> &str {
        self.all.get(i).map_or("", |o| o.label.as_str())
    }

    /// The root whose claims dir holds the entry `path` (a lockfile, a
    /// mutex, a temp file), or whose tree holds it (an archive dir).
    pub fn of_path(&self, path: &Path) -> Option<usize> {
        let roots = || {
            self.all
                .iter()
                .enumerate()
                .filter_map(|(i, o)| Some((i, o.root.as_ref()?)))
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
        self.all
            .iter()
            .position(|o| o.root.as_ref().is_some_and(|r| r.root == root_dir))
    }

    /// The origin an operator typed: a label, or a root's path in full.
    pub fn find(&self, typed: &str) -> Option<usize> {
        let t = typed.trim();
        self.shown().find(|i| self.label(*i) == t).or_else(|| {
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

    /// The named origins that take claims: where an acquire may go.
    pub fn takers(&self) -> impl Iterator<Item = usize> + '_ {
        self.shown().filter(|i| self.all[*i].caps.takes_claims)
    }

    /// `verb` as the worker must run it: on origin `i`'s member.
    pub fn route(&self, i: usize, verb: Verb) -> Op {
        Op {
            at: OriginIx(i as u16),
            verb,
        }
    }

    /// The origin a verb that names no row goes to: the first named one
    /// that does `what` (takes claims; repairs; has publishing hosts).
    pub fn first_that(&self, what: impl Fn(Caps) -> bool) -> usize {
        self.shown().find(|i| what(self.all[*i].caps)).unwrap_or(0)
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
        let set = Origins::new(
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
        let set = Origins::new(a.clone(), &[a]);
        assert!(!set.several());
    }
}
