//! The screen of a dashboard that names nothing to show: no root, no
//! store (no `--root`, `--store`, `$FNO_CLAIMS_ROOT`, `$FNO_CLAIMS_STORE`
//! or `$HOME`). It says how to name one; `q` quits as anywhere.

use super::cells::Theme;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

/// What the screen says, line by line.
pub const WORDS: [&str; 9] = [
    "No claims root or store is named, so there is nothing to show.",
    "",
    "Name one (or several) and start again:",
    "  claimtop --root DIR                  a directory that holds .fno/claims/",
    "  claimtop --store etcd://HOST:PORT/P  an etcd store (--store again for more)",
    "  FNO_CLAIMS_ROOT=DIR[:DIR...]  or  FNO_CLAIMS_STORE=URL[ URL...]  in the environment",
    "  claimtop --demo                      a sandbox of workers to look around in",
    "",
    "q quits.",
];

pub fn draw(frame: &mut Frame, area: Rect, theme: &Theme) {
    let lines: Vec<Line> = WORDS.iter().map(|w| Line::from(Span::raw(*w))).collect();
    let title = Line::from(Span::styled(
        " claimtop · nothing named ",
        theme.title(true),
    ));
    let pane = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(Block::new().borders(Borders::ALL).title(title));
    frame.render_widget(pane, area);
}
