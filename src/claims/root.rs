//! A claims root: where its lockfiles live and where its audit events go.

use super::{claim_path, claims_dir};
use serde_json::{Map, Value};
use std::path::PathBuf;

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

    pub(crate) fn emit(&self, type_name: &str, data: Map<String, Value>) {
        crate::events::emit::emit(self.events_dir.as_deref(), type_name, data);
    }
}
