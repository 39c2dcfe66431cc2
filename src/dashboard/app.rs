//! The model: every fact the screen shows, and nothing about how it is drawn.
//!
//! Claims are keyed by lockfile path so a watcher batch touches exactly the
//! entries it names. `rows` is the filtered, sorted view the table scrolls
//! over; it is rebuilt only when the claims, the filter or the sort change.

use super::action::Op;
use super::keys::Pane;
use super::Options;
use crate::claims::liveness::hostname;
use crate::claims::{
    process_create_time_ms, ClaimState, Classifier, Counts, Hazard, HazardKind, LocalIdentity,
    Locality, Root, Status,
};
use crate::events::tail::Line;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;

/// How many event lines the ring keeps (and the follower reads back at start).
pub const EVENTS_RING: usize = 2000;
/// History lines of one key in the detail pane.
pub const DETAIL_HISTORY: usize = 8;

/// The claims of one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimSet {
    pub by_path: HashMap<Arc<Path>, Status>,
    pub counts: Counts,
    /// Claims that are themselves hazards (corrupted, foreign machine).
    pub item_hazards: usize,
}

impl ClaimSet {
    pub fn recount(&mut self) {
        let mut counts = Counts::default();
        let mut hazards = 0;
        for s in self.by_path.values() {
            counts.add(s.state);
            hazards += item_hazard_count(s);
        }
        self.counts = counts;
        self.item_hazards = hazards;
    }

    pub fn get(&self, path: &Path) -> Option<&Status> {
        self.by_path.get(path)
    }

    /// Re-judge the claim at `path` in place, keeping the counts current
    /// without a recount; true when its state or locality moved.
    pub fn rejudge(&mut self, path: &Path, judge: impl FnOnce(&mut Status) -> bool) -> bool {
        let Some(s) = self.by_path.get_mut(path) else {
            return false;
        };
        let (old_state, old_hazards) = (s.state, item_hazard_count(s));
        if !judge(s) {
            return false;
        }
        self.counts.remove(old_state);
        self.counts.add(s.state);
        self.item_hazards = self.item_hazards + item_hazard_count(s) - old_hazards;
        true
    }

    pub fn len(&self) -> usize {
        self.by_path.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }
}

/// How many hazards `claims::sweep::item_hazards` would report for `s`,
/// without building them (the header only needs the count).
fn item_hazard_count(s: &Status) -> usize {
    let (misnamed, unverifiable) = crate::claims::sweep::item_hazard_kinds(s);
    usize::from(misnamed.is_some()) + usize::from(unverifiable.is_some())
}

/// A holder pid as last seen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidWatch {
    /// Start time when alive; None once gone.
    pub started: Option<i64>,
    /// When the start time was last read.
    pub checked: i64,
}

/// What one tick must re-judge.
#[derive(Debug, PartialEq)]
pub enum TickPlan {
    Nothing,
    /// These claims' TTLs crossed the clock.
    Expired(Vec<Arc<Path>>),
    All,
}
/// How often a still-existing pid's start time is re-read, to catch a pid
/// that died and was reused between two ticks.
pub const PID_RECHECK_MS: i64 = 30_000;

/// Does `pid` name a process? kill(pid, 0) sends nothing; EPERM means it
/// exists under another user.
fn pid_exists(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 performs only the existence and permission checks.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// What the view showed when `p` was pressed.
#[derive(Debug, Clone)]
pub struct Frozen {
    pub claims: ClaimSet,
    pub now: i64,
    /// Events with a larger sequence number arrived after the freeze.
    pub events_seq: u64,
}

/// A table column, in display (and `s` cycling) order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    State,
    Key,
    Holder,
    Pid,
    Machine,
    Age,
    Ttl,
    Harness,
    Reason,
}

impl Column {
    pub const ALL: [Column; 9] = [
        Column::State,
        Column::Key,
        Column::Holder,
        Column::Pid,
        Column::Machine,
        Column::Age,
        Column::Ttl,
        Column::Harness,
        Column::Reason,
    ];

    pub fn next(self) -> Column {
        let i = Column::ALL.iter().position(|c| *c == self).unwrap_or(0);
        Column::ALL[(i + 1) % Column::ALL.len()]
    }

