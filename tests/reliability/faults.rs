//! Faults: a full disk, a read-only filesystem, permission denied, and the
//! claims dir deleted under a running process (the events log's own faults
//! are in `log_faults.rs`). Each must give a clear error or state, leave no
//! partial lockfile and no temp litter, never panic, and work again once
//! the fault clears.
//!
//! The filesystem faults need a small tmpfs, mounted by the test; that takes
//! root (as in CI). Without it those tests say why and pass vacuously on a
//! developer box; with `CI` set they fail instead, so a CI run that lost its
//! root cannot go green without having tried a single fault.

use crate::common::*;
use crate::tmpfs::{fill, is_root, Tmpfs};
use claimtop::claims::{
    acquire, doctor, force_release, read_claim_file, release, renew, status, sweep, AcquireOpts,
    AcquireOutcome, ClaimError, ClaimState, ForceOpts, ForceOutcome, ReleaseOutcome, RenewOutcome,
    MIN_TTL_MS,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const ENTRY: &str = "faults::an_unprivileged_user_gets_permission_denied_not_a_panic_or_litter";

fn assert_io_error(r: Result<impl std::fmt::Debug, ClaimError>, os_words: &str) {
    match r {
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains(os_words), "unclear error: {text}");
        }
        Ok(v) => panic!("expected an error naming {os_words:?}, got {v:?}"),
    }
}

fn ttl() -> AcquireOpts {
    AcquireOpts {
        ttl_ms: Some(MIN_TTL_MS),
        ..AcquireOpts::default()
    }
}

