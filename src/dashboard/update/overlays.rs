//! Keys over an overlay (help, hazards, a claim in full, the timeline):
//! each scrolls and closes with the keys its title names.

use super::commands::{command, copy_key, request_quit};
use super::effects::Effects;
use super::rows::page;
use super::whole_log as logview;
use crate::dashboard::keys::{self, Cmd};
use crate::dashboard::model::{App, Overlay};
use ratatui::crossterm::event::KeyEvent;

/// Scroll the open overlay, never past its last line.
pub(super) fn scroll_overlay(app: &mut App, delta: i32) -> bool {
    let max = i32::from(crate::dashboard::view::overlay_max_scroll(app));
    let before = app.overlays.scroll;
    app.overlays.scroll = (i32::from(before).saturating_add(delta)).clamp(0, max) as u16;
    app.overlays.scroll != before
}

pub(super) fn overlay_key(app: &mut App, ov: Overlay, ev: KeyEvent, fx: &mut Effects) -> bool {
    if ov == Overlay::Timeline {
        return match logview::timeline_key(app, &ev) {
            None => true,
            Some(Cmd::Quit) => {
                app.overlays.open = None;
                request_quit(app, fx)
            }
            Some(Cmd::AsOfCursor) => super::asof::open(app, app.timeline.cursor, fx),
            Some(cmd @ (Cmd::Help | Cmd::Suspend | Cmd::Pause)) => command(app, cmd, fx),
            Some(_) => false,
        };
    }
    let cmd = keys::lookup(app.focus, &ev, &app.key_overrides);
    match cmd {
        Some(Cmd::Quit) => {
            app.overlays.open = None;
            request_quit(app, fx)
        }
        Some(Cmd::Close) => {
            app.overlays.open = None;
            true
        }
        Some(Cmd::Help) if ov == Overlay::Help => {
            app.overlays.open = None;
            true
        }
        Some(Cmd::Messages) if ov == Overlay::Messages => {
            app.overlays.open = None;
            true
        }
        Some(Cmd::Hazards) if ov == Overlay::Hazards => {
            app.overlays.open = None;
            true
        }
        Some(Cmd::Open) if ov == Overlay::Claim => {
            app.overlays.open = None;
            true
        }
        Some(Cmd::Copy) if ov == Overlay::Claim => copy_key(app, fx),
        Some(Cmd::Clean) if ov == Overlay::Hazards => command(app, Cmd::Clean, fx),
        Some(Cmd::Up) => scroll_overlay(app, -1),
        Some(Cmd::Down) => scroll_overlay(app, 1),
        Some(Cmd::PageUp) => scroll_overlay(app, -(page(app) as i32)),
        Some(Cmd::PageDown) => scroll_overlay(app, page(app) as i32),
        Some(Cmd::Top) => scroll_overlay(app, i32::MIN / 2),
        Some(Cmd::Bottom) => scroll_overlay(app, i32::MAX / 2),
        _ => false,
    }
}
