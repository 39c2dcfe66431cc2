//! Running the operator's mutations through the store's verbs (the file
//! store over the root, or etcd: the same transactions the CLI runs), off
//! the UI thread (a verb can wait up to seconds on a recovery mutex or an
//! unanswering store), and turning each outcome into one line of words.

use super::action::{Action, Op, OpResult, Verb};
use super::model::Origins;
use crate::claims::{
    operator_name, AcquireOpts, AcquireOutcome, Fix, ForceOpts, ForceOutcome, ReleaseOutcome,
    RenewOutcome, Root,
};
use crate::sanitize::sanitize;
use crate::store::drive::Input;
use crate::store::fleet::Forgot;
use crate::store::host_names::{forget_named, ForgetError};
use crate::store::{Backend, OpenCtx, Store, StoreError};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

/// A verb's outcome as (did it do what was asked, its words).
fn worded<T>(
    verb: &str,
    key: &str,
    r: Result<crate::store::Fenced<T>, StoreError>,
    done: impl Fn(&T) -> bool,
    describe: impl Fn(&T, &str) -> String,
) -> (bool, String) {
    match r {
        Ok(f) => (done(&f.outcome), describe(&f.outcome, key)),
        Err(e) => (false, format!("{verb} {key} failed: {e}")),
    }
}

/// [`run_op_on`] on the file store over `root`.
pub fn run_op(root: &Root, op: &Verb) -> OpResult {
    let opened = Store::open(&[], std::slice::from_ref(root), &OpenCtx::default());
    match opened.as_ref().ok().and_then(|s| s.members().first()) {
        Some(m) => run_op_in(m.backend(), Some(root), op),
        None => OpResult {
            verb: op.verb(),
            key: op.key().to_string(),
            root: 0,
            ok: false,
            message: format!("{} {}: the root cannot be opened", op.verb(), op.key()),
        },
    }
}

/// Run one op now (blocking) through the store's verbs — the same
/// transactions the CLI runs — and describe the outcome. Its `root` is
/// the only one's; the worker over several says which it ran in.
pub fn run_op_on(store: &dyn Backend, op: &Verb) -> OpResult {
    run_op_in(store, None, op)
}

/// [`run_op_on`], where `root` is the file root `store` is over (None:
/// a store with a connection, which keeps no litter one entry could be).
fn run_op_in(store: &dyn Backend, root: Option<&Root>, op: &Verb) -> OpResult {
    let key = op.key().to_string();
    let (ok, message) = match op {
        Verb::Acquire {
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
            worded(
                "acquire",
                key,
                store.acquire(key, holder, &opts),
                |o| matches!(o, AcquireOutcome::Acquired { .. }),
                AcquireOutcome::describe,
            )
        }
        Verb::Release { key, holder } => worded(
            "release",
            key,
            store.release(key, holder, None),
            |o| matches!(o, ReleaseOutcome::Released { .. }),
            ReleaseOutcome::describe,
        ),
        Verb::Renew {
            key,
            holder,
            ttl_ms,
            operator,
        } => worded(
            "renew",
            key,
            store.renew(key, holder, *ttl_ms, operator.as_deref()),
            |o| matches!(o, RenewOutcome::Renewed { .. }),
            RenewOutcome::describe,
        ),
        Verb::ForceRelease { key, opts } => worded(
            "force-release",
            key,
            store.force_release(
                key,
                &ForceOpts {
                    operator: Some(operator_name()),
                    ..opts.to_opts()
                },
            ),
            |o| matches!(o, ForceOutcome::Archived { .. }),
            ForceOutcome::describe,
        ),
        Verb::Clean => match store.repair().map(|r| r.repair()) {
            Some(Ok(fixes)) => cleaned(&fixes),
            // Over etcd an abandoned claim's lease ends it; what is left to
            // clean is `claimtop doctor`'s to report.
            None | Some(Err(StoreError::Unsupported(_))) => (
                false,
                "nothing to clean here: leases end abandoned claims on this store \
                 (claimtop doctor lists its hazards)"
                    .to_string(),
            ),
            Some(Err(e)) => (false, format!("clean failed: {e}")),
        },
        Verb::CleanOne(h) => clean_one(root, h),
        // Asked through `serve`, which knows how long to wait for a host.
        Verb::AskHost { .. } => ask_host(store, op, DEFAULT_ASK_WAIT),
        Verb::ForgetHost { host_id, label } => run_forget(store, host_id, label),
    };
    OpResult {
        verb: op.verb(),
        key,
        root: 0,
        ok,
        message,
    }
}

/// How long a host's publisher is waited for when no `--timeout` was
/// given: the CLI's default store timeout.
pub const DEFAULT_ASK_WAIT: Duration = Duration::from_secs(5);

