//! The verbs: acquire, release, status, renew, force-release.
//!
//! Every face (CLI, dashboard, demo workers) goes through these; none of them
//! touch a lockfile any other way.

use super::atomic::{self, Archived, CreateError};
use super::audit::force_released_fields;
use super::liveness::{hostname, machine_id, Classifier};
use super::record::{read_claim_file_raw, ReadError};
use super::{
    mutex, now_ms, validate_inputs, ClaimError, ClaimRecord, ClaimState, MAX_TTL_MS, MIN_TTL_MS,
    SCHEMA_VERSION,
};
// Re-exported where they lived before: other code names them by these paths.
pub use super::mutex::recovery_mutex_path;
pub use super::root::Root;
pub use super::status::Status;
use serde::Serialize;
use serde_json::{Map, Value};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Recovery-mutex wait before retrying acquire from the top (Python's 5 s).
const RECOVERY_MAX_WAIT: Duration = Duration::from_secs(5);
/// Bounded retry for gone-away / lost-recovery races. Python recurses without
/// bound; hitting this means pathological churn and is reported as an error.
const ACQUIRE_MAX_ATTEMPTS: usize = 5;

/// Options for [`acquire`].
#[derive(Debug, Default, Clone)]
pub struct AcquireOpts {
    /// The pid the claim is bound to; default the calling process.
    pub pid: Option<u32>,
    pub ttl_ms: Option<i64>,
    pub reason: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    /// Harness tag; None resolves it from the environment.
    pub harness: Option<String>,
    /// Which claim of the same holder is continued rather than met as
    /// another holder's (see [`super::Adopt`]).
    pub adopt: super::Adopt,
}

impl AcquireOpts {
    /// Does this acquire continue `existing`, as the seed's idempotent
    /// re-acquire, instead of meeting it as another holder's claim?
    pub fn adopts(&self, existing: &ClaimRecord, holder: &str) -> bool {
        let pid = self.pid.unwrap_or(std::process::id());
        self.adopt.takes(existing, holder, pid)
    }
}

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

    fn tell(&self, w: &Waiting) {
        (self.0)(w)
    }
}

impl std::fmt::Debug for WaitHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WaitHook")
    }
}

/// How a successful acquire came about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AcquireKind {
    Fresh,
    Reacquired,
    Reclaimed {
        previous_holder: String,
        previous_pid: i32,
    },
}

/// Outcome of [`acquire`] that is not an error.
// Returned once per verb, never stored in bulk: boxing the record would
// only cost callers a deref.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum AcquireOutcome {
    Acquired {
        record: ClaimRecord,
        kind: AcquireKind,
    },
    /// A Live (or TTL-protected Suspect) claim of another holder.
    HeldByOther {
        holder: String,
        pid: i32,
        host: String,
    },
}

/// Ambient harness markers, highest precedence first (Python's
/// `HARNESS_SESSION_MARKERS`), so both writers tag a claim alike.
const HARNESS_MARKERS: &[(&str, &str)] = &[
    ("CODEX_THREAD_ID", "codex"),
    ("CLAUDE_CODE_SESSION_ID", "claude"),
    ("CODEX_SESSION_ID", "codex"),
    ("GEMINI_SESSION_ID", "gemini"),
    ("OPENCODE_SESSION_ID", "opencode"),
];

/// The harness this process runs under, from its environment.
pub fn resolve_harness() -> Option<String> {
    resolve_harness_from(|name| std::env::var(name).ok())
}

/// [`resolve_harness`] with the environment passed in. A blank marker is
/// unset (Python strips), so a lower-precedence real marker still wins.
pub fn resolve_harness_from<F>(get: F) -> Option<String>
where
    F: Fn(&str) -> Option<String>,
{
    HARNESS_MARKERS
        .iter()
        .find(|(marker, _)| get(marker).is_some_and(|v| !v.trim().is_empty()))
        .map(|(_, h)| (*h).to_string())
}

