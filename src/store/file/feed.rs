//! The one filesystem watcher of a file root: every face that follows a
//! root (the dashboard, `acquire --wait` and `run`, the publisher) takes its
//! changes from here, so they never disagree on what changed.
//!
//! Watched, non-recursively: the claims dir, its parent (which tells us the
//! claims dir was created, removed or replaced: an inotify watch follows the
//! old inode) and the events log's dir. A directory that does not exist yet
//! is waited for by watching its nearest existing ancestor. What a
//! notification names becomes a [`Change`]:
//!
//! - a lockfile: [`Change::Claim`] with its key;
//! - a recovery mutex, a temp file, the archive dir, an undecodable
//!   lockfile name, the events mutex: [`Change::Entry`] with a fresh look
//!   at it, so the reader judges its hazard (and ages it) without a sweep;
//! - a lockfile whose name is not its key's canonical encoding:
//!   [`Change::Relist`] without a reason (only a listing reads it);
//! - the events log: an `Entry` when what is judged of it changed (its
//!   shape, a torn line, a full disk; never its time). Its lines are not
//!   this feed's: the root's audit follows the log ([`crate::store::Audit::follow`]),
//!   so the file is read by one follower, and never opened here;
//! - anything that moved the claims dir itself, or a lost notification:
//!   [`Change::Relist`] with why, followed by a fresh inventory of the
//!   entries.

use super::super::{Change, Changes, StoreError};
use super::inotify::DirWatcher;
use crate::claims::entry::{Entry, Role};
use crate::claims::key::is_canonical_lockfile_name;
use crate::claims::{key_of_lockfile, Root};
use crate::store::fs_events::{touched, Touched};
use notify::{Config, RecursiveMode, Watcher};
use std::collections::{BTreeSet, VecDeque};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

/// How long the dashboard's feed lets a burst settle. Small against the
/// 250 ms change-to-screen target, large enough to fold a create + write +
/// rename of one lockfile into one re-read.
pub const DEBOUNCE: Duration = Duration::from_millis(100);
/// A burst that never goes quiet is still handed on this often: the screen
/// keeps up with a busy root.
const SETTLE_MAX: Duration = Duration::from_millis(400);
/// Without notifications at all (no inotify, the watch limit reached), how
/// often the feed asks for a full re-read instead.
pub const BLIND_RESYNC: Duration = Duration::from_secs(60);
/// How often, by default ([`FeedOpts::looks`]), the watched directories
/// and the events log's shape are looked at again by name, notified or
/// not. A watch follows its directory's inode, so `mv ROOT ROOT.gone` (or
/// a rename of any directory above the claims dir) tells the watches
/// nothing: without this look the root read as there, with its claims,
/// until the next full re-read a minute later. The log's shape is looked
/// at for a filesystem whose notifications are lossy. One `stat` of each
/// watched path and a look at the log, a second.
pub const LOOK_EVERY: Duration = Duration::from_secs(1);
/// Looks due this close together are taken at one wake.
const COALESCE: Duration = Duration::from_millis(200);
/// A caller's wait that ends on its own deadline carries the looks due
/// within this long, when it waited at least this long: see `next`.
const RIDE_ALONG: Duration = Duration::from_millis(500);

/// How a feed runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedOpts {
    /// Let bursts settle this long (the dashboard); None delivers each
    /// notification as it comes (a waiter wakes at once).
    pub debounce: Option<Duration>,
    /// Report the entries that are not claims (mutexes, temp files, the
    /// archive dir, the log's shape), with an inventory of them at start
    /// and after each resync. A waiter on one key needs none of it, and
    /// the inventory reads the whole claims dir.
    pub entries: bool,
    /// How often the watched directories and the log's shape are looked
    /// at by name, notified or not ([`LOOK_EVERY`]): a face an
    /// operator watches looks each second; a publisher, which judges what
    /// time changes every 2 s, looks as often and so wakes once for both.
    pub looks: Duration,
}

impl Default for FeedOpts {
    fn default() -> FeedOpts {
        FeedOpts {
            debounce: None,
            entries: true,
            looks: LOOK_EVERY,
        }
    }
}

impl FeedOpts {
    /// What a waiter on one key needs: its lockfile named at once.
    pub fn key_only() -> FeedOpts {
        FeedOpts {
            entries: false,
            ..FeedOpts::default()
        }
    }
}

/// What the watching threads hand the feed.
enum Raw {
    Events(Vec<notify::Event>),
    Error(String),
    /// [`Changes::closer`] was called.
    Close,
    /// [`Changes::waker`] was called.
    Poke,
}

