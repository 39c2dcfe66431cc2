//! The claims table. Only the rows in the window are built, so a frame
//! costs the same with ten claims or ten thousand.

use super::{coarse, safe, state_label, ttl_cell, Theme};
use crate::claims::{ClaimState, Locality, Status};
use crate::dashboard::app::{App, Column};
use crate::dashboard::keys::Pane;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table, TableState};
use ratatui::Frame;

/// Table widths below this drop the machine / harness / reason columns.
const FULL_WIDTH: u16 = 90;

fn columns(width: u16) -> &'static [Column] {
    if width >= FULL_WIDTH {
        &Column::ALL
    } else {
        &[
            Column::State,
            Column::Key,
            Column::Holder,
            Column::Pid,
            Column::Age,
            Column::Ttl,
        ]
    }
}

fn width(c: Column) -> Constraint {
    match c {
        Column::State => Constraint::Length(11),
        // Keys are what operators scan for; holders are recognisable from a prefix.
        Column::Key => Constraint::Fill(3),
        Column::Holder => Constraint::Fill(2),
        Column::Reason => Constraint::Fill(1),
        Column::Pid => Constraint::Length(7),
        Column::Machine => Constraint::Length(7),
        Column::Age => Constraint::Length(6),
        Column::Ttl => Constraint::Length(15),
        Column::Harness => Constraint::Length(8),
    }
}

fn cell<'a>(c: Column, s: &'a Status, now: i64, theme: &Theme) -> Cell<'a> {
    let rec = s.record.as_ref();
    let text = |v: Option<&'a str>| Cell::from(v.map(safe).unwrap_or_default());
    match c {
        Column::State => Cell::from(Span::styled(state_label(s.state), theme.state(s.state))),
        Column::Key => Cell::from(safe(&s.key)),
        Column::Holder => match rec {
            Some(r) => Cell::from(safe(&r.holder)),
            None => Cell::from(Span::styled("(unreadable)", theme.dim())),
        },
        Column::Pid => Cell::from(rec.map(|r| r.pid.to_string()).unwrap_or_default()),
        Column::Machine => Cell::from(match s.locality {
            Some(Locality::Local) => "local",
            Some(Locality::Other) => "other",
            Some(Locality::Unknown) => "local?",
            None => "",
        }),
        Column::Age => Cell::from(rec.map(|r| coarse(now - r.acquired_at)).unwrap_or_default()),
        Column::Ttl => match rec {
            Some(r) => {
                let expired = r.expires_at.is_some_and(|e| e <= now);
                let style = if expired {
                    theme.state(ClaimState::Stale)
                } else {
                    ratatui::style::Style::new()
                };
                Cell::from(Span::styled(ttl_cell(r.expires_at, now), style))
            }
            None => Cell::from(""),
        },
        Column::Harness => text(rec.and_then(|r| r.harness.as_deref())),
        Column::Reason => match rec {
            Some(r) => text(r.reason.as_deref()),
            None => Cell::from(Span::styled(
                s.error.as_deref().map(safe).unwrap_or_default(),
                theme.state(ClaimState::Corrupted),
            )),
        },
    }
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let shown = app.shown();
    let now = app.shown_now();
    let focused = app.focus == Pane::Table;
    let cols = columns(area.width);
    let sort = app.table.sort;
    let header = Row::new(cols.iter().map(|c| {
        let mark = match (*c == sort.column, sort.reverse) {
            (true, false) => " ▲",
            (true, true) => " ▼",
            _ => "",
        };
        Cell::from(format!("{}{mark}", c.title()))
    }))
    .style(theme.label());

    let cap = area.height.saturating_sub(2) as usize;
    // The model keeps the selection in view; clamp again in case the terminal
    // shrank since (drawing never mutates the model).
    let mut offset = app
        .table
        .offset
        .min(app.table.rows.len().saturating_sub(cap.max(1)));
    if app.table.selected >= offset + cap.max(1) {
        offset = app.table.selected + 1 - cap.max(1);
    }
    let rows = app
        .table
        .rows
        .iter()
        .skip(offset)
        .take(cap)
        .filter_map(|p| shown.get(p))
        .map(|s| Row::new(cols.iter().map(|c| cell(*c, s, now, theme))));
    let mut title = vec![Span::styled(
        format!(
            "{}claims {}/{}",
            if focused { "» " } else { "" },
            app.table.rows.len(),
            shown.len()
        ),
        theme.title(focused),
    )];
    if !app.table.filter.is_empty() {
        title.push(Span::raw(" · filter: "));
        title.push(Span::styled(safe(&app.table.filter.text), theme.key()));
    }
    if shown.is_empty() {
        title.push(Span::styled(
            " · no claims under this root yet",
            theme.dim(),
        ));
    } else if app.table.rows.is_empty() {
        title.push(Span::styled(" · nothing matches the filter", theme.dim()));
    }
    let table = Table::new(rows, cols.iter().map(|c| width(*c)))
        .header(header)
        .block(Block::new().borders(Borders::TOP).title(Line::from(title)))
        .row_highlight_style(theme.selected())
        .highlight_symbol("▶ ")
        .highlight_spacing(ratatui::widgets::HighlightSpacing::Always);
    let mut state = TableState::default();
    if !app.table.rows.is_empty() && cap > 0 {
        state.select(Some(app.table.selected.saturating_sub(offset)));
    }
    frame.render_stateful_widget(table, area, &mut state);
}
