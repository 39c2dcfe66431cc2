//! metrics: serve Prometheus metrics over every root given (or a store),
//! each followed by its mirror and brought up to date at scrape time.

use super::args::MetricsArgs;
use super::output::{diag, CmdResult, Out, EXIT_OK};
use crate::claims::now_ms;
use crate::claims::root::RootProblem;
use crate::events::history::Log;
use crate::metrics::{
    to_classic_text, wants_openmetrics, EventCounter, EventCounts, Exporter, HostUp, Snapshot,
    CLASSIC_CONTENT_TYPE, CONTENT_TYPE,
};
use crate::store::fleet::Places;
use crate::store::mirror::judge::Judge;
use crate::store::mirror::Mirror;
use crate::store::{Backend, Change, Changes, Fleet, Store, StoreError};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a wait for a request lasts before the stop flag is looked at
/// again: the bound on how late SIGTERM is obeyed.
const STOP_CHECK: Duration = Duration::from_millis(200);

/// A store (or one root) followed between scrapes: its mirror, brought up
/// to date from its change feed at each scrape. A scrape re-reads only the
/// keys that changed since the last one (a whole listing only when one is
/// owed), and judges again what time changed.
struct Followed {
    mirror: Mirror,
    feed: Option<Box<dyn Changes>>,
    /// Listed at least once.
    listed: bool,
    /// Could the claims be read at the last scrape?
    up: bool,
}

impl Followed {
    fn new(store: &dyn Backend, judge: Option<Judge>) -> Followed {
        Followed {
            mirror: Mirror::new(store, judge, now_ms()),
            feed: None,
            listed: false,
            up: true,
        }
    }

    /// Bring the mirror up to date; what the mirror does not keep (events,
    /// the store's ups and downs) goes to `heard`.
    fn catch_up(&mut self, store: &dyn Backend, now: i64, heard: &mut dyn FnMut(Change)) {
        // The feed first, so nothing written during a listing is missed.
        if self.feed.is_none() {
            match store.changes(None) {
                Ok(f) => self.feed = Some(f),
                Err(e) => diag(&format!("the change feed: {e}")),
            }
            self.mirror.relist_soon();
        }
        if let Some(feed) = self.feed.as_mut() {
            loop {
                match feed.next(Duration::ZERO) {
                    Ok(Some(c)) => {
                        if let Some(rest) = self.mirror.apply(c) {
                            heard(rest);
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        diag(&format!("the change feed: {e}"));
                        self.feed = None;
                        break;
                    }
                }
            }
        }
        if !self.listed {
            self.mirror.relist_soon();
        }
        self.mirror.tick(now);
        match self.mirror.settle(store, now) {
            Ok(()) => {
                self.listed = true;
                self.up = true;
            }
            Err(e) => {
                diag(&e.to_string());
                self.up = false;
            }
        }
    }

    /// What the mirror holds, as the exporter takes it.
    fn snapshot(&mut self, label: Option<String>, now: i64) -> Snapshot {
        // A root whose claims dir cannot be listed is down; one with
        // nothing claimed yet (or not even there yet) is up and empty.
        let readable = !matches!(
            self.mirror.problem(),
            Some(RootProblem::NotADirectory(_) | RootProblem::Unreadable(..))
        );
        let tally = self.mirror.tally();
        Snapshot::of_tally(&tally, self.mirror.rows(), label, now, self.up && readable)
    }
}

/// How one part of the store's events are counted.
enum Counting {
    /// A log kept in a file: read once, then what is appended, by offset
    /// (truncation and replacement noticed), as `events --follow` reads it.
    File(EventCounter),
    /// A store's log: read once at start, then counted as the store's
    /// change feed brings it. Counted from the feed rather than re-read, a
    /// counter never falls when the store's retention drops old events.
    Feed(EventCounts),
}

/// One store followed between scrapes: its mirror and its events.
struct Part<'a> {
    /// The root it speaks for, where the store speaks for several.
    label: Option<String>,
    store: &'a dyn Backend,
    followed: Followed,
    counting: Counting,
}

