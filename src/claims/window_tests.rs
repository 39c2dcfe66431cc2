//! The windows no timing can hit, held open by fault points: a release that
//! meets a recovery or a force-release of its claim in progress, and an
//! archive whose claim was rewritten between its judgement and its rename.

use super::{
    acquire, force_release, release, AcquireOpts, AcquireOutcome, ForceOpts, ForceOutcome,
    ReleaseOutcome, Root,
};
use crate::fault::{self, Point};
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;
use std::time::Duration;

const KEY: &str = "node:window";
/// Generous: the property is "happens at all"; a hang must fail, not stall.
const PATIENCE: Duration = Duration::from_secs(30);

fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("spawn `true`");
    let pid = child.id();
    child.wait().expect("reap `true`");
    pid
}

/// A root whose KEY is held by "old", a holder whose pid is gone: stale.
fn stale_root(td: &Path) -> Root {
    let root = Root::with_events_here(td);
    let opts = AcquireOpts {
        pid: Some(dead_pid()),
        ..AcquireOpts::default()
    };
    match acquire(&root, KEY, "old", &opts) {
        Ok(AcquireOutcome::Acquired { .. }) => root,
        other => panic!("could not plant the stale claim: {other:?}"),
    }
}

fn holder_on_disk(root: &Root) -> Option<String> {
    super::read_claim_file(&root.lockfile(KEY))
        .ok()
        .map(|r| r.holder)
}

fn event_types(root: &Root) -> Vec<String> {
    std::fs::read_to_string(root.events_file())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["type"].as_str().map(str::to_string))
        .collect()
}

/// What the release reached first while the archiver was held inside.
#[derive(Debug, PartialEq, Eq)]
enum Reached {
    /// It waits on the recovery mutex: the archiver's section is safe.
    TheWait,
    /// It is about to unlink the claim it read while the archiver is still
    /// inside: whatever lands at the path next is what it deletes.
    TheUnlink,
}

/// Hold a hook until the test says go.
fn gate() -> (Sender<()>, Mutex<Receiver<()>>) {
    let (tx, rx) = channel();
    (tx, Mutex::new(rx))
}

fn pass(gate: &Mutex<Receiver<()>>) {
    let go = gate.lock().expect("gate").recv_timeout(PATIENCE);
    go.expect("the test never let the window close");
}

/// Run `archiver` (a recovery or a force-release of the stale claim) and
/// stop it inside the recovery mutex, just before its archive; there, the
/// stale holder releases. Once the archiver is through, `then` runs (a
/// newcomer taking the key), and only after that may a release that did
/// not wait go on to its unlink. Returns the release's outcome and what it
/// reached first.
fn release_meets(
    td: &Path,
    root: &Root,
    archiver: impl FnOnce(Root) + Send + 'static,
    then: impl FnOnce(&Root),
) -> (ReleaseOutcome, Reached) {
    let (inside_tx, inside_rx) = channel::<()>();
    let (archive_go, archive_gate) = gate();
    let inside_tx = Mutex::new(inside_tx);
    let _archive = fault::arm(Point::ArchiveRename, td, move |_| {
        let _ = inside_tx.lock().expect("tx").send(());
        pass(&archive_gate);
    });
    let (reached_tx, reached_rx) = channel::<Reached>();
    let waits = Mutex::new(reached_tx.clone());
    let _wait = fault::arm(Point::RecoveryWait, td, move |_| {
        let _ = waits.lock().expect("tx").send(Reached::TheWait);
    });
    let (unlink_go, unlink_gate) = gate();
    let unlinks = Mutex::new(reached_tx);
    let _unlink = fault::arm(Point::ReleaseUnlink, td, move |_| {
        let _ = unlinks.lock().expect("tx").send(Reached::TheUnlink);
        pass(&unlink_gate);
    });

    let a = {
        let root = root.clone();
        std::thread::spawn(move || archiver(root))
    };
    inside_rx
        .recv_timeout(PATIENCE)
        .expect("the archiver never reached its archive");
    let b = {
        let root = root.clone();
        std::thread::spawn(move || release(&root, KEY, "old"))
    };
    let reached = reached_rx
        .recv_timeout(PATIENCE)
        .expect("the release reached neither its wait nor its unlink");
    archive_go.send(()).expect("archiver gone");
    a.join().expect("the archiver panicked");
    then(root);
    let _ = unlink_go.send(());
    let out = b.join().expect("the release panicked").expect("release");
    (out, reached)
}

#[test]
fn a_release_waits_for_a_stale_recovery_in_progress_and_never_unlinks_the_newcomer() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = stale_root(td.path());
    let recover = |root: Root| match acquire(&root, KEY, "new", &AcquireOpts::default()) {
        Ok(AcquireOutcome::Acquired { .. }) => {}
        other => panic!("the recovery did not take the key: {other:?}"),
    };
    let (out, reached) = release_meets(td.path(), &root, recover, |_| {});
    assert_eq!(reached, Reached::TheWait, "the release did not wait");
    assert_eq!(
        out,
        ReleaseOutcome::NotHeld {
            holder: "new".into()
        }
    );
    assert_eq!(holder_on_disk(&root).as_deref(), Some("new"));
    assert!(!event_types(&root).contains(&"claim_released".to_string()));
}

