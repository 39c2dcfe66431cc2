//! Keys in a dialog: the forms' fields, the confirmations, and the op each
//! one hands the worker when it is confirmed.

use super::effects::Effects;
use crate::claims::{parse_ttl_ms, ClaimState};
use crate::dashboard::action::{ForceOptsShown, Op, Verb};
use crate::dashboard::model::{
    AcquireForm, App, Dialog, ForceConfirm, Layer, Level, RenewForm, RowAt,
};
use ratatui::crossterm::event::{KeyCode, KeyEvent};

/// A key while a dialog is on top: Esc closes any of them; the rest is the
/// dialog's own, and what it confirms leaves as an op.
pub(super) fn dialog_key(app: &mut App, ev: KeyEvent, fx: &mut Effects) -> bool {
    let Some(Layer::Dialog(dialog)) = app.modes.pop_if(|l| matches!(l, Layer::Dialog(_))) else {
        return false;
    };
    if ev.code == KeyCode::Esc {
        return true;
    }
    let (next, op) = match dialog {
        Dialog::Acquire(f) => acquire_key(app, f, &ev),
        Dialog::Renew(f) => {
            let root = f.root;
            let (next, op) = renew_key(f, &ev, &app.operator);
            (next, op.map(|op| app.route(RowAt { root, host: None }, op)))
        }
        Dialog::ForceRelease(f) => {
            let (root, host) = (f.root, f.host.clone());
            let (next, op) = force_key(f, &ev, &app.operator);
            let at = RowAt {
                root,
                host: host.as_ref(),
            };
            (next, op.map(|op| app.route(at, op)))
        }
        Dialog::Quit(q) => return super::quit::quit_key(app, q, &ev, fx),
        Dialog::ForgetHost(f) => return super::fleet::forget_key(app, f, &ev, fx),
        Dialog::Bulk(c) => {
            if let Some(next) = super::bulk::bulk_key(app, c, &ev, fx) {
                app.modes.push(Layer::Dialog(next));
            }
            return true;
        }
        Dialog::ClearMarks(c) => return super::bulk::clear_marks_key(app, c, &ev),
        Dialog::Clean(c) => match ev.code {
            KeyCode::Char('y') | KeyCode::Char('Y') if app.origins.several() => {
                return super::roots::clean_each_root(app, &c, fx);
            }
            KeyCode::Char('y') | KeyCode::Char('Y') => {
                let root = app.origins.first_that(|c| c.repair);
                (None, Some(Ok(app.origins.route(root, Verb::Clean))))
            }
            _ => (Some(Dialog::Clean(c)), None),
        },
        Dialog::CleanOne(h) => match ev.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => {
                // The entry's own root, among several: it is cleaned there.
                let root = app.origins.of_path(h.path()).unwrap_or(0);
                (None, Some(Ok(app.origins.route(root, Verb::CleanOne(h)))))
            }
            _ => (Some(Dialog::CleanOne(h)), None),
        },
    };
    if let Some(d) = next {
        app.modes.push(Layer::Dialog(d));
    }
    match op {
        Some(Ok(op)) => {
            app.say(Level::Info, format!("{} {}…", op.name(), op.key()));
            fx.ops.push(op);
        }
        Some(Err(why)) => app.say(Level::Error, why),
        None => {}
    }
    true
}

pub(super) type Step = (Option<Dialog>, Option<Verb>);

/// A step whose op may not find its way to a store: why, in words.
type Routed = (Option<Dialog>, Option<Result<Op, String>>);

fn acquire_key(app: &App, mut f: AcquireForm, ev: &KeyEvent) -> Routed {
    let n = f.field_count();
    match ev.code {
        KeyCode::Tab | KeyCode::Down => f.field = (f.field + 1) % n,
        KeyCode::BackTab | KeyCode::Up => f.field = (f.field + n - 1) % n,
        KeyCode::Enter => {
            let routed = acquire_op(&f).and_then(|op| {
                // An acquire has nothing to do with the selected row: it
                // goes to the origin named, else to the one that takes claims.
                let root = match &f.root {
                    Some(typed) => super::roots::chosen_root(&app.origins, typed.value())?,
                    None => app.origins.takers().next().unwrap_or(0),
                };
                app.route(RowAt { root, host: None }, op)
            });
            return match routed {
                Ok(op) => (None, Some(Ok(op))),
                Err(e) => {
                    f.error = Some(e);
                    (Some(Dialog::Acquire(f)), None)
                }
            };
        }
        _ => {
            if f.field_mut().key(ev) {
                f.error = None;
            }
        }
    }
    (Some(Dialog::Acquire(f)), None)
}

