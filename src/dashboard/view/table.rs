//! The claims table. Only the rows in the window are built, so a frame
//! costs the same with ten claims or ten thousand.

use super::cells::{coarse, safe, state_label, ttl_cell, Theme};
use crate::claims::{ClaimState, Locality, Status};
use crate::dashboard::keys::Pane;
use crate::dashboard::model::{find_ci, key_cell, App, Column, Filter, RowId, Widest};
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

/// Table widths below this drop the machine / harness / reason columns.
const FULL_WIDTH: u16 = 90;
/// Below this the pid goes too (the detail pane shows it): key and holder
/// need the room more.
const NARROW: u16 = 76;

/// The columns of a table `width` wide; with several roots the root
/// column follows the state, and the optional columns give way to it first.
fn columns(width: u16, several: bool, store: Option<bool>) -> &'static [Column] {
    if let Some(fleet) = store {
        return super::store::columns(width >= FULL_WIDTH, width < NARROW, fleet);
    }
    if several {
        return super::roots::columns(width);
    }
    if width >= FULL_WIDTH {
        &Column::ALL
    } else if width < NARROW {
        &[
            Column::State,
            Column::Key,
            Column::Holder,
            Column::Age,
            Column::Ttl,
        ]
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

/// The widest a column may want, and the narrowest it may get. Key and
/// holder are what operators scan for, so they have no cap and the most
/// room; the fixed-format columns take what their content needs.
fn bounds(c: Column) -> (u16, u16) {
    match c {
        Column::State => (11, 11),
        Column::Key => (8, u16::MAX),
        Column::Holder => (8, u16::MAX),
        Column::Pid => (5, 7),
        Column::Machine => (6, 9),
        Column::Age => (6, 6),
        Column::Ttl => (7, 15),
        Column::Harness => (7, 12),
        Column::Reason => (6, u16::MAX),
        Column::Root => (4, 16),
        Column::Lease => (5, 7),
        Column::Host => (4, 16),
        // "last known at 12:00:03" on an offline host's row.
        Column::Source => (6, 22),
    }
}

/// A cell's text before styling, for measuring.
fn text(c: Column, s: &Status, now: i64) -> String {
    let rec = s.record.as_ref();
    match c {
        // The column is 11 wide: the row says "◌ offline", and its source
        // cell "last known at 12:00:03" (see `store::source_cell`).
        Column::State if s.state == ClaimState::LastKnown => "◌ offline".into(),
        Column::State => state_label(s.state).into(),
        Column::Key => safe(&s.key).into_owned(),
        Column::Holder => {
            rec.map_or_else(|| "(no record)".into(), |r| safe(&r.holder).into_owned())
        }
        Column::Pid => rec.map(|r| r.pid.to_string()).unwrap_or_default(),
        Column::Machine => match s.locality {
            Some(Locality::Local) => "local",
            Some(Locality::Other) => "other",
            Some(Locality::Unknown) => "local?",
            None => "",
        }
        .into(),
        Column::Age => rec.map(|r| coarse(now - r.acquired_at)).unwrap_or_default(),
        Column::Ttl => rec.map(|r| ttl_cell(r.expires_at, now)).unwrap_or_default(),
        Column::Harness => rec
            .and_then(|r| r.harness.as_deref())
            .map(|h| safe(h).into_owned())
            .unwrap_or_default(),
        // The label needs the roots; `measure` fills it in.
        Column::Root => String::new(),
        // Needs the store's tenures, which a Status does not carry: the
        // caller asks the model instead (see `measure`).
        Column::Lease => String::new(),
        // Where a row comes from is the store view's to say (see `measure`).
        Column::Host | Column::Source => String::new(),
        Column::Reason => match rec {
            Some(r) => r
                .reason
                .as_deref()
                .map(|x| safe(x).into_owned())
                .unwrap_or_default(),
            None => s
                .error
                .as_deref()
                .map(|e| safe(e).into_owned())
                .unwrap_or_default(),
        },
    }
}

fn chars(s: &str) -> u16 {
    s.chars().count().min(u16::MAX as usize) as u16
}

/// Column widths for `total` columns of cells: key and holder first, as
/// much of their content as fits, shared by need; then each fixed-format
/// column what its content needs (within its bounds); the reason the rest.
///
/// The free-text columns are sized from `widest` (every row, kept by the
/// model), so they hold still while scrolling; the short fixed-format ones
/// from the rows in the window.
pub fn widths(
    cols: &[Column],
    texts: &[Vec<String>],
    widest: &Widest,
    sorted: Column,
    total: u16,
) -> Vec<u16> {
    let want: Vec<u16> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (lo, hi) = bounds(*c);
            let content = widest
                .of(*c)
                .unwrap_or_else(|| texts.iter().map(|row| chars(&row[i])).max().unwrap_or(0));
            // The sorted column's title carries the arrow.
            let title = chars(c.title()) + if *c == sorted { 2 } else { 0 };
            content.max(title).clamp(lo, hi)
        })
        .collect();
    let mut w: Vec<u16> = cols.iter().map(|c| bounds(*c).0).collect();
    let mut left = total.saturating_sub(w.iter().sum());
    let main: Vec<usize> = (0..cols.len())
        .filter(|i| matches!(cols[*i], Column::Key | Column::Holder))
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
    // Then the fixed-format columns, the deadline first: it is what an
    // operator reads next after who holds what.
    // (With several roots, the root first: a row means little without it.)
    for c in [
        Column::Root,
        Column::Host,
        Column::Source,
        Column::Ttl,
        Column::Lease,
        Column::Age,
        Column::Pid,
        Column::State,
        Column::Machine,
        Column::Harness,
    ] {
        if let Some(i) = cols.iter().position(|x| *x == c) {
            let g = (want[i] - w[i]).min(left);
            w[i] += g;
            left -= g;
        }
    }
    // Rounding leftovers: key and holder up to their content, then the
    // reason (or the key, when there is no reason column) takes the rest.
    for i in &main {
        let g = (want[*i] - w[*i]).min(left);
        w[*i] += g;
        left -= g;
    }
    let last = cols
        .iter()
        .position(|c| *c == Column::Reason)
        .or_else(|| cols.iter().position(|c| *c == Column::Key));
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

