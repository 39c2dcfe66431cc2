//! The claims table as it stood at an instant (`:asof`): every key held
//! then, its holder, how long it had been held, and how that tenure stands
//! now. It takes the claims table's place until G or Esc.

use super::cells::{clock, coarse, safe, time_cell, Theme};
use crate::dashboard::keys::Pane;
use crate::dashboard::model::App;
use crate::events::asof::ending_words;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState};
use ratatui::Frame;

/// What the header says while the table shows the past.
pub fn badge(app: &App) -> Option<String> {
    let v = app.modes.asof()?;
    Some(format!(
        " as of {} · history ",
        clock(v.at, app.local_time, "%Y-%m-%d %H:%M:%S")
    ))
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let Some(v) = app.modes.asof() else {
        return;
    };
    let focused = app.focus == Pane::Table;
    let when = clock(v.at, app.local_time, "%Y-%m-%d %H:%M:%S");
    let mut title = vec![Span::styled(
        format!("{}claims as of {when}", if focused { "» " } else { "" }),
        theme.title(focused),
    )];
    let Some(rows) = &v.rows else {
        title.push(Span::styled(" · reading the events log…", theme.dim()));
        let block = Block::new().borders(Borders::TOP).title(Line::from(title));
        frame.render_widget(Paragraph::new("").block(block), area);
        return;
    };
    if !v.complete {
        // What the window could not see is said first, never shown as free.
        let read = v.span.map_or("no claim event".into(), |(from, to)| {
            format!(
                "{}–{}",
                clock(from, app.local_time, "%m-%d %H:%M"),
                clock(to, app.local_time, "%m-%d %H:%M")
            )
        });
        title.push(Span::styled(
            format!(" · not complete: log read {read}"),
            theme.badge(),
        ));
    }
    title.push(Span::styled(
        format!(
            " · {} held then (the log, and claims held now) · G or Esc: now",
            crate::claims::words::count(rows.len(), "key")
        ),
        theme.dim(),
    ));
    // Over several roots each row names its root: one key may be held in
    // two of them.
    let several = rows.iter().any(|r| r.root.is_some());
    let local = app.local_time;
    let thens: Vec<String> = rows
        .iter()
        .map(|r| safe(&ending_words(r, |t| time_cell(t, app.now, local))).into_owned())
        .collect();
    // How each tenure ended is what the view is read for: whole, before
    // key and holder take the room.
    let then_w = thens.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    let mut header = vec!["key", "holder", "held for", "since", "then"];
    let mut widths = vec![
        Constraint::Min(12),
        Constraint::Min(12),
        Constraint::Length(9),
        Constraint::Length(10),
        Constraint::Min(then_w.clamp(10, 48) as u16),
    ];
    if several {
        header.insert(0, "root");
        let widest = rows
            .iter()
            .filter_map(|r| r.root.as_deref())
            .map(|r| safe(r).chars().count())
            .max()
            .unwrap_or(0);
        widths.insert(0, Constraint::Length(widest.clamp(4, 24) as u16));
    }
    let header = Row::new(header).style(theme.label());
    let body = rows.iter().zip(thens).map(|(r, then)| {
        let since = clock(r.since, local, "%H:%M:%S");
        let since = if r.start_seen {
            since
        } else {
            format!("≤{since}")
        };
        let root = several.then(|| safe(r.root.as_deref().unwrap_or("")).into_owned());
        Row::new(root.into_iter().chain([
            safe(&r.key).into_owned(),
            safe(&r.holder).into_owned(),
            coarse(v.at - r.since),
            since,
            then,
        ]))
    });
    let table = Table::new(body, widths)
        .header(header)
        .block(Block::new().borders(Borders::TOP).title(Line::from(title)))
        .row_highlight_style(theme.selected())
        .highlight_symbol("▶ ")
        .highlight_spacing(ratatui::widgets::HighlightSpacing::Always);
    let mut state = TableState::default();
    if !rows.is_empty() {
        state.select(Some(v.selected));
    }
    frame.render_stateful_widget(table, area, &mut state);
}
