//! Keys in a dialog: the forms' fields, the confirmations, and the op each
//! one hands the worker when it is confirmed.

use super::effects::Effects;
use crate::claims::parse_ttl_ms;
use crate::dashboard::action::{ForceOptsShown, Op};
use crate::dashboard::model::{
    AcquireForm, App, Dialog, ForceConfirm, Level, QuitConfirm, RenewForm,
};
use crate::dashboard::roots::ShownRoots;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

pub(super) fn dialog_key(app: &mut App, ev: KeyEvent, fx: &mut Effects) -> bool {
    if ev.code == KeyCode::Esc {
        app.overlays.dialog = None;
        return true;
    }
    let Some(dialog) = app.overlays.dialog.take() else {
        return false;
    };
    let (next, op) = match dialog {
        Dialog::Acquire(f) => acquire_key(f, &ev, &app.roots),
        Dialog::Renew(f) => {
            let root = f.root;
            let (next, op) = renew_key(f, &ev, &app.operator);
            (next, op.map(|op| app.roots.route(root, op)))
        }
        Dialog::ForceRelease(f) => {
            let (root, host) = (f.root, f.host.clone());
            let (next, op) = force_key(f, &ev, &app.operator);
            let op = match (op, host) {
                (Some(Op::ForceRelease { key, opts }), Some(o)) => Some(Op::AskHost {
                    host_id: o.host_id,
                    hostname: o.hostname,
                    root_id: o.root_id,
                    key,
                    opts,
                }),
                (op, _) => op.map(|op| app.roots.route(root, op)),
            };
            (next, op)
        }
        Dialog::Quit(q) => return quit_key(app, q, &ev, fx),
        Dialog::ForgetHost(f) => return super::fleet::forget_key(app, f, &ev, fx),
        Dialog::Bulk(c) => {
            app.overlays.dialog = super::bulk::bulk_key(app, c, &ev, fx);
            return true;
        }
        Dialog::Clean(c) => match ev.code {
            KeyCode::Char('y') | KeyCode::Char('Y') if app.roots.is_several() => {
                return super::roots::clean_each_root(app, &c, fx);
            }
            KeyCode::Char('y') | KeyCode::Char('Y') => (None, Some(Op::Clean)),
            _ => (Some(Dialog::Clean(c)), None),
        },
    };
    app.overlays.dialog = next;
    if let Some(op) = op {
        app.say(Level::Info, format!("{} {}…", op.verb(), op.key()));
        fx.ops.push(op);
    }
    true
}

/// The quit question: r releases every claim taken here and quits once
/// they are done, k quits keeping them, anything else asks again.
pub(super) fn quit_key(app: &mut App, q: QuitConfirm, ev: &KeyEvent, fx: &mut Effects) -> bool {
    match ev.code {
        KeyCode::Char('r') | KeyCode::Char('R') => {
            let n = q.keys.len();
            for (i, key) in q.keys.into_iter().enumerate() {
                let op = Op::Release {
                    key,
                    holder: app.operator.clone(),
                };
                let root = q.roots.get(i).copied().unwrap_or(0);
                fx.ops.push(app.roots.route(root, op));
            }
            app.quit_after = Some(n);
            app.say(
                Level::Info,
                format!("releasing {n} claim{} before quitting…", plural(n)),
            );
            true
        }
        KeyCode::Char('k') | KeyCode::Char('K') => {
            fx.quit = true;
            false
        }
        _ => {
            app.overlays.dialog = Some(Dialog::Quit(q));
            false
        }
    }
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub(super) type Step = (Option<Dialog>, Option<Op>);

pub(super) fn acquire_key(mut f: AcquireForm, ev: &KeyEvent, roots: &ShownRoots) -> Step {
    let n = f.field_count();
    match ev.code {
        KeyCode::Tab | KeyCode::Down => f.field = (f.field + 1) % n,
        KeyCode::BackTab | KeyCode::Up => f.field = (f.field + n - 1) % n,
        KeyCode::Enter => {
            let routed = acquire_op(&f).and_then(|op| match &f.root {
                Some(typed) => {
                    super::roots::chosen_root(roots, typed.value()).map(|i| roots.route(i, op))
                }
                None => Ok(op),
            });
            return match routed {
                Ok(op) => (None, Some(op)),
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
pub(super) fn acquire_op(f: &AcquireForm) -> Result<Op, String> {
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
    Ok(Op::Acquire {
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
            } else if f.foreign {
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
            Some(Op::Renew {
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
    let op = Op::ForceRelease {
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
