//! The claims table. Only the rows in the window are built, so a frame
//! costs the same with ten claims or ten thousand.

use super::cells::{safe, Theme};
use crate::claims::{ClaimState, Status};
use crate::columns::{chosen_columns, default_columns, ColumnId, Role, Width};
use crate::dashboard::keys::Pane;
use crate::dashboard::model::{find_ci, row_view, screen_ctx, App, Filter, RowId, Widest};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

fn chars(s: &str) -> u16 {
    s.chars().count().min(u16::MAX as usize) as u16
}

/// Column widths for `total` columns of cells: each column its floor
/// (its minimum; a number its whole cell); then key and holder as much of
/// their content as fits, shared by need; then the other columns what
/// their content needs (within bounds), in their `fill` order; the reason
/// (or the key, when there is no reason column) the rest.
///
/// The steady columns are sized from `widest` (every row, kept by the
/// model), so they hold still while scrolling; the others from the rows in
/// the window.
pub fn widths(
    cols: &[ColumnId],
    texts: &[Vec<String>],
    widest: &Widest,
    sorted: ColumnId,
    total: u16,
) -> Vec<u16> {
    let want: Vec<u16> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (lo, hi) = c.spec().width.bounds();
            let content = widest
                .of(*c)
                .unwrap_or_else(|| texts.iter().map(|row| chars(&row[i])).max().unwrap_or(0));
            // The sorted column's title carries the arrow.
            let title = chars(c.title()) + if *c == sorted { 2 } else { 0 };
            content.max(title).clamp(lo, hi)
        })
        .collect();
    let mut w: Vec<u16> = cols
        .iter()
        .zip(&want)
        .map(|(c, want)| match c.spec().width {
            Width::Number { .. } => *want,
            other => other.bounds().0,
        })
        .collect();
    let mut left = total.saturating_sub(w.iter().sum());
    let main: Vec<usize> = (0..cols.len())
        .filter(|i| matches!(cols[*i].spec().width, Width::Main { .. }))
        .collect();
    let need: u32 = main.iter().map(|i| u32::from(want[*i] - w[*i])).sum();
    if need > 0 {
        let give = u32::from(left).min(need);
        for i in &main {
            let g = (give * u32::from(want[*i] - w[*i]) / need) as u16;
            w[*i] += g;
            left -= g;
        }
    }
    let mut filled: Vec<usize> = (0..cols.len())
        .filter(|i| {
            !matches!(
                cols[*i].spec().width,
                Width::Main { .. } | Width::Rest { .. }
            )
        })
        .collect();
    filled.sort_by_key(|i| cols[*i].spec().fill);
    for i in filled {
        let g = (want[i] - w[i]).min(left);
        w[i] += g;
        left -= g;
    }
    // Rounding leftovers: key and holder up to their content, then the
    // rest to the reason, or to the key when there is none.
    for i in &main {
        let g = (want[*i] - w[*i]).min(left);
        w[*i] += g;
        left -= g;
    }
    let last = (0..cols.len())
        .find(|i| matches!(cols[*i].spec().width, Width::Rest { .. }))
        .or_else(|| main.first().copied());
    if let Some(i) = last {
        w[i] += left;
    }
    w
}

/// `s` cut to `w` columns, with an ellipsis where it was cut.
pub fn ellipsize(s: &str, w: u16) -> std::borrow::Cow<'_, str> {
    let w = w as usize;
    if s.chars().count() <= w {
        return s.into();
    }
    if w == 0 {
        return "".into();
    }
    let mut out: String = s.chars().take(w - 1).collect();
    out.push('…');
    out.into()
}

