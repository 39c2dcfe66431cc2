//! A small tmpfs the fault tests mount as a root or an events dir, so that
//! a full disk or a read-only filesystem is real. Mounting takes root (as
//! in CI); without it a test says why and, outside CI, passes vacuously.

use crate::common::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A tmpfs of `size` mounted on a fresh temp dir, unmounted on drop even
/// when the test panics.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    pub fn mount(size: &str) -> Option<Tmpfs> {
        if !is_root() {
            cannot_run("mounting a tmpfs needs root");
            return None;
        }
        let dir = tempdir();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            cannot_run("mount -t tmpfs failed (no CAP_SYS_ADMIN here?)");
            return None;
        }
        Some(Tmpfs { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn remount(&self, mode: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(self.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remount {mode}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Fill the filesystem at `dir` to the last byte.
pub fn fill(dir: &Path) -> PathBuf {
    let p = dir.join("filler");
    let mut f = std::fs::File::create(&p).unwrap();
    let block = vec![0u8; 4096];
    while f.write_all(&block).is_ok() {}
    // The last partial block, byte by byte.
    while f.write_all(&[0]).is_ok() {}
    p
}