/// A force-release of a published claim, asked of its host's publisher
/// and waited for up to `wait`: (did the host archive it, its words).
fn ask_host(store: &dyn Backend, op: &Verb, wait: Duration) -> (bool, String) {
    let Verb::AskHost {
        host_id,
        hostname,
        root_id,
        key,
        opts,
    } = op
    else {
        return (false, String::new());
    };
    let opts = ForceOpts {
        operator: Some(operator_name()),
        ..opts.to_opts()
    };
    let host = sanitize(hostname).into_owned();
    let Some(fleet) = store.fleet() else {
        return (
            false,
            format!("this store has no publishing hosts: nobody to ask about {key}"),
        );
    };
    match fleet.ask_force_release(host_id, root_id, key, &opts, wait) {
        Ok(answer) => {
            let text = |k: &str| answer.get(k).and_then(|v| v.as_str());
            let outcome = text("outcome").unwrap_or("error");
            let words = text("text").or_else(|| text("error")).unwrap_or(outcome);
            (
                outcome == "archived",
                format!("host {host}: {}", sanitize(words)),
            )
        }
        Err(StoreError::Host(why)) => (false, sanitize(&why).into_owned()),
        Err(e) => (
            false,
            format!("force-release {key} on host {host} failed: {e}"),
        ),
    }
}

/// `x` on one listed entry: cleaned by the root's own rules if it is
/// still that litter now, else refused with why (nothing removed).
fn clean_one(root: Option<&Root>, h: &crate::claims::Hazard) -> (bool, String) {
    let Some(root) = root else {
        return (
            false,
            "nothing to clean here: leases end abandoned claims on this store".to_string(),
        );
    };
    // The status line is one line: the entry's name, as `x` over the
    // whole root names what it removed.
    let name = h.path().file_name().unwrap_or_default().to_string_lossy();
    let name = sanitize(&name).into_owned();
    match crate::claims::clean_one(root, h.path(), &h.kind) {
        Ok(f) if f.fixed => (true, format!("{name}: {}", sanitize(&f.action))),
        Ok(f) => (false, format!("{name}: {}", sanitize(&f.action))),
        Err(refused) => (false, sanitize(&refused.to_string()).into_owned()),
    }
}

