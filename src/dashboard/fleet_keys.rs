//! The dashboard's keys on the fleet's rows: what F, r and n say on a row
//! an offline host last published (nothing can be done there), and `D`,
//! which forgets an offline host — the same library call as
//! `claimtop fleet forget HOST`, behind a confirmation.

use super::action::Op;
use super::app::{App, Dialog, Level};
use crate::sanitize::sanitize;
use crate::store::fleet::Forgot;
use crate::store::host_names::{forget_named, ForgetError};
use crate::store::Store;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

/// The question `D` asks before an offline host is forgotten.
#[derive(Debug, Clone, PartialEq)]
pub struct ForgetConfirm {
    pub host_id: String,
    /// As the hosts line names it.
    pub label: String,
    pub last_seen_ms: i64,
    /// Its rows the table shows now (its last known claims).
    pub rows: usize,
}

/// F, r or n on a row its offline host last published: say why nothing
/// can be done (true: the key is spent).
pub fn refused(app: &mut App) -> bool {
    let why = app
        .selected_status()
        .and_then(|s| super::fleet_view::refuse_last_known(app, s));
    match why {
        Some(why) => {
            app.say(Level::Error, why);
            true
        }
        None => false,
    }
}

/// `D`: ask to forget the selected row's host, if it is offline.
pub fn start_forget(app: &mut App) -> bool {
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
pub fn forget_key(app: &mut App, f: ForgetConfirm, ev: &KeyEvent) -> bool {
    if !matches!(ev.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
        app.overlays.dialog = Some(Dialog::ForgetHost(f));
        return false;
    }
    app.say(
        Level::Info,
        format!("forgetting host {}…", sanitize(&f.label)),
    );
    app.pending.push(Op::ForgetHost {
        host_id: f.host_id,
        label: f.label,
    });
    true
}

/// The confirmation's words, each line sanitized (a host named itself).
pub fn dialog_lines(f: &ForgetConfirm) -> Vec<String> {
    vec![
        format!(
            "Forget host {} (machine id {})?",
            sanitize(&f.label),
            sanitize(&f.host_id)
        ),
        format!(
            "It is offline, last seen {}. Its record, its {} last known and its mirrored \
             events leave the store, as `claimtop fleet forget` does; its own roots are \
             never touched. Refused if its publisher is back meanwhile.",
            crate::time::utc_hms(f.last_seen_ms),
            crate::claims::words::count(f.rows, "claim")
        ),
        "y forget it · Esc keep it".to_string(),
    ]
}

/// Run `Op::ForgetHost` on the store: (was it forgotten, the words).
pub fn run_forget(store: &dyn Store, host_id: &str, label: &str) -> (bool, String) {
    let host = sanitize(label).into_owned();
    let Some(fleet) = store.fleet() else {
        return (false, "this store has no publishing hosts".to_string());
    };
    match forget_named(fleet, host_id) {
        Ok((_, Forgot::Forgotten { removed })) => (
            true,
            format!(
                "forgot host {host}: {} removed from the store (its own roots are untouched)",
                crate::claims::words::count(removed.max(0) as usize, "key")
            ),
        ),
        Ok((_, Forgot::Online { .. })) => (
            false,
            format!("host {host} is online again: nothing was removed"),
        ),
        Ok((_, Forgot::Unknown)) => (false, format!("host {host} had already left the store")),
        Err(ForgetError::Name(e)) => (false, sanitize(&e.to_string()).into_owned()),
        Err(ForgetError::Store(e)) => (false, format!("forget host {host} failed: {e}")),
    }
}
