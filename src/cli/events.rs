//! events: print the audit log, optionally following it like `tail -F`.

use super::args::EventsArgs;
use super::events_print::{Filter, Printer};
use super::output::{diag, exit_status, CmdResult, Out, EXIT_OK};
use crate::events::history::{History, HistoryError, Log};
use crate::events::merge::{keep_last, merge_by_ts};
use crate::events::range::{Kept, Range, RangeEnd};
use crate::events::stream::Probe;
use crate::events::tail::Line;
use crate::events::Event;
use crate::store::fleet::Places;
use crate::store::{Cursor, LogFeed, LogNews, LogRef, Member, OriginIx, Store, StoreError};
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often `--follow` looks for new lines: quick enough to feel live,
/// slow enough to cost nothing while the log is idle.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// `events` over any store. Logs kept in files (a file root's, each of
/// several roots') are read from the files themselves: lines printed byte
/// for byte, `--since` bisected, a follower per file that notices
/// truncation and replacement. Any other mix is read through each member's
/// history, merged by time, each event naming its origin where several
/// are named.
pub fn events(store: &Store, a: EventsArgs, out: &mut Out) -> CmdResult {
    if let Some(why) = a.refusal(crate::time::now_ms()) {
        return out.usage_error(&why);
    }
    // `--follow` runs until interrupted, and an interrupt is an exit 0 with
    // whole lines out, even one that comes while what the log already holds
    // is still printing: so the handler is set before anything is read.
    let stop = Arc::new(AtomicBool::new(false));
    if a.follow {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Without the flag Ctrl-C still ends us, just less tidily.
            let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
        }
    }
    match verbatim_logs(store) {
        Ok(Some(logs)) => events_in_files(store, logs, a, stop, out),
        Ok(None) => events_store(store, a, stop, out),
        Err(e) => out.error(&e),
    }
}

/// A log whose entries print as they stand (a file's lines), named by the
/// root it speaks for where there are several, with its history.
struct Verbatim {
    log: LogRef,
    history: Box<dyn History>,
}

/// The store's logs, when every one prints as it stands; None when any is
/// a store's values (read as events instead).
fn verbatim_logs(store: &Store) -> Result<Option<Vec<Verbatim>>, String> {
    let mut logs = Vec::new();
    for log in store.logs().map_err(|e| e.to_string())? {
        let history = store.history(&log).map_err(|e| e.to_string())?;
        if !history.verbatim() {
            return Ok(None);
        }
        logs.push(Verbatim { log, history });
    }
    Ok(Some(logs))
}

fn events_in_files(
    store: &Store,
    mut logs: Vec<Verbatim>,
    a: EventsArgs,
    stop: Arc<AtomicBool>,
    out: &mut Out,
) -> CmdResult {
    let mut p = Printer::new(out, Filter::of(&a), stop);
    let printed = match logs.as_mut_slice() {
        [one] if one.log.name.is_none() => print_one(&mut p, store, one, a.lines),
        several => print_several(&mut p, store, several, a.lines),
    };
    let result = match printed {
        Err(Stop::Exit(code)) => Ok(code),
        Err(Stop::Io(e)) => Err(e),
        Ok(after) => p.out.flush().and_then(|()| match a.follow {
            true => follow_logs(&mut p, store, logs, after, Shown::Lines),
            false => Ok(EXIT_OK),
        }),
    };
    p.report_skipped();
    match result {
        Ok(code) => Ok(code),
        // Interrupted between two lines: what was printed stands.
        Err(_) if p.stopped() => p.out.flush().map(|()| EXIT_OK),
        // A reader that went away is the caller's business (exit 0); any
        // other failure reading the log is ours to report.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(e),
        Err(e) if e.kind() == io::ErrorKind::StorageFull => Err(e),
        Err(e) => {
            p.out.discard();
            p.out.error(&e.to_string())
        }
    }
}

/// `events` over a store whose logs are not all files (etcd, or a mix):
/// every member's events, oldest first, filtered, the last `-n`; `--follow`
/// then prints what the members' change feeds bring, and says on stderr
/// when a store stops and starts answering. Where several origins are
/// named, each event says its `"origin"` (and a root's its `"root"`).
fn events_store(store: &Store, a: EventsArgs, stop: Arc<AtomicBool>, out: &mut Out) -> CmdResult {
    let mut p = Printer::new(out, Filter::of(&a), stop);
    match store_events(store, &a, &mut p) {
        // Interrupted between two lines: what was printed stands.
        Err(_) if p.stopped() => p.out.flush().map(|()| EXIT_OK),
        result => result,
    }
}