/// The record `holder` would write for `key` now (on any store).
pub(crate) fn new_record(key: &str, holder: &str, opts: &AcquireOpts) -> ClaimRecord {
    let now = now_ms();
    let mid = machine_id();
    ClaimRecord {
        schema_version: SCHEMA_VERSION,
        key: key.to_string(),
        holder: holder.to_string(),
        acquired_at: now,
        // Checked in acquire: a pid above i32::MAX never gets here.
        pid: opts.pid.unwrap_or(std::process::id()) as i32,
        host: hostname(),
        expires_at: opts.ttl_ms.map(|ttl| now + ttl),
        reason: opts.reason.clone(),
        harness: opts.harness.clone().or_else(resolve_harness),
        // Omitted, never backfilled with the hostname, when there is no stable
        // id: readers trust a present value.
        machine_id: (!mid.is_empty()).then_some(mid),
        metadata: opts.metadata.as_ref().cloned().unwrap_or_default(),
    }
}

pub(crate) fn acquired_data(rec: &ClaimRecord) -> Map<String, Value> {
    let mut data = rec.event_fields();
    if let Some(reason) = rec.reason.as_deref() {
        data.insert("reason".to_string(), Value::from(reason));
    }
    data
}

/// The error for a lockfile that could not be read as a record.
fn corrupted(path: &Path, e: ReadError) -> ClaimError {
    let path = path.to_path_buf();
    match e {
        ReadError::Unreadable { reason } => ClaimError::Unreadable { path, reason },
        e => ClaimError::Corrupted {
            path,
            reason: e.reason().to_string(),
        },
    }
}

fn create_error(path: &Path, e: std::io::Error) -> ClaimError {
    ClaimError::io("create", path, e)
}

/// Would acquire refuse to take this claim from someone else?
fn protected(rec: &ClaimRecord) -> bool {
    matches!(
        Classifier::new(now_ms()).verdict(rec).state,
        ClaimState::Live | ClaimState::Suspect
    )
}

/// Acquire `key` for `holder`.
///
/// On collision: same holder → idempotent re-acquire (rewrite, metadata
/// replaced); Live or Suspect other → held; otherwise stale recovery under the
/// recovery mutex. A corrupted file is refused (left for force-release).
pub fn acquire(
    root: &Root,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
) -> Result<AcquireOutcome, ClaimError> {
    acquire_watched(root, key, holder, opts, None)
}

/// [`acquire`], telling `on_wait` whenever it is about to wait on a peer's
/// recovery mutex (the CLI says so on stderr rather than sit silent).
pub fn acquire_watched(
    root: &Root,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
    on_wait: Option<&WaitHook>,
) -> Result<AcquireOutcome, ClaimError> {
    validate_inputs(key, holder, opts.ttl_ms)?;
    // The record stores an i32: a larger pid would wrap negative and, like 0,
    // write a claim that reads Stale the moment it lands.
    if let Some(pid) = opts.pid.filter(|p| *p == 0 || *p > i32::MAX as u32) {
        return Err(ClaimError::BadPid(pid));
    }
    let path = root.lockfile(key);
    for _ in 0..ACQUIRE_MAX_ATTEMPTS {
        let fresh = new_record(key, holder, opts);
        match atomic::create_exclusive(&path, fresh.to_lockfile()?.as_bytes()) {
            Ok(()) => {
                root.emit("claim_acquired", acquired_data(&fresh));
                return Ok(AcquireOutcome::Acquired {
                    record: fresh,
                    kind: AcquireKind::Fresh,
                });
            }
            Err(CreateError::AlreadyHeld) => {}
            Err(CreateError::Io(e)) => return held_or(&path, holder, create_error(&path, e)),
        }
        let existing = match read_claim_file_raw(&path) {
            Ok((rec, _)) => rec,
            Err(ReadError::GoneAway) => continue,
            Err(e) => return Err(corrupted(&path, e)),
        };
        if opts.adopts(&existing, holder) {
            // Under the recovery mutex: a recoverer may have judged this
            // very file stale (a dead pid) and be about to archive it. Were
            // the rewrite to land between its judgement and its rename, the
            // archive would move our now-live claim away, and a third
            // process creating the key in that instant would leave us
            // believing we hold a key someone else holds.
            let _pinned = match lock_recovery(&recovery_mutex_path(&path), on_wait)? {
                Pinned::DirGone | Pinned::Busy => continue,
                pinned => pinned,
            };
            match read_claim_file_raw(&path) {
                Ok((rec, _)) if opts.adopts(&rec, holder) => {
                    return reacquire(root, &path, key, holder, opts, &rec);
                }
                Ok(_) | Err(ReadError::GoneAway) => continue,
                Err(e) => return Err(corrupted(&path, e)),
            }
        }
        if protected(&existing) {
            return Ok(held(existing));
        }
        if let Some(outcome) = recover_stale(root, &path, key, holder, opts, on_wait)? {
            return Ok(outcome);
        }
    }
    Err(ClaimError::Contention {
        attempts: ACQUIRE_MAX_ATTEMPTS,
        key: key.to_string(),
    })
}