/// The root's watcher: every notification as it comes. Bursts are settled
/// by the feed itself ([`FileFeed::settle`]), which only folds the paths
/// named: a debouncer that folds the events (notify-debouncer-full) drops
/// a lockfile renamed over and then removed within one window (a renew
/// then a release), and the release was never heard.
struct Watch(DirWatcher);

impl Watch {
    fn start(tx: Sender<Raw>) -> notify::Result<Watch> {
        let handler = move |r: notify::Result<notify::Event>| {
            let _ = tx.send(match r {
                Ok(e) => Raw::Events(vec![e]),
                Err(e) => Raw::Error(notify_words(&e)),
            });
        };
        Ok(Watch(DirWatcher::new(handler, Config::default())?))
    }

    fn watch(&mut self, p: &Path) -> notify::Result<()> {
        self.0.watch(p, RecursiveMode::NonRecursive)
    }

    fn unwatch(&mut self, p: &Path) {
        let _ = self.0.unwatch(p);
    }
}

/// The events log's shape as last looked at: a change of it is an entry.
struct LogShape {
    shape: Option<Entry>,
    looked: Instant,
}

/// The change feed of one file root.
pub struct FileFeed {
    watch: Option<Watch>,
    tx: Sender<Raw>,
    rx: Receiver<Raw>,
    claims_dir: PathBuf,
    events_file: PathBuf,
    events_mutex: PathBuf,
    watched: BTreeSet<PathBuf>,
    /// (device, inode) of the claims dir as watched: a dir replaced under
    /// the same name keeps the old watch until it is set again.
    claims_id: Option<(u64, u64)>,
    /// With `entries`: the log's shape, looked at without opening it.
    log: Option<LogShape>,
    entries: bool,
    pending: VecDeque<Change>,
    /// Without a watch: when the next blind re-read is due.
    blind_resync: Option<Instant>,
    /// With one: when the watched directories were last looked at by name.
    dirs_checked: Instant,
    /// How often the dirs and the log are looked at ([`FeedOpts::looks`]).
    looks: Duration,
    /// Let a burst go quiet this long before handing on what it named.
    settle: Option<Duration>,
    /// A waker was called, or the log was appended to: the wait in `next`
    /// ends with nothing, so that whoever waits on more than this feed (a
    /// publisher: its requests, its log) looks now.
    poked: bool,
}

impl FileFeed {
    /// Start watching `root`. Never fails for want of notifications: a
    /// feed that cannot watch says so ([`Change::Down`]) and asks
    /// for a full re-read every [`BLIND_RESYNC`] instead.
    pub fn start(root: &Root, opts: FeedOpts) -> FileFeed {
        let (tx, rx) = channel();
        let events_file = root.events_file();
        let mut feed = FileFeed {
            watch: None,
            tx: tx.clone(),
            rx,
            claims_dir: root.claims_dir(),
            events_mutex: crate::events::emit::events_mutex_path(&events_file),
            events_file,
            watched: BTreeSet::new(),
            claims_id: None,
            log: opts.entries.then(|| LogShape {
                shape: None,
                looked: Instant::now(),
            }),
            entries: opts.entries,
            pending: VecDeque::new(),
            blind_resync: None,
            dirs_checked: Instant::now(),
            looks: opts.looks,
            settle: opts.debounce,
            poked: false,
        };
        match Watch::start(tx) {
            Ok(w) => {
                feed.watch = Some(w);
                feed.rewatch();
            }
            Err(e) => {
                feed.pending.push_back(Change::Down {
                    why: format!(
                        "file notifications unavailable ({}); re-reading every {}s",
                        notify_words(&e),
                        BLIND_RESYNC.as_secs()
                    ),
                });
                feed.blind_resync = Some(Instant::now() + BLIND_RESYNC);
            }
        }
        feed.inventory();
        feed
    }

    /// Watch what is wanted now (each dir if it exists, else its nearest
    /// existing ancestor); true when the claims dir was replaced or came.
    fn rewatch(&mut self) -> bool {
        // A directory made just after its parent was looked at (mkdir -p)
        // gives the parent's watch no event: until what is wanted holds
        // still, look again.
        let mut replaced = false;
        for _ in 0..8 {
            replaced |= self.rewatch_once();
            if self.wanted() == self.watched {
                break;
            }
        }
        replaced
    }

