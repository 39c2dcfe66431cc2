//! Filesystem notifications → messages.
//!
//! The claims dir is watched non-recursively, and so is its parent and the
//! events file's directory: the parent is what tells us the claims dir was
//! created, deleted or replaced (an inotify watch follows the old inode).
//! A directory that does not exist yet is waited for by watching its nearest
//! existing ancestor. Batches come debounced (notify-debouncer-full); each
//! becomes `FsChanged` with only the lockfile-dir paths it named, a poke of
//! the events follower, or a `Rescan` when notify says it lost track.

use super::action::Action;
use super::app::EVENTS_RING;
use super::collect::Input;
use crate::claims::{entry_behind, Root};
use crate::events::tail::Follower;
use crate::store::fs_events::{touched, Touched};
use notify_debouncer_full::notify::RecursiveMode;
use notify_debouncer_full::{new_debouncer, DebounceEventResult, DebouncedEvent};
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// How long the debouncer waits for a burst to settle. Small against the
/// 250 ms change-to-screen target, large enough to fold a create + write +
/// rename of one lockfile into one re-read.
pub const DEBOUNCE: Duration = Duration::from_millis(100);
/// How often the debouncer looks for settled events.
const DEBOUNCE_TICK: Duration = Duration::from_millis(50);
/// The slow safety net: a full sweep even when notify said nothing, for
/// filesystems whose notifications are lossy (network mounts) and for
/// hazards that appear by ageing rather than by an event. A sweep of 10 000
/// lockfiles costs ~150 ms of CPU; once a minute keeps it a quarter of a
/// percent of a core while idle.
pub const SAFETY_NET: Duration = Duration::from_secs(60);
/// The events follower polls at least this often even without a change.
pub const EVENTS_POLL: Duration = Duration::from_secs(1);

/// What a batch of notifications means for the dashboard.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Entries of the claims dir that changed.
    pub changed: BTreeSet<PathBuf>,
    pub events_file: bool,
    /// Something above the claims dir moved: recheck the watches.
    pub structure: bool,
    pub rescan: bool,
}

/// Sort one debounced batch.
pub fn classify(events: &[DebouncedEvent], claims_dir: &Path, events_file: &Path) -> Batch {
    let mut b = Batch::default();
    for ev in events {
        if ev.need_rescan() {
            b.rescan = true;
        }
        for t in touched(ev, claims_dir, events_file) {
            match t {
                Touched::EventsLog => b.events_file = true,
                Touched::Entry(p) => {
                    b.changed.insert(p.to_path_buf());
                    b.changed.extend(entry_behind(p));
                }
                Touched::Other(p) => {
                    b.structure = true;
                    b.rescan |= p == claims_dir;
                }
            }
        }
    }
    b
}

/// The directories to watch now: each wanted dir if it exists, else its
/// nearest existing ancestor.
fn wanted(root: &Root) -> BTreeSet<PathBuf> {
    let claims = root.claims_dir();
    let mut dirs = vec![claims.clone()];
    if let Some(p) = claims.parent() {
        dirs.push(p.to_path_buf());
    }
    if let Some(p) = root.events_file().parent() {
        dirs.push(p.to_path_buf());
    }
    dirs.into_iter()
        .filter_map(|d| nearest_existing(&d))
        .collect()
}

fn nearest_existing(p: &Path) -> Option<PathBuf> {
    p.ancestors()
        .find(|a| std::fs::metadata(a).is_ok_and(|m| m.is_dir()))
        .map(Path::to_path_buf)
}