/// What [`lock_recovery`] got.
enum Pinned {
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
fn lock_recovery(lock_dir: &Path, hook: Option<&WaitHook>) -> Result<Pinned, ClaimError> {
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
        mutex::wait_for_release(lock_dir, left);
    }
}

/// A create that failed (read-only or full filesystem, permission denied)
/// over a key another holder keeps: held beats the write error. Whatever
/// else is wrong, that key could not have been taken, and a waiter must
/// wait for it rather than give up on an error.
fn held_or(path: &Path, holder: &str, err: ClaimError) -> Result<AcquireOutcome, ClaimError> {
    match read_claim_file_raw(path) {
        Ok((rec, _)) if rec.holder != holder && protected(&rec) => Ok(held(rec)),
        _ => Err(err),
    }
}

fn held(rec: ClaimRecord) -> AcquireOutcome {
    AcquireOutcome::HeldByOther {
        holder: rec.holder,
        pid: rec.pid,
        host: rec.host,
    }
}

fn reacquire(
    root: &Root,
    path: &Path,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
    existing: &ClaimRecord,
) -> Result<AcquireOutcome, ClaimError> {
    let refreshed = new_record(key, holder, opts);
    atomic::replace(path, refreshed.to_lockfile()?.as_bytes())
        .map_err(|e| ClaimError::io("replace", path, e))?;
    let mut data = refreshed.event_fields();
    data.insert(
        "previous_acquired_at".into(),
        Value::from(existing.acquired_at),
    );
    root.emit("claim_idempotent_reacquired", data);
    Ok(AcquireOutcome::Acquired {
        record: refreshed,
        kind: AcquireKind::Reacquired,
    })
}

/// Stale recovery. `Ok(None)` = retry acquire from the top.
///
/// The mutex is a spurious-retry guard, not the correctness boundary: the
/// archive rename and the exclusive create arbitrate on their own. A young
/// mutex is never touched (its holder may be mid-archive); a waiter whose
/// deadline passes just retries.
fn recover_stale(
    root: &Root,
    path: &Path,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
    on_wait: Option<&WaitHook>,
) -> Result<Option<AcquireOutcome>, ClaimError> {
    // A mutex no one can create (a key near the 240-byte cap) excludes no
    // one: recover without it, or the key is bricked for good; the verified
    // archive and the exclusive create still pick one winner.
    let pinned = match lock_recovery(&recovery_mutex_path(path), on_wait)? {
        // The claims dir vanished: the create at the top recreates it.
        Pinned::DirGone => return Ok(None),
        // An honest peer is still at it: go round and meet its result.
        Pinned::Busy => return Ok(None),
        pinned => pinned,
    };
    let result = recover_stale_locked(root, path, key, holder, opts);
    drop(pinned);
    result
}

