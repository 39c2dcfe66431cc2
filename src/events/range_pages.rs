//! A range read through a history's pages: what a store's log does (its
//! entries are values, read a page at a time), so a window starts where the
//! history finds its time and a big store is never held in memory whole.

use super::claim_event::parse_ts;
use super::history::{Anchor, History, HistoryError, Visit};
use super::range::{Entry, Range, RangeEnd};
use super::seek::{CLOCK_SLACK_MS, PROBE_LINES};
use super::stream::Probe;
use super::tail::Line;

/// Entries per page read.
const PAGE: usize = 1000;

/// [`History::read_range`] over [`History::page`].
pub fn read_range<H: History + ?Sized>(
    h: &mut H,
    range: &Range,
    visit: &mut Visit<'_>,
) -> Result<RangeEnd, HistoryError> {
    // A history is read from its start on.
    h.start()?;
    if let (Some(n), None, None) = (range.last, range.since, range.until) {
        // The last n, one read from the end.
        let page = h.page(Anchor::End, n, 0)?;
        page.lines.iter().try_for_each(|l| visit(entry(l)))?;
        return Ok(end_after(page.lines.last()));
    }
    let anchor = range.since.map_or(Anchor::Start, Anchor::Time);
    let mut page = h.page(anchor, 0, PAGE)?;
    let mut skip = None;
    let mut last_seen = None;
    // Entries in a row past the window.
    let mut past = 0;
    loop {
        for l in &page.lines {
            if skip.take() == Some(l.offset) {
                continue;
            }
            last_seen = Some(l.offset);
            // Past the window by more than the writers' clocks can be
            // apart, and not one entry alone (any writer can stamp one
            // next century): nothing later is in it.
            if let (Some(u), Some(at)) = (range.until, ts_of(l)) {
                if at >= u.saturating_add(CLOCK_SLACK_MS) {
                    past += 1;
                    if past >= PROBE_LINES {
                        return Ok(next_after(last_seen));
                    }
                } else {
                    past = 0;
                }
            }
            visit(entry(l))?;
        }
        let Some(last) = page.lines.last().map(|l| l.offset) else {
            break;
        };
        if page.at_end {
            break;
        }
        // On from the last entry read (it comes again first).
        skip = Some(last);
        page = h.page(Anchor::At(last), 0, PAGE + 1)?;
    }
    Ok(next_after(last_seen))
}

fn entry(l: &Line) -> Entry<'_> {
    Entry::held(l.offset, l.text.as_bytes())
}

fn ts_of(l: &Line) -> Option<i64> {
    parse_ts(&Probe::of_slice(l.text.as_bytes()).ok()?.ts?)
}

fn end_after(last: Option<&Line>) -> RangeEnd {
    next_after(last.map(|l| l.offset))
}

fn next_after(mark: Option<u64>) -> RangeEnd {
    RangeEnd {
        next: mark.map(|m| m.saturating_add(1)),
        file_id: None,
    }
}
