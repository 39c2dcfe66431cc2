//! The verbs but acquire (`acquire.rs`): release, status, renew,
//! force-release.
//!
//! Every face (CLI, dashboard, demo workers) goes through these; none of them
//! touch a lockfile any other way.

use super::atomic::{self, Archived};
use super::audit::force_released_fields;
use super::liveness::Classifier;
use super::lockfile_read::{read_claim_file_raw, ReadError};
use super::mutex::{lock_recovery, Pinned, WaitHook};
use super::{mutex, now_ms, ClaimError, ClaimRecord, ClaimState, MAX_TTL_MS, MIN_TTL_MS};
// Re-exported where they lived before: other code names them by these paths.
pub use super::mutex::recovery_mutex_path;
pub use super::root::Root;
pub use super::status::Status;
use crate::events::EventKind;
use serde::Serialize;
use serde_json::Value;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// The error for a lockfile that could not be read as a record.
pub(super) fn corrupted(path: &Path, e: ReadError) -> ClaimError {
    let path = path.to_path_buf();
    match e {
        ReadError::Unreadable { reason } => ClaimError::Unreadable { path, reason },
        e => ClaimError::Corrupted {
            path,
            reason: e.reason().to_string(),
        },
    }
}

pub(super) fn create_error(path: &Path, e: std::io::Error) -> ClaimError {
    ClaimError::io("create", path, e)
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
    release_watched(root, key, holder, None)
}

/// [`release`], telling `on_wait` when it waits on a peer's recovery mutex
/// (a recovery or force-release of the same claim in progress).
pub fn release_watched(
    root: &Root,
    key: &str,
    holder: &str,
    on_wait: Option<&WaitHook>,
) -> Result<ReleaseOutcome, ClaimError> {
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
    let pinned = match lock_recovery(&lock_dir, on_wait)? {
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
    #[cfg(test)]
    crate::fault::at(crate::fault::Point::ReleaseUnlink, &path);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if matches!(e.kind(), ErrorKind::NotFound) => return Ok(ReleaseOutcome::Absent),
        Err(e) => return Err(ClaimError::io("remove", path, e)),
    }
    drop(pinned);
    let mut data = existing.event_fields();
    data.insert("duration_held_ms".into(), Value::from(held_ms));
    root.emit(EventKind::Released, data);
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
    root.emit(EventKind::Renewed, data);
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
    let unmet = |field: &str, now: Option<String>, want: String| {
        Some(match now {
            Some(now) => format!(
                "{field} is now {now}, not the expected {want} (released and re-acquired since?)"
            ),
            None => format!("expected {field} {want} but the {held_in} is corrupted"),
        })
    };
    if let Some(want) = &opts.expect_holder {
        if previous.map(|r| &r.holder) != Some(want) {
            let now = previous.map(|r| format!("{:?}", r.holder));
            return unmet("holder", now, format!("{want:?}"));
        }
    }
    if let Some(want) = opts.expect_acquired_at {
        if previous.map(|r| r.acquired_at) != Some(want) {
            // Instants as times, not epoch ms: the operator compares them
            // with the times every other face shows.
            let at = |ms| crate::time::instant_words(ms, true);
            return unmet("acquired_at", previous.map(|r| at(r.acquired_at)), at(want));
        }
    }
    None
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
    root.emit(EventKind::ForceReleased, data);
    Ok(ForceOutcome::Archived {
        archived_to,
        previous,
        previous_state: state,
    })
}
