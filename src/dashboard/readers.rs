//! The threads that read the store for the dashboard, whatever it
//! composes: every member's lane of the one driver ([`spawn_all`]), whose
//! updates reach the model as they are, and the events logs: each
//! member's last lines merged by time as the pane opens, then each log
//! followed from right after them, so no line is shown twice.

use super::action::Action;
use super::model::EVENTS_RING;
use crate::events::event::parse_event;
use crate::events::history::Log;
use crate::events::tail::Line;
use crate::store::drive::{spawn_all, DriveOpts, Lanes, Update};
use crate::store::fleet::{mark_published, HostInfo};
use crate::store::{Cursor, LogFeed, LogNews, OriginIx, Store, StoreError};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::time::Duration;

/// How long a log's follower waits on a quiet log before it looks again
/// (its closer, where it has one, ends the wait at once).
const QUIET_WAIT: Duration = Duration::from_secs(3600);

/// Every member's lane, and its events logs, wired as the live app wires
/// them, the clock ticking every `tick_ms`. Returns the lanes' inboxes
/// (an op's re-read goes to its member's) and read counters.
pub fn spawn(store: &Arc<Store>, tx: &Sender<Action>, tick_ms: i64) -> std::io::Result<Lanes> {
    let lanes = spawn_rows(store, tx, tick_ms)?;
    spawn_logs(store, tx)?;
    Ok(lanes)
}

/// Every member's lane; what each says reaches the model as
/// [`Action::Update`].
pub fn spawn_rows(store: &Arc<Store>, tx: &Sender<Action>, tick_ms: i64) -> std::io::Result<Lanes> {
    let (up_tx, up_rx) = channel::<Update>();
    let opts = DriveOpts {
        tick_ms: tick_ms.max(1),
        // The model words the one claim it shows in full.
        words: false,
        debounce: Some(crate::store::file::feed::DEBOUNCE),
        safety_net: true,
    };
    let lanes = spawn_all(store, opts, up_tx)?;
    let out = tx.clone();
    std::thread::Builder::new()
        .name("claimtop-updates".into())
        .spawn(move || {
            for u in up_rx {
                if out.send(Action::Update(Box::new(u))).is_err() {
                    return;
                }
            }
        })?;
    Ok(lanes)
}

/// One member's logs as the pane reads them.
struct Followed {
    at: OriginIx,
    backend: Arc<dyn crate::store::Backend>,
    /// Where to mark a host's mirrored line from (its hostname, its
    /// root's path), for a member of copies: its site's fleet.
    fleet: Option<Arc<dyn crate::store::Backend>>,
}

/// Each member's last lines, merged by time, then each log followed from
/// right after them, on threads of their own.
pub fn spawn_logs(store: &Arc<Store>, tx: &Sender<Action>) -> std::io::Result<()> {
    let site_fleet = store
        .members()
        .iter()
        .find(|m| m.backend().fleet().is_some())
        .map(|m| m.shared());
    let followed: Vec<Followed> = store
        .members()
        .iter()
        .filter(|m| m.backend().audit().is_some())
        .map(|m| Followed {
            at: m.ix,
            backend: m.shared(),
            fleet: site_fleet.clone(),
        })
        .collect();
    let out = tx.clone();
    std::thread::Builder::new()
        .name("claimtop-log".into())
        .spawn(move || open_logs(followed, out))?;
    Ok(())
}