    pub fn title(self) -> &'static str {
        match self {
            Column::State => "state",
            Column::Key => "key",
            Column::Holder => "holder",
            Column::Pid => "pid",
            Column::Machine => "machine",
            Column::Age => "age",
            Column::Ttl => "ttl",
            Column::Harness => "harness",
            Column::Reason => "reason",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    pub column: Column,
    pub reverse: bool,
}

impl Default for Sort {
    /// What needs a human first: severity, then key.
    fn default() -> Sort {
        Sort {
            column: Column::State,
            reverse: false,
        }
    }
}

/// Compare two claims by `col`; ties (and every column's fallback) go by
/// severity then key, so the order never depends on hash-map iteration.
pub fn compare(col: Column, a: &Status, b: &Status) -> Ordering {
    fn opt_str<'a>(
        s: &'a Status,
        f: impl Fn(&'a crate::claims::ClaimRecord) -> Option<&'a str>,
    ) -> Option<&'a str> {
        s.record.as_ref().and_then(f)
    }
    // Missing values sort after present ones whichever the column.
    fn some_first<T: Ord>(a: Option<T>, b: Option<T>) -> Ordering {
        match (a, b) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        }
    }
    let primary = match col {
        Column::State => Ordering::Equal,
        Column::Key => a.key.cmp(&b.key),
        Column::Holder => some_first(
            opt_str(a, |r| Some(r.holder.as_str())),
            opt_str(b, |r| Some(r.holder.as_str())),
        ),
        Column::Pid => some_first(
            a.record.as_ref().map(|r| r.pid),
            b.record.as_ref().map(|r| r.pid),
        ),
        Column::Machine => some_first(a.locality.map(loc_rank), b.locality.map(loc_rank)),
        // Youngest first: the age column grows downwards.
        Column::Age => some_first(
            a.record.as_ref().map(|r| std::cmp::Reverse(r.acquired_at)),
            b.record.as_ref().map(|r| std::cmp::Reverse(r.acquired_at)),
        ),
        // Soonest deadline first; PID-bound (no deadline) after.
        Column::Ttl => some_first(
            a.record.as_ref().and_then(|r| r.expires_at),
            b.record.as_ref().and_then(|r| r.expires_at),
        ),
        Column::Harness => some_first(
            opt_str(a, |r| r.harness.as_deref()),
            opt_str(b, |r| r.harness.as_deref()),
        ),
        Column::Reason => some_first(
            opt_str(a, |r| r.reason.as_deref()),
            opt_str(b, |r| r.reason.as_deref()),
        ),
    };
    primary
        .then(a.state.severity().cmp(&b.state.severity()))
        .then_with(|| a.key.cmp(&b.key))
        .then_with(|| a.file.cmp(&b.file))
}

fn loc_rank(l: Locality) -> u8 {
    match l {
        Locality::Local => 0,
        Locality::Unknown => 1,
        Locality::Other => 2,
    }
}

/// One term of the `/` filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    /// `state:stale`; an unknown state name matches nothing.
    State(Option<ClaimState>),
    Holder(String),
    Harness(String),
    /// A bare word: substring of key, holder or reason.
    Any(String),
}

/// The `/` filter: every term must match (case-insensitive for ASCII).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub text: String,
    pub terms: Vec<Term>,
}

