//! Waiting for a key, and holding it once taken.
//!
//! Both are written against two small interfaces so that any store can
//! drive them: [`Verbs`] (acquire, status, renew, release on one store) and
//! [`Wakeups`] (a feed saying "something about this key may have changed").
//! The file store's pair is [`FileVerbs`] and [`watch_key`] (inotify on the
//! claims dir, filtered to one lockfile, plus [`watch_pid`] for a local
//! holder's exit).
//!
//! Another store plugs in with two small adaptors: its verbs behind
//! [`Verbs`] (each of a store seam's verbs minus its extras), and its change
//! feed drained by a thread into a `Sender<Wake>`, whose receiver already is
//! a [`Wakeups`]: a change to this key, a resync or a reconnect is
//! [`Wake::Changed`]; anything else is dropped. On a store with leases the
//! hold's renewal is the lease keep-alive, due at the same third of the TTL.
//!
//! Neither side polls fast. A wait re-tries when the key's lockfile changes,
//! when the holder's TTL runs out (a time event, computed from the record),
//! when the feed reports the holder's exit, and on a slow safety re-check
//! for what nothing reports (a holder on another machine that dies). A hold renews a TTL claim when a third of the TTL is left,
//! and checks the claim is still its own whenever the lockfile changes.

use super::{
    claims_dir, now_ms, AcquireKind, AcquireOpts, AcquireOutcome, ClaimError, ClaimRecord, NoRenew,
    ReleaseOutcome, RenewOutcome, Root, Status, WaitHook,
};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::ffi::OsString;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A waiter re-tries at least this often: a holder that dies changes no
/// file, and only a local one can be watched.
pub const WAIT_RECHECK: Duration = Duration::from_secs(2);
/// A holder re-reads its claim at least this often, in case a notification
/// was lost (a claims dir replaced under the watch, an overflowed queue).
pub const HOLD_RECHECK: Duration = Duration::from_secs(5);
/// After a renewal the peer's recovery mutex refused, try again this soon
/// (the mutex is held for well under a second by an honest peer).
const RENEW_RETRY_MS: i64 = 1_000;

/// The verbs a wait and a hold need, from whichever store keeps the claim.
pub trait Verbs {
    type Error: std::error::Error + Send + Sync + 'static;
    fn acquire(
        &self,
        key: &str,
        holder: &str,
        opts: &AcquireOpts,
    ) -> Result<AcquireOutcome, Self::Error>;
    fn status(&self, key: &str) -> Result<Status, Self::Error>;
    fn renew(&self, key: &str, holder: &str, ttl_ms: i64) -> Result<RenewOutcome, Self::Error>;
    fn release(&self, key: &str, holder: &str) -> Result<ReleaseOutcome, Self::Error>;
}

/// Why a [`Wakeups::wait`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The key may have changed: look again.
    Changed,
    /// The timeout passed with no news.
    TimedOut,
    /// The face asked the wait to stop (a signal arrived).
    Interrupted,
}

/// A feed of "this key may have changed". Spurious wake-ups are fine (the
/// caller re-reads); a missed one costs at most one safety re-check.
pub trait Wakeups {
    fn wait(&mut self, timeout: Duration) -> Wake;

    /// The key is held by `blocker` now. A feed that can watch the holder
    /// itself (a local pid's exit) may start doing so; the default cannot.
    fn blocked_by(&mut self, _blocker: &Blocker) {}
}

/// A channel is a feed: whoever holds the sender (a watcher callback, a
/// thread draining a store's watch, a signal thread) wakes the waiter.
impl Wakeups for Receiver<Wake> {
    fn wait(&mut self, timeout: Duration) -> Wake {
        match self.recv_timeout(timeout) {
            Ok(w) => w,
            Err(RecvTimeoutError::Timeout) => Wake::TimedOut,
            // Every sender is gone: no more news, but the safety re-check
            // still runs on time.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(timeout);
                Wake::TimedOut
            }
        }
    }
}

/// The file store's verbs over one root. `on_mutex` hears when an acquire
/// waits on a peer's recovery mutex.
#[derive(Debug, Clone, Copy)]
pub struct FileVerbs<'a> {
    pub root: &'a Root,
    pub on_mutex: Option<&'a WaitHook>,
}

