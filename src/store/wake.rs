//! What wakes a waiter or a holder of one key: the stores' [`KeyWatch`]es.
//!
//! - [`FeedWatch`]: any store's change feed, filtered to one key (etcd: its
//!   one watch on the prefix).
//! - [`FileKeyWatch`]: the file root's feed filtered the same way, plus the
//!   exit of the local pid holding it, which changes no file.

use super::{Change, Changes, KeyWatch, StoreError, Wake};
use crate::claims::Blocker;
use crate::claims::{claims_dir, ClaimError, Root};
use crate::store::file::feed::{FeedOpts, FileFeed};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the feed's thread waits for a change before it looks whether
/// it has been told to stop, when the feed cannot be closed from outside:
/// the most a drop of the watch then waits for it.
const FEED_POLL: Duration = Duration::from_millis(50);
/// The same, for a feed that can be closed from outside (the drop closes
/// it): only a backstop, so an idle waiter's thread is all but asleep.
const FEED_POLL_CLOSABLE: Duration = Duration::from_secs(5);

/// A change feed drained on a thread of its own, waking on what concerns
/// one key. Dropping it stops and joins the thread, so the feed (and the
/// store connection it holds) is gone when the drop returns.
pub struct FeedWatch {
    stop: Arc<AtomicBool>,
    closer: Option<Box<dyn FnOnce() + Send>>,
    thread: Option<JoinHandle<()>>,
}

impl FeedWatch {
    pub fn start(mut feed: Box<dyn Changes>, key: String, wake: Wake) -> FeedWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let closer = feed.closer();
        let poll = match closer {
            Some(_) => FEED_POLL_CLOSABLE,
            None => FEED_POLL,
        };
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match feed.next(poll) {
                    Ok(Some(change)) if concerns(&change, &key) => wake(),
                    Ok(_) => {}
                    // The feed has ended: one last look, then the waiter's
                    // own safety re-checks carry on alone.
                    Err(_) => {
                        wake();
                        return;
                    }
                }
            }
        });
        FeedWatch {
            stop,
            closer,
            thread: Some(thread),
        }
    }
}

/// Whether `change` may have changed `key`: a change naming it, or news
/// that changes were missed (a resync, a reconnect after an outage).
fn concerns(change: &Change, key: &str) -> bool {
    match change {
        Change::Claim { key: k } => k == key,
        Change::Resync { .. } | Change::Connected { .. } => true,
        // A published copy is another host's claim, never this store's key.
        Change::Event(_)
        | Change::Misnamed { .. }
        | Change::Entry { .. }
        | Change::LogAppended(_)
        | Change::LogReset
        | Change::LogTrouble(_)
        | Change::PublishedEvent { .. }
        | Change::Disconnected { .. }
        | Change::Host { .. }
        | Change::HostHazards { .. }
        | Change::Published { .. } => false,
    }
}

impl KeyWatch for FeedWatch {}

