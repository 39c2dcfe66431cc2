//! While CMD runs: keep the claim, pass signals on, and end only once no
//! process of CMD's group is left, whatever ends the run.
//!
//! Every way out goes through one rule: the claim is given back (or given
//! up) only after the whole group is gone. CMD's own exit stops what it
//! left running in its group; a signal that asks `run` to end is passed on
//! and followed by SIGKILL after the grace; a loss, or a deadline the claim
//! could pass unrenewed, stops the group the same way. Only then is the
//! claim released, so a waiter can never start while anything of CMD still
//! runs.

use super::child::{ChildStatus, Running};
use super::guard::Guard;
use super::stop::{Schedule, KILL_GRACE};
use crate::claims::{ClaimRecord, ReleaseOutcome};
use crate::cli::output::diag;
use crate::cli::wait::Msg;
use crate::store::Tenure;
use crate::wait::{Clock, Hold, Lost};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// While a stopped CMD's leader is gone but the rest of its group is not,
/// look this often whether the group is gone yet.
const GROUP_POLL: Duration = Duration::from_millis(20);
/// While CMD runs, look whether it ended at least this often: SIGCHLD is
/// how its end is heard, and a signal of a kind already pending is merged
/// into it, so the end is never waited for on that signal alone.
const CHILD_POLL: Duration = Duration::from_secs(1);
/// Once SIGKILL has had this long and the group is still there (a process
/// stuck in the kernel dies only when it leaves it), say why `run` waits.
const AFTER_KILL: Duration = Duration::from_secs(2);

/// The signals sent to `run` that ask it to end: passed on to CMD's group,
/// and the group is stopped (SIGKILL after [`KILL_GRACE`]) if it does not
/// end by itself. Any other signal `run` catches is only passed on.
const ENDING: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// How a supervised run ended.
pub(super) struct Outcome {
    pub(super) status: ChildStatus,
    pub(super) lost: Option<Lost>,
    pub(super) record: ClaimRecord,
    /// The tenure's revision and lease, on a store that has them.
    pub(super) tenure: Option<Tenure>,
    pub(super) released: Option<Result<ReleaseOutcome, String>>,
}

/// The outcome, and CMD's leader still to be reaped.
pub(super) struct Ended {
    pub(super) outcome: Outcome,
    pub(super) leader: Running,
}

/// A stop under way: a signal sent to the group, SIGKILL due at `kill_at`.
struct Stopping {
    kill_at: Instant,
    killed: Option<Instant>,
    /// Whether `run` has said it waits on a group that SIGKILL has not ended.
    said_stuck: bool,
}

/// Stop the group: send `sig` now (followed by SIGCONT, see
/// [`Running::signal`]) and SIGKILL at `kill_at`, or sooner if a stop
/// under way already has it sooner. SIGKILL at once when that instant has
/// already passed (a `run` that was itself stopped past it), since a
/// gentler signal continues a stopped group and would let it run on a
/// claim that may be gone.
fn stop_by(stopping: &mut Option<Stopping>, child: &Running, sig: i32, kill_at: Instant) {
    let s = stopping.get_or_insert(Stopping {
        kill_at,
        killed: None,
        said_stuck: false,
    });
    s.kill_at = s.kill_at.min(kill_at);
    if !s.advance(child, Instant::now()) {
        child.signal(sig);
    }
}

impl Stopping {
    /// Send SIGKILL once it is due; true once it has been sent.
    fn advance(&mut self, child: &Running, now: Instant) -> bool {
        if self.killed.is_none() && now >= self.kill_at {
            child.signal(libc::SIGKILL);
            self.killed = Some(now);
        }
        self.killed.is_some()
    }

    /// Whether the stop is over: none of the group runs any more. There is
    /// no bound: the claim is held for as long as any of it is left.
    fn over(&mut self, child: &Running, now: Instant) -> bool {
        if !child.group_lives() {
            return true;
        }
        if let Some(k) = self.killed {
            if !self.said_stuck && now >= k + AFTER_KILL {
                self.said_stuck = true;
                diag(
                    "the command's process group outlived SIGKILL (a process stuck in \
                     the kernel?); the claim is held until none of it is left",
                );
            }
        }
        false
    }
}

