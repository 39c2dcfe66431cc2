//! status, acquire, release, renew, force-release: one key each, through the
//! library's verbs and nothing else.

use super::args::{AcquireArgs, ForceArgs};
use super::output::{
    opt_record_json, path_text, record_json, record_text, status_json, CmdResult, Out,
    EXIT_DECLINED, EXIT_OK,
};
use crate::claims::liveness::{hostname, utc_hms};
use crate::claims::{
    self, human_ms, now_ms, validate_inputs, AcquireKind, AcquireOpts, AcquireOutcome, ForceOpts,
    ForceOutcome, ReleaseOutcome, RenewOutcome, Root,
};
use crate::sanitize::sanitize;
use serde_json::{json, Value};

/// Stands in for the holder when only the key is being checked: the key
/// rules live in `validate_inputs`, and a second copy here would drift.
const KEY_ONLY: &str = "-";

pub fn status(root: &Root, key: &str, out: &mut Out) -> CmdResult {
    // A key the protocol would never write has no lockfile to look at; asking
    // the filesystem anyway would report ENAMETOOLONG as a corrupted claim.
    if let Err(e) = validate_inputs(key, KEY_ONLY, None) {
        return out.error(&e.to_string());
    }
    let s = claims::status(root, key);
    if out.json_mode() {
        out.json(&status_json(&s))?;
        return Ok(EXIT_OK);
    }
    out.line(&format!("{}  {}", sanitize(&s.key), s.state))?;
    if let Some(rec) = &s.record {
        out.line(&format!("  {}", record_text(rec, now_ms())))?;
    }
    out.line(&format!("  why: {}", sanitize(&s.why)))?;
    if let Some(err) = &s.error {
        out.line(&format!("  error: {}", sanitize(err)))?;
    }
    out.line(&format!("  file: {}", path_text(&s.file)))?;
    Ok(EXIT_OK)
}

pub fn acquire(root: &Root, a: AcquireArgs, out: &mut Out) -> CmdResult {
    let opts = AcquireOpts {
        // claimtop itself exits in milliseconds: a claim bound to its own pid
        // would be stale (and stolen) at once. The caller — the shell or
        // script that ran us — is the process whose life the claim tracks.
        pid: Some(a.pid.unwrap_or_else(std::os::unix::process::parent_id)),
        ttl_ms: a.ttl,
        reason: a.reason,
        metadata: a.metadata,
        harness: None,
    };
    match claims::acquire(root, &a.key, &a.holder, &opts) {
        Err(e) => out.error(&e.to_string()),
        Ok(AcquireOutcome::Acquired { record, kind }) => {
            if out.json_mode() {
                let mut v = json!({"outcome": "acquired", "record": record_json(&record)});
                add_kind(&mut v, &kind);
                out.json(&v)?;
            } else {
                let how = match &kind {
                    AcquireKind::Fresh => String::new(),
                    AcquireKind::Reacquired => " (re-acquired by the same holder)".into(),
                    AcquireKind::Reclaimed {
                        previous_holder,
                        previous_pid,
                    } => format!(
                        " (reclaimed from stale holder {} pid {previous_pid})",
                        sanitize(previous_holder)
                    ),
                };
                out.line(&format!(
                    "acquired {}{how}: {}",
                    sanitize(&record.key),
                    record_text(&record, now_ms())
                ))?;
            }
            Ok(EXIT_OK)
        }
        Ok(AcquireOutcome::HeldByOther { holder, pid, host }) => {
            if out.json_mode() {
                out.json(&json!({
                    "outcome": "held_by_other",
                    "holder": holder,
                    "pid": pid,
                    "host": host,
                    "key": a.key,
                }))?;
            } else {
                out.line(&format!(
                    "{} is held by {} (pid {pid} on {})",
                    sanitize(&a.key),
                    sanitize(&holder),
                    sanitize(&host)
                ))?;
            }
            Ok(EXIT_DECLINED)
        }
    }
}

/// Added fields: how the claim came about.
fn add_kind(v: &mut Value, kind: &AcquireKind) {
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    let name = match kind {
        AcquireKind::Fresh => "fresh",
        AcquireKind::Reacquired => "reacquired",
        AcquireKind::Reclaimed {
            previous_holder,
            previous_pid,
        } => {
            obj.insert("previous_holder".into(), json!(previous_holder));
            obj.insert("previous_pid".into(), json!(previous_pid));
            "reclaimed"
        }
    };
    obj.insert("kind".into(), json!(name));
}

