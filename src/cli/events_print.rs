//! How `events` prints: which events pass the filter (`--key`, `--type`,
//! `--since`, `--until`), and each line as it stands (`--json`) or as
//! words, whatever its length, counting the lines that do not parse.

use super::args::EventsArgs;
use super::output::{diag, Out};
use crate::events::claim_event::parse_ts;
use crate::events::history::{History, HistoryError};
use crate::events::merge::{keep_last, with_member, with_root_member};
use crate::events::range::{Entry, Kept, Range, RangeEnd};
use crate::events::stream::{Probe, INLINE_LINE_BYTES};
use crate::events::tail::Line;
use crate::events::Event;
use crate::sanitize::sanitize;
use serde_json::{Map, Value};
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Fields every claim event carries; the text line shows key, holder and pid
/// and leaves the rest of these to `--json`.
const COMMON: &[&str] = &["key", "holder", "pid", "host", "acquired_at", "expires_at"];

/// Most bytes of text `-n` keeps in memory before keeping places instead.
const HELD_TEXT: u64 = 8 * 1024 * 1024;

pub(super) struct Filter {
    key: Option<String>,
    kind: Option<String>,
    /// `--since` and `--until`, epoch ms: `since <= ts < until`.
    pub(super) since: Option<i64>,
    pub(super) until: Option<i64>,
}

impl Filter {
    pub(super) fn of(a: &EventsArgs) -> Filter {
        let (since, until) = a.window(crate::time::now_ms());
        Filter {
            key: a.key.clone(),
            kind: a.kind.clone(),
            since,
            until,
        }
    }

    fn active(&self) -> bool {
        self.key.is_some() || self.kind.is_some() || self.since.is_some() || self.until.is_some()
    }

    /// Does an event with this `type`, `data.key` and `ts` pass? (Any may be
    /// absent or not a string: such an event passes only where no filter
    /// asks about that field. An event whose `ts` does not read as a time
    /// cannot be placed in a window, so a window leaves it out.)
    pub(super) fn accepts(&self, kind: Option<&str>, key: Option<&str>, ts: Option<&str>) -> bool {
        self.kind.as_deref().is_none_or(|k| kind == Some(k))
            && self.key.as_deref().is_none_or(|k| key == Some(k))
            && self.in_window(ts)
    }

    fn in_window(&self, ts: Option<&str>) -> bool {
        if self.since.is_none() && self.until.is_none() {
            return true;
        }
        let Some(at) = ts.and_then(parse_ts) else {
            return false;
        };
        self.since.is_none_or(|s| at >= s) && self.until.is_none_or(|u| at < u)
    }
}

/// Turns log lines into printed events, counting the ones that do not parse.
///
/// Every line that is one JSON object is an event, whatever its fields: a
/// line is printed as it stands (`--json`) or as words, or counted as
/// unparseable. Lines up to [`INLINE_LINE_BYTES`] are handled in memory;
/// longer ones are checked and copied from the file in pieces, so no line is
/// ever too long and memory stays flat in the size of the log.
pub(super) struct Printer<'a> {
    pub(super) out: &'a mut Out,
    pub(super) filter: Filter,
    pub(super) skipped: usize,
    pub(super) buf: Vec<u8>,
    /// With several roots, the root of the lines being printed: added to
    /// each one as `"root"` (JSON) or `root=` (text).
    pub(super) root: Option<String>,
    /// With several origins, the origin of the lines being printed: added
    /// to each one as `"origin"` (JSON) after `"root"`.
    pub(super) origin: Option<String>,
    /// Set by SIGINT or SIGTERM under `--follow`: printing ends before the
    /// next line, so what is out is whole lines.
    stop: Arc<AtomicBool>,
}

