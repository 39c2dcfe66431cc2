//! `claimtop run KEY --holder H [--ttl DUR] [--wait[=DUR]] -- CMD [ARGS...]`:
//! hold a claim for exactly as long as a command runs.
//!
//! The claim is bound to CMD's own pid, so CMD is forked first and kept
//! blocked on a pipe until the claim names it; only then does it exec. If
//! the claim cannot be had, the blocked child is killed and reaped and CMD
//! never ran. While CMD runs, a [`Hold`] renews a TTL claim (or has the
//! store keep its lease alive) and notices its loss; INT, TERM and HUP sent to us are passed on; when CMD exits the
//! claim is released and its status becomes ours.

use super::args::parse_dur;
use super::output::{diag, record_json, CmdResult, Out, EXIT_DECLINED, EXIT_ERROR};
use super::wait::{deadline, say_blocked, Feed, Msg};
use crate::claims::wait::{self, Hold, Lost, SystemClock, Waited};
use crate::claims::{validate_inputs, AcquireOpts, AcquireOutcome, Adopt, ReleaseOutcome};
use crate::store::{Store, StoreError, Tenure};
use clap::Args;
use serde_json::{json, Value};
use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// The claim was lost while CMD ran (force-released, replaced, renew
/// refused): CMD was told to stop.
pub const EXIT_LOST: u8 = 4;
/// How long CMD has to stop after SIGTERM before SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The claim key (e.g. node:abc123)
    pub key: String,
    /// Who claims it (e.g. pty:worker-1)
    #[arg(long, value_name = "H")]
    pub holder: String,
    /// Also bound the claim by a TTL, renewed while CMD runs: 1h, 30m, 3600s, or bare seconds
    #[arg(long, value_name = "DUR", value_parser = parse_dur, allow_hyphen_values = true)]
    pub ttl: Option<i64>,
    /// While another holder has KEY, wait for it: up to DUR, else forever (exit 3 when DUR passes)
    #[arg(long, value_name = "DUR", num_args = 0..=1, require_equals = true, value_parser = parse_dur)]
    pub wait: Option<Option<i64>>,
    /// Why, for the operator reading the claim
    #[arg(long, value_name = "R")]
    pub reason: Option<String>,
    /// The command to run while holding KEY, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