fn store_events(store: &Store, a: &EventsArgs, p: &mut Printer<'_>) -> CmdResult {
    // Started before the read, so nothing recorded in between is missed
    // (an event in both is printed twice rather than lost).
    let opened = a.follow.then(|| {
        let claims = Watching::claims(store)?;
        open_feeds(store, from_now(store)).map(|f| (f, claims))
    });
    let mut feeds = match opened {
        Some(Ok(f)) => Some(f),
        Some(Err(e)) => return p.out.error(&e.to_string()),
        None => None,
    };
    let several = store.several();
    let mut all = Vec::new();
    for m in store.members() {
        let Some(audit) = m.backend().audit() else {
            continue;
        };
        // A store's own log through its history: a window starts where the
        // history finds its time, and only the matches are kept. Logs it
        // mirrors for others are read whole, each event saying whose.
        let own = match audit.logs() {
            Ok(logs) => logs.iter().any(|(_, l)| *l == Log::Own),
            Err(e) => return p.out.error(&e.to_string()),
        };
        let read = if own {
            let wants = |ev: &Event| p.wants(ev);
            let wanted = super::events_history::Wanted {
                since: p.filter.since,
                until: p.filter.until,
                last: a.lines,
                filtered: a.key.is_some() || a.kind.is_some(),
                wants: &wants,
            };
            super::events_history::own_events(audit, &wanted)
        } else {
            audit.events(usize::MAX).map_err(|e| e.to_string())
        };
        match read {
            Ok(events) => all.extend(events.into_iter().map(|ev| tagged(ev, m, several))),
            Err(e) => return p.out.error(&e),
        }
    }
    if store.members().len() > 1 {
        all.sort_by(|a, b| a.ts().cmp(&b.ts()));
    }
    let wanted: Vec<&Event> = all.iter().filter(|e| p.wants(e)).collect();
    let from = a.lines.map_or(0, |n| wanted.len().saturating_sub(n));
    for ev in &wanted[from..] {
        p.print_event(ev)?;
    }
    p.out.flush()?;
    match feeds.as_mut() {
        Some((feeds, _claims)) => follow_feeds(p, store, feeds, Shown::Events),
        None => Ok(EXIT_OK),
    }
}

/// An event with its origin added, where several are named: `"root"` for
/// a root's, then `"origin"`.
fn tagged(ev: Event, m: &Member, several: bool) -> Event {
    if !several {
        return ev;
    }
    let ev = match m.root_dir() {
        Some(dir) => ev.with_field("root", dir.to_string_lossy().into()),
        None => ev,
    };
    ev.with_field("origin", m.name().into())
}

/// How followed lines are printed: a file's as written (its root spliced
/// in where several are named), a store's as events, each tagged with its
/// origin where several are named.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shown {
    Lines,
    Events,
}

/// One member's log feed, and what a printer says of its lines.
struct Followed {
    at: OriginIx,
    /// The root a file log speaks for, where several are named.
    root: Option<String>,
    /// The log a line cut at the cap is read whole from.
    whole: Option<Box<dyn History>>,
    feed: Box<dyn LogFeed>,
    /// The trouble last said, so a lasting one is said once.
    said: Option<String>,
}

/// Where a member's log is followed from: the root it speaks for (where
/// several are named), the member, the cursor (None: from now), and the
/// history a line cut at the cap is read whole from.
type Place = (
    Option<String>,
    OriginIx,
    Option<Cursor>,
    Option<Box<dyn History>>,
);

/// Where each member with a log resumes: from now.
fn from_now(store: &Store) -> Vec<Place> {
    let logged = store
        .members()
        .iter()
        .filter(|m| m.backend().audit().is_some());
    logged.map(|m| (None, m.ix, None, None)).collect()
}

/// Each member's log feed from its place.
fn open_feeds(store: &Store, from: Vec<Place>) -> Result<Vec<Followed>, StoreError> {
    let mut feeds = Vec::new();
    for (root, at, after, whole) in from {
        let Some(audit) = store.backend(at).and_then(|b| b.audit()) else {
            continue;
        };
        feeds.push(Followed {
            at,
            root,
            whole,
            feed: audit.follow(after.as_ref())?,
            said: None,
        });
    }
    Ok(feeds)
}

/// `--follow` after the files were printed up to each cursor.
fn follow_logs(
    p: &mut Printer<'_>,
    store: &Store,
    logs: Vec<Verbatim>,
    after: Printed,
    shown: Shown,
) -> CmdResult {
    let from: Vec<Place> = after
        .into_iter()
        .zip(logs)
        .map(|((root, at, c), v)| (root, at, c, Some(v.history)))
        .collect();
    match open_feeds(store, from) {
        Ok(mut feeds) => follow_feeds(p, store, &mut feeds, shown),
        Err(e) => p.out.error(&e.to_string()),
    }
}

