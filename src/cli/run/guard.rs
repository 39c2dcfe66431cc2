//! The guard: a small forked process that the claim is bound to, and that
//! stops CMD's whole group if `run` dies without saying goodbye (kill -9,
//! an OOM kill, a crash).
//!
//! Why a guard and not the alternatives: PR_SET_PDEATHSIG reaches only the
//! direct child, never what CMD started; a subreaper (PR_SET_CHILD_SUBREAPER)
//! adopts CMD's orphans only while `run` lives, so it can do nothing once
//! `run` is the one killed. A guard outlives `run` by design: it holds the
//! read end of a pipe whose only write end is `run`'s, so `run`'s death in
//! any form is an end-of-file here, with no polling and no pid that could be
//! reused. `run` keeps it told of the instant by which CMD must be dead (the
//! claim's deadline: a lease's, or a TTL's `expires_at`, less the margin;
//! or a stop already under way): the guard sends SIGKILL at that instant
//! whether or not `run` still lives, so neither a `run` blocked in a store
//! call, nor one stopped (SIGSTOP), nor one killed mid-way can let CMD
//! outlive the claim.
//!
//! On a file store the claim names the guard's pid, not CMD's: the claim
//! must read alive for as long as any process of CMD's group runs, and the
//! guard is the one process that lives exactly that long. It lives until
//! `run` disarms it (after the release, once the group is gone), or, when
//! `run` is gone, until it has seen no process of the group left; only then
//! does the claim read stale. It was forked before the claim was made, so
//! the liveness judge (pid and process start time) finds it the claim's own.
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

    /// The guard's pid: the process the claim is bound to.
    pub(super) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Whether the guard has ended (killed by someone: it never exits on
    /// its own while `run` lives). Leaves it unreaped.
    pub(super) fn gone(&self) -> bool {
        // SAFETY: siginfo_t is a plain C struct, valid when zeroed.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: info is a valid out-pointer; the pid is our own child.
        let got = unsafe { libc::waitid(libc::P_PID, self.pid as libc::id_t, &mut info, flags) };
        // SAFETY: waitid filled info (si_pid 0: nothing has exited yet).
        got != 0 || unsafe { info.si_pid() } != 0
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
    // `run` is gone without a word: stop the group as `run` would have
    // (SIGCONT, so a stopped group acts on the SIGTERM), and hold the claim
    // until none of it is left, however long that takes after SIGKILL (a
    // process in the kernel dies only when it leaves it).
    libc::kill(-pgid, libc::SIGTERM);
    libc::kill(-pgid, libc::SIGCONT);
    let kill_at = (monotonic_ms() + KILL_GRACE.as_millis() as i64).min(kill_by);
    let mut killed = false;
    while group_lives(pgid) {
        if !killed && monotonic_ms() >= kill_at {
            libc::kill(-pgid, libc::SIGKILL);
            killed = true;
        }
        let nap = libc::timespec {
            tv_sec: 0,
            tv_nsec: POLL_MS * 1_000_000,
        };
        libc::nanosleep(&nap, std::ptr::null_mut());
    }
    libc::_exit(0)
}

/// Whether any process of group `pgid` still runs. A zombie does not: its
/// code has ended, and a slow reaper must not keep the claim. A member that
/// changed to a user whose processes /proc hides from us (hidepid) is seen
/// by the probe's EPERM, and counts.
///
/// # Safety
/// Async-signal-safe: only system calls, on the stack.
unsafe fn group_lives(pgid: libc::pid_t) -> bool {
    let hidden = libc::kill(-pgid, 0) != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    hidden || proc_has_running_member(pgid).unwrap_or_else(|| libc::kill(-pgid, 0) == 0)
}

/// /proc read as the guard may: getdents64 and each `/proc/PID/stat`
/// into stack buffers, no allocation. None when /proc cannot be listed.
///
/// # Safety
/// Async-signal-safe.
#[cfg(target_os = "linux")]
unsafe fn proc_has_running_member(pgid: libc::pid_t) -> Option<bool> {
    let dir = libc::open(
        c"/proc".as_ptr(),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
    );
    if dir < 0 {
        return None;
    }
    // linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), name.
    let mut buf = [0u8; 4096];
    let mut found = false;
    'listing: loop {
        let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
        if n <= 0 {
            break;
        }
        let mut off = 0usize;
        while off + 19 < n as usize {
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            if reclen == 0 || off + reclen > n as usize {
                break 'listing;
            }
            let name = &buf[off + 19..off + reclen];
            let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(name.len())];
            if !name.is_empty() && name.iter().all(u8::is_ascii_digit) && runs_in(name, pgid) {
                found = true;
                break 'listing;
            }
            off += reclen;
        }
    }
    libc::close(dir);
    Some(found)
}

