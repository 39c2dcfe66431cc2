//! What doctor reports: a hazard, its kind and where it is. Shared by the
//! sweep (which finds them), an entry's own look (`entry.rs`, which ages
//! them) and the census (which counts them), so none imports another.

use super::mutex;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// A temp file is abandoned past this age. Its whole life is a write and a
/// link (microseconds); the same margin as the mutex steal rule keeps doctor
/// from ever calling an in-flight write litter.
pub const TEMP_ABANDONED_AFTER: Duration = mutex::STALE_MUTEX_STEAL;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HazardKind {
    StaleMutex,
    TempLitter,
    CorruptedClaim,
    ForeignMachine,
    Unreadable,
    /// The lockfile's name is not the canonical encoding of its key, or its
    /// record names another key: a writer with a different encoder, and so
    /// possibly two holders of one key each in its own file.
    KeyMismatch,
    /// `.expired` is not a real directory (a symlink, a regular file):
    /// every stale reclaim and force-release refuses to archive into it.
    ArchiveDirBroken,
    /// The events log exists but is not a regular file: every append
    /// fails, so audit events are being lost.
    EventsLogBroken,
    /// The root directory itself does not exist: most likely a mistyped
    /// `--root`, which would otherwise read as a healthy root with no
    /// claims. (A root with no `.fno` yet is no hazard.)
    RootMissing,
}

impl HazardKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HazardKind::StaleMutex => "stale_mutex",
            HazardKind::TempLitter => "temp_litter",
            HazardKind::CorruptedClaim => "corrupted_claim",
            HazardKind::ForeignMachine => "foreign_machine",
            HazardKind::Unreadable => "unreadable",
            HazardKind::KeyMismatch => "key_mismatch",
            HazardKind::ArchiveDirBroken => "archive_dir_broken",
            HazardKind::EventsLogBroken => "events_log_broken",
            HazardKind::RootMissing => "root_missing",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hazard {
    pub kind: HazardKind,
    #[serde(serialize_with = "super::lossy_path")]
    pub path: PathBuf,
    pub detail: String,
}