/// Validate the form the way the CLI validates its flags.
pub(super) fn acquire_op(f: &AcquireForm) -> Result<Verb, String> {
    let key = f.key.trim();
    let holder = f.holder.trim();
    if key.is_empty() {
        return Err("key is required".into());
    }
    if holder.is_empty() {
        return Err("holder is required".into());
    }
    let ttl_ms = match f.ttl.trim() {
        "" => None,
        t => Some(parse_ttl_ms(t).ok_or_else(|| {
            format!("TTL {t:?} is not a duration (1h, 30m, 90s; empty = PID-bound)")
        })?),
    };
    if let Some(t) = ttl_ms {
        ttl_in_range(t)?;
    }
    crate::claims::validate_inputs(key, holder, ttl_ms).map_err(|e| e.to_string())?;
    Ok(Verb::Acquire {
        key: key.to_string(),
        holder: holder.to_string(),
        ttl_ms,
        reason: Some(f.reason.trim().to_string()).filter(|r| !r.is_empty()),
    })
}

pub(super) fn renew_key(mut f: RenewForm, ev: &KeyEvent, operator: &str) -> Step {
    if f.confirming {
        return match ev.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => renew_op(f, operator),
            _ => {
                f.confirming = false;
                (Some(Dialog::Renew(f)), None)
            }
        };
    }
    match ev.code {
        KeyCode::Enter => {
            if let Err(e) = renew_ttl(&f) {
                f.error = Some(e);
            } else if f.foreign || f.state == ClaimState::Suspect {
                // Another's claim, or one whose holder is not provably
                // alive: the renewal keeps the key blocked for someone
                // who may never come back, so it is asked again.
                f.confirming = true;
            } else {
                return renew_op(f, operator);
            }
        }
        _ => {
            if f.ttl.key(ev) {
                f.error = None;
            }
        }
    }
    (Some(Dialog::Renew(f)), None)
}

pub(super) fn renew_ttl(f: &RenewForm) -> Result<i64, String> {
    let ttl = parse_ttl_ms(&f.ttl)
        .ok_or_else(|| format!("TTL {:?} is not a duration (1h, 30m, 90s)", f.ttl.trim()))?;
    ttl_in_range(ttl)?;
    crate::claims::validate_inputs(&f.key, &f.holder, Some(ttl)).map_err(|e| e.to_string())?;
    Ok(ttl)
}

/// The protocol's TTL bounds, worded for a person typing a duration.
pub(super) fn ttl_in_range(ttl_ms: i64) -> Result<(), String> {
    use crate::claims::{ClaimError, MAX_TTL_MS, MIN_TTL_MS};
    if (MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl_ms) {
        Ok(())
    } else {
        Err(ClaimError::TtlOutOfRange(ttl_ms).to_string())
    }
}

/// The renewal asked for; on someone else's claim it names the operator,
/// so the audit log says who kept it alive.
pub(super) fn renew_op(mut f: RenewForm, operator: &str) -> Step {
    match renew_ttl(&f) {
        Ok(ttl_ms) => (
            None,
            Some(Verb::Renew {
                operator: f.foreign.then(|| operator.to_string()),
                key: f.key,
                holder: f.holder,
                ttl_ms,
            }),
        ),
        Err(e) => {
            f.error = Some(e);
            f.confirming = false;
            (Some(Dialog::Renew(f)), None)
        }
    }
}

pub(super) fn force_key(mut f: ForceConfirm, ev: &KeyEvent, operator: &str) -> Step {
    let confirmed = if f.needs_typed_key() {
        if ev.code == KeyCode::Enter {
            if f.typed.value() == f.key {
                true
            } else {
                f.error = Some("the typed key does not match; nothing done".into());
                false
            }
        } else {
            if f.typed.key(ev) {
                f.error = None;
            }
            false
        }
    } else {
        matches!(ev.code, KeyCode::Char('y') | KeyCode::Char('Y'))
    };
    if !confirmed {
        return (Some(Dialog::ForceRelease(f)), None);
    }
    let op = Verb::ForceRelease {
        opts: ForceOptsShown {
            expect_holder: f.holder.clone(),
            expect_acquired_at: f.acquired_at,
            operator: operator.to_string(),
            // What the typed key confirmed: the CLI's --allow-live.
            allow_live: f.needs_typed_key(),
        },
        key: f.key,
    };
    (None, Some(op))
}
