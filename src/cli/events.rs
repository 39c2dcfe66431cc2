//! events: print the audit log, optionally following it like `tail -F`.

use super::args::EventsArgs;
use super::events_print::{Filter, Printer};
use super::output::{diag, exit_status, CmdResult, Out, EXIT_OK};
use crate::events::follow::{Follower, Reset};
use crate::events::history::Log;
use crate::events::merge::{keep_last, merge_by_ts};
use crate::events::stream::{self, Probe, Span};
use crate::events::tail::{open_regular, FileId, Line};
use crate::events::Event;
use crate::store::fleet::Places;
use crate::store::{Change, Member, OriginIx, Store, StoreError};
use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
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
    match log_files(store) {
        Ok(Some(files)) => events_in_files(&files, store.several(), a, stop, out),
        Ok(None) => events_store(store, a, stop, out),
        Err(e) => out.error(&e),
    }
}

/// A log file, named by the root it speaks for where there are several.
type NamedFile = (Option<String>, PathBuf);

/// The files the store keeps its events logs in; None when any of its logs
/// is no file.
fn log_files(store: &Store) -> Result<Option<Vec<NamedFile>>, String> {
    let mut files = Vec::new();
    for log in store.logs().map_err(|e| e.to_string())? {
        let history = store.history(&log).map_err(|e| e.to_string())?;
        match history.file() {
            Some(path) => files.push((log.name, path.to_path_buf())),
            None => return Ok(None),
        }
    }
    Ok(Some(files))
}