/// A cell: its text (already cut to the column) styled by its column's
/// role, with what the filter looked for in it highlighted.
fn cell<'a>(
    c: ColumnId,
    s: &Status,
    text: String,
    now: i64,
    theme: &Theme,
    filter: &Filter,
) -> Cell<'a> {
    let style = match c.spec().role {
        // What an offline host last said: greyed whole, vouched for by nobody.
        _ if s.state == ClaimState::LastKnown => theme.dim(),
        Role::State => theme.state(s.state),
        Role::Absent if s.record.is_none() => theme.dim(),
        Role::Deadline => match &s.record {
            Some(r) if r.expires_at.is_some_and(|e| e <= now) => theme.state(ClaimState::Stale),
            _ => Style::new(),
        },
        Role::Failure if s.record.is_none() => theme.state(ClaimState::Corrupted),
        _ => Style::new(),
    };
    let hit = filter
        .terms
        .iter()
        .filter_map(|t| t.needle(c))
        .find_map(|n| find_ci(&text, n));
    match hit {
        Some(r) => {
            let mark = theme.key().add_modifier(Modifier::UNDERLINED);
            Cell::from(Line::from(vec![
                Span::styled(text[..r.start].to_string(), style),
                Span::styled(text[r.clone()].to_string(), mark),
                Span::styled(text[r.end..].to_string(), style),
            ]))
        }
        None => Cell::from(Span::styled(text, style)),
    }
}

/// The window of rows a table of `area` shows, their cell texts, and the
/// column widths they lead to: what drawing and mouse clicks both need.
struct Measured<'a> {
    cols: Vec<ColumnId>,
    offset: usize,
    window: Vec<&'a Status>,
    texts: Vec<Vec<String>>,
    widths: Vec<u16>,
}

fn measure<'a>(app: &'a App, area: Rect) -> Measured<'a> {
    let avail = app.avail();
    let cols = match &app.table.chosen {
        // The operator's choice, less what this dashboard has no data for.
        Some(chosen) => chosen_columns(chosen, avail),
        None => default_columns(area.width, avail),
    };
    let (shown, now) = (app.shown(), app.shown_now());
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
    let rows: Vec<(&RowId, &Status)> = app
        .table
        .rows
        .iter()
        .skip(offset)
        .take(cap)
        .filter_map(|p| Some((p, shown.get(p)?)))
        .collect();
    let places = app.places();
    let mut ctx = screen_ctx(now, app.local_time, &places);
    ctx.instants = app.flip_times;
    let texts: Vec<Vec<String>> = rows
        .iter()
        .map(|(id, s)| {
            let row = row_view(shown, id, s);
            cols.iter()
                .map(|c| (c.spec().text)(&ctx, &row).into_owned())
                .collect()
        })
        .collect();
    let window: Vec<&Status> = rows.into_iter().map(|(_, s)| s).collect();
    let room = area
        .width
        .saturating_sub(HIGHLIGHT)
        .saturating_sub(cols.len().saturating_sub(1) as u16);
    let widths = widths(
        &cols,
        &texts,
        &app.table.widest,
        app.table.sort.column,
        room,
    );
    Measured {
        cols,
        offset,
        window,
        texts,
        widths,
    }
}

/// Columns the selection marker takes before the first column.
const HIGHLIGHT: u16 = 2;

/// What a click at (`x`, `y`) on a table of `area` hits: a column title,
/// or a row (its index among all rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    Title(ColumnId),
    Row(usize),
}

