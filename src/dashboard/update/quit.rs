//! Leaving the dashboard. Claims taken here are bound to this process:
//! quitting turns them Suspect (blocked until their TTL runs out) or
//! Stale, so every way out — `q`, F10, `:quit`, Ctrl-C — asks first while
//! one is held. Ctrl-C twice within a second is the way out that does not
//! ask: what a hand that means it does.

use super::effects::Effects;
use crate::dashboard::action::Verb;
use crate::dashboard::model::{App, Dialog, Layer, Level, QuitConfirm, RowAt, INTERRUPT_AGAIN_MS};
use ratatui::crossterm::event::{KeyCode, KeyEvent};

/// `q`: quit, unless claims taken here would be orphaned by it — then ask.
pub(super) fn request_quit(app: &mut App, fx: &mut Effects) -> bool {
    let (roots, keys): (Vec<usize>, Vec<String>) = app.own_claims_by_root().into_iter().unzip();
    if keys.is_empty() {
        fx.quit = true;
        return false;
    }
    // Asked again over the question itself: it is already there.
    if !matches!(app.modes.top(), Some(Layer::Dialog(Dialog::Quit(_)))) {
        app.modes
            .push(Layer::Dialog(Dialog::Quit(QuitConfirm { keys, roots })));
    }
    true
}

/// Ctrl-C at `at` (epoch ms): the second within [`INTERRUPT_AGAIN_MS`]
/// quits without asking; otherwise it asks as `q` does.
pub(super) fn interrupt(app: &mut App, at: i64, fx: &mut Effects) -> bool {
    let again = app
        .interrupted_at
        .is_some_and(|first| (0..=INTERRUPT_AGAIN_MS).contains(&(at - first)));
    app.interrupted_at = Some(at);
    if again {
        fx.quit = true;
        return false;
    }
    request_quit(app, fx)
}

/// The quit question: r releases every claim taken here and quits once
/// they are done, k quits keeping them, anything else asks again.
pub(super) fn quit_key(app: &mut App, q: QuitConfirm, ev: &KeyEvent, fx: &mut Effects) -> bool {
    match ev.code {
        KeyCode::Char('r') | KeyCode::Char('R') => {
            let n = q.keys.len();
            for (i, key) in q.keys.into_iter().enumerate() {
                let op = Verb::Release {
                    key,
                    holder: app.operator.clone(),
                };
                let root = q.roots.get(i).copied().unwrap_or(0);
                match app.route(RowAt { root, host: None }, op) {
                    Ok(op) => fx.ops.push(op),
                    Err(why) => app.say(Level::Error, why),
                }
            }
            app.quit_after = Some(n);
            app.say(
                Level::Info,
                format!(
                    "releasing {} before quitting…",
                    crate::claims::words::count(n, "claim")
                ),
            );
            true
        }
        KeyCode::Char('k') | KeyCode::Char('K') => {
            fx.quit = true;
            false
        }
        _ => {
            app.modes.push(Layer::Dialog(Dialog::Quit(q)));
            false
        }
    }
}
