//! The CLI binary in a sandboxed `$HOME`, and sleepers standing in for
//! live holders.

use super::*;

pub const BIN: &str = env!("CARGO_BIN_EXE_claimtop");

/// The binary with `$HOME` pointed at `home` and no `$FNO_CLAIMS_ROOT`, so a
/// test never reaches the real claims root.
pub fn claimtop(home: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("HOME", home)
        .env_remove("FNO_CLAIMS_ROOT")
        .env("USER", "tester");
    c
}

/// A PID-bound lockfile of this machine whose pid is long gone: Stale.
pub fn dead_holder_yaml(key: &str, holder: &str) -> String {
    let rec = ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: holder.into(),
        acquired_at: 1_700_000_000_000,
        pid: 999_999,
        host: hostname(),
        expires_at: None,
        reason: None,
        harness: None,
        machine_id: Some(machine_id()).filter(|m| !m.is_empty()),
        metadata: Default::default(),
    };
    rec.to_yaml().expect("yaml")
}

/// The address `claimtop metrics --listen ADDR:0` printed on its first
/// stderr line ("serving metrics at http://ADDR/metrics").
pub fn metrics_address(stderr_line: &str) -> String {
    stderr_line
        .split("http://")
        .nth(1)
        .and_then(|s| s.trim().strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no address in {stderr_line:?}"))
        .to_string()
}

/// A claims root plus a separate fake `$HOME`, so nothing ever touches the
/// real one.
pub struct Sandbox {
    pub root: TempDir,
    pub home: TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            root: TempDir::new().expect("root"),
            home: TempDir::new().expect("home"),
        }
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// A path inside the root, for the side effects of test commands.
    pub fn file(&self, name: &str) -> PathBuf {
        self.root().join(name)
    }

    /// The binary over this root, with a clean environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = claimtop(self.home.path());
        c.arg("--root").arg(self.root()).args(args);
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run claimtop")
    }
}

/// A child killed on drop, so a failing test leaves no sleeper behind.
pub struct Sleeper(Child);

impl Sleeper {
    pub fn spawn() -> Sleeper {
        Sleeper(
            Command::new("sleep")
                .arg("600")
                .spawn()
                .expect("spawn sleep"),
        )
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.kill();
    }
}
