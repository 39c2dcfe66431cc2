//! The events pane's model: the bounded tail of the log, each line
//! digested once at ingest, and how the pane looks at it.

use crate::events::backward::Shown;
use crate::events::kind::{fields_of, short_of, typed, Typed};
use crate::events::tail::Line;
use crate::events::EventKind;
use crate::sanitize::sanitize as safe;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

/// How many event lines the ring keeps (and the follower reads back at start).
pub const EVENTS_RING: usize = 2000;

/// History lines of one key in the detail pane.
pub const DETAIL_HISTORY: usize = 8;

/// One line of the events log, digested at ingest so drawing is cheap.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub seq: u64,
    /// `ts` as written (untrusted).
    pub ts: String,
    /// `ts` as an instant (epoch ms), when it reads as one.
    pub at: Option<i64>,
    /// `type`: one the protocol writes, or as written (untrusted).
    pub kind: Typed,
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
/// times in the chosen zone, durations in two units, strings unquoted.
fn push_value(out: &mut String, name: &str, v: &serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Number(n) if name.ends_with("_at") => match n.as_i64() {
            // TTLs are at most a day: the time of day is enough.
            Some(ms) => out.push_str(&crate::time::clock_words(ms, "%H:%M:%S")),
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
                let kind = typed(ev.kind());
                let mut detail = String::new();
                // A line a publishing host mirrored says which host (the
                // envelope itself never has a `host`).
                if let Some(host) = ev.value().get("host").and_then(|h| h.as_str()) {
                    detail.push_str("host=");
                    detail.push_str(host);
                }
                if let Some(data) = ev.data() {
                    // Beside the key and holder, which have their own columns.
                    for f in fields_of(&kind) {
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
                let ttl_ms = match kind {
                    Ok(EventKind::Renewed) => num("ttl_ms"),
                    Ok(EventKind::Acquired) => {
                        num("expires_at").zip(acquired_at).map(|(e, a)| e - a)
                    }
                    _ => None,
                };
                let ts = ev.ts().unwrap_or_default();
                EventRow {
                    seq,
                    at: crate::time::instant_of_ts(ts),
                    ts: ts.to_string(),
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
                    at: None,
                    kind: Err(String::new()),
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

/// How a pane words an event's instant: in the chosen zone (a local
/// time with its offset), with the date when the lines span days, or as a
/// span from now (`T`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventClock {
    pub now: i64,
    pub local: bool,
    pub relative: bool,
    pub dated: bool,
}

/// What a piece of a shown line is, for its style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Time,
    Kind,
    Plain,
    Detail,
    Error,
}

/// Width of the kind's column.
const KIND_WIDTH: usize = 15;

impl EventRow {
    /// Its time as the pane shows it.
    pub fn time_text(&self, c: &EventClock) -> Cow<'_, str> {
        match self.at {
            Some(at) if c.relative => Cow::Owned(format!("{:>9}", crate::columns::ago(at, c.now))),
            // Today's UTC times bare, as a log reads; a date or another
            // zone is marked, so no line is read in the wrong zone.
            Some(at) if c.dated => Cow::Owned(crate::time::clock(at, c.local, "%m-%d %H:%M:%S")),
            Some(at) if c.local => Cow::Owned(crate::time::clock(at, true, "%H:%M:%S")),
            Some(at) => Cow::Owned(crate::time::bare_clock(at, false, "%H:%M:%S")),
            None if self.ts.is_empty() => Cow::Borrowed("--:--:--"),
            None => safe(&self.ts),
        }
    }

    /// The line as the pane shows it, piece by piece, every piece escaped:
    /// what the view styles and what a search matches and highlights, so
    /// that a match is always on screen.
    pub fn shown(&self, c: &EventClock) -> Vec<(Cow<'_, str>, Part)> {
        if let Some(err) = &self.error {
            return vec![
                (Cow::Borrowed("!! unparseable line: "), Part::Error),
                (safe(err), Part::Error),
                (Cow::Borrowed(" │ "), Part::Plain),
                (safe(&self.detail), Part::Detail),
            ];
        }
        let kind = safe(short_of(&self.kind));
        let pad = KIND_WIDTH.saturating_sub(kind.chars().count());
        vec![
            (self.time_text(c), Part::Time),
            (Cow::Borrowed(" "), Part::Plain),
            (kind, Part::Kind),
            (Cow::Owned(" ".repeat(pad + 1)), Part::Plain),
            (
                self.key.as_deref().map_or(Cow::Borrowed("-"), safe),
                Part::Plain,
            ),
            (Cow::Borrowed("  "), Part::Plain),
            (
                self.holder.as_deref().map(safe).unwrap_or_default(),
                Part::Plain,
            ),
            (Cow::Borrowed("  "), Part::Plain),
            (safe(&self.detail), Part::Detail),
        ]
    }

    /// [`EventRow::shown`] as one string.
    pub fn shown_text(&self, c: &EventClock) -> String {
        self.shown(c).into_iter().map(|(t, _)| t).collect()
    }
}

/// The text the events pane shows for a raw line of the log, in the chosen
/// zone: what `/` searches. A pane whose lines span days dates them, so
/// both ways a line may read are searched, a line apart (a match never
/// spans them): `20:34:56 acquired` and `12-01 20:34:56Z acquired`.
pub fn shown_by(local: bool) -> Shown {
    Arc::new(move |raw: &str| {
        let row = EventRow::from_line(0, &Line::of_bytes(raw.as_bytes(), 0));
        let bare = EventClock {
            local,
            ..EventClock::default()
        };
        let mut text = row.shown_text(&bare);
        if row.at.is_some() {
            // The bare time is the line's first `cut` bytes.
            let cut = text.find(' ').unwrap_or(0);
            let dated = row.time_text(&EventClock {
                dated: true,
                ..bare
            });
            text.reserve(dated.len() + text.len() - cut + 1);
            text.push('\n');
            text.push_str(&dated);
            text.extend_from_within(cut..text.len() - dated.len() - 1);
        }
        text
    })
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
    /// `:events` terms: types, holders, keys in and out.
    pub filter: super::event_filter::EventFilter,
}

impl EventsView {
    /// Does the pane, filtered or not, show `row`?
    pub fn shows(&self, row: &EventRow) -> bool {
        self.filter
            .matches(&row.kind, row.holder.as_deref(), row.key.as_deref())
            && self.key.as_deref().is_none_or(|k| {
                row.key.as_deref() == Some(k) && self.key_root.is_none_or(|i| row.root == i)
            })
    }

    /// Is the tail narrowed (the `f` key or `:events`)? Then the motions
    /// stay in it rather than browse the whole log.
    pub fn narrowed(&self) -> bool {
        self.key.is_some() || !self.filter.is_empty()
    }
}