fn recover_stale_locked(
    root: &Root,
    path: &Path,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
) -> Result<Option<AcquireOutcome>, ClaimError> {
    // Re-read inside: the holder may have changed or gone while we took the
    // mutex.
    let (existing, judged) = match read_claim_file_raw(path) {
        Ok(r) => r,
        Err(ReadError::GoneAway) => {
            let fresh = new_record(key, holder, opts);
            return match atomic::create_exclusive(path, fresh.to_lockfile()?.as_bytes()) {
                Ok(()) => {
                    root.emit("claim_acquired", acquired_data(&fresh));
                    Ok(Some(AcquireOutcome::Acquired {
                        record: fresh,
                        kind: AcquireKind::Fresh,
                    }))
                }
                Err(CreateError::AlreadyHeld) => Ok(None),
                Err(CreateError::Io(e)) => Err(create_error(path, e)),
            };
        }
        Err(e) => return Err(corrupted(path, e)),
    };
    if opts.adopts(&existing, holder) {
        return reacquire(root, path, key, holder, opts, &existing).map(Some);
    }
    if protected(&existing) {
        return Ok(Some(held(existing)));
    }
    match atomic::archive(path, now_ms(), Some(&judged))
        .map_err(|e| ClaimError::Archive(Box::new(e)))?
    {
        Archived::To(_) | Archived::Gone => {}
        // Its holder rewrote it after we judged it stale: it is alive after
        // all; go around and meet it as held.
        Archived::PutBack | Archived::ChangedAndKept(_) => return Ok(None),
    }
    let fresh = new_record(key, holder, opts);
    match atomic::create_exclusive(path, fresh.to_lockfile()?.as_bytes()) {
        Ok(()) => {
            let mut data = fresh.event_fields();
            data.insert(
                "previous_holder".into(),
                Value::String(existing.holder.clone()),
            );
            data.insert("previous_pid".into(), Value::from(existing.pid));
            root.emit("claim_stale_reclaimed", data);
            Ok(Some(AcquireOutcome::Acquired {
                record: fresh,
                kind: AcquireKind::Reclaimed {
                    previous_holder: existing.holder,
                    previous_pid: existing.pid,
                },
            }))
        }
        Err(CreateError::AlreadyHeld) => Ok(None),
        Err(CreateError::Io(e)) => Err(create_error(path, e)),
    }
}

/// Outcome of [`release`]. All but `Released` are the silent successes of a
/// non-strict release.
// Returned once per verb, never stored in bulk: boxing the record would
// only cost callers a deref.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ReleaseOutcome {
    Released {
        record: ClaimRecord,
        held_ms: i64,
    },
    /// Someone else holds it; their file is untouched.
    NotHeld {
        holder: String,
    },
    Absent,
    /// The file cannot be verified; left in place for force-release.
    CorruptedLeft {
        reason: String,
    },
}

impl ReleaseOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            ReleaseOutcome::Released { .. } => "released",
            ReleaseOutcome::NotHeld { .. } => "not_held",
            ReleaseOutcome::Absent => "absent",
            ReleaseOutcome::CorruptedLeft { .. } => "corrupted_left",
        }
    }
}

/// Release `holder`'s claim on `key` (non-strict: idempotent).
pub fn release(root: &Root, key: &str, holder: &str) -> Result<ReleaseOutcome, ClaimError> {
    if key.is_empty() {
        return Err(ClaimError::EmptyKey);
    }
    if holder.is_empty() {
        return Err(ClaimError::EmptyHolder);
    }
    let path = root.lockfile(key);
    let existing = match read_claim_file_raw(&path) {
        Ok((rec, _)) => rec,
        Err(ReadError::GoneAway) => return Ok(ReleaseOutcome::Absent),
        Err(ReadError::Corrupted { reason, .. }) => {
            return Ok(ReleaseOutcome::CorruptedLeft { reason })
        }
        // It may be ours: say so rather than report it left as corrupted.
        Err(e @ ReadError::Unreadable { .. }) => return Err(corrupted(&path, e)),
    };
    if existing.holder != holder {
        return Ok(ReleaseOutcome::NotHeld {
            holder: existing.holder,
        });
    }
    // Read-then-unlink is not atomic: between the two a force-release or a
    // stale recovery can archive this claim and a newcomer create the key,
    // and the unlink would then delete the newcomer's live claim. Both
    // archivers work under the recovery mutex and a create needs the path
    // free, so re-reading under that mutex pins the file until the unlink.
    let lock_dir = recovery_mutex_path(&path);
    let pinned = match lock_recovery(&lock_dir, None)? {
        Pinned::DirGone => return Ok(ReleaseOutcome::Absent),
        // A peer kept the mutex past the wait (a recoverer on another
        // machine, or one hung mid-section; a killed local one is stolen at
        // once). The seed's release never takes this mutex, and a holder's
        // own release must not fail where the seed's succeeds: release
        // unpinned, as the seed does, after the same re-read below.
        Pinned::Busy => None,
        pinned => Some(pinned),
    };
    let existing = match read_claim_file_raw(&path) {
        Ok((rec, _)) if rec.holder == holder => rec,
        Ok((rec, _)) => return Ok(ReleaseOutcome::NotHeld { holder: rec.holder }),
        Err(ReadError::GoneAway) => return Ok(ReleaseOutcome::Absent),
        Err(ReadError::Corrupted { reason, .. }) => {
            return Ok(ReleaseOutcome::CorruptedLeft { reason })
        }
        Err(e @ ReadError::Unreadable { .. }) => return Err(corrupted(&path, e)),
    };
    let held_ms = (now_ms() - existing.acquired_at).max(0);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if matches!(e.kind(), ErrorKind::NotFound) => return Ok(ReleaseOutcome::Absent),
        Err(e) => return Err(ClaimError::io("remove", path, e)),
    }
    drop(pinned);
    let mut data = existing.event_fields();
    data.insert("duration_held_ms".into(), Value::from(held_ms));
    root.emit("claim_released", data);
    Ok(ReleaseOutcome::Released {
        record: existing,
        held_ms,
    })
}