impl<'a> Part<'a> {
    fn new(label: Option<String>, store: &'a dyn Backend) -> Result<Part<'a>, StoreError> {
        // A claim bound to a pid is judged on this machine (the mirror
        // keeps the judge only where the member's rows are judged so).
        let mut followed = Followed::new(store, Some(Judge::local()));
        let file = store
            .audit()
            .and_then(|a| a.history(&Log::Own).ok())
            .and_then(|h| h.file().map(Path::to_path_buf));
        let counting = match file {
            Some(path) => Counting::File(EventCounter::new(path)),
            None => {
                // The feed first, so nothing recorded during the read is
                // missed.
                followed.feed = Some(store.changes(None)?);
                let mut counts = EventCounts::default();
                if let Some(audit) = store.audit() {
                    for ev in audit.events(usize::MAX)? {
                        counts.add(Some(ev.kind()));
                    }
                }
                Counting::Feed(counts)
            }
        };
        Ok(Part {
            label,
            store,
            followed,
            counting,
        })
    }

    fn counts(&self) -> &EventCounts {
        match &self.counting {
            Counting::File(c) => c.counts(),
            Counting::Feed(c) => c,
        }
    }
}

/// Scrape-time collection over any store: each part it speaks for (every
/// root of several, labelled `root`) followed by its own mirror and its
/// events counted. Hosts publishing into the store add their roots'
/// series (labelled `host`, `host_id`, `root`) and `claimtop_host_up`.
struct Collector<'a> {
    /// Where hosts publish, when a member has them.
    fleet: Option<&'a dyn Fleet>,
    parts: Vec<Part<'a>>,
    /// What each host mirrored, by (host id, root path).
    fleet_events: BTreeMap<(String, String), EventCounts>,
    /// Names for the ids a mirrored event comes with on the feed.
    places: Places,
    exporter: Exporter,
}

/// Where a mirrored event comes from, as it is marked: (host id, root).
fn published_place(ev: &crate::events::Event) -> Option<(String, String)> {
    let field = |k: &str| ev.value().get(k).and_then(Value::as_str).map(String::from);
    Some((field("host_id")?, field("root")?))
}

