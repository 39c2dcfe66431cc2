//! The model: every fact the screen shows, and nothing about how it is drawn.
//!
//! Claims are keyed by lockfile path so a change touches exactly the
//! entries it names; each is shared with the collector's mirror. `rows` is the filtered, sorted view the table scrolls
//! over; it is rebuilt only when the claims, the filter or the sort change.

use super::action::{Op, RootProblem};
use super::browse::Browse;
use super::keys::Pane;
use super::roots::RootSet;
use super::timeline::Timeline;
use super::Options;
use crate::claims::{
    ClaimState, Counts, Hazard, HazardKind, ItemRules, LocalIdentity, Locality, OwnHazards, Root,
    Status,
};
use crate::events::tail::Line;
use crate::store::mirror::judge::{copy_words_at, words_at};
use crate::store::mirror::Tally;
use std::cmp::Ordering;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How many event lines the ring keeps (and the follower reads back at start).
pub const EVENTS_RING: usize = 2000;
/// History lines of one key in the detail pane.
pub const DETAIL_HISTORY: usize = 8;

/// The claims of one moment.
///
/// Each status is shared with the collector's mirror (`Arc`): the model
/// holds every row without a second copy of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimSet {
    pub by_path: HashMap<Arc<Path>, Arc<Status>>,
    pub counts: Counts,
    /// `counts` split by claims dir (one per root), kept with them: the
    /// header of a dashboard over several roots shows them every second,
    /// and walking 30 000 claims for them cost milliseconds a frame.
    pub per_dir: Vec<(PathBuf, Counts)>,
    /// The claims come from a store whose keys are not lockfiles (etcd):
    /// a claim's own hazards are judged by the store's rules.
    pub store_keys: bool,
}

impl ClaimSet {
    /// How the census judges `s`'s own hazards here.
    pub fn rules_of(&self, s: &Status) -> ItemRules {
        match (self.store_keys, is_copy(s)) {
            (false, _) => ItemRules::Lockfile,
            // A published copy's hazards come with its host's hazard list.
            (true, true) => ItemRules::Copy,
            (true, false) => ItemRules::StoreKey,
        }
    }

    pub fn recount(&mut self) {
        let mut counts = Counts::default();
        self.per_dir.clear();
        let claims = std::mem::take(&mut self.by_path);
        for s in claims.values() {
            counts.add(s.state);
            self.dir_counts(&s.file).add(s.state);
        }
        self.by_path = claims;
        // In a fixed order, so two sets of the same claims compare equal.
        self.per_dir.sort_by(|a, b| a.0.cmp(&b.0));
        self.counts = counts;
    }

    /// The counts of the claims dir `file` is in.
    fn dir_counts(&mut self, file: &Path) -> &mut Counts {
        let dir = file.parent().unwrap_or(Path::new(""));
        let i = match self
            .per_dir
            .iter()
            .position(|(d, _)| d.as_os_str() == dir.as_os_str())
        {
            Some(i) => i,
            None => {
                self.per_dir.push((dir.to_path_buf(), Counts::default()));
                self.per_dir.len() - 1
            }
        };
        &mut self.per_dir[i].1
    }

    /// The counts of the claims in `dir` (a root's claims dir).
    pub fn counts_in(&self, dir: &Path) -> Counts {
        self.per_dir
            .iter()
            .find(|(d, _)| d.as_os_str() == dir.as_os_str())
            .map_or_else(Counts::default, |(_, c)| *c)
    }

    pub fn get(&self, path: &Path) -> Option<&Status> {
        self.by_path.get(path).map(|s| &**s)
    }

    /// Store (or drop, when free) the claim at `path`, keeping the counts
    /// current without a recount (a recount of 30 000 claims per changed
    /// file was most of a change's cost); true when it changed.
    pub fn put(&mut self, path: &Arc<Path>, s: Arc<Status>) -> bool {
        if s.state == ClaimState::Free {
            let Some(old) = self.by_path.remove(path) else {
                return false;
            };
            self.uncount(&old);
            return true;
        }
        let (state, file) = (s.state, s.file.clone());
        match self.by_path.get_mut(path) {
            Some(old) if **old == *s => return false,
            Some(old) => {
                let was = std::mem::replace(old, s);
                self.uncount(&was);
            }
            None => {
                self.by_path.insert(Arc::clone(path), s);
            }
        }
        self.counts.add(state);
        self.dir_counts(&file).add(state);
        true
    }

    fn uncount(&mut self, s: &Status) {
        self.counts.remove(s.state);
        self.dir_counts(&s.file).remove(s.state);
    }

    pub fn len(&self) -> usize {
        self.by_path.len()
    }

