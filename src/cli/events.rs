//! events: print the audit log, optionally following it like `tail -F`.

use super::args::EventsArgs;
use super::output::{diag, CmdResult, Out, EXIT_OK};
use crate::claims::Root;
use crate::events::tail::{read_last_lines, Event, Follower, Line, Reset};
use crate::sanitize::sanitize;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often `--follow` looks for new lines: quick enough to feel live,
/// slow enough to cost nothing while the log is idle.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

/// Fields every claim event carries; the text line shows key, holder and pid
/// and leaves the rest of these to `--json`.
const COMMON: &[&str] = &["key", "holder", "pid", "host", "acquired_at", "expires_at"];

struct Filter {
    key: Option<String>,
    kind: Option<String>,
}

impl Filter {
    fn active(&self) -> bool {
        self.key.is_some() || self.kind.is_some()
    }

    fn accepts(&self, ev: &Event) -> bool {
        self.kind.as_deref().is_none_or(|k| ev.kind() == k)
            && self.key.as_deref().is_none_or(|k| ev.key() == Some(k))
    }
}

/// Turns log lines into printed events, counting the ones that do not parse.
struct Printer<'a> {
    out: &'a mut Out,
    filter: Filter,
    skipped: usize,
}

impl Printer<'_> {
    /// The events among `lines` that pass the filter, newest `limit` of them.
    fn select(&mut self, lines: Vec<Line>, limit: Option<usize>) -> Vec<(Line, Event)> {
        let mut kept = VecDeque::new();
        for line in lines {
            match line.parse() {
                Ok(ev) if self.filter.accepts(&ev) => {
                    kept.push_back((line, ev));
                    if limit.is_some_and(|n| kept.len() > n) {
                        kept.pop_front();
                    }
                }
                Ok(_) => {}
                Err(_) => self.skipped += 1,
            }
        }
        kept.into()
    }

    fn print(&mut self, line: &Line, ev: &Event) -> std::io::Result<()> {
        if self.out.json_mode() {
            // The line as it stands in the log: re-serializing could reorder
            // nothing (preserve_order) but would round big numbers.
            self.out.raw_line(line.text.trim().as_bytes())
        } else {
            self.out.line(&event_text(ev))
        }
    }

    fn report_skipped(&self) {
        if self.skipped > 0 {
            diag(&format!(
                "skipped {} unparseable line(s) in the events log",
                self.skipped
            ));
        }
    }
}

/// `ts type key=… holder=… pid=…` and whatever else the event adds.
fn event_text(ev: &Event) -> String {
    let mut s = format!(
        "{} {}",
        sanitize(ev.ts().unwrap_or("-")),
        sanitize(ev.kind())
    );
    let Some(data) = ev.data() else {
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
            other => other.to_string(),
        };
        s.push_str(&format!(" {}={}", sanitize(k), sanitize(&v)));
    }
    s
}

pub fn events(root: &Root, a: EventsArgs, out: &mut Out) -> CmdResult {
    let path = root.events_file();
    let filter = Filter {
        key: a.key,
        kind: a.kind,
    };
    // With a filter the last N *matching* events may lie anywhere, so the
    // whole (bounded) tail is read and the limit applied after filtering.
    let scan = match a.lines {
        Some(n) if !filter.active() => n,
        _ => usize::MAX,
    };
    let (follower, initial) = if a.follow {
        match Follower::open(&path, scan) {
            Ok((f, lines)) => (Some(f), lines),
            Err(e) => return out.error(&e.to_string()),
        }
    } else {
        match read_last_lines(&path, scan) {
            Ok(chunk) => (None, chunk.lines),
            Err(e) => return out.error(&e.to_string()),
        }
    };
    let mut p = Printer {
        out,
        filter,
        skipped: 0,
    };
    let result = print_then_follow(&mut p, initial, a.lines, follower);
    p.report_skipped();
    result
}

fn print_then_follow(
    p: &mut Printer<'_>,
    initial: Vec<Line>,
    limit: Option<usize>,
    follower: Option<Follower>,
) -> CmdResult {
    for (line, ev) in p.select(initial, limit) {
        p.print(&line, &ev)?;
    }
    p.out.flush()?;
    let Some(mut follower) = follower else {
        return Ok(EXIT_OK);
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Without the flag Ctrl-C still ends us, just less tidily.
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    let mut last_error: Option<String> = None;
    while !stop.load(Ordering::Relaxed) {
        if stdout_closed() {
            break;
        }
        let poll = match follower.poll() {
            Ok(poll) => {
                last_error = None;
                poll
            }
            Err(e) => {
                // The follower stays usable; say so once, not every tick.
                let msg = e.to_string();
                if last_error.as_deref() != Some(msg.as_str()) {
                    diag(&msg);
                    last_error = Some(msg);
                }
                std::thread::sleep(FOLLOW_POLL);
                continue;
            }
        };
        match poll.reset {
            Some(Reset::Truncated) => {
                diag("the events log was truncated; reading it from the start")
            }
            Some(Reset::Replaced) => diag("the events log was replaced; reading the new file"),
            None => {}
        }
        for (line, ev) in p.select(poll.lines, None) {
            p.print(&line, &ev)?;
        }
        p.out.flush()?;
        if !poll.more {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::tail::parse_event;

    #[test]
    fn event_text_shows_extras_and_escapes_hostile_fields() {
        let ev = parse_event(
            r#"{"ts":"2026-01-01T00:00:00Z","type":"claim_force_released","source":"fno-loop","data":{"key":"k","holder":"h\u001b[2J","pid":null,"host":"x","acquired_at":1,"expires_at":null,"operator":"me@box","previous_state":"corrupted"}}"#,
        )
        .unwrap();
        let t = event_text(&ev);
        assert_eq!(
            t,
            "2026-01-01T00:00:00Z claim_force_released key=k holder=h\\e[2J pid=null \
             operator=me@box previous_state=corrupted"
        );
    }

    #[test]
    fn filter_matches_type_and_data_key() {
        let ev = parse_event(r#"{"type":"claim_acquired","data":{"key":"a"}}"#).unwrap();
        let f = |key: Option<&str>, kind: Option<&str>| Filter {
            key: key.map(Into::into),
            kind: kind.map(Into::into),
        };
        assert!(f(Some("a"), Some("claim_acquired")).accepts(&ev));
        assert!(!f(Some("b"), None).accepts(&ev));
        assert!(!f(None, Some("claim_released")).accepts(&ev));
    }
}