impl Verbs for FileVerbs<'_> {
    type Error = ClaimError;

    fn acquire(
        &self,
        key: &str,
        holder: &str,
        opts: &AcquireOpts,
    ) -> Result<AcquireOutcome, ClaimError> {
        super::acquire_watched(self.root, key, holder, opts, self.on_mutex)
    }

    fn status(&self, key: &str) -> Result<Status, ClaimError> {
        Ok(super::status(self.root, key))
    }

    fn renew(&self, key: &str, holder: &str, ttl_ms: i64) -> Result<RenewOutcome, ClaimError> {
        super::renew(self.root, key, holder, ttl_ms)
    }

    fn release(&self, key: &str, holder: &str) -> Result<ReleaseOutcome, ClaimError> {
        super::release(self.root, key, holder)
    }
}

/// An inotify watch on one key's lockfile; dropping it stops the watch.
pub struct KeyWatch {
    _watcher: RecommendedWatcher,
}

impl std::fmt::Debug for KeyWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyWatch")
    }
}

/// Call `wake` whenever `key`'s lockfile is created, written, renamed or
/// removed (and whenever notify says it lost track). The claims dir is
/// created if missing: acquire would create it anyway, and a watch needs
/// something to watch.
pub fn watch_key(
    root: &Root,
    key: &str,
    wake: impl Fn() + Send + 'static,
) -> Result<KeyWatch, ClaimError> {
    let dir = claims_dir(&root.root);
    std::fs::create_dir_all(&dir).map_err(|e| ClaimError::io("create", &dir, e))?;
    let name: OsString = root
        .lockfile(key)
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    let watch_err = |e: notify::Error| ClaimError::io("watch", &dir, std::io::Error::other(e));
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let ours = match res {
            // A read of our own (status, renew's re-read) is no change.
            Ok(ev) if matches!(ev.kind, notify::EventKind::Access(_)) => false,
            Ok(ev) => ev.need_rescan() || ev.paths.iter().any(|p| p.file_name() == Some(&name)),
            // The watch is in trouble: look, rather than trust silence.
            Err(_) => true,
        };
        if ours {
            wake();
        }
    })
    .map_err(watch_err)?;
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(watch_err)?;
    Ok(KeyWatch { _watcher: watcher })
}

/// A watch on one local process's exit; dropping it stops the watch.
#[derive(Debug)]
pub struct PidWatch {
    // Dropping the write end wakes the watching thread, which then ends.
    _cancel: std::os::fd::OwnedFd,
}

/// Call `wake` when process `pid` (of this machine) exits, at once if it
/// is already gone: a PID-bound holder's death makes no file event, and
/// without this a waiter would learn of it only at its next safety
/// re-check. An exited process reads as alive until its parent reaps it
/// (a zombie keeps its pid), so `wake` is called again once it is reaped,
/// looked for with a backoff that stops after about a second (past that
/// the re-check takes over). None when there is nothing to watch (the
/// process was gone, or the kernel has no pidfd, before Linux 5.3).
#[cfg(target_os = "linux")]
pub fn watch_pid(pid: i32, wake: impl Fn() + Send + 'static) -> Option<PidWatch> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if raw < 0 {
        // Gone between the verdict that it held the key and now.
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
            wake();
        }
        return None;
    }
    // SAFETY: the kernel just gave us this fd, owned here alone.
    let pidfd = unsafe { OwnedFd::from_raw_fd(raw as i32) };
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: both were just created and are owned here alone.
    let (cancel_rx, cancel) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    std::thread::spawn(move || {
        let cancelled = cancel_rx.as_raw_fd();
        // Until the process exits: only then may its holder be judged dead.
        match poll_either(pidfd.as_raw_fd(), cancelled, -1) {
            Polled::First => wake(),
            Polled::Second | Polled::Failed => return,
        }
        // Then until its parent reaps it, which is when it reads as gone.
        let mut delay_ms = 10;
        while delay_ms <= 640 {
            if !matches!(poll_either(cancelled, cancelled, delay_ms), Polled::Failed) {
                return;
            }
            // SAFETY: signal 0 only probes.
            if unsafe { libc::kill(pid, 0) } != 0 {
                wake();
                return;
            }
            delay_ms *= 2;
        }
    });
    Some(PidWatch { _cancel: cancel })
}

/// Which of two fds [`poll_either`] found ready.
#[cfg(target_os = "linux")]
enum Polled {
    First,
    Second,
    /// Neither (the timeout passed), or poll failed.
    Failed,
}