impl Printer<'_> {
    pub(super) fn new(out: &mut Out, filter: Filter, stop: Arc<AtomicBool>) -> Printer<'_> {
        Printer {
            out,
            filter,
            skipped: 0,
            buf: Vec::new(),
            root: None,
            origin: None,
            stop,
        }
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// An error that ends a scan between two lines once a signal asked us
    /// to stop; the caller reads it as the end it is ([`Self::stopped`]).
    pub(super) fn go_on(&self) -> io::Result<()> {
        match self.stopped() {
            true => Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "stopped by a signal",
            )),
            false => Ok(()),
        }
    }

    /// Print the entries of `history` the filter passes: the last `limit`
    /// of them, or all. Where the read ended, for a follower to resume.
    pub(super) fn print_history(
        &mut self,
        history: &mut dyn History,
        limit: Option<usize>,
    ) -> Result<RangeEnd, HistoryError> {
        let range = Range {
            since: self.filter.since,
            until: self.filter.until,
            last: None,
        };
        let mut kept: VecDeque<Kept> = VecDeque::new();
        let end = match limit {
            // Without a filter the last N lines are the last N events (less
            // any that do not parse): the read may begin with them.
            Some(n) if !self.filter.active() => {
                let last = Range {
                    last: Some(n),
                    ..range
                };
                // Their text kept while it is little (a file's read visits
                // just those lines: printing them needs no second read),
                // their places past that, so memory stays bounded.
                let mut room = HELD_TEXT;
                history.read_range(&last, &mut |e| {
                    let k = match e.len() <= room {
                        true => {
                            room -= e.len();
                            e.keep_text()
                        }
                        false => e.keep(),
                    };
                    keep_last(&mut kept, n, k);
                    Ok(())
                })?
            }
            // With one, the last N matches may lie anywhere: one pass keeps
            // their places (not their text), a second prints them.
            Some(n) => history.read_range(&range, &mut |e| {
                self.go_on()?;
                if self.matches(&e) {
                    keep_last(&mut kept, n, e.keep());
                }
                Ok(())
            })?,
            None if self.filter.since.is_some() => history.read_range(&range, &mut |e| {
                self.go_on()?;
                match self.matches(&e) {
                    true => self.print_entry(e),
                    false => Ok(()),
                }
            })?,
            None => history.read_range(&range, &mut |e| self.print_entry(e))?,
        };
        let mut buf = Vec::new();
        for k in kept {
            self.print_entry(k.entry(&mut buf)?)?;
        }
        Ok(end)
    }

    /// Is `e` an event the filter accepts? Counts it as skipped when it
    /// does not parse.
    fn matches(&mut self, e: &Entry<'_>) -> bool {
        match e.probe() {
            Ok(p) => self
                .filter
                .accepts(p.kind.as_deref(), p.key.as_deref(), p.ts.as_deref()),
            Err(_) => {
                self.skipped += 1;
                false
            }
        }
    }

    /// One entry: held whole when it is short enough, else streamed.
    pub(super) fn print_entry(&mut self, e: Entry<'_>) -> io::Result<()> {
        match e.bytes() {
            Some(line) => self.print_line(line),
            None if e.len() <= INLINE_LINE_BYTES => {
                let mut line = std::mem::take(&mut self.buf);
                let res = e.read_into(&mut line).and_then(|()| self.print_line(&line));
                self.buf = line;
                res
            }
            None => self.print_long(&e),
        }
    }

    /// One line held in memory.
    pub(super) fn print_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.go_on()?;
        let line = line.trim_ascii();
        if self.out.json_mode() {
            // The shallow check: one JSON object (its filter fields probed
            // when a filter asks), no tree built. The line goes out byte for
            // byte as it stands (re-serializing would round big numbers).
            // None: not one JSON object.
            let wanted = if self.filter.active() {
                Probe::of_slice(line).ok().map(|p| {
                    self.filter
                        .accepts(p.kind.as_deref(), p.key.as_deref(), p.ts.as_deref())
                })
            } else {
                Probe::is_object(line).then_some(true)
            };
            match wanted {
                Some(true) => {
                    let rooted = match self.root.as_deref() {
                        Some(root) => with_root_member(line, root),
                        None => None,
                    };
                    let rooted = rooted.as_deref().unwrap_or(line);
                    match self.origin.as_deref() {
                        Some(origin) => match with_member(rooted, "origin", origin) {
                            Some(tagged) => self.out.raw_line(&tagged),
                            None => self.out.raw_line(rooted),
                        },
                        None => self.out.raw_line(rooted),
                    }
                }
                Some(false) => Ok(()),
                None => {
                    self.skipped += 1;
                    Ok(())
                }
            }
        } else {
            match serde_json::from_slice::<Value>(line) {
                Ok(Value::Object(ev)) => {
                    let kind = ev.get("type").and_then(Value::as_str);
                    let key = data_str(&ev, "key");
                    let ts = ev.get("ts").and_then(Value::as_str);
                    if self.filter.accepts(kind, key, ts) {
                        let mut text = event_text(&ev);
                        if let Some(root) = &self.root {
                            text.push_str(&format!(" root={}", sanitize(root)));
                        }
                        self.out.line(&text)?;
                    }
                    Ok(())
                }
                _ => {
                    self.skipped += 1;
                    Ok(())
                }
            }
        }
    }

    /// One line too long to hold: checked, then copied, from its file.
    fn print_long(&mut self, e: &Entry<'_>) -> io::Result<()> {
        self.go_on()?;
        let p = match e.probe() {
            Ok(p) => p,
            Err(_) => {
                self.skipped += 1;
                return Ok(());
            }
        };
        if !self
            .filter
            .accepts(p.kind.as_deref(), p.key.as_deref(), p.ts.as_deref())
        {
            return Ok(());
        }
        if self.out.json_mode() {
            e.copy_to(self.out.writer())?;
            return self.out.raw_line(b"");
        }
        let mut s = format!(
            "{} {}",
            sanitize(p.ts.as_deref().unwrap_or("-")),
            sanitize(p.kind.as_deref().unwrap_or("-"))
        );
        for (name, v) in [("key", &p.key), ("holder", &p.holder)] {
            if let Some(v) = v {
                s.push_str(&format!(" {name}={}", sanitize(v)));
            }
        }
        s.push_str(&format!(
            " ({} bytes: too long to show as text; --json prints it whole)",
            e.len()
        ));
        self.out.line(&s)
    }

    /// A line from the follower: whole, or cut at the follower's cap, in
    /// which case it is read again whole from its log.
    pub(super) fn print_followed(
        &mut self,
        line: &Line,
        log: Option<&mut Box<dyn History>>,
    ) -> io::Result<()> {
        if !line.truncated {
            return self.print_line(line.text.as_bytes());
        }
        let found = match log {
            Some(h) => h.read_at(line.offset, &mut |e| self.print_entry(e)),
            None => Ok(false),
        };
        match found {
            Ok(true) => Ok(()),
            Err(HistoryError::Read(e)) => Err(e),
            // The log changed under us: better counted than lost in silence.
            _ => {
                self.skipped += 1;
                Ok(())
            }
        }
    }

    pub(super) fn report_skipped(&self) {
        if self.skipped > 0 {
            diag(&format!(
                "skipped {} unparseable line(s) in the events log",
                self.skipped
            ));
        }
    }
}

