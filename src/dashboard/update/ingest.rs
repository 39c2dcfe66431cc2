//! What the readers report, taken into the model: a mirror's delta, new
//! event lines, the tick, an op's answer.

use super::effects::Effects;
use super::rows::{rows_changed, scroll_into_view, select_arrived};
use crate::dashboard::action::OpResult;
use crate::dashboard::model::{App, ClaimSet, EventRow, Level, RowId};
use crate::dashboard::view::{layout, time_bucket};
use crate::events::tail::Line;
use crate::store::mirror::{Delta, Row};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Take in what root `root`'s mirror says changed: its rows, its counts
/// and hazards, the pid facts the selected claim is worded by, and, over a
/// store, the tenures and the link.
pub fn on_mirror(app: &mut App, root: usize, mut d: Delta) -> bool {
    app.claims.learn(&d.pids);
    let paused = app.paused();
    let mut shown = d
        .tally
        .take()
        .is_some_and(|t| app.origins.set_tally(root, t) && !paused);
    if let Some(problem) = d.problem.take() {
        shown |= app.origins.set_problem(root, problem);
    }
    // A leased member's rows carry their tenures and say how its link is;
    // a root's and the copies' say nothing of either.
    if app.origins.caps(root).leases {
        shown |= super::store::on_delta(app, root, &d);
    }
    let moved = match d.whole {
        Some(w) => {
            let head = w.partial.then_some(d.rows.len());
            shown |= app.origins.set_partial(root, head);
            shown |= super::store::on_copies_listed(app, root, !w.partial);
            let replaced = replace_rows(app, root, d.rows);
            app.refresh_selected_why();
            return replaced || shown;
        }
        None => {
            let mut moved = Vec::with_capacity(d.rows.len());
            let mut narrows = false;
            for row in d.rows {
                let id = RowId::of(row.path);
                if let (RowId::Copy(c), Some(v)) = (&id, app.store.as_mut()) {
                    let had = app.claims.live.get(&id).is_some();
                    let here = row.status.state != crate::claims::ClaimState::Free;
                    if had != here {
                        v.fleet.track(c, here);
                    }
                }
                let held = app
                    .claims
                    .live
                    .get(&id)
                    .is_some_and(|old| app.holds_a_width(&id, old));
                if let Some(p) = app.claims.live.put_counted(&id, row.status) {
                    narrows |= held;
                    moved.push(p);
                }
            }
            let shown_rows = rows_changed(app, &moved, narrows);
            // The mirror keeps no reasons in words: the one shown in full
            // is worded here, at the clock the view shows.
            app.refresh_selected_why();
            shown_rows
        }
    };
    moved || shown
}

/// How many rows differ between two sets: come, gone or changed.
fn changed_rows(was: &ClaimSet, now: &ClaimSet) -> usize {
    let came_or_changed = now
        .by_row
        .iter()
        .filter(|(id, s)| was.by_row.get(*id) != Some(*s))
        .count();
    let gone = was
        .by_row
        .keys()
        .filter(|id| !now.by_row.contains_key(*id))
        .count();
    came_or_changed + gone
}

/// Replace origin `i`'s rows with a listing's; every other origin's rows
/// (another root's, a site's, the copies hosts publish) stay.
pub(super) fn replace_rows(app: &mut App, i: usize, rows: Vec<Row>) -> bool {
    let copies = app.store.as_ref().and_then(|v| v.copies);
    let paused = app.paused();
    let live = &mut app.claims.live;
    // Sized once: growing a table of 100 000 claims by doubling holds the
    // old and the new table at once, the dashboard's peak memory.
    let mut set = ClaimSet {
        by_row: std::collections::HashMap::with_capacity(rows.len()),
        store_keys: live.store_keys,
    };
    let others = live.by_row.iter().filter(|(id, _)| match id {
        RowId::Claim(p) => usize::from(p.origin()) != i,
        RowId::Copy(_) => copies != Some(i),
    });
    for (p, s) in others {
        set.by_row.insert(p.clone(), Arc::clone(s));
    }
    for row in rows {
        if row.status.state != crate::claims::ClaimState::Free {
            set.by_row.insert(RowId::of(row.path), row.status);
        }
    }
    if let Some(v) = app.store.as_mut().filter(|_| copies == Some(i)) {
        v.fleet.counts.clear();
        for id in set.by_row.keys() {
            if let RowId::Copy(c) = id {
                v.fleet.track(c, true);
            }
        }
    }
    let changed = set != *live;
    let news = if changed && paused {
        changed_rows(live, &set)
    } else {
        0
    };
    *live = set;
    if !changed || paused {
        return super::rows::noted_while_paused(app, news);
    }
    app.rebuild_rows();
    scroll_into_view(app);
    true
}

