//! The guard: a small forked process that stops CMD's whole group if `run`
//! dies without saying goodbye (kill -9, an OOM kill, a crash).
//!
//! Why a guard and not the alternatives: PR_SET_PDEATHSIG reaches only the
//! direct child, never what CMD started; a subreaper (PR_SET_CHILD_SUBREAPER)
//! adopts CMD's orphans only while `run` lives, so it can do nothing once
//! `run` is the one killed. A guard outlives `run` by design: it holds the
//! read end of a pipe whose only write end is `run`'s, so `run`'s death in
//! any form is an end-of-file here, with no polling and no pid that could be
//! reused. `run` keeps it told of the instant by which CMD must be dead (the
//! lease's deadline, or a stop already under way): the guard sends SIGKILL
//! at that instant whether or not `run` still lives, so neither a `run`
//! blocked in a store call nor one killed mid-way can let CMD outlive the
//! lease.
//!
//! After the fork the guard calls only async-signal-safe functions (the
//! parent may run a store client's threads), and holds no descriptor but
//! its pipe: a test's or a shell's pipe on `run`'s stdout must see EOF when
//! `run` and CMD are gone, not when the guard is.

use super::child::cloexec_pipe;
use super::stop::KILL_GRACE;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::Instant;

/// One message to the guard: a tag and a monotonic time in ms. Pipe writes
/// of up to PIPE_BUF bytes are atomic, so the reader never sees half of one.
const MSG: usize = 9;
/// "CMD must be dead by this monotonic ms" (`i64::MAX`: no such instant).
const KILL_BY: u8 = b'k';
/// "The group is settled: exit without touching it."
const DISARM: u8 = b'd';
/// How often a guard that took over looks whether the group is gone.
const POLL_MS: i64 = 50;

/// `run`'s side of the guard.
pub(super) struct Guard {
    pid: libc::pid_t,
    tx: Option<std::fs::File>,
    told: Option<Instant>,
}

impl Guard {
    /// Fork a guard over process group `pgid`.
    pub(super) fn start(pgid: libc::pid_t) -> std::io::Result<Guard> {
        let (rx, tx) = cloexec_pipe()?;
        let rx_fd = rx.as_raw_fd();
        // SAFETY: the child branch calls only async-signal-safe functions
        // (setpgid, open, dup2, close, syscall(close_range), poll, read,
        // clock_gettime, kill, nanosleep, _exit) and never returns.
        match unsafe { libc::fork() } {
            -1 => Err(std::io::Error::last_os_error()),
            0 => unsafe { guard_main(rx_fd, pgid) },
            pid => {
                drop(rx);
                Ok(Guard {
                    pid,
                    tx: Some(std::fs::File::from(tx)),
                    told: None,
                })
            }
        }
    }

    /// Tell the guard by when CMD must be dead, if `run` dies. Said again
    /// only when the instant moved, so a lease renewed every 2 s costs one
    /// 9-byte write each time.
    pub(super) fn kill_by(&mut self, at: Option<Instant>) {
        if self.told == at {
            return;
        }
        self.told = at;
        let ms = at.map_or(i64::MAX, |at| {
            let now = Instant::now();
            let ahead = at.saturating_duration_since(now).as_millis() as i64;
            let behind = now.saturating_duration_since(at).as_millis() as i64;
            monotonic_ms() + ahead - behind
        });
        self.send(KILL_BY, ms);
    }

    /// The group is settled (CMD ended, or never ran): the guard exits
    /// without touching it. Said before the leader is reaped, while its pid
    /// cannot have been reused by anyone else's group.
    pub(super) fn disarm(mut self) {
        self.send(DISARM, 0);
        self.tx = None;
        let mut st = 0;
        // SAFETY: st is a valid out-pointer; the pid is our own child.
        unsafe { libc::waitpid(self.pid, &mut st, 0) };
    }

    fn send(&mut self, tag: u8, ms: i64) {
        let mut msg = [0u8; MSG];
        msg[0] = tag;
        msg[1..].copy_from_slice(&ms.to_ne_bytes());
        if let Some(tx) = &mut self.tx {
            // A guard that is gone cannot be helped; CMD still has its
            // parent-death signal.
            let _ = tx.write_all(&msg);
        }
    }
}

fn monotonic_ms() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// The guard process.
///
/// # Safety
/// Call only in a freshly forked child; never returns.
unsafe fn guard_main(rx: i32, pgid: libc::pid_t) -> ! {
    // A group of its own: a ^C or a `kill -- -PGID` aimed at `run`'s group
    // must not take the guard with it.
    libc::setpgid(0, 0);
    let rx = keep_only(rx);
    let mut kill_by = i64::MAX;
    let mut msg = [0u8; MSG];
    loop {
        // The deadline is kept here too, not only by `run`: a `run` whose
        // loop is blocked in a store call past it must not delay SIGKILL.
        if monotonic_ms() >= kill_by {
            libc::kill(-pgid, libc::SIGKILL);
            kill_by = i64::MAX;
        }
        let wait = (kill_by - monotonic_ms()).clamp(0, i32::MAX as i64) as i32;
        let mut fds = libc::pollfd {
            fd: rx,
            events: libc::POLLIN,
            revents: 0,
        };
        match libc::poll(&mut fds, 1, if kill_by == i64::MAX { -1 } else { wait }) {
            0 => continue,
            -1 if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => continue,
            _ => {}
        }
        if !read_full(rx, &mut msg) {
            break;
        }
        match msg[0] {
            DISARM => libc::_exit(0),
            KILL_BY => {
                let mut ms = [0u8; 8];
                ms.copy_from_slice(&msg[1..]);
                kill_by = i64::from_ne_bytes(ms);
            }
            _ => {}
        }
    }
    // `run` is gone without a word: stop the group as `run` would have.
    libc::kill(-pgid, libc::SIGTERM);
    let kill_at = (monotonic_ms() + KILL_GRACE.as_millis() as i64).min(kill_by);
    while monotonic_ms() < kill_at {
        if libc::kill(-pgid, 0) != 0 {
            libc::_exit(0);
        }
        let nap = libc::timespec {
            tv_sec: 0,
            tv_nsec: POLL_MS * 1_000_000,
        };
        libc::nanosleep(&nap, std::ptr::null_mut());
    }
    libc::kill(-pgid, libc::SIGKILL);
    libc::_exit(0)
}

/// Point stdio at /dev/null and close every other descriptor but `rx`,
/// which ends up as descriptor 3.
///
/// # Safety
/// Only in the freshly forked guard.
unsafe fn keep_only(rx: i32) -> i32 {
    const KEPT: i32 = 3;
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
    for fd in 0..3 {
        if null >= 0 && null != fd {
            libc::dup2(null, fd);
        }
    }
    if rx != KEPT {
        libc::dup2(rx, KEPT);
    }
    #[cfg(target_os = "linux")]
    let closed = libc::syscall(libc::SYS_close_range, KEPT + 1, u32::MAX, 0) == 0;
    #[cfg(not(target_os = "linux"))]
    let closed = false;
    if !closed {
        for fd in KEPT + 1..4096 {
            libc::close(fd);
        }
    }
    KEPT
}

/// Read one whole message; false on end-of-file (or any error but EINTR).
///
/// # Safety
/// `fd` is an open descriptor.
unsafe fn read_full(fd: i32, buf: &mut [u8; MSG]) -> bool {
    let mut got = 0;
    while got < MSG {
        let n = libc::read(fd, buf[got..].as_mut_ptr().cast(), MSG - got);
        if n > 0 {
            got += n as usize;
        } else if n == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        } else {
            return false;
        }
    }
    true
}
