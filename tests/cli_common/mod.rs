//! Helpers shared by the CLI test files (`mod cli_common;`).
#![allow(dead_code)]

use claimtop::claims::liveness::{hostname, machine_id};
use claimtop::claims::ClaimRecord;
use std::path::Path;
use std::process::Command;

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