fn data_str<'a>(ev: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    ev.get("data")?.as_object()?.get(name)?.as_str()
}

/// `ts type key=… holder=… pid=…` and whatever else the event adds.
fn event_text(ev: &Map<String, Value>) -> String {
    let field = |name: &str| ev.get(name).and_then(Value::as_str).unwrap_or("-");
    let mut s = format!("{} {}", sanitize(field("ts")), sanitize(field("type")));
    let Some(data) = ev.get("data").and_then(Value::as_object) else {
        return s;
    };
    let shown = ["key", "holder", "pid"]
        .iter()
        .filter_map(|f| data.get(*f).map(|v| (*f, v)));
    let extra = data
        .iter()
        .filter(|(k, _)| !COMMON.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v));
    for (k, v) in shown.chain(extra) {
        let v = match v {
            Value::String(t) => t.clone(),
            // A lease id in the form etcdctl prints and takes, as every
            // text output shows it.
            Value::Number(n) if k == "lease" => match n.as_i64() {
                Some(id) => crate::store::lease_hex(id),
                None => n.to_string(),
            },
            other => other.to_string(),
        };
        s.push_str(&format!(" {}={}", sanitize(k), sanitize(&v)));
    }
    s
}

impl Printer<'_> {
    pub(super) fn wants(&self, ev: &Event) -> bool {
        let v = ev.value();
        let kind = v.get("type").and_then(Value::as_str);
        let key = v
            .get("data")
            .and_then(|d| d.get("key"))
            .and_then(Value::as_str);
        self.filter.accepts(kind, key, ev.ts())
    }

    pub(super) fn print_event(&mut self, ev: &Event) -> io::Result<()> {
        let line = serde_json::to_vec(ev.value()).map_err(io::Error::other)?;
        self.print_line(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(text: &str) -> Map<String, Value> {
        match serde_json::from_str(text) {
            Ok(Value::Object(m)) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn event_text_shows_extras_and_escapes_hostile_fields() {
        let ev = object(
            r#"{"ts":"2026-01-01T00:00:00Z","type":"claim_force_released","source":"fno-loop","data":{"key":"k","holder":"h\u001b[2J","pid":null,"host":"x","acquired_at":1,"expires_at":null,"operator":"me@box","previous_state":"corrupted"}}"#,
        );
        let t = event_text(&ev);
        assert_eq!(
            t,
            "2026-01-01T00:00:00Z claim_force_released key=k holder=h\\e[2J pid=null \
             operator=me@box previous_state=corrupted"
        );
    }

    #[test]
    fn an_expired_claims_lease_is_shown_in_hex_as_etcdctl_prints_it() {
        let ev = object(
            r#"{"ts":"t","type":"claim_expired","data":{"key":"k","holder":"h","pid":7,"lease":8327897000573213961}}"#,
        );
        assert_eq!(
            event_text(&ev),
            "t claim_expired key=k holder=h pid=7 lease=7392a232ed351d09"
        );
    }

    #[test]
    fn an_event_without_a_type_is_shown_with_a_dash() {
        assert_eq!(
            event_text(&object(r#"{"ts":"t","data":{"key":"k"}}"#)),
            "t - key=k"
        );
    }

    #[test]
    fn filter_matches_type_and_data_key() {
        let f = |key: Option<&str>, kind: Option<&str>| Filter {
            key: key.map(Into::into),
            kind: kind.map(Into::into),
            since: None,
            until: None,
        };
        let (kind, key) = (Some("claim_acquired"), Some("a"));
        assert!(f(Some("a"), Some("claim_acquired")).accepts(kind, key, None));
        assert!(!f(Some("b"), None).accepts(kind, key, None));
        assert!(!f(None, Some("claim_released")).accepts(kind, key, None));
        assert!(
            f(None, None).accepts(None, None, None),
            "no filter takes typeless events"
        );
        assert!(!f(None, Some("x")).accepts(None, key, None));
    }

    #[test]
    fn a_window_keeps_since_and_leaves_out_until_and_undated_events() {
        let f = Filter {
            key: None,
            kind: None,
            since: parse_ts("2026-12-01T03:00:00Z"),
            until: parse_ts("2026-12-01T04:00:00Z"),
        };
        assert!(f.active());
        assert!(f.accepts(None, None, Some("2026-12-01T03:00:00Z")));
        assert!(f.accepts(None, None, Some("2026-12-01T03:59:59Z")));
        assert!(!f.accepts(None, None, Some("2026-12-01T04:00:00Z")));
        assert!(!f.accepts(None, None, Some("2026-12-01T02:59:59Z")));
        assert!(!f.accepts(None, None, Some("yesterday")));
        assert!(!f.accepts(None, None, None));
    }
}
