//! A site's logs behind `Audit`: its own events (`PREFIX/events/`) and the
//! lines hosts mirror (`PREFIX/hosts/<host>/<root>/events/`), each read as
//! a tail at one revision, then followed by a watch from just after it, so
//! a face shows no line twice. The cursor is the revision.

use super::layout::{range_end, Published};
use super::watch::{self, Reading};
use super::Core;
use crate::events::history::Log;
use crate::events::tail::Line;
use crate::store::log::{LogFeed, LogNews, Tail};
use crate::store::{Cursor, StoreError};
use etcd_client::{Event, EventType, GetOptions, KeyValue, SortOrder, SortTarget};
use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// Which of a site's logs a feed reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Logs {
    /// The site's own.
    Own,
    /// What every host mirrors.
    Mirrored,
}

/// One stored line as the readers keep it, marked with its revision.
fn line_of(kv: &KeyValue) -> Line {
    Line::of_bytes(kv.value(), u64::try_from(kv.mod_revision()).unwrap_or(0))
}

fn revision_of(at: i64) -> Cursor {
    Cursor::of_u64(u64::try_from(at).unwrap_or(0))
}

impl Core {
    /// The last `n` entries of `logs`, oldest first, all read at one
    /// revision, and that revision.
    pub(super) fn log_tail(&self, logs: Logs, n: usize) -> Result<Tail, StoreError> {
        let limit = n.min(i64::MAX as usize) as i64;
        let last = |prefix: String, at: Option<i64>| {
            let mut opts = GetOptions::new()
                .with_range(range_end(&prefix))
                .with_sort(SortTarget::Create, SortOrder::Descend)
                .with_limit(limit);
            if let Some(at) = at {
                opts = opts.with_revision(at);
            }
            self.conn.call(move |mut c| {
                let (prefix, opts) = (prefix.clone(), opts.clone());
                async move { c.get(prefix, Some(opts)).await }
            })
        };
        match logs {
            Logs::Own => {
                let resp = last(self.layout.events(), None)?;
                let at = resp.header().map_or(0, |h| h.revision());
                let lines = resp.kvs().iter().rev().map(|kv| (Log::Own, line_of(kv)));
                Ok((lines.collect(), revision_of(at)))
            }
            Logs::Mirrored => {
                let mut at = None;
                let mut all: Vec<(String, i64, Log, Line)> = Vec::new();
                for host in self.read_fleet_hosts()? {
                    for root in &host.roots {
                        let place = self.layout.root_place(&host.host_id, &root.id);
                        let resp = last(place.events(), at)?;
                        at = at.or(resp.header().map(|h| h.revision()));
                        let log = Log::Mirrored {
                            host_id: host.host_id.clone(),
                            root_id: root.id.clone(),
                        };
                        for kv in resp.kvs() {
                            let line = line_of(kv);
                            let ts = crate::events::stream::Probe::of_slice(line.text.as_bytes())
                                .ok()
                                .and_then(|p| p.ts)
                                .unwrap_or_default();
                            all.push((ts, kv.create_revision(), log.clone(), line));
                        }
                    }
                }
                // Each log in its own order, all by time.
                all.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
                let from = all.len().saturating_sub(n);
                let at = match at {
                    Some(at) => at,
                    None => watch::now(self)?,
                };
                let lines = all.drain(from..).map(|(_, _, log, line)| (log, line));
                Ok((lines.collect(), revision_of(at)))
            }
        }
    }

    /// `logs` followed from `after` (see [`Core::log_tail`]).
    pub(super) fn log_follow(
        self: &Arc<Self>,
        logs: Logs,
        after: Option<&Cursor>,
    ) -> Result<Box<dyn LogFeed>, StoreError> {
        let mut first = VecDeque::new();
        let start = match after {
            // Every entry kept, a page at a time, then what comes after.
            Some(c) if c.is_start() => Some(self.log_pages(logs, &mut first)? + 1),
            Some(c) => c.as_u64().map(|r| i64::try_from(r).unwrap_or(i64::MAX) + 1),
            None => None,
        };
        let prefix = match logs {
            Logs::Own => self.layout.events(),
            Logs::Mirrored => self.layout.hosts(),
        };
        let reading = Lines {
            layout: self.layout.clone(),
            logs,
        };
        let (rx, task) = watch::spawn(self, prefix, start, reading)?;
        Ok(Box::new(EtcdLog { first, rx, task }))
    }