#[cfg(not(target_os = "linux"))]
unsafe fn proc_has_running_member(_: libc::pid_t) -> Option<bool> {
    None
}

/// Whether the process named `pid` (decimal digits) is in group `pgid`
/// and not a zombie, from its `/proc/PID/stat`.
///
/// # Safety
/// Async-signal-safe.
#[cfg(target_os = "linux")]
unsafe fn runs_in(pid: &[u8], pgid: libc::pid_t) -> bool {
    let mut path = [0u8; 32];
    let (head, tail) = (b"/proc/", b"/stat\0");
    if head.len() + pid.len() + tail.len() > path.len() {
        return false;
    }
    path[..head.len()].copy_from_slice(head);
    path[head.len()..head.len() + pid.len()].copy_from_slice(pid);
    path[head.len() + pid.len()..head.len() + pid.len() + tail.len()].copy_from_slice(tail);
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        // Gone since the listing.
        return false;
    }
    // "pid (comm) S ppid pgrp ...": comm is at most 16 bytes, so the
    // fields wanted are well within the first 128.
    let mut stat = [0u8; 128];
    let n = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
    libc::close(fd);
    if n <= 0 {
        return false;
    }
    let stat = &stat[..n as usize];
    // After the command name's closing paren (the last one: a name may
    // hold parens): state, ppid, pgrp.
    let Some(paren) = stat.iter().rposition(|b| *b == b')') else {
        return false;
    };
    let mut fields = stat[paren + 1..]
        .split(|b| *b == b' ')
        .filter(|f| !f.is_empty());
    let state = fields.next().and_then(|f| f.first().copied());
    let pgrp = fields.nth(1).and_then(|f| {
        f.iter().try_fold(0i64, |acc, d| {
            d.is_ascii_digit()
                .then(|| acc * 10 + i64::from(d - b'0'))
                .filter(|v| *v <= i64::from(i32::MAX))
        })
    });
    pgrp == Some(i64::from(pgid)) && !matches!(state, Some(b'Z' | b'X') | None)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};
    use std::time::Duration;

    /// A process group led by a shell that ignores SIGTERM (so do the
    /// `sleep`s it starts: an ignored signal stays ignored across exec),
    /// killed whole on drop, so a failing test leaves nothing running.
    struct Deaf(Child);

    impl Drop for Deaf {
        fn drop(&mut self) {
            // SAFETY: kill has no memory preconditions; the leader is our
            // child and unreaped until `wait` below, so the group id is ours.
            unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
            let _ = self.0.wait();
        }
    }

    /// A group that ignores SIGTERM, returned only once it does: a
    /// SIGTERM that came before the trap would end it at once.
    fn deaf_group() -> Deaf {
        use std::io::BufRead;
        let mut child = Command::new("sh")
            .args([
                "-c",
                "trap '' TERM; echo deaf; exec >/dev/null; while :; do sleep 0.05; done",
            ])
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let out = child.stdout.take().expect("its stdout");
        let mut line = String::new();
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .expect("the group's word");
        assert_eq!(line.trim(), "deaf", "the group never said it ignores TERM");
        Deaf(child)
    }

    /// `pid`'s state letter and process group, from /proc.
    fn stat(pid: &str) -> Option<(char, i32)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = stat.rsplit_once(')')?;
        let mut f = rest.split_whitespace();
        let state = f.next()?.chars().next()?;
        Some((state, f.nth(1)?.parse().ok()?))
    }

    /// Whether `pid` still runs (a zombie does not).
    fn runs(pid: i32) -> bool {
        stat(&pid.to_string()).is_some_and(|(s, _)| !matches!(s, 'Z' | 'X'))
    }

    /// Whether any process of group `pgid` still runs (zombies do not).
    fn group_runs(pgid: i32) -> bool {
        std::fs::read_dir("/proc")
            .expect("/proc")
            .filter_map(Result::ok)
            .filter_map(|e| stat(&e.file_name().to_string_lossy()))
            .any(|(s, g)| g == pgid && !matches!(s, 'Z' | 'X'))
    }

    #[test]
    fn the_guard_kills_the_group_at_its_deadline_while_run_says_nothing_and_lives_on() {
        let mut group = deaf_group();
        let pgid = group.0.id() as libc::pid_t;
        let mut guard = Guard::start(pgid).expect("guard");
        let told = Instant::now();
        // `run` tells the deadline once, then is stopped or blocked: from
        // here on only the guard acts.
        guard.kill_by(Some(told + Duration::from_millis(300)));
        let ended = loop {
            if let Some(st) = group.0.try_wait().expect("try_wait") {
                break st;
            }
            // A bound for a loaded machine, not a timing claim: without the
            // guard the group would run for ever.
            assert!(told.elapsed() < Duration::from_secs(10), "never killed");
            std::thread::sleep(Duration::from_millis(5));
        };
        let took = told.elapsed();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(ended.signal(), Some(libc::SIGKILL));
        assert!(took >= Duration::from_millis(290), "killed early: {took:?}");
        // The claim is bound to the guard: it stays until `run` says.
        assert!(
            !guard.gone() && runs(guard.pid()),
            "the guard left with the group"
        );
        guard.disarm();
    }

    #[test]
    fn a_guard_whose_run_is_gone_lives_exactly_until_no_process_of_the_group_is_left() {
        let group = deaf_group();
        let pgid = group.0.id() as libc::pid_t;
        let guard = Guard::start(pgid).expect("guard");
        let guard_pid = guard.pid();
        let mut g = guard;
        // The group ignores the guard's SIGTERM; the deadline shortens the
        // grace so SIGKILL comes 400 ms after `run` is gone.
        g.kill_by(Some(Instant::now() + Duration::from_millis(400)));
        let gone = Instant::now();
        // `run` dies without a word: its end of the pipe closes.
        drop(g);
        let (mut group_end, mut guard_end) = (None, None);
        let mut members_seen_after = false;
        while guard_end.is_none() {
            assert!(
                gone.elapsed() < Duration::from_secs(10),
                "the guard never left"
            );
            // Read before the guard: a guard seen gone after a group seen
            // alive was gone while the group lived.
            let lives = group_runs(pgid);
            let guard_runs = runs(guard_pid);
            if lives && !guard_runs {
                panic!("the guard left while the group it holds the claim for still lives");
            }
            if !lives && group_end.is_none() {
                group_end = Some(Instant::now());
            }
            if lives && gone.elapsed() > Duration::from_millis(100) {
                members_seen_after = true;
            }
            if !guard_runs {
                guard_end = Some(Instant::now());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        drop(group);
        let mut st = 0;
        // SAFETY: the guard is our own child; reap it.
        unsafe { libc::waitpid(guard_pid, &mut st, 0) };
        assert!(
            members_seen_after,
            "the group never outlived the guard's SIGTERM"
        );
        let (group_end, guard_end) = (group_end.expect("group"), guard_end.expect("guard"));
        // Bound for a loaded machine: the guard polls every 50 ms.
        let after = guard_end.saturating_duration_since(group_end);
        assert!(
            after < Duration::from_secs(2),
            "group gone {} ms after run, guard {} ms after the group",
            (group_end - gone).as_millis(),
            after.as_millis()
        );
    }
}
