//! Listing every lockfile under a root, and the hazards doctor reports.

use super::atomic::{CREATE_TMP_PREFIX, REPLACE_TMP_INFIX};
use super::liveness::Classifier;
use super::verbs::{Root, Status};
use super::{decode_key, mutex, now_ms, ClaimState, Locality, RECOVERY_SUFFIX};
use serde::Serialize;
use std::ffi::OsStr;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A temp file is abandoned past this age. Its whole life is a write and a
/// link (microseconds); the same margin as the mutex steal rule keeps doctor
/// from ever calling an in-flight write litter.
pub const TEMP_ABANDONED_AFTER: Duration = mutex::STALE_MUTEX_STEAL;

pub type SweepItem = Status;

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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub live: usize,
    pub suspect: usize,
    pub stale: usize,
    pub corrupted: usize,
}

impl Counts {
    pub fn add(&mut self, s: ClaimState) {
        match s {
            ClaimState::Live => self.live += 1,
            ClaimState::Suspect => self.suspect += 1,
            ClaimState::Stale => self.stale += 1,
            ClaimState::Corrupted => self.corrupted += 1,
            ClaimState::Free => {}
        }
    }

    pub fn remove(&mut self, s: ClaimState) {
        let n = match s {
            ClaimState::Live => &mut self.live,
            ClaimState::Suspect => &mut self.suspect,
            ClaimState::Stale => &mut self.stale,
            ClaimState::Corrupted => &mut self.corrupted,
            ClaimState::Free => return,
        };
        *n = n.saturating_sub(1);
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    #[serde(serialize_with = "super::lossy_path")]
    pub root: PathBuf,
    pub claims: Vec<SweepItem>,
    pub counts: Counts,
    pub hazards: Vec<Hazard>,
}

/// What a directory entry of the claims dir is, by name alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Lockfile,
    RecoveryMutex,
    Temp,
    Other,
}

pub fn entry_kind(name: &OsStr) -> EntryKind {
    let b = name.as_bytes();
    if b.ends_with(b".lock") {
        EntryKind::Lockfile
    } else if b.ends_with(RECOVERY_SUFFIX.as_bytes()) {
        EntryKind::RecoveryMutex
    } else if b.starts_with(CREATE_TMP_PREFIX.as_bytes())
        || contains(b, REPLACE_TMP_INFIX.as_bytes())
        || contains(b, b".reap.")
    {
        EntryKind::Temp
    } else {
        EntryKind::Other
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The key a lockfile name stands for, if the name is one.
pub fn key_of_lockfile(name: &OsStr) -> Option<String> {
    let s = name.to_str()?;
    s.strip_suffix(".lock").map(decode_key)
}

/// Classify every `*.lock` under the root and collect hazards.
///
/// One read per lockfile and one `/proc` probe per distinct pid. Nothing in
/// the directory aborts the sweep: an unreadable claims dir is a hazard, a bad
/// file is a Corrupted item.
pub fn sweep(root: &Root) -> Sweep {
    let mut c = Classifier::new(now_ms());
    sweep_with(root, &mut c)
}

/// [`sweep`] with a caller's classifier (the dashboard keeps one per tick).
pub fn sweep_with(root: &Root, c: &mut Classifier) -> Sweep {
    let dir = root.claims_dir();
    let mut out = Sweep {
        root: root.root.clone(),
        claims: Vec::new(),
        counts: Counts::default(),
        hazards: Vec::new(),
    };
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        // Nothing claimed yet: a normal, empty root.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound) => {
            events_mutex_hazard(root, &mut out.hazards);
            return out;
        }
        Err(e) => {
            out.hazards.push(Hazard {
                kind: HazardKind::Unreadable,
                path: dir,
                detail: format!("claims dir cannot be listed: {e}"),
            });
            return out;
        }
    };
    // Names first, items after: sorting the (key, path) pairs is cheap where
    // sorting finished items (hundreds of bytes each) is not, and reading in
    // key order tends to follow creation (inode) order.
    let mut lockfiles: Vec<(String, PathBuf)> = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.hazards.push(Hazard {
                    kind: HazardKind::Unreadable,
                    path: dir.clone(),
                    detail: format!("listing interrupted: {e}"),
                });
                continue;
            }
        };
        let name = entry.file_name();
        let path = entry.path();
        match entry_kind(&name) {
            EntryKind::Lockfile => match key_of_lockfile(&name) {
                Some(key) => lockfiles.push((key, path)),
                None => out.hazards.push(Hazard {
                    kind: HazardKind::Unreadable,
                    path,
                    detail: "lockfile name is not valid UTF-8; no encoder writes it".into(),
                }),
            },
            EntryKind::RecoveryMutex | EntryKind::Temp => {
                if let Some(h) = entry_hazard(&path) {
                    out.hazards.push(h);
                }
            }
            EntryKind::Other => {}
        }
    }
    lockfiles.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out.claims.reserve_exact(lockfiles.len());
    for (key, path) in &lockfiles {
        let item = Status::of_file(key, path, c);
        out.counts.add(item.state);
        item_hazards(&item, &mut out.hazards);
        if item.state != ClaimState::Free {
            out.claims.push(item);
        }
    }
    events_mutex_hazard(root, &mut out.hazards);
    out.hazards.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Hazards one classified claim stands for.