fn open_logs(followed: Vec<Followed>, out: Sender<Action>) {
    let mut opening: Vec<(OriginIx, Log, Line, String)> = Vec::new();
    let mut cursors = Vec::with_capacity(followed.len());
    for f in &followed {
        let Some(audit) = f.backend.audit() else {
            continue;
        };
        let mut places = Places::new(f.fleet.clone());
        match audit.tail(EVENTS_RING) {
            Ok((lines, next)) => {
                for (log, line) in lines {
                    let line = places.mark(&log, line);
                    let ts = ts_of(&line);
                    opening.push((f.at, log, line, ts));
                }
                cursors.push(Some(next));
            }
            Err(e) => {
                let _ = out.send(trouble(f.at, &e));
                cursors.push(None);
            }
        }
    }
    // Oldest first across every log, the newest of them kept.
    opening.sort_by(|a, b| a.3.cmp(&b.3));
    let from = opening.len().saturating_sub(EVENTS_RING);
    let mut by_origin: Vec<(OriginIx, Log, Vec<Line>)> = Vec::new();
    for (at, log, line, _) in opening.drain(from..) {
        match by_origin.last_mut() {
            Some((a, l, lines)) if *a == at && *l == log => lines.push(line),
            _ => by_origin.push((at, log, vec![line])),
        }
    }
    for (at, log, lines) in by_origin {
        // Where each feed resumes is its own tail's cursor, kept below;
        // the pane needs none.
        let news = LogNews::Lines {
            log,
            lines,
            next: Cursor::start(),
            file_id: None,
        };
        if out.send(Action::News(at, news)).is_err() {
            return;
        }
    }
    for (f, next) in followed.into_iter().zip(cursors) {
        let out = out.clone();
        let _ = std::thread::Builder::new()
            .name(format!("claimtop-log{}", f.at.0))
            .spawn(move || follow(f, next, out));
    }
}

/// Follow one member's logs from `next` until the model hangs up; a feed
/// that ends is opened again from where it was.
fn follow(f: Followed, mut next: Option<Cursor>, out: Sender<Action>) {
    let Some(audit) = f.backend.audit() else {
        return;
    };
    let mut places = Places::new(f.fleet.clone());
    loop {
        let mut feed: Box<dyn LogFeed> = match audit.follow(next.as_ref()) {
            Ok(feed) => feed,
            Err(e) => {
                if out.send(trouble(f.at, &e)).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        loop {
            let news = match feed.next(QUIET_WAIT) {
                Ok(None) => continue,
                Ok(Some(LogNews::Lines {
                    log,
                    lines,
                    next: n,
                    file_id,
                })) => {
                    next = Some(n.clone());
                    let lines = lines.into_iter().map(|l| places.mark(&log, l)).collect();
                    LogNews::Lines {
                        log,
                        lines,
                        next: n,
                        file_id,
                    }
                }
                Ok(Some(other)) => other,
                Err(StoreError::FeedClosed) => return,
                Err(_) => break,
            };
            if out.send(Action::News(f.at, news)).is_err() {
                return;
            }
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Why origin `at`'s logs cannot be read now.
fn trouble(at: OriginIx, e: &StoreError) -> Action {
    let news = LogNews::Trouble {
        log: Log::Own,
        why: e.to_string(),
    };
    Action::News(at, news)
}

/// When a line was written, as it says it (UTC, so its text sorts as its
/// time; empty: it does not say).
fn ts_of(line: &Line) -> String {
    parse_event(&line.text)
        .ok()
        .and_then(|e| e.ts().map(str::to_string))
        .unwrap_or_default()
}

/// The hostname and root path of a host's mirrored line, read from its
/// site's hosts (again when a line names a place not yet known).
struct Places {
    fleet: Option<Arc<dyn crate::store::Backend>>,
    hosts: Option<Vec<HostInfo>>,
}

impl Places {
    fn new(fleet: Option<Arc<dyn crate::store::Backend>>) -> Places {
        Places { fleet, hosts: None }
    }

    fn mark(&mut self, log: &Log, line: Line) -> Line {
        let Log::Mirrored { host_id, root_id } = log else {
            return line;
        };
        let Ok(event) = parse_event(&line.text) else {
            return line;
        };
        let found = |hosts: &Option<Vec<HostInfo>>| {
            let h = hosts.as_ref()?.iter().find(|h| &h.host_id == host_id)?;
            let r = h.roots.iter().find(|r| &r.id == root_id)?;
            Some((h.label.clone(), r.path.clone()))
        };
        let place = found(&self.hosts).or_else(|| {
            self.hosts = self.fleet.as_ref()?.fleet()?.hosts().ok();
            found(&self.hosts)
        });
        let Some((hostname, root)) = place else {
            return line;
        };
        let marked = mark_published(event, &hostname, host_id, &root);
        Line {
            text: marked.value().to_string(),
            ..line
        }
    }
}
