//! The mkdir mutex: steals, put-backs, planted owners, and waiting without a spin.

use super::*;
use crate::fault;
use tempfile::TempDir;

const OLD: u64 = STALE_MUTEX_STEAL.as_secs() + 60;

#[test]
fn a_fresh_mutex_is_never_stolen_and_a_corpse_always_is() {
    let td = TempDir::new().unwrap();
    let m = td.path().join("x.lock.recovery.d");
    std::fs::create_dir(&m).unwrap();
    assert!(!steal_if_stale(&m));
    assert!(m.exists());
    backdate(&m, OLD).unwrap();
    assert!(steal_if_stale(&m));
    assert!(!m.exists());
    // nothing left behind under a reap name either
    assert_eq!(std::fs::read_dir(td.path()).unwrap().count(), 0);
}

#[test]
fn an_owner_is_gone_only_when_its_pid_is_dead_or_started_after_the_stamp() {
    let host = crate::sys::hostname();
    let now_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id();
    // Running, and started before this stamp: it may be the owner.
    assert!(!owner_is_gone(&format!("{host}:{pid}:{now_ns}")));
    // Running, but started after a stamp from 1970, or from an hour ago:
    // the pid was reused.
    assert!(owner_is_gone(&format!("{host}:{pid}:1000")));
    let hour_ago_ns = now_ns - 3_600 * 1_000_000_000;
    assert!(owner_is_gone(&format!("{host}:{pid}:{hour_ago_ns}")));
    // Another host's pid says nothing here; nor does our own.
    assert!(!owner_is_gone(&format!("elsewhere:{pid}:1000")));
    assert!(!owner_is_gone(&format!(
        "{host}:{}:1000",
        std::process::id()
    )));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(owner_is_gone(&format!("{host}:{pid}:{now_ns}")));
    // A young dir of a dead owner is stolen; one whose token changed is not.
    let td = TempDir::new().unwrap();
    let m = td.path().join("m.d");
    std::fs::create_dir(&m).unwrap();
    std::fs::write(m.join("owner"), format!("{host}:{pid}:{now_ns}")).unwrap();
    assert!(steal_if_stale(&m));
    assert!(!m.exists());
}

#[test]
fn a_dangling_symlink_mutex_never_spins() {
    let td = TempDir::new().unwrap();
    let m = td.path().join("events.jsonl.lock.d");
    std::os::unix::fs::symlink(td.path().join("nowhere"), &m).unwrap();
    assert!(!steal_if_stale(&m), "fresh dangling link was stolen");
    // Counted, not timed: a loop that retried at once (a steal answering
    // "retry now" for a link mkdir calls present) would pass any clock. The
    // back-off from 1 ms to 100 ms makes about ten attempts in 300 ms.
    let (_armed, attempts) = fault::count(fault::Point::MutexAttempt, td.path());
    let t = Instant::now();
    assert!(lock(&m, Duration::from_millis(300), true).is_none());
    let (n, took) = (attempts.load(Ordering::Relaxed), t.elapsed());
    assert!(took >= Duration::from_millis(300));
    assert!(n <= 20, "{n} attempts in {took:?}: a spin");
    backdate(&m, OLD).unwrap();
    assert!(steal_if_stale(&m));
    assert!(std::fs::symlink_metadata(&m).is_err());
}

/// Arm the steal's last window: just before its rename, another stealer
/// takes the corpse away and `fresh` puts a mutex in its place.
fn swap_in_at_the_steal(
    td: &TempDir,
    fresh: impl Fn(&Path) -> Option<DirMutex> + Send + Sync + 'static,
) -> (
    fault::Armed,
    std::sync::Arc<std::sync::Mutex<Option<DirMutex>>>,
) {
    let held = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = held.clone();
    let once = std::sync::atomic::AtomicBool::new(false);
    let armed = fault::arm(fault::Point::StealRename, td.path(), move |dir| {
        if once.swap(true, Ordering::SeqCst) {
            return;
        }
        let away = dir.with_file_name("taken-by-another-stealer");
        std::fs::rename(dir, &away).expect("the other stealer's rename");
        std::fs::remove_dir_all(&away).expect("and its cleanup");
        *keep.lock().expect("lock") = fresh(dir);
    });
    (armed, held)
}

#[test]
fn a_live_mutex_swapped_in_under_a_steal_is_put_back_with_its_owner() {
    let td = TempDir::new().unwrap();
    let m = td.path().join("k.lock.recovery.d");
    std::fs::create_dir(&m).unwrap();
    std::fs::write(m.join("owner"), "elsewhere:1:1").unwrap();
    backdate(&m, OLD).unwrap();
    // A fresh holder that stamped its token: the token tells it apart.
    let (armed, held) = swap_in_at_the_steal(&td, |dir| {
        Some(try_lock(dir).expect("mkdir").expect("free"))
    });
    assert!(!steal_if_stale(&m), "took a live mutex");
    drop(armed);
    let fresh = held.lock().unwrap().take().expect("the fresh holder");
    assert_eq!(read_owner(&m), fresh.token(), "the live mutex is not back");
    assert_eq!(
        std::fs::read_dir(td.path()).unwrap().count(),
        1,
        "a reaped dir was left"
    );
    drop(fresh);
    assert!(!m.exists());
}

