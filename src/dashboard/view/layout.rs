//! Where each pane goes for a terminal size. Pure: the model uses it for
//! paging and scrolling, the view for drawing, and they always agree.

use crate::dashboard::keys::Pane;
use ratatui::layout::{Constraint, Layout, Rect};

/// Below this the layout cannot show a usable table; a message says so.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 15;
/// From this width the detail pane sits beside the table.
pub const WIDE: u16 = 120;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    pub table: Rect,
    pub detail: Rect,
    pub events: Rect,
    pub status: Rect,
    pub footer: Rect,
}

pub use crate::dashboard::model::Look;

/// The panes for `area`, or None when it is too small. On a narrow
/// terminal the focused pane below the table gets the larger share; a
/// zoomed pane gets the whole body and the others none.
pub fn areas(area: Rect, look: impl Into<Look>) -> Option<Areas> {
    let Look { focus, zoomed } = look.into();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return None;
    }
    let [header, body, status, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(0),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let hidden = Rect::new(body.x, body.y, 0, 0);
    let (table, detail, events) = if zoomed {
        match focus {
            Pane::Table => (body, hidden, hidden),
            Pane::Detail => (hidden, body, hidden),
            Pane::Events => (hidden, hidden, body),
        }
    } else if area.width >= WIDE {
        let [top, events] =
            Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(body);
        let [table, detail] =
            Layout::horizontal([Constraint::Percentage(65), Constraint::Percentage(35)]).areas(top);
        (table, detail, events)
    } else {
        let (big, small) = ((body.height / 2).max(3), (body.height / 5).max(3));
        let side = (body.height * 3 / 10).max(3);
        let (d, e) = match focus {
            Pane::Table => (side, side),
            Pane::Detail => (big, small),
            Pane::Events => (small, big),
        };
        let [table, detail, events] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(d),
            Constraint::Length(e),
        ])
        .areas(body);
        (table, detail, events)
    };
    Some(Areas {
        header,
        table,
        detail,
        events,
        status,
        footer,
    })
}

pub fn areas_of(size: (u16, u16), look: impl Into<Look>) -> Option<Areas> {
    areas(Rect::new(0, 0, size.0, size.1), look)
}

/// Can a terminal of `size` show the table? Below it, keys must not act.
pub fn fits(size: (u16, u16)) -> bool {
    size.0 >= MIN_WIDTH && size.1 >= MIN_HEIGHT
}

/// Claim rows the table shows at once (its title and header take two lines).
pub fn table_capacity(size: (u16, u16), look: impl Into<Look>) -> usize {
    areas_of(size, look).map_or(0, |a| a.table.height.saturating_sub(2) as usize)
}

/// Lines of the detail pane below its title.
pub fn detail_capacity(size: (u16, u16), look: impl Into<Look>) -> usize {
    areas_of(size, look).map_or(0, |a| a.detail.height.saturating_sub(1) as usize)
}

/// Event rows below the events pane's title.
pub fn events_capacity(size: (u16, u16), look: impl Into<Look>) -> usize {
    areas_of(size, look).map_or(0, |a| a.events.height.saturating_sub(1) as usize)
}

/// A `w`×`h` rectangle centred in `area`, clipped to it.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// Rows `lines` take wrapped inside a bordered box `box_width` wide. Word
/// wrapping can need a row more than this for a long line; boxes that may
/// hold such lines scroll.
pub fn wrapped_height(lines: &[ratatui::text::Line], box_width: u16) -> u16 {
    let inner = box_width.saturating_sub(2).max(1) as usize;
    let rows: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
    rows.min(u16::MAX as usize) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_supported_terminal_still_shows_table_rows() {
        for focus in [Pane::Table, Pane::Detail, Pane::Events] {
            assert!(
                table_capacity((MIN_WIDTH, MIN_HEIGHT), focus) >= 1,
                "{focus:?}"
            );
        }
        assert_eq!(table_capacity((MIN_WIDTH - 1, 40), Pane::Table), 0);
    }

    #[test]
    fn wide_terminals_put_the_detail_beside_the_table() {
        let a = areas(Rect::new(0, 0, 160, 48), Pane::Table).expect("fits");
        assert_eq!(a.table.y, a.detail.y);
        let n = areas(Rect::new(0, 0, 80, 24), Pane::Table).expect("fits");
        assert!(n.detail.y > n.table.y);
    }

    #[test]
    fn a_narrow_terminal_grows_the_focused_pane() {
        let r = Rect::new(0, 0, 80, 24);
        let t = areas(r, Pane::Table).expect("fits");
        let d = areas(r, Pane::Detail).expect("fits");
        let e = areas(r, Pane::Events).expect("fits");
        assert!(d.detail.height > t.detail.height);
        assert!(e.events.height > t.events.height);
    }

    #[test]
    fn a_zoomed_pane_gets_the_whole_body_and_the_others_nothing() {
        for size in [(160, 48), (80, 24)] {
            let r = Rect::new(0, 0, size.0, size.1);
            let plain = areas(r, Pane::Table).expect("fits");
            for focus in [Pane::Table, Pane::Detail, Pane::Events] {
                let z = areas(
                    r,
                    Look {
                        focus,
                        zoomed: true,
                    },
                )
                .expect("fits");
                let (shown, others) = match focus {
                    Pane::Table => (z.table, [z.detail, z.events]),
                    Pane::Detail => (z.detail, [z.table, z.events]),
                    Pane::Events => (z.events, [z.table, z.detail]),
                };
                assert_eq!(shown.width, size.0, "{focus:?}");
                assert!(shown.height > plain.table.height, "{focus:?}");
                assert!(others.iter().all(|o| o.area() == 0), "{focus:?}");
            }
        }
    }
}