#[test]
fn a_release_waits_for_a_force_release_in_progress_and_never_unlinks_the_newcomer() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = stale_root(td.path());
    let force = |root: Root| match force_release(&root, KEY, &ForceOpts::default()) {
        Ok(ForceOutcome::Archived { .. }) => {}
        other => panic!("the force-release did not archive: {other:?}"),
    };
    let newcomer = |root: &Root| match acquire(root, KEY, "new", &AcquireOpts::default()) {
        Ok(AcquireOutcome::Acquired { .. }) => {}
        // A release that waited may have found the path empty first and
        // said so; the newcomer then takes it all the same.
        other => panic!("the newcomer did not take the key: {other:?}"),
    };
    let (out, reached) = release_meets(td.path(), &root, force, newcomer);
    assert_eq!(reached, Reached::TheWait, "the release did not wait");
    assert!(
        matches!(out, ReleaseOutcome::Absent | ReleaseOutcome::NotHeld { .. }),
        "{out:?}"
    );
    assert_eq!(holder_on_disk(&root).as_deref(), Some("new"));
}

/// Arm the archive's window: its holder rewrites the claim as `rewrite`
/// (a writer that takes no recovery mutex) after it was judged stale.
fn rewritten_at_the_archive(td: &Path, root: &Root, rewrite: Vec<u8>) -> fault::Armed {
    let path = root.lockfile(KEY);
    fault::arm(Point::ArchiveRename, td, move |_| {
        super::atomic::replace(&path, &rewrite).expect("the holder's rewrite");
    })
}

fn live_rewrite(root: &Root) -> Vec<u8> {
    let mut rec = super::read_claim_file(&root.lockfile(KEY)).expect("the stale claim");
    rec.pid = std::process::id() as i32;
    rec.to_lockfile().expect("yaml").into_bytes()
}

fn archived(root: &Root) -> usize {
    std::fs::read_dir(root.claims_dir().join(super::EXPIRED_SUBDIR))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn a_claim_rewritten_between_a_recoverys_judgement_and_its_archive_is_put_back_and_held() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = stale_root(td.path());
    let rewrite = live_rewrite(&root);
    let _armed = rewritten_at_the_archive(td.path(), &root, rewrite.clone());
    match acquire(&root, KEY, "new", &AcquireOpts::default()) {
        Ok(AcquireOutcome::HeldByOther { holder, .. }) => assert_eq!(holder, "old"),
        other => panic!("the rewritten claim was not met as held: {other:?}"),
    }
    assert_eq!(std::fs::read(root.lockfile(KEY)).expect("claim"), rewrite);
    assert_eq!(archived(&root), 0, "the live claim stayed archived");
    assert!(!event_types(&root).contains(&"claim_stale_reclaimed".to_string()));
}

#[test]
fn a_claim_rewritten_between_a_force_releases_judgement_and_its_archive_is_put_back() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = stale_root(td.path());
    let rewrite = live_rewrite(&root);
    let _armed = rewritten_at_the_archive(td.path(), &root, rewrite.clone());
    match force_release(&root, KEY, &ForceOpts::default()) {
        Ok(ForceOutcome::Refused(why)) => assert!(why.contains("changed"), "{why}"),
        other => panic!("archived a claim that changed: {other:?}"),
    }
    assert_eq!(std::fs::read(root.lockfile(KEY)).expect("claim"), rewrite);
    assert_eq!(archived(&root), 0, "the changed claim stayed archived");
    assert!(!event_types(&root).contains(&"claim_force_released".to_string()));
}

#[test]
fn a_release_waiting_on_a_peers_recovery_mutex_sleeps_between_attempts_never_spins() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    match acquire(&root, KEY, "me", &AcquireOpts::default()) {
        Ok(AcquireOutcome::Acquired { .. }) => {}
        other => panic!("could not take the key: {other:?}"),
    }
    // A peer inside the claim's recovery mutex (young, and its token names
    // a live process), letting go after a while.
    let lock_dir = crate::mutex::recovery_mutex_path(&root.lockfile(KEY));
    let peer = crate::mutex::try_lock(&lock_dir)
        .expect("mkdir")
        .expect("free");
    let (_counted, attempts) = fault::count(Point::MutexAttempt, td.path());
    let letting_go = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        drop(peer);
    });
    match release(&root, KEY, "me") {
        Ok(ReleaseOutcome::Released { .. }) => {}
        other => panic!("not released: {other:?}"),
    }
    letting_go.join().expect("the peer");
    // Counted, not timed: one attempt before the wait, one after it; a
    // waiter that retried at once would make thousands in 300 ms.
    let n = attempts.load(std::sync::atomic::Ordering::Relaxed);
    assert!(n <= 20, "{n} attempts on a mutex held for 300 ms: a spin");
}
