//! `--wait`: the face of [`crate::claims::wait`] for `acquire` and `run`. One
//! channel carries both the key's change notifications and the signals the
//! command listens for, so a wait can be interrupted as promptly as it can
//! be woken.

use super::output::diag;
use crate::claims::wait::{self, Blocker, FileVerbs, KeyWatch, Waited, Wake, Wakeups};
use crate::claims::{human_ms, now_ms, AcquireOpts, AcquireOutcome, ClaimError, Root, WaitHook};
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::exfiltrator::raw::WithRawSiginfo;
use signal_hook::iterator::{Handle, SignalsInfo};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};

/// The signals a waiting or holding command answers (and `run` forwards).
pub const INTERRUPTS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// What wakes a waiting or holding command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msg {
    /// The key's lockfile changed.
    Changed,
    /// A signal arrived. `sent` is true when a process sent it with
    /// kill(2); false when the kernel did (a terminal's ^C goes to the whole
    /// foreground process group, so a child already has it).
    Signal { sig: i32, sent: bool },
}

/// The key's notifications and the signals, on one channel. Dropping it
/// stops both.
pub struct Feed {
    pub rx: Receiver<Msg>,
    /// The signal that interrupted a wait, once one has.
    pub interrupted_by: Option<i32>,
    _watch: KeyWatch,
    signals: Handle,
    /// Wakes the wait when a local PID-bound holder exits.
    holder_exit: Option<wait::PidWatch>,
    tx: Sender<Msg>,
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.signals.close();
    }
}

impl Feed {
    /// Watch `key` and catch [`INTERRUPTS`] (plus SIGCHLD when `children`).
    pub fn start(root: &Root, key: &str, children: bool) -> Result<Feed, ClaimError> {
        let (tx, rx) = channel();
        let signals = catch_signals(tx.clone(), children)
            .map_err(|e| ClaimError::io("catch signals for", "--wait", e))?;
        let to_watch = tx.clone();
        let watch = wait::watch_key(root, key, move || {
            let _ = to_watch.send(Msg::Changed);
        });
        let watch = match watch {
            Ok(w) => w,
            Err(e) => {
                signals.close();
                return Err(e);
            }
        };
        Ok(Feed {
            rx,
            interrupted_by: None,
            _watch: watch,
            signals,
            holder_exit: None,
            tx,
        })
    }
}

/// A thread turning the signals into [`Msg::Signal`]s.
pub(crate) fn catch_signals(tx: Sender<Msg>, children: bool) -> std::io::Result<Handle> {
    let mut sigs = INTERRUPTS.to_vec();
    if children {
        sigs.push(SIGCHLD);
    }
    let mut signals = SignalsInfo::<WithRawSiginfo>::new(sigs)?;
    let handle = signals.handle();
    std::thread::spawn(move || {
        for info in signals.forever() {
            // si_code <= 0: kill(2), tgkill(2), sigqueue(3), i.e. a process
            // aimed it at us; SI_KERNEL (> 0) is the terminal's doing.
            let sent = info.si_code <= 0;
            if tx
                .send(Msg::Signal {
                    sig: info.si_signo,
                    sent,
                })
                .is_err()
            {
                break;
            }
        }
    });
    Ok(handle)
}

impl Wakeups for Feed {
    fn wait(&mut self, timeout: Duration) -> Wake {
        match self.rx.recv_timeout(timeout) {
            Err(_) => Wake::TimedOut,
            Ok(Msg::Changed) => Wake::Changed,
            Ok(Msg::Signal { sig, .. }) => {
                self.interrupted_by = Some(sig);
                Wake::Interrupted
            }
        }
    }

    fn blocked_by(&mut self, b: &Blocker) {
        // Only a process of this machine can be watched; a pid named by
        // another host's record means nothing here.
        let local = b.host == crate::claims::hostname();
        let tx = self.tx.clone();
        self.holder_exit = local
            .then(|| {
                wait::watch_pid(b.pid, move || {
                    let _ = tx.send(Msg::Changed);
                })
            })
            .flatten();
    }
}

/// `--wait[=DUR]` as a deadline: None waits forever.
pub fn deadline(wait_ms: Option<i64>) -> Option<Instant> {
    wait_ms.map(|ms| Instant::now() + Duration::from_millis(ms.max(0) as u64))
}

/// The hook that says, on stderr, when an acquire waits on a peer's
/// recovery mutex rather than sit silent.
pub fn say_mutex_wait() -> WaitHook {
    WaitHook::new(|w| {
        // The owner token comes off disk: sanitised before the terminal.
        let owner = match w.holder.owner.as_str() {
            "" => "an unstamped holder".into(),
            o => crate::sanitize::sanitize(o).into_owned(),
        };
        eprintln!("waiting for {owner} (held {}s)", w.holder.held.as_secs());
    })
}

/// The one stderr line saying whom a wait is for (`diag` sanitises it).
pub fn say_blocked(key: &str, b: &Blocker) {
    let ttl = match b.expires_at {
        Some(exp) if exp > now_ms() => format!(", TTL ends in {}", human_ms(exp - now_ms())),
        _ => String::new(),
    };
    diag(&format!(
        "waiting for {key}: held by {} (pid {} on {}{ttl})",
        b.holder, b.pid, b.host
    ));
}

