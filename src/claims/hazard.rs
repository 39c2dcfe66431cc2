//! What doctor reports: a hazard, its kind and where it is. Shared by the
//! sweep (which finds them), an entry's own look (`entry.rs`, which ages
//! them) and the census (which counts them), so none imports another.
//!
//! Every fact about a kind is one [`HazardSpec`]: its name, how urgent it
//! is, whether `doctor --fix` may remove it, what to do when it is left
//! and whether `metrics` exports it. A new kind is one spec here (or in
//! its store's module) and the detector that finds it.

use super::mutex;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A temp file is abandoned past this age. Its whole life is a write and a
/// link (microseconds); the same margin as the mutex steal rule keeps doctor
/// from ever calling an in-flight write litter.
pub const TEMP_ABANDONED_AFTER: Duration = mutex::STALE_MUTEX_STEAL;

/// One kind of hazard, every fact about it.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct HazardSpec {
    /// As JSON, `doctor`'s text and the `kind` label of `metrics` name it.
    pub name: &'static str,
    /// Most urgent first: the order of the dashboard's `h` list.
    pub rank: u8,
    /// What `doctor --fix` (and the dashboard's `x`) may remove: litter and
    /// corpses the protocol itself writes. Every other kind is a claim or a
    /// broken directory, left to force-release or to a human.
    pub cleanable: bool,
    /// What to do about it, said when `doctor --fix` leaves it.
    pub fix: &'static str,
    /// Exported by `metrics`, at 0 before it first happens: an alert on
    /// `claimtop_hazards > 0` needs the series to exist.
    pub metric: bool,
}

pub const CORRUPTED_CLAIM: &HazardSpec = &HazardSpec {
    name: "corrupted_claim",
    rank: 0,
    cleanable: false,
    fix: "use force-release",
    metric: true,
};
pub const STALE_MUTEX: &HazardSpec = &HazardSpec {
    name: "stale_mutex",
    rank: 1,
    cleanable: true,
    fix: "removed by doctor --fix once its owner is provably gone",
    metric: true,
};
pub const UNREADABLE: &HazardSpec = &HazardSpec {
    name: "unreadable",
    rank: 2,
    cleanable: false,
    fix: "needs a human",
    metric: true,
};
pub const TEMP_LITTER: &HazardSpec = &HazardSpec {
    name: "temp_litter",
    rank: 3,
    cleanable: true,
    fix: "removed by doctor --fix once abandoned",
    metric: true,
};
pub const FOREIGN_MACHINE: &HazardSpec = &HazardSpec {
    name: "foreign_machine",
    rank: 4,
    cleanable: false,
    fix: "its own machine decides",
    metric: true,
};
/// The lockfile's name is not the canonical encoding of its key, or its
/// record names another key: a writer with a different encoder, and so
/// possibly two holders of one key each in its own file.
pub const KEY_MISMATCH: &HazardSpec = &HazardSpec {
    name: "key_mismatch",
    rank: 5,
    cleanable: false,
    fix: "find the writer whose encoder differs",
    metric: true,
};
/// `.expired` is not a real directory (a symlink, a regular file): every
/// stale reclaim and force-release refuses to archive into it.
pub const ARCHIVE_DIR_BROKEN: &HazardSpec = &HazardSpec {
    name: "archive_dir_broken",
    rank: 6,
    cleanable: false,
    fix: "move it aside; the next archive makes a real directory",
    metric: true,
};
/// The events log exists but is not a regular file: every append fails,
/// so audit events are being lost.
pub const EVENTS_LOG_BROKEN: &HazardSpec = &HazardSpec {
    name: "events_log_broken",
    rank: 7,
    cleanable: false,
    fix: "move it aside; the next event makes a regular file",
    metric: true,
};
/// The root directory itself does not exist: most likely a mistyped
/// `--root`, which would otherwise read as a healthy root with no claims.
/// (A root with no `.fno` yet is no hazard.)
pub const ROOT_MISSING: &HazardSpec = &HazardSpec {
    name: "root_missing",
    rank: 8,
    cleanable: false,
    fix: "check the path; nothing is created by --fix",
    metric: true,
};

