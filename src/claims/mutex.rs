//! The claims' view of the mkdir mutex: pinning one claim's recovery mutex
//! for a short mutate (release, re-acquire, reclaim, force-release), and
//! telling a face when that waits on a peer. The mechanics (and every mutex
//! name, the recovery mutex's included) live in the crate-level
//! [`crate::mutex`], which the events log shares without depending on the
//! claims; this keeps the paths code already names (`claims::mutex::...`).

pub use crate::mutex::*;

use super::ClaimError;
use crate::mutex;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Recovery-mutex wait before a verb gives up on it and retries from the top (Python's 5 s).
const RECOVERY_MAX_WAIT: Duration = Duration::from_secs(5);

/// What acquire is waiting on: a peer's mutex, and who holds it for how
/// long, so that a face can say so instead of sitting silent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub mutex: PathBuf,
    pub holder: mutex::Holder,
}

/// A callback for [`Waiting`] reports. The library never prints; the face
/// that runs the verb decides what to say.
#[derive(Clone)]
pub struct WaitHook(Arc<dyn Fn(&Waiting) + Send + Sync>);

impl WaitHook {
    pub fn new(f: impl Fn(&Waiting) + Send + Sync + 'static) -> WaitHook {
        WaitHook(Arc::new(f))
    }

    pub(super) fn tell(&self, w: &Waiting) {
        (self.0)(w)
    }
}

impl std::fmt::Debug for WaitHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WaitHook")
    }
}

/// What [`lock_recovery`] got.
pub(super) enum Pinned {
    /// The recovery mutex, held until this is dropped.
    Held { _guard: mutex::DirMutex },
    /// `<lockfile>.recovery.d` would pass the filesystem's name limit, so no
    /// implementation can ever hold it and nothing can archive this claim
    /// under it: the mutate is as safe without it.
    NoMutexPossible,
    /// The claims dir is gone, and the claim with it.
    DirGone,
    /// An honest peer kept it past [`RECOVERY_MAX_WAIT`].
    Busy,
}

/// Take a claim's recovery mutex for a short mutate (release, re-acquire):
/// wait out an honest holder, steal a corpse (past the 120 s rule, or one
/// whose owner is provably dead). `hook` hears about each wait.
pub(super) fn lock_recovery(
    lock_dir: &Path,
    hook: Option<&WaitHook>,
) -> Result<Pinned, ClaimError> {
    let deadline = Instant::now() + RECOVERY_MAX_WAIT;
    let mut told = false;
    loop {
        match mutex::try_lock(lock_dir) {
            Ok(Some(g)) => return Ok(Pinned::Held { _guard: g }),
            Ok(None) => {}
            Err(e) if matches!(e.kind(), ErrorKind::NotFound) => return Ok(Pinned::DirGone),
            Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => {
                return Ok(Pinned::NoMutexPossible)
            }
            Err(e) => return Err(ClaimError::io("create recovery mutex", lock_dir, e)),
        }
        if mutex::steal_if_stale(lock_dir) {
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Pinned::Busy);
        }
        if let (Some(hook), false) = (hook, told) {
            if let Some(holder) = mutex::holder(lock_dir) {
                hook.tell(&Waiting {
                    mutex: lock_dir.to_path_buf(),
                    holder,
                });
                told = true;
            }
        }
        #[cfg(test)]
        crate::fault::at(crate::fault::Point::RecoveryWait, lock_dir);
        mutex::wait_for_release(lock_dir, left);
    }
}
