//! The collector: every read of the outside world the dashboard needs —
//! lockfiles, the claims dir, process start times, the password database —
//! happens here, on its own thread, and reaches the model as actions that
//! carry the data (bottom's collector thread). `update` never reads: it
//! re-judges what it was given, so every transition is unit-testable.
//!
//! The collector also owns the clock: one tick a second, on the second, so
//! every countdown moves together, preceded by whatever pid facts or
//! hazards changed since the last one.

use super::action::{Action, PidFacts, Read, RootProblem, Swept};
use crate::claims::{
    entry_hazard, entry_kind, hostname, key_of_lockfile, now_ms, sweep_with, Classifier, EntryKind,
    LocalIdentity, Root, Status,
};
use crate::store::file::feed::FeedOpts;
use crate::store::{Change, Changes};
use std::collections::{BTreeSet, HashMap};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

/// What the watcher and the op worker ask the collector for.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// These paths (in the claims dir) changed: re-read exactly them.
    Changed(Vec<PathBuf>),
    /// Notifications may have been missed or the claims dir came or went.
    Rescan,
    /// A watcher problem worth the status line.
    Warning(String),
}

/// The slow safety net: a full sweep when the feed said nothing for this
/// long, for filesystems whose notifications are lossy (network mounts).
/// A sweep of 10 000 lockfiles costs ~150 ms of CPU; once a minute keeps
/// it a quarter of a percent of a core while idle.
pub const SAFETY_NET: Duration = Duration::from_secs(60);

/// How often a still-existing pid's start time is re-read, to catch a pid
/// that died and was reused between two ticks.
pub const PID_RECHECK_MS: i64 = 30_000;

/// A holder pid as last seen.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PidWatch {
    /// Start time when alive; None once gone.
    started: Option<i64>,
    /// When the start time was last read.
    checked: i64,
}

pub struct Collector {
    root: Root,
    identity: LocalIdentity,
    probe: fn(i32) -> Option<i64>,
    /// Cheap "does this pid exist" check (kill 0); None asks `probe`.
    signal: Option<fn(i32) -> bool>,
    /// The clock reads are judged at; every tick moves it.
    pub now: i64,
    pids: HashMap<i32, PidWatch>,
    /// Recovery mutexes and temp files seen but not (yet) hazards: each tick
    /// asks again, so a corpse shows within a second of coming of age
    /// rather than at the next safety-net sweep.
    young: BTreeSet<PathBuf>,
    pub counters: Arc<Counters>,
}

/// What the collector has read, readable from other threads (benches
/// assert a batch re-read exactly the changed paths).
#[derive(Debug, Default)]
pub struct Counters {
    /// Lockfiles read since start (one per `Status::of_file`).
    pub reads: AtomicU64,
    /// Full sweeps since start.
    pub rescans: AtomicU64,
}

impl Counters {
    pub fn reads(&self) -> u64 {
        self.reads.load(Relaxed)
    }

    pub fn rescans(&self) -> u64 {
        self.rescans.load(Relaxed)
    }
}

impl Collector {
    /// A collector that classifies with this identity and pid probe.
    pub fn new(
        root: Root,
        identity: LocalIdentity,
        probe: fn(i32) -> Option<i64>,
        now: i64,
    ) -> Collector {
        Collector {
            root,
            identity,
            probe,
            signal: None,
            now,
            pids: HashMap::new(),
            young: BTreeSet::new(),
            counters: Arc::default(),
        }
    }

    /// This machine's identity and process table, `kill(pid, 0)` included.
    pub fn local(root: Root, now: i64) -> Collector {
        let mut c = Collector::new(
            root,
            LocalIdentity::current(),
            crate::claims::process_create_time_ms,
            now,
        );
        c.signal = Some(crate::sys::pid_alive);
        c
    }

    fn classifier(&self) -> Classifier {
        Classifier::with(self.now, self.identity.clone(), self.probe)
    }

    /// Serve one request; the actions to send, in order.
    pub fn handle(&mut self, input: Input) -> Vec<Action> {
        match input {
            Input::Changed(paths) => self.read(&paths).into_iter().collect(),
            Input::Rescan => vec![self.rescan()],
            Input::Warning(w) => vec![Action::Warning(w)],
        }
    }

