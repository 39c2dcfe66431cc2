//! `events` over a store, read through the store's history: a window
//! (`--since`) starts where the history finds its time, and only the
//! events asked for are kept, so a big store is never held in memory whole.

use crate::events::history::Log;
use crate::events::range::Range;
use crate::events::{parse_event, Event};
use crate::store::Audit;
use std::collections::VecDeque;

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

/// The log's own events that `w` asks for, oldest first, each at the
/// revision (its mark) it was written at.
pub fn own_events(audit: &dyn Audit, w: &Wanted<'_>) -> Result<Vec<Event>, String> {
    let mut h = audit.history(&Log::Own).map_err(|e| e.to_string())?;
    let range = Range {
        since: w.since,
        until: w.until,
        // Without a filter the last n entries hold the last n events.
        last: w.last.filter(|_| !w.filtered),
    };
    let mut kept: VecDeque<Event> = VecDeque::new();
    let mut buf = Vec::new();
    h.read_range(&range, &mut |e| {
        let text = match e.bytes() {
            Some(b) => b,
            None => {
                e.read_into(&mut buf)?;
                &buf
            }
        };
        let Some(ev) = std::str::from_utf8(text)
            .ok()
            .and_then(|t| parse_event(t).ok())
        else {
            return Ok(());
        };
        let ev = ev.at_revision(i64::try_from(e.mark).unwrap_or(0));
        if (w.wants)(&ev) {
            kept.push_back(ev);
            if w.last.is_some_and(|n| kept.len() > n) {
                kept.pop_front();
            }
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(kept.into())
}
