//! `claimtop run KEY --holder H [--ttl DUR] [--wait[=DUR]] -- CMD [ARGS...]`:
//! hold a claim for exactly as long as a command runs.
//!
//! The claim is bound to CMD's own pid, so CMD is forked first and kept
//! blocked on a pipe until the claim names it; only then does it exec. If
//! the claim cannot be had, the blocked child is killed and reaped and CMD
//! never ran. While CMD runs, a [`Hold`] renews a TTL claim (or has the
//! store keep its lease alive) and notices its loss; INT, TERM and HUP sent
//! to us are passed on to CMD's process group; when CMD exits the claim is
//! released and its status becomes ours.
//!
//! A stop reaches CMD's whole process group (`child`), also when `run`
//! itself is killed (`guard`), and on a store whose claims run out unseen
//! (an etcd lease) it is timed to end before the claim can ([`stop`]).

mod child;
mod guard;
pub mod stop;

use super::args::RunArgs;
use super::output::{diag, record_json, CmdResult, Out, EXIT_DECLINED};
use super::wait::{deadline, say_blocked, Feed, Msg};
use crate::claims::{validate_inputs, AcquireOpts, AcquireOutcome, Adopt, ReleaseOutcome};
use crate::store::{Backend, StoreError, Tenure};
use crate::wait::{self, Hold, Lost, SystemClock, Waited};
use child::{Argv, Blocked, ChildStatus, Running};
use guard::Guard;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};
use stop::Schedule;
pub use stop::KILL_GRACE;

/// The claim was lost while CMD ran (force-released, replaced, renew
/// refused, a lease the store no longer confirms): CMD was told to stop.
pub const EXIT_LOST: u8 = 4;
/// While a stopped CMD's leader is gone but the rest of its group is not,
/// look this often whether the group is gone yet.
const GROUP_POLL: Duration = Duration::from_millis(20);
/// While CMD runs, look whether it ended at least this often: SIGCHLD is
/// how its end is heard, and a signal of a kind already pending is merged
/// into it, so the end is never waited for on that signal alone.
const CHILD_POLL: Duration = Duration::from_secs(1);
/// After SIGKILL, wait at most this long for the group to be gone (a
/// process stuck in the kernel dies only when it leaves it).
const AFTER_KILL: Duration = Duration::from_secs(2);

pub fn run(store: &dyn Backend, a: RunArgs, out: &mut Out) -> CmdResult {
    if let Err(e) = validate_inputs(&a.key, &a.holder, a.ttl) {
        return out.error(&e.to_string());
    }
    if a.ttl.is_none() && store.leases().is_some() {
        // Refused before CMD is even staged: a claim that lives on a lease
        // needs a TTL, or nothing would end it if the holder died.
        let why = "a claim on this store lives on a lease and needs a TTL (--ttl): \
                   the lease is the only thing that ends it if the holder dies";
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
    let mut feed = match Feed::start(store, &a.key, true) {
        Ok(f) => f,
        Err(e) => {
            child.abort();
            return super::claim_cmds::store_error(out, e);
        }
    };
    let opts = child_opts(&a, &child.blocked);
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
                // Someone killed the blocked child while we waited.
                libc::SIGCHLD => {
                    out.error("the command's process was killed before it could start")
                }
                sig => interrupted_report(out, sig),
            };
        }
    };
    let hold = match Hold::new(store, SystemClock, record, tenure, a.ttl) {
        Ok(h) => h,
        Err(e) => {
            // The claim cannot be kept while CMD runs: CMD never runs, and
            // the claim (only this tenure of it) is given back.
            child.abort();
            let _ = wait::give_back(store, &a.key, &a.holder, tenure.as_ref());
            return out.error(&e.to_string());
        }
    };
    let Staged { blocked, mut guard } = child;
    let running = match blocked.go() {
        Ok(c) => c,
        Err(e) => {
            // The child never got the word: it is killed and reaped, and
            // the claim that named it is given back.
            guard.disarm();
            let _ = hold.release();
            return out.error(&format!("cannot start {}: {e}", argv.shown()));
        }
    };
    let ended = supervise(running, hold, &mut feed, &mut guard, &a.key);
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

