//! The sweep behind `list` and `doctor`: every `*.lock` classified with a
//! reason, whatever else lies in the claims dir, and doctor's fixes limited to
//! what is provably abandoned.

use crate::common::*;
use claimtop::claims::mutex::{self, STALE_MUTEX_STEAL};
use claimtop::claims::{
    doctor, doctor_fix, hazard, now_ms, sweep, AcquireOpts, ClaimState, Counts, HazardKind, Root,
};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use tempfile::TempDir;

const OLD: u64 = STALE_MUTEX_STEAL.as_secs() + 60;

/// (key, state, error) of every listed claim, in sweep order.
fn listed(root: &Root) -> Vec<(String, ClaimState, Option<String>)> {
    sweep(root)
        .claims
        .into_iter()
        .map(|c| (c.key, c.state, c.error))
        .collect()
}

fn state_of(root: &Root, key: &str) -> (ClaimState, String, Option<String>) {
    let s = sweep(root);
    let item = s
        .claims
        .into_iter()
        .find(|c| c.key == key)
        .unwrap_or_else(|| panic!("{key:?} not listed"));
    (item.state, item.why, item.error)
}

#[test]
fn every_lockfile_is_classified_and_keys_are_decoded_from_file_names() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, "node:a b", "pty:live", &AcquireOpts::default());
    plant(&root, &record("session:stale", "h", dead_pid(), now_ms()));
    let opts = AcquireOpts {
        pid: Some(dead_pid() as u32),
        ttl_ms: Some(600_000),
        ..Default::default()
    };
    must_acquire(&root, "dispatch:走", "pty:suspect", &opts);
    plant_bytes(&root, "corrupt", b"- a\n- list\n");

    let s = sweep(&root);
    assert_eq!(s.root, td.path());
    let got: Vec<(String, ClaimState)> =
        s.claims.iter().map(|c| (c.key.clone(), c.state)).collect();
    assert_eq!(
        got,
        vec![
            ("corrupt".to_string(), ClaimState::Corrupted),
            ("dispatch:走".to_string(), ClaimState::Suspect),
            ("node:a b".to_string(), ClaimState::Live),
            ("session:stale".to_string(), ClaimState::Stale),
        ]
    );
    assert_eq!(
        s.counts,
        Counts {
            live: 1,
            suspect: 1,
            stale: 1,
            corrupted: 1,
            unreadable: 0,
            last_known: 0
        }
    );
    // The sweep reads; it never reclaims or archives.
    assert!(!expired_dir(&root).exists());
}

#[test]
fn each_verdict_gives_its_reason_in_words() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let me = std::process::id() as i32;
    let now = now_ms();
    must_acquire(&root, "live", "h", &AcquireOpts::default());
    plant(&root, &record("gone", "h", dead_pid(), now));
    plant(&root, &record("reused", "h", me, 1));
    let mut far = record("far", "h", me, now);
    far.machine_id = Some("another-machine:1".into());
    plant(&root, &far);
    let mut hybrid = record("hybrid", "h", me, now);
    hybrid.expires_at = Some(now - 5_000);
    plant(&root, &hybrid);
    let mut suspect = record("suspect", "h", dead_pid(), now);
    suspect.expires_at = Some(now + 600_000);
    plant(&root, &suspect);

    for (key, state, words) in [
        ("live", ClaimState::Live, "is alive"),
        ("gone", ClaimState::Stale, "is gone"),
        ("reused", ClaimState::Stale, "reused"),
        ("far", ClaimState::Stale, "another machine"),
        ("hybrid", ClaimState::Live, "TTL expired"),
        (
            "suspect",
            ClaimState::Suspect,
            "TTL protects a dead holder until",
        ),
    ] {
        let (got, why, _) = state_of(&root, key);
        assert_eq!(got, state, "{key}: {why}");
        assert!(why.contains(words), "{key}: {why:?} lacks {words:?}");
    }
    let far_hazards: Vec<_> = sweep(&root)
        .hazards
        .into_iter()
        .filter(|h| h.kind == hazard::FOREIGN_MACHINE)
        .collect();
    assert_eq!(far_hazards.len(), 1);
    assert_eq!(far_hazards[0].path(), root.lockfile("far"));
}

