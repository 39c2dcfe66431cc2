//! status, acquire, release, renew, force-release: one key each, through the
//! library's verbs and nothing else.

use super::args::{AcquireArgs, ForceArgs};
use super::output::{
    opt_record_json, path_text, record_json, record_text, status_json, CmdResult, Out,
    EXIT_DECLINED, EXIT_ERROR, EXIT_OK,
};
use crate::claims::{
    self, now_ms, validate_inputs, AcquireKind, AcquireOpts, AcquireOutcome, Adopt, ForceOpts,
    ForceOutcome, OwnHazards, ReleaseOutcome, RenewOutcome,
};
use crate::sanitize::sanitize;
use crate::store::backend::status_now;
use crate::store::{Backend, Fenced, StoreError, Tenure};
use serde_json::{json, Value};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Our parent as it was when `main` began; see [`orphaned`].
static PARENT_AT_START: OnceLock<u32> = OnceLock::new();

/// Remember who started us. Called first thing in `main`, before anything
/// slow, so a parent that exits while we start up is noticed.
pub fn note_parent() {
    let _ = PARENT_AT_START.set(std::os::unix::process::parent_id());
}

/// Has the process that ran us already gone away?
///
/// A dead parent's children are re-parented: to pid 1, or to the nearest
/// ancestor that made itself a child subreaper (`PR_SET_CHILD_SUBREAPER`:
/// systemd --user, tini, container inits). Either way the adopter lives on,
/// so a claim bound to it would be Live forever, and with a TTL still Live
/// after expiry by the hybrid rule. pid 1 is plain to see; a subreaper is
/// not (no process can ask whether *another* one is a subreaper), but an
/// adoption shows as our parent pid changing, so the parent at start is
/// compared too. A parent that died before we even started, under a
/// subreaper, stays invisible: that is what `--pid` is for.
fn orphaned() -> bool {
    let now = std::os::unix::process::parent_id();
    now == 1 || PARENT_AT_START.get().is_some_and(|start| *start != now)
}

