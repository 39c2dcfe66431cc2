//! The mkdir mutex shared with every other implementation: `<lockfile>.recovery.d`
//! per claim, `events.jsonl.lock.d` for the audit log.
//!
//! `mkdir(2)` is the arbiter (exactly one creator wins). The winner stamps an
//! `owner` file with a unique token so that release removes only its own dir.
//! A dir older than [`STALE_MUTEX_STEAL`] is a corpse left by a killed holder
//! and is taken by an atomic rename to a unique reap name, so exactly one
//! stealer wins and no key is bricked forever.
//!
//! Beyond the seed: a younger dir whose owner token names this host and a
//! pid that provably no longer runs the process that stamped it (see
//! [`owner_is_gone`]) is a corpse too, and is taken at once by the same
//! rename. This is safe beside seed writers, which steal only by age: a dead
//! owner can never release, so nobody else can be relying on the dir.

use crate::diag::warn;
use crate::plain_file::{Foreign, Links};
use crate::sys::{hostname, pid_gone_since, rename_noreplace};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Suffix of a claim's recovery mutex: `<enc>.lock.recovery.d`.
pub const RECOVERY_SUFFIX: &str = ".recovery.d";

/// Age past which a mutex dir is a corpse. Wire protocol: every implementation
/// must steal only past this age, and every critical section under these
/// mutexes stays sub-second so the age tells a corpse from an honest holder.
pub const STALE_MUTEX_STEAL: Duration = Duration::from_secs(120);

/// Longest pause between attempts while waiting on a held mutex.
const POLL: Duration = Duration::from_millis(100);
/// First pause. Honest holders keep these mutexes for well under a
/// millisecond (an event append, a re-read and a rename), so a waiter that
/// slept a full [`POLL`] from the start would sit out ~100 critical sections
/// of the peer it waits on; backing off from here keeps a contended events
/// log at its real throughput.
const FIRST_POLL: Duration = Duration::from_millis(1);

/// A held mutex dir; released (token-checked) on drop.
#[derive(Debug)]
pub struct DirMutex {
    dir: PathBuf,
    token: String,
}

