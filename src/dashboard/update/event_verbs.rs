//! What the events pane does beyond following and browsing: its own
//! filter (`:events`), and Enter on a line, which goes to its key's claim
//! row in the table, or, when the claim is gone, to its row as of the
//! line's instant.

use super::effects::Effects;
use super::rows::scroll_into_view;
use crate::dashboard::keys::Pane;
use crate::dashboard::model::event_filter::EventFilter;
use crate::dashboard::model::{App, EventRow, Level};
use crate::events::kind::EventKind;

/// `:events TERMS`: the pane's filter (no terms: none).
pub(super) fn filter(app: &mut App, text: &str) -> Result<bool, String> {
    let f = EventFilter::parse(text)?;
    let v = &mut app.events.view;
    v.filter = f;
    v.scroll = 0;
    v.new_while_scrolled = 0;
    Ok(true)
}

/// Enter on an event line: select its key's claim in the table (in the
/// line's own root, over several), focus the table; or say why not.
pub(super) fn go_to_claim(app: &mut App, ev: &EventRow, fx: &mut Effects) -> bool {
    let Some(key) = ev.key.clone() else {
        app.say(Level::Info, "this line names no key");
        return true;
    };
    let several = app.origins.several();
    let shown = app.shown();
    let is_it =
        |s: &crate::claims::Status| s.key == key && (!several || app.origins.of(s) == ev.root);
    let at = app
        .table
        .rows
        .iter()
        .position(|p| shown.get(p).is_some_and(is_it));
    let hidden = shown.by_row.values().any(|s| is_it(s));
    let safe = crate::sanitize::sanitize(&key).into_owned();
    match at {
        Some(i) => {
            app.table.selected = i;
            app.table.detail_scroll = 0;
            app.focus = Pane::Table;
            app.refresh_selected_why();
            scroll_into_view(app);
        }
        None if hidden => app.say(
            Level::Info,
            format!("{safe} is held, but the filter hides its row (Esc clears the filter)"),
        ),
        None => match ev.at {
            // Gone: the table as it stood when the line was written, on
            // that key's row.
            Some(t) => {
                let root = several.then(|| app.origins.label(ev.root).to_string());
                super::asof::open_at_row(app, held_instant(ev, t), Some((key, root)), fx);
                app.focus = Pane::Table;
            }
            None => app.say(
                Level::Info,
                format!("no claim on {safe} now, and the line's time does not read as one"),
            ),
        },
    }
    true
}

/// The instant the line shows its key held: a line that ends a tenure
/// (released, force-released, expired) ends it at its own instant, and a
/// tenure is held over `start <= t < end`, so the holder it ended is the
/// one just before.
fn held_instant(ev: &EventRow, at: i64) -> i64 {
    match ev.kind {
        Ok(EventKind::Released | EventKind::ForceReleased | EventKind::Expired) => {
            at.saturating_sub(1)
        }
        _ => at,
    }
}