#[test]
fn bad_lockfiles_are_corrupted_or_unreadable_items_with_a_reason_and_never_abort_the_sweep() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, "zz-good", "h", &AcquireOpts::default());
    let valid = record("trunc", "h", 1, now_ms()).to_yaml().unwrap();
    plant_bytes(&root, "trunc", &valid.as_bytes()[..valid.len() / 2]);
    plant_bytes(&root, "empty", b"");
    plant_bytes(&root, "binary", b"\x00\xff\xfe\x01\x02");
    plant_bytes(&root, "huge", &vec![b'x'; 2 << 20]);
    std::fs::create_dir(root.lockfile("dir")).unwrap();
    let outside = td.path().join("outside.yaml");
    std::fs::write(&outside, &valid).unwrap();
    std::os::unix::fs::symlink(&outside, root.lockfile("link")).unwrap();
    let fifo = std::ffi::CString::new(root.lockfile("fifo").as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);

    let got = listed(&root);
    let reason = |key: &str| {
        got.iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, state, err)| {
                assert_eq!(*state, ClaimState::Corrupted, "{key}");
                err.clone().unwrap_or_default()
            })
            .unwrap_or_else(|| panic!("{key} not listed in {got:?}"))
    };
    for key in ["trunc", "empty", "binary"] {
        assert!(!reason(key).is_empty(), "{key} has no reason");
    }
    // Too big to read is not proof of corruption: unreadable, held.
    let huge = got
        .iter()
        .find(|(k, _, _)| k == "huge")
        .expect("huge listed");
    assert_eq!(huge.1, ClaimState::Unreadable);
    assert!(
        huge.2.as_deref().unwrap_or("").contains("larger"),
        "{huge:?}"
    );
    assert!(reason("dir").contains("directory"), "{}", reason("dir"));
    assert!(reason("link").contains("symlink"), "{}", reason("link"));
    assert!(reason("fifo").contains("not a regular file"));
    assert_eq!(got.last().unwrap().1, ClaimState::Live, "{got:?}");
    let counts = sweep(&root).counts;
    assert_eq!((counts.corrupted, counts.unreadable), (6, 1));
    // Not followed, not touched.
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), valid);
}

#[test]
fn a_non_utf8_file_name_is_a_hazard_not_a_crash() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, "ok", "h", &AcquireOpts::default());
    let odd = root
        .claims_dir()
        .join(std::ffi::OsStr::from_bytes(b"bad\xff.lock"));
    std::fs::write(&odd, b"whatever").unwrap();
    let s = sweep(&root);
    assert_eq!(s.claims.len(), 1);
    assert!(
        s.hazards
            .iter()
            .any(|h| h.kind == hazard::UNREADABLE && h.path() == odd),
        "{:?}",
        s.hazards
    );
}

#[test]
fn a_missing_claims_dir_is_an_empty_root_and_a_file_in_its_place_is_a_hazard() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let s = sweep(&root);
    assert!(s.claims.is_empty() && s.hazards.is_empty(), "{s:?}");
    assert!(
        !td.path().join(".fno").exists(),
        "a sweep created something"
    );

    std::fs::create_dir_all(td.path().join(".fno")).unwrap();
    std::fs::write(root.claims_dir(), b"not a dir").unwrap();
    let s = sweep(&root);
    assert!(s.claims.is_empty());
    assert_eq!(s.hazards.len(), 1, "{:?}", s.hazards);
    assert_eq!(s.hazards[0].kind, hazard::UNREADABLE);
    assert_eq!(s.hazards[0].path(), root.claims_dir());
}

/// A root with one of each hazard plus young (in-flight) look-alikes.
struct Hazards {
    td: TempDir,
    corpse: PathBuf,
    young_mutex: PathBuf,
    old_temp: PathBuf,
    young_temp: PathBuf,
    events_corpse: PathBuf,
}

fn hazards() -> Hazards {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    must_acquire(&root, "live", "h", &AcquireOpts::default());
    plant_bytes(&root, "corrupt", b"{{{{");
    let mut far = record("far", "h", 1, now_ms());
    far.machine_id = Some("elsewhere:1".into());
    plant(&root, &far);
    let dir = root.claims_dir();
    let corpse = dir.join("corrupt.lock.recovery.d");
    std::fs::create_dir(&corpse).unwrap();
    mutex::backdate(&corpse, OLD).unwrap();
    let young_mutex = dir.join("live.lock.recovery.d");
    std::fs::create_dir(&young_mutex).unwrap();
    let old_temp = dir.join(".claim-tmp-1-2-3");
    std::fs::write(&old_temp, b"half").unwrap();
    mutex::backdate(&old_temp, OLD).unwrap();
    let young_temp = dir.join("live.lock.tmp.9.9");
    std::fs::write(&young_temp, b"in flight").unwrap();
    let events_corpse = claimtop::events::emit::events_mutex_path(&root.events_file());
    std::fs::create_dir_all(&events_corpse).unwrap();
    mutex::backdate(&events_corpse, OLD).unwrap();
    Hazards {
        td,
        corpse,
        young_mutex,
        old_temp,
        young_temp,
        events_corpse,
    }
}

