//! `claimtop run KEY --holder H [--ttl DUR] [--wait[=DUR]] -- CMD [ARGS...]`:
//! hold a claim for exactly as long as a command runs: until no process of
//! CMD's process group is left, whatever ends the run.
//!
//! CMD is forked first and kept blocked on a pipe, then its guard is forked
//! (`guard`), and the claim is bound to the guard's pid: the one process
//! that lives as long as CMD's group, even when `run` is killed. Only once
//! the claim stands does CMD exec. If the claim cannot be had, the blocked
//! child is killed and reaped and CMD never ran. While CMD runs
//! (`supervise`), a [`Hold`] renews a TTL claim (or has the store keep its
//! lease alive) and notices its loss; signals sent to us are passed on to
//! CMD's process group; when CMD exits, what it left in its group is
//! stopped, the claim is released and CMD's status becomes ours.
//!
//! A stop reaches CMD's whole process group (`child`), also when `run`
//! itself is killed or stopped (`guard`), and on a claim that runs out
//! unless renewed (a TTL, an etcd lease) it is timed to end before the
//! claim can ([`stop`]).

mod child;
mod guard;
pub mod stop;
mod supervise;
#[cfg(test)]
mod tests;

use super::args::RunArgs;
use super::output::{diag, record_json, CmdResult, Out, EXIT_DECLINED};
use super::wait::{deadline, say_blocked, Feed};
use crate::claims::{validate_inputs, AcquireOpts, AcquireOutcome, Adopt};
use crate::store::{Backend, StoreError, Tenure};
use crate::wait::{self, Hold, SystemClock, Waited};
use child::{Argv, Blocked};
use guard::Guard;
use serde_json::{json, Value};
use std::ffi::OsString;
pub use stop::KILL_GRACE;
use supervise::{supervise, Outcome};

/// The claim was lost while CMD ran (force-released, replaced, renew
/// refused, a lease the store no longer confirms): CMD was told to stop.
pub const EXIT_LOST: u8 = 4;

/// The signals `run` catches: while it waits, each ends the wait with
/// nothing taken; while CMD runs, each is passed on to CMD's group (INT,
/// TERM, HUP and QUIT also stop the group, see `supervise`). Every signal
/// whose default would end `run` without a word and that a process (not
/// the kernel, about `run` itself) would send to a job is here, so that
/// none ends `run` while CMD's group runs on.
///
/// A signal `run` was started ignoring (nohup's HUP; INT and QUIT in a
/// non-interactive shell's background job) is left out: CMD inherits the
/// same ignoring, so the job asked to be immune to it, and catching it
/// would make `run` stop the group that nohup was meant to keep running.
pub fn forwarded() -> Vec<i32> {
    every_forwarded()
        .into_iter()
        .filter(|&sig| !crate::sys::signal_ignored(sig))
        .collect()
}

fn every_forwarded() -> Vec<i32> {
    #[allow(unused_mut)]
    let mut sigs = vec![
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGIO,
    ];
    #[cfg(any(target_os = "linux", target_os = "android"))]
    sigs.push(libc::SIGPWR);
    sigs
}

pub fn run(store: &dyn Backend, a: RunArgs, out: &mut Out) -> CmdResult {
    if let Err(e) = validate_inputs(&a.key, &a.holder, a.ttl) {
        return out.error(&e.to_string());
    }
    if let (None, Some(why)) = (a.ttl, store.ttl_required()) {
        // Refused before CMD is even staged: the store would refuse the
        // claim, and CMD must not run unclaimed.
        return super::claim_cmds::store_error(out, StoreError::Refused(why.into()));
    }
    // Forked before the feed starts its threads, so on a file store the
    // child runs only our own code until it execs. A store's client may
    // already run threads (etcd): the child then only reads a pipe and
    // execs, all async-signal-safe (see child.rs).
    let (argv, child) = match Staged::start(&a.command, out) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let mut signals = forwarded();
    signals.push(libc::SIGCHLD);
    let mut feed = match Feed::start(store, &a.key, &signals) {
        Ok(f) => f,
        Err(e) => {
            child.abort();
            return super::claim_cmds::store_error(out, e);
        }
    };
    let opts = claim_opts(&a, &child.guard);
    let waited = match a.wait {
        None => store
            .acquire(&a.key, &a.holder, &opts)
            .map(|got| match got.outcome {
                AcquireOutcome::Acquired { record, kind } => Waited::Acquired {
                    record,
                    kind,
                    tenure: got.tenure,
                },
                AcquireOutcome::HeldByOther { holder, pid, host } => {
                    Waited::TimedOut(wait::Blocker {
                        holder,
                        pid,
                        host,
                        expires_at: None,
                    })
                }
            }),
        Some(wait_ms) => wait::acquire_waiting(
            store,
            &mut feed,
            &a.key,
            &a.holder,
            &opts,
            deadline(wait_ms),
            |b| say_blocked(&a.key, b),
        ),
    };
    let (record, tenure) = match waited {
        Ok(Waited::Acquired { record, tenure, .. }) => (record, tenure),
        Err(e) => {
            child.abort();
            return super::claim_cmds::store_error(out, e);
        }
        Ok(Waited::TimedOut(b)) => {
            child.abort();
            return held_report(out, &a.key, &b);
        }
        Ok(Waited::Interrupted) => {
            child.abort();
            return match feed.interrupted_by.unwrap_or(libc::SIGTERM) {
                // Someone killed the blocked child, or the guard the claim
                // would name, while we waited.
                libc::SIGCHLD => out.error(
                    "the command's process or its guard was killed before the command could start",
                ),
                sig => interrupted_report(out, sig),
            };
        }
    };
    let hold = match Hold::new(store, SystemClock, record, tenure, a.ttl) {
        Ok(h) => h,
        Err(e) => {
            // The claim cannot be kept while CMD runs: CMD never runs, and
            // the claim (only this tenure of it) is given back, while the
            // guard it names still lives so that nobody reclaims it first.
            let back = wait::give_back(store, &a.key, &a.holder, tenure.as_ref());
            child.abort();
            return out.error(&not_kept(&a.key, &e, back.err().as_ref()));
        }
    };
    let Staged { blocked, mut guard } = child;
    let running = match blocked.go() {
        Ok(c) => c,
        Err(e) => {
            // The child never got the word: it is killed and reaped, and
            // the claim is given back before its guard goes.
            let _ = hold.release();
            guard.disarm();
            return out.error(&format!("cannot start {}: {e}", argv.shown()));
        }
    };
    let ended = supervise(running, hold, &feed.rx, &mut guard, &a.key);
    // The guard first, while the leader's zombie keeps its group id from
    // being anyone else's.
    guard.disarm();
    ended.leader.reap();
    finish(out, &a.key, ended.outcome)
}

