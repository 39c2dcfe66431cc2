//! The entries of a claims root that are not claims — recovery mutexes,
//! temp files, the archive dir, the events log and its mutex — and the
//! hazard each one is at a given instant.
//!
//! A look at an entry ([`Entry::look`]) is kept apart from the verdict on it
//! ([`Entry::hazard_at`]): a sweep looks and judges at once, a watcher looks
//! when the entry changes and judges again each second, so a mutex corpse
//! shows the second it comes of age without another look at the disk, and
//! both say the same thing in the same words.

use super::atomic::{CREATE_TMP_PREFIX, REPLACE_TMP_INFIX};
use super::hazard::{self, Hazard, TEMP_ABANDONED_AFTER};
use super::{mutex, RECOVERY_SUFFIX};
use crate::events::emit::{log_trouble, LogTrouble};
use std::ffi::OsStr;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::UNIX_EPOCH;

/// What an entry is to the protocol, by where it sits and its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// `<enc>.lock.recovery.d`: a reclaim's mkdir mutex.
    RecoveryMutex,
    /// `.claim-tmp-*`, `*.lock.tmp.*`, `*.reap.*`: a write or a steal in
    /// flight, or what a killed one left.
    Temp,
    /// `.expired`, where stale and force-released claims are archived.
    ArchiveDir,
    /// `.fno/events.jsonl`. Appends open it without following a symlink
    /// and without waiting on a FIFO, so anything but a regular file (or
    /// nothing yet, made by the first append) turns every append into a
    /// failure the verb only warns about, and the audit trail is lost.
    EventsLog,
    /// `events.jsonl.lock.d`, the events log's mkdir mutex.
    EventsMutex,
    /// A `*.lock` whose name is not UTF-8: no key names it.
    UndecodableLockfile,
}

impl Role {
    /// The role of an entry of the claims dir, by its name alone; None for
    /// a lockfile whose key can be read (a claim, not an entry) and for
    /// names the protocol never writes.
    pub fn in_claims_dir(name: &OsStr) -> Option<Role> {
        let b = name.as_bytes();
        if b.ends_with(b".lock") {
            return name.to_str().is_none().then_some(Role::UndecodableLockfile);
        }
        if b.ends_with(RECOVERY_SUFFIX.as_bytes()) {
            Some(Role::RecoveryMutex)
        } else if b.starts_with(CREATE_TMP_PREFIX.as_bytes())
            || contains(b, REPLACE_TMP_INFIX.as_bytes())
            || contains(b, b".reap.")
        {
            Some(Role::Temp)
        } else if name == super::EXPIRED_SUBDIR {
            Some(Role::ArchiveDir)
        } else {
            None
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// What sits at an entry's path, as `lstat` saw it (links never followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    Device,
    /// Something is there but cannot be looked at: why, in words.
    Unreadable(String),
}

/// What a look saw beyond an entry's shape that no writer of the protocol
/// leaves there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Oddity {
    /// A mutex whose `owner` is something no implementation writes (a
    /// FIFO, a socket, a symlink, a directory, a file too big for a
    /// token), in words: planted, and read by nothing (see
    /// [`mutex::foreign_owner`]).
    ForeignOwner(String),
    /// The events log's last line torn, or its file system full.
    Log(LogTrouble),
}

/// One look at an entry: enough to judge it at any later instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub role: Role,
    pub shape: Shape,
    /// Its modification time, epoch ms: a mutex's or temp file's age runs
    /// from it (the steal rule's clock).
    pub modified_ms: i64,
    pub oddity: Option<Oddity>,
}