/// poll(2) two fds for input or hang-up, retrying on EINTR.
#[cfg(target_os = "linux")]
fn poll_either(first: i32, second: i32, timeout_ms: i32) -> Polled {
    let mut polled = [first, second].map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    loop {
        // SAFETY: polled is a valid array of two pollfds.
        let n = unsafe { libc::poll(polled.as_mut_ptr(), 2, timeout_ms) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return match (n > 0, polled[1].revents != 0, polled[0].revents != 0) {
            (false, _, _) => Polled::Failed,
            // A cancel wins over a simultaneous exit: nobody is listening.
            (true, true, _) => Polled::Second,
            (true, false, true) => Polled::First,
            (true, false, false) => Polled::Failed,
        };
    }
}

#[cfg(not(target_os = "linux"))]
pub fn watch_pid(_pid: i32, _wake: impl Fn() + Send + 'static) -> Option<PidWatch> {
    None
}

/// Who a waiter is waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    pub holder: String,
    pub pid: i32,
    pub host: String,
    /// When the claim's TTL runs out (epoch ms), if it has one.
    pub expires_at: Option<i64>,
}

/// How a wait ended.
// Returned once per wait, never stored in bulk.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Waited {
    /// Acquired (at once or after waiting).
    Acquired {
        record: ClaimRecord,
        kind: AcquireKind,
    },
    /// The deadline passed; the key was still held by this holder.
    TimedOut(Blocker),
    /// The wakeup feed said stop.
    Interrupted,
}

/// When to look again while `blocker` holds the key: at its TTL's end (a
/// time event no file announces), else at the next safety re-check, and
/// never past the caller's deadline.
pub fn next_look(
    now: Instant,
    now_ms: i64,
    expires_at: Option<i64>,
    deadline: Option<Instant>,
) -> Instant {
    let mut at = now + WAIT_RECHECK;
    if let Some(exp) = expires_at.filter(|e| *e >= now_ms) {
        // One millisecond past: the classifier calls a claim expired only
        // once `now >= expires_at`.
        at = at.min(now + Duration::from_millis((exp - now_ms) as u64 + 1));
    }
    deadline.map_or(at, |d| at.min(d))
}

/// Acquire `key`, waiting while another holder has it, until `deadline`
/// (None: forever). `on_block` is told once, at the first refusal, whom the
/// wait is for. `wakeups` must already be watching when this is called, so
/// that a release between an attempt and the wait is not missed.
pub fn acquire_waiting<V: Verbs>(
    verbs: &V,
    wakeups: &mut dyn Wakeups,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
    deadline: Option<Instant>,
    mut on_block: impl FnMut(&Blocker),
) -> Result<Waited, V::Error> {
    let mut told = false;
    let mut last: Option<Blocker> = None;
    loop {
        let (h, pid, host) = match verbs.acquire(key, holder, opts)? {
            AcquireOutcome::Acquired { record, kind } => {
                return Ok(Waited::Acquired { record, kind })
            }
            AcquireOutcome::HeldByOther { holder, pid, host } => (holder, pid, host),
        };
        // The TTL is read separately: acquire's refusal names the holder,
        // not its deadline. A stale read only moves one re-check.
        let expires_at = verbs
            .status(key)?
            .record
            .filter(|r| r.holder == h)
            .and_then(|r| r.expires_at);
        let blocker = Blocker {
            holder: h,
            pid,
            host,
            expires_at,
        };
        // Watch first, then say so: whoever reads the line may act on it.
        if last.as_ref() != Some(&blocker) {
            wakeups.blocked_by(&blocker);
            last = Some(blocker.clone());
        }
        if !told {
            on_block(&blocker);
            told = true;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return Ok(Waited::TimedOut(blocker));
        }
        let at = next_look(now, now_ms(), expires_at, deadline);
        if wakeups.wait(at.saturating_duration_since(now)) == Wake::Interrupted {
            return Ok(Waited::Interrupted);
        }
    }
}

/// Milliseconds since the epoch, from somewhere a test can move.
pub trait Clock {
    fn now_ms(&self) -> i64;
}

/// The wall clock, as every record is stamped with.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// Why a held claim is no longer ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lost {
    /// The lockfile is gone: force-released (archived) or released by
    /// someone using our holder name.
    Gone,
    /// Another claim stands on the key now.
    Replaced { holder: String, pid: i32 },
    /// The lockfile no longer parses as a claim.
    Corrupted(String),
    /// The store refused to renew it.
    RenewRefused(NoRenew),
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lost::Gone => f.write_str("the claim was removed (force-released or released)"),
            Lost::Replaced { holder, pid } => {
                write!(f, "the key is now held by {holder} (pid {pid})")
            }
            Lost::Corrupted(why) => write!(f, "the claim file was overwritten: {why}"),
            Lost::RenewRefused(no) => write!(f, "renew refused: {}", no.describe()),
        }
    }
}