impl Filter {
    pub fn parse(text: &str) -> Filter {
        let terms = text
            .split_whitespace()
            .map(|w| {
                let lower = w.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("state:") {
                    let v = if v == "corrupt" { "corrupted" } else { v };
                    Term::State(ClaimState::parse(v))
                } else if let Some(v) = lower.strip_prefix("holder:") {
                    Term::Holder(v.to_string())
                } else if let Some(v) = lower.strip_prefix("harness:") {
                    Term::Harness(v.to_string())
                } else {
                    Term::Any(lower)
                }
            })
            .collect();
        Filter {
            text: text.to_string(),
            terms,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn matches(&self, s: &Status) -> bool {
        self.terms.iter().all(|t| term_matches(t, s))
    }
}

fn term_matches(t: &Term, s: &Status) -> bool {
    let rec = s.record.as_ref();
    match t {
        Term::State(want) => *want == Some(s.state),
        Term::Holder(v) => rec.is_some_and(|r| contains_ci(&r.holder, v)),
        Term::Harness(v) => rec
            .and_then(|r| r.harness.as_deref())
            .is_some_and(|h| contains_ci(h, v)),
        Term::Any(v) => {
            contains_ci(&s.key, v)
                || rec.is_some_and(|r| {
                    contains_ci(&r.holder, v)
                        || r.reason.as_deref().is_some_and(|x| contains_ci(x, v))
                })
        }
    }
}

/// `needle` (already lower-case) occurs in `hay`, ignoring ASCII case,
/// without allocating a lowered copy of every row.
pub fn contains_ci(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    n.is_empty()
        || h.windows(n.len())
            .any(|w| w.iter().zip(n).all(|(a, b)| a.to_ascii_lowercase() == *b))
}

/// One line of the events log, digested at ingest so drawing is cheap.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub seq: u64,
    /// `ts` as written (untrusted).
    pub ts: String,
    /// `type` as written (untrusted).
    pub kind: String,
    pub key: Option<String>,
    pub holder: Option<String>,
    /// The interesting data fields, `name=value`, space-separated.
    pub detail: String,
    /// Why the line is not an event; `detail` then holds its first bytes.
    pub error: Option<String>,
}

/// Data fields worth a column, per event type; the common ones (key,
/// holder) have their own.
fn interesting_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "claim_acquired" => &["pid", "expires_at", "reason"],
        "claim_idempotent_reacquired" => &["pid", "previous_acquired_at"],
        "claim_stale_reclaimed" => &["previous_holder", "previous_pid"],
        "claim_released" => &["duration_held_ms"],
        "claim_renewed" => &["ttl_ms", "previous_expires_at"],
        "claim_force_released" => &["operator", "previous_state", "archived_to"],
        _ => &["pid"],
    }
}

/// Shorter names for the fields with long wire names.
fn field_label(name: &str) -> &str {
    match name {
        "expires_at" => "expires",
        "duration_held_ms" => "held",
        "ttl_ms" => "ttl",
        "previous_expires_at" => "was",
        "previous_acquired_at" => "was_acquired",
        "previous_holder" => "from",
        "previous_pid" => "from_pid",
        "previous_state" => "was",
        other => other,
    }
}

/// Append one data field's value the way an operator reads it: instants as
/// UTC time, durations in two units, strings unquoted.
fn push_value(out: &mut String, name: &str, v: &serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Number(n) if name.ends_with("_at") => match n.as_i64() {
            // TTLs are at most a day: the time of day is enough.
            Some(ms) => match chrono::DateTime::from_timestamp_millis(ms) {
                Some(t) => out.push_str(&t.format("%H:%M:%SZ").to_string()),
                None => out.push_str(&n.to_string()),
            },
            None => out.push_str(&n.to_string()),
        },
        Value::Number(n) if name.ends_with("_ms") => match n.as_i64() {
            Some(ms) => out.push_str(&crate::claims::human_ms(ms)),
            None => out.push_str(&n.to_string()),
        },
        Value::String(s) => out.push_str(s),
        other => out.push_str(&other.to_string()),
    }
}

/// Longest raw prefix of an unparseable line kept for display.
const ERROR_LINE_PREFIX: usize = 160;

impl EventRow {
    pub fn from_line(seq: u64, line: &Line) -> EventRow {
        match line.parse() {
            Ok(ev) => {
                let kind = ev.kind().to_string();
                let mut detail = String::new();
                if let Some(data) = ev.data() {
                    for f in interesting_fields(&kind) {
                        let Some(v) = data.get(*f).filter(|v| !v.is_null()) else {
                            continue;
                        };
                        if !detail.is_empty() {
                            detail.push(' ');
                        }
                        detail.push_str(field_label(f));
                        detail.push('=');
                        push_value(&mut detail, f, v);
                    }
                }
                EventRow {
                    seq,
                    ts: ev.ts().unwrap_or_default().to_string(),
                    key: ev.key().map(str::to_string),
                    holder: ev.holder().map(str::to_string),
                    kind,
                    detail,
                    error: None,
                }
            }
            Err(why) => {
                let cut = line
                    .text
                    .char_indices()
                    .nth(ERROR_LINE_PREFIX)
                    .map_or(line.text.len(), |(i, _)| i);
                EventRow {
                    seq,
                    ts: String::new(),
                    kind: String::new(),
                    key: None,
                    holder: None,
                    detail: line.text[..cut].to_string(),
                    error: Some(why),
                }
            }
        }
    }
}

