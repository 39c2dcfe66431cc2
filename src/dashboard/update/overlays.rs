//! Keys over an overlay (help, hazards, a claim in full, the messages, the
//! timeline): each scrolls and closes with the keys its title names.

use super::commands::{copy_key, start_clean};
use super::effects::Effects;
use super::rows::page;
use super::whole_log as logview;
use super::{quit, rows};
use crate::dashboard::keys::{self, Cmd};
use crate::dashboard::model::{App, Overlay};
use ratatui::crossterm::event::KeyEvent;

/// Scroll the open overlay, never past its last line.
pub(super) fn scroll_overlay(app: &mut App, delta: i32) -> bool {
    let max = i32::from(crate::dashboard::view::overlay_max_scroll(app));
    let before = app.modes.overlay_scroll();
    let after = (i32::from(before).saturating_add(delta)).clamp(0, max) as u16;
    app.modes.set_overlay_scroll(after);
    after != before
}

/// A key while an overlay is on top.
pub(super) fn overlay_key(app: &mut App, ev: KeyEvent, fx: &mut Effects) -> bool {
    let Some(ov) = app.modes.overlay() else {
        return false;
    };
    if ov == Overlay::Timeline {
        return match logview::timeline_key(app, &ev, fx) {
            None => true,
            Some(Cmd::Quit) => quit::request_quit(app, fx),
            Some(Cmd::AsOfCursor) => super::asof::open(app, app.timeline.cursor, fx),
            Some(Cmd::Help) => {
                app.seen_help = true;
                app.modes.open_overlay(Overlay::Help);
                true
            }
            Some(Cmd::Pause) => {
                rows::toggle_pause(app);
                true
            }
            Some(Cmd::Suspend) => {
                fx.suspend = true;
                false
            }
            Some(_) => false,
        };
    }
    let cmd = keys::lookup(app.focus, &ev, &app.key_overrides);
    match cmd {
        Some(Cmd::Quit) => quit::request_quit(app, fx),
        Some(Cmd::Close) => app.modes.close_overlay(),
        Some(Cmd::Help) if ov == Overlay::Help => app.modes.close_overlay(),
        Some(Cmd::Messages) if ov == Overlay::Messages => app.modes.close_overlay(),
        Some(Cmd::Hazards) if ov == Overlay::Hazards => app.modes.close_overlay(),
        Some(Cmd::Open) if ov == Overlay::Claim => app.modes.close_overlay(),
        Some(Cmd::Copy) if ov == Overlay::Claim => copy_key(app, fx),
        Some(Cmd::Clean) if ov == Overlay::Hazards => {
            match super::modes::refusal(app, Cmd::Clean) {
                Some(why) => app.say(crate::dashboard::model::Level::Error, why),
                None => {
                    start_clean(app);
                }
            }
            true
        }
        Some(Cmd::Up) => scroll_overlay(app, -1),
        Some(Cmd::Down) => scroll_overlay(app, 1),
        Some(Cmd::PageUp) => scroll_overlay(app, -(page(app) as i32)),
        Some(Cmd::PageDown) => scroll_overlay(app, page(app) as i32),
        Some(Cmd::Top) => scroll_overlay(app, i32::MIN / 2),
        Some(Cmd::Bottom) => scroll_overlay(app, i32::MAX / 2),
        _ => false,
    }
}
