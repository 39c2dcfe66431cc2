//! Drawing the model. Nothing here changes the model; `draw` takes `&App`.
//!
//! Untrusted text reaches a cell only through [`safe`] / [`safe_path`]
//! (`cells.rs`): the one place the view calls the sanitiser.

pub(crate) mod asof;
pub mod browse;
mod bulk;
mod cells;
mod detail;
mod dialogs;
mod event_line;
mod events;
mod footer;
mod hazards;
mod header;
mod help;
pub mod layout;
mod messages;
mod nothing;
mod roots;
pub mod store;
pub mod table;
pub mod timeline;

use super::model::{App, Layer, Overlay};
pub use cells::{time_bucket, Theme};
use ratatui::layout::Alignment;
use ratatui::text::Span;
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

/// Draw the whole screen, then `scrub` it: whatever a view forgot to
/// sanitize still never reaches the terminal.
pub fn draw(frame: &mut Frame, app: &App) {
    draw_screen(frame, app);
    scrub(frame.buffer_mut());
}

/// The last guard before the terminal: a cell whose symbol holds an unsafe
/// character (a bidi override that ratatui keeps, since it drops only
/// controls) shows U+FFFD instead. Views still sanitize their text, which
/// shows each character escaped; this only makes a missed one harmless.
pub fn scrub(buf: &mut ratatui::buffer::Buffer) {
    for cell in buf.content.iter_mut() {
        let symbol = cell.symbol();
        let plain = symbol.bytes().all(|b| (0x20..0x7f).contains(&b));
        if !plain && symbol.chars().any(crate::sanitize::is_unsafe) {
            cell.set_symbol("\u{fffd}");
        }
    }
}

fn draw_screen(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if app.origins.is_empty() {
        return nothing::draw(frame, area, &Theme { color: app.color });
    }
    let Some(areas) = layout::areas(area, app.look()) else {
        too_small(frame, app);
        return;
    };
    let theme = Theme { color: app.color };
    if app.modes.layers().any(is_timeline) {
        // The timeline takes the whole screen: the panes under it are not
        // drawn at all.
        let keep = app.timeline_keeps();
        timeline::draw(
            frame,
            area,
            &app.timeline,
            &keep,
            app.shown_now(),
            app.local_time,
            &theme,
        );
        roots::log_root_note(frame, area, app, &theme);
    } else {
        draw_panes(frame, &areas, app, &theme);
    }
    // Every layer that draws over the screen, bottom first: each covers
    // what is under it.
    for layer in app.modes.layers() {
        match layer {
            Layer::Overlay { which, .. } => match which {
                Overlay::Help => help::draw_help(frame, area, app, &theme),
                Overlay::Hazards => help::draw_hazards(frame, area, app, &theme),
                Overlay::Claim => help::draw_claim(frame, area, app, &theme),
                Overlay::Messages => help::draw_messages(frame, area, app, &theme),
                Overlay::Timeline => {}
            },
            Layer::Dialog(d) => dialogs::draw(frame, area, d, app, &theme),
            Layer::Prompt(_)
            | Layer::Filter(_)
            | Layer::Search(_)
            | Layer::Browse
            | Layer::AsOf(_) => {}
        }
    }
}

fn is_timeline(l: &Layer) -> bool {
    matches!(
        l,
        Layer::Overlay {
            which: Overlay::Timeline,
            ..
        }
    )
}

/// The header, the three panes and the two bottom lines.
fn draw_panes(frame: &mut Frame, areas: &layout::Areas, app: &App, theme: &Theme) {
    header::draw(frame, areas.header, app, theme);
    // A zoomed layout leaves the other panes no room: they are not drawn.
    if !areas.table.is_empty() {
        if app.modes.asof().is_some() {
            asof::draw(frame, areas.table, app, theme);
        } else {
            table::draw(frame, areas.table, app, theme);
        }
    }
    if !areas.detail.is_empty() {
        detail::draw(frame, areas.detail, app, theme);
    }
    if !areas.events.is_empty() {
        events::draw(frame, areas.events, app, theme);
    }
    footer::draw_status(frame, areas.status, app, theme);
    footer::draw_keys(frame, areas.footer, app, theme);
    if app.events.browse.raw {
        browse::draw_raw(frame, frame.area(), &app.events.browse, theme);
    }
}

/// How far the detail pane can scroll at the model's size and focus.
pub fn detail_max_scroll(app: &App) -> u16 {
    layout::areas_of(app.size, app.look()).map_or(0, |a| detail::max_scroll(app, a.detail))
}

/// How far the open overlay can scroll at the model's size.
pub fn overlay_max_scroll(app: &App) -> u16 {
    let area = ratatui::layout::Rect::new(0, 0, app.size.0, app.size.1);
    help::max_scroll(app, area)
}

/// The `h` list's scroll that keeps its selected entry in sight.
pub fn hazard_scroll(app: &App) -> u16 {
    let area = ratatui::layout::Rect::new(0, 0, app.size.0, app.size.1);
    help::hazard_scroll(app, area)
}

/// Too small for the table: say so — unless the help or the quit question
/// is open, the only things that work here, which then get the screen.
fn too_small(frame: &mut Frame, app: &App) {
    let area = frame.area();
    let theme = Theme { color: app.color };
    match app.modes.top() {
        Some(Layer::Dialog(d @ super::model::Dialog::Quit(_))) => {
            dialogs::draw(frame, area, d, app, &theme);
            return;
        }
        Some(Layer::Overlay {
            which: Overlay::Help,
            ..
        }) => {
            help::draw_help(frame, area, app, &theme);
            return;
        }
        _ => {}
    }
    let msg = format!(
        "terminal too small: {}×{}, claimtop needs at least {}×{} — enlarge it, or press q to quit",
        area.width,
        area.height,
        layout::MIN_WIDTH,
        layout::MIN_HEIGHT
    );
    let style = Theme { color: app.color }.error();
    let p = Paragraph::new(Span::styled(msg, style))
        .alignment(Alignment::Center)
        .wrap(Wrap { trim: true });
    let y = area.height / 2;
    let rect = ratatui::layout::Rect::new(area.x, area.y + y.saturating_sub(1), area.width, 3)
        .intersection(area);
    frame.render_widget(p, rect);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_scrubbed_of_whatever_unsafe_character_a_view_let_through() {
        use ratatui::buffer::Buffer;
        use ratatui::layout::Rect;
        let mut buf = Buffer::empty(Rect::new(0, 0, 4, 1));
        buf[(0, 0)].set_symbol("a\u{202e}");
        buf[(1, 0)].set_symbol("\u{1b}");
        buf[(2, 0)].set_symbol("é");
        buf[(3, 0)].set_symbol("\\");
        scrub(&mut buf);
        let cells: Vec<&str> = buf.content.iter().map(|c| c.symbol()).collect();
        assert_eq!(cells, ["\u{fffd}", "\u{fffd}", "é", "\\"]);
    }
}