    /// Every entry of `logs`, a page per [`LogNews::Lines`], into `out`;
    /// the revision they were read at.
    fn log_pages(&self, logs: Logs, out: &mut VecDeque<LogNews>) -> Result<i64, StoreError> {
        let prefix = match logs {
            Logs::Own => self.layout.events(),
            Logs::Mirrored => self.layout.hosts(),
        };
        let mut reading = Lines {
            layout: self.layout.clone(),
            logs,
        };
        let from = out.len();
        let at = self.page_through(&prefix, 0, false, |page| {
            let puts = page.iter().map(|kv| (EventType::Put, kv));
            reading.group(puts, Cursor::start(), out);
            true
        })?;
        // Every page was read at the first page's revision.
        for n in out.iter_mut().skip(from) {
            if let LogNews::Lines { next, .. } = n {
                *next = revision_of(at);
            }
        }
        Ok(at)
    }
}

/// What a log watch makes of its prefix.
struct Lines {
    layout: super::Layout,
    logs: Logs,
}

impl Lines {
    /// The log a key belongs to, for a line.
    fn log_of(&self, key: &[u8]) -> Option<Log> {
        match self.logs {
            Logs::Own => Some(Log::Own),
            Logs::Mirrored => match self.layout.published_of(key)? {
                Published::Event { host_id, root_id } => Some(Log::Mirrored { host_id, root_id }),
                _ => None,
            },
        }
    }

    /// Lines written (puts) of each log, in order, one `Lines` per run of
    /// one log's lines.
    fn group<'a>(
        &mut self,
        kvs: impl Iterator<Item = (EventType, &'a KeyValue)>,
        next: Cursor,
        out: &mut impl Extend<LogNews>,
    ) {
        let mut run: Option<(Log, Vec<Line>)> = None;
        let mut done = Vec::new();
        for (kind, kv) in kvs {
            // A line is written once (create-if-absent); a deletion is
            // its retention ending, which says nothing new.
            if kind != EventType::Put {
                continue;
            }
            let Some(log) = self.log_of(kv.key()) else {
                continue;
            };
            match &mut run {
                Some((l, lines)) if *l == log => lines.push(line_of(kv)),
                _ => {
                    done.extend(run.take());
                    run = Some((log, vec![line_of(kv)]));
                }
            }
        }
        done.extend(run);
        out.extend(done.into_iter().map(|(log, lines)| LogNews::Lines {
            log,
            lines,
            next: next.clone(),
            file_id: None,
        }));
    }
}

impl Reading for Lines {
    type Out = LogNews;

    fn events(&mut self, events: &[&Event], out: &mut Vec<LogNews>) {
        let last = events
            .iter()
            .filter_map(|e| e.kv())
            .map(|kv| kv.mod_revision())
            .max();
        let Some(last) = last else { return };
        let kvs = events
            .iter()
            .filter_map(|e| e.kv().map(|kv| (e.event_type(), kv)));
        self.group(kvs, revision_of(last), out);
    }

    fn down(&mut self, why: String) -> LogNews {
        LogNews::Trouble { log: Log::Own, why }
    }

    fn up(&mut self, _revision: Option<i64>) -> Option<LogNews> {
        None
    }

    fn lost(&mut self, why: String) -> LogNews {
        LogNews::Trouble {
            log: Log::Own,
            why: why.replace("re-reading everything", "lines in between are not shown"),
        }
    }
}

/// A log feed over etcd: what was read before the watch, then the watch.
struct EtcdLog {
    first: VecDeque<LogNews>,
    rx: Receiver<LogNews>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for EtcdLog {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LogFeed for EtcdLog {
    fn next(&mut self, timeout: Duration) -> Result<Option<LogNews>, StoreError> {
        if let Some(n) = self.first.pop_front() {
            return Ok(Some(n));
        }
        match self.rx.recv_timeout(timeout) {
            Ok(n) => Ok(Some(n)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(StoreError::FeedClosed),
        }
    }

    fn closer(&self) -> Option<Box<dyn FnOnce() + Send>> {
        let task = self.task.abort_handle();
        Some(Box::new(move || task.abort()))
    }
}
