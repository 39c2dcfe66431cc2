//! CMD as a process group: resolved, forked blocked, let go once the claim
//! names it, signalled as a whole, and watched until none of it is left.
//!
//! CMD leads a process group of its own (as `timeout(1)` runs its command),
//! so that a stop reaches the processes CMD started as well as CMD: a
//! `sh -c 'work; more'` whose shell dies of SIGTERM would otherwise leave
//! its work running, orphaned, after the claim went to someone else. When
//! `run` holds the terminal's foreground, the group is given the terminal,
//! so CMD reads it and gets ^C as it would have run directly.

use super::super::output::EXIT_ERROR;
use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// CMD as exec wants it, resolved before anything is taken, so that a
/// command that cannot run is an error (exit 1) rather than a claim held
/// for nothing.
pub(super) struct Argv {
    program: CString,
    args: Vec<CString>,
}

impl Argv {
    pub(super) fn resolve(command: &[OsString]) -> Result<Argv, String> {
        let Some(first) = command.first() else {
            return Err("no command given after --".into());
        };
        // Words only: `out.error` sanitises them for a terminal.
        let shown = first.to_string_lossy().into_owned();
        let program = find_program(Path::new(first))
            .ok_or_else(|| format!("cannot run {shown}: not found, or not executable"))?;
        let cstr = |b: &[u8]| {
            CString::new(b).map_err(|_| format!("cannot run {shown}: an argument holds a NUL byte"))
        };
        Ok(Argv {
            program: cstr(program.as_os_str().as_bytes())?,
            args: command
                .iter()
                .map(|a| cstr(a.as_bytes()))
                .collect::<Result<_, _>>()?,
        })
    }

    pub(super) fn shown(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }
}