pub fn hit(app: &App, area: Rect, x: u16, y: u16) -> Option<Hit> {
    let (_, area) = super::roots::split_table_area(app, area);
    if !area.contains(ratatui::layout::Position { x, y }) || y == area.y {
        return None;
    }
    let m = measure(app, area);
    if y == area.y + 1 {
        let mut left = area.x + HIGHLIGHT;
        for (c, w) in m.cols.iter().zip(&m.widths) {
            if x >= left && x < left + w + 1 {
                return Some(Hit::Title(*c));
            }
            left += w + 1;
        }
        return None;
    }
    let row = m.offset + (y - area.y - 2) as usize;
    (row < app.table.rows.len()).then_some(Hit::Row(row))
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let (banners, area) = super::roots::split_table_area(app, area);
    super::roots::draw_banners(frame, banners, app, theme);
    let shown = app.shown();
    let now = app.shown_now();
    let focused = app.focus == Pane::Table;
    let sort = app.table.sort;
    let Measured {
        cols,
        offset,
        window,
        texts,
        widths: w,
    } = measure(app, area);
    let header = Row::new(cols.iter().zip(&w).map(|(c, cw)| {
        let mark = match (*c == sort.column, sort.reverse) {
            (true, false) => " ▲",
            (true, true) => " ▼",
            _ => "",
        };
        // The arrow is what says the order: cut the title, never the arrow.
        let title = ellipsize(c.title(), cw.saturating_sub(chars(mark)));
        Cell::from(format!("{title}{mark}"))
    }))
    .style(theme.label());
    let window_len = window.len();
    let rows = window.iter().zip(texts).map(|(s, row)| {
        Row::new(cols.iter().zip(row).zip(&w).map(|((c, t), cw)| {
            cell(
                *c,
                s,
                ellipsize(&t, *cw).into_owned(),
                now,
                theme,
                &app.table.filter,
            )
        }))
    });
    let mut title = vec![Span::styled(
        format!(
            "{}claims {}/{}",
            if focused { "» " } else { "" },
            // Where the selection is among the rows, as k9s and less say it.
            if app.table.rows.is_empty() {
                0
            } else {
                app.table.selected + 1
            },
            app.table.rows.len(),
        ),
        theme.title(focused),
    )];
    if !app.table.filter.is_empty() {
        title.push(Span::raw(" · filter: "));
        title.push(Span::styled(safe(&app.table.filter.text), theme.key()));
        title.push(Span::styled(
            format!(" ({} of {})", app.table.rows.len(), shown.len()),
            theme.dim(),
        ));
    }
    let marked = app
        .table
        .marked
        .iter()
        .filter(|p| shown.get(p).is_some())
        .count();
    if marked > 0 {
        title.push(Span::styled(format!(" · {marked} marked"), theme.key()));
    }
    if let Some(store) = &app.store {
        super::store::mark_view(&mut title, app, store, theme);
    } else if let Some(n) = app.origins.listing_head() {
        title.push(Span::styled(
            format!(" · listing the root: its first {n} claims so far"),
            theme.dim(),
        ));
    }
    // (With several roots each problem has its banner line instead.)
    let whole_table = shown.is_empty() && !app.origins.several();
    if let Some(problem) = app.origins.problem(0).filter(|_| whole_table) {
        // Not an empty root: say what is wrong instead of an empty table.
        let block = Block::new().borders(Borders::TOP).title(Line::from(title));
        let text = vec![
            Line::styled(format!("⚠ {problem}"), theme.error()),
            Line::styled(
                "claimtop keeps watching: the table fills in as soon as the root can be read",
                theme.dim(),
            ),
        ];
        let p = Paragraph::new(text)
            .block(block)
            .wrap(ratatui::widgets::Wrap { trim: false });
        frame.render_widget(p, area);
        return;
    }
    if shown.is_empty() {
        let empty = if app.origins.first_root().is_none() {
            " · no claims in this store yet"
        } else if app.origins.several() {
            " · no claims under these roots yet"
        } else {
            " · no claims under this root yet"
        };
        title.push(Span::styled(empty, theme.dim()));
    } else if app.table.rows.is_empty() {
        title.push(Span::styled(" · nothing matches the filter", theme.dim()));
        if let Some(why) = app.table.filter.why_nothing() {
            title.push(Span::styled(format!(" — {}", safe(&why)), theme.error()));
        }
    }
    let table = Table::new(rows, w.iter().map(|cw| Constraint::Length(*cw)))
        .header(header)
        .block(Block::new().borders(Borders::TOP).title(Line::from(title)))
        .row_highlight_style(theme.selected())
        .highlight_symbol("▶ ")
        .highlight_spacing(ratatui::widgets::HighlightSpacing::Always);
    let mut state = TableState::default();
    if !app.table.rows.is_empty() && area.height > 2 {
        state.select(Some(app.table.selected.saturating_sub(offset)));
    }
    frame.render_stateful_widget(table, area, &mut state);
    mark_rows(frame, area, app, offset, window_len);
}

/// A marked row carries `✓` in the selection gutter, beside the `▶` of
/// the selected one: the mark never costs a column.
fn mark_rows(frame: &mut Frame, area: Rect, app: &App, offset: usize, visible: usize) {
    if app.table.marked.is_empty() {
        return;
    }
    let rows = app.table.rows.iter().skip(offset).take(visible);
    for (i, p) in rows.enumerate() {
        // Below the title line and the column titles.
        let y = area.y + 2 + i as u16;
        if app.table.marked.contains(p) && y < area.bottom() && area.width > 1 {
            frame.buffer_mut()[(area.x + 1, y)].set_symbol("✓");
        }
    }
}