impl DirMutex {
    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for DirMutex {
    fn drop(&mut self) {
        release(&self.dir, &self.token);
    }
}

/// `host:pid:nanos`: unique per acquisition, so a holder whose dir was stolen
/// while it was suspended can tell, on release, that the dir is no longer its.
pub fn owner_token() -> String {
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // The host part only tells a human whose token it is; uniqueness comes
    // from pid and nanos. Reading it once spares a uname(2) on every mutex
    // taken (three per acquire + release), and a hostname that changes
    // mid-run only makes that hint stale.
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let host = HOST.get_or_init(hostname);
    format!("{host}:{}:{ns}", std::process::id())
}

/// Most bytes an owner token can take: `host:pid:nanos` with a host name
/// at its 255-byte limit is under 300. A bigger `owner` is nobody's token.
pub const OWNER_MAX_BYTES: u64 = 1024;

/// The owner token in `dir`, or "" when there is none to read: absent, or
/// anything no implementation writes there (a FIFO, a socket, a symlink, a
/// directory, a file past [`OWNER_MAX_BYTES`]). Such an owner is
/// honoured like a dir whose holder has not stamped yet (until the age rule
/// calls it a corpse), and reading it never blocks or runs on: a FIFO
/// planted here used to hang every release, renew and recovery of the key in
/// `open(2)`, and a link to `/dev/zero` made a release read gigabytes.
fn read_owner(dir: &Path) -> String {
    let owner = dir.join("owner");
    match crate::plain_file::read(&owner, Links::Refuse, OWNER_MAX_BYTES) {
        Ok(bytes) => String::from_utf8(bytes).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// What `dir`'s `owner` is, in words, when no implementation could have
/// written it: it names a planted object for `doctor`. Only looked at
/// (`lstat`), never opened. None for a token-sized regular file or none.
pub fn foreign_owner(dir: &Path) -> Option<String> {
    let md = std::fs::symlink_metadata(dir.join("owner")).ok()?;
    match Foreign::of(md.file_type()) {
        Some(what) => Some(what.words().to_string()),
        None if md.len() > OWNER_MAX_BYTES => {
            Some(format!("a {}-byte file, too big for a token", md.len()))
        }
        None => None,
    }
}

/// Stamp right after mkdir. A crash between the two leaves an owner-less dir,
/// which the age gate steals like any other corpse.
///
/// None when the dir we made is no longer ours to stamp: a stealer moved it
/// away between our mkdir and now (ENOENT), or it was replaced and its new
/// holder stamped first (EEXIST). Writing through O_TRUNC there would put our
/// token into a stranger's mutex and leave two holders.
fn stamp(dir: &Path) -> Option<DirMutex> {
    use std::io::Write;
    let token = owner_token();
    let owner = dir.join("owner");
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&owner)
        .and_then(|mut f| f.write_all(token.as_bytes()));
    let token = match written {
        Ok(()) => token,
        Err(e) if matches!(e.kind(), ErrorKind::AlreadyExists | ErrorKind::NotFound) => {
            return None
        }
        Err(e) => {
            warn(&format!(
                "could not stamp mutex owner in {}: {e}",
                dir.display()
            ));
            // On a full disk mkdir succeeds but the write does not. Keeping
            // the unwritten token would make our own release see a
            // stranger's dir and leave it: a corpse blocking the key for
            // 120 s. Hold it as owner-less instead (no owner file reads as
            // ""), so release still removes it; nobody may touch a young dir.
            let _ = std::fs::remove_file(&owner);
            String::new()
        }
    };
    Some(DirMutex {
        dir: dir.to_path_buf(),
        token,
    })
}

/// One attempt: `Ok(Some)` acquired, `Ok(None)` held by someone, `Err` when
/// mkdir fails for another reason (missing parent, permissions).
pub fn try_lock(dir: &Path) -> std::io::Result<Option<DirMutex>> {
    #[cfg(test)]
    crate::fault::at(crate::fault::Point::MutexAttempt, dir);
    match std::fs::create_dir(dir) {
        Ok(()) => {
            #[cfg(test)]
            crate::fault::at(crate::fault::Point::MutexStamp, dir);
            Ok(stamp(dir))
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(e),
    }
}

/// Acquire with a deadline, stealing corpses when `steal`. None means an
/// honest, in-age holder kept it past the deadline: congestion, not a corpse.
pub fn lock(dir: &Path, timeout: Duration, steal: bool) -> Option<DirMutex> {
    let deadline = Instant::now() + timeout;
    let mut pause = FIRST_POLL;
    loop {
        match try_lock(dir) {
            Ok(Some(m)) => return Some(m),
            Ok(None) if steal && steal_if_stale(dir) => continue,
            _ => {}
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(POLL);
    }
}

/// Remove `dir` only if it still carries `token`. A mismatch means the mutex
/// was stolen from us and someone else holds it now: leave theirs intact.
pub fn release(dir: &Path, token: &str) {
    if read_owner(dir) == token {
        // Our dir holds only the owner file: two unlinks, rather than
        // remove_dir_all's open/stat/getdents walk (eight more syscalls on
        // every acquire, release and event). Anything else found inside
        // falls back to the walk.
        let quick = std::fs::remove_file(dir.join("owner")).and_then(|()| std::fs::remove_dir(dir));
        if let Err(e) = quick.or_else(|_| std::fs::remove_dir_all(dir)) {
            if !matches!(e.kind(), ErrorKind::NotFound) {
                warn(&format!("could not remove mutex {}: {e}", dir.display()));
            }
        }
    } else {
        warn(&format!(
            "mutex {} is no longer owned by {token}; left intact",
            dir.display()
        ));
    }
}

/// Age of a mutex path by its own mtime (not following a symlink), if any.
pub fn age(dir: &Path) -> Option<Duration> {
    let md = std::fs::symlink_metadata(dir).ok()?;
    // A clock running backwards reads as age zero: never a reason to steal.
    Some(
        md.modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .unwrap_or_default(),
    )
}

/// Steal `dir` if it is a corpse. True means "retry mkdir now" (the corpse is
/// gone, or the mutex was released meanwhile); false means wait.
pub fn steal_if_stale(dir: &Path) -> bool {
    // symlink_metadata: a dangling symlink is EEXIST to mkdir but NotFound to a
    // following stat, and answering "retry now" for it would spin forever.
    let before = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound) => return true,
        Err(_) => return false,
    };
    let age = before
        .modified()
        .ok()
        .and_then(|t| t.elapsed().ok())
        .unwrap_or_default();
    // The token is the corpse's identity: between the age check and the rename
    // another stealer may win and a fresh holder mkdir at the same path, and
    // what we then move is a LIVE lock.
    let before_token = read_owner(dir);
    let by_age = age > STALE_MUTEX_STEAL;
    if !by_age && !owner_is_gone(&before_token) {
        return false;
    }
    let reaped = reap_name(dir);
    #[cfg(test)]
    crate::fault::at(crate::fault::Point::StealRecheck, dir);
    // Re-check the one we aged is still there, as close to the rename as we
    // can: another stealer may have cleared it and a fresh holder made a new
    // dir while we read the token, and moving a live dir - even to put it
    // back - opens a gap in which a third process can mkdir.
    if !same_corpse(dir, &before) {
        return false;
    }
    #[cfg(test)]
    crate::fault::at(crate::fault::Point::StealRename, dir);
    match std::fs::rename(dir, &reaped) {
        Ok(()) => {
            let after = read_owner(&reaped);
            // An empty owner is a pre-token corpse (or a crash before
            // stamping) - but also a fresh holder between its mkdir and its
            // stamp, swapped in after our age check. The corpse we aged is
            // still old; a dir young enough to be honest is not it.
            let still_old = self::age(&reaped).is_some_and(|a| a > STALE_MUTEX_STEAL);
            // A young dir is the dead owner's only if it still carries its
            // (non-empty) token: an empty one may be a fresh holder that has
            // not stamped yet.
            let ours = if by_age {
                still_old && (after.is_empty() || after == before_token)
            } else {
                after == before_token
            };
            if !ours {
                // NOREPLACE: a dir made at the path meanwhile must not be
                // swapped out by the put-back.
                if rename_noreplace(&reaped, dir).is_err() {
                    warn(&format!(
                        "stole a live mutex at {} and could not restore it",
                        dir.display()
                    ));
                }
                return false;
            }
            remove_reaped(&reaped);
            true
        }
        Err(e) if matches!(e.kind(), ErrorKind::NotFound) => true,
        Err(e) => {
            warn(&format!(
                "could not steal stale mutex {}: {e}",
                dir.display()
            ));
            false
        }
    }
}

/// Does `token` (`host:pid:nanos`, the format every implementation writes)
/// name a holder on this host whose process is provably gone? The pid alone
/// is not enough: once its owner died it may run something else, so the
/// process must also have started after the token was stamped.
///
/// Only tokens naming this host are judged; a pid from another host (or an
/// unparseable token) says nothing here and waits out the age rule.
pub fn owner_is_gone(token: &str) -> bool {
    let mut parts = token.rsplitn(3, ':');
    let (Some(nanos), Some(pid), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let (Ok(nanos), Ok(pid)) = (nanos.parse::<u128>(), pid.parse::<i32>()) else {
        return false;
    };
    if host.is_empty() || host != hostname() || pid as u32 == std::process::id() {
        return false;
    }
    let stamped_ms = i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX);
    pid_gone_since(pid, stamped_ms)
}

/// `<lockfile-name>.recovery.d`: wire protocol, shared with every
/// implementation that recovers or renews the same claim.
pub fn recovery_mutex_path(lockfile: &Path) -> PathBuf {
    let name = lockfile
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    lockfile.with_file_name(format!("{name}{RECOVERY_SUFFIX}"))
}

/// The events mutex next to the log: `events.jsonl.lock.d`.
pub fn events_mutex_path(events_path: &Path) -> PathBuf {
    let name = events_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "events.jsonl".into());
    events_path.with_file_name(format!("{name}.lock.d"))
}

/// Who holds a mutex dir and for how long, for a waiter to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The owner token (`host:pid:nanos`), or "" when the dir has none yet.
    pub owner: String,
    /// Age of the dir.
    pub held: Duration,
    /// What the owner is instead, when no implementation wrote it (see
    /// [`foreign_owner`]): a waiter says it waits on a planted object.
    pub foreign: Option<String>,
}