impl Entry {
    /// Look at `path` in `role`; None when nothing is there.
    pub fn look(role: Role, path: &Path) -> Option<Entry> {
        let (shape, modified_ms) = match std::fs::symlink_metadata(path) {
            Ok(md) => {
                let ft = md.file_type();
                let shape = if ft.is_symlink() {
                    Shape::Symlink
                } else if ft.is_dir() {
                    Shape::Dir
                } else if ft.is_file() {
                    Shape::File
                } else if ft.is_fifo() {
                    Shape::Fifo
                } else if ft.is_socket() {
                    Shape::Socket
                } else {
                    Shape::Device
                };
                // No mtime (a filesystem without one) reads as "just now":
                // never a reason to call anything abandoned.
                let modified = md
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(i64::MAX, |d| d.as_millis() as i64);
                (shape, modified)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => return None,
            Err(e) => (Shape::Unreadable(e.to_string()), i64::MAX),
        };
        let oddity = match (role, &shape) {
            (Role::RecoveryMutex | Role::EventsMutex, Shape::Dir) => {
                mutex::foreign_owner(path).map(Oddity::ForeignOwner)
            }
            (Role::EventsLog, Shape::File) => {
                Some(log_trouble(path)).filter(|t| t.any()).map(Oddity::Log)
            }
            _ => None,
        };
        Some(Entry {
            role,
            shape,
            modified_ms,
            oddity,
        })
    }

    /// How long ago it was modified at `now` (a clock running backwards
    /// reads as zero: never a reason to steal).
    fn age_ms(&self, now: i64) -> i64 {
        now.saturating_sub(self.modified_ms).max(0)
    }

    /// The hazard this entry, at `path`, is at `now`, if any. A mutex or a
    /// temp file becomes one only with age: the same look judged later may
    /// say more.
    pub fn hazard_at(&self, path: &Path, now: i64) -> Option<Hazard> {
        let found = |kind, detail| Some(Hazard::at_path(kind, path, detail));
        let age_s = self.age_ms(now) / 1000;
        match self.role {
            Role::RecoveryMutex | Role::EventsMutex => {
                if matches!(self.shape, Shape::Unreadable(_)) {
                    return None;
                }
                let owner = match &self.oddity {
                    Some(Oddity::ForeignOwner(what)) => Some(what),
                    _ => None,
                };
                let steal_s = mutex::STALE_MUTEX_STEAL.as_secs();
                match (self.older_than(now, STEAL_MS), owner) {
                    (false, None) => None,
                    // Planted, but honoured like any young mutex: nothing
                    // tells it from an honest holder's dir whose owner a
                    // stranger replaced, so only the age rule may end it.
                    (false, Some(what)) => found(
                        hazard::UNREADABLE,
                        format!(
                            "mutex whose owner is {what}, which no implementation writes \
                             (planted?): honoured as held until it is {steal_s}s old, then \
                             the next waiter steals it"
                        ),
                    ),
                    (true, None) => found(
                        hazard::STALE_MUTEX,
                        format!(
                            "mutex held for {age_s}s (> {steal_s}s): a killed holder's corpse; \
                             the next waiter steals it"
                        ),
                    ),
                    (true, Some(what)) => found(
                        hazard::STALE_MUTEX,
                        format!(
                            "mutex held for {age_s}s (> {steal_s}s), its owner {what}, which no \
                             implementation writes (planted?): a corpse all the same; the next \
                             waiter steals it"
                        ),
                    ),
                }
            }
            Role::Temp => {
                let abandoned = TEMP_ABANDONED_AFTER.as_millis() as i64;
                if matches!(self.shape, Shape::Unreadable(_)) || !self.older_than(now, abandoned) {
                    return None;
                }
                found(
                    hazard::TEMP_LITTER,
                    format!("left behind {age_s}s ago by an interrupted write"),
                )
            }
            Role::ArchiveDir => {
                let what = match &self.shape {
                    Shape::Dir => return None,
                    Shape::Symlink => "a symlink".to_string(),
                    Shape::File => "a regular file".to_string(),
                    Shape::Unreadable(e) => format!("unreadable ({e})"),
                    Shape::Fifo | Shape::Socket | Shape::Device => "a special file".to_string(),
                };
                found(
                    hazard::ARCHIVE_DIR_BROKEN,
                    format!(
                        "the archive dir is {what}, not a directory: every stale reclaim and \
                         force-release fails until a human moves it away"
                    ),
                )
            }
            Role::EventsLog => {
                let what = match self.shape {
                    Shape::File => {
                        let Some(Oddity::Log(t)) = self.oddity else {
                            return None;
                        };
                        return found(hazard::EVENTS_LOG_BROKEN, log_trouble_words(t));
                    }
                    Shape::Unreadable(_) => return None,
                    Shape::Dir => "a directory",
                    Shape::Symlink => "a symlink, which appends never follow",
                    Shape::Fifo => "a FIFO",
                    Shape::Socket => "a socket",
                    Shape::Device => "a device",
                };
                found(
                    hazard::EVENTS_LOG_BROKEN,
                    format!(
                        "the events log is {what}, not a regular file: every append fails and \
                         audit events are being lost until a human moves it away"
                    ),
                )
            }
            Role::UndecodableLockfile => found(
                hazard::UNREADABLE,
                "lockfile name is not valid UTF-8; no encoder writes it".into(),
            ),
        }
    }

    /// At least `ms` old at `now`. The steal rule is `age > 120 s`, read
    /// with nanoseconds; at whole milliseconds an age of exactly 120 000
    /// may be a few microseconds past it, and a report errs toward saying.
    fn older_than(&self, now: i64, ms: i64) -> bool {
        self.age_ms(now) >= ms
    }

    /// Two looks a verdict cannot tell apart at any instant: the same role,
    /// shape and oddity, and, for an entry judged by its age (one that
    /// [comes of age](Entry::comes_of_age)), the same time. An append to the
    /// events log moves its time and nothing a verdict reads.
    pub fn judged_alike(&self, other: &Entry) -> bool {
        self.role == other.role
            && self.shape == other.shape
            && self.oddity == other.oddity
            && (self.comes_of_age().is_none() || self.modified_ms == other.modified_ms)
    }

    /// When this look, if nothing changes at the path, is judged anew: a
    /// young mutex or temp file comes of age and becomes a hazard (or, a
    /// mutex with a planted owner, another one), epoch ms.
    pub fn comes_of_age(&self) -> Option<i64> {
        let after = match self.role {
            Role::RecoveryMutex | Role::EventsMutex => STEAL_MS,
            Role::Temp => TEMP_ABANDONED_AFTER.as_millis() as i64,
            _ => return None,
        };
        (!matches!(self.shape, Shape::Unreadable(_)))
            .then(|| self.modified_ms.saturating_add(after))
    }
}

/// Why a regular events log is a hazard, in words.
fn log_trouble_words(t: LogTrouble) -> String {
    let torn = "the events log ends in a torn line (no newline) and no writer is at it: \
                an append failed part-way (a full disk?) and that event is lost; the next \
                append terminates the line";
    let full = "the events log's file system is full: every append fails and audit events \
                are being lost until space is freed";
    match (t.torn, t.full) {
        (true, true) => format!("{full}; {torn}"),
        (true, false) => torn.to_string(),
        _ => full.to_string(),
    }
}

/// The hazard at `path` in `role` now, from a fresh look (a sweep's way).
pub fn hazard_now(role: Role, path: &Path) -> Option<Hazard> {
    Entry::look(role, path)?.hazard_at(path, super::now_ms())
}

const STEAL_MS: i64 = mutex::STALE_MUTEX_STEAL.as_millis() as i64;

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(role: Role, shape: Shape, modified_ms: i64) -> Entry {
        Entry {
            role,
            shape,
            modified_ms,
            oddity: None,
        }
    }