/// Print what the members' log feeds bring until interrupted. Each round's
/// new lines from all logs are merged by time.
fn follow_feeds(
    p: &mut Printer<'_>,
    store: &Store,
    feeds: &mut [Followed],
    shown: Shown,
) -> CmdResult {
    let several = store.several();
    // A mirrored line names its host and root by id only: their names come
    // from the hosts' records, read again for a root not seen.
    let mut places = Places::default();
    while !p.stopped() && !stdout_closed() {
        let mut seen: Vec<Vec<(Option<String>, FollowedLine)>> = Vec::new();
        for f in feeds.iter_mut() {
            let mut lines = Vec::new();
            loop {
                match f.feed.next(Duration::ZERO) {
                    Ok(None) => break,
                    Ok(Some(LogNews::Lines {
                        log, lines: got, ..
                    })) => {
                        f.said = None;
                        let from = Mirrored::of(&log);
                        lines.extend(got.into_iter().map(|l| (l, from.clone())));
                    }
                    Ok(Some(LogNews::Reset { .. })) => {
                        let whose = f.root.as_deref().map(|r| format!(" of {r}"));
                        diag(&format!(
                            "the events log{} was truncated or replaced; reading it from the start",
                            whose.unwrap_or_default()
                        ));
                    }
                    Ok(Some(LogNews::Trouble { why, .. })) => {
                        if f.said.as_deref() != Some(why.as_str()) {
                            diag(&match shown {
                                Shown::Lines => why.clone(),
                                Shown::Events => format!("store unreachable: {why}"),
                            });
                            f.said = Some(why);
                        }
                        break;
                    }
                    Err(e) => return p.out.error(&e.to_string()),
                }
            }
            let ts = |l: &Line| Probe::of_slice(l.text.as_bytes()).ok().and_then(|pr| pr.ts);
            seen.push(lines.into_iter().map(|l| (ts(&l.0), l)).collect());
        }
        let mut any = false;
        for (i, (line, mirrored)) in merge_by_ts(seen) {
            any = true;
            let f = &mut feeds[i];
            match shown {
                Shown::Lines => {
                    p.root.clone_from(&f.root);
                    p.origin = f
                        .root
                        .as_ref()
                        .filter(|_| several)
                        .map(|r| format!("file:{r}"));
                    p.print_followed(&line, f.whole.as_mut())?;
                }
                Shown::Events => {
                    let Some(member) = store.member(f.at) else {
                        continue;
                    };
                    let Ok(ev) = line.parse() else {
                        p.skipped += 1;
                        continue;
                    };
                    let ev = match mirrored {
                        Some(Mirrored { host_id, root_id }) => {
                            if !places.knows(&host_id, &root_id) {
                                let fleet =
                                    store.members().iter().find_map(|m| m.backend().fleet());
                                if let Some(Ok(hosts)) = fleet.map(|f| f.hosts()) {
                                    places = Places::of(&hosts);
                                }
                            }
                            places.mark(&host_id, &root_id, ev)
                        }
                        None => ev,
                    };
                    let ev = tagged(ev, member, several);
                    if p.wants(&ev) {
                        p.print_event(&ev)?;
                    }
                }
            }
        }
        p.out.flush()?;
        if !any {
            std::thread::sleep(FOLLOW_POLL);
        }
    }
    Ok(EXIT_OK)
}

/// Every named member's claims watched while its log is followed, for
/// what a watcher owes the store, not for printing: a store whose claims
/// end by themselves (an etcd lease running out) has the end recorded by
/// the first watcher that sees it (one `claim_expired` per expiry).
struct Watching {
    done: Arc<AtomicBool>,
}

impl Watching {
    fn claims(store: &Store) -> Result<Watching, StoreError> {
        let done = Arc::new(AtomicBool::new(false));
        for m in store.named() {
            let mut feed = m.backend().changes(None)?;
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if feed.next(FOLLOW_POLL).is_err() {
                        return;
                    }
                }
            });
        }
        Ok(Watching { done })
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// A followed line, and whose root it comes from when it was mirrored.
type FollowedLine = (Line, Option<Mirrored>);

/// Whose root a mirrored line comes from.
#[derive(Clone)]
struct Mirrored {
    host_id: String,
    root_id: String,
}