    /// The directories to watch: each wanted one, or its nearest existing
    /// ancestor.
    fn wanted(&self) -> BTreeSet<PathBuf> {
        self.wanted_given(dir_id(&self.claims_dir).is_some())
    }

    /// [`FileFeed::wanted`], whether the claims dir is a directory known
    /// (it was just stat'ed): each path is stat'ed once a look, and the
    /// claims dir's parent, which is the events dir too as a rule, once
    /// for both.
    fn wanted_given(&self, claims_is_dir: bool) -> BTreeSet<PathBuf> {
        // A claims dir that is none is waited for at its parent's nearest
        // existing ancestor, which is asked for anyway.
        let asked: BTreeSet<&Path> = [self.claims_dir.parent(), self.events_file.parent()]
            .into_iter()
            .flatten()
            .collect();
        let mut wanted: BTreeSet<PathBuf> =
            asked.into_iter().filter_map(nearest_existing).collect();
        if claims_is_dir {
            wanted.insert(self.claims_dir.clone());
        }
        wanted
    }

    fn rewatch_once(&mut self) -> bool {
        let wanted = self.wanted();
        let Some(watch) = self.watch.as_mut() else {
            return false;
        };
        let id = dir_id(&self.claims_dir);
        let replaced = id != self.claims_id;
        for gone in self.watched.difference(&wanted) {
            watch.unwatch(gone);
        }
        let mut trouble = None;
        for p in &wanted {
            let again = replaced && *p == self.claims_dir;
            if self.watched.contains(p) && !again {
                continue;
            }
            if again {
                watch.unwatch(p);
            }
            if let Err(e) = watch.watch(p) {
                trouble = Some(format!(
                    "cannot watch {}: {}",
                    p.to_string_lossy(),
                    notify_words(&e)
                ));
            }
        }
        if let Some(why) = trouble {
            self.pending.push_back(Change::Down { why });
        }
        self.watched = wanted;
        self.claims_id = id;
        replaced
    }

    /// An entry of the claims dir or the events dir at `path` changed.
    fn entry(&mut self, role: Role, path: PathBuf) {
        if !self.entries {
            return;
        }
        let change = Change::Entry {
            entry: Entry::look(role, &path),
            path,
        };
        self.push(change);
    }

    /// Queue `change`, once: a burst naming a key ten times is one re-read.
    fn push(&mut self, change: Change) {
        let dup = match &change {
            Change::Claim { .. } | Change::Relist { why: None } => self.pending.contains(&change),
            // A later look at the same entry supersedes an earlier one.
            Change::Entry { path, .. } => {
                self.pending
                    .retain(|c| !matches!(c, Change::Entry { path: p, .. } if p == path));
                false
            }
            _ => false,
        };
        if !dup {
            self.pending.push_back(change);
        }
    }

    /// Every entry that is not a claim, as it is now: after a start or a
    /// resync the reader knows the young mutexes and temp files too, which
    /// a listing (hazards only) does not name.
    fn inventory(&mut self) {
        if !self.entries {
            return;
        }
        let mut found: Vec<(Role, PathBuf)> = Vec::new();
        if let Ok(dir) = std::fs::read_dir(&self.claims_dir) {
            for e in dir.flatten() {
                if let Some(role) = Role::in_claims_dir(&e.file_name()) {
                    found.push((role, e.path()));
                }
            }
        }
        found.push((Role::EventsMutex, self.events_mutex.clone()));
        if let Some(log) = self.log.as_mut() {
            // Said again below, whatever was said before the resync.
            log.shape = None;
        }
        // Only what is there: the reader forgets every entry on a resync.
        for (role, path) in found {
            if let Some(entry) = Entry::look(role, &path) {
                self.push(Change::Entry {
                    path,
                    entry: Some(entry),
                });
            }
        }
        self.log_shape();
    }