    #[test]
    fn a_mutex_becomes_a_corpse_only_past_the_steal_age_and_says_when() {
        let m = entry(Role::RecoveryMutex, Shape::Dir, 1_000_000);
        let p = Path::new("/r/.fno/claims/k.lock.recovery.d");
        assert_eq!(m.hazard_at(p, 1_000_000 + 119_999), None, "under 120 s");
        let h = m.hazard_at(p, 1_000_000 + 120_000).expect("a corpse");
        assert_eq!(h.kind, hazard::STALE_MUTEX);
        assert!(
            h.detail.starts_with("mutex held for 120s (> 120s)"),
            "{}",
            h.detail
        );
        assert_eq!(m.comes_of_age(), Some(1_000_000 + 120_000));
        assert_eq!(
            m.hazard_at(p, m.comes_of_age().unwrap_or(0))
                .map(|h| h.kind),
            Some(hazard::STALE_MUTEX.into())
        );
        // A clock behind the stamp: age zero, never a corpse.
        assert_eq!(m.hazard_at(p, 0), None);
    }

    #[test]
    fn a_mutex_with_a_planted_owner_names_it_young_and_is_a_corpse_only_with_age() {
        let td = tempfile::tempdir().expect("tempdir");
        let m = td.path().join("k.lock.recovery.d");
        std::fs::create_dir(&m).expect("mkdir");
        std::os::unix::fs::symlink("/dev/zero", m.join("owner")).expect("symlink");
        let e = Entry::look(Role::RecoveryMutex, &m).expect("there");
        assert_eq!(e.oddity, Some(Oddity::ForeignOwner("a symlink".into())));
        let young = e.hazard_at(&m, e.modified_ms).expect("named at once");
        assert_eq!(young.kind, hazard::UNREADABLE);
        assert!(
            young.detail.contains("owner is a symlink"),
            "{}",
            young.detail
        );
        let at = e.comes_of_age().expect("it comes of age");
        let old = e.hazard_at(&m, at).expect("a corpse");
        assert_eq!(old.kind, hazard::STALE_MUTEX);
        assert!(old.detail.contains("its owner a symlink"), "{}", old.detail);
        // A token-sized owner file is no oddity.
        std::fs::remove_file(m.join("owner")).expect("rm");
        std::fs::write(m.join("owner"), "host:1:2").expect("write");
        let e = Entry::look(Role::RecoveryMutex, &m).expect("there");
        assert_eq!(e.oddity, None);
        assert_eq!(e.hazard_at(&m, e.modified_ms), None);
    }