/// A cell: its text (already cut to the column) styled for its column,
/// with what the filter looked for in it highlighted.
fn cell<'a>(
    c: Column,
    s: &Status,
    text: String,
    now: i64,
    theme: &Theme,
    filter: &Filter,
) -> Cell<'a> {
    let style = match c {
        // What an offline host last said: greyed whole, vouched for by nobody.
        _ if s.state == ClaimState::LastKnown => theme.dim(),
        Column::State => theme.state(s.state),
        Column::Holder if s.record.is_none() => theme.dim(),
        Column::Ttl => match &s.record {
            Some(r) if r.expires_at.is_some_and(|e| e <= now) => theme.state(ClaimState::Stale),
            _ => Style::new(),
        },
        Column::Reason if s.record.is_none() => theme.state(ClaimState::Corrupted),
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
    cols: Vec<Column>,
    offset: usize,
    window: Vec<&'a Status>,
    texts: Vec<Vec<String>>,
    widths: Vec<u16>,
}

fn measure<'a>(app: &'a App, area: Rect) -> Measured<'a> {
    let fleet = app.store.as_ref().map(|v| v.fleet.is_active());
    let several = app.roots.is_several();
    let cols: Vec<Column> = match &app.table.chosen {
        // The operator's choice, less what this dashboard has no data for.
        Some(chosen) => chosen
            .iter()
            .copied()
            .filter(|c| match c {
                Column::Root => several,
                Column::Lease => fleet.is_some(),
                Column::Host | Column::Source => fleet == Some(true),
                _ => true,
            })
            .collect(),
        None => columns(area.width, several, fleet).to_vec(),
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
    let texts: Vec<Vec<String>> = rows
        .iter()
        .map(|(id, s)| {
            cols.iter()
                .map(|c| match c {
                    Column::Root => safe(app.roots.label(app.roots.of(s))).into_owned(),
                    Column::Key => key_cell(s, shown.rules_of(id)),
                    Column::Lease => super::store::lease_cell(app, s),
                    Column::Host => safe(&super::store::host_cell(app, id, s)).into_owned(),
                    Column::Source => super::store::source_cell(app, id, s),
                    c => text(*c, s, now),
                })
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
    Title(Column),
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
    } else if let Some(n) = app.claims.listing_head() {
        title.push(Span::styled(
            format!(" · listing the root: its first {n} claims so far"),
            theme.dim(),
        ));
    }
    // (With several roots each problem has its banner line instead.)
    let whole_table = shown.is_empty() && !app.roots.is_several();
    if let Some(problem) = app.claims.problem.as_ref().filter(|_| whole_table) {
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
        let empty = if app.store.is_some() {
            " · no claims in this store yet"
        } else if app.roots.is_several() {
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