    /// Re-read exactly `paths` (those in the claims dir).
    pub fn read(&mut self, paths: &[PathBuf]) -> Option<Action> {
        let dir = self.root.claims_dir();
        let mut c = self.classifier();
        let mut out = Read::default();
        for path in paths {
            if path.parent() != Some(dir.as_path()) {
                continue;
            }
            let Some(name) = path.file_name() else {
                continue;
            };
            match entry_kind(name) {
                EntryKind::Lockfile => {
                    let Some(key) = key_of_lockfile(name) else {
                        continue;
                    };
                    self.counters.reads.fetch_add(1, Relaxed);
                    out.claims.push(Status::of_file(&key, path, &mut c));
                }
                EntryKind::RecoveryMutex | EntryKind::Temp => self.look_at_entry(path, &mut out),
                EntryKind::Other => {}
            }
        }
        out.pids = self.learn(&c);
        (!out.is_empty()).then(|| Action::Read(Box::new(out)))
    }

    /// A mutex or temp file: gone, a hazard already, or one to ask about
    /// again on the next tick.
    fn look_at_entry(&mut self, path: &Path, out: &mut Read) {
        if std::fs::symlink_metadata(path).is_err() {
            self.young.remove(path);
            out.gone.push(path.to_path_buf());
        } else if let Some(h) = entry_hazard(path) {
            self.young.remove(path);
            out.hazards.push(h);
        } else {
            self.young.insert(path.to_path_buf());
        }
    }

    /// Remember the pid facts a classifier gathered; they go to the model.
    fn learn(&mut self, c: &Classifier) -> PidFacts {
        let now = self.now;
        c.known_pids()
            .inspect(|(pid, started)| {
                self.pids.insert(
                    *pid,
                    PidWatch {
                        started: *started,
                        checked: now,
                    },
                );
            })
            .collect()
    }

    /// Sweep the whole claims dir, and say what is wrong with the root.
    pub fn rescan(&mut self) -> Action {
        let mut c = self.classifier();
        let sweep = sweep_with(&self.root, &mut c);
        self.counters.rescans.fetch_add(1, Relaxed);
        self.counters
            .reads
            .fetch_add(sweep.claims.len() as u64, Relaxed);
        self.pids.clear();
        let pids = self.learn(&c);
        self.young = young_entries(&self.root.claims_dir(), &sweep.hazards);
        Action::Swept(Box::new(Swept {
            sweep,
            pids,
            problem: root_problem(&self.root),
        }))
    }

    /// A second passed: what changed in the process table and among the
    /// young entries, then the tick itself.
    ///
    /// One `kill(pid, 0)` per distinct live holder, and every
    /// [`PID_RECHECK_MS`] one start-time read, so an idle dashboard over
    /// 10 000 claims mostly sleeps. A dead pid stays dead for every claim
    /// that named it (a reused pid started after those claims).
    pub fn tick(&mut self, now: i64) -> Vec<Action> {
        self.now = now;
        let (probe, signal) = (self.probe, self.signal);
        let mut out = Read::default();
        for (pid, w) in self.pids.iter_mut() {
            if w.started.is_none() {
                continue;
            }
            let exists = signal.map_or_else(|| probe(*pid).is_some(), |f| f(*pid));
            if !exists {
                w.started = None;
                out.pids.push((*pid, None));
            } else if now - w.checked >= PID_RECHECK_MS {
                let started = probe(*pid);
                w.checked = now;
                if started != w.started {
                    w.started = started;
                    out.pids.push((*pid, started));
                }
            }
        }
        let young: Vec<PathBuf> = self.young.iter().cloned().collect();
        for p in young {
            self.look_at_entry(&p, &mut out);
        }
        let mut actions = Vec::with_capacity(2);
        if !out.is_empty() {
            actions.push(Action::Read(Box::new(out)));
        }
        actions.push(Action::Tick(now));
        actions
    }