    #[test]
    fn names_the_protocol_writes_have_roles_and_a_readable_lockfile_is_a_claim() {
        use std::os::unix::ffi::OsStrExt;
        let role = |n: &[u8]| Role::in_claims_dir(OsStr::from_bytes(n));
        assert_eq!(role(b"k.lock"), None);
        assert_eq!(role(b"k\xff.lock"), Some(Role::UndecodableLockfile));
        assert_eq!(role(b"k.lock.recovery.d"), Some(Role::RecoveryMutex));
        assert_eq!(role(b".claim-tmp-1-2-3"), Some(Role::Temp));
        assert_eq!(role(b"k.lock.tmp.1.2"), Some(Role::Temp));
        assert_eq!(role(b"k.lock.recovery.d.reap.1.2"), Some(Role::Temp));
        assert_eq!(role(b".expired"), Some(Role::ArchiveDir));
        assert_eq!(role(b"notes.txt"), None);
    }

    #[test]
    fn the_archive_dir_and_the_log_are_hazards_by_shape_alone() {
        let p = Path::new("/x");
        for (shape, broken) in [
            (Shape::Dir, false),
            (Shape::Symlink, true),
            (Shape::File, true),
        ] {
            let e = entry(Role::ArchiveDir, shape, 0);
            assert_eq!(e.hazard_at(p, 0).is_some(), broken, "{e:?}");
        }
        for (shape, broken) in [
            (Shape::File, false),
            (Shape::Dir, true),
            (Shape::Fifo, true),
        ] {
            let e = entry(Role::EventsLog, shape, 0);
            assert_eq!(e.hazard_at(p, 0).is_some(), broken, "{e:?}");
        }
        let unreadable = entry(Role::ArchiveDir, Shape::Unreadable("denied".into()), 0);
        let h = unreadable.hazard_at(p, 0).expect("a hazard");
        assert!(h.detail.contains("unreadable (denied)"), "{}", h.detail);
    }

    #[test]
    fn only_an_entry_judged_by_age_is_told_apart_by_its_time() {
        let log = entry(Role::EventsLog, Shape::File, 1);
        assert!(log.judged_alike(&entry(Role::EventsLog, Shape::File, 2)));
        assert!(!log.judged_alike(&entry(Role::EventsLog, Shape::Dir, 1)));
        let torn = Entry {
            oddity: Some(Oddity::Log(LogTrouble {
                torn: true,
                full: false,
            })),
            ..log.clone()
        };
        assert!(!log.judged_alike(&torn));
        let m = entry(Role::RecoveryMutex, Shape::Dir, 1);
        assert!(!m.judged_alike(&entry(Role::RecoveryMutex, Shape::Dir, 2)));
        let denied = |t| entry(Role::Temp, Shape::Unreadable("denied".into()), t);
        assert!(denied(1).judged_alike(&denied(2)));
    }

    #[test]
    fn a_look_sees_the_shape_without_following_a_link() {
        let td = tempfile::tempdir().expect("tempdir");
        let link = td.path().join(".expired");
        std::os::unix::fs::symlink(td.path(), &link).expect("symlink");
        let e = Entry::look(Role::ArchiveDir, &link).expect("there");
        assert_eq!(e.shape, Shape::Symlink);
        assert!(Entry::look(Role::Temp, &td.path().join("gone")).is_none());
    }
}