    fn absorb(&mut self, raw: Raw) -> Result<(), StoreError> {
        let events = match raw {
            Raw::Events(e) => e,
            Raw::Error(why) => {
                self.resync(format!(
                    "file notifications failed ({why}); re-reading everything"
                ));
                return Ok(());
            }
            Raw::Close => return Err(StoreError::FeedClosed),
            Raw::Poke => {
                self.poked = true;
                return Ok(());
            }
        };
        let (mut log, mut structure, mut moved) = (false, false, false);
        let mut rescan = None;
        let (claims_dir, events_file) = (self.claims_dir.clone(), self.events_file.clone());
        for ev in &events {
            if ev.need_rescan() {
                rescan = Some("the notification queue overflowed; re-reading everything");
            }
            for t in touched(ev, &claims_dir, &events_file) {
                match t {
                    Touched::EventsLog => log = true,
                    Touched::Entry(p) => {
                        let name = p.file_name().unwrap_or_default();
                        if let Some(key) = key_of_lockfile(name) {
                            let canonical = is_canonical_lockfile_name(name.as_bytes(), &key);
                            self.push(match canonical {
                                true => Change::Claim { key },
                                false => Change::Relist { why: None },
                            });
                        } else if let Some(role) = Role::in_claims_dir(name) {
                            self.entry(role, p.to_path_buf());
                        }
                        // A stolen corpse: the rename away, a fresh mkdir
                        // and its rmdir can fold into the reaped copy's
                        // removal alone, so the mutex is looked at again.
                        if let Some(mutex) = crate::claims::entry_behind(p) {
                            if let Some(role) = mutex.file_name().and_then(Role::in_claims_dir) {
                                self.entry(role, mutex);
                            }
                        }
                    }
                    Touched::Other(p) if p == self.events_mutex => {
                        self.entry(Role::EventsMutex, p.to_path_buf())
                    }
                    Touched::Other(p) => {
                        structure = true;
                        moved |= claims_dir.starts_with(p);
                    }
                }
            }
        }
        if structure || rescan.is_some() {
            // The claims dir (or a parent) came, went or was replaced:
            // watch it itself now, so its keys are named from here on.
            if self.rewatch() || moved {
                rescan = rescan.or(Some("the claims directory changed"));
            }
            // The events dir may have just appeared.
            log = true;
        }
        if let Some(why) = rescan {
            self.resync(why.into());
        }
        if log {
            self.poked = true;
            self.log_shape();
        }
        Ok(())
    }

    /// Ask for a full re-read, then say what the entries are now.
    fn resync(&mut self, why: String) {
        self.pending.push_back(Change::Relist { why: Some(why) });
        self.inventory();
    }

    /// An entry for the log when what is judged of it changed (a directory
    /// planted at its path is a hazard; a regular file again is none; a
    /// torn last line or a full disk is one), never for an append.
    fn log_shape(&mut self) {
        if !self.entries {
            return;
        }
        let Some(log) = self.log.as_mut() else {
            return;
        };
        log.looked = Instant::now();
        let now = Entry::look(Role::EventsLog, &self.events_file);
        // An append moves the log's time only: no verdict on it changes,
        // so it costs the reader nothing.
        let alike = match (&log.shape, &now) {
            (Some(was), Some(is)) => was.judged_alike(is),
            (was, is) => was.is_none() && is.is_none(),
        };
        if alike {
            return;
        }
        log.shape = now.clone();
        self.pending.push_back(Change::Entry {
            path: self.events_file.clone(),
            entry: now,
        });
    }