/// Why an `acquire --wait` gave up without an answer.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error("interrupted by signal {0} while waiting; nothing was taken")]
    Interrupted(i32),
    /// The caller's own reason to stop (see [`acquire`]'s `stop`).
    #[error("{0}; nothing was taken")]
    Stopped(String),
}

/// A [`Feed`] that also asks the command, at every wake-up (so at least
/// every safety re-check), whether waiting still makes sense.
struct Stoppable<'a> {
    feed: &'a mut Feed,
    stop: &'a dyn Fn() -> Option<String>,
    why: Option<String>,
}

impl Wakeups for Stoppable<'_> {
    fn blocked_by(&mut self, b: &Blocker) {
        self.feed.blocked_by(b);
    }

    fn wait(&mut self, timeout: Duration) -> Wake {
        let wake = self.feed.wait(timeout);
        if wake != Wake::Interrupted {
            if let Some(why) = (self.stop)() {
                self.why = Some(why);
                return Wake::Interrupted;
            }
        }
        wake
    }
}

/// `acquire`, waiting as `--wait[=DUR]` says (`None`: not at all; `Some(None)`:
/// forever). A wait that runs out answers as the last refusal did: held by
/// another. `stop` gives a reason to stop waiting (an interrupt caught
/// elsewhere, a caller that went away while we waited).
pub fn acquire(
    root: &Root,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
    on_mutex: &WaitHook,
    wait: Option<Option<i64>>,
    stop: &dyn Fn() -> Option<String>,
) -> Result<AcquireOutcome, WaitError> {
    let Some(wait_ms) = wait else {
        return Ok(crate::claims::acquire_watched(
            root,
            key,
            holder,
            opts,
            Some(on_mutex),
        )?);
    };
    let mut feed = Feed::start(root, key, false)?;
    let verbs = FileVerbs {
        root,
        on_mutex: Some(on_mutex),
    };
    let mut wakeups = Stoppable {
        feed: &mut feed,
        stop,
        why: None,
    };
    let waited = wait::acquire_waiting(
        &verbs,
        &mut wakeups,
        key,
        holder,
        opts,
        deadline(wait_ms),
        |b| say_blocked(key, b),
    )?;
    match waited {
        Waited::Acquired { record, kind } => Ok(AcquireOutcome::Acquired { record, kind }),
        Waited::TimedOut(b) => Ok(AcquireOutcome::HeldByOther {
            holder: b.holder,
            pid: b.pid,
            host: b.host,
        }),
        Waited::Interrupted => Err(match wakeups.why {
            Some(why) => WaitError::Stopped(why),
            None => WaitError::Interrupted(feed.interrupted_by.unwrap_or(0)),
        }),
    }
}

/// Why an `acquire --wait` over a store's change feed gave up.
#[derive(Debug, thiserror::Error)]
pub enum StoreWaitError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The caller's own reason to stop (a signal, an orphaned caller).
    #[error("{0}; nothing was taken")]
    Stopped(String),
}

/// How often a store wait asks `stop` while the feed is quiet: a signal is
/// answered this promptly, and the store is not asked anything meanwhile.
const STOP_CHECK: Duration = Duration::from_millis(200);

/// `acquire [--wait[=DUR]]` on a store whose change feed drives the wait
/// (etcd: one watch). Acquire; while another holds the key, wait for the
/// feed to name the key (or to have lost track: a resync, a reconnect) and
/// try again, with a slow safety re-try for anything the feed missed.
/// Without `wait` it is one acquire.
pub fn acquire_on(
    store: &dyn crate::store::Store,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
    wait: Option<Option<i64>>,
    stop: &dyn Fn() -> Option<String>,
) -> Result<crate::store::Fenced<AcquireOutcome>, StoreWaitError> {
    use crate::store::Change;
    let Some(wait_ms) = wait else {
        return Ok(store.acquire(key, holder, opts)?);
    };
    let until = deadline(wait_ms);
    // The feed starts before the first try, so a release between the try
    // and the wait is still seen.
    let mut feed = store.changes()?;
    let mut said = false;
    loop {
        let got = store.acquire(key, holder, opts)?;
        let AcquireOutcome::HeldByOther {
            holder: h,
            pid,
            host,
        } = &got.outcome
        else {
            return Ok(got);
        };
        if until.is_some_and(|d| Instant::now() >= d) {
            return Ok(got);
        }
        if !said {
            say_blocked(
                key,
                &Blocker {
                    holder: h.clone(),
                    pid: *pid,
                    host: host.clone(),
                    expires_at: None,
                },
            );
            said = true;
        }
        let recheck = Instant::now() + wait::WAIT_RECHECK;
        loop {
            if let Some(why) = stop() {
                return Err(StoreWaitError::Stopped(why));
            }
            let now = Instant::now();
            let end = until.map_or(recheck, |d| d.min(recheck));
            if now >= end {
                break;
            }
            match feed.next((end - now).min(STOP_CHECK))? {
                Some(Change::Claim { key: k }) if k == key => break,
                Some(Change::Resync { .. } | Change::Connected { .. }) => break,
                _ => {}
            }
        }
    }
}