/// The holder of `dir`, if it exists.
pub fn holder(dir: &Path) -> Option<Holder> {
    Some(Holder {
        held: age(dir)?,
        owner: read_owner(dir),
        foreign: foreign_owner(dir),
    })
}

fn same_corpse(dir: &Path, aged: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir).is_ok_and(|now| {
        now.ino() == aged.ino() && now.dev() == aged.dev() && now.mtime() == aged.mtime()
    })
}

/// Unique per attempt: a reap dir left behind by a failed cleanup must not
/// collide with, and so disable, every later steal by this process.
fn reap_name(dir: &Path) -> PathBuf {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.with_file_name(format!(
        "{name}.reap.{}.{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A reaped mutex is usually a dir but may be a symlink.
fn remove_reaped(path: &Path) {
    if std::fs::remove_file(path).is_ok() {
        return;
    }
    if let Err(e) = std::fs::remove_dir_all(path) {
        if !matches!(e.kind(), ErrorKind::NotFound) {
            warn(&format!(
                "could not remove reaped mutex {}: {e}",
                path.display()
            ));
        }
    }
}

/// Wait (bounded) for someone else's mutex to go away. Only for mutexes young
/// enough to be honestly held; corpses are stolen before this is reached.
pub fn wait_for_release(dir: &Path, max_wait: Duration) {
    let deadline = Instant::now() + max_wait;
    // symlink_metadata, not exists(): a dangling symlink must read as present.
    while std::fs::symlink_metadata(dir).is_ok() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Set a path's mtime `secs` into the past without following a symlink.
/// Tests and the demo use it to make a corpse; doctor tests to age litter.
pub fn backdate(path: &Path, secs: u64) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let t = libc::timeval {
        tv_sec: (now - secs as i64) as libc::time_t,
        tv_usec: 0,
    };
    let times = [t, t];
    // SAFETY: c is a valid NUL-terminated path; times points at two timevals.
    if unsafe { libc::lutimes(c.as_ptr(), times.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests;