/// SIGINT, SIGTERM and SIGHUP noted instead of obeyed while a mutating verb
/// runs: a claim taken must be either reported or given back, never left
/// behind by an interrupt between the two.
struct Interrupts {
    flag: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl Interrupts {
    fn catch() -> Interrupts {
        let flag = Arc::new(AtomicBool::new(false));
        let ids = [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ]
        .into_iter()
        // A signal we fail to catch keeps its default action: it still ends
        // us, just without the rollback.
        .filter_map(|sig| signal_hook::flag::register(sig, Arc::clone(&flag)).ok())
        .collect();
        Interrupts { flag, ids }
    }

    fn happened(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Write a mutation's report and flush it. If that fails, or an interrupt
/// arrived first, the report never reached anyone: `undo` gives back what
/// can be given back and says what stands, and the command exits 1.
fn report_or_undo(
    out: &mut Out,
    interrupted: bool,
    code: u8,
    report: impl FnOnce(&mut Out) -> io::Result<()>,
    undo: impl FnOnce() -> String,
) -> CmdResult {
    let failure = if interrupted {
        Some("interrupted before reporting".to_string())
    } else {
        report(out)
            .and_then(|()| out.flush())
            .err()
            .map(|e| format!("cannot write output: {e}"))
    };
    match failure {
        None => Ok(code),
        Some(why) => {
            out.discard();
            super::output::diag(&format!("{why}; {}", undo()));
            Ok(EXIT_ERROR)
        }
    }
}

/// Stands in for the holder when only the key is being checked: the key
/// rules live in `validate_inputs`, and a second copy here would drift.
const KEY_ONLY: &str = "-";

/// A store's failure in words: exit 1, except what the command line can
/// fix (exit 2): a store's refusal of how it was asked (a lease needs a
/// TTL), a verb on one key over several origins, a URL.
pub fn store_error(out: &mut Out, e: StoreError) -> CmdResult {
    match e {
        StoreError::Refused(_) | StoreError::SeveralOrigins { .. } | StoreError::Url(_) => {
            out.usage_error(&e.to_string())
        }
        e => out.error(&e.to_string()),
    }
}

/// A record's JSON with the store's tenure added (etcd: `revision`, `lease`).
fn fenced_record_json(record: &claims::ClaimRecord, tenure: Option<&Tenure>) -> Value {
    let mut v = record_json(record);
    Tenure::extend_record(tenure, &mut v);
    v
}

/// The text line for a tenure: the fencing revision and the lease.
fn tenure_text(t: &Tenure) -> String {
    format!(
        "revision={} lease={} ttl={}s remaining={}s",
        t.revision,
        t.lease.id_hex(),
        t.lease.ttl_s,
        t.lease.remaining_s
    )
}

pub fn status(store: &dyn Backend, key: &str, out: &mut Out) -> CmdResult {
    // A key the protocol would never write has no lockfile to look at; asking
    // the filesystem anyway would report ENAMETOOLONG as a corrupted claim.
    if let Err(e) = validate_inputs(key, KEY_ONLY, None) {
        return out.error(&e.to_string());
    }
    let Fenced { outcome: s, tenure } = match status_now(store, key) {
        Ok(f) => f,
        Err(e) => return store_error(out, e),
    };
    let rules = store.rules();
    if out.json_mode() {
        let mut v = status_json(&s, rules);
        if let Some(record) = v.get_mut("record") {
            Tenure::extend_record(tenure.as_ref(), record);
        }
        out.json(&v)?;
        return Ok(EXIT_OK);
    }
    // A claim that is a hazard by itself says so beside its state: a live
    // claim whose record names another key is anything but healthy.
    let mut head = format!("{}  {}", sanitize(&s.key), s.state);
    for kind in OwnHazards::of(&s, rules).kinds() {
        head.push_str(&format!("  ⚠ {}", kind.name));
    }
    out.line(&head)?;
    if let Some(rec) = &s.record {
        out.line(&format!("  {}", record_text(rec, now_ms())))?;
    }
    if let Some(t) = &tenure {
        out.line(&format!("  {}", tenure_text(t)))?;
    }
    let why = crate::claims::census::why_with_hazards(&s, rules);
    out.line(&format!("  why: {}", sanitize(&why)))?;
    if let Some(err) = &s.error {
        out.line(&format!("  error: {}", sanitize(err)))?;
    }
    out.line(&format!("  file: {}", path_text(&s.file)))?;
    Ok(EXIT_OK)
}

/// The pid a claim is bound to when `--pid` is not given, or why there is
/// none to bind to.
fn default_pid(ttl: Option<i64>) -> Result<u32, &'static str> {
    if !orphaned() {
        // claimtop itself exits in milliseconds: a claim bound to its own
        // pid would be stale (and stolen) at once. The caller — the shell or
        // script that ran us — is the process whose life the claim tracks.
        return Ok(std::os::unix::process::parent_id());
    }
    match ttl {
        // Nobody's life to track, but the TTL bounds the claim: bind it to
        // our own pid, gone when we exit, so the deadline alone governs.
        Some(_) => Ok(std::process::id()),
        None => Err(
            "the process that ran claimtop has already exited, so the claim would be \
             bound to whatever adopted us (init or a subreaper) and never go stale; \
             pass --pid N for the process it should follow, or --ttl DUR",
        ),
    }
}

pub fn acquire(store: &dyn Backend, a: AcquireArgs, out: &mut Out) -> CmdResult {
    let pid = match a.pid.map_or_else(|| default_pid(a.ttl), Ok) {
        Ok(pid) => pid,
        Err(why) => return out.error(why),
    };
    let opts = AcquireOpts {
        pid: Some(pid),
        ttl_ms: a.ttl,
        reason: a.reason,
        metadata: a.metadata,
        harness: None,
        // A wait is for the key to be free: a claim of this holder name
        // that another process made is waited for, not continued (the
        // seed's idempotent re-acquire stays with the plain acquire).
        adopt: match a.wait {
            Some(_) => Adopt::SameOwner,
            None => Adopt::SameHolder,
        },
    };
    let sigs = Interrupts::catch();
    // A wait may outlast the caller its claim would be bound to: binding
    // it then would be the silent pid reuse `default_pid` refuses.
    let caller_bound = a.pid.is_none() && !orphaned();
    let stop = || match () {
        _ if sigs.happened() => Some("interrupted while waiting".to_string()),
        _ if caller_bound && orphaned() => {
            Some("the process that ran claimtop exited while it waited".to_string())
        }
        _ => None,
    };
    let got = match super::wait::acquire(store, &a.key, &a.holder, &opts, a.wait, &stop) {
        Err(super::wait::WaitError::Store(e @ (StoreError::Refused(_) | StoreError::Url(_)))) => {
            return store_error(out, e)
        }
        got => got.map_err(|e| e.to_string()),
    };
    let Fenced {
        outcome: got,
        tenure,
    } = match got {
        Ok(f) => f,
        Err(e) => return out.error(&e),
    };
    match got {
        AcquireOutcome::Acquired { record, kind } => {
            // A re-acquire found the claim already ours: giving it back
            // would change more than this command did.
            let taken = !matches!(kind, AcquireKind::Reacquired);
            let undo = || match (taken, store.release(&a.key, &a.holder, None)) {
                (false, _) => format!("{} was already held by this holder; left so", a.key),
                (true, Ok(_)) => format!("released {} again", a.key),
                (true, Err(e)) => format!("{} is still held, and releasing it failed: {e}", a.key),
            };
            report_or_undo(
                out,
                sigs.happened(),
                EXIT_OK,
                |out| acquired_report(out, &record, &kind, tenure.as_ref()),
                undo,
            )
        }
        held @ AcquireOutcome::HeldByOther { .. } => {
            if let (true, AcquireOutcome::HeldByOther { holder, pid, host }) =
                (out.json_mode(), &held)
            {
                out.json(&json!({
                    "outcome": "held_by_other",
                    "holder": holder,
                    "pid": pid,
                    "host": host,
                    "key": a.key,
                }))?;
            } else {
                out.line(&sanitize(&held.describe(&a.key)))?;
            }
            Ok(EXIT_DECLINED)
        }
    }
}

/// The report of a claim taken, in either mode.
fn acquired_report(
    out: &mut Out,
    record: &claims::ClaimRecord,
    kind: &AcquireKind,
    tenure: Option<&Tenure>,
) -> io::Result<()> {
    if out.json_mode() {
        let mut v = json!({"outcome": "acquired", "record": fenced_record_json(record, tenure)});
        add_kind(&mut v, kind);
        return out.json(&v);
    }
    let fence = tenure
        .map(|t| format!(" {}", tenure_text(t)))
        .unwrap_or_default();
    out.line(&format!(
        "{}: {}{fence}",
        sanitize(&kind.describe(&record.key)),
        record_text(record, now_ms())
    ))
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

pub fn release(store: &dyn Backend, key: &str, holder: &str, out: &mut Out) -> CmdResult {
    if let Err(e) = validate_inputs(key, holder, None) {
        return out.error(&e.to_string());
    }
    let outcome = match store.release(key, holder, None) {
        Ok(o) => o.outcome,
        Err(e) => return store_error(out, e),
    };
    let released = matches!(outcome, ReleaseOutcome::Released { .. });
    report_or_undo(
        out,
        false,
        EXIT_OK,
        |out| release_report(out, key, &outcome),
        || stands(released, &format!("released {key}")),
    )
}

/// What stands after a report failed for a change no verb can take back
/// (an archive, a release, a new deadline): said in words on stderr, so
/// the exit status 1 is not read as "nothing happened".
fn stands(changed: bool, what: &str) -> String {
    if changed {
        format!("{what}, and that cannot be undone")
    } else {
        "nothing was changed".into()
    }
}

fn release_report(out: &mut Out, key: &str, outcome: &ReleaseOutcome) -> io::Result<()> {
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
        return out.json(&v);
    }
    out.line(&sanitize(&outcome.describe(key)))
}

pub fn renew(
    store: &dyn Backend,
    key: &str,
    holder: &str,
    ttl_ms: i64,
    operator: Option<&str>,
    out: &mut Out,
) -> CmdResult {
    if let Err(e) = validate_inputs(key, holder, Some(ttl_ms)) {
        return out.error(&e.to_string());
    }
    let outcome = match store.renew(key, holder, ttl_ms, operator) {
        Ok(o) => o.outcome,
        Err(e) => return store_error(out, e),
    };
    let renewed = matches!(outcome, RenewOutcome::Renewed { .. });
    let code = if renewed { EXIT_OK } else { EXIT_DECLINED };
    report_or_undo(
        out,
        false,
        code,
        |out| renew_report(out, key, &outcome),
        || stands(renewed, &format!("renewed {key}")),
    )
}

fn renew_report(out: &mut Out, key: &str, outcome: &RenewOutcome) -> io::Result<()> {
    match outcome {
        RenewOutcome::Renewed { record, .. } => {
            let until = record.expires_at.unwrap_or_default();
            if out.json_mode() {
                out.json(&json!({"renewed": true, "key": key, "expires_at": until}))
            } else {
                out.line(&sanitize(&outcome.describe(key)))
            }
        }
        RenewOutcome::NotRenewed(no) => {
            if out.json_mode() {
                out.json(&json!({
                    "renewed": false,
                    "key": key,
                    "why": no.describe(),
                    "why_code": no,
                }))
            } else {
                out.line(&sanitize(&outcome.describe(key)))
            }
        }
    }
}

pub fn force_release(store: &dyn Backend, a: ForceArgs, out: &mut Out) -> CmdResult {
    if let Err(e) = validate_inputs(&a.key, KEY_ONLY, None) {
        return out.error(&e.to_string());
    }
    let opts = ForceOpts {
        expect_holder: a.expect_holder,
        expect_acquired_at: a.expect_acquired_at,
        operator: Some(a.operator.unwrap_or_else(claims::operator_name)),
        allow_live: a.allow_live,
    };
    let Fenced { outcome, tenure } = match store.force_release(&a.key, &opts) {
        Ok(o) => o,
        Err(e) => return store_error(out, e),
    };
    let archived = matches!(outcome, ForceOutcome::Archived { .. });
    let code = if archived { EXIT_OK } else { EXIT_DECLINED };
    report_or_undo(
        out,
        false,
        code,
        |out| force_report(out, &a.key, &outcome, tenure.as_ref()),
        || stands(archived, &format!("archived {}", a.key)),
    )
}

fn force_report(
    out: &mut Out,
    key: &str,
    outcome: &ForceOutcome,
    tenure: Option<&Tenure>,
) -> io::Result<()> {
    match outcome {
        ForceOutcome::Archived {
            archived_to,
            previous,
            previous_state,
        } => {
            if out.json_mode() {
                out.json(&json!({
                    "outcome": "archived",
                    "archived_to": super::output::path_str(archived_to),
                    "previous": match previous {
                        Some(rec) => fenced_record_json(rec, tenure),
                        None => opt_record_json(None),
                    },
                    "previous_state": previous_state.as_str(),
                }))
            } else {
                out.line(&sanitize(&outcome.describe(key)))
            }
        }
        ForceOutcome::Refused(reason) => {
            if out.json_mode() {
                out.json(&json!({"outcome": "refused", "reason": reason}))
            } else {
                out.line(&sanitize(&outcome.describe(key)))
            }
        }
    }
}
