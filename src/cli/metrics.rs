//! metrics: serve Prometheus metrics over every root given (or a store),
//! each followed by its mirror and brought up to date at scrape time.

use super::args::MetricsArgs;
use super::output::{diag, CmdResult, Out, EXIT_OK};
use crate::claims::now_ms;
use crate::claims::root::RootProblem;
use crate::events::history::Log;
use crate::events::tail::Line;
use crate::metrics::{
    to_classic_text, wants_openmetrics, EventCounter, EventCounts, Exporter, HostUp, Snapshot,
    CLASSIC_CONTENT_TYPE, CONTENT_TYPE,
};
use crate::store::drive::{DriveOpts, Driver, Want};
use crate::store::fleet::Places;
use crate::store::{Audit, Backend, Fleet, OriginIx, Store, StoreError};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a wait for a request lasts before the stop flag is looked at
/// again: the bound on how late SIGTERM is obeyed.
const STOP_CHECK: Duration = Duration::from_millis(200);

/// A store (or one root) followed between scrapes: its member's driver,
/// brought up to date at each scrape. A scrape re-reads only the keys that
/// changed since the last one (a whole listing only when one is owed), and
/// judges again what time changed.
struct Followed<'a> {
    driver: Driver<'a>,
    /// Could the claims be read at the last scrape?
    up: bool,
}

impl<'a> Followed<'a> {
    fn new(store: &'a dyn Backend, at: OriginIx) -> Followed<'a> {
        // Every scrape judges again: a scrape is the clock here.
        let opts = DriveOpts {
            tick_ms: 0,
            ..DriveOpts::default()
        };
        let want = Want::Whole { head: 0 };
        Followed {
            driver: Driver::over(store, at, None, want, opts, now_ms()),
            up: true,
        }
    }

    /// Bring the mirror up to date; the deltas a screen would take are
    /// nothing to a scrape, which reads the tally.
    fn catch_up(&mut self, now: i64) {
        match self.driver.catch_up(now) {
            Ok(_) => self.up = true,
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
            self.driver.problem(),
            Some(RootProblem::NotADirectory(_) | RootProblem::Unreadable(..))
        );
        let tally = self.driver.tally();
        Snapshot::of_tally(&tally, self.driver.rows(), label, now, self.up && readable)
    }
}

/// One store followed between scrapes: its mirror and its events.
struct Part<'a> {
    /// The root it speaks for, where the store speaks for several.
    label: Option<String>,
    followed: Followed<'a>,
    counts: EventCounts,
}

impl<'a> Part<'a> {
    fn new(label: Option<String>, store: &'a dyn Backend, at: OriginIx) -> Part<'a> {
        Part {
            label,
            followed: Followed::new(store, at),
            counts: EventCounts::default(),
        }
    }
}

/// A member's logs, counted from their first line through its log feed:
/// its own log counted for its part, what hosts mirror for each host's
/// root. Counted as the feed brings them rather than re-read, a counter
/// never falls when a store's retention drops old events.
struct Counted<'a> {
    /// The part its own log counts for (None: a member of mirrored logs).
    part: Option<usize>,
    audit: &'a dyn Audit,
    counter: EventCounter,
}

/// Scrape-time collection over any store: each part it speaks for (every
/// root of several, labelled `root`) followed by its own mirror and its
/// events counted. Hosts publishing into the store add their roots'
/// series (labelled `host`, `host_id`, `root`) and `claimtop_host_up`.
struct Collector<'a> {
    /// Where hosts publish, when a member has them.
    fleet: Option<&'a dyn Fleet>,
    parts: Vec<Part<'a>>,
    logs: Vec<Counted<'a>>,
    /// What each host mirrored, by (host id, root path).
    fleet_events: BTreeMap<(String, String), EventCounts>,
    /// Names for the ids a mirrored event comes with on the feed.
    places: Places,
    exporter: Exporter,
    /// Count every published copy at each scrape, not the summaries.
    per_claim: bool,
}