/// Classify one key. Never fails: absent is Free, a file that is not a claim
/// is Corrupted, one that cannot be read here is Unreadable.
pub fn status(root: &Root, key: &str) -> Status {
    Status::of_file(key, &root.lockfile(key), &mut Classifier::new(now_ms()))
}

/// Why a renew did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoRenew {
    Absent,
    Corrupted,
    OtherHolder,
    /// PID-liveness claim: no TTL to extend.
    PidBound,
    /// Already expired: reclaimable, and resurrecting it would race recovery.
    Expired,
    /// A peer holds the recovery mutex (mid-reclaim); a missed renewal only
    /// shortens the lease.
    MutexBusy,
    /// The claim file cannot be read here (permission, size, parse cost).
    Unreadable,
}

impl NoRenew {
    pub fn describe(self) -> &'static str {
        match self {
            NoRenew::Absent => "no claim file",
            NoRenew::Corrupted => "the claim file is corrupted",
            NoRenew::OtherHolder => "held by another holder",
            NoRenew::PidBound => "PID-bound claim has no TTL to extend",
            NoRenew::Expired => "the TTL already expired; it is reclaimable, not renewable",
            NoRenew::MutexBusy => "a peer holds the recovery mutex",
            NoRenew::Unreadable => "the claim file cannot be read here",
        }
    }
}

// Returned once per verb, never stored in bulk: boxing the record would
// only cost callers a deref.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum RenewOutcome {
    Renewed {
        record: ClaimRecord,
        previous_expires_at: i64,
    },
    NotRenewed(NoRenew),
}

/// Reset a live TTL claim's deadline to `now + ttl_ms`, only while `holder`
/// still holds it.
///
/// A FIXED window: deriving the span from `expires_at - acquired_at` would
/// compound across renewals (acquired_at stays, expires_at moves). Only
/// `expires_at` changes, so PID-reuse detection is intact. The mutate runs
/// under the claim's recovery mutex and re-reads inside, so it never clobbers
/// a peer's concurrent reclaim.
pub fn renew(
    root: &Root,
    key: &str,
    holder: &str,
    ttl_ms: i64,
) -> Result<RenewOutcome, ClaimError> {
    renew_as(root, key, holder, ttl_ms, None)
}

