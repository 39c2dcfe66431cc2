//! Model transitions that exist only when the dashboard watches several
//! roots: each root's events merged into one pane, and verbs routed to the
//! root they act on (a root's listing replacing its rows alone is
//! `update::on_mirror`'s).
//! Pure, like `update`: what the disk says arrives as data.

use super::effects::Effects;
use super::ingest::on_events_in;
use super::whole_log as logview;
use crate::dashboard::action::{Action, Op};
use crate::dashboard::model::Origins;
use crate::dashboard::model::{App, CleanConfirm, Level};

/// A message from root `i`'s events follower.
/// Anything else is handed back, to be taken as any root's.
pub fn in_root(app: &mut App, i: usize, action: Action, fx: &mut Effects) -> Result<bool, Action> {
    // The whole-log views (timeline, browse) read one root's log: only its
    // lines and resets concern them.
    let first = i == app.log_root;
    Ok(match action {
        Action::EventsAppended(lines) => {
            let tail = on_events_in(app, Some(i), &lines);
            let whole = first && logview::on_lines(app, &lines);
            tail || whole
        }
        Action::EventsReset => {
            if first {
                logview::on_reset(app, fx);
            }
            app.events.ring.clear_root(i);
            app.events.view.scroll = 0;
            app.events.view.new_while_scrolled = 0;
            !app.paused()
        }
        Action::EventsError(e) => {
            let e = format!("{}: {e}", app.origins.label(i));
            let changed = app.events.error.as_deref() != Some(e.as_str());
            app.events.error = Some(e);
            changed
        }
        other => return Err(other),
    })
}

/// The acquire form's root field: offered as the selected row's origin
/// when it takes claims (a published copy's does not: then the first that
/// does), and there only when there is a choice to make.
pub fn root_field(app: &App) -> Option<Box<crate::dashboard::model::Input>> {
    if !app.origins.several() {
        return None;
    }
    let selected = app.selected_status().map(|s| app.origins.of(s));
    let i = selected
        .filter(|i| app.origins.caps(*i).takes_claims)
        .or_else(|| app.origins.takers().next())
        .unwrap_or(0);
    Some(Box::new(app.origins.label(i).into()))
}

/// The root an operator typed into the acquire form, or why it is none.
pub fn chosen_root(roots: &Origins, typed: &str) -> Result<usize, String> {
    roots.find(typed).ok_or_else(|| {
        format!(
            "root {:?} is none of the roots shown: {}",
            typed.trim(),
            roots.labels().join(", ")
        )
    })
}

/// `x` confirmed over several roots: `doctor --fix` once in each root that
/// has something to clean, each through its own root's verbs.
pub fn clean_each_root(app: &mut App, c: &CleanConfirm, fx: &mut Effects) -> bool {
    let mut roots: Vec<usize> = c
        .hazards
        .iter()
        .filter_map(|h| app.origins.of_path(h.path()))
        .collect();
    roots.sort_unstable();
    roots.dedup();
    for i in &roots {
        fx.ops.push(app.origins.route(*i, Op::Clean));
    }
    let names: Vec<&str> = roots.iter().map(|i| app.origins.label(*i)).collect();
    let msg = format!("clean {}…", names.join(", "));
    app.say(Level::Info, crate::sanitize::sanitize(&msg).into_owned());
    true
}
