//! What one filesystem notification says about a claims root: the rules
//! the file store's one watcher (`file::feed`) sorts notifications by.

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind};
use std::path::Path;

/// One path a notification names, as a watcher of a claims root reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touched<'a> {
    /// An entry of the claims dir (a lockfile, a mutex, a temp file).
    Entry(&'a Path),
    /// The events log.
    EventsLog,
    /// Anything else under a watched dir: the claims dir itself, one of
    /// its parents, or a neighbour of the events log.
    Other(&'a Path),
}

/// The paths `ev` touches, or none when it only reports a read: a watcher
/// that re-reads what it is told of would otherwise hear its own reads
/// forever. Closing a file written is a change (the last write of it).
pub fn touched<'a>(
    ev: &'a Event,
    claims_dir: &'a Path,
    events_file: &'a Path,
) -> impl Iterator<Item = Touched<'a>> + 'a {
    let read_only = match ev.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
        EventKind::Access(_) => true,
        _ => false,
    };
    ev.paths.iter().filter(move |_| !read_only).map(move |p| {
        if p == events_file {
            Touched::EventsLog
        } else if p.parent() == Some(claims_dir) {
            Touched::Entry(p)
        } else {
            Touched::Other(p)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, ModifyKind, RemoveKind};
    use std::path::PathBuf;

    fn ev(kind: EventKind, paths: &[&str]) -> Event {
        paths
            .iter()
            .fold(Event::new(kind), |e, p| e.add_path(PathBuf::from(p)))
    }

    #[test]
    fn entries_the_log_and_the_rest_are_told_apart_and_reads_name_nothing() {
        fn all(e: &Event) -> Vec<Touched<'_>> {
            let dir = Path::new("/r/.fno/claims");
            touched(e, dir, Path::new("/r/.fno/events.jsonl")).collect()
        }
        let create = ev(
            EventKind::Create(CreateKind::File),
            &[
                "/r/.fno/claims/k.lock",
                "/r/.fno/events.jsonl",
                "/r/.fno/claims",
                "/r/.fno/x",
            ],
        );
        assert_eq!(
            all(&create),
            [
                Touched::Entry(Path::new("/r/.fno/claims/k.lock")),
                Touched::EventsLog,
                Touched::Other(Path::new("/r/.fno/claims")),
                Touched::Other(Path::new("/r/.fno/x")),
            ]
        );
        let nested = ev(
            EventKind::Remove(RemoveKind::Any),
            &["/r/.fno/claims/m.d/owner"],
        );
        assert_eq!(
            all(&nested),
            [Touched::Other(Path::new("/r/.fno/claims/m.d/owner"))],
            "only the claims dir's own entries are entries"
        );
        for read in [
            EventKind::Access(AccessKind::Open(AccessMode::Any)),
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
        ] {
            assert!(all(&ev(read, &["/r/.fno/claims/k.lock"])).is_empty());
        }
        let written = ev(
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
            &["/r/.fno/events.jsonl"],
        );
        assert_eq!(all(&written), [Touched::EventsLog]);
        let modified = ev(
            EventKind::Modify(ModifyKind::Any),
            &["/r/.fno/claims/k.lock"],
        );
        assert_eq!(all(&modified).len(), 1);
    }
}