/// The claim `run` takes is bound to the blocked child, never to itself.
fn child_opts(a: &RunArgs, child: &Blocked) -> AcquireOpts {
    AcquireOpts {
        pid: Some(child.pid as u32),
        ttl_ms: a.ttl,
        reason: a.reason.clone(),
        metadata: None,
        harness: None,
        // The child was forked a moment ago: no claim another process made,
        // even under this holder name, is ever continued as its own.
        adopt: Adopt::SameOwner,
    }
}

/// How a supervised run ended.
struct Outcome {
    status: ChildStatus,
    lost: Option<Lost>,
    record: crate::claims::ClaimRecord,
    /// The tenure's revision and lease, on a store that has them.
    tenure: Option<Tenure>,
    released: Option<Result<ReleaseOutcome, String>>,
}

/// The outcome, and CMD's leader still to be reaped.
struct Ended {
    outcome: Outcome,
    leader: Running,
}

/// A stop under way: SIGTERM sent to the group, SIGKILL due at `kill_at`
/// (None once sent, at `killed`).
struct Stopping {
    kill_at: Option<Instant>,
    killed: Option<Instant>,
}

impl Stopping {
    /// SIGTERM now; or SIGKILL at once when its instant has already passed
    /// (a `run` that was itself stopped past it), since SIGTERM continues a
    /// stopped group and would let it run on a claim that may be gone.
    fn begin(child: &Running, kill_at: Instant) -> Stopping {
        let now = Instant::now();
        if now >= kill_at {
            child.signal(libc::SIGKILL);
            return Stopping {
                kill_at: None,
                killed: Some(now),
            };
        }
        child.signal(libc::SIGTERM);
        Stopping {
            kill_at: Some(kill_at),
            killed: None,
        }
    }

    /// Send SIGKILL once it is due.
    fn advance(&mut self, child: &Running, now: Instant) {
        if self.kill_at.is_some_and(|at| now >= at) {
            child.signal(libc::SIGKILL);
            self.kill_at = None;
            self.killed = Some(now);
        }
    }

    /// Whether the stop is over, once the leader has ended: none of the
    /// group runs any more (or SIGKILL had its chance).
    fn over(&self, child: &Running, now: Instant) -> bool {
        !child.group_lives() || self.killed.is_some_and(|k| now >= k + AFTER_KILL)
    }
}