/// When a claim expiring at `expires_at` after a `ttl_ms` window should be
/// renewed: once a third of the window is left, so that a renewal that has
/// to wait out a peer's mutex still lands well before the deadline.
pub fn renew_due(expires_at: i64, ttl_ms: i64) -> i64 {
    expires_at - ttl_ms / 3
}

/// A claim being kept: renewed before each deadline when it has a TTL,
/// re-checked whenever its lockfile changes. Single-threaded: the owner
/// calls [`Hold::changed`] on each wake-up and [`Hold::tick`] once
/// [`Hold::due_in`] has passed.
#[derive(Debug)]
pub struct Hold<V: Verbs, C: Clock = SystemClock> {
    verbs: V,
    clock: C,
    record: ClaimRecord,
    ttl_ms: Option<i64>,
    renew_at: Option<i64>,
    check_at: i64,
}

impl<V: Verbs, C: Clock> Hold<V, C> {
    /// Keep `record` (just acquired); renew it with `ttl_ms` if given.
    pub fn new(verbs: V, clock: C, record: ClaimRecord, ttl_ms: Option<i64>) -> Hold<V, C> {
        let now = clock.now_ms();
        let renew_at = ttl_ms.zip(record.expires_at).map(|(t, e)| renew_due(e, t));
        Hold {
            verbs,
            clock,
            record,
            ttl_ms,
            renew_at,
            check_at: now + HOLD_RECHECK.as_millis() as i64,
        }
    }

    /// The record as last renewed.
    pub fn record(&self) -> &ClaimRecord {
        &self.record
    }

    /// The epoch ms at which the next renewal is due, if any.
    pub fn renew_at(&self) -> Option<i64> {
        self.renew_at
    }

    /// How long until [`Hold::tick`] has work to do.
    pub fn due_in(&self) -> Duration {
        let next = self
            .renew_at
            .map_or(self.check_at, |r| r.min(self.check_at));
        Duration::from_millis((next - self.clock.now_ms()).max(0) as u64)
    }

    /// The lockfile changed: is it still ours?
    pub fn changed(&mut self) -> Result<Option<Lost>, V::Error> {
        self.check_at = self.clock.now_ms() + HOLD_RECHECK.as_millis() as i64;
        let s = self.verbs.status(&self.record.key)?;
        Ok(self.judge(&s))
    }

    /// Whether the key's current status is still our tenure. Our own
    /// renewal moves only `expires_at`; anything else that differs is
    /// somebody else's claim, even under our holder name.
    fn judge(&self, s: &Status) -> Option<Lost> {
        match (&s.record, &s.error) {
            (Some(r), _) => {
                let ours = r.holder == self.record.holder
                    && r.pid == self.record.pid
                    && r.acquired_at == self.record.acquired_at;
                (!ours).then(|| Lost::Replaced {
                    holder: r.holder.clone(),
                    pid: r.pid,
                })
            }
            // Unreadable may still be ours: a limit of this reader is no
            // evidence of loss.
            (None, Some(_)) if s.state == super::ClaimState::Unreadable => None,
            (None, Some(e)) => Some(Lost::Corrupted(e.clone())),
            (None, None) => Some(Lost::Gone),
        }
    }

    /// Do what is due: renew when a third of the TTL is left, re-check on
    /// the slow safety interval.
    pub fn tick(&mut self) -> Result<Option<Lost>, V::Error> {
        let now = self.clock.now_ms();
        if let (Some(at), Some(ttl)) = (self.renew_at, self.ttl_ms) {
            if now >= at {
                // Retry soon on an error; the deadline is still a third away.
                self.renew_at = Some(now + RENEW_RETRY_MS);
                match self
                    .verbs
                    .renew(&self.record.key, &self.record.holder, ttl)?
                {
                    RenewOutcome::Renewed { record, .. } => {
                        self.renew_at = record.expires_at.map(|e| renew_due(e, ttl));
                        self.record = record;
                    }
                    RenewOutcome::NotRenewed(NoRenew::MutexBusy) => {}
                    RenewOutcome::NotRenewed(no) => return Ok(Some(Lost::RenewRefused(no))),
                }
            }
        }
        if now >= self.check_at {
            return self.changed();
        }
        Ok(None)
    }

