//! A command's own process group, seen through the timestamps its members
//! write.

use super::*;

/// A `sh -c` script for `run`: it starts a grandchild (a subshell in the
/// background) that appends the wall clock in ns to `log` every 20 ms, says
/// it has started by writing the grandchild's pid to `ready`, and waits.
/// Stopping only the shell leaves the grandchild writing; stopping the
/// group ends both.
pub fn grandchild_writer(log: &Path, ready: &Path) -> String {
    format!(
        "( while :; do date +%s%N >> {log}; sleep 0.02; done ) & \
         echo $! > {ready}.tmp && mv {ready}.tmp {ready}; wait",
        log = log.display(),
        ready = ready.display()
    )
}

/// A `sh -c` fragment: a member of the command's group that appends the
/// wall clock in ns to `log` every 20 ms and, told SIGTERM, writes `more`
/// times again (about 25 ms each) before it exits: a slow clean-up that
/// outlives its leader. Its pid goes to `ready`.
pub fn slow_member(log: &Path, ready: &Path, more: u32) -> String {
    format!(
        "( n=-1; trap 'n={more}' TERM; while [ $n -ne 0 ]; do date +%s%N >> {log}; sleep 0.02; \
         [ $n -gt 0 ] && n=$((n-1)); done ) & echo $! > {ready}.tmp && mv {ready}.tmp {ready}",
        log = log.display(),
        ready = ready.display()
    )
}

/// The grandchild a [`grandchild_writer`] started, killed on drop: a test
/// that fails because it outlived its group must not leave it writing.
pub struct Grandchild {
    pub pid: i32,
    log: PathBuf,
}

impl Grandchild {
    /// Once `ready` names it.
    pub fn of(ready: &Path, log: &Path) -> Option<Grandchild> {
        let pid = std::fs::read_to_string(ready).ok()?.trim().parse().ok()?;
        Some(Grandchild {
            pid,
            log: log.to_path_buf(),
        })
    }
}

impl Drop for Grandchild {
    fn drop(&mut self) {
        // Only while the pid is still the writer (its command line names
        // the log): a pid reused since by another process is left alone.
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.pid)).unwrap_or_default();
        let log = self.log.to_string_lossy();
        if String::from_utf8_lossy(&cmdline).contains(log.as_ref()) {
            // SAFETY: kill(2) has no memory preconditions.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }
}

/// The wall clock in ns, as `date +%s%N` writes it.
pub fn wall_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The timestamps a [`grandchild_writer`] wrote (a torn last line is left
/// out).
pub fn stamps(log: &Path) -> Vec<i64> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Wait until `log` has stopped growing for `quiet` (at most `within`):
/// then its last stamp is the last write of whatever wrote it.
pub fn until_quiet(log: &Path, quiet: Duration, within: Duration) -> Vec<i64> {
    let end = Instant::now() + within;
    let mut seen = stamps(log).len();
    let mut since = Instant::now();
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
        let n = stamps(log).len();
        if n != seen {
            seen = n;
            since = Instant::now();
        } else if since.elapsed() >= quiet {
            break;
        }
    }
    stamps(log)
}