    /// Serve requests and tick until the model hangs up. The first thing
    /// sent is a full sweep.
    pub fn run(mut self, inputs: Receiver<Input>, out: Sender<Action>) {
        self.now = now_ms();
        if out.send(self.rescan()).is_err() {
            return;
        }
        let next_second = |now: i64| now - now.rem_euclid(1000) + 1000;
        let mut next_tick = next_second(now_ms());
        loop {
            let now = now_ms();
            let actions = if now >= next_tick {
                next_tick = next_second(now);
                self.tick(now)
            } else {
                let wait = Duration::from_millis((next_tick - now) as u64);
                match inputs.recv_timeout(wait) {
                    Ok(input) => {
                        self.now = now_ms();
                        self.handle(input)
                    }
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            };
            for a in actions {
                if out.send(a).is_err() {
                    return;
                }
            }
        }
    }
}

/// How the dashboard watches a file root: bursts settle before they are
/// re-read, and the events pane opens with the log's last lines.
pub const FEED: FeedOpts = FeedOpts {
    debounce: Some(crate::store::file::feed::DEBOUNCE),
    follow_log: true,
    log_tail: super::app::EVENTS_RING,
    entries: true,
};

/// Most changes taken from the feed before they are handed on as one
/// request: a burst is one batch of re-reads.
const FEED_BATCH: usize = 4096;

/// Drain a file root's change feed into its collector's requests and the
/// events pane's messages, until either hangs up.
pub fn forward_feed(
    mut feed: Box<dyn Changes>,
    root: Root,
    collect: Sender<Input>,
    events: Sender<Action>,
) {
    loop {
        let first = match feed.next(SAFETY_NET) {
            Ok(Some(c)) => c,
            Ok(None) => {
                if collect.send(Input::Rescan).is_err() {
                    return;
                }
                continue;
            }
            Err(_) => return,
        };
        let (mut paths, mut rescan, mut to_pane) = (Vec::new(), false, Vec::new());
        let mut next = Some(first);
        let mut taken = 0;
        while let Some(change) = next.take() {
            taken += 1;
            match change {
                Change::Claim { key } => paths.push(root.lockfile(&key)),
                Change::Misnamed { path, .. } | Change::Entry { path, .. } => paths.push(path),
                Change::Resync { .. } => rescan = true,
                Change::Disconnected { why } => {
                    let _ =
                        collect.send(Input::Warning(crate::sanitize::sanitize(&why).into_owned()));
                }
                Change::LogAppended(lines) => to_pane.push(Action::EventsAppended(lines)),
                Change::LogReset => to_pane.push(Action::EventsReset),
                Change::LogTrouble(why) => to_pane.push(Action::EventsError(why)),
                Change::Event(_)
                | Change::Host { .. }
                | Change::Published { .. }
                | Change::PublishedEvent { .. }
                | Change::Connected { .. } => {}
            }
            if taken < FEED_BATCH {
                next = feed.next(Duration::ZERO).ok().flatten();
            }
        }
        // The log's lines first: they are what an op's status line waits on.
        for a in to_pane {
            if events.send(a).is_err() {
                return;
            }
        }
        paths.dedup();
        let sent = if rescan {
            collect.send(Input::Rescan)
        } else if !paths.is_empty() {
            collect.send(Input::Changed(paths))
        } else {
            Ok(())
        };
        if sent.is_err() {
            return;
        }
    }
}

/// The mutexes and temp files of the claims dir that are not hazards yet.
fn young_entries(dir: &Path, hazards: &[crate::claims::Hazard]) -> BTreeSet<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeSet::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            matches!(
                entry_kind(&e.file_name()),
                EntryKind::RecoveryMutex | EntryKind::Temp
            )
        })
        .map(|e| e.path())
        .filter(|p| !hazards.iter().any(|h| h.path == *p))
        .collect()
}

/// What keeps a root from being watched as a normal one, if anything. A
/// root with no `.fno/claims` yet is normal: nothing was claimed.
pub fn root_problem(root: &Root) -> Option<RootProblem> {
    let dir = root.claims_dir();
    match std::fs::metadata(&root.root) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Some(RootProblem::Missing(root.root.clone()))
        }
        Err(e) => return Some(RootProblem::Unreadable(root.root.clone(), e.kind())),
        Ok(m) if !m.is_dir() => return Some(RootProblem::NotADirectory(root.root.clone())),
        Ok(_) => {}
    }
    match std::fs::read_dir(&dir) {
        Ok(_) => None,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            // A file somewhere on the way (`.fno` a file) reads as not found
            // on some systems: say so rather than call the root empty.
            let blocked = dir
                .ancestors()
                .skip(1)
                .take_while(|a| *a != root.root.as_path())
                .find(|a| std::fs::metadata(a).is_ok_and(|m| !m.is_dir()));
            blocked.map(|b| RootProblem::NotADirectory(b.to_path_buf()))
        }
        Err(e) if e.kind() == ErrorKind::NotADirectory => {
            let blocked = dir
                .ancestors()
                .find(|a| std::fs::metadata(a).is_ok_and(|m| !m.is_dir()))
                .unwrap_or(&dir);
            Some(RootProblem::NotADirectory(blocked.to_path_buf()))
        }
        Err(e) => Some(RootProblem::Unreadable(dir, e.kind())),
    }
}

/// `operator:<user>@<host>`: the holder id the dashboard acquires as. The
/// user is found exactly as the audit's operator name is (one person, one
/// name, on every face).
pub fn operator_id(me: &LocalIdentity) -> String {
    let user = crate::claims::operator::user_name().unwrap_or_else(|| "unknown".into());
    let host = if me.hostname.is_empty() {
        hostname()
    } else {
        me.hostname.clone()
    };
    format!("operator:{user}@{host}")
}
