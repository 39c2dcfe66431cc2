//! An acquire whose parent is gone: refused without a pid or TTL, never
//! bound to init with one.

use super::*;

/// Run `claimtop acquire` in the background of a shell that exits at once
/// (so it is adopted by init or a subreaper), and return the orphan's stderr
/// once it has finished. The sleep makes the adoption come first: a claimtop
/// that started while the shell still lived would bind to the shell's pid,
/// which is dead soon after, and that claim goes stale as it should.
fn orphaned_acquire(s: &Sandbox, extra: &str) -> String {
    let log = s.home.path().join("orphan.log");
    let done = s.home.path().join("orphan.done");
    let script = format!(
        "(sleep 0.3; exec {BIN} --root '{}' acquire k --holder a {extra} 2>'{}') & echo $! >'{}'; exit 0",
        s.root().display(),
        log.display(),
        done.display()
    );
    let status = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env("HOME", s.home.path())
        .env_remove("FNO_CLAIMS_ROOT")
        .status()
        .unwrap();
    assert!(status.success());
    let pid: i32 = std::fs::read_to_string(&done)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The orphan is not our child: wait for its pid to disappear.
    for _ in 0..500 {
        // SAFETY: signal 0 only probes for existence.
        if unsafe { libc::kill(pid, 0) } != 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::fs::read_to_string(&log).unwrap_or_default()
}

#[test]
fn an_orphaned_acquire_without_pid_or_ttl_refuses_and_writes_nothing() {
    let s = Sandbox::new();
    let err = orphaned_acquire(&s, "");
    assert!(err.contains("--pid") && err.contains("--ttl"), "{err:?}");
    assert!(
        !s.lockfile("k").exists(),
        "bound to an adopter: {:?}",
        std::fs::read_to_string(s.lockfile("k"))
    );
    assert!(!s.events_file().exists());
}

#[test]
fn an_orphaned_acquire_with_a_ttl_is_never_bound_to_init() {
    let s = Sandbox::new();
    let err = orphaned_acquire(&s, "--ttl 1h");
    let text = std::fs::read_to_string(s.lockfile("k")).unwrap_or_else(|e| panic!("{e}: {err}"));
    let rec = claimtop::claims::ClaimRecord::from_yaml(&text).unwrap();
    assert_ne!(rec.pid, 1, "{text}");
    let (_, v) = s.json(&["status", "k"]);
    assert_eq!(v["state"], "suspect", "the TTL alone protects it: {v}");
}