impl<'a> Collector<'a> {
    fn new(store: &'a Store) -> Result<Collector<'a>, StoreError> {
        // One series per named origin where there are several, labelled by
        // its root (several roots, as always) or its URL.
        let several = store.several();
        let parts = store
            .named()
            .map(|m| {
                let label = several.then(|| match m.root_dir() {
                    Some(dir) => dir.to_string_lossy().into_owned(),
                    None => m.backend().url(),
                });
                Part::new(label, m.backend())
            })
            .collect::<Result<Vec<_>, _>>()?;
        let fleet = store.members().iter().find_map(|m| m.backend().fleet());
        let mut fleet_events: BTreeMap<(String, String), EventCounts> = BTreeMap::new();
        let mirrored = match fleet {
            Some(fleet) => fleet.events(usize::MAX)?,
            None => Vec::new(),
        };
        for ev in mirrored {
            if let Some(at) = published_place(&ev) {
                fleet_events.entry(at).or_default().add(Some(ev.kind()));
            }
        }
        Ok(Collector {
            fleet,
            parts,
            fleet_events,
            places: Places::default(),
            exporter: Exporter::new(),
        })
    }

    /// Count what a part's feed brought beside its claims.
    fn heard(&mut self, part: usize, change: Change) {
        match change {
            Change::Event(ev) => {
                if let Some(Counting::Feed(c)) = self.parts.get_mut(part).map(|p| &mut p.counting) {
                    c.add(Some(ev.kind()));
                }
            }
            Change::PublishedEvent {
                host_id,
                root_id,
                event,
            } => {
                if !self.places.knows(&host_id, &root_id) {
                    if let Some(Ok(hosts)) = self.fleet.map(|f| f.hosts()) {
                        self.places = Places::of(&hosts);
                    }
                }
                let ev = self.places.mark(&host_id, &root_id, event);
                if let Some(at) = published_place(&ev) {
                    self.fleet_events
                        .entry(at)
                        .or_default()
                        .add(Some(ev.kind()));
                }
            }
            _ => {}
        }
    }

    fn scrape(&mut self) -> Result<String, std::fmt::Error> {
        let now = now_ms();
        let mut snaps = Vec::new();
        let mut heard = Vec::new();
        for (i, part) in self.parts.iter_mut().enumerate() {
            part.followed
                .catch_up(part.store, now, &mut |c| heard.push((i, c)));
            // While the store is away the gauges keep what was last known,
            // marked down.
            snaps.push(part.followed.snapshot(part.label.clone(), now));
            if let Counting::File(c) = &mut part.counting {
                let before = c.last_error.clone();
                c.catch_up();
                if let Some(e) = &c.last_error {
                    if before.as_ref() != Some(e) {
                        diag(e);
                    }
                }
            }
        }
        for (i, c) in heard {
            self.heard(i, c);
        }
        let fleet = self.fleet.map(|f| f.brief_state()).transpose();
        let (fleet, hosts) = match fleet {
            Ok(Some(f)) if !f.is_empty() => {
                let hosts: Vec<HostUp> = f
                    .hosts
                    .iter()
                    .map(|h| HostUp {
                        host: crate::metrics::HostLabel {
                            hostname: h.hostname.clone(),
                            host_id: h.host_id.clone(),
                        },
                        online: h.online,
                        roots: h
                            .roots
                            .iter()
                            .map(|r| (r.path.clone(), h.online && r.is_known()))
                            .collect(),
                    })
                    .collect();
                let snaps = Snapshot::of_fleet(&f, now);
                // Freeing 100 000 parsed copies takes a good part of a
                // scrape: done beside the answer, not before it.
                std::thread::spawn(move || drop(f));
                (snaps, hosts)
            }
            Ok(_) => (Vec::new(), Vec::new()),
            Err(e) => {
                diag(&format!("the publishing hosts: {e}"));
                (Vec::new(), Vec::new())
            }
        };
        let none = EventCounts::default();
        let mut counts: Vec<&EventCounts> = self.parts.iter().map(Part::counts).collect();
        for s in &fleet {
            let at = s
                .host
                .as_ref()
                .zip(s.root.as_ref())
                .map(|(h, r)| (h.host_id.clone(), r.clone()));
            counts.push(
                at.and_then(|at| self.fleet_events.get(&at))
                    .unwrap_or(&none),
            );
        }
        snaps.extend(fleet);
        self.exporter.update(&snaps, &counts);
        if self.fleet.is_some() {
            self.exporter.update_hosts(&hosts);
        }
        self.exporter.render()
    }
}

/// `metrics` over any store, through the store seam: one root, several
/// (a series per root), etcd, and the hosts publishing into it.
pub fn serve(store: &Store, a: &MetricsArgs, out: &mut Out) -> CmdResult {
    let mut collector = match Collector::new(store) {
        Ok(c) => c,
        Err(e) => return out.error(&e.to_string()),
    };
    serve_with(a, out, &mut || collector.scrape())
}

fn serve_with(
    a: &MetricsArgs,
    out: &mut Out,
    scrape: &mut dyn FnMut() -> Result<String, std::fmt::Error>,
) -> CmdResult {
    // Bound to exactly the address given: nothing else is opened.
    let server = match tiny_http::Server::http(a.listen) {
        Ok(s) => s,
        Err(e) => return out.error(&format!("cannot listen on {}: {e}", a.listen)),
    };
    let bound = server.server_addr().to_ip().unwrap_or(a.listen);
    diag(&format!("serving metrics at http://{bound}/metrics"));
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Without the flag a signal still ends us, just less tidily.
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    let mut scrapes: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let req = match server.recv_timeout(STOP_CHECK) {
            Ok(Some(req)) => req,
            Ok(None) => continue,
            Err(e) => {
                diag(&format!("accepting a request: {e}"));
                continue;
            }
        };
        let path = req.url().split('?').next().unwrap_or("");
        let response = if path != "/metrics" {
            text_response(404, "not found: metrics are at /metrics\n", "text/plain")
        } else {
            let accept = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Accept"))
                .map(|h| h.value.as_str());
            let openmetrics = wants_openmetrics(accept);
            match scrape() {
                Ok(body) if openmetrics => {
                    scrapes += 1;
                    text_response(200, &body, CONTENT_TYPE)
                }
                Ok(body) => {
                    scrapes += 1;
                    text_response(200, &to_classic_text(&body), CLASSIC_CONTENT_TYPE)
                }
                Err(e) => text_response(500, &format!("encoding failed: {e}\n"), "text/plain"),
            }
        };
        if let Err(e) = req.respond(response) {
            // The scraper went away mid-answer: its problem, not ours.
            diag(&format!("answering a scrape: {e}"));
        }
    }
    if out.json_mode() {
        out.json(&json!({
            "outcome": "stopped",
            "listen": bound.to_string(),
            "scrapes": scrapes,
        }))?;
    }
    Ok(EXIT_OK)
}

fn text_response(
    code: u16,
    body: &str,
    content_type: &str,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut r = tiny_http::Response::from_string(body).with_status_code(code);
    if let Ok(h) = tiny_http::Header::from_bytes("Content-Type", content_type) {
        r = r.with_header(h);
    }
    r
}
