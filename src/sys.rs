//! What the operating system tells us about hosts, processes and renames,
//! behind safe functions. Crate-level because both the claims protocol and
//! the events log (through the shared mkdir mutex) need them.

use std::io::ErrorKind;
use std::path::Path;
use std::sync::OnceLock;

/// `gethostname(2)`, as Python's `socket.gethostname()`. Empty on failure,
/// which never equals a recorded host and so fails toward "not live".
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for buf.len() bytes; gethostname writes at
    // most that many and we stop at the first NUL.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast::<libc::c_char>(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let name = buf.split(|&b| b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(name).into_owned()
}

/// Process create time in EPOCH MILLISECONDS, or None if the pid is gone or
/// cannot be inspected (a holder we cannot inspect is one we cannot validate:
/// fail toward recoverable, as psutil's AccessDenied handling does).
///
/// Linux: `btime` from `/proc/stat` plus field 22 of `/proc/<pid>/stat` (ticks
/// since boot) over `_SC_CLK_TCK`, psutil's computation. Sub-second skew is
/// harmless: the comparison against `acquired_at` is directional and a real
/// holder starts well before it claims.
#[cfg(target_os = "linux")]
pub fn process_create_time_ms(pid: i32) -> Option<i64> {
    if pid <= 0 {
        return None;
    }
    let stat = read_small(&format!("/proc/{pid}/stat"))?;
    // comm (field 2) may hold spaces and parentheses: split after the LAST ')'.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let after = std::str::from_utf8(&stat[close + 1..]).ok()?;
    // Field 22 overall is the 20th after the comm field.
    let start_ticks: i64 = after.split_ascii_whitespace().nth(19)?.parse().ok()?;
    let btime = boot_time_s()?;
    let tck = clock_ticks()?;
    Some(btime * 1000 + start_ticks * 1000 / tck)
}

#[cfg(not(target_os = "linux"))]
pub fn process_create_time_ms(_pid: i32) -> Option<i64> {
    None
}

/// Does process `pid` exist? The crate's one answer, used by every face
/// and the protocol alike.
///
/// `kill(pid, 0)` sends nothing and answers for any process: 0 when we may
/// signal it, EPERM when it exists under another user, ESRCH when there is
/// none. EPERM is alive: the seed judges a holder by the start time it
/// reads from `/proc/<pid>/stat`, which every user may read, so another
/// user's process is a live holder there too, and a face that called it
/// gone would show a live claim as stealable. Only ESRCH is gone. A zombie
/// (exited, not yet reaped) still exists; [`pid_gone_since`] looks closer.
pub fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        // 0 and negatives name process groups, never one holder.
        return false;
    }
    // SAFETY: signal 0 performs only the existence and permission checks.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Whether `pid` provably no longer runs the process that was alive at
/// `alive_at_ms` (epoch ms): no such process, a zombie, or a process that
/// started after that instant (the pid was reused). Anything uncertain - a
/// process we may not signal or inspect - answers false: the caller steals
/// on true, and ambiguity must degrade to waiting, never to stealing.
///
/// The computed start time can only be early (boot time is whole seconds,
/// ticks are floored), so a true owner is never read as started later.
pub fn pid_gone_since(pid: i32, alive_at_ms: i64) -> bool {
    if pid <= 0 {
        return false;
    }
    if !pid_alive(pid) {
        return true;
    }
    #[cfg(target_os = "linux")]
    if let Some(stat) = read_small(&format!("/proc/{pid}/stat")) {
        let after = stat
            .iter()
            .rposition(|&b| b == b')')
            .and_then(|close| std::str::from_utf8(&stat[close + 1..]).ok());
        if let Some(after) = after {
            // A killed process its parent has not reaped yet.
            if after.split_ascii_whitespace().next() == Some("Z") {
                return true;
            }
        }
        return process_create_time_ms(pid).is_some_and(|started| started > alive_at_ms);
    }
    false
}

/// A procfs file read in one syscall. The dashboard probes every distinct
/// holder pid each second; `fs::read`'s size probe (a statx procfs answers
/// with 0) and EOF read tripled the syscalls of each probe.
#[cfg(target_os = "linux")]
fn read_small(path: &str) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut buf = [0u8; 1024];
    let mut f = std::fs::File::open(path).ok()?;
    let n = f.read(&mut buf).ok()?;
    if n < buf.len() {
        return Some(buf[..n].to_vec());
    }
    // Longer than any stat line we know of: read the rest the slow way.
    let mut all = buf.to_vec();
    f.read_to_end(&mut all).ok()?;
    Some(all)
}

/// Boot time never changes while we run; read it once.
#[cfg(target_os = "linux")]
fn boot_time_s() -> Option<i64> {
    static BTIME: OnceLock<Option<i64>> = OnceLock::new();
    *BTIME.get_or_init(|| {
        let kernel_stat = std::fs::read_to_string("/proc/stat").ok()?;
        kernel_stat
            .lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse().ok())
    })
}