/// Identity of the claims dir, to notice it being replaced under one name.
fn dir_id(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// A notify error in words: its `Display` appends the paths in debug
/// format, which the status line already names.
fn notify_words(e: &notify_debouncer_full::notify::Error) -> String {
    use notify_debouncer_full::notify::ErrorKind as K;
    match &e.kind {
        K::Io(io) => io.kind().to_string(),
        K::PathNotFound => "it does not exist".into(),
        K::MaxFilesWatch => "the system's limit on watches is reached".into(),
        K::Generic(s) => crate::sanitize::sanitize(s).into_owned(),
        K::WatchNotFound | K::InvalidConfig(_) => "the watch could not be set up".into(),
    }
}

/// Watch `root` until `out` hangs up. Never returns early on a notify
/// failure: it falls back to the safety-net sweep and says so.
pub fn watch(root: Root, out: Sender<Input>, poke_events: Sender<()>) {
    let (tx, rx) = channel::<DebounceEventResult>();
    let mut deb = match new_debouncer(DEBOUNCE, Some(DEBOUNCE_TICK), tx) {
        Ok(d) => d,
        Err(e) => {
            let _ = out.send(Input::Warning(format!(
                "file notifications unavailable ({e}); rescanning every {}s",
                SAFETY_NET.as_secs()
            )));
            safety_net_only(&out, &poke_events);
            return;
        }
    };
    let claims_dir = root.claims_dir();
    let events_file = root.events_file();
    let mut watched: BTreeSet<PathBuf> = BTreeSet::new();
    let mut claims_id = None;
    let mut rewatch = |watched: &mut BTreeSet<PathBuf>, claims_id: &mut Option<(u64, u64)>| {
        let want = wanted(&root);
        let id = dir_id(&claims_dir);
        let replaced = id != *claims_id;
        for gone in watched.difference(&want) {
            let _ = deb.unwatch(gone);
        }
        for p in &want {
            if !watched.contains(p) || (replaced && *p == claims_dir) {
                if replaced && *p == claims_dir {
                    let _ = deb.unwatch(p);
                }
                if let Err(e) = deb.watch(p, RecursiveMode::NonRecursive) {
                    let _ = out.send(Input::Warning(format!(
                        "cannot watch {}: {}",
                        crate::sanitize::sanitize(&p.to_string_lossy()),
                        notify_words(&e)
                    )));
                }
            }
        }
        *watched = want;
        *claims_id = id;
        replaced
    };
    rewatch(&mut watched, &mut claims_id);
    loop {
        let msg = match rx.recv_timeout(SAFETY_NET) {
            Ok(Ok(events)) => {
                let b = classify(&events, &claims_dir, &events_file);
                if b.events_file {
                    let _ = poke_events.send(());
                }
                let mut rescan = b.rescan;
                if b.structure || rescan {
                    rescan |= rewatch(&mut watched, &mut claims_id);
                    // The events dir may have just appeared.
                    let _ = poke_events.send(());
                }
                if rescan {
                    Some(Input::Rescan)
                } else if !b.changed.is_empty() {
                    Some(Input::Changed(b.changed.into_iter().collect()))
                } else {
                    None
                }
            }
            // notify's own errors (queue overflow among them): start over.
            Ok(Err(_)) => {
                rewatch(&mut watched, &mut claims_id);
                Some(Input::Rescan)
            }
            Err(RecvTimeoutError::Timeout) => {
                rewatch(&mut watched, &mut claims_id);
                Some(Input::Rescan)
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        if let Some(m) = msg {
            if out.send(m).is_err() {
                break;
            }
        }
    }
}

fn safety_net_only(out: &Sender<Input>, poke_events: &Sender<()>) {
    loop {
        std::thread::sleep(SAFETY_NET);
        let _ = poke_events.send(());
        if out.send(Input::Rescan).is_err() {
            return;
        }
    }
}

/// Follow the events log: read its tail once, then poll on every poke from
/// the watcher and at least every [`EVENTS_POLL`], until `out` hangs up.
pub fn follow_events(path: PathBuf, out: Sender<Action>, pokes: Receiver<()>) {
    let mut follower: Option<Follower> = None;
    let mut reported: Option<String> = None;
    loop {
        let result = match follower.as_mut() {
            None => Follower::open(&path, EVENTS_RING).map(|(f, lines)| {
                follower = Some(f);
                (lines, false, false)
            }),
            Some(f) => f.poll().map(|p| (p.lines, p.reset.is_some(), p.more)),
        };
        let mut more = false;
        let sent = match result {
            Ok((lines, reset, m)) => {
                more = m;
                reported = None;
                (!reset || out.send(Action::EventsReset).is_ok())
                    && (lines.is_empty() || out.send(Action::EventsAppended(lines)).is_ok())
            }
            Err(e) => {
                let text = e.to_string();
                if reported.as_deref() != Some(text.as_str()) {
                    reported = Some(text.clone());
                    out.send(Action::EventsError(text)).is_ok()
                } else {
                    true
                }
            }
        };
        if !sent {
            return;
        }
        if more {
            continue;
        }
        match pokes.recv_timeout(EVENTS_POLL) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => while pokes.try_recv().is_ok() {},
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify_debouncer_full::notify::event::{AccessKind, AccessMode, CreateKind, Event};
    use notify_debouncer_full::notify::EventKind;
    use std::time::Instant;

    fn ev(kind: EventKind, p: &str) -> DebouncedEvent {
        DebouncedEvent::new(Event::new(kind).add_path(PathBuf::from(p)), Instant::now())
    }

    #[test]
    fn a_batch_names_only_the_changed_claims_and_ignores_our_own_reads() {
        let dir = Path::new("/r/.fno/claims");
        let events = Path::new("/r/.fno/events.jsonl");
        let b = classify(
            &[
                ev(EventKind::Create(CreateKind::File), "/r/.fno/claims/a.lock"),
                ev(
                    EventKind::Access(AccessKind::Open(AccessMode::Any)),
                    "/r/.fno/claims/b.lock",
                ),
                ev(EventKind::Any, "/r/.fno/events.jsonl"),
            ],
            dir,
            events,
        );
        assert_eq!(
            b.changed.into_iter().collect::<Vec<_>>(),
            vec![PathBuf::from("/r/.fno/claims/a.lock")]
        );
        assert!(b.events_file);
        assert!(!b.rescan && !b.structure);
    }

    #[test]
    fn the_claims_dir_itself_changing_asks_for_a_rescan() {
        let b = classify(
            &[ev(EventKind::Create(CreateKind::Folder), "/r/.fno/claims")],
            Path::new("/r/.fno/claims"),
            Path::new("/r/.fno/events.jsonl"),
        );
        assert!(b.rescan && b.structure);
    }

    #[test]
    fn a_missing_claims_dir_is_waited_for_at_its_nearest_ancestor() {
        let td = tempfile::tempdir().expect("tempdir");
        let root = Root::with_events_here(td.path());
        let w = wanted(&root);
        assert_eq!(
            w.into_iter().collect::<Vec<_>>(),
            vec![td.path().to_path_buf()]
        );
    }
}
