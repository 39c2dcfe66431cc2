//! Files planted to make claimtop write, rename or delete outside the
//! claims dir, or hang: symlinks as lockfiles, as the archive dir, as mutex
//! dirs and as litter; directories and FIFOs where a lockfile should be.

use super::run_cli;
use crate::common::*;
use claimtop::claims::mutex::backdate;
use claimtop::claims::verbs::recovery_mutex_path;
use claimtop::claims::{
    acquire, doctor, doctor_fix, force_release, release, sweep, AcquireOpts, AcquireOutcome,
    ClaimError, ClaimRecord, ClaimState, ForceOpts, ForceOutcome, ReleaseOutcome, Root,
};
use claimtop::events::emit::events_mutex_path;
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Everything under `dir`: path → (kind, length, mtime, contents).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (String, u64, i64, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let md = std::fs::symlink_metadata(&d).unwrap();
        let kind = format!("{:?}", md.file_type());
        let body = if md.is_file() {
            std::fs::read(&d).unwrap()
        } else {
            Vec::new()
        };
        out.insert(
            d.clone(),
            (
                kind,
                md.len(),
                md.mtime_nsec() + md.mtime() * 1_000_000_000,
                body,
            ),
        );
        if md.is_dir() {
            for e in std::fs::read_dir(&d).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    out
}

/// A directory outside the claims root, full of things worth protecting.
fn outside() -> tempfile::TempDir {
    let o = tempdir();
    std::fs::write(o.path().join("owner"), b"precious").unwrap();
    std::fs::write(o.path().join("k.lock"), dead_claim("k")).unwrap();
    std::fs::create_dir(o.path().join("sub")).unwrap();
    std::fs::write(o.path().join("sub/data"), b"more").unwrap();
    o
}

fn dead_claim(key: &str) -> String {
    ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: "gone".into(),
        acquired_at: 1_700_000_000_000,
        pid: dead_pid(),
        host: claimtop::claims::liveness::hostname(),
        expires_at: None,
        reason: None,
        harness: None,
        machine_id: Some(claimtop::claims::liveness::machine_id()).filter(|m| !m.is_empty()),
        metadata: Default::default(),
    }
    .to_yaml()
    .unwrap()
}

/// The stage of a filesystem-trick test: an outside dir and its snapshot,
/// and a root whose claims dir exists.
struct Stage {
    outside: tempfile::TempDir,
    before: BTreeMap<PathBuf, (String, u64, i64, Vec<u8>)>,
    _td: tempfile::TempDir,
    root: Root,
}

impl Stage {
    fn new() -> Stage {
        let outside = outside();
        let before = snapshot(outside.path());
        let td = tempdir();
        let root = root_in(td.path());
        std::fs::create_dir_all(root.claims_dir()).unwrap();
        Stage {
            outside,
            before,
            _td: td,
            root,
        }
    }

    fn out(&self) -> &Path {
        self.outside.path()
    }

    fn assert_outside_untouched(&self) {
        assert_eq!(
            snapshot(self.outside.path()),
            self.before,
            "something outside the root changed"
        );
    }
}

/// Every verb that writes, renames or deletes, against `key`, plus the
/// CLI's doctor --fix.
fn hammer(root: &Root, key: &str) {
    let _ = acquire(root, key, "attacker-target", &AcquireOpts::default());
    let _ = release(root, key, "gone");
    let _ = release(root, key, "attacker-target");
    let _ = force_release(
        root,
        key,
        &ForceOpts {
            allow_live: true,
            ..ForceOpts::default()
        },
    );
    let _ = doctor_fix(root);
    let (_, err, code) = run_cli(&root.root, &["doctor", "--fix"]);
    assert_ne!(
        code,
        Some(101),
        "doctor --fix panicked: {}",
        String::from_utf8_lossy(&err)
    );
}

