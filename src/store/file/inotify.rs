//! The feed's watcher: inotify on a few directories, for what changes an
//! entry — created, written, renamed, removed, its metadata — and never an
//! open or a read. notify's own inotify watcher asks for every open: a
//! listing of 100 000 lockfiles is 100 000 events, which overflows the
//! kernel's queue (16 384 by default), and an overflow calls for another
//! listing, without end. It plugs into notify's `Watcher` trait; the feed
//! settles bursts itself.

#[cfg(not(target_os = "linux"))]
pub use notify::RecommendedWatcher as DirWatcher;

#[cfg(target_os = "linux")]
pub use linux::DirWatcher;

#[cfg(target_os = "linux")]
mod linux {
    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
    use notify::event::{
        AccessKind, AccessMode, CreateKind, DataChange, Flag, MetadataKind, ModifyKind, RemoveKind,
        RenameMode,
    };
    use notify::{Config, Event, EventHandler, EventKind, RecursiveMode, WatcherKind};
    use std::collections::HashMap;
    use std::io::ErrorKind;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    /// What a watched directory reports: its entries' changes and its own
    /// end. No OPEN, ACCESS or CLOSE_NOWRITE.
    fn mask() -> WatchMask {
        WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MODIFY
            | WatchMask::CLOSE_WRITE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::ATTRIB
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::ONLYDIR
            | WatchMask::DONT_FOLLOW
    }

    type Dirs = Arc<Mutex<HashMap<WatchDescriptor, PathBuf>>>;

    /// inotify on directories, non-recursively; dropping it ends its
    /// reading thread.
    pub struct DirWatcher {
        watches: Watches,
        dirs: Dirs,
        by_path: HashMap<PathBuf, WatchDescriptor>,
        // Dropping the write end wakes the reader, which then ends.
        _stop: OwnedFd,
    }

    impl notify::Watcher for DirWatcher {
        fn new<F: EventHandler>(handler: F, _config: Config) -> notify::Result<DirWatcher> {
            let inotify = Inotify::init().map_err(notify::Error::io)?;
            let watches = inotify.watches();
            let mut fds = [0; 2];
            // SAFETY: fds has room for the two descriptors pipe2 writes.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(notify::Error::io(std::io::Error::last_os_error()));
            }
            // SAFETY: both were just created and are owned here alone.
            let (stopped, stop) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            let dirs: Dirs = Arc::default();
            let seen = Arc::clone(&dirs);
            std::thread::Builder::new()
                .name("claimtop-inotify".into())
                .spawn(move || read(inotify, stopped, seen, handler))
                .map_err(notify::Error::io)?;
            Ok(DirWatcher {
                watches,
                dirs,
                by_path: HashMap::new(),
                _stop: stop,
            })
        }

        fn watch(&mut self, path: &Path, _mode: RecursiveMode) -> notify::Result<()> {
            let wd = self
                .watches
                .add(path, mask())
                .map_err(|e| notify::Error::io(e).add_path(path.to_path_buf()))?;
            self.lock().insert(wd.clone(), path.to_path_buf());
            self.by_path.insert(path.to_path_buf(), wd);
            Ok(())
        }

        fn unwatch(&mut self, path: &Path) -> notify::Result<()> {
            let Some(wd) = self.by_path.remove(path) else {
                return Err(notify::Error::watch_not_found().add_path(path.to_path_buf()));
            };
            self.lock().remove(&wd);
            // Already gone with its directory: nothing left to remove.
            let _ = self.watches.remove(wd);
            Ok(())
        }

        fn kind() -> WatcherKind {
            WatcherKind::Inotify
        }
    }

    impl DirWatcher {
        fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<WatchDescriptor, PathBuf>> {
            self.dirs.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    /// Read events until `stopped` says the watcher is gone.
    fn read<F: EventHandler>(mut inotify: Inotify, stopped: OwnedFd, dirs: Dirs, mut handler: F) {
        let mut buf = [0u8; 16 * 1024];
        let mut polled = [inotify.as_raw_fd(), stopped.as_raw_fd()].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        loop {
            // SAFETY: polled is a valid array of two pollfds.
            let n = unsafe { libc::poll(polled.as_mut_ptr(), 2, -1) };
            if n < 0 {
                if std::io::Error::last_os_error().kind() == ErrorKind::Interrupted {
                    continue;
                }
                handler.handle_event(Err(notify::Error::io(std::io::Error::last_os_error())));
                return;
            }
            if polled[1].revents != 0 {
                return;
            }
            loop {
                let events = match inotify.read_events(&mut buf) {
                    Ok(events) => events,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        handler.handle_event(Err(notify::Error::io(e)));
                        return;
                    }
                };
                let named: Vec<Event> = {
                    let mut dirs = dirs.lock().unwrap_or_else(|e| e.into_inner());
                    events
                        .filter_map(|ev| {
                            if ev.mask.contains(EventMask::Q_OVERFLOW) {
                                return Some(Event::new(EventKind::Other).set_flag(Flag::Rescan));
                            }
                            if ev.mask.contains(EventMask::IGNORED) {
                                dirs.remove(&ev.wd);
                                return None;
                            }
                            let dir = dirs.get(&ev.wd)?;
                            let path = ev.name.map_or_else(|| dir.clone(), |n| dir.join(n));
                            Some(Event::new(kind(ev.mask)).add_path(path))
                        })
                        .collect()
                };
                for e in named {
                    handler.handle_event(Ok(e));
                }
            }
        }
    }

    /// An inotify mask as notify's kind of event.
    fn kind(m: EventMask) -> EventKind {
        if m.contains(EventMask::CREATE) {
            EventKind::Create(CreateKind::Any)
        } else if m.intersects(EventMask::DELETE | EventMask::DELETE_SELF | EventMask::MOVE_SELF) {
            EventKind::Remove(RemoveKind::Any)
        } else if m.contains(EventMask::MOVED_FROM) {
            EventKind::Modify(ModifyKind::Name(RenameMode::From))
        } else if m.contains(EventMask::MOVED_TO) {
            EventKind::Modify(ModifyKind::Name(RenameMode::To))
        } else if m.contains(EventMask::CLOSE_WRITE) {
            EventKind::Access(AccessKind::Close(AccessMode::Write))
        } else if m.contains(EventMask::ATTRIB) {
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any))
        } else {
            EventKind::Modify(ModifyKind::Data(DataChange::Any))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use notify::Watcher;
        use std::sync::mpsc::channel;
        use std::time::Duration;

        #[test]
        fn reads_of_a_watched_dir_name_nothing_and_a_write_names_its_file() {
            let td = tempfile::tempdir().expect("tempdir");
            let file = td.path().join("k.lock");
            std::fs::write(&file, "x").expect("write");
            let (tx, rx) = channel();
            let tx = Mutex::new(tx);
            let mut w = DirWatcher::new(
                move |e: notify::Result<Event>| {
                    let _ = tx.lock().map(|t| t.send(e));
                },
                Config::default(),
            )
            .expect("a watcher");
            w.watch(td.path(), RecursiveMode::NonRecursive)
                .expect("watch");
            for _ in 0..100 {
                std::fs::read(&file).expect("read");
            }
            assert!(
                rx.recv_timeout(Duration::from_millis(300)).is_err(),
                "a read was reported"
            );
            std::fs::write(&file, "y").expect("write");
            let got = rx.recv_timeout(Duration::from_secs(5)).expect("an event");
            assert_eq!(got.expect("no error").paths, vec![file]);
            w.unwatch(td.path()).expect("unwatch");
        }
    }
}