    /// [`ClaimSet::put`], and the row's path (the set's own) when
    /// something changed.
    pub fn put_counted(&mut self, path: &Arc<Path>, s: Arc<Status>) -> Option<Arc<Path>> {
        if !self.put(path, s) {
            return None;
        }
        Some(
            self.by_path
                .get_key_value(&**path)
                .map_or_else(|| Arc::clone(path), |(k, _)| Arc::clone(k)),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }
}

/// What the view showed when `p` was pressed.
#[derive(Debug, Clone)]
pub struct Frozen {
    pub claims: ClaimSet,
    /// Each root's counts and hazards as they were.
    pub tallies: Vec<Tally>,
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
    /// Which root the claim lives in: shown, sorted and cycled only when the
    /// dashboard watches several (so a one-root table is as it always was).
    Root,
    /// Time left on the claim's etcd lease: shown over a store only, and
    /// not in [`Column::ALL`], so the file dashboard's columns and `s`
    /// cycle stay as they were.
    Lease,
    /// The host a claim is held on, and whether the store keeps it or a
    /// host publishes it: shown over a store only while hosts publish into
    /// it, and kept out of [`Column::ALL`] like the lease.
    Host,
    Source,
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

    /// The `s` cycle over several roots: the root column comes right after
    /// the state, where the table shows it.
    pub fn next_of_several(self) -> Column {
        match self {
            Column::State => Column::Root,
            Column::Root => Column::Key,
            c => c.next(),
        }
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
            Column::Root => "root",
            Column::Lease => "lease",
            Column::Host => "host",
            Column::Source => "source",
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
        // Soonest deadline first; PID-bound (no deadline) after. A lease
        // is granted for the claim's TTL, so it runs out in the same order.
        Column::Ttl | Column::Lease => some_first(
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
        // Grouped by root, in the order of the roots' paths.
        Column::Root => a.file.parent().cmp(&b.file.parent()),
        // The record's host is the publishing host's for a copy, too.
        Column::Host => some_first(
            opt_str(a, |r| Some(r.host.as_str())),
            opt_str(b, |r| Some(r.host.as_str())),
        ),
        // The store's own claims first, then the copies, grouped by host.
        Column::Source => is_copy(a).cmp(&is_copy(b)),
    };
    primary
        .then(a.state.severity().cmp(&b.state.severity()))
        .then_with(|| a.key.cmp(&b.key))
        .then_with(|| a.file.cmp(&b.file))
}

/// Is `s` a host's published copy (its row path is a `published://` one)?
fn is_copy(s: &Status) -> bool {
    s.file.starts_with(super::fleet_view::PUBLISHED_SCHEME)
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
    State(ClaimState),
    Holder(String),
    Harness(String),
    Key(String),
    Reason(String),
    /// `root:TEXT`: part of the path of the root the claim lives in (a
    /// root's label is the end of its path, so labels match too).
    Root(String),
    /// `host:TEXT`: part of the name of the host the claim was taken on
    /// (the record's `host`; for a published copy, its writer's host).
    Host(String),
    /// A bare word: substring of key, holder or reason.
    Any(String),
}

/// The fields a `field:value` term can name.
pub const FILTER_FIELDS: [&str; 7] = [
    "state", "holder", "harness", "key", "reason", "root", "host",
];

impl Term {
    /// Terms of one field are alternatives; bare words each stand alone.
    fn group(&self, i: usize) -> usize {
        match self {
            Term::State(_) => usize::MAX,
            Term::Holder(_) => usize::MAX - 1,
            Term::Harness(_) => usize::MAX - 2,
            Term::Key(_) => usize::MAX - 3,
            Term::Reason(_) => usize::MAX - 4,
            Term::Root(_) => usize::MAX - 5,
            Term::Host(_) => usize::MAX - 6,
            Term::Any(_) => i,
        }
    }

    /// The text this term looks for in `col`, if it looks in that column.
    pub fn needle(&self, col: Column) -> Option<&str> {
        match (self, col) {
            (Term::Any(v), Column::Key | Column::Holder | Column::Reason)
            | (Term::Key(v), Column::Key)
            | (Term::Holder(v), Column::Holder)
            | (Term::Harness(v), Column::Harness)
            | (Term::Reason(v), Column::Reason)
            | (Term::Root(v), Column::Root)
            | (Term::Host(v), Column::Host) => Some(v),
            _ => None,
        }
    }
}

/// The `/` filter: terms of one field are alternatives (`state:stale
/// state:corrupted`), different fields and bare words must all match.
/// Case-insensitive for ASCII.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub text: String,
    pub terms: Vec<Term>,
    /// A term that can never match, in words (an unknown state).
    pub problem: Option<String>,
    /// `x:` prefixes that are no field, matched as plain text: named when
    /// nothing matches, since a mistyped field is the likely reason.
    pub not_fields: Vec<String>,
}

impl Filter {
    pub fn parse(text: &str) -> Filter {
        let mut f = Filter {
            text: text.to_string(),
            ..Filter::default()
        };
        for w in text.split_whitespace() {
            let lower = w.to_ascii_lowercase();
            let Some((field, v)) = lower.split_once(':') else {
                f.terms.push(Term::Any(lower));
                continue;
            };
            let v = v.to_string();
            match field {
                "state" => {
                    let name = if v == "corrupt" { "corrupted" } else { &v };
                    match ClaimState::parse(name).filter(|s| *s != ClaimState::Free) {
                        Some(st) => f.terms.push(Term::State(st)),
                        None => {
                            f.problem = Some(format!(
                                "unknown state {v:?}: live, suspect, stale, corrupted or unreadable"
                            ))
                        }
                    }
                }
                "holder" => f.terms.push(Term::Holder(v)),
                "harness" => f.terms.push(Term::Harness(v)),
                "key" => f.terms.push(Term::Key(v)),
                "reason" => f.terms.push(Term::Reason(v)),
                "root" => f.terms.push(Term::Root(v)),
                "host" => f.terms.push(Term::Host(v)),
                other => {
                    // Keys themselves hold colons (node:gpu): plain text.
                    if !other.is_empty() && other.bytes().all(|b| b.is_ascii_alphabetic()) {
                        f.not_fields.push(format!("{other}:"));
                    }
                    f.terms.push(Term::Any(lower.clone()));
                }
            }
        }
        f
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.problem.is_none()
    }