pub fn item_hazards(item: &SweepItem, hazards: &mut Vec<Hazard>) {
    let (misnamed, unverifiable) = item_hazard_kinds(item);
    let mut push = |kind, detail| {
        hazards.push(Hazard {
            kind,
            path: item.file.clone(),
            detail,
        })
    };
    if misnamed.is_some() {
        let detail = match item.record.as_ref().filter(|r| r.key != item.key) {
            Some(rec) if is_canonical(item) => format!(
                "the file is named for key {:?} but its record claims {:?}",
                item.key, rec.key
            ),
            _ => format!(
                "not the canonical name for key {:?} (that is {}.lock): a writer with \
                 another encoder made it, and acquire never looks here",
                item.key,
                super::encode_key(&item.key)
            ),
        };
        push(HazardKind::KeyMismatch, detail);
    }
    match (unverifiable, &item.record) {
        (Some(HazardKind::CorruptedClaim), _) => push(
            HazardKind::CorruptedClaim,
            item.error.clone().unwrap_or_default(),
        ),
        (Some(kind), Some(rec)) => push(
            kind,
            format!(
                "written on host {:?} (machine {}); liveness cannot be checked here",
                rec.host,
                rec.machine_id.as_deref().unwrap_or("unrecorded")
            ),
        ),
        _ => {}
    }
}

/// The per-claim hazards an item stands for, without wording them (the
/// dashboard's header only counts them): a key mismatch, and either a
/// corrupted file or a claim from another machine.
pub fn item_hazard_kinds(item: &SweepItem) -> (Option<HazardKind>, Option<HazardKind>) {
    let misnamed = !is_canonical(item) || item.record.as_ref().is_some_and(|r| r.key != item.key);
    let unverifiable = if item.state == ClaimState::Corrupted {
        Some(HazardKind::CorruptedClaim)
    } else if item.locality == Some(Locality::Other) && item.record.is_some() {
        Some(HazardKind::ForeignMachine)
    } else {
        None
    };
    (misnamed.then_some(HazardKind::KeyMismatch), unverifiable)
}

fn is_canonical(item: &SweepItem) -> bool {
    item.file.file_name().is_some_and(|name| {
        super::key::is_canonical_lockfile_name(name.as_encoded_bytes(), &item.key)
    })
}

/// The hazard a non-lockfile entry of the claims dir is now, if any: a
/// recovery mutex or a temp file becomes one only with age, so a watcher
/// that saw it appear asks again until it is old enough or gone.
pub fn entry_hazard(path: &Path) -> Option<Hazard> {
    let name = path.file_name()?;
    match entry_kind(name) {
        EntryKind::RecoveryMutex => stale_mutex_hazard(path),
        EntryKind::Temp => {
            let age = mutex::age(path).filter(|a| *a > TEMP_ABANDONED_AFTER)?;
            Some(Hazard {
                kind: HazardKind::TempLitter,
                path: path.to_path_buf(),
                detail: format!("left behind {}s ago by an interrupted write", age.as_secs()),
            })
        }
        EntryKind::Lockfile | EntryKind::Other => None,
    }
}

fn stale_mutex_hazard(path: &Path) -> Option<Hazard> {
    let age = mutex::age(path)?;
    (age > mutex::STALE_MUTEX_STEAL).then(|| Hazard {
        kind: HazardKind::StaleMutex,
        path: path.to_path_buf(),
        detail: format!(
            "mutex held for {}s (> {}s): a killed holder's corpse; the next waiter steals it",
            age.as_secs(),
            mutex::STALE_MUTEX_STEAL.as_secs()
        ),
    })
}

fn events_mutex_hazard(root: &Root, hazards: &mut Vec<Hazard>) {
    let lock = crate::events::emit::events_mutex_path(&root.events_file());
    if let Some(h) = stale_mutex_hazard(&lock) {
        hazards.push(h);
    }
}

/// `doctor`: the hazards under a root (changes nothing).
pub fn doctor(root: &Root) -> Vec<Hazard> {
    sweep(root).hazards
}

/// One hazard `doctor --fix` dealt with, or could not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fix {
    pub hazard: Hazard,
    pub fixed: bool,
    pub action: String,
}

/// Clean only what is provably abandoned: temp files past
/// [`TEMP_ABANDONED_AFTER`] and mutex corpses past the steal rule. Claims
/// themselves (corrupted, foreign) are never touched here: that is
/// force-release's job, with its guards.
pub fn doctor_fix(root: &Root) -> Vec<Fix> {
    doctor(root)
        .into_iter()
        .map(|h| {
            let (fixed, action) = match h.kind {
                HazardKind::StaleMutex => {
                    if mutex::steal_if_stale(&h.path) {
                        (
                            true,
                            "stole the corpse by rename and removed it".to_string(),
                        )
                    } else {
                        (
                            false,
                            "not stolen: it was taken again meanwhile".to_string(),
                        )
                    }
                }
                HazardKind::TempLitter => remove_litter(&h.path),
                HazardKind::CorruptedClaim => (false, "left: use force-release".into()),
                HazardKind::ForeignMachine => (false, "left: its own machine decides".into()),
                HazardKind::Unreadable => (false, "left: needs a human".into()),
                HazardKind::KeyMismatch => {
                    (false, "left: find the writer whose encoder differs".into())
                }
            };
            Fix {
                hazard: h,
                fixed,
                action,
            }
        })
        .collect()
}

fn remove_litter(path: &Path) -> (bool, String) {
    // Re-check age at the moment of removal; and a dir (a reap dir) is removed
    // as a dir, never followed if it is a symlink.
    match std::fs::symlink_metadata(path) {
        Ok(_) if mutex::age(path).is_some_and(|a| a > TEMP_ABANDONED_AFTER) => {}
        Ok(_) => return (false, "left: it is no longer old".into()),
        Err(_) => return (true, "already gone".into()),
    }
    let res = match std::fs::symlink_metadata(path) {
        Ok(md) if md.is_dir() => std::fs::remove_dir_all(path),
        _ => std::fs::remove_file(path),
    };
    match res {
        Ok(()) => (true, "removed".into()),
        Err(e) => (false, format!("could not remove: {e}")),
    }
}