impl Drop for FeedWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // A waiter that got its key exits right after this: it must not
        // wait out the thread's poll.
        if let Some(close) = self.closer.take() {
            close();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A file root's feed filtered to one key, and a pidfd on its local holder.
pub struct FileKeyWatch {
    _feed: FeedWatch,
    wake: Wake,
    /// Wakes the waiter when a local PID-bound holder exits.
    holder_exit: Option<PidWatch>,
}

impl FileKeyWatch {
    /// Call `wake` whenever `key`'s lockfile is created, written, renamed
    /// or removed (and whenever the feed says it lost track). The claims
    /// dir is created if missing: acquire would create it anyway, and the
    /// key's own dir is watched directly rather than through an ancestor.
    pub fn start(root: &Root, key: &str, wake: Wake) -> Result<FileKeyWatch, StoreError> {
        let dir = claims_dir(&root.root);
        std::fs::create_dir_all(&dir).map_err(|e| ClaimError::io("create", &dir, e))?;
        let feed = FileFeed::start(root, FeedOpts::key_only());
        Ok(FileKeyWatch {
            _feed: FeedWatch::start(Box::new(feed), key.to_string(), Arc::clone(&wake)),
            wake,
            holder_exit: None,
        })
    }
}

impl KeyWatch for FileKeyWatch {
    fn blocked_by(&mut self, b: &Blocker) {
        // Only a process of this machine can be watched; a pid named by
        // another host's record means nothing here.
        let local = b.host == crate::claims::hostname();
        let wake = Arc::clone(&self.wake);
        self.holder_exit = local.then(|| watch_pid(b.pid, move || wake())).flatten();
    }
}

/// A watch on one local process's exit; dropping it stops the watch.
#[derive(Debug)]
pub struct PidWatch {
    // Dropping the write end wakes the watching thread, which then ends.
    _cancel: std::os::fd::OwnedFd,
    // The hang-up alone is not enough: a child another thread is forking
    // holds a copy of the write end until it execs, so the exit may be
    // seen first. The flag, set before the end is closed, says a wake
    // after the drop is nobody's.
    dropped: Arc<AtomicBool>,
}

impl Drop for PidWatch {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
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
    let dropped = Arc::new(AtomicBool::new(false));
    let gone = Arc::clone(&dropped);
    let live = move || !gone.load(Ordering::SeqCst);
    std::thread::spawn(move || {
        let cancelled = cancel_rx.as_raw_fd();
        // Until the process exits: only then may its holder be judged dead.
        match poll_either(pidfd.as_raw_fd(), cancelled, -1) {
            Polled::First if live() => wake(),
            _ => return,
        }
        // Then until its parent reaps it, which is when it reads as gone.
        let mut delay_ms = 10;
        while delay_ms <= 640 {
            if !matches!(poll_either(cancelled, cancelled, delay_ms), Polled::Failed) {
                return;
            }
            if !crate::sys::pid_alive(pid) {
                if live() {
                    wake();
                }
                return;
            }
            delay_ms *= 2;
        }
    });
    Some(PidWatch {
        _cancel: cancel,
        dropped,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::mpsc::channel;

    #[test]
    fn a_pid_watch_wakes_when_its_process_exits_and_again_once_it_is_reaped() {
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
        // A child being forked elsewhere holds a copy of the cancel end
        // until it execs: the drop must silence the watch without the
        // hang-up.
        let forked_copy = d.as_ref().map(|d| d._cancel.try_clone().unwrap());
        drop(d);
        dropped.kill().unwrap();
        dropped.wait().unwrap();
        // Exited but not reaped: a zombie, which still reads as alive.
        watched.kill().unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok("watched"));
        watched.wait().unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok("watched"));
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        drop(forked_copy);
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

    /// A feed that plays a fixed list of changes, then stays quiet.
    struct Played(VecDeque<Change>);

    impl Changes for Played {
        fn next(&mut self, timeout: Duration) -> Result<Option<Change>, StoreError> {
            match self.0.pop_front() {
                Some(c) => Ok(Some(c)),
                None => {
                    std::thread::sleep(timeout);
                    Ok(None)
                }
            }
        }
    }

    #[test]
    fn a_feed_watch_wakes_for_its_key_a_resync_and_a_reconnect_but_not_for_other_keys() {
        let played = Played(VecDeque::from([
            Change::Claim {
                key: "other".into(),
            },
            Change::Disconnected { why: "down".into() },
            Change::Claim { key: "mine".into() },
            Change::Resync { why: "lost".into() },
            Change::Connected { revision: Some(9) },
        ]));
        let (tx, rx) = channel();
        let tx = std::sync::Mutex::new(tx);
        let wake: Wake = Arc::new(move || {
            let _ = tx.lock().map(|t| t.send(()));
        });
        let watch = FeedWatch::start(Box::new(played), "mine".into(), wake);
        for _ in 0..3 {
            assert_eq!(rx.recv_timeout(Duration::from_secs(2)), Ok(()));
        }
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
        drop(watch);
    }
}