/// [`renew`] done by an operator on the holder's behalf: the same renewal,
/// with `operator` recorded in the `claim_renewed` event (absent otherwise,
/// so a holder's own renewals read as before).
pub fn renew_as(
    root: &Root,
    key: &str,
    holder: &str,
    ttl_ms: i64,
    operator: Option<&str>,
) -> Result<RenewOutcome, ClaimError> {
    if key.is_empty() {
        return Err(ClaimError::EmptyKey);
    }
    if holder.is_empty() {
        return Err(ClaimError::EmptyHolder);
    }
    if ttl_ms <= 0 {
        return Err(ClaimError::TtlNotPositive);
    }
    if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl_ms) {
        return Err(ClaimError::TtlOutOfRange(ttl_ms));
    }
    let path = root.lockfile(key);
    // Cheap pre-check outside the mutex keeps the common no-op lock-free.
    if let Err(no) = renewable(&path, holder, now_ms()) {
        return Ok(RenewOutcome::NotRenewed(no));
    }
    let lock_dir = recovery_mutex_path(&path);
    // A corpse here would block every renewal; retry once past a stale one.
    let guard = match mutex::try_lock(&lock_dir) {
        Ok(Some(g)) => Some(g),
        // As in `lock_recovery`: a mutex no one can create excludes no one.
        Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => None,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound) => {
            return Ok(RenewOutcome::NotRenewed(NoRenew::Absent))
        }
        // A filesystem refusing the mkdir (read-only, permissions) is an
        // error to report, not a peer's mutex to back off from.
        Err(e) => return Err(ClaimError::io("create recovery mutex", lock_dir, e)),
        Ok(None) => match mutex::steal_if_stale(&lock_dir)
            .then(|| mutex::try_lock(&lock_dir).ok().flatten())
            .flatten()
        {
            Some(g) => Some(g),
            None => return Ok(RenewOutcome::NotRenewed(NoRenew::MutexBusy)),
        },
    };
    // Re-read inside: a peer may have reclaimed it while we took the mutex.
    let now = now_ms();
    let mut rec = match renewable(&path, holder, now) {
        Ok(rec) => rec,
        Err(no) => return Ok(RenewOutcome::NotRenewed(no)),
    };
    let previous = rec.expires_at.unwrap_or(now);
    rec.expires_at = Some(now + ttl_ms);
    atomic::replace(&path, rec.to_lockfile()?.as_bytes())
        .map_err(|e| ClaimError::io("replace", &path, e))?;
    drop(guard);
    let mut data = rec.event_fields();
    data.insert("previous_expires_at".into(), Value::from(previous));
    data.insert("ttl_ms".into(), Value::from(ttl_ms));
    if let Some(op) = operator {
        data.insert("operator".into(), Value::from(op));
    }
    root.emit("claim_renewed", data);
    Ok(RenewOutcome::Renewed {
        record: rec,
        previous_expires_at: previous,
    })
}

/// The record if `holder` may renew it at `now`, else why not.
fn renewable(path: &Path, holder: &str, now: i64) -> Result<ClaimRecord, NoRenew> {
    let rec = match read_claim_file_raw(path) {
        Ok((rec, _)) => rec,
        Err(ReadError::GoneAway) => return Err(NoRenew::Absent),
        Err(ReadError::Corrupted { .. }) => return Err(NoRenew::Corrupted),
        Err(ReadError::Unreadable { .. }) => return Err(NoRenew::Unreadable),
    };
    if rec.holder != holder {
        return Err(NoRenew::OtherHolder);
    }
    match rec.expires_at {
        None => Err(NoRenew::PidBound),
        Some(exp) if now >= exp => Err(NoRenew::Expired),
        Some(_) => Ok(rec),
    }
}

/// Guards and identity for [`force_release`].
#[derive(Debug, Default, Clone)]
pub struct ForceOpts {
    /// Refuse unless the file still names this holder.
    pub expect_holder: Option<String>,
    /// Refuse unless the file still has this `acquired_at`.
    pub expect_acquired_at: Option<i64>,
    /// Who did it, for the audit trail.
    pub operator: Option<String>,
    /// Allow archiving a Live claim.
    pub allow_live: bool,
}

// Returned once per verb, never stored in bulk: boxing the record would
// only cost callers a deref.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ForceOutcome {
    Archived {
        archived_to: PathBuf,
        previous: Option<ClaimRecord>,
        previous_state: ClaimState,
    },
    Refused(String),
}

/// Operator release of a stuck key: archive (never unlink) under the same
/// recovery mutex stale recovery uses, after re-checking inside it that the
/// file is still the one the operator looked at.
pub fn force_release(root: &Root, key: &str, opts: &ForceOpts) -> Result<ForceOutcome, ClaimError> {
    if key.is_empty() {
        return Err(ClaimError::EmptyKey);
    }
    let path = root.lockfile(key);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(ForceOutcome::Refused(format!("no claim file for {key:?}")));
    }
    let lock_dir = recovery_mutex_path(&path);
    // lock_recovery, not mutex::lock: a read-only or forbidden claims dir
    // must surface as its error at once, not as five seconds of waiting
    // followed by a claim that a recovery is in progress.
    let pinned = match lock_recovery(&lock_dir, None)? {
        Pinned::DirGone => return Ok(ForceOutcome::Refused(format!("no claim file for {key:?}"))),
        Pinned::Busy => {
            return Ok(ForceOutcome::Refused(
                "the recovery mutex is held (a recovery is in progress); try again".into(),
            ))
        }
        pinned => pinned,
    };
    let result = force_release_locked(root, key, &path, opts);
    drop(pinned);
    result
}