#[test]
fn an_unstamped_mutex_swapped_in_under_a_steal_by_age_is_put_back() {
    let td = TempDir::new().unwrap();
    let m = td.path().join("k.lock.recovery.d");
    std::fs::create_dir(&m).unwrap();
    backdate(&m, OLD).unwrap();
    // A fresh holder between its mkdir and its stamp: no token, but young.
    let (armed, _held) = swap_in_at_the_steal(&td, |dir| {
        std::fs::create_dir(dir).expect("mkdir");
        None
    });
    assert!(!steal_if_stale(&m), "took a young mutex for the corpse");
    drop(armed);
    assert!(m.is_dir(), "the young mutex is not back");
    assert!(age(&m).is_some_and(|a| a < STALE_MUTEX_STEAL));
    assert_eq!(std::fs::read_dir(td.path()).unwrap().count(), 1);
}

/// Bytes this thread has read (`rchar` of /proc/thread-self/io).
fn thread_rchar() -> u64 {
    std::fs::read_to_string("/proc/thread-self/io")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("rchar: ").and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn mkfifo(p: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn a_planted_owner_is_no_owner_read_without_blocking_or_running_on() {
    let td = TempDir::new().unwrap();
    type Plant = fn(&Path);
    let plants: [(&str, Plant); 5] = [
        ("fifo", mkfifo),
        ("socket", |p| {
            std::mem::forget(std::os::unix::net::UnixListener::bind(p).unwrap())
        }),
        ("zero", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
        ("dir", |p| std::fs::create_dir(p).unwrap()),
        ("huge", |p| {
            std::fs::write(p, vec![b'x'; OWNER_MAX_BYTES as usize + 1]).unwrap()
        }),
    ];
    for (what, plant) in plants {
        let m = td.path().join(format!("{what}.lock.recovery.d"));
        std::fs::create_dir(&m).unwrap();
        plant(&m.join("owner"));
        // On a thread, so that a hang fails the test instead of stalling it.
        let (tx, rx) = std::sync::mpsc::channel();
        let dir = m.clone();
        std::thread::spawn(move || {
            let before = thread_rchar();
            let owner = read_owner(&dir);
            let young_kept = !steal_if_stale(&dir);
            let _ = tx.send((owner, young_kept, thread_rchar() - before));
        });
        let (owner, young_kept, read) = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("reading a {what} owner hung"));
        assert_eq!(owner, "", "{what}");
        assert!(young_kept, "a young mutex with a {what} owner was stolen");
        assert!(read < 64 * 1024, "{what}: {read} bytes read");
        assert!(foreign_owner(&m).is_some(), "{what} not named");
        let h = holder(&m).expect("held");
        assert!(h.foreign.is_some(), "a waiter is not told of the {what}");
        // Past the age rule it is a corpse like any other, taken by lock.
        backdate(&m, OLD).unwrap();
        let g = lock(&m, Duration::from_secs(5), true).expect("stolen");
        assert_eq!(read_owner(&m), g.token());
        assert_eq!(foreign_owner(&m), None);
    }
}

#[test]
fn a_process_can_steal_one_path_again_and_again() {
    let td = TempDir::new().unwrap();
    let m = td.path().join("m.d");
    for _ in 0..3 {
        std::fs::create_dir(&m).unwrap();
        backdate(&m, OLD).unwrap();
        assert!(steal_if_stale(&m));
    }
}

#[test]
fn a_victims_late_release_leaves_the_new_holder_intact() {
    let td = TempDir::new().unwrap();
    let m = td.path().join("m.d");
    let victim = lock(&m, Duration::from_secs(1), true).unwrap();
    backdate(&m, OLD).unwrap();
    assert!(steal_if_stale(&m));
    let heir = lock(&m, Duration::from_secs(1), true).unwrap();
    assert_ne!(heir.token(), victim.token());
    drop(victim);
    assert!(m.exists(), "victim's release deleted the heir's mutex");
    assert_eq!(read_owner(&m), heir.token());
    drop(heir);
    assert!(!m.exists());
}

#[test]
fn a_timed_out_waiter_leaves_a_fresh_mutex_alone() {
    let td = TempDir::new().unwrap();
    let m = td.path().join("m.d");
    let holder = lock(&m, Duration::from_secs(1), true).unwrap();
    assert!(lock(&m, Duration::from_millis(250), true).is_none());
    assert_eq!(read_owner(&m), holder.token());
}

#[test]
fn concurrent_stealers_of_one_corpse_produce_exactly_one_holder_at_a_time() {
    let td = TempDir::new().unwrap();
    let m = td.path().join("m.d");
    std::fs::create_dir(&m).unwrap();
    backdate(&m, OLD).unwrap();
    let inside = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let (m, inside) = (m.clone(), inside.clone());
            std::thread::spawn(move || {
                let g = lock(&m, Duration::from_secs(30), true).expect("acquired");
                let n = inside.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
                inside.fetch_sub(1, Ordering::SeqCst);
                drop(g);
                n
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 0, "two holders inside the mutex at once");
    }
    assert!(!m.exists());
}

#[test]
fn a_winner_whose_dir_was_taken_away_before_it_stamped_holds_nothing() {
    let td = TempDir::new().unwrap();
    let m = td.path().join("k.lock.recovery.d");
    // A stealer that judged the unstamped dir a corpse takes it between
    // the winner's mkdir and its stamp.
    let _armed = fault::arm(fault::Point::MutexStamp, td.path(), |dir| {
        std::fs::remove_dir(dir).expect("the stealer takes the dir");
    });
    let got = try_lock(&m).expect("the mkdir itself succeeds");
    assert!(got.is_none(), "holds a mutex whose dir is gone");
    assert!(std::fs::symlink_metadata(&m).is_err());
}

#[test]
fn a_winner_whose_dir_was_replaced_and_stamped_before_it_stamped_leaves_the_new_holder_alone() {
    let td = TempDir::new().unwrap();
    let m = td.path().join("k.lock.recovery.d");
    // The dir is taken away and a new holder makes and stamps its own
    // before the first winner writes its token.
    let _armed = fault::arm(fault::Point::MutexStamp, td.path(), |dir| {
        std::fs::remove_dir(dir).expect("taken away");
        std::fs::create_dir(dir).expect("the new holder's mkdir");
        std::fs::write(dir.join("owner"), "elsewhere:7:7").expect("and its stamp");
    });
    let got = try_lock(&m).expect("the mkdir itself succeeds");
    assert!(got.is_none(), "two holders of one mutex");
    assert_eq!(read_owner(&m), "elsewhere:7:7", "the new holder's token");
}

/// Set `path`'s mtime to `secs` since the epoch, without following a link.
fn set_mtime(path: &Path, secs: i64) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let t = libc::timeval {
        tv_sec: secs as libc::time_t,
        tv_usec: 0,
    };
    // SAFETY: c is a valid NUL-terminated path; the array holds two timevals.
    assert_eq!(unsafe { libc::lutimes(c.as_ptr(), [t, t].as_ptr()) }, 0);
}

#[test]
fn a_steal_renames_only_the_dir_it_judged_never_another_of_the_same_age_in_its_place() {
    use std::os::unix::fs::MetadataExt;
    let td = TempDir::new().unwrap();
    let m = td.path().join("k.lock.recovery.d");
    std::fs::create_dir(&m).unwrap();
    std::fs::write(m.join("owner"), "elsewhere:1:1").unwrap();
    backdate(&m, OLD).unwrap();
    let corpse_mtime = std::fs::symlink_metadata(&m).unwrap().mtime();
    // Between the judgement and the rename another stealer moves the corpse
    // aside (kept, so its inode cannot be handed to the new dir) and a
    // holder's dir takes the path with the very same mtime: only the
    // inode tells them apart.
    let _swap = fault::arm(fault::Point::StealRecheck, td.path(), move |dir| {
        std::fs::rename(dir, dir.with_file_name("aside")).expect("moved aside");
        std::fs::create_dir(dir).expect("the holder's mkdir");
        std::fs::write(dir.join("owner"), "elsewhere:2:2").expect("its stamp");
        set_mtime(dir, corpse_mtime);
    });
    let (_counted, renames) = fault::count(fault::Point::StealRename, td.path());
    assert!(!steal_if_stale(&m), "took the holder's dir for the corpse");
    assert_eq!(
        renames.load(Ordering::Relaxed),
        0,
        "the holder's dir was moved (and put back): a gap a third process can mkdir into"
    );
    assert_eq!(read_owner(&m), "elsewhere:2:2");
}

#[test]
fn a_mutex_gone_by_the_time_a_waiter_looks_at_it_is_retried_at_once_not_waited_on() {
    // Its holder released between the waiter's failed mkdir and its look:
    // the path is free, and "wait" would sit out a poll for nothing (up to
    // 100 ms on every contended events append).
    let td = TempDir::new().unwrap();
    assert!(steal_if_stale(&td.path().join("k.lock.recovery.d")));
}