pub fn run(store: &dyn Store, a: RunArgs, out: &mut Out) -> CmdResult {
    if let Err(e) = validate_inputs(&a.key, &a.holder, a.ttl) {
        return out.error(&e.to_string());
    }
    if a.ttl.is_none() && store.leased() {
        return super::claim_cmds::store_error(out, StoreError::TtlRequired);
    }
    // Forked before the feed starts its threads, so on a file store the
    // child runs only our own code until it execs. A store's client may
    // already run threads (etcd): the child then only reads a pipe and
    // execs, all async-signal-safe (see child_wait_then_exec).
    let (argv, child) = match Blocked::start(&a.command, out) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let mut feed = match Feed::start(store, &a.key, true) {
        Ok(f) => f,
        Err(e) => {
            child.abort();
            return out.error(&e.to_string());
        }
    };
    let opts = child_opts(&a, &child);
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
    let child = match child.go() {
        Ok(c) => c,
        Err(e) => {
            // The child never got the word: it is killed and reaped, and
            // the claim that named it is given back.
            let _ = hold.release();
            return out.error(&format!("cannot start {}: {e}", argv.shown()));
        }
    };
    let ended = supervise(child, hold, &mut feed, &a.key);
    finish(out, &a.key, ended)
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
struct Ended {
    status: ChildStatus,
    lost: Option<Lost>,
    record: crate::claims::ClaimRecord,
    /// The tenure's revision and lease, on a store that has them.
    tenure: Option<Tenure>,
    released: Option<Result<ReleaseOutcome, String>>,
}

/// Keep the claim while the child runs: renew, re-check on every change,
/// pass signals on, and stop the child if the claim is lost.
fn supervise(child: Running, mut hold: Hold<'_>, feed: &mut Feed, key: &str) -> Ended {
    let mut lost: Option<Lost> = None;
    let mut kill_at: Option<Instant> = None;
    let status = loop {
        if let Some(status) = child.exited() {
            break status;
        }
        let timeout = match (&lost, kill_at) {
            (None, _) => hold.due_in(),
            (Some(_), Some(at)) => at.saturating_duration_since(Instant::now()),
            // SIGKILL sent: only SIGCHLD is left to wait for.
            (Some(_), None) => Duration::from_secs(3600),
        };
        let verdict = match feed.rx.recv_timeout(timeout) {
            // Nothing can wake us any more (cannot happen while the feed
            // lives): fall back to looking for the child's end now and then.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(timeout.min(Duration::from_millis(50)));
                continue;
            }
            Ok(Msg::Signal { sig, sent }) => {
                // A terminal's ^C already reached the child, which shares
                // our process group; only what was aimed at us is passed on.
                if sig != libc::SIGCHLD && sent {
                    child.signal(sig);
                }
                continue;
            }
            Ok(Msg::Changed) if lost.is_none() => hold.changed(),
            Ok(Msg::Changed) => continue,
            Err(RecvTimeoutError::Timeout) => match kill_at {
                Some(at) if Instant::now() >= at => {
                    child.signal(libc::SIGKILL);
                    kill_at = None;
                    continue;
                }
                Some(_) => continue,
                None if lost.is_none() => hold.tick(),
                None => continue,
            },
        };
        match verdict {
            Ok(None) => {}
            Ok(Some(why)) => {
                diag(&format!(
                    "lost the claim on {key} while the command ran: {why}; \
                     sending it SIGTERM (SIGKILL in {}s)",
                    KILL_GRACE.as_secs()
                ));
                child.signal(libc::SIGTERM);
                kill_at = Some(Instant::now() + KILL_GRACE);
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
    let released = lost
        .is_none()
        .then(|| hold.release().map_err(|e| e.to_string()));
    child.reap();
    Ended {
        status,
        lost,
        record,
        tenure,
        released,
    }
}

/// The one report of a run, and its exit status.
fn finish(out: &mut Out, key: &str, e: Ended) -> CmdResult {
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

/// CMD as exec wants it, resolved before anything is taken, so that a
/// command that cannot run is an error (exit 1) rather than a claim held
/// for nothing.
struct Argv {
    program: CString,
    args: Vec<CString>,
}

impl Argv {
    fn resolve(command: &[OsString]) -> Result<Argv, String> {
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

    fn shown(&self) -> String {
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

/// A forked child waiting for the word to exec.
struct Blocked {
    pid: libc::pid_t,
    go: std::os::fd::OwnedFd,
}

impl Blocked {
    /// Fork; the child blocks reading a pipe. Everything it needs is built
    /// before the fork, and after it the child calls only async-signal-safe
    /// functions.
    /// CMD resolved and forked, blocked until [`Blocked::go`]; or the
    /// command's error report when it cannot be.
    fn start(command: &[OsString], out: &mut Out) -> Result<(Argv, Blocked), CmdResult> {
        let argv = Argv::resolve(command).map_err(|e| out.error(&e))?;
        match Blocked::spawn(&argv, out.json_mode()) {
            Ok(child) => Ok((argv, child)),
            Err(e) => Err(out.error(&format!("cannot start {}: {e}", argv.shown()))),
        }
    }

    fn spawn(argv: &Argv, stdout_to_stderr: bool) -> std::io::Result<Blocked> {
        use std::os::fd::{FromRawFd, OwnedFd};
        let mut ptrs: Vec<*const libc::c_char> = argv.args.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let mut fds = [0; 2];
        // SAFETY: fds has room for the two descriptors pipe writes.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let [read_fd, write_fd] = fds;
        // SAFETY: both were just created and are owned here alone.
        let (read_end, go) = unsafe {
            (
                OwnedFd::from_raw_fd(read_fd),
                OwnedFd::from_raw_fd(write_fd),
            )
        };
        // Close-on-exec, so CMD never inherits them. No thread exists yet
        // to fork in between (see `run`), so a plain pipe is race-free.
        for fd in fds {
            // SAFETY: fd is open and ours.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child branch below calls only async-signal-safe
        // functions (close, dup2, signal, prctl, getppid, read, execv,
        // _exit) on memory prepared before the fork.
        match unsafe { libc::fork() } {
            -1 => Err(std::io::Error::last_os_error()),
            0 => unsafe {
                child_wait_then_exec(parent, read_fd, write_fd, argv, &ptrs, stdout_to_stderr)
            },
            pid => {
                drop(read_end);
                Ok(Blocked { pid, go })
            }
        }
    }

    /// Let the child exec.
    fn go(self) -> std::io::Result<Running> {
        use std::io::Write;
        let pid = self.pid;
        let mut pipe = std::fs::File::from(self.go);
        match pipe.write_all(b"g") {
            Ok(()) => Ok(Running { pid }),
            Err(e) => {
                kill_and_reap(pid);
                Err(e)
            }
        }
    }

    /// The claim was not had: CMD must never run. The pipe closing alone
    /// would make it exit; the kill makes sure, and the reap leaves no
    /// zombie.
    fn abort(self) {
        let pid = self.pid;
        drop(self.go);
        kill_and_reap(pid);
    }
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
    if stdout_to_stderr {
        // Under --json our stdout carries exactly one document.
        libc::dup2(2, 1);
    }
    // Rust ignores SIGPIPE; an ignored disposition survives exec, and CMD
    // is owed the default.
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    // If `claimtop run` dies (kill -9), nobody renews or releases: CMD is
    // told to stop rather than run on unguarded.
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

/// The child after exec.
struct Running {
    pid: libc::pid_t,
}

impl Running {
    /// Pass a signal on. Only ever called before the child is reaped, so the
    /// pid still names it.
    fn signal(&self, sig: i32) {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(self.pid, sig) };
    }

    /// The child's end, if it has ended, WITHOUT reaping it. Until
    /// [`Running::reap`] the zombie keeps its pid, so the claim naming it
    /// still reads live: a waiter cannot reclaim it as stale in the instant
    /// between CMD's exit and our release, and the release is what it meets.
    fn exited(&self) -> Option<ChildStatus> {
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

    /// Collect the zombie, once the claim is settled.
    fn reap(self) {
        let mut st = 0;
        // SAFETY: st is a valid out-pointer; the pid is our own child.
        unsafe { libc::waitpid(self.pid, &mut st, 0) };
    }
}

/// How CMD ended.
#[derive(Debug, Clone, Copy)]
enum ChildStatus {
    Exited(i32),
    Signaled(i32),
    Unknown,
}

impl ChildStatus {
    fn code(self) -> Option<i32> {
        match self {
            ChildStatus::Exited(c) => Some(c),
            _ => None,
        }
    }

    fn signal(self) -> Option<i32> {
        match self {
            ChildStatus::Signaled(s) => Some(s),
            _ => None,
        }
    }

    /// As a shell reports it: the exit code, or 128 + the signal.
    fn shell_code(self) -> u8 {
        match self {
            ChildStatus::Exited(c) => c as u8,
            ChildStatus::Signaled(s) => 128u8.saturating_add(s as u8),
            ChildStatus::Unknown => EXIT_ERROR,
        }
    }
}