pub fn release(root: &Root, key: &str, holder: &str, out: &mut Out) -> CmdResult {
    if let Err(e) = validate_inputs(key, holder, None) {
        return out.error(&e.to_string());
    }
    let outcome = match claims::release(root, key, holder) {
        Ok(o) => o,
        Err(e) => return out.error(&e.to_string()),
    };
    if out.json_mode() {
        let mut v = json!({"outcome": outcome.as_str(), "key": key});
        if let Some(obj) = v.as_object_mut() {
            match &outcome {
                ReleaseOutcome::Released { held_ms, .. } => {
                    obj.insert("held_ms".into(), json!(held_ms));
                }
                ReleaseOutcome::NotHeld { holder } => {
                    obj.insert("held_by".into(), json!(holder));
                }
                ReleaseOutcome::CorruptedLeft { reason } => {
                    obj.insert("error".into(), json!(reason));
                }
                ReleaseOutcome::Absent => {}
            }
        }
        out.json(&v)?;
        return Ok(EXIT_OK);
    }
    let k = sanitize(key);
    let text = match &outcome {
        ReleaseOutcome::Released { held_ms, .. } => {
            format!("released {k} (held {})", human_ms(*held_ms))
        }
        ReleaseOutcome::NotHeld { holder: other } => format!(
            "{k} is held by {}, not {}; left alone",
            sanitize(other),
            sanitize(holder)
        ),
        ReleaseOutcome::Absent => format!("{k} has no claim; nothing to release"),
        ReleaseOutcome::CorruptedLeft { reason } => format!(
            "{k}: the claim file is corrupted ({}); left in place, see force-release",
            sanitize(reason)
        ),
    };
    out.line(&text)?;
    Ok(EXIT_OK)
}

pub fn renew(
    root: &Root,
    key: &str,
    holder: &str,
    ttl_ms: i64,
    operator: Option<&str>,
    out: &mut Out,
) -> CmdResult {
    if let Err(e) = validate_inputs(key, holder, Some(ttl_ms)) {
        return out.error(&e.to_string());
    }
    match claims::renew_as(root, key, holder, ttl_ms, operator) {
        Err(e) => out.error(&e.to_string()),
        Ok(RenewOutcome::Renewed { record, .. }) => {
            let until = record.expires_at.unwrap_or_default();
            if out.json_mode() {
                out.json(&json!({"renewed": true, "key": key, "expires_at": until}))?;
            } else {
                out.line(&format!(
                    "renewed {} until {} (in {})",
                    sanitize(key),
                    utc_hms(until),
                    human_ms(ttl_ms)
                ))?;
            }
            Ok(EXIT_OK)
        }
        Ok(RenewOutcome::NotRenewed(no)) => {
            if out.json_mode() {
                out.json(&json!({
                    "renewed": false,
                    "key": key,
                    "why": no.describe(),
                    "why_code": no,
                }))?;
            } else {
                out.line(&format!("{} not renewed: {}", sanitize(key), no.describe()))?;
            }
            Ok(EXIT_DECLINED)
        }
    }
}

/// `$USER@hostname`, so the audit trail says who pulled the lever.
fn default_operator() -> String {
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "operator".into());
    format!("{user}@{}", hostname())
}

pub fn force_release(root: &Root, a: ForceArgs, out: &mut Out) -> CmdResult {
    if let Err(e) = validate_inputs(&a.key, KEY_ONLY, None) {
        return out.error(&e.to_string());
    }
    let opts = ForceOpts {
        expect_holder: a.expect_holder,
        expect_acquired_at: a.expect_acquired_at,
        operator: Some(a.operator.unwrap_or_else(default_operator)),
        allow_live: a.allow_live,
    };
    match claims::force_release(root, &a.key, &opts) {
        Err(e) => out.error(&e.to_string()),
        Ok(ForceOutcome::Archived {
            archived_to,
            previous,
            previous_state,
        }) => {
            if out.json_mode() {
                out.json(&json!({
                    "outcome": "archived",
                    "archived_to": super::output::path_str(&archived_to),
                    "previous": opt_record_json(previous.as_ref()),
                    "previous_state": previous_state.as_str(),
                }))?;
            } else {
                let who = previous
                    .as_ref()
                    .map(|r| format!(", holder {}", sanitize(&r.holder)))
                    .unwrap_or_default();
                out.line(&format!(
                    "archived {} (was {previous_state}{who}) to {}",
                    sanitize(&a.key),
                    path_text(&archived_to)
                ))?;
            }
            Ok(EXIT_OK)
        }
        Ok(ForceOutcome::Refused(reason)) => {
            if out.json_mode() {
                out.json(&json!({"outcome": "refused", "reason": reason}))?;
            } else {
                out.line(&format!("refused: {}", sanitize(&reason)))?;
            }
            Ok(EXIT_DECLINED)
        }
    }
}
