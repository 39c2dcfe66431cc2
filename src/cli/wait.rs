//! `--wait`: the face of [`crate::wait`] for `acquire` and `run`, on
//! any store. One channel carries both the store's wake-ups for the key and the signals the
//! command listens for, so a wait can be interrupted as promptly as it can
//! be woken.

use super::output::diag;
use crate::claims::{human_ms, now_ms, AcquireOpts, AcquireOutcome, WaitHook};
use crate::store::{Backend, Fenced, KeyWatch, StoreError};
use crate::wait::{self, Blocker, Waited, Wakeups, Woke};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::exfiltrator::raw::WithRawSiginfo;
use signal_hook::iterator::{Handle, SignalsInfo};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The signals a waiting command answers.
pub const INTERRUPTS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// What wakes a waiting or holding command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msg {
    /// The store says the key may have changed.
    Changed,
    /// A signal arrived. `sent` is true when a process sent it with
    /// kill(2); false when the kernel did (a terminal's ^C goes to the whole
    /// foreground process group, so a child already has it).
    Signal { sig: i32, sent: bool },
}

/// The store's watch on the key and the signals, on one channel. Dropping
/// it stops both.
pub struct Feed {
    pub rx: Receiver<Msg>,
    /// The signal that interrupted a wait, once one has.
    pub interrupted_by: Option<i32>,
    watch: Box<dyn KeyWatch>,
    signals: Handle,
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.signals.close();
    }
}

impl Feed {
    /// Watch `key` in `store` and catch `signals` ([`INTERRUPTS`] for a
    /// wait).
    pub fn start(store: &dyn Backend, key: &str, signals: &[i32]) -> Result<Feed, StoreError> {
        let (tx, rx) = channel();
        let signals = catch_signals(tx.clone(), signals).map_err(|e| {
            StoreError::Unsupported(format!("cannot catch signals for --wait: {e}"))
        })?;
        let watch = store.watch_key(
            key,
            Arc::new(move || {
                let _ = tx.send(Msg::Changed);
            }),
        );
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
            watch,
            signals,
        })
    }
}

/// A thread turning the signals into [`Msg::Signal`]s.
fn catch_signals(tx: Sender<Msg>, sigs: &[i32]) -> std::io::Result<Handle> {
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
    fn wait(&mut self, timeout: Duration) -> Woke {
        match self.rx.recv_timeout(timeout) {
            Err(_) => Woke::TimedOut,
            Ok(Msg::Changed) => Woke::Changed,
            Ok(Msg::Signal { sig, .. }) => {
                self.interrupted_by = Some(sig);
                Woke::Interrupted
            }
        }
    }

    fn blocked_by(&mut self, b: &Blocker) {
        self.watch.blocked_by(b);
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
        let owner = match (w.holder.owner.as_str(), &w.holder.foreign) {
            ("", Some(what)) => format!(
                "a mutex whose owner is {what}, which no implementation writes (planted?); \
                 it is stolen once {}s old",
                crate::mutex::STALE_MUTEX_STEAL.as_secs()
            ),
            ("", None) => "an unstamped holder".into(),
            (o, _) => crate::sanitize::sanitize(o).into_owned(),
        };
        crate::diag::stderr_line(&format!(
            "waiting for {owner} (held {}s)",
            w.holder.held.as_secs()
        ));
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
    Store(#[from] StoreError),
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

    fn wait(&mut self, timeout: Duration) -> Woke {
        let wake = self.feed.wait(timeout);
        if wake != Woke::Interrupted {
            if let Some(why) = (self.stop)() {
                self.why = Some(why);
                return Woke::Interrupted;
            }
        }
        wake
    }
}

/// `acquire` on any store, waiting as `--wait[=DUR]` says (`None`: not at
/// all; `Some(None)`: forever). A wait that runs out answers as the last
/// refusal did: held by another. `stop` gives a reason to stop waiting (an
/// interrupt caught elsewhere, a caller that went away while we waited).
pub fn acquire(
    store: &dyn Backend,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
    wait: Option<Option<i64>>,
    stop: &dyn Fn() -> Option<String>,
) -> Result<Fenced<AcquireOutcome>, WaitError> {
    let Some(wait_ms) = wait else {
        return Ok(store.acquire(key, holder, opts)?);
    };
    let mut feed = Feed::start(store, key, &INTERRUPTS)?;
    let mut wakeups = Stoppable {
        feed: &mut feed,
        stop,
        why: None,
    };
    let waited = wait::acquire_waiting(
        store,
        &mut wakeups,
        key,
        holder,
        opts,
        deadline(wait_ms),
        |b| say_blocked(key, b),
    )?;
    match waited {
        Waited::Acquired {
            record,
            kind,
            tenure,
        } => Ok(Fenced {
            outcome: AcquireOutcome::Acquired { record, kind },
            tenure,
        }),
        Waited::TimedOut(b) => Ok(Fenced::plain(AcquireOutcome::HeldByOther {
            holder: b.holder,
            pid: b.pid,
            host: b.host,
        })),
        Waited::Interrupted => Err(match wakeups.why {
            Some(why) => WaitError::Stopped(why),
            None => WaitError::Interrupted(feed.interrupted_by.unwrap_or(0)),
        }),
    }
}