    pub fn matches(&self, s: &Status) -> bool {
        self.matches_by(|t| term_matches(t, s))
    }

    /// The filter's grouping (one field's terms OR, fields AND) over any
    /// subject: `term_matches` says whether one term holds for it.
    pub fn matches_by(&self, term_matches: impl Fn(&Term) -> bool) -> bool {
        if self.problem.is_some() {
            return false;
        }
        // Each group once (at its first term), with no allocation: this runs
        // for every claim on every rebuild.
        let t = &self.terms;
        t.iter().enumerate().all(|(i, first)| {
            let g = first.group(i);
            t[..i].iter().enumerate().any(|(j, e)| e.group(j) == g)
                || t.iter()
                    .enumerate()
                    .filter(|(j, e)| e.group(*j) == g)
                    .any(|(_, e)| term_matches(e))
        })
    }

    /// Why nothing matches, when the filter itself may be the reason.
    pub fn why_nothing(&self) -> Option<String> {
        if let Some(p) = &self.problem {
            return Some(p.clone());
        }
        (!self.not_fields.is_empty()).then(|| {
            format!(
                "{} is not a field ({}), so it was matched as text",
                self.not_fields.join(" "),
                FILTER_FIELDS.join(", ")
            )
        })
    }
}

fn term_matches(t: &Term, s: &Status) -> bool {
    let rec = s.record.as_ref();
    match t {
        Term::State(want) => *want == s.state,
        Term::Holder(v) => rec.is_some_and(|r| contains_ci(&r.holder, v)),
        Term::Harness(v) => rec
            .and_then(|r| r.harness.as_deref())
            .is_some_and(|h| contains_ci(h, v)),
        Term::Key(v) => contains_ci(&s.key, v),
        Term::Reason(v) => rec
            .and_then(|r| r.reason.as_deref())
            .is_some_and(|x| contains_ci(x, v)),
        Term::Root(v) => {
            super::roots::root_dir_of(&s.file).is_some_and(|r| contains_ci(&r.to_string_lossy(), v))
        }
        Term::Host(v) => rec.is_some_and(|r| contains_ci(&r.host, v)),
        Term::Any(v) => {
            contains_ci(&s.key, v)
                || rec.is_some_and(|r| {
                    contains_ci(&r.holder, v)
                        || r.reason.as_deref().is_some_and(|x| contains_ci(x, v))
                })
        }
    }
}

/// Where `needle` (already lower-case) occurs in `hay`, ignoring ASCII
/// case: the byte range of the first match.
pub fn find_ci(hay: &str, needle: &str) -> Option<std::ops::Range<usize>> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() || n.len() > h.len() {
        return None;
    }
    (0..=h.len() - n.len())
        .filter(|i| hay.is_char_boundary(*i) && hay.is_char_boundary(i + n.len()))
        .find(|i| {
            h[*i..i + n.len()]
                .iter()
                .zip(n)
                .all(|(a, b)| a.to_ascii_lowercase() == *b)
        })
        .map(|i| i..i + n.len())
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
    /// The tenure it belongs to (`acquired_at` of the claim).
    pub acquired_at: Option<i64>,
    /// The TTL asked for: `ttl_ms` of a renewal, the span of an acquire.
    pub ttl_ms: Option<i64>,
    /// Why the line is not an event; `detail` then holds its first bytes.
    pub error: Option<String>,
    /// Which root's log it came from (0 with one root).
    pub root: usize,
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
            Some(ms) => out.push_str(&crate::time::clock(ms, false, "%H:%M:%S")),
            None => out.push_str(&n.to_string()),
        },
        Value::Number(n) if name.ends_with("_ms") => match n.as_i64() {
            Some(ms) => out.push_str(&crate::time::human_ms(ms)),
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
                // A line a publishing host mirrored says which host (the
                // envelope itself never has a `host`).
                if let Some(host) = ev.value().get("host").and_then(|h| h.as_str()) {
                    detail.push_str("host=");
                    detail.push_str(host);
                }
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
                let num = |f: &str| ev.data().and_then(|d| d.get(f)).and_then(|v| v.as_i64());
                let acquired_at = num("acquired_at");
                let ttl_ms = match kind.as_str() {
                    "claim_renewed" => num("ttl_ms"),
                    "claim_acquired" => num("expires_at").zip(acquired_at).map(|(e, a)| e - a),
                    _ => None,
                };
                EventRow {
                    seq,
                    ts: ev.ts().unwrap_or_default().to_string(),
                    key: ev.key().map(str::to_string),
                    holder: ev.holder().map(str::to_string),
                    kind,
                    detail,
                    acquired_at,
                    ttl_ms,
                    error: None,
                    root: 0,
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
                    acquired_at: None,
                    ttl_ms: None,
                    error: Some(why),
                    root: 0,
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

    /// A line of root `root`'s log, one of several: placed among the other
    /// roots' lines by its time, so the merged pane reads in time order
    /// whichever follower spoke first. Lines of one log keep their order.
    pub fn push_in(&mut self, root: usize, line: &Line) -> &EventRow {
        if self.rows.len() >= EVENTS_RING {
            self.rows.pop_front();
        }
        let mut row = EventRow::from_line(self.next_seq, line);
        row.root = root;
        self.next_seq += 1;
        // The envelope's `ts` is fixed-width UTC, so text order is time
        // order. A line without one (unparseable) stays where it arrived,
        // and another root's such line is no landmark: it is passed over.
        let mut at = self.rows.len();
        if !row.ts.is_empty() {
            while at > 0 {
                let before = &self.rows[at - 1];
                let later = before.ts.is_empty() || before.ts > row.ts;
                if before.root == root || !later {
                    break;
                }
                at -= 1;
            }
        }
        self.rows.insert(at, row);
        &self.rows[at]
    }

    /// Forget root `root`'s lines (its log was truncated or replaced).
    pub fn clear_root(&mut self, root: usize) {
        self.rows.retain(|r| r.root != root);
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
    /// ... of this root's log, with several roots (the same key in another
    /// root is another claim).
    pub key_root: Option<usize>,
}

impl EventsView {
    /// Does the pane, filtered or not, show `row`?
    pub fn shows(&self, row: &EventRow) -> bool {
        self.key.as_deref().is_none_or(|k| {
            row.key.as_deref() == Some(k) && self.key_root.is_none_or(|i| row.root == i)
        })
    }
}

pub use super::input::TextInput as Input;

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
    /// With several roots: which root to acquire in, typed as its label
    /// (a fifth field, offered as the selected row's root). Boxed: most
    /// dashboards have one root and never show it.
    pub root: Option<Box<Input>>,
}

impl AcquireForm {
    pub const LABELS: [&'static str; 4] = ["key", "holder", "ttl", "reason"];

    /// How many fields Tab cycles through.
    pub fn field_count(&self) -> usize {
        4 + usize::from(self.root.is_some())
    }

    pub fn field_mut(&mut self) -> &mut Input {
        match (self.field, &mut self.root) {
            (0, _) => &mut self.key,
            (1, _) => &mut self.holder,
            (2, _) => &mut self.ttl,
            (4, Some(root)) => root,
            _ => &mut self.reason,
        }
    }

    pub fn fields(&self) -> [&Input; 4] {
        [&self.key, &self.holder, &self.ttl, &self.reason]
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RenewForm {
    pub key: String,
    /// The root the claim lives in (an index into the dashboard's roots).
    pub root: usize,
    pub holder: String,
    pub pid: i32,
    pub state: ClaimState,
    pub ttl: Input,
    /// Where the offered TTL comes from, in words.
    pub offered: String,
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
    /// The root the claim lives in (an index into the dashboard's roots).
    pub root: usize,
    pub holder: Option<String>,
    pub pid: Option<i32>,
    pub state: ClaimState,
    pub why: String,
    pub acquired_at: Option<i64>,
    /// A claim that may be held (live, or unreadable) needs the key typed
    /// in full.
    pub typed: Input,
    pub error: Option<String>,
    /// Set for a host's published copy: the force-release is asked of that
    /// host's publisher, which carries it out in its own root.
    pub host: Option<super::fleet_view::Origin>,
}

impl ForceConfirm {
    pub fn needs_typed_key(&self) -> bool {
        self.state.may_be_held()
    }
}

/// Quitting while holding claims taken here: they are bound to this
/// process, so they turn Suspect or Stale the moment it exits.
#[derive(Debug, Clone, PartialEq)]
pub struct QuitConfirm {
    /// The operator's own claims, by key.
    pub keys: Vec<String>,
    /// The root of each of `keys`, in the same order.
    pub roots: Vec<usize>,
}

/// `doctor --fix` from the dashboard: what it will remove, shown first.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanConfirm {
    pub hazards: Vec<Hazard>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Dialog {
    Acquire(AcquireForm),
    Renew(RenewForm),
    ForceRelease(ForceConfirm),
    Quit(QuitConfirm),
    Clean(CleanConfirm),
    /// `D`: forget an offline publishing host.
    ForgetHost(super::fleet_keys::ForgetConfirm),
}

/// What can sit over the panes. A new view is one more variant here, one
/// arm in `view::draw` and a row in the keymap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Hazards,
    /// The selected claim in full (Enter).
    Claim,
    /// Every key's tenures over time (`t`), over the whole screen.
    Timeline,
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
    /// When it was said (the model's clock): it goes away by itself.
    pub at: i64,
}

impl StatusMsg {
    /// How long a message stays: errors longer, since they may need reading.
    pub fn lifetime_ms(&self) -> i64 {
        match self.level {
            Level::Error => 20_000,
            Level::Info | Level::Ok => 8_000,
        }
    }
}

/// The claims part of the model: what the collectors' mirrors reported.
pub struct Claims {
    identity: LocalIdentity,
    pub live: ClaimSet,
    /// Set while paused: what the view keeps showing.
    pub frozen: Option<Frozen>,
    /// Each root's (or the store's) counts and hazards, by root, as its
    /// mirror last tallied them: the one count `list` and `doctor` make.
    pub tallies: Vec<Tally>,
    /// Holder pids and their start times, as the mirror last knew them:
    /// what the selected claim's reason is worded by.
    pub pids: HashMap<i32, Option<i64>>,
    /// Why the root is not a normal one.
    pub problem: Option<RootProblem>,
    /// With several roots: each root's problem, by root (`problem` stays
    /// the first root's).
    pub problems: Vec<Option<RootProblem>>,
    /// By root: how many claims its first screen shows while its whole
    /// listing is still being read (a big root's head).
    pub partial: Vec<Option<usize>>,
}

impl Claims {
    fn new(identity: LocalIdentity) -> Claims {
        Claims {
            identity,
            live: ClaimSet::default(),
            frozen: None,
            tallies: Vec::new(),
            pids: HashMap::new(),
            problem: None,
            problems: Vec::new(),
            partial: Vec::new(),
        }
    }

    /// While some root shows only its head: how many claims so far.
    pub fn listing_head(&self) -> Option<usize> {
        let heads: Vec<usize> = self.partial.iter().flatten().copied().collect();
        (!heads.is_empty()).then(|| heads.iter().sum())
    }

    pub fn identity(&self) -> &LocalIdentity {
        &self.identity
    }

    /// Take in pid facts; true when one moved.
    pub fn learn(&mut self, facts: &[(i32, Option<i64>)]) -> bool {
        let mut moved = false;
        for (pid, started) in facts {
            moved |= self.pids.insert(*pid, *started) != Some(*started);
        }
        moved
    }

    /// Root `i`'s tally is `t` now; true when it moved.
    pub fn set_tally(&mut self, i: usize, t: Tally) -> bool {
        if self.tallies.len() <= i {
            self.tallies.resize(i + 1, Tally::default());
        }
        let was = &self.tallies[i];
        // The mirror keeps an unchanged list as the same Arc: a compare of
        // the lists themselves only when it made a new one.
        let moved = was.counts != t.counts
            || (!Arc::ptr_eq(&was.hazards, &t.hazards) && was.hazards != t.hazards);
        self.tallies[i] = t;
        moved
    }

    /// The claims the view shows: the frozen ones while paused.
    pub fn shown(&self) -> &ClaimSet {
        self.frozen.as_ref().map_or(&self.live, |f| &f.claims)
    }

    /// The tallies the view shows: the frozen ones while paused.
    pub fn shown_tallies(&self) -> &[Tally] {
        self.frozen.as_ref().map_or(&self.tallies, |f| &f.tallies)
    }

    /// Every hazard the mirrors count.
    pub fn hazard_count(&self) -> usize {
        self.shown_tallies().iter().map(|t| t.hazards.len()).sum()
    }

    /// Whether the events log is unappendable.
    pub fn events_log_broken(&self) -> bool {
        self.tallies
            .iter()
            .flat_map(|t| t.hazards.iter())
            .any(|h| h.kind == HazardKind::EventsLogBroken)
    }

    /// The full hazard list, built on demand by the census `list` and
    /// `doctor` count through (the `h` list, `x`'s offer), most urgent
    /// kind first.
    pub fn hazards(&self) -> Vec<Hazard> {
        let mut out: Vec<Hazard> = self
            .shown_tallies()
            .iter()
            .flat_map(|t| t.hazards.iter().cloned())
            .collect();
        out.sort_by(|a, b| {
            hazard_rank(a.kind)
                .cmp(&hazard_rank(b.kind))
                .then(a.path.cmp(&b.path))
        });
        out
    }
}

/// The widest value of each free-text column among the rows, in
/// characters: the table sizes those columns from it, so they hold still
/// while scrolling and a frame never measures every row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Widest {
    pub key: u16,
    pub holder: u16,
    pub harness: u16,
    pub reason: u16,
}

/// The key as its row shows it: marked `⚠` when the claim is a hazard its
/// state and its why do not already say (its record names another key),
/// so a claim that reads healthy never hides one.
pub fn key_cell(s: &Status, rules: ItemRules) -> String {
    let key = crate::sanitize::sanitize(&s.key);
    if key_marked(s, rules) {
        format!("{key} ⚠")
    } else {
        key.into_owned()
    }
}

fn key_marked(s: &Status, rules: ItemRules) -> bool {
    OwnHazards::of(s, rules).unsaid().next().is_some()
}

impl Widest {
    fn chars(s: &str) -> u16 {
        s.chars().count().min(u16::MAX as usize) as u16
    }

    /// Widen to fit `s`, judged by `rules` (whose mark its key cell carries).
    pub fn fit(&mut self, s: &Status, rules: ItemRules) {
        let w = |v: &mut u16, text: &str| *v = (*v).max(Widest::chars(text));
        let mark = if key_marked(s, rules) { 2 } else { 0 };
        self.key = self.key.max(Widest::chars(&s.key).saturating_add(mark));
        match &s.record {
            Some(r) => {
                w(&mut self.holder, &r.holder);
                w(&mut self.harness, r.harness.as_deref().unwrap_or(""));
                w(&mut self.reason, r.reason.as_deref().unwrap_or(""));
            }
            None => {
                w(&mut self.holder, "(no record)");
                w(&mut self.reason, s.error.as_deref().unwrap_or(""));
            }
        }
    }

    /// Would taking `s` away leave a column wider than its widest row?
    /// (Then the widths must be measured again over every row.)
    pub fn held_by(&self, s: &Status, rules: ItemRules) -> bool {
        let mut one = Widest::default();
        one.fit(s, rules);
        [
            (one.key, self.key),
            (one.holder, self.holder),
            (one.harness, self.harness),
            (one.reason, self.reason),
        ]
        .iter()
        .any(|(mine, widest)| *mine > 0 && mine >= widest)
    }

    /// The width kept for `c`, for the free-text columns.
    pub fn of(&self, c: Column) -> Option<u16> {
        match c {
            Column::Key => Some(self.key),
            Column::Holder => Some(self.holder),
            Column::Harness => Some(self.harness),
            Column::Reason => Some(self.reason),
            _ => None,
        }
    }
}

/// The table part: which claims are rows, in what order, and where the
/// selection and the window are.
#[derive(Debug, Clone, Default)]
pub struct TableView {
    /// The filtered, sorted paths of the shown claims.
    pub rows: Vec<Arc<Path>>,
    pub selected: usize,
    pub offset: usize,
    pub sort: Sort,
    pub filter: Filter,
    /// Some while `/` is being typed.
    pub filter_input: Option<Input>,
    /// Filters applied before, oldest first (↑/↓ in the input recall them).
    pub filter_history: Vec<String>,
    /// Where ↑/↓ is in the history while typing.
    pub history_pos: Option<usize>,
    /// The detail pane shows the selected row; its scroll resets with it.
    pub detail_scroll: u16,
    /// A claim just acquired here: selected as soon as it arrives.
    pub select_on_arrival: Option<std::path::PathBuf>,
    /// The widest text of each free-text column among the rows.
    pub widest: Widest,
}

/// The events part: the tail of the log and how the pane looks at it.
#[derive(Debug, Clone, Default)]
pub struct Events {
    pub ring: EventRing,
    pub view: EventsView,
    pub error: Option<String>,
    /// Browsing the whole log (instead of following its tail).
    pub browse: Browse,
}

/// What sits on top of the panes: at most one overlay, at most one dialog
/// (a dialog is above an overlay).
#[derive(Debug, Clone, Default)]
pub struct Overlays {
    pub dialog: Option<Dialog>,
    pub open: Option<Overlay>,
    /// Lines scrolled in the open overlay.
    pub scroll: u16,
}

/// The whole model.
pub struct App {
    /// The first root named: the one-root views (the timeline, the whole
    /// log) read its events log.
    pub root: Root,
    /// Every root watched, the first included.
    pub roots: RootSet,
    /// The root whose events log the whole-log views (the timeline, the
    /// events search) read: the first, until `t` opens on another root's row.
    pub log_root: usize,
    pub read_only: bool,
    pub color: bool,
    pub demo: bool,
    /// Times in the local zone (with its offset) instead of UTC.
    pub local_time: bool,
    /// The clock of the last tick (epoch ms).
    pub now: i64,
    /// `operator:<user>@<host>`: the holder id the dashboard acquires as,
    /// and the only one it releases without force.
    pub operator: String,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    pub focus: Pane,
    /// The focused pane fills the body (`z`); Tab still moves the focus,
    /// and the zoom follows it.
    pub zoomed: bool,
    pub claims: Claims,
    pub table: TableView,
    pub events: Events,
    pub overlays: Overlays,
    pub timeline: Timeline,
    pub status: Option<StatusMsg>,
    pub quit: bool,
    /// Releases still to finish before quitting (the quit dialog's "release").
    pub quit_after: Option<usize>,
    /// Ctrl-Z asked: the loop hands the terminal back and stops the process.
    pub suspend: bool,
    /// Text for the terminal's clipboard (OSC 52), written by the loop.
    pub clipboard: Option<String>,
    /// The help was opened once: the status line's legend hint has done
    /// its job.
    pub seen_help: bool,
    /// Mutations waiting to be handed to the worker.
    pub pending: Vec<Op>,
    /// Set when the claims come from a store with a connection (etcd):
    /// its header, its link and the lease behind each claim.
    pub store: Option<super::store_view::StoreView>,
}

impl App {
    /// A model for `identity`, acting as `operator`. Both are read by the
    /// caller (the collector's side): the model reads nothing.
    pub fn new(opts: Options, now: i64, identity: LocalIdentity, operator: String) -> App {
        let table = TableView {
            sort: opts.opening.sort,
            filter: Filter::parse(&opts.opening.filter),
            filter_history: [opts.opening.filter.clone()]
                .into_iter()
                .filter(|f| !f.trim().is_empty())
                .collect(),
            ..TableView::default()
        };
        App {
            roots: RootSet::new(opts.root.clone(), &opts.more_roots),
            log_root: 0,
            root: opts.root,
            read_only: opts.read_only,
            color: !opts.no_color,
            demo: opts.demo,
            local_time: opts.local_time,
            now,
            operator,
            size: (80, 24),
            focus: Pane::Table,
            zoomed: false,
            claims: Claims::new(identity),
            table,
            events: Events::default(),
            overlays: Overlays::default(),
            timeline: Timeline::new(now),
            status: None,
            quit: false,
            quit_after: None,
            suspend: false,
            clipboard: None,
            seen_help: false,
            pending: Vec::new(),
            store: None,
        }
    }

    /// How the panes are arranged now.
    pub fn look(&self) -> crate::dashboard::view::layout::Look {
        crate::dashboard::view::layout::Look {
            focus: self.focus,
            zoomed: self.zoomed,
        }
    }

    /// Re-word the selected claim's reason at the shown clock.
    ///
    /// The tick judges every claim's state but words the reason (with its
    /// countdown) only for the claim the detail pane shows; whichever claim
    /// becomes selected is re-worded here first.
    pub fn refresh_selected_why(&mut self) {
        let Some(path) = self.table.rows.get(self.table.selected).cloned() else {
            return;
        };
        let now = self.shown_now();
        let copy = self
            .store
            .as_ref()
            .is_some_and(|v| v.fleet.origin(&path).is_some());
        // A store's own claims are judged by the store (their lease is
        // their liveness): there is no pid here to re-word them by.
        if self.store.is_some() && !copy {
            return;
        }
        let claims = &mut self.claims;
        let set = match claims.frozen.as_mut() {
            Some(f) => &mut f.claims,
            None => &mut claims.live,
        };
        let Some(s) = set.by_path.get_mut(&path) else {
            return;
        };
        let why = match &s.record {
            None => return,
            Some(_) if copy => match copy_words_at(s, now) {
                Some(w) => w,
                None => return,
            },
            Some(rec) => words_at(rec, now, &claims.identity, &claims.pids),
        };
        if s.why != why {
            // The mirror's copy stays as it was: only the shown one moves.
            Arc::make_mut(s).why = why;
        }
    }

    /// The claims the view shows: the frozen ones while paused.
    pub fn shown(&self) -> &ClaimSet {
        self.claims.shown()
    }

    /// The header's hazard count: this root's (or store's) own, plus what
    /// publishing hosts found in theirs — the count `list` prints.
    pub fn hazard_count(&self) -> usize {
        self.claims.hazard_count() + self.fleet_hazards().len()
    }

    /// The hazards publishing hosts reported (none without a store).
    pub fn fleet_hazards(&self) -> &[crate::store::fleet::FleetHazard] {
        self.store.as_ref().map_or(&[], |v| &v.fleet.hazards)
    }

    /// The clock the view shows.
    pub fn shown_now(&self) -> i64 {
        self.claims.frozen.as_ref().map_or(self.now, |f| f.now)
    }

    pub fn paused(&self) -> bool {
        self.claims.frozen.is_some()
    }

    /// Which keys the timeline shows: the table's filter, applied to keys.
    /// Key and bare words match the key's name (bare words also the claim's
    /// holder and reason, as in the table), holder any holder the log has
    /// for the key, and state, harness and reason the key's claim as the
    /// table shows it now.
    pub fn timeline_keeps(&self) -> impl Fn(&str) -> bool + '_ {
        let f = &self.table.filter;
        let claims: HashMap<&str, &Status> = if f.is_empty() {
            HashMap::new()
        } else {
            self.shown()
                .by_path
                .values()
                .map(|s| (s.key.as_str(), &**s))
                .collect()
        };
        let tenures = self.timeline.shown();
        move |key: &str| {
            f.is_empty()
                || f.matches_by(|t| match t {
                    Term::Key(v) => contains_ci(key, v),
                    Term::Any(v) => {
                        contains_ci(key, v) || claims.get(key).is_some_and(|s| term_matches(t, s))
                    }
                    Term::Holder(v) => tenures.is_some_and(|ix| {
                        ix.tenures_of(key)
                            .iter()
                            .any(|x| contains_ci(ix.holder_name(x.holder), v))
                    }),
                    _ => claims.get(key).is_some_and(|s| term_matches(t, s)),
                })
        }
    }

    /// The selected claim, if any row is selected.
    pub fn selected_status(&self) -> Option<&Status> {
        self.table
            .rows
            .get(self.table.selected)
            .and_then(|p| self.shown().get(p))
    }

    /// Rebuild the rows from the shown claims, keeping the selection on the
    /// same lockfile when it is still there.
    pub fn rebuild_rows(&mut self) {
        let t = &mut self.table;
        let keep = t.rows.get(t.selected).cloned();
        let shown = self.claims.shown();
        let mut rows: Vec<(&Arc<Path>, &Status)> = shown
            .by_path
            .iter()
            .map(|(p, s)| (p, &**s))
            .filter(|(_, s)| t.filter.matches(s))
            .collect();
        let col = t.sort.column;
        rows.sort_by(|a, b| compare(col, a.1, b.1));
        if t.sort.reverse {
            rows.reverse();
        }
        let mut widest = Widest::default();
        for (_, s) in &rows {
            widest.fit(s, shown.rules_of(s));
        }
        t.widest = widest;
        t.rows = rows.into_iter().map(|(p, _)| Arc::clone(p)).collect();
        if let Some(p) = keep {
            if let Some(i) = t.rows.iter().position(|r| *r == p) {
                t.selected = i;
            }
        }
        self.clamp_selection();
    }

    /// Move just these claims to their sorted places, when only they changed
    /// (a TTL crossing): a full rebuild re-sorts every row, which over
    /// 10 000 claims costs milliseconds a tick.
    pub fn reposition_rows(&mut self, moved: &[Arc<Path>]) {
        if self.paused() {
            return;
        }
        let t = &mut self.table;
        let keep = t.rows.get(t.selected).cloned();
        t.rows.retain(|p| !moved.contains(p));
        let (col, reverse) = (t.sort.column, t.sort.reverse);
        let live = &self.claims.live;
        for p in moved {
            let Some(s) = live.get(p).filter(|s| t.filter.matches(s)) else {
                continue;
            };
            let pos = t.rows.partition_point(|r| {
                live.get(r).is_some_and(|other| {
                    let ord = compare(col, other, s);
                    if reverse {
                        ord == Ordering::Greater
                    } else {
                        ord == Ordering::Less
                    }
                })
            });
            t.rows.insert(pos, Arc::clone(p));
            t.widest.fit(s, live.rules_of(s));
        }
        if let Some(p) = keep {
            if let Some(i) = t.rows.iter().position(|r| *r == p) {
                t.selected = i;
            }
        }
        self.clamp_selection();
    }

    pub fn clamp_selection(&mut self) {
        let t = &mut self.table;
        t.selected = t.selected.min(t.rows.len().saturating_sub(1));
    }

    /// Events the pane shows (frozen while paused, this key's only when
    /// filtered), oldest first.
    pub fn shown_events(&self) -> impl DoubleEndedIterator<Item = &EventRow> + '_ {
        let upto = self
            .claims
            .frozen
            .as_ref()
            .map_or(u64::MAX, |f| f.events_seq);
        let view = &self.events.view;
        self.events
            .ring
            .rows
            .iter()
            .filter(move |r| r.seq < upto)
            .filter(move |r| view.shows(r))
    }

    /// Events the pane would show that arrived since `p` froze it: what a
    /// paused operator is missing.
    pub fn events_since_pause(&self) -> usize {
        let Some(from) = self.claims.frozen.as_ref().map(|f| f.events_seq) else {
            return 0;
        };
        let view = &self.events.view;
        self.events
            .ring
            .rows
            .iter()
            .rev()
            .take_while(|r| r.seq >= from)
            .filter(|r| view.shows(r))
            .count()
    }

    /// The last [`DETAIL_HISTORY`] events of `key`, oldest first.
    pub fn history_of(&self, key: &str) -> Vec<&EventRow> {
        self.history_where(key, None)
    }

    /// The history of the claim `s`: its key's events in its own root's log
    /// (the same key in another root is another claim).
    pub fn history_of_claim(&self, s: &Status) -> Vec<&EventRow> {
        let root = self.roots.is_several().then(|| self.roots.of(s));
        self.history_where(&s.key, root)
    }

    fn history_where(&self, key: &str, root: Option<usize>) -> Vec<&EventRow> {
        let mut v: Vec<&EventRow> = self
            .events
            .ring
            .rows
            .iter()
            .rev()
            .filter(|r| r.key.as_deref() == Some(key))
            .filter(|r| root.is_none_or(|i| r.root == i))
            .take(DETAIL_HISTORY)
            .collect();
        v.reverse();
        v
    }

    /// The TTL last asked for this tenure of `key` (a renewal's, else the
    /// acquire's), as the events tail tells it.
    pub fn asked_ttl(&self, key: &str, acquired_at: i64) -> Option<i64> {
        self.events
            .ring
            .rows
            .iter()
            .rev()
            .filter(|r| r.key.as_deref() == Some(key) && r.acquired_at == Some(acquired_at))
            .find_map(|r| r.ttl_ms)
    }

    /// The live claims held as this dashboard's operator, by key.
    pub fn own_claims(&self) -> Vec<String> {
        self.own_claims_by_root()
            .into_iter()
            .map(|(_, k)| k)
            .collect()
    }

    /// The live claims held as this dashboard's operator, with the root
    /// each lives in, by key then root.
    pub fn own_claims_by_root(&self) -> Vec<(usize, String)> {
        let mut keys: Vec<(usize, String)> = self
            .claims
            .live
            .by_path
            .values()
            .filter(|s| s.record.as_ref().is_some_and(|r| r.holder == self.operator))
            .map(|s| (self.roots.of(s), s.key.clone()))
            .collect();
        keys.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        keys
    }

    /// Show a store's claims (etcd) rather than a root's: its header, its
    /// lease column, and hazards as the store judges them.
    pub fn over_store(&mut self, view: super::store_view::StoreView) {
        self.store = Some(view);
        // A store's keys are no lockfiles: their own hazards are the
        // store's kinds (the census's rules for a store).
        self.claims.live.store_keys = true;
    }

    pub fn say(&mut self, level: Level, text: impl Into<String>) {
        self.status = Some(StatusMsg {
            text: text.into(),
            level,
            at: self.now,
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
        HazardKind::EventsLogBroken => 7,
        HazardKind::RootMissing => 8,
    }
}
