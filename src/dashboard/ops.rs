//! Running the operator's mutations through the library verbs, off the UI
//! thread (a verb can wait up to seconds on a recovery mutex), and turning
//! each outcome into one line of words.

use super::action::{Action, Op, OpResult};
use super::collect::Input;
use crate::claims::{
    acquire, doctor_fix, force_release, human_ms, release, renew_as, AcquireKind, AcquireOpts,
    AcquireOutcome, ForceOutcome, ReleaseOutcome, RenewOutcome, Root,
};
use std::sync::mpsc::{Receiver, Sender};

/// Run one op now (blocking) and describe the outcome.
pub fn run_op(root: &Root, op: &Op) -> OpResult {
    let key = op.key().to_string();
    let path = match op {
        Op::Clean => root.claims_dir(),
        _ => root.lockfile(&key),
    };
    let (ok, message) = match op {
        Op::Acquire {
            key,
            holder,
            ttl_ms,
            reason,
        } => {
            let opts = AcquireOpts {
                ttl_ms: *ttl_ms,
                reason: reason.clone(),
                ..AcquireOpts::default()
            };
            match acquire(root, key, holder, &opts) {
                Ok(AcquireOutcome::Acquired { kind, .. }) => (
                    true,
                    match kind {
                        AcquireKind::Fresh => format!("acquired {key}"),
                        AcquireKind::Reacquired => format!("re-acquired {key} (already yours)"),
                        AcquireKind::Reclaimed {
                            previous_holder,
                            previous_pid,
                        } => format!(
                            "acquired {key}, reclaimed from stale {previous_holder} (pid {previous_pid})"
                        ),
                    },
                ),
                Ok(AcquireOutcome::HeldByOther { holder, pid, host }) => (
                    false,
                    format!("{key} is held by {holder} (pid {pid} on {host})"),
                ),
                Err(e) => (false, format!("acquire {key} failed: {e}")),
            }
        }
        Op::Release { key, holder } => match release(root, key, holder) {
            Ok(ReleaseOutcome::Released { held_ms, .. }) => {
                (true, format!("released {key} (held {})", human_ms(held_ms)))
            }
            Ok(ReleaseOutcome::NotHeld { holder: h }) => (
                false,
                format!("{key} is now held by {h}, not you: nothing released"),
            ),
            Ok(ReleaseOutcome::Absent) => (false, format!("{key} was already free")),
            Ok(ReleaseOutcome::CorruptedLeft { reason }) => (
                false,
                format!("{key} is corrupted ({reason}); use F to force-release"),
            ),
            Err(e) => (false, format!("release {key} failed: {e}")),
        },
        Op::Renew {
            key,
            holder,
            ttl_ms,
            operator,
        } => match renew_as(root, key, holder, *ttl_ms, operator.as_deref()) {
            Ok(RenewOutcome::Renewed { .. }) => (
                true,
                format!("renewed {key}: expires in {}", human_ms(*ttl_ms)),
            ),
            Ok(RenewOutcome::NotRenewed(why)) => {
                (false, format!("{key} not renewed: {}", why.describe()))
            }
            Err(e) => (false, format!("renew {key} failed: {e}")),
        },
        Op::ForceRelease { key, opts } => match force_release(root, key, &opts.to_opts()) {
            Ok(ForceOutcome::Archived {
                archived_to,
                previous_state,
                ..
            }) => (
                true,
                format!(
                    "force-released {key} ({previous_state}); archived to {}",
                    archived_to.display()
                ),
            ),
            Ok(ForceOutcome::Refused(why)) => (false, format!("force-release refused: {why}")),
            Err(e) => (false, format!("force-release {key} failed: {e}")),
        },
        // The CLI's `doctor --fix`, to the letter: it re-checks each hazard
        // as it goes, so what it removes is what is abandoned now.
        Op::Clean => {
            let fixes = doctor_fix(root);
            let done: Vec<_> = fixes.iter().filter(|f| f.fixed).collect();
            let left = fixes.len() - done.len();
            let names: Vec<String> = done
                .iter()
                .map(|f| {
                    f.hazard
                        .path
                        .file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
                })
                .collect();
            (
                true,
                if done.is_empty() {
                    "nothing was removed: no hazard is provably abandoned now".to_string()
                } else {
                    format!(
                        "removed {}: {}{}",
                        done.len(),
                        names.join(", "),
                        if left > 0 {
                            format!(" ({left} left for a human: h lists them)")
                        } else {
                            String::new()
                        }
                    )
                },
            )
        }
    };
    OpResult {
        verb: op.verb(),
        key,
        path,
        ok,
        message,
    }
}

/// Serve ops one at a time until the UI hangs up. After each, the
/// collector re-reads the op's lockfile at once, so the table does not wait
/// for the watcher to notice the op's own write.
pub fn worker(root: Root, ops: Receiver<Op>, out: Sender<Action>, collect: Sender<Input>) {
    for op in ops {
        let result = run_op(&root, &op);
        let reread = match op {
            Op::Clean => Input::Rescan,
            _ => Input::Changed(vec![result.path.clone()]),
        };
        let _ = collect.send(reread);
        if out.send(Action::OpResult(result)).is_err() {
            break;
        }
    }
}