/// Every kind the protocol's own detectors find, on any store.
pub const PROTOCOL_HAZARDS: &[&HazardSpec] = &[
    STALE_MUTEX,
    TEMP_LITTER,
    CORRUPTED_CLAIM,
    FOREIGN_MACHINE,
    UNREADABLE,
    KEY_MISMATCH,
    ARCHIVE_DIR_BROKEN,
    EVENTS_LOG_BROKEN,
    ROOT_MISSING,
];

/// A hazard's kind: one of ours, or a name another (newer) host published,
/// kept and shown as it came.
#[derive(Debug, Clone)]
pub enum HazardKind {
    Known(&'static HazardSpec),
    Other(Arc<str>),
}

impl HazardKind {
    /// The kind published as `name`: a protocol kind if it is one.
    pub fn parse(name: &str) -> HazardKind {
        match PROTOCOL_HAZARDS.iter().find(|s| s.name == name) {
            Some(spec) => HazardKind::Known(spec),
            None => HazardKind::Other(name.into()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            HazardKind::Known(spec) => spec.name,
            HazardKind::Other(name) => name,
        }
    }

    pub fn spec(&self) -> Option<&'static HazardSpec> {
        match self {
            HazardKind::Known(spec) => Some(spec),
            HazardKind::Other(_) => None,
        }
    }

    /// An unknown kind sorts after every known one.
    pub fn rank(&self) -> u8 {
        self.spec().map_or(u8::MAX, |s| s.rank)
    }

    /// Never an unknown kind: nothing is removed on a name's say-so.
    pub fn cleanable(&self) -> bool {
        self.spec().is_some_and(|s| s.cleanable)
    }
}

impl From<&'static HazardSpec> for HazardKind {
    fn from(spec: &'static HazardSpec) -> HazardKind {
        HazardKind::Known(spec)
    }
}

/// Kinds are one by name: a published `"stale_mutex"` is ours.
impl PartialEq for HazardKind {
    fn eq(&self, other: &HazardKind) -> bool {
        self.name() == other.name()
    }
}

impl Eq for HazardKind {}

impl Hash for HazardKind {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.name().hash(h);
    }
}

impl PartialEq<&HazardSpec> for HazardKind {
    fn eq(&self, spec: &&HazardSpec) -> bool {
        self.name() == spec.name
    }
}

impl Serialize for HazardKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Where a hazard is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HazardAt {
    /// A file or directory under a root.
    Path(PathBuf),
    /// A store's key, or what a store-wide hazard names (its endpoints, a
    /// lease). Boxed, so the place is as small as a path: a root of
    /// 100 000 claims keeps thousands of hazards.
    Key(Box<str>),
    /// A file in a root a host publishes, as that host named it.
    Copy(Box<CopyAt>),
}

/// A published hazard's place: the host and root it was found in, and the
/// path on that host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyAt {
    pub host_id: String,
    pub root_id: String,
    /// The root's path on its host.
    pub root: String,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hazard {
    pub kind: HazardKind,
    pub at: HazardAt,
    pub detail: String,
}

impl Hazard {
    /// A hazard at a path under a root.
    pub fn at_path(spec: &'static HazardSpec, path: impl Into<PathBuf>, detail: String) -> Hazard {
        Hazard {
            kind: HazardKind::Known(spec),
            at: HazardAt::Path(path.into()),
            detail,
        }
    }

    /// A hazard a store found at `key` (or store-wide, naming what).
    pub fn at_key(spec: &'static HazardSpec, key: impl Into<String>, detail: String) -> Hazard {
        Hazard {
            kind: HazardKind::Known(spec),
            at: HazardAt::Key(key.into().into_boxed_str()),
            detail,
        }
    }