#[test]
fn a_full_disk_refuses_new_claims_cleanly_keeps_old_ones_whole_and_recovers() {
    let Some(fs) = Tmpfs::mount("64k") else {
        return;
    };
    let root = root_in(fs.path());
    let cdir = root.claims_dir();
    assert!(matches!(
        acquire(&root, "held", "me", &ttl()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    let before = std::fs::read(root.lockfile("held")).unwrap();
    let filler = fill(fs.path());

    // A new claim: a clear error, no lockfile, no temp file.
    assert_io_error(
        acquire(&root, "new", "me", &AcquireOpts::default()),
        "No space left on device",
    );
    assert!(!root.lockfile("new").exists());
    // Rewrites of an existing claim fail whole: the old record stays.
    assert_io_error(acquire(&root, "held", "me", &ttl()), "No space left");
    assert_io_error(renew(&root, "held", "me", MIN_TTL_MS), "No space left");
    assert_eq!(std::fs::read(root.lockfile("held")).unwrap(), before);
    assert!(litter(&cdir).is_empty(), "{:?}", litter(&cdir));
    // Reads keep working.
    assert_eq!(status(&root, "held").state, ClaimState::Live);
    assert_eq!(sweep(&root).counts.corrupted, 0);

    // Space returns: everything works again.
    std::fs::remove_file(filler).unwrap();
    assert!(matches!(
        acquire(&root, "new", "me", &AcquireOpts::default()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    assert!(matches!(
        renew(&root, "held", "me", MIN_TTL_MS),
        Ok(RenewOutcome::Renewed { .. })
    ));
    assert!(litter(&cdir).is_empty(), "{:?}", litter(&cdir));
}

#[test]
fn a_release_on_a_full_disk_leaves_no_mutex_corpse_behind() {
    let Some(fs) = Tmpfs::mount("64k") else {
        return;
    };
    let root = root_in(fs.path());
    assert!(matches!(
        acquire(&root, "k", "me", &AcquireOpts::default()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    let filler = fill(fs.path());
    // Unlinking needs no space; whatever the verb answers, it must not
    // leave a recovery mutex that blocks the key for the next 120 s.
    let r = release(&root, "k", "me");
    assert!(
        matches!(r, Ok(ReleaseOutcome::Released { .. })) || r.is_err(),
        "{r:?}"
    );
    assert!(
        litter(&root.claims_dir()).is_empty(),
        "{:?}",
        litter(&root.claims_dir())
    );
    std::fs::remove_file(filler).unwrap();
    let _ = release(&root, "k", "me");
    assert!(matches!(
        acquire(&root, "k", "other", &AcquireOpts::default()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
}

#[test]
fn an_aged_mutex_that_cannot_be_renamed_is_waited_out_never_spun_on() {
    // A mount point cannot be renamed (EBUSY), nor can another user's
    // corpse in a sticky dir (EPERM): the steal fails, and the waiter must
    // give up at its deadline rather than retry at once for ever.
    let Some(fs) = Tmpfs::mount("64k") else {
        return;
    };
    let m = fs.path().to_path_buf();
    claimtop::mutex::backdate(&m, 600).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = m.clone();
    std::thread::spawn(move || {
        let got = claimtop::mutex::lock(&dir, Duration::from_millis(300), true);
        let _ = tx.send(got.is_none());
    });
    // A generous bound: the property is "does not spin for ever".
    let gave_up = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("no answer 20 s into a 300 ms wait: the waiter spins on the failed steal");
    assert!(gave_up, "took a mutex nobody released");
    assert!(m.is_dir());
}

#[test]
fn a_read_only_filesystem_refuses_every_write_clearly_and_reads_still_work() {
    let Some(fs) = Tmpfs::mount("1m") else { return };
    let root = root_in(fs.path());
    let cdir = root.claims_dir();
    let dead = AcquireOpts {
        pid: Some(dead_pid() as u32),
        ..AcquireOpts::default()
    };
    assert!(matches!(
        acquire(&root, "mine", "me", &ttl()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    assert!(matches!(
        acquire(&root, "stale", "gone", &dead),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    let names_before = names(&cdir);
    fs.remount("ro");

    const EROFS: &str = "Read-only file system";
    assert_io_error(acquire(&root, "new", "me", &AcquireOpts::default()), EROFS);
    assert_io_error(
        acquire(&root, "stale", "me", &AcquireOpts::default()),
        EROFS,
    );
    assert_io_error(renew(&root, "mine", "me", MIN_TTL_MS), EROFS);
    assert_io_error(release(&root, "mine", "me"), EROFS);
    let forced = force_release(&root, "stale", &ForceOpts::default());
    assert_io_error(forced, EROFS);
    assert_eq!(names(&cdir), names_before);
    assert_eq!(status(&root, "mine").state, ClaimState::Live);
    assert_eq!(status(&root, "stale").state, ClaimState::Stale);
    assert!(doctor(&root).is_empty());

    fs.remount("rw");
    assert!(matches!(
        acquire(&root, "stale", "me", &AcquireOpts::default()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    assert!(matches!(
        release(&root, "mine", "me"),
        Ok(ReleaseOutcome::Released { .. })
    ));
    assert!(litter(&cdir).is_empty(), "{:?}", litter(&cdir));
}

#[test]
fn on_a_read_only_filesystem_a_key_held_by_another_is_held_and_waited_for() {
    let Some(fs) = Tmpfs::mount("1m") else { return };
    let root = root_in(fs.path());
    assert!(matches!(
        acquire(&root, "held", "them", &ttl()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    fs.remount("ro");

    // Held, whatever else is wrong: the write error is not the answer.
    match acquire(&root, "held", "me", &ttl()) {
        Ok(AcquireOutcome::HeldByOther { holder, .. }) => assert_eq!(holder, "them"),
        other => panic!("expected held_by_other, got {other:?}"),
    }
    // A free key, which the error alone keeps from being taken, says so.
    assert_io_error(
        acquire(&root, "free", "me", &ttl()),
        "Read-only file system",
    );

    let home = tempdir();
    let cli = |extra: &[&str]| {
        let out = claimtop(home.path())
            .arg("--root")
            .arg(fs.path())
            .args(["acquire", "held", "--holder", "me", "--ttl", "60", "--json"])
            .args(extra)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (
            out.status.code(),
            v,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (rc, v, _) = cli(&[]);
    assert_eq!(
        (rc, &v["outcome"]),
        (Some(3), &json!("held_by_other")),
        "{v}"
    );
    assert_eq!(v["holder"], "them");
    // --wait waits for the holder (saying so) rather than fail on the write.
    let (rc, v, err) = cli(&["--wait=1s"]);
    assert_eq!(
        (rc, &v["outcome"]),
        (Some(3), &json!("held_by_other")),
        "{v}"
    );
    assert!(err.contains("waiting for held: held by them"), "{err}");

    fs.remount("rw");
    assert!(matches!(
        acquire(&root, "held", "me", &ttl()),
        Ok(AcquireOutcome::HeldByOther { .. })
    ));
}

#[test]
fn an_unprivileged_user_gets_permission_denied_not_a_panic_or_litter() {
    if my_role().as_deref() == Some("nobody") {
        as_nobody();
        return;
    }
    if my_role().is_some() {
        return;
    }
    if !is_root() {
        cannot_run("dropping to another uid needs root (as non-root, chmod would do)");
        return;
    }
    // The checkout, and so this binary, may sit under a private dir (a 0700
    // `mktemp -d` or home dir) that uid 65534 cannot traverse: the child runs
    // from a copy, in a dir that user can reach, beside the root it checks.
    let Some(td) = reachable_by_others_tempdir() else {
        cannot_run("no temp dir (TMPDIR, /tmp, /var/tmp, /dev/shm) that uid 65534 can traverse and exec from");
        return;
    };
    let top = td.path().join("root");
    std::fs::create_dir(&top).unwrap();
    let root = root_in(&top);
    assert!(matches!(
        acquire(&root, "held", "root-user", &ttl()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    std::fs::create_dir_all(top.join("private/.fno/claims")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    // Readable for everyone but writable only by root, then one dir that
    // nobody else may even list.
    std::fs::set_permissions(&top, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        top.join("private/.fno/claims"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let names_before = names(&root.claims_dir());
    let exe = td.path().join("faults-child");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(&exe);
    cmd.args(["--exact", ENTRY, "--nocapture", "--test-threads=1"])
        .env(ROLE_ENV, "nobody")
        .env("F_ROOT", &top)
        .current_dir(td.path())
        .uid(65534)
        .gid(65534)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // A thread forking elsewhere in this process may briefly hold the copy's
    // write descriptor (ETXTBSY): spawn_retrying rides that out.
    let out = spawn_retrying(&mut cmd)
        .and_then(|c| c.wait_with_output())
        .unwrap_or_else(|e| panic!("could not start the unprivileged child from {exe:?}: {e}"));
    if !out.status.success() {
        panic!(
            "the unprivileged child failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(names(&root.claims_dir()), names_before);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nobody-checks-passed"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A fresh temp dir, mode 0755, that any user can reach and run a program
/// from: every ancestor lets others search it, and its filesystem is not
/// mounted noexec. TMPDIR comes first; a private TMPDIR falls back to the
/// system's shared temp dirs.
fn reachable_by_others_tempdir() -> Option<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let searchable = |dir: &Path| {
        dir.ancestors().all(|a| {
            std::fs::metadata(a).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o001 != 0)
        })
    };
    let exec_allowed = |dir: &Path| {
        let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
            return false;
        };
        // SAFETY: statvfs(3) writes only into the zeroed struct we own.
        unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_flag & libc::ST_NOEXEC == 0
        }
    };
    let candidates = [
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
    ];
    candidates.iter().find_map(|base| {
        let base = base.canonicalize().ok()?;
        if !searchable(&base) || !exec_allowed(&base) {
            return None;
        }
        let td = tempfile::Builder::new()
            .prefix("claimtop-rel-")
            .tempdir_in(&base)
            .ok()?;
        std::fs::set_permissions(td.path(), std::fs::Permissions::from_mode(0o755)).ok()?;
        Some(td)
    })
}

/// Runs as uid 65534 against a root owned by root.
fn as_nobody() {
    let dir = PathBuf::from(env_str("F_ROOT"));
    let root = root_in(&dir);
    const EACCES: &str = "Permission denied";
    assert_io_error(
        acquire(&root, "new", "nobody", &AcquireOpts::default()),
        EACCES,
    );
    assert_io_error(
        acquire(&root, "held", "root-user", &AcquireOpts::default()),
        EACCES,
    );
    assert_io_error(release(&root, "held", "root-user"), EACCES);
    assert_io_error(force_release(&root, "held", &ForceOpts::default()), EACCES);
    assert_io_error(renew(&root, "held", "root-user", MIN_TTL_MS), EACCES);
    // Reading is allowed and works.
    assert_eq!(status(&root, "held").state, ClaimState::Live);
    // A claims dir it may not list is a hazard, not a crash.
    let private = root_in(dir.join("private"));
    let hazards = doctor(&private);
    assert!(
        hazards
            .iter()
            .any(|h| h.kind == claimtop::claims::hazard::UNREADABLE),
        "{hazards:?}"
    );
    println!("nobody-checks-passed");
}

#[test]
fn a_claims_dir_deleted_under_a_running_holder_is_recreated_by_the_next_acquire() {
    let td = tempdir();
    let root = root_in(td.path());
    assert!(matches!(
        acquire(&root, "a", "me", &AcquireOpts::default()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    std::fs::remove_dir_all(root.claims_dir()).unwrap();
    assert_eq!(status(&root, "a").state, ClaimState::Free);
    assert_eq!(release(&root, "a", "me").unwrap(), ReleaseOutcome::Absent);
    assert!(matches!(
        renew(&root, "a", "me", MIN_TTL_MS),
        Ok(RenewOutcome::NotRenewed(_))
    ));
    assert!(matches!(
        force_release(&root, "a", &ForceOpts::default()),
        Ok(ForceOutcome::Refused(_))
    ));
    assert!(sweep(&root).claims.is_empty());
    assert!(matches!(
        acquire(&root, "b", "me", &AcquireOpts::default()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    assert!(read_claim_file(&root.lockfile("b")).is_ok());
}

#[test]
fn deleting_the_claims_dir_over_and_over_under_busy_workers_never_panics_or_tears_a_claim() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let td = tempdir();
    let root = Arc::new(root_in(td.path()));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|i| {
            let (root, stop) = (root.clone(), stop.clone());
            std::thread::spawn(move || {
                let me = format!("w{i}");
                let (mut ok, mut errors) = (0, Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    match acquire(&root, "k", &me, &AcquireOpts::default()) {
                        Ok(_) => ok += 1,
                        Err(e) => errors.push(e.to_string()),
                    }
                    if let Err(e) = release(&root, "k", &me) {
                        errors.push(e.to_string());
                    }
                }
                (ok, errors)
            })
        })
        .collect();
    for _ in 0..300 {
        let _ = std::fs::remove_dir_all(root.claims_dir());
        std::thread::sleep(Duration::from_millis(2));
        // Whatever is there at any instant is whole.
        for n in names(&root.claims_dir())
            .iter()
            .filter(|n| n.ends_with(".lock"))
        {
            if let Err(claimtop::claims::ReadError::Corrupted { reason, .. }) =
                read_claim_file(&root.claims_dir().join(n))
            {
                panic!("torn lockfile {n}: {reason}");
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut total_ok = 0;
    for w in workers {
        let (ok, errors) = w.join().expect("a worker panicked");
        total_ok += ok;
        // The only acceptable failures name the vanished path.
        for e in errors {
            assert!(
                e.contains("No such file or directory"),
                "unclear error: {e}"
            );
        }
    }
    assert!(total_ok > 0);
    // Once the deleting stops, the root works again, and nothing was left
    // half-done in it.
    assert!(matches!(
        acquire(&root, "k", "after", &AcquireOpts::default()),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    assert!(
        litter(&root.claims_dir()).is_empty(),
        "{:?}",
        litter(&root.claims_dir())
    );
}

const SKIP_PROBE: &str = "faults::a_fault_test_that_cannot_run_fails_under_ci_and_skips_elsewhere";

#[test]
fn a_fault_test_that_cannot_run_fails_under_ci_and_skips_elsewhere() {
    if my_role().as_deref() == Some("skip-probe") {
        cannot_run("probing the skip rule");
        return;
    }
    if my_role().is_some() {
        return;
    }
    let probe = |ci: bool| {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", SKIP_PROBE, "--test-threads=1"])
            .env(ROLE_ENV, "skip-probe")
            .env_remove("CI");
        if ci {
            cmd.env("CI", "true");
        }
        cmd.output().unwrap()
    };
    let under_ci = probe(true);
    assert!(!under_ci.status.success(), "a skip under CI passed");
    assert!(
        String::from_utf8_lossy(&under_ci.stdout).contains("so this test must run"),
        "{}",
        String::from_utf8_lossy(&under_ci.stdout)
    );
    let elsewhere = probe(false);
    assert!(elsewhere.status.success(), "a skip outside CI failed");
}
