//! Acquire: take a key, re-take it for the same holder, or reclaim it from
//! a stale holder under the recovery mutex (the seed's 120 s steal rule),
//! archiving the stale claim to `.expired/` before the new one is linked.

use super::atomic::{self, Archived, CreateError};
use super::liveness::{hostname, machine_id, Classifier};
use super::lockfile_read::{read_claim_file_raw, ReadError};
use super::mutex::{lock_recovery, recovery_mutex_path, Pinned, WaitHook};
use super::verbs::{corrupted, create_error};
use super::{now_ms, validate_inputs, ClaimError, ClaimRecord, ClaimState, Root, SCHEMA_VERSION};
use crate::events::EventKind;
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::Path;

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
        metadata: opts.metadata.as_ref().cloned().unwrap_or_default().into(),
    }
}

pub(crate) fn acquired_data(rec: &ClaimRecord) -> Map<String, Value> {
    let mut data = rec.event_fields();
    if let Some(reason) = rec.reason.as_deref() {
        data.insert("reason".to_string(), Value::from(reason));
    }
    data
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
                root.emit(EventKind::Acquired, acquired_data(&fresh));
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
    root.emit(EventKind::Reacquired, data);
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
                    root.emit(EventKind::Acquired, acquired_data(&fresh));
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
            root.emit(EventKind::Reclaimed, data);
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