/// New lines of one log: root `root`'s of several, or the only one's.
pub(super) fn on_events_in(app: &mut App, root: Option<usize>, lines: &[Line]) -> bool {
    // Lines arriving means the log is readable again.
    let recovered = !lines.is_empty() && app.events.error.take().is_some();
    let mut shown = 0usize;
    for line in lines {
        let row: &EventRow = match root {
            Some(i) => app.events.ring.push_in(i, line),
            None => app.events.ring.push(line),
        };
        if app.events.view.shows(row) {
            shown += 1;
        }
    }
    if shown == 0 || app.paused() {
        return recovered;
    }
    // Scrolled up: keep the same lines in view and count what arrived.
    if app.events.view.scroll > 0 {
        app.events.view.scroll += shown;
        app.events.view.new_while_scrolled += shown;
    }
    true
}

/// A second passed: the clock moves (the mirror has judged again what
/// time changes, and sent it before this tick), the selected claim is
/// worded at it, and the screen is redrawn only when a visible cell moved.
pub fn on_tick(app: &mut App, now: i64) -> bool {
    let before = visible_signature(app);
    app.now = now;
    app.refresh_selected_why();
    let expired = app
        .status
        .as_ref()
        .is_some_and(|m| now - m.at >= m.lifetime_ms());
    if expired {
        app.status = None;
    }
    expired || visible_signature(app) != before
}

/// A digest of everything time can change on screen: the header clock's
/// second, counts, and the state / age / TTL cells of the visible rows,
/// plus the selected claim's verdict. No allocation.
pub fn visible_signature(app: &App) -> u64 {
    let mut h = DefaultHasher::new();
    let now = app.shown_now();
    (now / 1000).hash(&mut h);
    let shown = app.shown();
    let c = app.counted();
    (c.live, c.suspect, c.stale, c.corrupted, app.hazard_count()).hash(&mut h);
    let cap = layout::table_capacity(app.size, app.look());
    for p in app.table.rows.iter().skip(app.table.offset).take(cap) {
        if let Some(s) = shown.get(p) {
            s.state.hash(&mut h);
            if let Some(r) = &s.record {
                time_bucket(now - r.acquired_at).hash(&mut h);
                r.expires_at.map(|e| time_bucket(e - now)).hash(&mut h);
            }
        }
    }
    if let Some(s) = app.selected_status() {
        s.why.hash(&mut h);
    }
    h.finish()
}

/// An op finished: say so. The worker has asked its lane to re-read
/// its lockfile, which arrives as a `Read` right after.
pub(super) fn on_op_result(app: &mut App, r: OpResult, fx: &mut Effects) -> bool {
    if r.ok && r.verb == "acquire" {
        app.table.select_on_arrival = Some((r.root, r.key.clone()));
        select_arrived(app);
    }
    app.say(if r.ok { Level::Ok } else { Level::Error }, r.message);
    if let Some(left) = app.quit_after.as_mut() {
        *left = left.saturating_sub(1);
        // Quit once every release has answered, done or not: the status
        // line of a failed one is lost, but its claim is still there to see.
        if *left == 0 {
            fx.quit = true;
        }
    }
    true
}

// ---------------------------------------------------------------- keys