    /// A hazard as a host published it (`list --json`'s hazard object) for
    /// one of its roots. A field that is missing or no string reads empty.
    pub fn published(hazard: &Value, host_id: &str, root_id: &str, root: &str) -> Hazard {
        let text = |k: &str| hazard.get(k).and_then(Value::as_str).unwrap_or("");
        Hazard {
            kind: HazardKind::parse(text("kind")),
            at: HazardAt::Copy(Box::new(CopyAt {
                host_id: host_id.into(),
                root_id: root_id.into(),
                root: root.into(),
                path: text("path").into(),
            })),
            detail: text("detail").into(),
        }
    }

    /// Its place as JSON's `"path"` says it: the path, the key, or the
    /// path on the publishing host.
    pub fn path(&self) -> &Path {
        match &self.at {
            HazardAt::Path(p) => p,
            HazardAt::Key(k) => Path::new(&**k),
            HazardAt::Copy(c) => Path::new(&c.path),
        }
    }

    /// The host and root it was published from, if a host published it.
    pub fn copy(&self) -> Option<&CopyAt> {
        match &self.at {
            HazardAt::Copy(c) => Some(c),
            _ => None,
        }
    }
}

/// `{"kind", "path", "detail"}` (a path lossily, as every path), and for a
/// published one its `"host_id"`, `"root"` and `"root_id"` after them.
impl Serialize for Hazard {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let copy = self.copy();
        let mut m = s.serialize_map(Some(if copy.is_some() { 6 } else { 3 }))?;
        m.serialize_entry("kind", self.kind.name())?;
        match &self.at {
            HazardAt::Path(p) => m.serialize_entry("path", &p.to_string_lossy())?,
            HazardAt::Key(k) => m.serialize_entry("path", &**k)?,
            HazardAt::Copy(c) => m.serialize_entry("path", &c.path)?,
        }
        m.serialize_entry("detail", &self.detail)?;
        if let Some(c) = copy {
            m.serialize_entry("host_id", &c.host_id)?;
            m.serialize_entry("root", &c.root)?;
            m.serialize_entry("root_id", &c.root_id)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_protocol_kind_has_its_own_name_and_rank() {
        let mut names: Vec<_> = PROTOCOL_HAZARDS.iter().map(|s| s.name).collect();
        let mut ranks: Vec<_> = PROTOCOL_HAZARDS.iter().map(|s| s.rank).collect();
        names.sort_unstable();
        names.dedup();
        ranks.sort_unstable();
        ranks.dedup();
        assert_eq!(names.len(), PROTOCOL_HAZARDS.len());
        assert_eq!(ranks.len(), PROTOCOL_HAZARDS.len());
        for spec in PROTOCOL_HAZARDS {
            assert_eq!(HazardKind::parse(spec.name), *spec);
        }
    }

    #[test]
    fn only_litter_and_corpses_are_cleanable_and_never_an_unknown_kind() {
        let cleanable: Vec<_> = PROTOCOL_HAZARDS
            .iter()
            .filter(|s| s.cleanable)
            .map(|s| s.name)
            .collect();
        assert_eq!(cleanable, ["stale_mutex", "temp_litter"]);
        let other = HazardKind::parse("stale_mutex_v2");
        assert!(!other.cleanable());
        assert_eq!(other.rank(), u8::MAX);
        assert_eq!(other.name(), "stale_mutex_v2");
    }

    #[test]
    fn a_published_hazard_keeps_its_words_and_says_where_it_was_found() {
        let v = json!({"kind": "stale_mutex", "path": "/srv/a/x", "detail": "old"});
        let h = Hazard::published(&v, "m1", "r1", "/srv/a");
        assert_eq!(h.kind, STALE_MUTEX);
        assert_eq!(h.path(), Path::new("/srv/a/x"));
        let text = serde_json::to_string(&h).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"stale_mutex","path":"/srv/a/x","detail":"old","host_id":"m1","root":"/srv/a","root_id":"r1"}"#
        );
        let mine = Hazard::at_path(UNREADABLE, "/r/.fno/claims", "cannot list".into());
        assert_eq!(
            serde_json::to_string(&mine).unwrap(),
            r#"{"kind":"unreadable","path":"/r/.fno/claims","detail":"cannot list"}"#
        );
    }
}
