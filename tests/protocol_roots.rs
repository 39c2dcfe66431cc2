//! Root resolution through the real environment: a `<prefix>:<id>` key with a
//! global-id prefix lands under `$FNO_CLAIMS_ROOT` (else `$HOME`), exactly
//! where every other implementation looks for it.
//!
//! These tests change process-wide state (environment variables, the working
//! directory), so each holds [`ENV`] for its whole body and puts the old
//! values back on the way out. Nothing else in this test binary reads them.

mod common;

use claimtop::claims::{
    claims_root_for, global_claims_root, resolve_root, AcquireOpts, ClaimError, Root,
};
use common::*;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Mutex;
use tempfile::TempDir;

static ENV: Mutex<()> = Mutex::new(());

/// Sets variables for one test and restores them when dropped.
struct EnvGuard {
    saved: Vec<(&'static str, Option<OsString>)>,
    _lock: std::sync::MutexGuard<'static, ()>,
}

impl EnvGuard {
    fn set(vars: &[(&'static str, Option<&Path>)]) -> EnvGuard {
        let lock = ENV.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let saved = vars
            .iter()
            .map(|(name, _)| (*name, std::env::var_os(name)))
            .collect();
        for (name, value) in vars {
            match value {
                Some(v) => std::env::set_var(name, v),
                None => std::env::remove_var(name),
            }
        }
        EnvGuard { saved, _lock: lock }
    }
}

impl Drop for EnvGuard {
    fn drop(&mut self) {
        for (name, value) in &self.saved {
            match value {
                Some(v) => std::env::set_var(name, v),
                None => std::env::remove_var(name),
            }
        }
    }
}

#[test]
fn a_global_prefix_key_resolves_to_fno_claims_root_and_is_claimed_there() {
    let global = TempDir::new().unwrap();
    let home = TempDir::new().unwrap();
    let _env = EnvGuard::set(&[
        ("FNO_CLAIMS_ROOT", Some(global.path())),
        ("HOME", Some(home.path())),
    ]);
    for key in ["node:a", "dispatch:b", "reconcile:c", "session:d"] {
        assert_eq!(resolve_root(None, key).unwrap(), global.path(), "{key}");
    }
    let root = Root::with_events_here(resolve_root(None, "node:ab-1").unwrap());
    must_acquire(&root, "node:ab-1", "pty:me", &AcquireOpts::default());
    assert!(global.path().join(".fno/claims/node%3Aab-1.lock").exists());
    assert!(!home.path().join(".fno").exists());
}

#[test]
fn a_set_but_empty_fno_claims_root_falls_back_to_home() {
    let home = TempDir::new().unwrap();
    let empty = Path::new("");
    let _env = EnvGuard::set(&[
        ("FNO_CLAIMS_ROOT", Some(empty)),
        ("HOME", Some(home.path())),
    ]);
    assert_eq!(global_claims_root().as_deref(), Some(home.path()));
    assert_eq!(claims_root_for("session:x").as_deref(), Some(home.path()));
}

#[test]
fn with_neither_variable_a_global_key_has_no_root() {
    let _env = EnvGuard::set(&[("FNO_CLAIMS_ROOT", None), ("HOME", None)]);
    assert_eq!(global_claims_root(), None);
    assert!(matches!(
        resolve_root(None, "node:x"),
        Err(ClaimError::NoRoot(_))
    ));
}

#[test]
fn only_a_known_prefix_and_a_colon_route_globally_and_an_explicit_root_wins() {
    let global = TempDir::new().unwrap();
    let explicit = TempDir::new().unwrap();
    let _env = EnvGuard::set(&[("FNO_CLAIMS_ROOT", Some(global.path()))]);
    for key in [
        "node",
        "walker:/repo/root",
        "nodes:x",
        "Node:x",
        ":x",
        "plain",
    ] {
        assert!(
            matches!(resolve_root(None, key), Err(ClaimError::NoRoot(_))),
            "{key} routed globally"
        );
    }
    assert_eq!(
        resolve_root(Some(explicit.path()), "node:x").unwrap(),
        explicit.path()
    );
}

#[test]
fn with_no_events_dir_the_log_goes_to_the_current_directory() {
    // The seed's rule for library callers that name no events dir. The
    // working directory is process-wide too, so this holds the same lock.
    let _env = EnvGuard::set(&[]);
    let claims = TempDir::new().unwrap();
    let cwd = TempDir::new().unwrap();
    let before = std::env::current_dir().unwrap();
    std::env::set_current_dir(cwd.path()).unwrap();
    let root = Root::new(claims.path());
    let acquired = claimtop::claims::acquire(&root, "node:cwd", "pty:me", &AcquireOpts::default());
    std::env::set_current_dir(before).unwrap();
    assert!(acquired.is_ok(), "{acquired:?}");
    let log = std::fs::read_to_string(cwd.path().join(".fno/events.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1);
    assert!(log.contains("\"claim_acquired\""), "{log}");
    assert!(!claims.path().join(".fno/events.jsonl").exists());
}