/// CMD forked and blocked, with its guard.
struct Staged {
    blocked: Blocked,
    guard: Guard,
}

impl Staged {
    /// CMD resolved and forked, blocked until [`Blocked::go`], and guarded;
    /// or the command's error report when it cannot be.
    fn start(command: &[OsString], out: &mut Out) -> Result<(Argv, Staged), CmdResult> {
        let argv = Argv::resolve(command).map_err(|e| out.error(&e))?;
        let cannot = |e: std::io::Error| format!("cannot start {}: {e}", argv.shown());
        let blocked = match Blocked::spawn(&argv, out.json_mode()) {
            Ok(b) => b,
            Err(e) => return Err(out.error(&cannot(e))),
        };
        match Guard::start(blocked.pid) {
            Ok(guard) => Ok((argv, Staged { blocked, guard })),
            Err(e) => {
                blocked.abort();
                Err(out.error(&cannot(e)))
            }
        }
    }

    /// CMD must never run: the guard first, while the child's pid is still
    /// unreaped and so cannot name anyone else's group.
    fn abort(self) {
        self.guard.disarm();
        self.blocked.abort();
    }
}

/// The claim `run` takes is bound to the guard: the one process that lives
/// exactly as long as CMD's group (see `guard.rs`), where CMD's own pid
/// ends with its leader and `run`'s with a `kill -9` of it.
fn claim_opts(a: &RunArgs, guard: &Guard) -> AcquireOpts {
    AcquireOpts {
        pid: Some(guard.pid() as u32),
        ttl_ms: a.ttl,
        reason: a.reason.clone(),
        metadata: None,
        harness: None,
        // The guard was forked a moment ago: no claim another process made,
        // even under this holder name, is ever continued as its own.
        adopt: Adopt::SameOwner,
    }
}

/// Why CMD never ran although its claim was taken, and what became of the
/// claim: one that could not be given back still stands until its TTL or
/// lease ends, and the operator must not read "nothing was done".
fn not_kept(key: &str, why: &StoreError, back: Option<&StoreError>) -> String {
    match back {
        None => format!(
            "the claim on {key} was taken but cannot be kept ({why}): \
             it was given back and the command did not run"
        ),
        Some(back) => format!(
            "the claim on {key} was taken but cannot be kept ({why}), \
             and giving it back failed ({back}): it stands until its TTL \
             or lease runs out; the command did not run"
        ),
    }
}

/// The one report of a run, and its exit status.
fn finish(out: &mut Out, key: &str, e: Outcome) -> CmdResult {
    let code = match &e.lost {
        Some(_) => EXIT_LOST,
        None => e.status.shell_code(),
    };
    if let Some(Err(err)) = &e.released {
        diag(&format!("releasing {key} after the command: {err}"));
    }
    if out.json_mode() {
        let mut record = record_json(&e.record);
        Tenure::extend_record(e.tenure.as_ref(), &mut record);
        let mut v = json!({
            "outcome": if e.lost.is_some() { "lost" } else { "exited" },
            "key": key,
            "record": record,
            "exit_code": e.status.code(),
            "signal": e.status.signal(),
            "status": code,
        });
        if let Some(obj) = v.as_object_mut() {
            if let Some(why) = &e.lost {
                obj.insert("why".into(), Value::from(why.to_string()));
            }
            let released = match &e.released {
                Some(Ok(r)) => Value::from(r.as_str()),
                Some(Err(err)) => json!({"error": err}),
                None => Value::Null,
            };
            obj.insert("release".into(), released);
        }
        out.json(&v)?;
    }
    Ok(code)
}

fn held_report(out: &mut Out, key: &str, b: &wait::Blocker) -> CmdResult {
    if out.json_mode() {
        out.json(&json!({
            "outcome": "held_by_other",
            "holder": b.holder,
            "pid": b.pid,
            "host": b.host,
            "key": key,
        }))?;
    } else {
        // stdout belongs to CMD, even when CMD never ran.
        diag(&format!(
            "{key} is held by {} (pid {} on {}); the command was not run",
            b.holder, b.pid, b.host
        ));
    }
    Ok(EXIT_DECLINED)
}

fn interrupted_report(out: &mut Out, sig: i32) -> CmdResult {
    if out.json_mode() {
        out.json(&json!({"outcome": "interrupted", "signal": sig}))?;
    } else {
        diag(&format!(
            "interrupted by signal {sig} while waiting; nothing was taken and the command was not run"
        ));
    }
    // As a shell reports a command that died of the signal.
    Ok(128u8.saturating_add(sig as u8))
}
