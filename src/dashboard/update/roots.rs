//! Model transitions over the origins shown: each origin's events log
//! taken into the one pane (merged by time when several are named), and
//! verbs routed to the origin they act on (an origin's listing replacing
//! its rows alone is `update::on_mirror`'s).
//! Pure, like `update`: what the disk says arrives as data.

use super::effects::Effects;
use super::ingest::on_events_in;
use super::whole_log as logview;
use crate::dashboard::action::Verb;
use crate::dashboard::model::Origins;
use crate::dashboard::model::{App, CleanConfirm, Level};
use crate::events::history::pack_mark;
use crate::events::tail::Line;
use crate::store::LogNews;

/// What origin `i`'s events log said: lines for the pane (merged by time
/// among several origins' logs), a reset, or why it cannot be read.
pub fn on_news(app: &mut App, i: usize, news: LogNews, fx: &mut Effects) -> bool {
    let several = app.origins.several();
    // The whole-log views (timeline, browse) read every log as one, or
    // one origin's log: only the lines and resets of what they read
    // concern them.
    let set = match &news {
        LogNews::Lines { log, .. } | LogNews::Reset { log } | LogNews::Trouble { log, .. } => {
            app.events.browse.in_set(i, log)
        }
    };
    let whole = match app.events.browse.reads_a_set() {
        true => set.is_some(),
        false => !several || i == app.log_root,
    };
    match news {
        LogNews::Lines { lines, .. } => {
            let tail = on_events_in(app, several.then_some(i), &lines);
            let shown = match set.filter(|_| app.events.browse.reads_a_set()) {
                // Marked as the set marks its log's entries.
                Some(at) => {
                    let marked: Vec<_> = lines
                        .iter()
                        .map(|l| Line {
                            offset: pack_mark(at, l.offset),
                            ..l.clone()
                        })
                        .collect();
                    logview::on_set_lines(app, &marked)
                }
                None => whole && logview::on_lines(app, &lines),
            };
            tail || shown
        }
        LogNews::Reset { .. } => {
            if whole {
                logview::on_reset(app, fx);
            }
            if several {
                app.events.ring.clear_root(i);
            } else {
                app.events.ring.clear();
            }
            app.events.view.scroll = 0;
            app.events.view.new_while_scrolled = 0;
            !app.paused()
        }
        LogNews::Trouble { why, .. } => {
            let e = if several {
                format!("{}: {why}", app.origins.label(i))
            } else {
                why
            };
            let changed = app.events.error.as_deref() != Some(e.as_str());
            app.events.error = Some(e);
            changed
        }
    }
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
        fx.ops.push(app.origins.route(*i, Verb::Clean));
    }
    let names: Vec<&str> = roots.iter().map(|i| app.origins.label(*i)).collect();
    let msg = format!("clean {}…", names.join(", "));
    app.say(Level::Info, crate::sanitize::sanitize(&msg).into_owned());
    true
}
