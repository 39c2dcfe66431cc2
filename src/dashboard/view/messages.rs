//! This session's messages and op results (`m`), oldest first, each in
//! full and with its time: the status line shows one at a time and only
//! for a while.

use super::cells::{clock, safe, Theme};
use crate::dashboard::model::{App, Level};
use ratatui::text::{Line, Span};

pub fn lines(app: &App, theme: &Theme) -> (String, Vec<Line<'static>>) {
    let title = format!(" messages ({}) — Esc or m closes ", app.messages.len());
    if app.messages.is_empty() {
        return (title, vec![Line::styled(" nothing said yet", theme.dim())]);
    }
    let lines = app
        .messages
        .iter()
        .map(|m| {
            let style = match m.level {
                Level::Info => ratatui::style::Style::new(),
                Level::Ok => theme.ok(),
                Level::Error => theme.error(),
            };
            Line::from(vec![
                Span::styled(
                    format!(" {} ", clock(m.at, app.local_time, "%H:%M:%S")),
                    theme.dim(),
                ),
                Span::styled(safe(&m.text).into_owned(), style),
            ])
        })
        .collect();
    (title, lines)
}