/// Each host up or not, and each of its roots known or not.
fn hosts_up(hosts: &[crate::store::fleet::HostInfo]) -> Vec<HostUp> {
    hosts
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
        .collect()
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
        let mut parts = Vec::new();
        let mut logs = Vec::new();
        for m in store.members() {
            let part = m.named.then_some(parts.len());
            if m.named {
                let label = several.then(|| match m.root_dir() {
                    Some(dir) => dir.to_string_lossy().into_owned(),
                    None => m.backend().url(),
                });
                parts.push(Part::new(label, m.backend(), m.ix));
            }
            if let Some(audit) = m.backend().audit() {
                logs.push(Counted {
                    part,
                    audit,
                    counter: EventCounter::new(),
                });
            }
        }
        let fleet = store.members().iter().find_map(|m| m.backend().fleet());
        let mut collector = Collector {
            fleet,
            parts,
            logs,
            fleet_events: BTreeMap::new(),
            places: Places::default(),
            exporter: Exporter::new(),
            per_claim: false,
        };
        // Every log read once now, so the first scrape is no slower than
        // the next.
        collector.count_events();
        Ok(collector)
    }

    /// Count what each member's logs brought since the last time.
    fn count_events(&mut self) {
        let mut lines: Vec<(Option<usize>, Log, Line)> = Vec::new();
        for c in &mut self.logs {
            let before = c.counter.last_error.clone();
            c.counter.catch_up(c.audit, &mut |log, l| {
                lines.push((c.part, log.clone(), l.clone()))
            });
            if let Some(e) = &c.counter.last_error {
                if before.as_ref() != Some(e) {
                    diag(e);
                }
            }
        }
        for (part, log, line) in lines {
            match log {
                Log::Mirrored { host_id, root_id } => {
                    self.heard_mirrored(&host_id, &root_id, &line)
                }
                _ => {
                    if let Some(p) = part.and_then(|i| self.parts.get_mut(i)) {
                        p.counts.add_line(&line);
                    }
                }
            }
        }
    }

    /// Count a line a host mirrored, by its host and root.
    fn heard_mirrored(&mut self, host_id: &str, root_id: &str, line: &Line) {
        if !self.places.knows(host_id, root_id) {
            if let Some(Ok(hosts)) = self.fleet.map(|f| f.hosts()) {
                self.places = Places::of(&hosts);
            }
        }
        let Ok(ev) = line.parse() else {
            return;
        };
        let ev = self.places.mark(host_id, root_id, ev);
        if let Some(at) = published_place(&ev) {
            self.fleet_events
                .entry(at)
                .or_default()
                .add(Some(ev.kind()));
        }
    }

    /// The fleet's series and its hosts: from the roots' summaries (a few
    /// requests a host), or from every copy with `--per-claim` or where a
    /// root has no summary yet.
    fn read_fleet(
        &self,
        f: &dyn Fleet,
        now: i64,
    ) -> Result<(Vec<Snapshot>, Vec<HostUp>), StoreError> {
        if !self.per_claim {
            if let Some(s) = f.summaries()? {
                return Ok((Snapshot::of_summaries(&s, now), hosts_up(&s.hosts)));
            }
        }
        let f = f.brief_state()?;
        if f.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let hosts = hosts_up(&f.hosts);
        let snaps = Snapshot::of_fleet(&f, now);
        // Freeing 100 000 parsed copies takes a good part of a scrape:
        // done beside the answer, not before it.
        std::thread::spawn(move || drop(f));
        Ok((snaps, hosts))
    }

    fn scrape(&mut self) -> Result<String, std::fmt::Error> {
        let now = now_ms();
        let mut snaps = Vec::new();
        for part in &mut self.parts {
            part.followed.catch_up(now);
            // While the store is away the gauges keep what was last known,
            // marked down.
            snaps.push(part.followed.snapshot(part.label.clone(), now));
        }
        self.count_events();
        let (fleet, hosts) = match self.fleet.map(|f| self.read_fleet(f, now)).transpose() {
            Ok(Some(read)) => read,
            Ok(None) => (Vec::new(), Vec::new()),
            Err(e) => {
                diag(&format!("the publishing hosts: {e}"));
                (Vec::new(), Vec::new())
            }
        };
        let none = EventCounts::default();
        let mut counts: Vec<&EventCounts> = self.parts.iter().map(|p| &p.counts).collect();
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
    collector.per_claim = a.per_claim;
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
