//! The `h` list's keys: j/k (↑/↓) select an entry, Enter goes to the row
//! it is about (or, for a file no row shows, says where it is), and `x`
//! cleans the selected entry alone when it is abandoned litter (asked
//! first, and judged again by the root's own rules when it runs; see
//! [`crate::claims::clean_one`]).

use super::commands::start_clean;
use super::effects::Effects;
use super::rows::scroll_into_view;
use crate::dashboard::keys::{Cmd, Pane};
use crate::dashboard::model::{App, Dialog, Layer, Level, Overlay};

/// A command over the `h` list; None: the list's other keys.
pub(super) fn command(app: &mut App, cmd: Cmd, _fx: &mut Effects) -> Option<bool> {
    let count = app.hazard_entries().len();
    let step = |app: &mut App, by: isize| {
        let last = count.saturating_sub(1) as isize;
        app.hazard_cursor = (app.hazard_cursor as isize + by).clamp(0, last.max(0)) as usize;
        let to = crate::dashboard::view::hazard_scroll(app);
        app.modes.set_overlay_scroll(to);
        true
    };
    Some(match cmd {
        Cmd::Up => step(app, -1),
        Cmd::Down => step(app, 1),
        Cmd::Top => step(app, isize::MIN / 2),
        Cmd::Bottom => step(app, isize::MAX / 2),
        Cmd::Open | Cmd::GoToClaim | Cmd::RawEvent => go_to(app),
        Cmd::Clean => clean(app),
        _ => return None,
    })
}

/// Enter: the selected entry's row, or where its file is.
fn go_to(app: &mut App) -> bool {
    let Some(h) = app.selected_hazard() else {
        return false;
    };
    let path = crate::sanitize::sanitize(&h.path().to_string_lossy()).into_owned();
    if let Some(c) = h.copy() {
        let host = crate::sanitize::sanitize(&c.host_id).into_owned();
        app.say(
            Level::Info,
            format!("{path} is a file on host {host}: doctor there acts on it"),
        );
        return true;
    }
    match app.row_of_hazard(&h) {
        Some(i) => {
            app.modes.close_overlay();
            app.table.selected = i;
            app.table.detail_scroll = 0;
            app.focus = Pane::Table;
            app.refresh_selected_why();
            scroll_into_view(app);
        }
        None => app.say(
            Level::Info,
            format!(
                "{}: {path} (no claim row: {})",
                crate::sanitize::sanitize(h.kind.name()),
                crate::sanitize::sanitize(&h.detail)
            ),
        ),
    }
    true
}

/// Is there anything here `x` would clean?
fn has_litter(app: &App) -> bool {
    app.hazard_entries()
        .iter()
        .any(|h| h.copy().is_none() && h.kind.cleanable())
}

/// `x`: the clean, when the selected entry is what it removes (with no
/// litter at all, the clean says there is nothing to clean).
fn clean(app: &mut App) -> bool {
    if let Some(why) = super::run_cmd::refusal(app, Cmd::Clean) {
        app.say(Level::Error, why);
        return true;
    }
    match app.selected_hazard() {
        Some(h) if h.copy().is_some() => app.say(
            Level::Info,
            "a published hazard is a file on another machine: its own doctor cleans it",
        ),
        // With litter in the list, the operator meant some other entry.
        Some(h) if !h.kind.cleanable() && has_litter(app) => app.say(
            Level::Info,
            format!(
                "a {} is not abandoned litter: j/k select a mutex corpse or temp litter \
                 for x (Enter goes to this one's row, where F force-releases a claim)",
                crate::sanitize::sanitize(h.kind.name())
            ),
        ),
        // The entry alone, asked about first.
        Some(h) if h.kind.cleanable() => {
            app.modes.pop_if(|l| {
                matches!(
                    l,
                    Layer::Overlay {
                        which: Overlay::Hazards,
                        ..
                    }
                )
            });
            app.modes
                .push(Layer::Dialog(Dialog::CleanOne(Box::new(h.clone()))));
        }
        _ => {
            start_clean(app);
        }
    }
    true
}