#[test]
fn a_symlink_planted_as_a_lockfile_is_never_written_through_or_followed() {
    let st = Stage::new();
    let (root, o) = (&st.root, st.out());
    std::os::unix::fs::symlink(o.join("k.lock"), root.lockfile("k")).unwrap();
    // The link points at a stale-looking claim: following it would make
    // acquire "recover" it by renaming and writing.
    match acquire(root, "k", "me", &AcquireOpts::default()) {
        Err(ClaimError::Corrupted { reason, .. }) => {
            assert!(reason.contains("symlink"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        release(root, "k", "gone").unwrap(),
        ReleaseOutcome::CorruptedLeft { .. }
    ));
    assert_eq!(sweep(root).counts.corrupted, 1);
    hammer(root, "k");
    st.assert_outside_untouched();
}

#[test]
fn a_symlink_planted_as_the_archive_dir_never_moves_a_claim_outside() {
    let st = Stage::new();
    let (root, o) = (&st.root, st.out());
    std::os::unix::fs::symlink(o, root.claims_dir().join(".expired")).unwrap();
    std::fs::write(root.lockfile("k"), dead_claim("k")).unwrap();
    // Stale recovery and force-release both archive: both must refuse.
    match acquire(root, "k", "me", &AcquireOpts::default()) {
        Err(e) => assert!(e.to_string().contains("not a real directory"), "{e}"),
        other => panic!("{other:?}"),
    }
    match force_release(root, "k", &ForceOpts::default()) {
        Err(e) => assert!(e.to_string().contains("not a real directory"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(root.lockfile("k").exists(), "the claim was moved away");
    hammer(root, "k");
    st.assert_outside_untouched();
}

#[test]
fn a_symlink_planted_as_a_mutex_dir_never_leads_outside_even_once_stolen() {
    let st = Stage::new();
    let (root, o) = (&st.root, st.out());
    std::fs::write(root.lockfile("k"), dead_claim("k")).unwrap();
    let m = recovery_mutex_path(&root.lockfile("k"));
    std::os::unix::fs::symlink(o, &m).unwrap();
    let log = root.events_file();
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let em = events_mutex_path(&log);
    std::os::unix::fs::symlink(o.join("sub"), &em).unwrap();
    // Aged past the steal rule, they are stolen as corpses: the links are
    // renamed and unlinked, their targets never entered.
    backdate(&m, 600).unwrap();
    backdate(&em, 600).unwrap();
    let kinds: Vec<_> = doctor(root)
        .into_iter()
        .map(|h| h.path().to_path_buf())
        .collect();
    assert!(kinds.contains(&m) && kinds.contains(&em), "{kinds:?}");
    match acquire(root, "k", "me", &AcquireOpts::default()) {
        Ok(AcquireOutcome::Acquired { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(std::fs::symlink_metadata(&m).is_err());
    hammer(root, "k");
    // Planted again, for doctor --fix alone.
    std::os::unix::fs::symlink(o, &m).unwrap();
    backdate(&m, 600).unwrap();
    let (_, _, code) = run_cli(&root.root, &["doctor", "--fix"]);
    assert!(code.is_some());
    assert!(std::fs::symlink_metadata(&m).is_err());
    st.assert_outside_untouched();
}

#[test]
fn litter_planted_as_symlinks_is_unlinked_by_doctor_fix_never_followed() {
    let st = Stage::new();
    let (root, o) = (&st.root, st.out());
    let cdir = root.claims_dir();
    for (name, target) in [
        (".claim-tmp-1-2-3", o.join("owner")),
        ("k.lock.tmp.1.2", o.join("k.lock")),
        ("k.lock.recovery.d.reap.1.2", o.to_path_buf()),
    ] {
        std::os::unix::fs::symlink(target, cdir.join(name)).unwrap();
        backdate(&cdir.join(name), 600).unwrap();
    }
    let fixes = doctor_fix(root);
    assert!(fixes.iter().all(|f| f.fixed), "{fixes:?}");
    assert!(litter(&cdir).is_empty(), "{:?}", litter(&cdir));
    st.assert_outside_untouched();
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn a_lockfile_that_is_a_directory_a_fifo_or_a_link_to_a_fifo_never_hangs_anything() {
    let td = tempdir();
    let root = root_in(td.path());
    let cdir = root.claims_dir();
    std::fs::create_dir_all(&cdir).unwrap();
    std::fs::create_dir(root.lockfile("dir")).unwrap();
    std::fs::write(root.lockfile("dir").join("inner"), b"x").unwrap();
    mkfifo(&root.lockfile("fifo"));
    mkfifo(&td.path().join("elsewhere-fifo"));
    std::os::unix::fs::symlink(td.path().join("elsewhere-fifo"), root.lockfile("linkfifo"))
        .unwrap();
    let s = sweep(&root);
    assert_eq!(s.counts.corrupted, 3, "{:?}", s.claims);
    assert!(s.claims.iter().all(|c| c.state == ClaimState::Corrupted));
    for key in ["dir", "fifo", "linkfifo"] {
        assert!(matches!(
            acquire(&root, key, "me", &AcquireOpts::default()),
            Err(ClaimError::Corrupted { .. })
        ));
        assert!(matches!(
            release(&root, key, "me"),
            Ok(ReleaseOutcome::CorruptedLeft { .. })
        ));
    }
    // The CLI too, every reading command, bounded by run_cli's watchdog.
    for args in [
        &["list"][..],
        &["doctor"],
        &["status", "fifo"],
        &["status", "dir"],
    ] {
        let (_, err, code) = run_cli(td.path(), args);
        assert_ne!(
            code,
            Some(101),
            "{args:?}: {}",
            String::from_utf8_lossy(&err)
        );
    }
    // An operator can clear each of them: archived, never deleted.
    for key in ["dir", "fifo", "linkfifo"] {
        assert!(matches!(
            force_release(&root, key, &ForceOpts::default()),
            Ok(ForceOutcome::Archived { .. })
        ));
    }
    assert!(td.path().join("elsewhere-fifo").exists());
    assert_eq!(sweep(&root).claims.len(), 0);
}