fn events_in_files(
    files: &[NamedFile],
    several: bool,
    a: EventsArgs,
    stop: Arc<AtomicBool>,
    out: &mut Out,
) -> CmdResult {
    let mut p = Printer::new(out, Filter::of(&a), stop);
    let result = match files {
        [(None, path)] => print_one(&mut p, path, a.lines, a.follow),
        _ => print_several(&mut p, files, several, a.lines, a.follow),
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
    let mut feed = match a.follow.then(|| Merged::start(store)).transpose() {
        Ok(f) => f,
        Err(e) => return p.out.error(&e.to_string()),
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
    let Some(feed) = feed.as_mut() else {
        return Ok(EXIT_OK);
    };
    // The feed names a mirrored event's host and root by id only: their
    // names come from the hosts' records, read again for a root not seen.
    let mut places = Places::default();
    while !p.stopped() && !stdout_closed() {
        let (m, change) = match feed.next(FOLLOW_POLL) {
            Ok(Some(got)) => got,
            Ok(None) => continue,
            Err(e) => return p.out.error(&e.to_string()),
        };
        let Some(member) = store.member(m) else {
            continue;
        };
        let events: Vec<Event> = match change {
            Change::Event(ev) => vec![ev],
            Change::LogAppended(lines) => lines.iter().filter_map(|l| l.parse().ok()).collect(),
            Change::PublishedEvent {
                host_id,
                root_id,
                event,
            } => {
                if !places.knows(&host_id, &root_id) {
                    if let Some(Ok(hosts)) = member.backend().fleet().map(|f| f.hosts()) {
                        places = Places::of(&hosts);
                    }
                }
                vec![places.mark(&host_id, &root_id, event)]
            }
            Change::Disconnected { why } => {
                diag(&format!("store unreachable: {why}"));
                continue;
            }
            Change::Connected { .. } => {
                diag("store reachable again");
                continue;
            }
            _ => continue,
        };
        for ev in events.into_iter().map(|ev| tagged(ev, member, several)) {
            if p.wants(&ev) {
                p.print_event(&ev)?;
            }
        }
        p.out.flush()?;
    }
    Ok(EXIT_OK)
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

/// Every named member's change feed drained by a thread of its own into
/// one channel, so a quiet member never delays a busy one's news. A site's
/// feed brings what its hosts mirror too.
struct Merged {
    rx: Receiver<Result<(OriginIx, Change), StoreError>>,
}

impl Merged {
    fn start(store: &Store) -> Result<Merged, StoreError> {
        let (tx, rx) = channel();
        for m in store.named().filter(|m| m.backend().audit().is_some()) {
            let mut feed = m.backend().changes(None)?;
            let (tx, at): (Sender<_>, _) = (tx.clone(), m.ix);
            std::thread::spawn(move || loop {
                let got = match feed.next(FOLLOW_POLL) {
                    Ok(None) => continue,
                    Ok(Some(change)) => Ok((at, change)),
                    Err(e) => Err(e),
                };
                let ended = got.is_err();
                // The command is done with it: nobody listens any more.
                if tx.send(got).is_err() || ended {
                    return;
                }
            });
        }
        Ok(Merged { rx })
    }

    fn next(&mut self, timeout: Duration) -> Result<Option<(OriginIx, Change)>, StoreError> {
        match self.rx.recv_timeout(timeout) {
            Ok(got) => got.map(Some),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(StoreError::FeedClosed),
        }
    }
}

/// A failure reading one log, naming it.
fn at(path: &Path, e: io::Error) -> io::Error {
    match e.kind() {
        // Failures writing our own output, not reading the log.
        io::ErrorKind::BrokenPipe | io::ErrorKind::StorageFull => e,
        kind => io::Error::new(kind, format!("{}: {e}", path.display())),
    }
}

fn open_log(p: &mut Printer<'_>, path: &Path) -> Result<Option<(File, FileId)>, u8> {
    open_regular(path).map_err(|e| exit_status(p.out.error(&e.to_string())))
}

fn print_one(p: &mut Printer<'_>, path: &Path, limit: Option<usize>, follow: bool) -> CmdResult {
    let opened = match open_log(p, path) {
        Ok(o) => o,
        Err(code) => return Ok(code),
    };
    let follower = match opened {
        None => Follower::waiting_for(path),
        Some((file, id)) => {
            let end = complete_end(&file).map_err(|e| at(path, e))?;
            p.print_file(&file, end, limit).map_err(|e| at(path, e))?;
            Follower::starting_at(path, file, id, end)
        }
    };
    follow_all(p, vec![(None, follower)], false, follow)
}

fn complete_end(file: &File) -> io::Result<u64> {
    let len = file.metadata()?.len();
    stream::end_of_complete_lines(file, len)
}

/// Several roots' logs: each log's matching lines (the last `limit` of
/// each, enough for the last `limit` of all), merged by time, each printed
/// with its root. Only the places and times of the lines are held, not
/// their text.
fn print_several(
    p: &mut Printer<'_>,
    files: &[NamedFile],
    several: bool,
    limit: Option<usize>,
    follow: bool,
) -> CmdResult {
    // Several roots: each line says its root, and its origin (`file:` and
    // the root).
    let origin = |name: &str| several.then(|| format!("file:{name}"));
    let mut logs: Vec<(String, Option<File>)> = Vec::new();
    let mut found: Vec<Vec<(Option<String>, Span)>> = Vec::new();
    let mut followers = Vec::new();
    for (name, path) in files {
        let name = name.clone().unwrap_or_default();
        let opened = match open_log(p, path) {
            Ok(o) => o,
            Err(code) => return Ok(code),
        };
        let Some((file, id)) = opened else {
            followers.push((Some(name.clone()), Follower::waiting_for(path)));
            logs.push((name, None));
            found.push(Vec::new());
            continue;
        };
        let end = complete_end(&file).map_err(|e| at(path, e))?;
        let mut kept: VecDeque<(Option<String>, Span)> = VecDeque::new();
        let from = p.filter.start_in(&file, end).map_err(|e| at(path, e))?;
        stream::for_each_line(&file, from, end, |span, bytes| {
            p.go_on()?;
            let probe = match bytes {
                Some(line) => Probe::of_slice(line),
                None => Probe::of_span(&file, span),
            };
            match probe {
                Ok(pr)
                    if p.filter.accepts(
                        pr.kind.as_deref(),
                        pr.key.as_deref(),
                        pr.ts.as_deref(),
                    ) =>
                {
                    match limit {
                        Some(n) => keep_last(&mut kept, n, (pr.ts, span)),
                        None => kept.push_back((pr.ts, span)),
                    }
                }
                Ok(_) => {}
                Err(_) => p.skipped += 1,
            }
            Ok(())
        })
        .map_err(|e| at(path, e))?;
        found.push(kept.into());
        let resume = file.try_clone().map_err(|e| at(path, e))?;
        followers.push((
            Some(name.clone()),
            Follower::starting_at(path, resume, id, end),
        ));
        logs.push((name, Some(file)));
    }
    let merged = merge_by_ts(found);
    let skip = limit.map_or(0, |n| merged.len().saturating_sub(n));
    for (i, span) in merged.into_iter().skip(skip) {
        let (name, file) = &logs[i];
        let Some(file) = file else { continue };
        // Held whole even past INLINE_LINE_BYTES: the root is spliced into
        // the line's text, which needs all of it.
        p.buf.resize(span.len as usize, 0);
        file.read_exact_at(&mut p.buf, span.offset)?;
        let line = std::mem::take(&mut p.buf);
        p.root = Some(name.clone());
        p.origin = origin(name);
        let res = p.print_line(&line);
        p.buf = line;
        res?;
    }
    follow_all(p, followers, several, follow)
}

/// Print what the followers see until interrupted (or, without `follow`,
/// just flush). Each poll's new lines from all logs are merged by time; a
/// follower's root (with several) is added to each of its lines.
fn follow_all(
    p: &mut Printer<'_>,
    mut followers: Vec<(Option<String>, Follower)>,
    several: bool,
    follow: bool,
) -> CmdResult {
    p.out.flush()?;
    if !follow {
        return Ok(EXIT_OK);
    }
    let mut last_error: Vec<Option<String>> = vec![None; followers.len()];
    while !p.stopped() {
        if stdout_closed() {
            break;
        }
        let mut more = false;
        let mut seen: Vec<Vec<(Option<String>, Line)>> = Vec::with_capacity(followers.len());
        for ((root, follower), last_error) in followers.iter_mut().zip(&mut last_error) {
            let whose = root
                .as_deref()
                .map(|r| format!(" of {r}"))
                .unwrap_or_default();
            let poll = match follower.poll() {
                Ok(poll) => {
                    *last_error = None;
                    poll
                }
                Err(e) => {
                    // The follower stays usable; say so once, not every tick.
                    let msg = e.to_string();
                    if last_error.as_deref() != Some(msg.as_str()) {
                        diag(&msg);
                        *last_error = Some(msg);
                    }
                    seen.push(Vec::new());
                    continue;
                }
            };
            match poll.reset {
                Some(Reset::Truncated) => diag(&format!(
                    "the events log{whose} was truncated; reading it from the start"
                )),
                Some(Reset::Replaced) => diag(&format!(
                    "the events log{whose} was replaced; reading the new file"
                )),
                None => {}
            }
            more |= poll.more;
            seen.push(
                poll.lines
                    .into_iter()
                    .map(|l| {
                        (
                            Probe::of_slice(l.text.as_bytes()).ok().and_then(|pr| pr.ts),
                            l,
                        )
                    })
                    .collect(),
            );
        }
        for (i, line) in merge_by_ts(seen) {
            let (root, follower) = &followers[i];
            p.root.clone_from(root);
            p.origin = root
                .as_ref()
                .filter(|_| several)
                .map(|r| format!("file:{r}"));
            p.print_followed(&line, follower.file())?;
        }
        p.out.flush()?;
        if !more {
            std::thread::sleep(FOLLOW_POLL);
        }
    }
    Ok(EXIT_OK)
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
