//! Running the operator's mutations through the library verbs, off the UI
//! thread (a verb can wait up to seconds on a recovery mutex), and turning
//! each outcome into one line of words.

use super::action::{Action, Op, OpResult};
use super::collect::Input;
use super::roots::RootSet;
use crate::claims::{
    acquire, doctor_fix, force_release, operator_name, release, renew_as, AcquireOpts,
    AcquireOutcome, ForceOpts, ForceOutcome, ReleaseOutcome, RenewOutcome, Root,
};
use std::sync::mpsc::{Receiver, Sender};

/// Run one op now (blocking) and describe the outcome.
pub fn run_op(root: &Root, op: &Op) -> OpResult {
    if let Op::In { op, .. } = op {
        // The caller chose the root already.
        return run_op(root, op);
    }
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
                Ok(o) => (
                    matches!(o, AcquireOutcome::Acquired { .. }),
                    o.describe(key),
                ),
                Err(e) => (false, format!("acquire {key} failed: {e}")),
            }
        }
        Op::Release { key, holder } => match release(root, key, holder) {
            Ok(o) => (
                matches!(o, ReleaseOutcome::Released { .. }),
                o.describe(key),
            ),
            Err(e) => (false, format!("release {key} failed: {e}")),
        },
        Op::Renew {
            key,
            holder,
            ttl_ms,
            operator,
        } => match renew_as(root, key, holder, *ttl_ms, operator.as_deref()) {
            Ok(o) => (matches!(o, RenewOutcome::Renewed { .. }), o.describe(key)),
            Err(e) => (false, format!("renew {key} failed: {e}")),
        },
        Op::ForceRelease { key, opts } => match force_release(
            root,
            key,
            &ForceOpts {
                operator: Some(operator_name()),
                ..opts.to_opts()
            },
        ) {
            Ok(o) => (matches!(o, ForceOutcome::Archived { .. }), o.describe(key)),
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
        // Unwrapped at the top: the inner op was run and answered there.
        Op::In { .. } => (false, String::new()),
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
    worker_over(RootSet::new(root, &[]), ops, out, vec![collect]);
}

/// [`worker`] over several roots: an [`Op::In`] runs on its root, and that
/// root's collector (`collects[i]`) re-reads what it touched.
pub fn worker_over(
    roots: RootSet,
    ops: Receiver<Op>,
    out: Sender<Action>,
    collects: Vec<Sender<Input>>,
) {
    for op in ops {
        let (i, op) = match op {
            Op::In { root, op } => (root, *op),
            op => (0, op),
        };
        let result = match roots.get(i) {
            // With several roots the status line says which root it was.
            Some(root) if roots.is_several() => {
                let mut r = run_op(root, &op);
                r.message = format!("{} (root {})", r.message, roots.label(i));
                r
            }
            Some(root) => run_op(root, &op),
            // The model names only roots it was given; say so if not.
            None => OpResult {
                verb: op.verb(),
                key: op.key().to_string(),
                path: Default::default(),
                ok: false,
                message: format!("{} {}: no root number {i}", op.verb(), op.key()),
            },
        };
        let reread = match op {
            Op::Clean => Input::Rescan,
            _ => Input::Changed(vec![result.path.clone()]),
        };
        if let Some(c) = collects.get(i) {
            let _ = c.send(reread);
        }
        if out.send(Action::OpResult(result)).is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{release, ReleaseOutcome};

    #[test]
    fn the_status_line_words_an_outcome_exactly_as_the_cli_does() {
        let td = tempfile::TempDir::new().unwrap();
        let root = Root::with_events_here(td.path());
        let op = Op::Release {
            key: "k".into(),
            holder: "me".into(),
        };
        let shown = run_op(&root, &op);
        let direct = release(&root, "k", "me").unwrap();
        assert_eq!(direct, ReleaseOutcome::Absent);
        assert!(!shown.ok);
        assert_eq!(shown.message, direct.describe("k"));
    }
}