/// What the CLI's `doctor --fix` did (it re-checks each hazard as it goes,
/// so what it removes is what is abandoned now), in a status line.
fn cleaned(fixes: &[Fix]) -> (bool, String) {
    let done: Vec<_> = fixes.iter().filter(|f| f.fixed).collect();
    let left = fixes.len() - done.len();
    let names: Vec<String> = done
        .iter()
        .map(|f| {
            f.hazard
                .path()
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

/// Serve ops one at a time until the UI hangs up, each on its origin's
/// member of `store`, and have the op's claim
/// re-read at once by that member's lane (`lanes`, by origin), so the
/// table does not wait for the feed to notice the op's own write.
pub fn worker(
    store: Arc<Store>,
    roots: Origins,
    ops: Receiver<Op>,
    out: Sender<Action>,
    lanes: Vec<Sender<Input>>,
) {
    // A publishing host is waited for as long as any store call: the
    // CLI's `force-release --host` waits the same.
    let ask_wait = DEFAULT_ASK_WAIT;
    for Op { at, verb: op } in ops {
        if let Verb::AskHost { .. } | Verb::ForgetHost { .. } = &op {
            // Nothing to re-read here: the copy is re-read when the host's
            // answer changes it (or the hosts, once one is forgotten),
            // through the store's feed.
            let fleet = store
                .members()
                .iter()
                .find(|m| m.backend().fleet().is_some());
            let (ok, message) = match (fleet, &op) {
                (None, _) => (false, "this store has no publishing hosts".to_string()),
                (Some(m), Verb::ForgetHost { host_id, label }) => {
                    run_forget(m.backend(), host_id, label)
                }
                (Some(m), _) => ask_host(m.backend(), &op, ask_wait),
            };
            let result = OpResult {
                verb: op.verb(),
                key: op.key().to_string(),
                root: 0,
                ok,
                message,
            };
            if out.send(Action::OpResult(result)).is_err() {
                break;
            }
            continue;
        }
        let i = usize::from(at.0);
        let Some(backend) = store.backend(at) else {
            // The model names only origins it was given; say so if not.
            let result = OpResult {
                verb: op.verb(),
                key: op.key().to_string(),
                root: i,
                ok: false,
                message: format!("{} {}: no origin number {i}", op.verb(), op.key()),
            };
            if out.send(Action::OpResult(result)).is_err() {
                break;
            }
            continue;
        };
        let mut result = run_op_in(backend, roots.get(i), &op);
        result.root = i;
        // With several origins the status line says which it was.
        if roots.several() {
            let noun = if roots.get(i).is_some() {
                "root"
            } else {
                "store"
            };
            result.message = format!("{} ({noun} {})", result.message, roots.label(i));
        }
        // The answer first: a re-read of a store that stopped answering
        // waits out its whole --timeout again, and the operator's op must
        // answer within one.
        let key = result.key.clone();
        if out.send(Action::OpResult(result)).is_err() {
            break;
        }
        match (lanes.get(i), &op) {
            (Some(c), Verb::Clean | Verb::CleanOne(_)) => {
                let _ = c.send(Input::Relist);
            }
            (Some(c), _) => {
                let _ = c.send(Input::Reread(key));
            }
            (None, _) => {}
        }
    }
}

/// Run `Verb::ForgetHost` on the store: (was it forgotten, the words).
fn run_forget(store: &dyn Backend, host_id: &str, label: &str) -> (bool, String) {
    let host = crate::sanitize::sanitize(label).into_owned();
    let Some(fleet) = store.fleet() else {
        return (false, "this store has no publishing hosts".to_string());
    };
    match forget_named(fleet, host_id) {
        Ok((_, Forgot::Forgotten { removed })) => (
            true,
            format!(
                "forgot host {host}: {} removed from the store (its own roots are untouched)",
                crate::claims::words::count(removed.max(0) as usize, "key")
            ),
        ),
        Ok((_, Forgot::Online { .. })) => (
            false,
            format!("host {host} is online again: nothing was removed"),
        ),
        Ok((_, Forgot::Unknown)) => (false, format!("host {host} had already left the store")),
        Err(ForgetError::Name(e)) => (
            false,
            crate::sanitize::sanitize(&e.to_string()).into_owned(),
        ),
        Err(ForgetError::Store(e)) => (false, format!("forget host {host} failed: {e}")),
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
        let op = Verb::Release {
            key: "k".into(),
            holder: "me".into(),
        };
        let shown = run_op(&root, &op);
        let direct = release(&root, "k", "me").unwrap();
        assert_eq!(direct, ReleaseOutcome::Absent);
        assert!(!shown.ok);
        assert_eq!(shown.message, direct.describe("k"));
    }

    /// A file store whose `status` takes as long as an unreachable store's
    /// --timeout, and whose acquire fails at once as one would.
    struct Stalled(Arc<dyn Backend>);

    impl crate::store::Claims for Stalled {
        fn url(&self) -> String {
            self.0.url()
        }
        fn words(&self) -> &'static crate::store::Words {
            self.0.words()
        }
        fn rules(&self) -> crate::claims::ItemRules {
            self.0.rules()
        }
        fn acquire(
            &self,
            _: &str,
            _: &str,
            _: &AcquireOpts,
        ) -> Result<crate::store::Fenced<AcquireOutcome>, StoreError> {
            Err(StoreError::Unsupported("did not answer".into()))
        }
        fn release(
            &self,
            k: &str,
            h: &str,
            f: Option<crate::store::Fence>,
        ) -> Result<crate::store::Fenced<ReleaseOutcome>, StoreError> {
            self.0.release(k, h, f)
        }
        fn status(
            &self,
            k: &str,
            c: &mut crate::claims::Classifier,
        ) -> Result<crate::store::Fenced<crate::claims::Status>, StoreError> {
            std::thread::sleep(Duration::from_secs(3));
            self.0.status(k, c)
        }
        fn renew(
            &self,
            k: &str,
            h: &str,
            t: i64,
            o: Option<&str>,
        ) -> Result<crate::store::Fenced<RenewOutcome>, StoreError> {
            self.0.renew(k, h, t, o)
        }
        fn force_release(
            &self,
            k: &str,
            o: &ForceOpts,
        ) -> Result<crate::store::Fenced<ForceOutcome>, StoreError> {
            self.0.force_release(k, o)
        }
        fn list(
            &self,
            c: &mut crate::claims::Classifier,
            sink: &mut dyn crate::store::ListSink,
        ) -> Result<crate::store::ListEnd, StoreError> {
            self.0.list(c, sink)
        }
    }

    impl crate::store::Feed for Stalled {
        fn changes(
            &self,
            after: Option<&crate::store::Cursor>,
        ) -> Result<Box<dyn crate::store::Changes>, StoreError> {
            self.0.changes(after)
        }
    }

    impl Backend for Stalled {}

    #[test]
    fn an_op_is_answered_before_the_re_read_that_a_silent_store_makes_wait() {
        let td = tempfile::TempDir::new().unwrap();
        let root = Root::with_events_here(td.path());
        let store =
            Stalled(crate::dashboard::testing::store_of_roots(&[root]).members()[0].shared());
        let (op_tx, op_rx) = std::sync::mpsc::channel();
        let (out_tx, out_rx) = std::sync::mpsc::channel();
        let (reread_tx, _reread_rx) = std::sync::mpsc::channel();
        let worker = std::thread::spawn(move || {
            let store = Arc::new(Store::of(vec![Arc::new(store)]));
            let shown = Origins::of_store(&store, &[]);
            worker(store, shown, op_rx, out_tx, vec![reread_tx])
        });
        let asked = std::time::Instant::now();
        op_tx
            .send(Op {
                at: crate::store::OriginIx(0),
                verb: Verb::Acquire {
                    key: "k".into(),
                    holder: "me".into(),
                    ttl_ms: None,
                    reason: None,
                },
            })
            .unwrap();
        let first = out_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("an answer");
        assert!(
            matches!(first, Action::OpResult(ref r) if !r.ok),
            "the op's result comes first"
        );
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "answered after {:?}, not held up by the 3 s re-read",
            asked.elapsed()
        );
        drop(op_tx);
        let _ = worker.join();
    }
}
