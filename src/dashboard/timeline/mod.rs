//! The timeline (`t`): one row per key, time across, every tenure a bar
//! coloured by how it ended, a cursor to move and zoom.
//!
//! The tenures come from the events service (the log's tail first, then the
//! whole log once it is indexed); lines the follower brings after that are
//! applied here, so the view stays live. Every transition is pure: the
//! model is fed messages and keys, never reads a file.

use crate::events::history::Ends;
use crate::events::service::Reply;
use crate::events::tail::Line;
use crate::events::tenure::{Tenure, TenureIndex};

/// Narrowest and widest a screen can be zoomed to.
pub const MIN_SPAN_MS: i64 = 10_000;
pub const MAX_SPAN_MS: i64 = 90 * 86_400_000;
/// What the first screen shows before the log is read: the last quarter hour.
pub const DEFAULT_SPAN_MS: i64 = 15 * 60_000;
/// Once the log is read, the first screen fits its whole span, up to the
/// last day: a quiet log's history is in view at once, a busy one's day
/// still shows its bars.
pub const FIT_MAX_SPAN_MS: i64 = 86_400_000;
/// Lines kept while the whole-log index is still being built; a burst
/// beyond this is dropped from the timeline (and said so).
const MAX_PENDING_LINES: usize = 100_000;
/// Lines kept once the index is whole: a second whole index (the log
/// appeared after start, or was indexed again) may end before lines the
/// follower already brought, and they are replayed from here.
const RECENT_LINES: usize = 4096;

/// How much of the log the tenures cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Nothing heard from the service yet.
    Nothing,
    /// Only the log's tail; the whole log is being indexed.
    Tail { scanned: u64, len: u64 },
    /// The whole log, kept live.
    Whole,
}

/// The timeline's model.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub tenures: Option<Box<TenureIndex>>,
    pub coverage: Coverage,
    /// Lines at or past this offset are new to `tenures` (set once whole).
    live_from: Option<u64>,
    /// Over several logs, where each was read to (`live_from` is then
    /// none of theirs).
    ends: Option<Ends>,
    /// Lines that came while the whole index was being built.
    pending: Vec<Line>,
    /// Some pending lines were dropped (more than the cap arrived).
    pub lost_lines: bool,
    /// The view's right edge (epoch ms).
    pub right: i64,
    /// Visible width in ms.
    pub span: i64,
    pub cursor: i64,
    /// Keep the right edge and the cursor at "now".
    pub follow: bool,
    /// The operator chose the width (`+`/`-`): it is never fitted again.
    pub zoomed: bool,
    /// Selected row, and the first row shown.
    pub selected: usize,
    pub offset: usize,
    /// Tenures of an older span re-read from the log: (from, to, tenures).
    pub window: Option<(i64, i64, Box<TenureIndex>)>,
    /// The span asked for and not come yet.
    window_asked: Option<(i64, i64)>,
}

impl Timeline {
    pub fn new(now: i64) -> Timeline {
        Timeline {
            tenures: None,
            coverage: Coverage::Nothing,
            live_from: None,
            ends: None,
            pending: Vec::new(),
            lost_lines: false,
            right: now,
            span: DEFAULT_SPAN_MS,
            cursor: now,
            follow: true,
            zoomed: false,
            selected: 0,
            offset: 0,
            window: None,
            window_asked: None,
        }
    }

    /// The tenures the view shows: a span re-read from the log when the
    /// view lies before what the whole index keeps, else the index.
    pub fn shown(&self) -> Option<&TenureIndex> {
        let main = self.tenures.as_deref()?;
        match (&self.window, main.horizon()) {
            // Only when it holds what the index dropped: a wide view's
            // re-read is cut to its most recent bytes, which the index has.
            (Some((f, t, w)), Some(h))
                if self.left() < h
                    && self.covers(*f, *t)
                    && w.span().is_some_and(|(first, _)| first < h) =>
            {
                Some(w)
            }
            _ => Some(main),
        }
    }

    fn covers(&self, from: i64, to: i64) -> bool {
        from <= self.left() && self.right <= to
    }