/// `execvp`'s search, done in the parent: a name with a slash is a path;
/// otherwise the first executable file of that name on `$PATH`.
fn find_program(name: &Path) -> Option<PathBuf> {
    let executable = |p: &Path| {
        let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: c is a valid NUL-terminated path for the call's duration.
        p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
    };
    if name.as_os_str().as_bytes().contains(&b'/') {
        return executable(name).then(|| name.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
}

/// A forked child waiting for the word to exec, already leading its own
/// process group.
pub(super) struct Blocked {
    pub(super) pid: libc::pid_t,
    go: OwnedFd,
}

impl Blocked {
    /// Fork; the child blocks reading a pipe. Everything it needs is built
    /// before the fork, and after it the child calls only async-signal-safe
    /// functions.
    pub(super) fn spawn(argv: &Argv, stdout_to_stderr: bool) -> std::io::Result<Blocked> {
        let mut ptrs: Vec<*const libc::c_char> = argv.args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let (read_end, go) = cloexec_pipe()?;
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        let (read_fd, write_fd) = (read_end.as_raw_fd(), go.as_raw_fd());
        // SAFETY: the child branch below calls only async-signal-safe
        // functions (close, dup2, setpgid, signal, prctl, getppid, read,
        // execv, _exit) on memory prepared before the fork.
        match unsafe { libc::fork() } {
            -1 => Err(std::io::Error::last_os_error()),
            0 => unsafe {
                child_wait_then_exec(parent, read_fd, write_fd, argv, &ptrs, stdout_to_stderr)
            },
            pid => {
                drop(read_end);
                // The child does the same; whichever runs first makes the
                // group exist before anything signals it (EACCES cannot
                // happen: the child has not exec'd).
                // SAFETY: pid is our own child.
                unsafe { libc::setpgid(pid, pid) };
                Ok(Blocked { pid, go })
            }
        }
    }

    /// Let the child exec, first giving its group the terminal when we
    /// hold the terminal's foreground.
    pub(super) fn go(self) -> std::io::Result<Running> {
        use std::io::Write;
        let pid = self.pid;
        let terminal = Terminal::hand_to(pid);
        let mut pipe = std::fs::File::from(self.go);
        match pipe.write_all(b"g") {
            Ok(()) => Ok(Running { pid, terminal }),
            Err(e) => {
                if let Some(t) = &terminal {
                    t.take_back(pid);
                }
                kill_and_reap(pid);
                Err(e)
            }
        }
    }

    /// The claim was not had: CMD must never run. The pipe closing alone
    /// would make it exit; the kill makes sure, and the reap leaves no
    /// zombie.
    pub(super) fn abort(self) {
        let pid = self.pid;
        drop(self.go);
        kill_and_reap(pid);
    }
}

/// A pipe whose ends are closed on exec, so CMD never inherits them.
pub(super) fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both were just created and are owned here alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn kill_and_reap(pid: libc::pid_t) {
    // SAFETY: pid is our own unreaped child, so it cannot name another process.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut st = 0;
        libc::waitpid(pid, &mut st, 0);
    }
}

/// The child side of [`Blocked::spawn`].
///
/// # Safety
/// Call only in a freshly forked child; never returns.
unsafe fn child_wait_then_exec(
    parent: libc::pid_t,
    read_fd: i32,
    write_fd: i32,
    argv: &Argv,
    ptrs: &[*const libc::c_char],
    stdout_to_stderr: bool,
) -> ! {
    libc::close(write_fd);
    // Its own group from the start: a ^C while `run` still waits for the
    // key reaches `run` alone, which then aborts the child itself.
    libc::setpgid(0, 0);
    if stdout_to_stderr {
        // Under --json our stdout carries exactly one document.
        libc::dup2(2, 1);
    }
    // Rust ignores SIGPIPE; an ignored disposition survives exec, and CMD
    // is owed the default.
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    // Before exec, the parent's death ends the wait below (the pipe
    // closes); after it, the guard (see `guard.rs`) stops the whole group.
    // This reaches CMD alone, even if the guard itself was killed.
    #[cfg(target_os = "linux")]
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
    if libc::getppid() != parent {
        libc::_exit(127);
    }
    let mut b = 0u8;
    let n = loop {
        let n = libc::read(read_fd, (&mut b as *mut u8).cast(), 1);
        // Reads errno only: no allocation.
        if n == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break n;
    };
    if n != 1 || b != b'g' {
        // The parent gave up (or died) without the word: never run CMD.
        libc::_exit(127);
    }
    libc::execv(argv.program.as_ptr(), ptrs.as_ptr());
    libc::_exit(127);
}

/// The controlling terminal while CMD's group holds its foreground.
struct Terminal {
    tty: OwnedFd,
    /// Our own group, the foreground's owner before CMD and after it.
    ours: libc::pid_t,
}

impl Terminal {
    /// Give the foreground to `pgid` when it is ours to give: only a `run`
    /// in the foreground hands it on, so a `run &` never steals it.
    fn hand_to(pgid: libc::pid_t) -> Option<Terminal> {
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        let tty = OwnedFd::from(tty);
        // SAFETY: getpgrp has no preconditions; tcgetpgrp reads an open fd.
        let ours = unsafe { libc::getpgrp() };
        if unsafe { libc::tcgetpgrp(tty.as_raw_fd()) } != ours {
            return None;
        }
        // From here on `run` is a background process of its terminal: its
        // loss line on stderr and its taking the terminal back must not
        // stop it with SIGTTOU (under `stty tostop`). CMD was forked with
        // the default disposition and keeps it.
        // SAFETY: setting a disposition to SIG_IGN has no preconditions.
        unsafe { libc::signal(libc::SIGTTOU, libc::SIG_IGN) };
        // SAFETY: tty is open; pgid is our child's group, in our session.
        if unsafe { libc::tcsetpgrp(tty.as_raw_fd(), pgid) } != 0 {
            return None;
        }
        Some(Terminal { tty, ours })
    }

    /// Take the foreground back once CMD's group no longer needs it, unless
    /// someone else (the shell) already took it.
    fn take_back(&self, pgid: libc::pid_t) {
        let fd = self.tty.as_raw_fd();
        // SAFETY: fd is open; SIGTTOU is ignored (see `hand_to`).
        unsafe {
            if libc::tcgetpgrp(fd) == pgid {
                libc::tcsetpgrp(fd, self.ours);
            }
        }
    }
}

/// CMD after exec: the leader of its process group.
pub(super) struct Running {
    pid: libc::pid_t,
    terminal: Option<Terminal>,
}

impl Running {
    /// Signal the whole group. Only ever called before the leader is
    /// reaped: its zombie keeps the group id from being reused.
    pub(super) fn signal(&self, sig: i32) {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(-self.pid, sig) };
        // A stopped process (^Z, or SIGTTIN from a read of the terminal)
        // acts on a signal only once continued: as a shell's `kill` does
        // for a stopped job, the ending signals are followed by SIGCONT.
        if matches!(
            sig,
            libc::SIGTERM | libc::SIGHUP | libc::SIGINT | libc::SIGQUIT
        ) {
            // SAFETY: as above.
            unsafe { libc::kill(-self.pid, libc::SIGCONT) };
        }
    }

    /// The leader's end, if it has ended, WITHOUT reaping it. Until
    /// [`Running::reap`] the zombie keeps its pid, so the claim naming it
    /// still reads live: a waiter cannot reclaim it as stale in the instant
    /// between CMD's exit and our release, and the release is what it meets.
    pub(super) fn exited(&self) -> Option<ChildStatus> {
        // SAFETY: siginfo_t is a plain C struct, valid when zeroed.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: info is a valid out-pointer; the pid is our own child.
        if unsafe { libc::waitid(libc::P_PID, self.pid as libc::id_t, &mut info, flags) } != 0 {
            // ECHILD cannot happen for our own child; were it to, waiting
            // on would hang forever, so it is reported as an unknown end.
            return Some(ChildStatus::Unknown);
        }
        // SAFETY: waitid filled info (si_pid 0: nothing has exited yet).
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        match (pid, info.si_code) {
            (0, _) => None,
            (_, libc::CLD_EXITED) => Some(ChildStatus::Exited(status)),
            _ => Some(ChildStatus::Signaled(status)),
        }
    }

    /// Whether any process of the group but the leader's zombie still runs.
    pub(super) fn group_lives(&self) -> bool {
        group_lives(self.pid)
    }

    /// Job control, when CMD's group holds our terminal: a ^Z stops the
    /// group, but the shell waits on `run`, which would then sit there with
    /// the terminal given to a stopped group. So `run` takes the terminal
    /// back and stops too, as the shell expects of its job; once continued
    /// (`fg` or `bg`) it hands the terminal on again if it has it. True
    /// when it did: the caller continues the group (with [`Running::resume`]),
    /// unless the claim ran out meanwhile.
    pub(super) fn follow_stop(&self) -> bool {
        let Some(t) = &self.terminal else {
            return false;
        };
        // SAFETY: siginfo_t is a plain C struct, valid when zeroed.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // Consumes the stop report (it reaps nothing), so one ^Z is
        // followed once.
        let flags = libc::WSTOPPED | libc::WNOHANG;
        // SAFETY: info is a valid out-pointer; the pid is our own child.
        let got = unsafe { libc::waitid(libc::P_PID, self.pid as libc::id_t, &mut info, flags) };
        // SAFETY: waitid filled info (si_pid 0: no stop to report).
        if got != 0 || unsafe { info.si_pid() } == 0 {
            return false;
        }
        t.take_back(self.pid);
        // SAFETY: raise has no preconditions; SIGSTOP cannot be caught, so
        // this returns only once the shell continues us. (SIGTSTP would be
        // discarded in an orphaned process group.)
        unsafe { libc::raise(libc::SIGSTOP) };
        let fd = t.tty.as_raw_fd();
        // SAFETY: fd is open; SIGTTOU is ignored (see `Terminal::hand_to`).
        unsafe {
            if libc::tcgetpgrp(fd) == t.ours {
                libc::tcsetpgrp(fd, self.pid);
            }
        }
        true
    }

    /// Continue the group after [`Running::follow_stop`].
    pub(super) fn resume(&self) {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(-self.pid, libc::SIGCONT) };
    }

    /// Give the terminal back and collect the zombie, once the claim is
    /// settled.
    pub(super) fn reap(self) {
        if let Some(t) = &self.terminal {
            t.take_back(self.pid);
        }
        let mut st = 0;
        // SAFETY: st is a valid out-pointer; the pid is our own child.
        unsafe { libc::waitpid(self.pid, &mut st, 0) };
    }
}