    /// With a settle time: take in what else the burst brings until it is
    /// quiet that long (or [`SETTLE_MAX`] has passed), so a create, a write
    /// and a rename of one lockfile are one re-read. Every path named is
    /// kept (the queue folds repeats), so nothing a burst touched is lost.
    fn settle(&mut self) -> Result<(), StoreError> {
        let Some(quiet) = self.settle else {
            return Ok(());
        };
        let cap = Instant::now() + SETTLE_MAX;
        loop {
            let now = Instant::now();
            if now >= cap {
                return Ok(());
            }
            match self.rx.recv_timeout(quiet.min(cap - now)) {
                Ok(raw) => {
                    self.absorb(raw)?;
                    while let Ok(raw) = self.rx.try_recv() {
                        self.absorb(raw)?;
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Ok(()),
                Err(RecvTimeoutError::Disconnected) => return Err(StoreError::FeedClosed),
            }
        }
    }

    /// When `next` must look up from waiting: the log's shape, the
    /// watched dirs or a blind re-read, whichever is first.
    fn due(&self) -> Option<Instant> {
        let log = self.log.as_ref().map(|l| l.looked + self.looks);
        let dirs = self.watch.as_ref().map(|_| self.dirs_checked + self.looks);
        [log, self.blind_resync, dirs].into_iter().flatten().min()
    }

    fn on_due(&mut self, now: Instant) {
        // What falls due within [`COALESCE`] is done now too: the dirs'
        // look and the log's then share one wake a second rather than each
        // taking its own a moment apart (an idle publisher's wakes were
        // most of its cost). Each is looked at sooner, or (see `next`) at
        // most COALESCE later, when the caller's deadline comes then.
        self.look_within(now, COALESCE);
    }

    /// Take every look due within `within` of `now`.
    fn look_within(&mut self, now: Instant, within: Duration) {
        let soon = now + within;
        if self.watch.is_some() && soon >= self.dirs_checked + self.looks {
            self.dirs_checked = now;
            let id = dir_id(&self.claims_dir);
            if id != self.claims_id || self.wanted_given(id.is_some()) != self.watched {
                self.rewatch();
                self.resync("the claims directory moved".into());
            }
        }
        if self.blind_resync.is_some_and(|t| now >= t) {
            self.blind_resync = Some(now + BLIND_RESYNC);
            self.resync("no file notifications: the periodic re-read".into());
        }
        if self
            .log
            .as_ref()
            .is_some_and(|l| soon >= l.looked + self.looks)
        {
            self.log_shape();
        }
    }
}

impl Changes for FileFeed {
    fn next(&mut self, timeout: Duration) -> Result<Option<Change>, StoreError> {
        let deadline = Instant::now() + timeout;
        let mut rode = false;
        loop {
            if let Some(c) = self.pending.pop_front() {
                return Ok(Some(c));
            }
            if std::mem::take(&mut self.poked) {
                return Ok(None);
            }
            let now = Instant::now();
            if self.due().is_some_and(|d| now >= d) {
                self.on_due(now);
                continue;
            }
            if now >= deadline {
                // A caller that waited a while and is woken by its own
                // deadline takes the looks due within RIDE_ALONG with it:
                // they then keep to the caller's rhythm (an idle
                // publisher's judging every 2 s) instead of waking the
                // process on their own a moment before or after. Looks
                // stay at most a second apart, and at least half one.
                if timeout >= RIDE_ALONG && !rode {
                    rode = true;
                    self.look_within(now, RIDE_ALONG);
                    continue;
                }
                // A spent (or zero) timeout still takes what has already
                // arrived: a caller that only polls between scrapes would
                // otherwise never be told of a change.
                match self.rx.try_recv() {
                    Ok(raw) => {
                        self.absorb(raw)?;
                        continue;
                    }
                    Err(TryRecvError::Empty) => return Ok(None),
                    Err(TryRecvError::Disconnected) => return Err(StoreError::FeedClosed),
                }
            }
            let wake = match self.due() {
                // A look due a moment before the caller's own deadline
                // waits for it (at most COALESCE): one wake does both.
                Some(d) if d < deadline && deadline <= d + COALESCE => deadline,
                Some(d) => d.min(deadline),
                None => deadline,
            };
            match self.rx.recv_timeout(wake.saturating_duration_since(now)) {
                Ok(raw) => {
                    self.absorb(raw)?;
                    // Drain what already queued, so one burst is one batch.
                    while let Ok(raw) = self.rx.try_recv() {
                        self.absorb(raw)?;
                    }
                    self.settle()?;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(StoreError::FeedClosed),
            }
        }
    }

    fn closer(&self) -> Option<Box<dyn FnOnce() + Send>> {
        let tx = self.tx.clone();
        Some(Box::new(move || {
            let _ = tx.send(Raw::Close);
        }))
    }

    fn waker(&self) -> Option<crate::store::Wake> {
        let tx = self.tx.clone();
        Some(std::sync::Arc::new(move || {
            let _ = tx.send(Raw::Poke);
        }))
    }
}

/// `p` if it is a directory, else its nearest ancestor that is.
fn nearest_existing(p: &Path) -> Option<PathBuf> {
    p.ancestors()
        .find(|a| std::fs::metadata(a).is_ok_and(|m| m.is_dir()))
        .map(Path::to_path_buf)
}

/// Identity of a directory, to notice it being replaced under one name;
/// None where there is no directory.
fn dir_id(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p)
        .ok()
        .filter(|m| m.is_dir())
        .map(|m| (m.dev(), m.ino()))
}

/// A notify error in words: its `Display` appends the paths in debug
/// format, which the caller already names.
fn notify_words(e: &notify::Error) -> String {
    use notify::ErrorKind as K;
    match &e.kind {
        K::Io(io) => io.kind().to_string(),
        K::PathNotFound => "it does not exist".into(),
        K::MaxFilesWatch => "the system's limit on watches is reached".into(),
        K::Generic(s) => s.clone(),
        K::WatchNotFound | K::InvalidConfig(_) => "the watch could not be set up".into(),
    }
}

#[cfg(test)]
#[path = "feed_tests.rs"]
mod tests;