impl Mirrored {
    fn of(log: &Log) -> Option<Mirrored> {
        match log {
            Log::Mirrored { host_id, root_id } => Some(Mirrored {
                host_id: host_id.clone(),
                root_id: root_id.clone(),
            }),
            _ => None,
        }
    }
}

/// Why printing the logs stopped before following them.
enum Stop {
    /// Said already, this is the exit status.
    Exit(u8),
    Io(io::Error),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Stop {
        Stop::Io(e)
    }
}

/// A log that could not be read: one that could not be opened is said
/// at once (nothing of it was printed); a read that failed midway, or
/// whose output did, ends the printing as it was.
fn stopped(p: &mut Printer<'_>, e: HistoryError) -> Stop {
    match e {
        HistoryError::Read(e) => Stop::Io(e),
        e => Stop::Exit(exit_status(p.out.error(&e.to_string()))),
    }
}

/// Each log's root, member and the cursor after its lines printed (None:
/// from now).
type Printed = Vec<(Option<String>, OriginIx, Option<Cursor>)>;

/// Where `log`'s feed resumes after a read of it that ended at `end`.
fn resume_after(store: &Store, log: &LogRef, end: &RangeEnd) -> Option<Cursor> {
    let audit = store.backend(log.origin)?.audit()?;
    audit.resume_after(&log.log, end)
}

/// The one log's lines; the cursor after them.
fn print_one(
    p: &mut Printer<'_>,
    store: &Store,
    one: &mut Verbatim,
    limit: Option<usize>,
) -> Result<Printed, Stop> {
    let end = match p.print_history(&mut *one.history, limit) {
        Ok(end) => end,
        Err(e) => return Err(stopped(p, e)),
    };
    let after = resume_after(store, &one.log, &end);
    Ok(vec![(None, one.log.origin, after)])
}

/// Several roots' logs: each log's matching lines (the last `limit` of
/// each, enough for the last `limit` of all), merged by time, each printed
/// with its root. Only the places and times of the lines are held, not
/// their text.
fn print_several(
    p: &mut Printer<'_>,
    store: &Store,
    logs: &mut [Verbatim],
    limit: Option<usize>,
) -> Result<Printed, Stop> {
    let several = store.several();
    // Several roots: each line says its root, and its origin (`file:` and
    // the root).
    let origin = |name: &str| several.then(|| format!("file:{name}"));
    let mut names: Vec<String> = Vec::new();
    let mut found: Vec<Vec<(Option<String>, Kept)>> = Vec::new();
    let mut printed = Vec::new();
    let range = Range {
        since: p.filter.since,
        until: p.filter.until,
        last: None,
    };
    for v in logs.iter_mut() {
        let name = v.log.name.clone().unwrap_or_default();
        let mut kept: VecDeque<(Option<String>, Kept)> = VecDeque::new();
        let read = v.history.read_range(&range, &mut |e| {
            p.go_on()?;
            match e.probe() {
                Ok(pr)
                    if p.filter.accepts(
                        pr.kind.as_deref(),
                        pr.key.as_deref(),
                        pr.ts.as_deref(),
                    ) =>
                {
                    match limit {
                        Some(n) => keep_last(&mut kept, n, (pr.ts, e.keep())),
                        None => kept.push_back((pr.ts, e.keep())),
                    }
                }
                Ok(_) => {}
                Err(_) => p.skipped += 1,
            }
            Ok(())
        });
        let end = read.map_err(|e| stopped(p, e))?;
        found.push(kept.into());
        printed.push((
            Some(name.clone()),
            v.log.origin,
            resume_after(store, &v.log, &end),
        ));
        names.push(name);
    }
    let merged = merge_by_ts(found);
    let skip = limit.map_or(0, |n| merged.len().saturating_sub(n));
    for (i, kept) in merged.into_iter().skip(skip) {
        let name = &names[i];
        // Held whole even past INLINE_LINE_BYTES: the root is spliced into
        // the line's text, which needs all of it.
        let mut line = std::mem::take(&mut p.buf);
        kept.read_into(&mut line)?;
        p.root = Some(name.clone());
        p.origin = origin(name);
        let res = p.print_line(&line);
        p.buf = line;
        res?;
    }
    Ok(printed)
}

/// Has the reader of our stdout gone away? A quiet log would otherwise keep
/// `claimtop events --follow | head -1` alive forever after head exits.
fn stdout_closed() -> bool {
    let mut fds = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout; poll only writes `revents`.
    let n = unsafe { libc::poll(&mut fds, 1, 0) };
    n > 0 && fds.revents & (libc::POLLERR | libc::POLLHUP) != 0
}