/// The earlier of two optional instants.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Keep the claim while the child runs: renew, re-check on every change,
/// pass signals on, stop the group ahead of a deadline the claim could
/// pass unrenewed, and stop it if the claim is lost, if `run` is asked to
/// end, or once CMD has ended and left some of its group behind. Returns
/// once none of the group is left, with the claim released (or, if lost,
/// given up).
pub(super) fn supervise<C: Clock>(
    child: Running,
    mut hold: Hold<'_, C>,
    rx: &Receiver<Msg>,
    guard: &mut Guard,
    key: &str,
) -> Ended {
    let mut lost: Option<Lost> = None;
    let mut stopping: Option<Stopping> = None;
    let mut suspended = false;
    // The claim's deadline as last told the guard: its SIGKILL instant, and
    // the deadline and TTL it was planned from.
    let mut told: Option<(Instant, Instant, Duration)> = None;
    let status = loop {
        let now = Instant::now();
        if lost.is_none() && guard.gone() {
            // The claim names the guard: with it gone the claim reads
            // stale now, so the group may not run another instant.
            let why = Lost::HolderGone { pid: guard.pid() };
            say_lost(key, &why, Duration::ZERO);
            stop_by(&mut stopping, &child, libc::SIGKILL, now);
            lost = Some(why);
        }
        // The deadline is read afresh each time: every renewal moves it.
        let ahead = hold
            .deadline()
            .map(|(until, ttl)| (until, ttl, Schedule::ahead_of(until, ttl)));
        if lost.is_none() {
            // The guard's SIGKILL went out while we could not act (stopped,
            // or blocked): the claim came that close to its end, whatever
            // the store says now. Otherwise SIGTERM is due at the fresh
            // deadline's own instant.
            let missed = told.filter(|(kill_at, _, _)| now >= *kill_at);
            let due = ahead
                .filter(|(_, _, plan)| now >= plan.term_at)
                .map(|(until, ttl, plan)| (plan.kill_at, until, ttl));
            if let Some((kill_at, until, ttl)) = missed.or(due) {
                let why = hold.unconfirmed(until, ttl, now);
                say_lost(key, &why, kill_at.saturating_duration_since(now));
                stop_by(&mut stopping, &child, libc::SIGTERM, kill_at);
                lost = Some(why);
            } else {
                told = ahead.map(|(until, ttl, plan)| (plan.kill_at, until, ttl));
            }
        }
        guard.kill_by(earliest(
            told.filter(|_| lost.is_none())
                .map(|(kill_at, _, _)| kill_at),
            stopping.as_ref().map(|s| s.kill_at),
        ));
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
            if stopping.is_none() && child.group_lives() {
                // CMD is done, but not all it started: what is left of its
                // group would run on without the claim once it is released.
                diag(&format!(
                    "the command exited, leaving processes in its group: sending them \
                     SIGTERM (SIGKILL in {}) before releasing {key}",
                    seconds(KILL_GRACE)
                ));
                stop_by(&mut stopping, &child, libc::SIGTERM, now + KILL_GRACE);
            }
            if stopping.as_mut().is_none_or(|s| s.over(&child, now)) {
                break status;
            }
        }
        // SIGCHLD wakes us when the leader ends; the rest of the group can
        // only be looked at.
        let mut timeout = match &stopping {
            None => CHILD_POLL,
            Some(s) if s.killed.is_some() => GROUP_POLL,
            Some(s) => s.kill_at.saturating_duration_since(now).min(match exited {
                Some(_) => GROUP_POLL,
                None => CHILD_POLL,
            }),
        };
        // A claim still ours is kept through a stop too: renewed, and
        // stopped ahead of its deadline.
        if lost.is_none() {
            timeout = timeout.min(hold.due_in());
            if let Some((_, _, plan)) = ahead {
                timeout = timeout.min(plan.term_at.saturating_duration_since(now));
            }
        }
        let verdict = match rx.recv_timeout(timeout) {
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
                    sig if ENDING.contains(&sig) && stopping.is_none() => {
                        stop_by(&mut stopping, &child, sig, Instant::now() + KILL_GRACE);
                    }
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
                stop_by(
                    &mut stopping,
                    &child,
                    libc::SIGTERM,
                    Instant::now() + KILL_GRACE,
                );
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

fn seconds(d: Duration) -> String {
    match d.subsec_millis() {
        0 => format!("{}s", d.as_secs()),
        _ => format!("{:.1}s", d.as_secs_f64()),
    }
}

/// The one stderr line of a loss.
fn say_lost(key: &str, why: &Lost, grace: Duration) {
    let stop = match grace.is_zero() {
        true => "sending its process group SIGKILL".to_string(),
        false => format!(
            "sending its process group SIGTERM (SIGKILL in {})",
            seconds(grace)
        ),
    };
    diag(&format!(
        "lost the claim on {key} while the command ran: {why}; {stop}"
    ));
}
