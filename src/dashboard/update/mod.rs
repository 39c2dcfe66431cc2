//! Model transitions. No terminal and no I/O here: every function takes the
//! model and a message and says whether the screen must be redrawn. What
//! the disk and the process table say arrives as data (see `collect`); the
//! clock comes in with `Tick`.

pub(crate) mod asof;
mod bulk;
mod commands;
mod detail_cmds;
mod dialogs;
mod effects;
mod event_verbs;
mod events_cmds;
mod filter;
mod fleet;
mod handled;
mod hazards;
mod ingest;
mod modes;
mod mouse;
mod overlays;
mod prompt;
mod quit;
pub mod roots;
mod rows;
mod run_cmd;
mod save;
mod store;
mod table_cmds;
pub mod whole_log;

pub use crate::dashboard::action::Action;
use crate::dashboard::model::{App, Level};
pub use effects::{Effects, Save};
use ingest::on_op_result;
pub use ingest::{on_mirror, on_tick, visible_signature};
use modes::on_key;
use mouse::on_mouse;
pub use prompt::run as run_command_line;
pub use rows::scroll_into_view;
use whole_log as logview;

/// Apply one message; what it asks of the world outside, and whether
/// something visible changed.
pub fn update(app: &mut App, action: Action) -> Effects {
    let mut fx = Effects::default();
    fx.redraw = step(app, action, &mut fx);
    fx
}

/// One message's transition; true when something visible changed.
fn step(app: &mut App, action: Action, fx: &mut Effects) -> bool {
    match action {
        Action::Key(ev) => {
            let redraw = on_key(app, ev, fx);
            if redraw {
                app.refresh_selected_why();
            }
            redraw
        }
        Action::Interrupt(at) => quit::interrupt(app, at, fx),
        Action::Mouse(m) => {
            let redraw = on_mouse(app, m, fx);
            if redraw {
                app.refresh_selected_why();
            }
            redraw
        }
        Action::Update(u) => {
            let u = *u;
            let at = usize::from(u.at.0);
            let (hosts, link, summary) = u
                .facts
                .map_or((None, None, None), |f| (f.hosts, f.link, f.summary));
            // The hosts first: a copy's row is named by them.
            let mut shown = hosts.is_some_and(|h| store::on_hosts(app, at, h));
            shown |= summary.is_some_and(|s| store::on_summary(app, at, &s));
            if let Some(delta) = u.delta {
                shown |= on_mirror(app, at, delta);
                shown |= rows::keep_marked_tenures(app);
            }
            // Every lane says each tick; the clock moves with the first.
            if let Some(t) = u.tick.filter(|t| *t > app.now) {
                shown |= step(app, Action::Tick(t), fx);
            }
            // The link is judged at the newest clock.
            shown | link.is_some_and(|l| store::on_link(app, at, l))
        }
        Action::Log(reply) => {
            let asof = asof::on_reply(app, &reply);
            logview::on_log(app, *reply, fx) || asof
        }
        Action::Tick(now) => {
            let table = on_tick(app, now);
            logview::on_tick(app, now) || table
        }
        Action::Resize(w, h) => {
            app.size = (w, h);
            scroll_into_view(app);
            true
        }
        Action::OpResult(r) => on_op_result(app, r, fx),
        Action::Warning(w) => {
            app.say(Level::Error, w);
            true
        }
        Action::Quit => {
            fx.quit = true;
            false
        }
        Action::News(at, news) => roots::on_news(app, usize::from(at.0), news, fx),
    }
}
