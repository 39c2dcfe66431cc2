//! Reliability: re-executed child roles, a seeded rng, monotonic markers,
//! waiting on children, the litter a root is left with.

use super::*;

/// Env var naming the role a re-executed test binary should play.
pub const ROLE_ENV: &str = "CLAIMTOP_RELIABILITY_ROLE";

/// xorshift64*: enough randomness for interleavings, reproducible from the
/// seed printed on failure, and no extra crate.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `pct`/100.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// CLOCK_MONOTONIC in ns: one clock for every process on the machine, immune
/// to wall-clock steps, so tenures of different processes compare directly.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// An append-only log of one-line markers shared by many processes. Each
/// marker is one `write(2)` on an O_APPEND descriptor, so lines from
/// different processes never interleave.
pub struct Markers {
    file: std::fs::File,
}

impl Markers {
    pub fn open(path: &Path) -> Markers {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o644)
            .open(path)
            .expect("open marker log");
        Markers { file }
    }

    pub fn put(&mut self, line: &str) {
        let mut l = String::with_capacity(line.len() + 1);
        l.push_str(line);
        l.push('\n');
        self.file.write_all(l.as_bytes()).expect("append marker");
    }
}

/// Run this test binary again as a child playing `role`: the child runs only
/// the test named `entry` (which dispatches on [`ROLE_ENV`]) and exits.
pub fn spawn_role(entry: &str, role: &str, envs: &[(&str, String)]) -> Child {
    let exe = std::env::current_exe().expect("own test binary");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", entry, "--nocapture", "--test-threads=1", "-q"])
        .env(ROLE_ENV, role)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn child process")
}

/// The role this process was started to play, if it is a child.
pub fn my_role() -> Option<String> {
    std::env::var(ROLE_ENV).ok().filter(|r| !r.is_empty())
}

pub fn env_str(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("child needs {name}"))
}

pub fn env_u64(name: &str) -> u64 {
    env_str(name)
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number"))
}

/// SIGKILL a child: no destructors, no release, exactly like a crash.
pub fn kill9(child: &Child) {
    // SAFETY: plain kill(2) on a pid we spawned and have not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
}

/// Reap children as they exit. A killed child left unreaped is a zombie,
/// and a zombie still has a `/proc/<pid>/stat`, so its claims would look
/// alive to every other process; reaping promptly is what a real parent does.
pub fn wait_all(
    mut children: Vec<Child>,
    limit: Duration,
) -> Vec<(u32, std::process::ExitStatus, String)> {
    let deadline = Instant::now() + limit;
    let mut done = Vec::new();
    while !children.is_empty() {
        let mut i = 0;
        while i < children.len() {
            match children[i].try_wait() {
                Ok(Some(status)) => {
                    let mut err = String::new();
                    if let Some(mut e) = children[i].stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    }
                    done.push((children[i].id(), status, err));
                    // Already reaped by try_wait; wait() returns the cached status.
                    let _ = children.swap_remove(i).wait();
                }
                _ => i += 1,
            }
        }
        if Instant::now() > deadline {
            for c in &children {
                kill9(c);
            }
            panic!(
                "{} child process(es) still running after {limit:?}",
                children.len()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    done
}

/// Every name in `dir`, sorted; empty when it does not exist.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Names in the claims dir that are neither lockfiles nor the archive dir:
/// temp files, mutex dirs, reap dirs.
pub fn litter(claims_dir: &Path) -> Vec<String> {
    names(claims_dir)
        .into_iter()
        .filter(|n| !n.ends_with(".lock") && n != ".expired")
        .collect()
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("claimtop-rel-")
        .tempdir()
        .expect("tempdir")
}

/// Spawn `cmd`, riding out the moment a concurrent `cargo build` replaces
/// the binary (the path briefly does not exist, or is busy being written).
pub fn spawn_retrying(cmd: &mut Command) -> std::io::Result<Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e)
                if tries < 100
                    && (e.kind() == std::io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(libc::ETXTBSY)) =>
            {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            other => return other,
        }
    }
}