#[cfg(target_os = "linux")]
fn clock_ticks() -> Option<i64> {
    static TCK: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    // SAFETY: sysconf has no memory-safety preconditions.
    let t = *TCK.get_or_init(|| unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as i64);
    (t > 0).then_some(t)
}

/// rename(2) that fails with EEXIST instead of replacing the target.
pub fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let f = std::ffi::CString::new(from.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e))?;
        let t = std::ffi::CString::new(to.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e))?;
        // SAFETY: both are valid NUL-terminated paths.
        let rc = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                f.as_ptr(),
                libc::AT_FDCWD,
                t.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        // Filesystems without RENAME_NOREPLACE: fall back to a checked rename.
        if err.raw_os_error() != Some(libc::EINVAL) && err.raw_os_error() != Some(libc::ENOSYS) {
            return Err(err);
        }
    }
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(std::io::Error::from(ErrorKind::AlreadyExists));
    }
    std::fs::rename(from, to)
}

/// Cores this process may run on that nothing else is running on right
/// now, not counting the caller's own: how many helper threads can run
/// beside it without taking a core from anyone (0 on a busy machine).
///
/// From `/proc/loadavg`'s running count, an instant's reading of the whole
/// machine; unreadable (not Linux), it counts nothing else as running.
pub fn idle_cores() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let others = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| others_running(&s))
        .unwrap_or(0);
    spare_cores(cores, others)
}

/// Cores left over after the caller's thread and `others` runnable threads.
fn spare_cores(cores: usize, others: usize) -> usize {
    cores.saturating_sub(1).saturating_sub(others)
}

/// Runnable threads other than the caller, from `/proc/loadavg`'s fourth
/// field (`running/total`, counted at the instant of the read, the reader
/// among them).
fn others_running(loadavg: &str) -> Option<usize> {
    let field = loadavg.split_ascii_whitespace().nth(3)?;
    let running: usize = field.split('/').next()?.parse().ok()?;
    Some(running.saturating_sub(1))
}

/// Whether this process ignores `sig` now (its disposition is SIG_IGN,
/// as inherited across exec from whoever started it).
pub fn signal_ignored(sig: i32) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter, and a null new
    // action only reads the current one.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_of_another_user_is_alive_and_a_pid_nobody_runs_is_not() {
        assert!(pid_alive(std::process::id() as i32));
        assert!(!pid_alive(0) && !pid_alive(-1));
        let mut gone = std::process::Command::new("true").spawn().expect("spawn");
        let gone_pid = gone.id() as i32;
        gone.wait().expect("reap");
        assert!(!pid_alive(gone_pid), "a reaped child is gone");
        // EPERM: a process we may not signal. As root every process may be
        // signalled, so a child drops to `nobody` and asks about us.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert_eq!(ask_as_nobody(std::process::id() as i32), Some(true));
            assert_eq!(ask_as_nobody(gone_pid), Some(false));
        } else {
            // pid 1 is root's on every system this runs on.
            // SAFETY: kill with signal 0 only checks.
            let rc = unsafe { libc::kill(1, 0) };
            let errno = std::io::Error::last_os_error().raw_os_error();
            assert_eq!(
                (rc, errno),
                (-1, Some(libc::EPERM)),
                "pid 1 is not root's here"
            );
            assert!(pid_alive(1));
        }
    }

    /// `pid_alive(pid)` as seen by uid/gid 65534 (nobody), in a forked
    /// child that does nothing but async-signal-safe calls before `_exit`.
    fn ask_as_nobody(pid: i32) -> Option<bool> {
        // SAFETY: the child only calls setgid, setuid, kill (in pid_alive,
        // with errno read back) and _exit, all async-signal-safe.
        unsafe {
            let child = libc::fork();
            if child == 0 {
                let code = if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    3
                } else if libc::kill(pid, 0) == 0 {
                    // Signalling is allowed: not the EPERM case at all.
                    4
                } else if pid_alive(pid) {
                    1
                } else {
                    0
                };
                libc::_exit(code);
            }
            let mut status = 0;
            if child < 0 || libc::waitpid(child, &mut status, 0) != child {
                return None;
            }
            match libc::WEXITSTATUS(status) {
                1 => Some(true),
                0 => Some(false),
                _ => None,
            }
        }
    }

    #[test]
    fn helpers_go_only_to_cores_nothing_else_runs_on() {
        assert_eq!(others_running("1.48 1.35 1.33 1/180 16215\n"), Some(0));
        assert_eq!(others_running("9.0 8.0 7.0 5/900 1"), Some(4));
        assert_eq!(others_running("garbage"), None);
        assert_eq!(others_running("1 2 3 x/9 1"), None);
        // Two cores: one helper when quiet, none when another thread runs.
        assert_eq!(spare_cores(2, 0), 1);
        assert_eq!(spare_cores(2, 1), 0);
        assert_eq!(spare_cores(2, 7), 0);
        assert_eq!(spare_cores(1, 0), 0);
        assert_eq!(spare_cores(8, 2), 5);
    }
}