/// The bounded tail of the events log.
#[derive(Debug, Clone, Default)]
pub struct EventRing {
    pub rows: VecDeque<EventRow>,
    /// Sequence number the next line gets.
    pub next_seq: u64,
}

impl EventRing {
    pub fn push(&mut self, line: &Line) -> &EventRow {
        if self.rows.len() >= EVENTS_RING {
            self.rows.pop_front();
        }
        let row = EventRow::from_line(self.next_seq, line);
        self.next_seq += 1;
        self.rows.push_back(row);
        &self.rows[self.rows.len() - 1]
    }

    pub fn clear(&mut self) {
        self.rows.clear();
    }
}

/// The events pane's own state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventsView {
    /// Lines scrolled up from the newest; 0 = following.
    pub scroll: usize,
    /// Lines that arrived while scrolled up.
    pub new_while_scrolled: usize,
    /// Show only this key's events.
    pub key: Option<String>,
}

/// A one-line text input (no cursor movement: type, Backspace, done).
pub type Input = String;

#[derive(Debug, Clone, PartialEq)]
pub struct AcquireForm {
    pub key: Input,
    pub holder: Input,
    /// Empty = PID-bound to this dashboard process.
    pub ttl: Input,
    pub reason: Input,
    /// Which field has the cursor (0..4).
    pub field: usize,
    pub error: Option<String>,
}

