//! Fault-injection points for the windows no timing can hit: between a
//! mutex steal's judgement and its rename, between an archive's judgement
//! and its rename, between release's re-read and its unlink, between an
//! etcd verb's read and its guarded transaction. Compiled only
//! into the crate's own tests (the module and every call site are
//! `cfg(test)`), so no release build carries a hook.
//!
//! A test arms a point for the paths under its own temp dir: tests run in
//! parallel, and a hook must fire only for the root it was armed for, on
//! whichever thread the verb runs.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where the code stops to let a test act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// `mutex::try_lock`, once per attempt (a spin shows as a count).
    MutexAttempt,
    /// `mutex::try_lock`, after its mkdir won, before the owner stamp.
    MutexStamp,
    /// `mutex::steal_if_stale`, after the corpse was judged (its age and
    /// owner read), before the re-check that the path is still that dir.
    StealRecheck,
    /// `mutex::steal_if_stale`, after the corpse was judged and re-checked,
    /// just before the rename that takes it.
    StealRename,
    /// `claims::mutex::lock_recovery`, about to wait on a peer's mutex.
    RecoveryWait,
    /// `atomic::archive`, after the caller judged the file, before the
    /// rename into `.expired/`.
    ArchiveRename,
    /// `verbs::release`, after the re-read that found the caller's claim,
    /// before the unlink.
    ReleaseUnlink,
    /// `store::etcd` release and force-release, after the read they decided
    /// on, before the transaction guarded by the revision they read. The
    /// path is the claim's etcd key.
    #[cfg(feature = "etcd")]
    EtcdGuardedWrite,
}

type Hook = Arc<dyn Fn(&Path) + Send + Sync>;

static ARMED: Mutex<Vec<(u64, Point, PathBuf, Hook)>> = Mutex::new(Vec::new());

/// Disarms its hook when dropped.
#[must_use]
pub struct Armed(u64);

impl Drop for Armed {
    fn drop(&mut self) {
        if let Ok(mut armed) = ARMED.lock() {
            armed.retain(|(id, ..)| *id != self.0);
        }
    }
}

/// Run `hook` whenever `point` is reached for a path under `under`.
pub fn arm(point: Point, under: &Path, hook: impl Fn(&Path) + Send + Sync + 'static) -> Armed {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Ok(mut armed) = ARMED.lock() {
        armed.push((id, point, under.to_path_buf(), Arc::new(hook)));
    }
    Armed(id)
}

/// The code reached `point` for `path`: run the hooks armed for it. They
/// run outside the registry's lock, so a hook may reach points itself.
pub fn at(point: Point, path: &Path) {
    let hooks: Vec<Hook> = match ARMED.lock() {
        Ok(armed) => armed
            .iter()
            .filter(|(_, p, under, _)| *p == point && path.starts_with(under))
            .map(|(.., h)| h.clone())
            .collect(),
        Err(_) => return,
    };
    for h in hooks {
        h(path);
    }
}

/// How often `point` is reached under `under` while the result is held.
pub fn count(point: Point, under: &Path) -> (Armed, Arc<std::sync::atomic::AtomicU64>) {
    let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = n.clone();
    let armed = arm(point, under, move |_| {
        seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    (armed, n)
}