    /// The view lies before what the whole index keeps, and no re-read
    /// span covers it: the span to ask the events service for (the view
    /// and one width either side, for panning). Remembered as asked.
    pub fn wanted_window(&mut self) -> Option<(i64, i64)> {
        let h = self.tenures.as_ref()?.horizon()?;
        if self.coverage != Coverage::Whole || self.left() >= h {
            return None;
        }
        let have = self.window.as_ref().map(|w| (w.0, w.1));
        if have
            .or(self.window_asked)
            .is_some_and(|(f, t)| self.covers(f, t))
        {
            return None;
        }
        let want = (
            self.left().saturating_sub(self.span),
            self.right.saturating_add(self.span),
        );
        self.window_asked = Some(want);
        Some(want)
    }

    /// Waiting for a re-read span.
    pub fn window_pending(&self) -> bool {
        self.window_asked.is_some()
    }

    /// The view's left edge.
    pub fn left(&self) -> i64 {
        self.right.saturating_sub(self.span)
    }

    /// A reply of the events service; true when the timeline changed.
    /// Replies that are not about tenures are ignored.
    pub fn on_reply(&mut self, reply: &mut Reply) -> bool {
        match reply {
            Reply::TailTenures(t) => {
                if self.coverage == Coverage::Whole {
                    return false;
                }
                let mut t = std::mem::take(t);
                for l in &self.pending {
                    apply(&mut t, l);
                }
                self.tenures = Some(t);
                self.coverage = Coverage::Tail { scanned: 0, len: 0 };
                self.fit();
                true
            }
            Reply::Progress(p) => {
                if self.coverage == Coverage::Whole {
                    return false;
                }
                self.coverage = Coverage::Tail {
                    scanned: p.scanned,
                    len: p.len,
                };
                true
            }
            Reply::Window { from, to, tenures } => {
                if self.window_asked != Some((*from, *to)) {
                    return false;
                }
                self.window_asked = None;
                self.window = Some((*from, *to, std::mem::take(tenures)));
                true
            }
            Reply::Ends(ends) => {
                self.ends = Some(ends.clone());
                false
            }
            Reply::Indexed { tenures, end, .. } => {
                let mut t = std::mem::take(tenures);
                let ends = &self.ends;
                let new = |l: &&Line| {
                    ends.as_ref()
                        .map_or(l.offset >= *end, |e| e.admits(l.offset))
                };
                for l in self.pending.iter().filter(new) {
                    apply(&mut t, l);
                }
                let keep = self.pending.len().saturating_sub(RECENT_LINES);
                self.pending.drain(..keep);
                self.pending.shrink_to_fit();
                self.tenures = Some(t);
                self.live_from = Some(*end);
                self.coverage = Coverage::Whole;
                self.fit();
                true
            }
            _ => false,
        }
    }

    /// New lines from the follower: applied at once (the tail's tenures
    /// stay live too), and kept for the whole index until it arrives.
    pub fn on_lines(&mut self, lines: &[Line]) -> bool {
        let mut changed = false;
        let (from, ends) = (self.live_from, &self.ends);
        let new = |l: &&Line| match (from, ends) {
            (None, _) => true,
            (Some(_), Some(e)) => e.admits(l.offset),
            (Some(f), None) => l.offset >= f,
        };
        if let Some(t) = &mut self.tenures {
            for l in lines.iter().filter(new) {
                changed |= apply(t, l);
            }
        }
        if from.is_none() {
            let room = MAX_PENDING_LINES.saturating_sub(self.pending.len());
            self.lost_lines |= lines.len() > room;
            self.pending.extend(lines.iter().take(room).cloned());
        } else {
            let tail = lines.len().saturating_sub(RECENT_LINES);
            self.pending.extend(lines[tail..].iter().cloned());
            let over = self.pending.len().saturating_sub(RECENT_LINES);
            self.pending.drain(..over);
        }
        changed
    }

    /// The log was truncated or replaced: forget everything; the service
    /// is asked to index it again.
    pub fn on_reset(&mut self) {
        self.tenures = None;
        self.coverage = Coverage::Nothing;
        self.live_from = None;
        self.ends = None;
        self.pending.clear();
        self.lost_lines = false;
        self.window = None;
        self.window_asked = None;
    }

    /// The clock moved: a following view moves with it.
    pub fn on_tick(&mut self, now: i64) -> bool {
        if !self.follow {
            return false;
        }
        self.right = now;
        self.cursor = now;
        true
    }