/// Every path under the root with its bytes (dirs as empty), to compare.
fn snapshot(dir: &std::path::Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
                out.push((p, Vec::new()));
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn doctor_reports_each_hazard_once_and_changes_nothing() {
    let h = hazards();
    let root = root_in(&h.td);
    let before = snapshot(h.td.path());
    let mut kinds: Vec<(HazardKind, PathBuf)> = doctor(&root)
        .into_iter()
        .map(|x| (x.kind.clone(), x.path().to_path_buf()))
        .collect();
    kinds.sort_by(|a, b| a.1.cmp(&b.1));
    let mut want = vec![
        (hazard::STALE_MUTEX.into(), h.corpse.clone()),
        (hazard::TEMP_LITTER.into(), h.old_temp.clone()),
        (hazard::CORRUPTED_CLAIM.into(), root.lockfile("corrupt")),
        (hazard::FOREIGN_MACHINE.into(), root.lockfile("far")),
        (hazard::STALE_MUTEX.into(), h.events_corpse.clone()),
    ];
    want.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(kinds, want);
    assert_eq!(snapshot(h.td.path()), before);
}

#[test]
fn doctor_fix_clears_only_what_is_provably_abandoned() {
    let h = hazards();
    let root = root_in(&h.td);
    let claims_before: Vec<Vec<u8>> = ["live", "corrupt", "far"]
        .iter()
        .map(|k| std::fs::read(root.lockfile(k)).unwrap())
        .collect();
    let fixes = doctor_fix(&root);
    let fixed: Vec<(HazardKind, bool)> = fixes
        .iter()
        .map(|f| (f.hazard.kind.clone(), f.fixed))
        .collect();
    for (kind, should) in [
        (hazard::STALE_MUTEX, true),
        (hazard::TEMP_LITTER, true),
        (hazard::CORRUPTED_CLAIM, false),
        (hazard::FOREIGN_MACHINE, false),
    ] {
        assert!(
            fixed.contains(&(kind.into(), should)),
            "{kind:?} in {fixed:?}"
        );
    }
    assert!(!h.corpse.exists() && !h.old_temp.exists() && !h.events_corpse.exists());
    // In-flight look-alikes and every claim are left exactly as they were.
    assert!(h.young_mutex.exists() && h.young_temp.exists());
    let claims_after: Vec<Vec<u8>> = ["live", "corrupt", "far"]
        .iter()
        .map(|k| std::fs::read(root.lockfile(k)).unwrap())
        .collect();
    assert_eq!(claims_after, claims_before);
    let left: Vec<HazardKind> = doctor(&root).into_iter().map(|x| x.kind).collect();
    assert_eq!(
        left,
        vec![hazard::CORRUPTED_CLAIM, hazard::FOREIGN_MACHINE],
        "sorted by path: corrupt.lock < far.lock"
    );
}

#[test]
fn a_forked_lock_under_a_non_canonical_name_or_a_misnamed_record_is_a_key_mismatch_hazard() {
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let me = std::process::id() as i32;
    // The canonical file, and a lowercase-hex twin a foreign encoder wrote:
    // two live holders of node:x, each in its own file.
    plant(&root, &record("node:x", "pty:a", me, now_ms()));
    let twin = root.claims_dir().join("node%3ax.lock");
    std::fs::write(
        &twin,
        record("node:x", "pty:b", me, now_ms()).to_yaml().unwrap(),
    )
    .unwrap();
    // A file named for one key holding another's record.
    let misnamed = plant_bytes(
        &root,
        "node:z",
        record("node:y", "pty:c", me, now_ms())
            .to_yaml()
            .unwrap()
            .as_bytes(),
    );

    let mismatches: Vec<PathBuf> = doctor(&root)
        .into_iter()
        .filter(|h| h.kind == hazard::KEY_MISMATCH)
        .map(|h| h.path().to_path_buf())
        .collect();
    // Hazards come sorted by path.
    assert_eq!(mismatches, vec![misnamed, twin]);
    // Reported, never fixed: which file is the real lock needs a human.
    assert!(doctor_fix(&root)
        .iter()
        .filter(|f| f.hazard.kind == hazard::KEY_MISMATCH)
        .all(|f| !f.fixed));
    assert!(root.claims_dir().join("node%3ax.lock").exists());
}

#[test]
fn a_root_big_enough_to_be_read_on_several_threads_lists_what_status_says_key_by_key() {
    // Past the size at which the sweep hands files to helper threads: every
    // item must still carry its own key's verdict, in key order.
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    let dead = dead_pid();
    let me = std::process::id() as i32;
    let n = 3_000;
    for i in 0..n {
        let key = format!("bulk:{i:05}");
        match i % 7 {
            0 => drop(plant_bytes(&root, &key, b"{broken: [")),
            1 => drop(plant_bytes(&root, &key, b"")),
            2 => std::fs::create_dir(root.lockfile(&key)).unwrap(),
            3 | 4 => drop(plant(&root, &record(&key, "h-dead", dead, now_ms()))),
            _ => drop(plant(&root, &record(&key, "h-live", me, now_ms()))),
        }
    }
    let sw = sweep(&root);
    assert_eq!(sw.claims.len(), n);
    let keys: Vec<&str> = sw.claims.iter().map(|c| c.key.as_str()).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(keys, sorted, "items are in key order");
    let mut counts = Counts::default();
    for item in &sw.claims {
        let one = claimtop::claims::status(&root, &item.key);
        assert_eq!(
            (item.state, &item.why, &item.error, &item.record),
            (one.state, &one.why, &one.error, &one.record),
            "{}",
            item.key
        );
        counts.add(item.state);
    }
    assert_eq!(sw.counts, counts);
    let per_state = n / 7;
    assert!(counts.corrupted >= 3 * per_state, "{counts:?}");
    assert!(counts.stale >= 2 * per_state && counts.live >= 2 * per_state);
}

/// A publisher re-reads only the key that changed; its hazard list, patched
/// with [`patch_item_hazards`], must equal what a fresh sweep finds after
/// every kind of change: corrupted, mended, moved to another machine,
/// given a record naming another key, deleted, and created — beside a
/// mutex corpse and temp litter the patch must leave alone.
#[test]
fn a_hazard_list_patched_for_one_changed_lockfile_equals_a_fresh_sweeps() {
    use claimtop::claims::{patch_item_hazards, status};
    let td = TempDir::new().unwrap();
    let root = root_in(&td);
    for k in ["a", "b", "c", "m", "z"] {
        plant(&root, &record(k, "h", dead_pid(), now_ms()));
    }
    plant_bytes(&root, "broken", b"{{{ not yaml");
    let corpse = root.claims_dir().join("m.lock.recovery.d");
    std::fs::create_dir(&corpse).unwrap();
    std::fs::write(corpse.join("owner"), "gone:1:2").unwrap();
    let litter = root.claims_dir().join(".claim-tmp-1-2-3");
    std::fs::write(&litter, "key: m\n").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(OLD);
    for p in [&corpse, &litter] {
        std::fs::File::open(p).unwrap().set_modified(old).unwrap();
    }

    let mut hazards = sweep(&root).hazards;
    assert_eq!(hazards.len(), 3, "corpse, litter, broken: {hazards:?}");
    let mut far = record("c", "h", dead_pid(), now_ms());
    far.machine_id = Some("elsewhere:1".into());
    let renamed_bytes = record("other-key", "h", dead_pid(), now_ms())
        .to_yaml()
        .unwrap();
    // Each change is made on disk, then only its key re-read and patched in.
    let mut patched = |key: &str, what: &str| {
        let s = status(&root, key);
        patch_item_hazards(&mut hazards, &root.lockfile(key), Some(&s));
        assert_eq!(hazards, sweep(&root).hazards, "after {what}");
    };
    plant_bytes(&root, "a", b"- not\n- a map\n");
    patched("a", "a corrupted");
    plant(&root, &record("broken", "h", dead_pid(), now_ms()));
    patched("broken", "broken mended");
    plant(&root, &far);
    patched("c", "c on another machine");
    plant_bytes(&root, "z", renamed_bytes.as_bytes());
    patched("z", "z names another key");
    std::fs::remove_file(root.lockfile("c")).unwrap();
    patched("c", "c deleted");
    plant_bytes(&root, "n", b"]");
    patched("n", "n created corrupted");
    plant(&root, &record("a", "h", dead_pid(), now_ms()));
    patched("a", "a mended");
    let kinds: Vec<&str> = hazards.iter().map(|h| h.kind.name()).collect();
    for want in [
        hazard::STALE_MUTEX,
        hazard::TEMP_LITTER,
        hazard::KEY_MISMATCH,
        hazard::CORRUPTED_CLAIM,
    ] {
        assert!(kinds.contains(&want.name), "{} not in {kinds:?}", want.name);
    }
}
