//! The table's rows and the focused pane's motions: placing changed
//! claims, moving the selection, keeping it in view, pausing.

use crate::dashboard::keys::{Cmd, Pane};
use crate::dashboard::model::{App, Frozen, Level, RowId};
use crate::dashboard::view::layout;

/// Most changed claims placed one by one; a bigger batch re-sorts.
pub(super) const REPOSITION_MAX: usize = 64;

/// After these live claims changed (their counts are kept by `put`): move
/// just them to their sorted places unless the view is frozen, or rebuild
/// when many moved or a column may have narrowed. Redraw only when the
/// shown view moved.
pub(crate) fn rows_changed(app: &mut App, moved: &[RowId], narrows: bool) -> bool {
    if moved.is_empty() {
        return false;
    }
    if app.paused() {
        return noted_while_paused(app, moved.len());
    }
    if narrows || moved.len() > REPOSITION_MAX {
        app.rebuild_rows();
    } else {
        app.reposition_rows(moved);
    }
    scroll_into_view(app);
    select_arrived(app);
    true
}

pub(super) fn page(app: &App) -> usize {
    match app.focus {
        Pane::Table => layout::table_capacity(app.size, app.look()),
        Pane::Detail => layout::detail_capacity(app.size, app.look()),
        Pane::Events => layout::events_capacity(app.size, app.look()),
    }
    .max(1)
}

/// Move in the focused pane by `delta` (huge deltas = top / bottom).
pub(super) fn move_by(app: &mut App, delta: isize) -> bool {
    match app.focus {
        Pane::Table => {
            let before = app.table.selected;
            let last = app.table.rows.len().saturating_sub(1) as isize;
            app.table.selected = (app.table.selected as isize)
                .saturating_add(delta)
                .clamp(0, last) as usize;
            if app.table.selected != before {
                app.table.detail_scroll = 0;
            }
            scroll_into_view(app);
            app.table.selected != before
        }
        Pane::Detail => {
            let before = app.table.detail_scroll;
            let max = crate::dashboard::view::detail_max_scroll(app) as isize;
            app.table.detail_scroll = (app.table.detail_scroll as isize)
                .saturating_add(delta)
                .clamp(0, max) as u16;
            app.table.detail_scroll != before
        }
        Pane::Events => {
            let total = app.shown_events().count();
            let max = total.saturating_sub(layout::events_capacity(app.size, app.look()));
            let before = (app.events.view.scroll, app.events.view.new_while_scrolled);
            // Up (negative delta) scrolls back in time.
            let s = (before.0 as isize)
                .saturating_sub(delta)
                .clamp(0, max as isize) as usize;
            app.events.view.scroll = s;
            if s == 0 {
                app.events.view.new_while_scrolled = 0;
            }
            (s, app.events.view.new_while_scrolled) != before
        }
    }
}

/// Select the claim just acquired here once it is among the rows (the
/// filter may hide it: then it is not waited for forever, a later acquire
/// replaces it).
pub(crate) fn select_arrived(app: &mut App) {
    let Some((root, key)) = app.table.select_on_arrival.as_ref() else {
        return;
    };
    let arrived = |id: &RowId| {
        !id.is_copy()
            && app
                .claims
                .live
                .get(id)
                .is_some_and(|s| s.key == *key && app.origins.of(s) == *root)
    };
    if let Some(i) = app.table.rows.iter().position(arrived) {
        app.table.selected = i;
        app.table.select_on_arrival = None;
        app.table.detail_scroll = 0;
        scroll_into_view(app);
    }
}

/// Keep the selected row inside the table's window.
pub fn scroll_into_view(app: &mut App) {
    let cap = layout::table_capacity(app.size, app.look()).max(1);
    app.clamp_selection();
    if app.table.selected < app.table.offset {
        app.table.offset = app.table.selected;
    } else if app.table.selected >= app.table.offset + cap {
        app.table.offset = app.table.selected + 1 - cap;
    }
    let max_offset = app.table.rows.len().saturating_sub(cap);
    app.table.offset = app.table.offset.min(max_offset);
}

/// `n` claims changed while the view is paused: the header counts them
/// ("paused · 3 new"); true, as the count shows.
pub(crate) fn noted_while_paused(app: &mut App, n: usize) -> bool {
    match app.claims.frozen.as_mut() {
        Some(f) if n > 0 => {
            f.news += n;
            true
        }
        _ => false,
    }
}

pub(super) fn toggle_pause(app: &mut App) {
    if app.claims.frozen.take().is_none() {
        app.claims.frozen = Some(Frozen {
            claims: app.claims.live.clone(),
            tallies: app.origins.tallies(),
            now: app.now,
            events_seq: app.events.ring.next_seq,
            news: 0,
        });
    } else {
        // Resume on the latest data; a mark on a claim whose tenure ended
        // meanwhile goes now.
        keep_marked_tenures(app);
        app.rebuild_rows();
        scroll_into_view(app);
        if app.events.view.scroll > 0 {
            app.events.view.scroll = 0;
            app.events.view.new_while_scrolled = 0;
        }
    }
}

/// Drop the marks whose claim's tenure ended (released, or taken again by
/// someone else) since they were set; said when any went.
pub(crate) fn keep_marked_tenures(app: &mut App) -> bool {
    if app.table.marked.is_empty() {
        return false;
    }
    let now: std::collections::HashMap<RowId, _> = app
        .table
        .marked
        .iter()
        .filter_map(|id| Some((id.clone(), app.tenure_id(id)?)))
        .collect();
    let dropped = app.table.marked.keep_tenures(|id| now.get(id).cloned());
    if dropped > 0 {
        let msg = format!(
            "{} dropped: the claim was released or taken again since it was marked",
            crate::claims::words::count(dropped, "mark")
        );
        app.say(Level::Info, msg);
    }
    dropped > 0
}

/// How far a motion goes in the focused pane.
pub(super) fn motion(app: &App, cmd: Cmd) -> isize {
    let page = page(app) as isize;
    match cmd {
        Cmd::Up => -1,
        Cmd::Down => 1,
        Cmd::PageUp => -page,
        Cmd::PageDown => page,
        Cmd::Top => isize::MIN / 2,
        _ => isize::MAX / 2,
    }
}
