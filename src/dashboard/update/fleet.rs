//! The keys on the fleet's rows: what F, r and n say on a row an offline
//! host last published (nothing can be done there), and `D`, which forgets
//! an offline host — the same library call as `claimtop fleet forget
//! HOST`, behind a confirmation.

use super::effects::Effects;
use crate::claims::{ClaimState, Status};
use crate::dashboard::action::Verb;
use crate::dashboard::model::{App, Dialog, ForgetConfirm, Layer, Level};
use crate::sanitize::sanitize;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

/// F, r or n on a row its offline host last published: say why nothing
/// can be done (true: the key is spent).
pub(super) fn refused(app: &mut App) -> bool {
    let why = app
        .selected_status()
        .and_then(|s| refuse_last_known(app, s));
    match why {
        Some(why) => {
            app.say(Level::Error, why);
            true
        }
        None => false,
    }
}

/// `D`: ask to forget the selected row's host, if it is offline.
pub(super) fn start_forget(app: &mut App) -> bool {
    let origin = app.selected_origin();
    let Some(origin) = origin else {
        app.say(
            Level::Info,
            "D forgets an offline publishing host: select one of its rows (a last known claim)",
        );
        return true;
    };
    let Some(view) = app.store.as_ref() else {
        return true;
    };
    let Some(host) = view.fleet.host(&origin.host_id) else {
        return true;
    };
    let label = sanitize(&host.label).into_owned();
    if host.online {
        app.say(
            Level::Error,
            format!(
                "host {label} is online: only an offline host can be forgotten (stop its publisher first)"
            ),
        );
        return true;
    }
    let rows = view.fleet.counts.get(&host.host_id).copied().unwrap_or(0);
    app.modes
        .push(Layer::Dialog(Dialog::ForgetHost(ForgetConfirm {
            host_id: host.host_id.clone(),
            label: host.label.clone(),
            last_seen_ms: host.last_seen_ms,
            rows,
        })));
    true
}

/// A key in the confirmation: y forgets, anything else asks again (Esc
/// closes it, as every dialog).
pub(super) fn forget_key(app: &mut App, f: ForgetConfirm, ev: &KeyEvent, fx: &mut Effects) -> bool {
    if !matches!(ev.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
        app.modes.push(Layer::Dialog(Dialog::ForgetHost(f)));
        return false;
    }
    app.say(
        Level::Info,
        format!("forgetting host {}…", sanitize(&f.label)),
    );
    let site = app.origins.first_that(|c| c.fleet);
    let verb = Verb::ForgetHost {
        host_id: f.host_id,
        label: f.label,
    };
    fx.ops.push(app.origins.route(site, verb));
    true
}

/// Why F, r and n do nothing on a last known row: its host is offline, so
/// nobody can carry anything out there; `fleet forget` (or D) removes it.
fn refuse_last_known(app: &App, s: &Status) -> Option<String> {
    if s.state != ClaimState::LastKnown {
        return None;
    }
    let o = app.selected_origin()?;
    let host = crate::sanitize::sanitize(&o.hostname);
    Some(format!(
        "{} is what host {host} last published: the host is offline, so nobody can \
         release or force-release it there (D, or `claimtop fleet forget {host}`, \
         removes the offline host and its rows)",
        crate::sanitize::sanitize(&s.key)
    ))
}