impl AcquireForm {
    pub const LABELS: [&'static str; 4] = ["key", "holder", "ttl", "reason"];

    pub fn field_mut(&mut self) -> &mut Input {
        match self.field {
            0 => &mut self.key,
            1 => &mut self.holder,
            2 => &mut self.ttl,
            _ => &mut self.reason,
        }
    }

    pub fn fields(&self) -> [&str; 4] {
        [&self.key, &self.holder, &self.ttl, &self.reason]
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RenewForm {
    pub key: String,
    pub holder: String,
    pub ttl: Input,
    /// The holder is not the operator: ask before acting on its behalf.
    pub foreign: bool,
    /// The "not yours, really?" question is showing.
    pub confirming: bool,
    pub error: Option<String>,
}

/// The force-release confirmation: everything the operator is about to
/// archive, and the guard taken from the record shown.
#[derive(Debug, Clone, PartialEq)]
pub struct ForceConfirm {
    pub key: String,
    pub holder: Option<String>,
    pub pid: Option<i32>,
    pub state: ClaimState,
    pub why: String,
    pub acquired_at: Option<i64>,
    /// A Live claim needs the key typed in full.
    pub typed: Input,
    pub error: Option<String>,
}

impl ForceConfirm {
    pub fn needs_typed_key(&self) -> bool {
        self.state == ClaimState::Live
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Dialog {
    Acquire(AcquireForm),
    Renew(RenewForm),
    ForceRelease(ForceConfirm),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Hazards,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Ok,
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StatusMsg {
    pub text: String,
    pub level: Level,
}

/// The whole model.
pub struct App {
    pub root: Root,
    pub read_only: bool,
    pub color: bool,
    pub demo: bool,
    /// The clock of the last tick (epoch ms).
    pub now: i64,
    identity: LocalIdentity,
    probe: fn(i32) -> Option<i64>,
    /// Cheap "does this pid exist" check (kill 0); None asks `probe`.
    signal: Option<fn(i32) -> bool>,
    /// Holder pids as of the last full re-judgement of every claim.
    pub(crate) pid_watch: HashMap<i32, PidWatch>,
    /// TTL expiries still ahead as of that re-judgement, soonest first: a
    /// claim whose TTL crosses the clock is re-judged on its own.
    pub(crate) expiries: BinaryHeap<Reverse<(i64, Arc<Path>)>>,
    /// Claims changed since the last full re-judgement.
    pub(crate) rejudge_all: bool,
    pub live: ClaimSet,
    /// Set while paused: what the view keeps showing.
    pub frozen: Option<Frozen>,
    /// Hazards of the last sweep that are not claims (mutex corpses, temp
    /// litter, unreadable entries).
    pub sweep_hazards: Vec<Hazard>,
    /// The table's rows: filtered, sorted paths of the shown claims.
    pub rows: Vec<Arc<Path>>,
    pub selected: usize,
    pub table_offset: usize,
    pub sort: Sort,
    pub filter: Filter,
    /// Some while `/` is being typed.
    pub filter_input: Option<Input>,
    pub events: EventRing,
    pub events_view: EventsView,
    pub events_error: Option<String>,
    pub focus: Pane,
    pub dialog: Option<Dialog>,
    pub overlay: Option<Overlay>,
    pub overlay_scroll: u16,
    pub detail_scroll: u16,
    pub status: Option<StatusMsg>,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    /// `operator:<user>@<host>`: the holder id the dashboard acquires as,
    /// and the only one it releases without force.
    pub operator: String,
    /// Lockfiles read since start (one per `Status::of_file`); a bench can
    /// assert a batch re-read exactly the changed paths.
    pub reads: u64,
    /// Full sweeps since start.
    pub rescans: u64,
    pub quit: bool,
    /// Mutations waiting to be handed to the worker.
    pub pending: Vec<Op>,
}

impl App {
    /// A model for this machine's identity and process table.
    pub fn new(opts: Options, now: i64) -> App {
        let mut app =
            App::with_identity(opts, now, LocalIdentity::current(), process_create_time_ms);
        app.signal = Some(pid_exists);
        app
    }

    /// A model that classifies with an injected identity and pid probe
    /// (tests, benches, replays).
    pub fn with_identity(
        opts: Options,
        now: i64,
        identity: LocalIdentity,
        probe: fn(i32) -> Option<i64>,
    ) -> App {
        let color = !opts.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        App {
            root: opts.root,
            read_only: opts.read_only,
            color,
            demo: opts.demo,
            now,
            operator: operator_id(&identity),
            identity,
            probe,
            signal: None,
            pid_watch: HashMap::new(),
            expiries: BinaryHeap::new(),
            rejudge_all: true,
            live: ClaimSet::default(),
            frozen: None,
            sweep_hazards: Vec::new(),
            rows: Vec::new(),
            selected: 0,
            table_offset: 0,
            sort: Sort::default(),
            filter: Filter::default(),
            filter_input: None,
            events: EventRing::default(),
            events_view: EventsView::default(),
            events_error: None,
            focus: Pane::Table,
            dialog: None,
            overlay: None,
            overlay_scroll: 0,
            detail_scroll: 0,
            status: None,
            size: (80, 24),
            reads: 0,
            rescans: 0,
            quit: false,
            pending: Vec::new(),
        }
    }

    /// A classifier at the model's clock.
    pub fn classifier(&self) -> Classifier {
        Classifier::with(self.now, self.identity.clone(), self.probe)
    }

    /// What a tick at `now` has to re-judge.
    ///
    /// Nothing while no TTL has crossed `now` and every holder pid that was
    /// alive still exists (and, every [`PID_RECHECK_MS`], still has the start
    /// time it had): one `kill(pid, 0)` per distinct live holder instead of
    /// re-judging every claim, so an idle dashboard over 10 000 claims mostly
    /// sleeps. A TTL crossing re-judges that claim alone; a pid change or a
    /// claim read since, everything. A dead pid stays not-alive for every
    /// claim that named it (a reused pid started after those claims); a new
    /// claim arrives through a file change, which forces the full pass.
    pub fn tick_plan(&mut self, now: i64) -> TickPlan {
        if self.rejudge_all {
            return TickPlan::All;
        }
        let (probe, signal) = (self.probe, self.signal);
        let mut unchanged = true;
        for (pid, w) in self.pid_watch.iter_mut() {
            if w.started.is_none() {
                continue;
            }
            let exists = signal.map_or_else(|| probe(*pid).is_some(), |f| f(*pid));
            if !exists {
                w.started = None;
                unchanged = false;
            } else if now - w.checked >= PID_RECHECK_MS {
                let started = probe(*pid);
                w.checked = now;
                unchanged &= started == w.started;
                w.started = started;
            }
        }
        if !unchanged {
            return TickPlan::All;
        }
        let mut due = Vec::new();
        while let Some(Reverse((exp, _))) = self.expiries.peek() {
            if *exp > now {
                break;
            }
            if let Some(Reverse((_, path))) = self.expiries.pop() {
                due.push(path);
            }
        }
        if due.is_empty() {
            TickPlan::Nothing
        } else {
            TickPlan::Expired(due)
        }
    }

    /// A classifier at the model's clock that already knows the watched
    /// pids, so re-judging a few claims probes nothing.
    pub fn classifier_with_known_pids(&self) -> Classifier {
        let mut c = self.classifier();
        for (pid, w) in &self.pid_watch {
            c.know(*pid, w.started);
        }
        c
    }

    /// Remember what a full re-judgement learned: its pid facts and the
    /// expiries still ahead.
    pub fn remember_judgement(&mut self, c: &Classifier, now: i64) {
        self.pid_watch = c
            .known_pids()
            .map(|(pid, started)| {
                (
                    pid,
                    PidWatch {
                        started,
                        checked: now,
                    },
                )
            })
            .collect();
        self.expiries = self
            .live
            .by_path
            .iter()
            .filter_map(|(p, s)| Some((s.record.as_ref()?.expires_at?, p)))
            .filter(|(e, _)| *e > now)
            .map(|(e, p)| Reverse((e, p.clone())))
            .collect();
        self.rejudge_all = false;
    }

    /// Claims changed: the next tick re-judges every one.
    pub fn claims_changed(&mut self) {
        self.rejudge_all = true;
    }

    /// Re-word the selected claim's reason at the shown clock.
    ///
    /// The tick judges every claim's state but words the reason (with its
    /// countdown) only for the claim the detail pane shows; whichever claim
    /// becomes selected is re-worded here first.
    pub fn refresh_selected_why(&mut self) {
        let Some(path) = self.rows.get(self.selected).cloned() else {
            return;
        };
        let now = self.shown_now();
        let mut c = Classifier::with(now, self.identity.clone(), self.probe);
        let set = match self.frozen.as_mut() {
            Some(f) => &mut f.claims,
            None => &mut self.live,
        };
        if let Some(s) = set.by_path.get_mut(&path) {
            if let Some(rec) = &s.record {
                s.why = c.verdict(rec).why;
            }
        }
    }

    /// The claims the view shows: the frozen ones while paused.
    pub fn shown(&self) -> &ClaimSet {
        self.frozen.as_ref().map_or(&self.live, |f| &f.claims)
    }

    /// The clock the view shows.
    pub fn shown_now(&self) -> i64 {
        self.frozen.as_ref().map_or(self.now, |f| f.now)
    }

    pub fn paused(&self) -> bool {
        self.frozen.is_some()
    }

    /// Every hazard: the sweep's plus the claims that are hazards.
    pub fn hazard_count(&self) -> usize {
        self.sweep_hazards.len() + self.shown().item_hazards
    }

    /// The full hazard list, built on demand (the `h` list).
    pub fn hazards(&self) -> Vec<Hazard> {
        let mut out = self.sweep_hazards.clone();
        let mut items: Vec<&Status> = self.shown().by_path.values().collect();
        items.sort_by(|a, b| a.file.cmp(&b.file));
        for s in items {
            crate::claims::sweep::item_hazards(s, &mut out);
        }
        out.sort_by(|a, b| {
            hazard_rank(a.kind)
                .cmp(&hazard_rank(b.kind))
                .then(a.path.cmp(&b.path))
        });
        out
    }

    /// The selected claim, if any row is selected.
    pub fn selected_status(&self) -> Option<&Status> {
        self.rows
            .get(self.selected)
            .and_then(|p| self.shown().get(p))
    }

    /// Rebuild `rows` from the shown claims, keeping the selection on the
    /// same lockfile when it is still there.
    pub fn rebuild_rows(&mut self) {
        let keep = self.rows.get(self.selected).cloned();
        let shown = self.frozen.as_ref().map_or(&self.live, |f| &f.claims);
        let mut rows: Vec<(&Arc<Path>, &Status)> = shown
            .by_path
            .iter()
            .filter(|(_, s)| self.filter.matches(s))
            .collect();
        let col = self.sort.column;
        rows.sort_by(|a, b| compare(col, a.1, b.1));
        if self.sort.reverse {
            rows.reverse();
        }
        self.rows = rows.into_iter().map(|(p, _)| Arc::clone(p)).collect();
        if let Some(p) = keep {
            if let Some(i) = self.rows.iter().position(|r| *r == p) {
                self.selected = i;
            }
        }
        self.clamp_selection();
    }

    /// Move just these claims to their sorted places, when only they changed
    /// (a TTL crossing): a full rebuild re-sorts every row, which over
    /// 10 000 claims costs milliseconds a tick.
    pub fn reposition_rows(&mut self, moved: &[Arc<Path>]) {
        if self.frozen.is_some() {
            return;
        }
        let keep = self.rows.get(self.selected).cloned();
        self.rows.retain(|p| !moved.contains(p));
        let (col, reverse) = (self.sort.column, self.sort.reverse);
        for p in moved {
            let Some(s) = self.live.get(p).filter(|s| self.filter.matches(s)) else {
                continue;
            };
            let live = &self.live;
            let pos = self.rows.partition_point(|r| {
                live.get(r).is_some_and(|other| {
                    let ord = compare(col, other, s);
                    if reverse {
                        ord == Ordering::Greater
                    } else {
                        ord == Ordering::Less
                    }
                })
            });
            self.rows.insert(pos, Arc::clone(p));
        }
        if let Some(p) = keep {
            if let Some(i) = self.rows.iter().position(|r| *r == p) {
                self.selected = i;
            }
        }
        self.clamp_selection();
    }

    pub fn clamp_selection(&mut self) {
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    /// Events the pane shows (frozen while paused, this key's only when
    /// filtered), oldest first.
    pub fn shown_events(&self) -> impl DoubleEndedIterator<Item = &EventRow> + '_ {
        let upto = self.frozen.as_ref().map_or(u64::MAX, |f| f.events_seq);
        let key = self.events_view.key.as_deref();
        self.events
            .rows
            .iter()
            .filter(move |r| r.seq < upto)
            .filter(move |r| key.is_none_or(|k| r.key.as_deref() == Some(k)))
    }

    /// The last [`DETAIL_HISTORY`] events of `key`, oldest first.
    pub fn history_of(&self, key: &str) -> Vec<&EventRow> {
        let mut v: Vec<&EventRow> = self
            .events
            .rows
            .iter()
            .rev()
            .filter(|r| r.key.as_deref() == Some(key))
            .take(DETAIL_HISTORY)
            .collect();
        v.reverse();
        v
    }

    pub fn say(&mut self, level: Level, text: impl Into<String>) {
        self.status = Some(StatusMsg {
            text: text.into(),
            level,
        });
    }
}

fn hazard_rank(k: HazardKind) -> u8 {
    match k {
        HazardKind::CorruptedClaim => 0,
        HazardKind::StaleMutex => 1,
        HazardKind::Unreadable => 2,
        HazardKind::TempLitter => 3,
        HazardKind::ForeignMachine => 4,
        HazardKind::KeyMismatch => 5,
        HazardKind::ArchiveDirBroken => 6,
    }
}

/// `operator:<user>@<host>`.
fn operator_id(me: &LocalIdentity) -> String {
    let user = ["USER", "LOGNAME"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|u| !u.trim().is_empty())
        .or_else(login_name)
        .unwrap_or_else(|| "unknown".into());
    let host = if me.hostname.is_empty() {
        hostname()
    } else {
        me.hostname.clone()
    };
    format!("operator:{user}@{host}")
}

/// The password-database name of this process's user, for environments
/// (services, containers) that set neither USER nor LOGNAME.
fn login_name() -> Option<String> {
    // SAFETY: getpwuid_r writes only into `pwd` and `buf`, both valid for the
    // sizes given; `result` is checked before `pwd.pw_name` is read, and the
    // name is copied out before `buf` is dropped.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::getuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(pwd.pw_name)
            .to_string_lossy()
            .into_owned();
        (!name.is_empty()).then_some(name)
    }
}