    /// The keys shown, in order: every key with a tenure that `keep` lets
    /// through (the dashboard's filter), sorted by name.
    pub fn rows(&self, keep: impl Fn(&str) -> bool) -> Vec<(&str, &[Tenure])> {
        let Some(t) = self.shown() else {
            return Vec::new();
        };
        let mut rows: Vec<_> = t.keys().filter(|(k, _)| keep(k)).collect();
        rows.sort_unstable_by(|a, b| a.0.cmp(b.0));
        rows
    }

    /// Milliseconds one column stands for, for a bar area `cols` wide.
    pub fn cell_ms(&self, cols: u16) -> i64 {
        (self.span / i64::from(cols.max(1))).max(1)
    }

    /// Move the cursor by `cols` columns (negative: back in time), sliding
    /// the view when it reaches an edge. Stops following.
    pub fn move_cursor(&mut self, cols: i64, width: u16) {
        self.follow = false;
        let step = self.cell_ms(width).saturating_mul(cols);
        self.cursor = self.cursor.saturating_add(step);
        if self.cursor > self.right {
            self.right = self.cursor;
        } else if self.cursor < self.left() {
            self.right = self.cursor.saturating_add(self.span);
        }
    }

    /// Zoom in (`factor` < 1) or out around the cursor, keeping it at the
    /// same place on screen.
    pub fn zoom(&mut self, zoom_in: bool) {
        let new = if zoom_in {
            self.span / 2
        } else {
            self.span.saturating_mul(2)
        }
        .clamp(MIN_SPAN_MS, MAX_SPAN_MS);
        self.zoomed = true;
        if new == self.span {
            return;
        }
        // Where the cursor sits, as a fraction of the width, stays put.
        let from_right = self.right.saturating_sub(self.cursor);
        let scaled = (i128::from(from_right) * i128::from(new) / i128::from(self.span)) as i64;
        self.span = new;
        self.right = self.cursor.saturating_add(scaled);
    }

    /// Fit the width to the log's span (or the last day, if shorter),
    /// ending now — unless the operator has chosen a width or moved away
    /// from now.
    pub fn fit(&mut self) {
        if self.zoomed || !self.follow {
            return;
        }
        let Some((first, _)) = self.tenures.as_ref().and_then(|t| t.span()) else {
            return;
        };
        // A twentieth more, so the first tenure does not sit on the edge.
        let age = self.right.saturating_sub(first);
        self.span = age
            .saturating_add(age / 20)
            .clamp(MIN_SPAN_MS, FIT_MAX_SPAN_MS);
    }

    /// Back to "now", following.
    pub fn follow_now(&mut self, now: i64) {
        self.follow = true;
        self.right = now;
        self.cursor = now;
    }

    /// Move the row selection by `by`, within `rows`, keeping it among the
    /// `visible` rows shown.
    pub fn select(&mut self, by: isize, rows: usize, visible: usize) {
        let last = rows.saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(by).min(last);
        self.scroll_to_selection(visible);
    }

    pub fn scroll_to_selection(&mut self, visible: usize) {
        let visible = visible.max(1);
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + visible {
            self.offset = self.selected + 1 - visible;
        }
    }
}

/// The tenure of `tenures` (sorted by start) that covers `at`; failing that,
/// the last one that ended before it.
pub fn tenure_at(tenures: &[Tenure], at: i64) -> Option<&Tenure> {
    let i = tenures.partition_point(|t| t.start <= at);
    let before = tenures[..i].iter().rev();
    // Overlaps are rare (clock skew between writers); look a few back.
    let mut prior = None;
    for t in before.take(8) {
        if t.end >= at {
            return Some(t);
        }
        prior = prior.or(Some(t));
    }
    prior
}

/// Apply one followed line: its text, or the claim event read whole from
/// the file when the text was cut at the follower's cap.
fn apply(t: &mut TenureIndex, l: &Line) -> bool {
    match &l.claim {
        Some(ev) => {
            t.apply(&ev.as_event());
            true
        }
        None => t.apply_line(&l.text),
    }
}

/// How a tenure's span reads: `12:01:02Z → 12:09:30Z (8m28s)`; a held one
/// runs to `now`.
pub fn duration_ms(t: &Tenure, now: i64) -> i64 {
    let end = if t.is_held() { now.max(t.start) } else { t.end };
    end.saturating_sub(t.start)
}

#[cfg(test)]
mod tests;
