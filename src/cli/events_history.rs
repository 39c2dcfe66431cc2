//! `events` over a store, read through the store's history: a window
//! (`--since`) starts where the history finds its time, pages are read on
//! from there, and only the events asked for are kept, so a big store is
//! never held in memory whole.

use crate::events::claim_event::parse_ts;
use crate::events::history::{Anchor, History, Log};
use crate::events::seek::{CLOCK_SLACK_MS, PROBE_LINES};
use crate::events::{parse_event, Event};
use crate::store::Audit;
use std::collections::VecDeque;

/// Entries per page read.
const PAGE: usize = 1000;

/// What to read: the window and how many of the last matches to keep.
pub struct Wanted<'a> {
    pub since: Option<i64>,
    pub until: Option<i64>,
    /// `-n`: only the last this many matches.
    pub last: Option<usize>,
    /// Anything beyond the window asked (a key, a type)?
    pub filtered: bool,
    pub wants: &'a dyn Fn(&Event) -> bool,
}

/// The log's own events that `w` asks for, oldest first.
pub fn own_events(audit: &dyn Audit, w: &Wanted<'_>) -> Result<Vec<Event>, String> {
    let mut h = audit.history(&Log::Own).map_err(|e| e.to_string())?;
    let plain = !w.filtered && w.since.is_none() && w.until.is_none();
    if let (Some(n), true) = (w.last, plain) {
        // The last n, one read from the end.
        let page = h.page(Anchor::End, n, 0).map_err(|e| e.to_string())?;
        return Ok(page.lines.iter().filter_map(event).collect());
    }
    read_on(&mut *h, w)
}

fn event(l: &crate::events::tail::Line) -> Option<Event> {
    parse_event(&l.text)
        .ok()
        .map(|e| e.at_revision(i64::try_from(l.offset).unwrap_or(0)))
}

/// Pages from the window's start (the first entry without one) to its
/// end, the matches kept.
fn read_on(h: &mut dyn History, w: &Wanted<'_>) -> Result<Vec<Event>, String> {
    let anchor = w.since.map_or(Anchor::Start, Anchor::Time);
    let mut page = h.page(anchor, 0, PAGE).map_err(|e| e.to_string())?;
    let mut kept: VecDeque<Event> = VecDeque::new();
    let mut skip = None;
    // Events in a row past the window.
    let mut past = 0;
    loop {
        for l in &page.lines {
            if skip.take() == Some(l.offset) {
                continue;
            }
            let Some(ev) = event(l) else { continue };
            // Past the window by more than the writers' clocks can be
            // apart, and not one line alone (any writer can stamp one
            // next century): nothing later is in it.
            let at = ev.ts().and_then(parse_ts);
            if let (Some(u), Some(at)) = (w.until, at) {
                if at >= u.saturating_add(CLOCK_SLACK_MS) {
                    past += 1;
                    if past >= PROBE_LINES {
                        return Ok(kept.into());
                    }
                } else {
                    past = 0;
                }
            }
            if (w.wants)(&ev) {
                kept.push_back(ev);
                if w.last.is_some_and(|n| kept.len() > n) {
                    kept.pop_front();
                }
            }
        }
        let Some(last) = page.lines.last().map(|l| l.offset) else {
            break;
        };
        if page.at_end {
            break;
        }
        // On from the last entry read (it comes again first).
        skip = Some(last);
        page = h
            .page(Anchor::At(last), 0, PAGE + 1)
            .map_err(|e| e.to_string())?;
    }
    Ok(kept.into())
}