/// Keep the claim while the child runs: renew, re-check on every change,
/// pass signals on, stop the group ahead of a deadline the store can no
/// longer be relied on to move, and stop it if the claim is lost.
fn supervise(
    child: Running,
    mut hold: Hold<'_>,
    feed: &mut Feed,
    guard: &mut Guard,
    key: &str,
) -> Ended {
    let ttl = hold
        .tenure()
        .map(|t| Duration::from_secs(t.lease.ttl_s.max(0) as u64));
    let mut lost: Option<Lost> = None;
    let mut stopping: Option<Stopping> = None;
    let mut suspended = false;
    let status = loop {
        let now = Instant::now();
        // The deadline is read afresh each time: every renewal moves it.
        let ahead = hold
            .safe_until()
            .zip(ttl)
            .map(|(safe, ttl)| (safe, ttl, Schedule::ahead_of(safe, ttl)));
        if let (None, Some((safe, ttl, plan))) = (&lost, ahead) {
            guard.kill_by(Some(plan.kill_at));
            if now >= plan.term_at {
                let why = Lost::Unconfirmed {
                    silent_ms: ms(ttl.saturating_sub(safe.saturating_duration_since(now))),
                    left_ms: ms(safe.saturating_duration_since(now)),
                };
                say_lost(key, &why, plan.kill_at.saturating_duration_since(now));
                stopping = Some(Stopping::begin(&child, plan.kill_at));
                lost = Some(why);
            }
        }
        // Back from a ^Z: the group goes on only if the deadline above did
        // not pass while everything stood still.
        if std::mem::take(&mut suspended) && lost.is_none() {
            child.resume();
        }
        if let Some(s) = stopping.as_mut() {
            s.advance(&child, now);
        }
        let exited = child.exited();
        if let Some(status) = exited {
            match &stopping {
                None => break status,
                Some(s) if s.over(&child, now) => break status,
                // The leader is gone but some of its group still runs:
                // the stop goes on until all of it is.
                Some(_) => {}
            }
        }
        let timeout = match &stopping {
            None => {
                let due = hold.due_in().min(CHILD_POLL);
                match ahead {
                    Some((_, _, plan)) => due.min(plan.term_at.saturating_duration_since(now)),
                    None => due,
                }
            }
            // SIGCHLD wakes us when the leader ends; the rest of the group
            // can only be looked at.
            Some(s) => match (s.kill_at, exited.is_some()) {
                (Some(at), false) => at.saturating_duration_since(now),
                (Some(at), true) => at.saturating_duration_since(now).min(GROUP_POLL),
                (None, _) => GROUP_POLL,
            },
        };
        let verdict = match feed.rx.recv_timeout(timeout) {
            // Nothing can wake us any more (cannot happen while the feed
            // lives): fall back to looking for the child's end now and then.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(timeout.min(Duration::from_millis(50)));
                continue;
            }
            // CMD's group has the terminal when we had it, so a ^C from
            // the terminal reaches CMD and not us: whatever reaches us was
            // meant for CMD and is passed on.
            Ok(Msg::Signal { sig, .. }) => {
                match sig {
                    libc::SIGCHLD => suspended |= child.follow_stop(),
                    _ => child.signal(sig),
                }
                continue;
            }
            Ok(Msg::Changed) if lost.is_none() => hold.changed(),
            Ok(Msg::Changed) => continue,
            Err(RecvTimeoutError::Timeout) if lost.is_none() => hold.tick(),
            Err(RecvTimeoutError::Timeout) => continue,
        };
        match verdict {
            Ok(None) => {}
            Ok(Some(why)) => {
                say_lost(key, &why, KILL_GRACE);
                let kill_at = Instant::now() + KILL_GRACE;
                guard.kill_by(Some(kill_at));
                stopping = Some(Stopping::begin(&child, kill_at));
                lost = Some(why);
            }
            // The store could not be read or renewed this time; the hold
            // has already scheduled its retry.
            Err(e) => diag(&format!("checking the claim on {key}: {e}")),
        }
    };
    // One last look before giving the claim back: a loss in the instant
    // CMD ended may have overlapped its work, and must not be released.
    if lost.is_none() {
        lost = hold.last_look();
    }
    let record = hold.record().clone();
    let tenure = hold.tenure().copied();
    // A lost claim is no longer ours to release: under our holder name a
    // release could remove a newcomer's claim.
    let released = match lost {
        None => Some(hold.release().map_err(|e| e.to_string())),
        Some(_) => {
            hold.give_up();
            None
        }
    };
    Ended {
        outcome: Outcome {
            status,
            lost,
            record,
            tenure,
            released,
        },
        leader: child,
    }
}

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

/// The one stderr line of a loss.
fn say_lost(key: &str, why: &Lost, grace: Duration) {
    let grace = match grace.subsec_millis() {
        0 => format!("{}s", grace.as_secs()),
        _ => format!("{:.1}s", grace.as_secs_f64()),
    };
    diag(&format!(
        "lost the claim on {key} while the command ran: {why}; \
         sending its process group SIGTERM (SIGKILL in {grace})"
    ));
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
