//! The keys on the fleet's rows: what F, r and n say on a row an offline
//! host last published (nothing can be done there), and `D`, which forgets
//! an offline host — the same library call as `claimtop fleet forget
//! HOST`, behind a confirmation.

use super::effects::Effects;
use crate::dashboard::action::Op;
use crate::dashboard::model::{App, Dialog, ForgetConfirm, Level};
use crate::sanitize::sanitize;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

/// F, r or n on a row its offline host last published: say why nothing
/// can be done (true: the key is spent).
pub(super) fn refused(app: &mut App) -> bool {
    let why = app
        .selected_status()
        .and_then(|s| crate::dashboard::fleet_view::refuse_last_known(app, s));
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
    let origin = app
        .selected_status()
        .and_then(|s| app.store.as_ref()?.fleet.origin(&s.file).cloned());
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
    app.overlays.dialog = Some(Dialog::ForgetHost(ForgetConfirm {
        host_id: host.host_id.clone(),
        label: host.label.clone(),
        last_seen_ms: host.last_seen_ms,
        rows,
    }));
    true
}

/// A key in the confirmation: y forgets, anything else asks again (Esc
/// closes it, as every dialog).
pub(super) fn forget_key(app: &mut App, f: ForgetConfirm, ev: &KeyEvent, fx: &mut Effects) -> bool {
    if !matches!(ev.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
        app.overlays.dialog = Some(Dialog::ForgetHost(f));
        return false;
    }
    app.say(
        Level::Info,
        format!("forgetting host {}…", sanitize(&f.label)),
    );
    fx.ops.push(Op::ForgetHost {
        host_id: f.host_id,
        label: f.label,
    });
    true
}
