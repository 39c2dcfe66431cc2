//! The "as of" view's transitions: asking the events service for the log
//! around an instant, taking the answer in, moving in it, going back.

use super::effects::Effects;
use crate::dashboard::model::asof::AsOf;
use crate::dashboard::model::{App, Level, Overlay};
use crate::events::asof::{held_at, reaches, window_around, window_of};
use crate::events::service::{Reply, Request};

/// Show the table as of `at`: the log around it is asked for, and the
/// table says so until it comes.
pub fn open(app: &mut App, at: i64, fx: &mut Effects) -> bool {
    let window = window_around(at);
    app.asof = Some(AsOf {
        at,
        window,
        step: 0,
        rows: None,
        selected: 0,
    });
    if app.overlays.open == Some(Overlay::Timeline) {
        app.overlays.open = None;
    }
    fx.log.push(Request::Window {
        from: window.0,
        to: window.1,
    });
    let when = crate::time::clock(at, app.local_time, "%Y-%m-%d %H:%M:%S");
    app.say(
        Level::Info,
        format!("the claims as of {when}, from the events log (G or Esc: back to now)"),
    );
    true
}

/// Back to the claims as they are now.
pub fn close(app: &mut App) -> bool {
    app.asof.take().is_some()
}

/// A reply of the events service: the window this view asked for fills
/// it (the timeline takes only the windows it asked for itself). A window
/// that did not reach back to the instant (a busy log's, cut to what the
/// history reads at once) is asked again, narrower.
pub fn on_reply(app: &mut App, reply: &Reply, fx: &mut Effects) -> bool {
    let Some(v) = app.asof.as_mut() else {
        return false;
    };
    match reply {
        Reply::Window { from, to, tenures } if (*from, *to) == v.window && v.rows.is_none() => {
            v.step += 1;
            match window_of(v.at, v.step).filter(|_| !reaches(tenures, v.at)) {
                Some(narrower) => {
                    v.window = narrower;
                    fx.log.push(Request::Window {
                        from: narrower.0,
                        to: narrower.1,
                    });
                    false
                }
                None => {
                    v.rows = Some(held_at(tenures, v.at));
                    v.selected = 0;
                    true
                }
            }
        }
        _ => false,
    }
}

/// j/k and the page keys move among the rows shown as of then.
pub fn move_by(app: &mut App, delta: isize) -> bool {
    let Some(v) = app.asof.as_mut() else {
        return false;
    };
    let n = v.rows.as_ref().map_or(0, Vec::len);
    let before = v.selected;
    v.selected = (v.selected as isize)
        .saturating_add(delta)
        .clamp(0, n.saturating_sub(1) as isize) as usize;
    v.selected != before
}