/// Whether a process of group `pgid` is alive (zombies are not). Read from
/// /proc: the group's members are mostly not our children, so no wait(2)
/// can tell.
#[cfg(target_os = "linux")]
pub(crate) fn group_lives(pgid: libc::pid_t) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        // SAFETY: kill with signal 0 only probes.
        return unsafe { libc::kill(-pgid, 0) } == 0;
    };
    dir.filter_map(Result::ok)
        .filter(|e| e.file_name().as_bytes().iter().all(u8::is_ascii_digit))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            // After the command name's closing paren: state, ppid, pgrp.
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut f = rest.split_ascii_whitespace();
            let state = f.next().unwrap_or("Z");
            let pgrp = f.nth(1).and_then(|p| p.parse::<libc::pid_t>().ok());
            pgrp == Some(pgid) && state != "Z" && state != "X"
        })
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn group_lives(pgid: libc::pid_t) -> bool {
    // Zombies count here: the stop then lasts until its SIGKILL.
    // SAFETY: kill with signal 0 only probes.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// How CMD ended.
#[derive(Debug, Clone, Copy)]
pub(super) enum ChildStatus {
    Exited(i32),
    Signaled(i32),
    Unknown,
}

impl ChildStatus {
    pub(super) fn code(self) -> Option<i32> {
        match self {
            ChildStatus::Exited(c) => Some(c),
            _ => None,
        }
    }

    pub(super) fn signal(self) -> Option<i32> {
        match self {
            ChildStatus::Signaled(s) => Some(s),
            _ => None,
        }
    }

    /// As a shell reports it: the exit code, or 128 + the signal.
    pub(super) fn shell_code(self) -> u8 {
        match self {
            ChildStatus::Exited(c) => c as u8,
            ChildStatus::Signaled(s) => 128u8.saturating_add(s as u8),
            ChildStatus::Unknown => EXIT_ERROR,
        }
    }
}