/// Why a force-release must not go ahead, on any store: the claim is no
/// longer the one the operator looked at, or it may be live and
/// `--allow-live` was not given. Unreadable is treated as Live: a limit of
/// this reader (or its permissions) must never make a claim easier to take
/// away.
pub(crate) fn force_refusal(
    previous: Option<&ClaimRecord>,
    state: ClaimState,
    why: &str,
    opts: &ForceOpts,
    held_in: &str,
) -> Option<String> {
    if let Some(why_not) = expectation_unmet(previous, opts, held_in) {
        return Some(why_not);
    }
    match state {
        ClaimState::Live if !opts.allow_live => {
            Some(format!("the claim is live ({why}); --allow-live overrides"))
        }
        ClaimState::Unreadable if !opts.allow_live => Some(format!(
            "the claim cannot be read here ({why}), so it may be live; --allow-live overrides"
        )),
        _ => None,
    }
}

/// The operator's compare-before-acting guard: why the claim is no longer
/// the one they looked at, if it is not. `held_in` names what holds a claim
/// on this store ("file", "record"), for the words.
fn expectation_unmet(
    previous: Option<&ClaimRecord>,
    opts: &ForceOpts,
    held_in: &str,
) -> Option<String> {
    type Field = fn(&ClaimRecord) -> String;
    let checks: [(&str, Option<String>, Field); 2] = [
        ("holder", opts.expect_holder.clone(), |r| r.holder.clone()),
        (
            "acquired_at",
            opts.expect_acquired_at.map(|a| a.to_string()),
            |r| r.acquired_at.to_string(),
        ),
    ];
    checks.into_iter().find_map(|(field, want, actual)| {
        let want = want?;
        match previous.map(actual) {
            Some(now) if now == want => None,
            Some(now) => Some(format!(
                "{field} is now {now:?}, not the expected {want:?} (released and re-acquired since?)"
            )),
            None => Some(format!(
                "expected {field} {want:?} but the {held_in} is corrupted"
            )),
        }
    })
}

fn force_release_locked(
    root: &Root,
    key: &str,
    path: &Path,
    opts: &ForceOpts,
) -> Result<ForceOutcome, ClaimError> {
    let refuse = |s: String| Ok(ForceOutcome::Refused(s));
    let (previous, judged, state, why) = match read_claim_file_raw(path) {
        Ok((rec, bytes)) => {
            let v = Classifier::new(now_ms()).verdict(&rec);
            (Some(rec), Some(bytes), v.state, v.why)
        }
        Err(ReadError::GoneAway) => {
            return refuse(format!(
                "the claim on {key:?} vanished (released meanwhile)"
            ))
        }
        Err(ReadError::Corrupted { reason, .. }) => (None, None, ClaimState::Corrupted, reason),
        Err(ReadError::Unreadable { reason }) => (None, None, ClaimState::Unreadable, reason),
    };
    if let Some(why_not) = force_refusal(previous.as_ref(), state, &why, opts, "file") {
        return refuse(why_not);
    }
    let archived_to = match atomic::archive(path, now_ms(), judged.as_deref())? {
        Archived::To(p) => p,
        Archived::Gone => return refuse(format!("the claim on {key:?} vanished while archiving")),
        Archived::PutBack | Archived::ChangedAndKept(_) => {
            return refuse("the claim changed while it was being archived; left in place".into())
        }
    };
    let data = force_released_fields(
        key,
        previous.as_ref(),
        opts.operator.as_deref(),
        state.as_str(),
        &archived_to.to_string_lossy(),
    );
    root.emit("claim_force_released", data);
    Ok(ForceOutcome::Archived {
        archived_to,
        previous,
        previous_state: state,
    })
}
