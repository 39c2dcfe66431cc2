//! Cleaning one named entry (the dashboard's `x` on a selected hazard):
//! the entry is judged again now by the detectors a sweep uses, and removed
//! by exactly what `doctor --fix` does with it ([`super::sweep`]), so one
//! entry is never held to other rules than the whole root.
//!
//! What was listed may be out of date by the time an operator presses `y`:
//! a corpse stolen and the mutex taken again, litter replaced by a young
//! write. The entry is refused then, and nothing is removed: what the
//! operator confirmed is no longer what is there.

use super::entry::{hazard_now, Role};
use super::sweep::{events_mutex_hazard, fix_hazard};
use super::{Fix, Hazard, HazardKind, Root};
use std::path::{Path, PathBuf};

/// Why one entry was not cleaned (nothing was removed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CleanOneRefused {
    /// Neither an entry of the root's claims dir nor its events mutex: the
    /// only places the protocol leaves litter.
    #[error("{} is not an entry of this root's claims dir nor its events mutex", .0.display())]
    NotHere(PathBuf),
    /// Listed as litter, but judged now it is something else, or nothing.
    #[error("{} changed since it was listed as {listed}: it is {now} now; nothing was removed", .path.display())]
    Changed {
        path: PathBuf,
        listed: String,
        now: String,
    },
    /// A hazard that is no litter: a claim, a broken dir, a human's file.
    #[error("a {kind} is not abandoned litter: nothing was removed")]
    NotLitter { kind: String },
}

/// Clean the entry at `path` under `root`, listed as `listed`, if it is
/// still that abandoned litter now: the fix `doctor --fix` would make of
/// it (which re-checks its shape and age once more as it removes it).
pub fn clean_one(root: &Root, path: &Path, listed: &HazardKind) -> Result<Fix, CleanOneRefused> {
    let events_mutex = crate::events::emit::events_mutex_path(&root.events_file());
    let now = if path == events_mutex {
        events_mutex_hazard(&events_mutex)
    } else if path.parent() == Some(root.claims_dir().as_path()) {
        path.file_name()
            .and_then(Role::in_claims_dir)
            .and_then(|role| hazard_now(role, path))
    } else {
        return Err(CleanOneRefused::NotHere(path.to_path_buf()));
    };
    if !listed.cleanable() {
        return Err(CleanOneRefused::NotLitter {
            kind: listed.name().to_string(),
        });
    }
    match now {
        Some(h) if h.kind == *listed => Ok(fix_hazard(h, &events_mutex)),
        other => Err(CleanOneRefused::Changed {
            path: path.to_path_buf(),
            listed: listed.name().to_string(),
            now: other.as_ref().map_or_else(
                || "no hazard (gone, or in use again)".to_string(),
                |h: &Hazard| format!("a {}", h.kind.name()),
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::hazard;
    use std::time::{Duration, SystemTime};

    fn aged(path: &Path, by: Duration) {
        let then = SystemTime::now() - by;
        let f = std::fs::File::open(path).unwrap();
        f.set_modified(then).unwrap();
    }

    fn corpse(root: &Root, key: &str, age: Duration) -> PathBuf {
        let dir = root.claims_dir().join(format!("{key}.lock.recovery.d"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("owner"), "pid: 1\n").unwrap();
        aged(&dir, age);
        dir
    }

    const OLD: Duration = Duration::from_secs(600);

    #[test]
    fn one_corpse_is_cleaned_and_the_others_are_left() {
        let td = tempfile::TempDir::new().unwrap();
        let root = Root::with_events_here(td.path());
        let a = corpse(&root, "a", OLD);
        let b = corpse(&root, "b", OLD);
        let kind = HazardKind::from(hazard::STALE_MUTEX);
        let fix = clean_one(&root, &a, &kind).unwrap();
        assert!(fix.fixed, "{fix:?}");
        assert!(!a.exists());
        assert!(b.exists(), "only the named entry goes");
    }

    #[test]
    fn an_entry_taken_again_since_it_was_listed_is_refused_and_nothing_is_removed() {
        let td = tempfile::TempDir::new().unwrap();
        let root = Root::with_events_here(td.path());
        let a = corpse(&root, "a", OLD);
        let kind = HazardKind::from(hazard::STALE_MUTEX);
        // Listed as a corpse; then stolen and made again by a live waiter.
        std::fs::remove_dir_all(&a).unwrap();
        let _ = corpse(&root, "a", Duration::ZERO);
        let refused = clean_one(&root, &a, &kind).unwrap_err();
        assert!(
            matches!(refused, CleanOneRefused::Changed { .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("changed since it was listed"));
        assert!(a.join("owner").exists(), "the fresh mutex is untouched");
    }

    #[test]
    fn an_entry_listed_as_another_kind_is_refused() {
        let td = tempfile::TempDir::new().unwrap();
        let root = Root::with_events_here(td.path());
        let a = corpse(&root, "a", OLD);
        let temp = HazardKind::from(hazard::TEMP_LITTER);
        let refused = clean_one(&root, &a, &temp).unwrap_err();
        assert!(matches!(refused, CleanOneRefused::Changed { .. }));
        assert!(a.exists());
    }

    #[test]
    fn a_path_outside_the_claims_dir_or_no_litter_is_never_touched() {
        let td = tempfile::TempDir::new().unwrap();
        let root = Root::with_events_here(td.path());
        let elsewhere = td.path().join("x.lock.recovery.d");
        std::fs::create_dir_all(&elsewhere).unwrap();
        aged(&elsewhere, OLD);
        let kind = HazardKind::from(hazard::STALE_MUTEX);
        assert!(matches!(
            clean_one(&root, &elsewhere, &kind),
            Err(CleanOneRefused::NotHere(_))
        ));
        assert!(elsewhere.exists());
        let a = corpse(&root, "a", OLD);
        let corrupted = HazardKind::from(hazard::CORRUPTED_CLAIM);
        assert!(matches!(
            clean_one(&root, &a, &corrupted),
            Err(CleanOneRefused::NotLitter { .. })
        ));
        assert!(a.exists());
    }

    #[test]
    fn a_temp_file_left_by_a_killed_write_is_cleaned_alone() {
        let td = tempfile::TempDir::new().unwrap();
        let root = Root::with_events_here(td.path());
        std::fs::create_dir_all(root.claims_dir()).unwrap();
        let t = root
            .claims_dir()
            .join(".claim-tmp-12-1700000000000000000-3");
        std::fs::write(&t, "holder: x\n").unwrap();
        aged(&t, OLD);
        let kind = HazardKind::from(hazard::TEMP_LITTER);
        let fix = clean_one(&root, &t, &kind).unwrap();
        assert!(fix.fixed, "{fix:?}");
        assert!(!t.exists());
    }
}
