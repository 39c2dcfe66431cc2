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
    // SAFETY: kill with signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
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

#[cfg(test)]
mod tests {
    use super::*;

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
