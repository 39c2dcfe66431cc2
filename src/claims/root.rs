//! A claims root: where its lockfiles live and where its audit events go.

use super::{claim_path, claims_dir};
use serde_json::{Map, Value};
use std::io::ErrorKind;
use std::path::PathBuf;

/// What keeps a root from being read as a normal one. A root with no
/// `.fno/claims` yet is normal: nothing was claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootProblem {
    Missing(PathBuf),
    NotADirectory(PathBuf),
    Unreadable(PathBuf, ErrorKind),
}

/// A claims root and where its audit events go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The directory containing `.fno/claims`.
    pub root: PathBuf,
    /// The directory containing `.fno/events.jsonl`. None = the current
    /// directory, the seed's rule for callers that name none.
    pub events_dir: Option<PathBuf>,
}

impl Root {
    pub fn new(root: impl Into<PathBuf>) -> Root {
        Root {
            root: root.into(),
            events_dir: None,
        }
    }

    /// Root whose events log lives in the same directory.
    pub fn with_events_here(root: impl Into<PathBuf>) -> Root {
        let root = root.into();
        Root {
            events_dir: Some(root.clone()),
            root,
        }
    }

    pub fn claims_dir(&self) -> PathBuf {
        claims_dir(&self.root)
    }

    pub fn lockfile(&self, key: &str) -> PathBuf {
        claim_path(&self.root, key)
    }

    pub fn events_file(&self) -> PathBuf {
        crate::events::emit::events_path(self.events_dir.as_deref())
    }

    /// What keeps this root from being read as a normal one, if anything.
    pub fn problem(&self) -> Option<RootProblem> {
        let dir = self.claims_dir();
        match std::fs::metadata(&self.root) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Some(RootProblem::Missing(self.root.clone()))
            }
            Err(e) => return Some(RootProblem::Unreadable(self.root.clone(), e.kind())),
            Ok(m) if !m.is_dir() => return Some(RootProblem::NotADirectory(self.root.clone())),
            Ok(_) => {}
        }
        match std::fs::read_dir(&dir) {
            Ok(_) => None,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                // A file somewhere on the way (`.fno` a file) reads as not
                // found on some systems: say so rather than call it empty.
                let blocked = dir
                    .ancestors()
                    .skip(1)
                    .take_while(|a| *a != self.root.as_path())
                    .find(|a| std::fs::metadata(a).is_ok_and(|m| !m.is_dir()));
                blocked.map(|b| RootProblem::NotADirectory(b.to_path_buf()))
            }
            Err(e) if e.kind() == ErrorKind::NotADirectory => {
                let blocked = dir
                    .ancestors()
                    .find(|a| std::fs::metadata(a).is_ok_and(|m| !m.is_dir()))
                    .unwrap_or(&dir);
                Some(RootProblem::NotADirectory(blocked.to_path_buf()))
            }
            Err(e) => Some(RootProblem::Unreadable(dir, e.kind())),
        }
    }

    pub(crate) fn emit(&self, kind: crate::events::EventKind, data: Map<String, Value>) {
        crate::events::emit::emit(self.events_dir.as_deref(), kind.name(), data);
    }
}