    /// Give the claim back (only while it is still ours).
    pub fn release(self) -> Result<ReleaseOutcome, V::Error> {
        self.verbs.release(&self.record.key, &self.record.holder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::ClaimState;
    use std::cell::{Cell, RefCell};
    use std::path::PathBuf;

    struct FakeClock<'a>(&'a Cell<i64>);

    impl Clock for FakeClock<'_> {
        fn now_ms(&self) -> i64 {
            self.0.get()
        }
    }

    /// A store of one claim, in memory: renew moves its deadline, and the
    /// test can take it away.
    struct FakeStore<'a> {
        clock: &'a Cell<i64>,
        claim: RefCell<Option<ClaimRecord>>,
        renewals: RefCell<Vec<i64>>,
        busy_once: Cell<bool>,
    }

    /// The fake store cannot fail.
    #[derive(Debug, thiserror::Error)]
    enum Never {}

    impl Verbs for &FakeStore<'_> {
        type Error = Never;
        fn acquire(&self, _: &str, holder: &str, _: &AcquireOpts) -> Result<AcquireOutcome, Never> {
            let mut c = self.claim.borrow_mut();
            match c.as_ref() {
                Some(r) if r.holder != holder => Ok(AcquireOutcome::HeldByOther {
                    holder: r.holder.clone(),
                    pid: r.pid,
                    host: r.host.clone(),
                }),
                _ => {
                    let record = ClaimRecord {
                        holder: holder.into(),
                        ..record(self.clock.get(), None)
                    };
                    *c = Some(record.clone());
                    Ok(AcquireOutcome::Acquired {
                        record,
                        kind: AcquireKind::Fresh,
                    })
                }
            }
        }
        fn status(&self, key: &str) -> Result<Status, Never> {
            let record = self.claim.borrow().clone();
            Ok(Status {
                key: key.into(),
                file: PathBuf::from("k.lock"),
                state: if record.is_some() {
                    ClaimState::Live
                } else {
                    ClaimState::Free
                },
                record,
                why: String::new(),
                error: None,
                locality: None,
                head: Vec::new(),
            })
        }
        fn renew(&self, _: &str, holder: &str, ttl: i64) -> Result<RenewOutcome, Never> {
            let now = self.clock.get();
            self.renewals.borrow_mut().push(now);
            if self.busy_once.replace(false) {
                return Ok(RenewOutcome::NotRenewed(NoRenew::MutexBusy));
            }
            let mut c = self.claim.borrow_mut();
            match c.as_mut() {
                Some(r) if r.holder == holder => {
                    let previous_expires_at = r.expires_at.unwrap_or(now);
                    r.expires_at = Some(now + ttl);
                    Ok(RenewOutcome::Renewed {
                        record: r.clone(),
                        previous_expires_at,
                    })
                }
                Some(_) => Ok(RenewOutcome::NotRenewed(NoRenew::OtherHolder)),
                None => Ok(RenewOutcome::NotRenewed(NoRenew::Absent)),
            }
        }
        fn release(&self, _: &str, _: &str) -> Result<ReleaseOutcome, Never> {
            Ok(ReleaseOutcome::Absent)
        }
    }

    fn record(acquired_at: i64, ttl: Option<i64>) -> ClaimRecord {
        ClaimRecord {
            schema_version: 1,
            key: "k".into(),
            holder: "h".into(),
            acquired_at,
            pid: 42,
            host: "box".into(),
            expires_at: ttl.map(|t| acquired_at + t),
            reason: None,
            harness: None,
            machine_id: None,
            metadata: Default::default(),
        }
    }

    fn store<'a>(clock: &'a Cell<i64>, rec: &ClaimRecord) -> FakeStore<'a> {
        FakeStore {
            clock,
            claim: RefCell::new(Some(rec.clone())),
            renewals: RefCell::new(Vec::new()),
            busy_once: Cell::new(false),
        }
    }

    /// Run the hold's own schedule for `until_ms`, as a face would: sleep
    /// `due_in`, then tick.
    fn run_until<V: Verbs>(
        hold: &mut Hold<V, FakeClock<'_>>,
        clock: &Cell<i64>,
        until_ms: i64,
    ) -> Option<Lost> {
        while clock.get() < until_ms {
            let step = hold.due_in().as_millis().max(1) as i64;
            clock.set((clock.get() + step).min(until_ms));
            if let Ok(Some(lost)) = hold.tick() {
                return Some(lost);
            }
        }
        None
    }

    #[test]
    fn a_ttl_claim_is_renewed_each_time_a_third_of_its_ttl_is_left() {
        let clock = Cell::new(1_000_000);
        let rec = record(1_000_000, Some(60_000));
        let s = store(&clock, &rec);
        let mut hold = Hold::new(&s, FakeClock(&clock), rec, Some(60_000));
        assert_eq!(hold.renew_at(), Some(1_040_000));
        assert_eq!(run_until(&mut hold, &clock, 1_000_000 + 200_000), None);
        // First at 40 s (20 s left), then every 40 s after each renewal.
        assert_eq!(
            *s.renewals.borrow(),
            vec![1_040_000, 1_080_000, 1_120_000, 1_160_000, 1_200_000]
        );
        let exp = s.claim.borrow().as_ref().and_then(|r| r.expires_at);
        assert_eq!(exp, Some(1_260_000), "never let it come within 20 s");
    }

    #[test]
    fn a_renewal_the_mutex_refused_is_retried_a_second_later() {
        let clock = Cell::new(0);
        let rec = record(0, Some(60_000));
        let s = store(&clock, &rec);
        s.busy_once.set(true);
        let mut hold = Hold::new(&s, FakeClock(&clock), rec, Some(60_000));
        assert_eq!(run_until(&mut hold, &clock, 45_000), None);
        assert_eq!(*s.renewals.borrow(), vec![40_000, 41_000]);
        assert_eq!(hold.record().expires_at, Some(101_000));
    }

    #[test]
    fn a_pid_bound_hold_never_renews_and_only_rechecks_slowly() {
        let clock = Cell::new(0);
        let rec = record(0, None);
        let s = store(&clock, &rec);
        let mut hold = Hold::new(&s, FakeClock(&clock), rec, None);
        assert_eq!(hold.due_in(), HOLD_RECHECK);
        assert_eq!(run_until(&mut hold, &clock, 60_000), None);
        assert!(s.renewals.borrow().is_empty());
    }

    #[test]
    fn a_refused_renewal_is_a_lost_claim() {
        let clock = Cell::new(0);
        let rec = record(0, Some(60_000));
        let s = store(&clock, &rec);
        let mut hold = Hold::new(&s, FakeClock(&clock), rec, Some(60_000));
        // Another holder took the key over meanwhile; the safety re-check
        // is pushed past the renewal so the renewal is what notices.
        *s.claim.borrow_mut() = Some(ClaimRecord {
            holder: "other".into(),
            ..record(1, Some(60_000))
        });
        clock.set(39_999);
        hold.check_at = i64::MAX;
        assert_eq!(
            run_until(&mut hold, &clock, 50_000),
            Some(Lost::RenewRefused(NoRenew::OtherHolder))
        );
    }

    #[test]
    fn a_changed_lockfile_is_judged_by_holder_pid_and_acquired_at() {
        let clock = Cell::new(0);
        let rec = record(0, Some(60_000));
        let s = store(&clock, &rec);
        let mut hold = Hold::new(&s, FakeClock(&clock), rec.clone(), Some(60_000));
        // Our own renewal moved only the deadline: still ours.
        if let Some(r) = s.claim.borrow_mut().as_mut() {
            r.expires_at = Some(99_999);
        }
        assert_eq!(hold.changed().ok().flatten(), None);
        // The same holder name from another process: not our tenure.
        *s.claim.borrow_mut() = Some(ClaimRecord {
            pid: 7,
            ..rec.clone()
        });
        assert_eq!(
            hold.changed().ok().flatten(),
            Some(Lost::Replaced {
                holder: "h".into(),
                pid: 7
            })
        );
        *s.claim.borrow_mut() = None;
        assert_eq!(hold.changed().ok().flatten(), Some(Lost::Gone));
    }

    /// A feed that plays a script: each wait runs the next step against
    /// the store and answers its wake.
    struct Script<'a> {
        steps: Vec<(Wake, Box<dyn Fn() + 'a>)>,
        waits: usize,
    }

    impl Wakeups for Script<'_> {
        fn wait(&mut self, _: Duration) -> Wake {
            let (wake, step) = self.steps.remove(0);
            step();
            self.waits += 1;
            wake
        }
    }

    fn held_by_other(clock: &Cell<i64>) -> FakeStore<'_> {
        let other = ClaimRecord {
            holder: "other".into(),
            ..record(0, Some(60_000))
        };
        store(clock, &other)
    }

    /// What a wait by `h` did: its end, whom it named, how often it slept.
    struct Run {
        waited: Waited,
        told: Vec<Blocker>,
        waits: usize,
    }

    fn wait_as_h<'a>(
        s: &FakeStore<'_>,
        steps: Vec<(Wake, Box<dyn Fn() + 'a>)>,
        deadline: Option<Instant>,
    ) -> Run {
        let mut feed = Script { steps, waits: 0 };
        let mut told = Vec::new();
        let opts = AcquireOpts::default();
        let Ok(waited) = acquire_waiting(&s, &mut feed, "k", "h", &opts, deadline, |b| {
            told.push(b.clone())
        });
        Run {
            waited,
            told,
            waits: feed.waits,
        }
    }

    #[test]
    fn a_waiter_says_whom_it_waits_for_once_and_acquires_once_the_key_is_freed() {
        let clock = Cell::new(0);
        let s = held_by_other(&clock);
        let free = || *s.claim.borrow_mut() = None;
        let run = wait_as_h(
            &s,
            vec![
                (Wake::Changed, Box::new(|| {})),
                (Wake::TimedOut, Box::new(|| {})),
                (Wake::Changed, Box::new(free)),
            ],
            None,
        );
        assert!(matches!(run.waited, Waited::Acquired { ref record, .. } if record.holder == "h"));
        assert_eq!(run.waits, 3);
        assert_eq!(run.told.len(), 1, "one line, not one per wake-up");
        assert_eq!(run.told[0].holder, "other");
        assert_eq!(
            run.told[0].expires_at,
            Some(60_000),
            "the deadline comes from the record"
        );
    }

    #[test]
    fn a_waiter_past_its_deadline_answers_who_still_holds_the_key() {
        let clock = Cell::new(0);
        let s = held_by_other(&clock);
        let run = wait_as_h(&s, Vec::new(), Some(Instant::now()));
        assert!(matches!(run.waited, Waited::TimedOut(ref b) if b.holder == "other"));
        assert_eq!(run.waits, 0);
    }

    #[test]
    fn a_waiter_whose_feed_is_interrupted_stops_without_taking_anything() {
        let clock = Cell::new(0);
        let s = held_by_other(&clock);
        let run = wait_as_h(&s, vec![(Wake::Interrupted, Box::new(|| {}))], None);
        assert_eq!(run.waited, Waited::Interrupted);
        let holder = s.claim.borrow().as_ref().map(|r| r.holder.clone());
        assert_eq!(holder, Some("other".into()));
    }

    #[test]
    fn a_pid_watch_wakes_when_its_process_exits_and_again_once_it_is_reaped() {
        use std::sync::mpsc::channel;
        let mut watched = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let mut dropped = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let (tx, rx) = channel();
        let tx2 = tx.clone();
        let _w = watch_pid(watched.id() as i32, move || tx.send("watched").unwrap());
        let d = watch_pid(dropped.id() as i32, move || tx2.send("dropped").unwrap());
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "woke early"
        );
        drop(d);
        dropped.kill().unwrap();
        dropped.wait().unwrap();
        // Exited but not reaped: a zombie, which still reads as alive.
        watched.kill().unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok("watched"));
        watched.wait().unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok("watched"));
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    }

    #[test]
    fn a_pid_watch_on_a_process_already_gone_wakes_at_once() {
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let pid = gone.id() as i32;
        gone.wait().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        assert!(watch_pid(pid, move || tx.send(()).unwrap()).is_none());
        assert_eq!(rx.try_recv(), Ok(()));
    }

    #[test]
    fn a_waiter_looks_again_at_the_holders_deadline_or_the_safety_recheck() {
        let now = Instant::now();
        let far = next_look(now, 0, Some(60_000), None);
        assert_eq!(far, now + WAIT_RECHECK);
        let soon = next_look(now, 0, Some(500), None);
        assert_eq!(soon, now + Duration::from_millis(501));
        // An expiry already past is no time event; the deadline caps all.
        let past = next_look(now, 10_000, Some(500), Some(now + Duration::from_millis(3)));
        assert_eq!(past, now + Duration::from_millis(3));
    }
}
