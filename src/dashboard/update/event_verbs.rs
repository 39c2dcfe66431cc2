//! What the events pane does beyond following and browsing: its own
//! filter (`:events`), and Enter on a line, which goes to its key's claim
//! row in the table.

use super::rows::scroll_into_view;
use crate::dashboard::keys::Pane;
use crate::dashboard::model::event_filter::EventFilter;
use crate::dashboard::model::{App, EventRow, Level};

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
pub(super) fn go_to_claim(app: &mut App, ev: &EventRow) -> bool {
    let Some(key) = ev.key.clone() else {
        app.say(Level::Info, "this line names no key");
        return true;
    };
    let several = app.roots.is_several();
    let shown = app.shown();
    let is_it =
        |s: &crate::claims::Status| s.key == key && (!several || app.roots.of(s) == ev.root);
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
        None => {
            let when = ev
                .at
                .map(|t| crate::time::clock(t, app.local_time, "%Y-%m-%dT%H:%M:%S"));
            let hint = when.map_or(String::new(), |w| {
                format!(": :asof {w} shows who held it then")
            });
            app.say(Level::Info, format!("no claim on {safe} now{hint}"));
        }
    }
    true
}
