//! Drawing the timeline: a title with what is covered, a legend, a time
//! axis, one bar row per key and the selected tenure's facts below.

use super::cells::{clock, coarse, safe, Theme};
use crate::dashboard::timeline::{duration_ms, tenure_at, Coverage, Timeline};
use crate::events::tenure::{Ending, Tenure, TenureIndex};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

/// Rows above the bars (title, legend, axis) and below (the tenure's facts
/// and the key hint).
const HEAD: u16 = 3;
const FOOT: u16 = 4;

/// Glyph and colour of a bar: each ending has its own glyph, so the view
/// reads the same without colour.
pub fn bar(ending: Ending) -> (char, Color) {
    match ending {
        Ending::Held => ('█', Color::Green),
        Ending::Released => ('▓', Color::Blue),
        Ending::Reclaimed => ('▒', Color::Yellow),
        Ending::ForceReleased => ('░', Color::Magenta),
        Ending::Expired => ('▚', Color::Red),
        Ending::Unseen => ('╌', Color::DarkGray),
    }
}

const LEGEND: [Ending; 6] = [
    Ending::Held,
    Ending::Released,
    Ending::Reclaimed,
    Ending::ForceReleased,
    Ending::Expired,
    Ending::Unseen,
];

/// Width of the key column for a screen `width` wide.
pub fn label_width(width: u16) -> u16 {
    (width / 4).clamp(8, 32)
}

/// Columns of the bar area for a screen `width` wide.
pub fn bar_width(width: u16) -> u16 {
    width.saturating_sub(label_width(width) + 1).max(1)
}

/// Rows of bars that fit a screen `height` high.
pub fn visible_rows(height: u16) -> usize {
    height.saturating_sub(HEAD + FOOT).max(1) as usize
}

/// Draw the timeline over the whole `area`. `keep` is the dashboard's
/// filter, applied to keys.
pub fn draw(
    frame: &mut Frame,
    area: Rect,
    tl: &Timeline,
    keep: &dyn Fn(&str) -> bool,
    now: i64,
    local: bool,
    theme: &Theme,
) {
    frame.render_widget(Clear, area);
    let rows = tl.rows(keep);
    let lw = label_width(area.width) as usize;
    let bw = bar_width(area.width);
    let cell = tl.cell_ms(bw);
    let left = tl.left();
    let cursor_col = ((tl.cursor - left) / cell).clamp(0, i64::from(bw) - 1) as usize;

    let mut lines: Vec<Line> = Vec::with_capacity(area.height as usize);
    lines.push(title(tl, rows.len(), cell, local, theme));
    lines.push(legend(theme));
    lines.push(axis(left, cell, bw, lw, cursor_col, local, theme));

    let visible = visible_rows(area.height);
    let Some(index) = tl.shown() else {
        lines.push(Line::styled("reading the events log…", theme.dim()));
        frame.render_widget(Paragraph::new(lines), area);
        return;
    };
    if rows.is_empty() {
        lines.push(Line::styled(
            "no claim events in the log (or none match the filter)",
            theme.dim(),
        ));
    }
    for (i, (key, tenures)) in rows.iter().enumerate().skip(tl.offset).take(visible) {
        let selected = i == tl.selected;
        let mut spans = Vec::with_capacity(bw as usize + 2);
        let name = fit(&safe(key), lw);
        spans.push(Span::styled(
            name,
            if selected {
                theme.selected()
            } else {
                Style::new()
            },
        ));
        spans.push(Span::raw(" "));
        spans.extend(bar_cells(tenures, left, cell, bw, now, cursor_col, theme));
        lines.push(Line::from(spans));
    }
    while lines.len() < (HEAD as usize + visible) {
        lines.push(Line::raw(""));
    }
    lines.extend(facts(
        index,
        rows.get(tl.selected).copied(),
        tl.cursor,
        now,
        local,
        theme,
    ));
    lines.push(Line::styled(
        "←/→ h/l move · H/L ×10 · +/- zoom · j/k key · G now · t/Esc close",
        theme.dim(),
    ));
    frame.render_widget(Paragraph::new(lines), area);
}

fn title<'a>(tl: &Timeline, keys: usize, cell: i64, local: bool, theme: &Theme) -> Line<'a> {
    let mut spans = vec![
        Span::styled("timeline", theme.title(true)),
        Span::raw(format!(
            " · {keys} keys · {}→{} ({}, {}/col)",
            crate::time::bare_clock(tl.left(), local, "%m-%d %H:%M:%S"),
            clock(
                tl.right,
                local,
                if tl.span >= 86_400_000 {
                    "%m-%d %H:%M:%S"
                } else {
                    "%H:%M:%S"
                }
            ),
            coarse(tl.span),
            precise(cell)
        )),
    ];
    let cover = match tl.coverage {
        Coverage::Nothing => " · reading the log…".to_string(),
        Coverage::Tail { scanned, len } if len > 0 => format!(
            " · log's end only, indexing {}%",
            scanned.saturating_mul(100) / len.max(1)
        ),
        Coverage::Tail { .. } => " · log's end only, indexing".into(),
        Coverage::Whole => match tl.tenures.as_ref().and_then(|t| t.horizon()) {
            Some(h) if tl.left() < h && tl.window_pending() => {
                " · before what is kept: reading the log…".into()
            }
            Some(h) if tl.left() < h => " · re-read from the log".into(),
            Some(h) => format!(" · whole log, kept from {}", clock(h, local, "%m-%d %H:%M")),
            None => " · whole log".into(),
        },
    };
    spans.push(Span::styled(cover, theme.dim()));
    if tl.follow {
        spans.push(Span::styled(" · following", theme.dim()));
    }
    if tl.lost_lines {
        spans.push(Span::styled(" · a burst was dropped", theme.error()));
    }
    Line::from(spans)
}

/// `250ms`, `5.6s`, then the table's coarse units.
fn precise(ms: i64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        coarse(ms)
    }
}

fn legend<'a>(theme: &Theme) -> Line<'a> {
    let mut spans = Vec::new();
    for e in LEGEND {
        let (g, c) = bar(e);
        spans.push(Span::styled(format!("{g}{g}"), color(theme, c)));
        spans.push(Span::raw(format!(" {}  ", e.short())));
    }
    spans.push(Span::styled("│ cursor", theme.selected()));
    Line::from(spans)
}

fn color(theme: &Theme, c: Color) -> Style {
    if theme.color {
        Style::new().fg(c)
    } else {
        Style::new()
    }
}

/// Tick labels every ~12 columns, on round times.
fn axis<'a>(
    left: i64,
    cell: i64,
    bw: u16,
    lw: usize,
    cursor: usize,
    local: bool,
    theme: &Theme,
) -> Line<'a> {
    let mut row = vec![' '; bw as usize];
    let step = nice_step(cell.saturating_mul(14));
    let fmt = if step < 60_000 {
        "%H:%M:%S"
    } else if step < 86_400_000 {
        "%H:%M"
    } else {
        "%m-%d"
    };
    let mut t = left.div_euclid(step).saturating_add(1).saturating_mul(step);
    let right = left.saturating_add(cell.saturating_mul(i64::from(bw)));
    while t < right {
        let col = ((t - left) / cell) as usize;
        let label = format!("┊{}", crate::time::bare_clock(t, local, fmt));
        if col + label.chars().count() <= row.len() {
            for (i, ch) in label.chars().enumerate() {
                row[col + i] = ch;
            }
        }
        t = t.saturating_add(step);
    }
    let text: String = row.iter().collect();
    let (a, rest) = split_at_char(&text, cursor);
    let (c, b) = split_at_char(rest, 1);
    Line::from(vec![
        Span::styled(
            format!("{:lw$} ", if local { "local time" } else { "UTC" }),
            theme.dim(),
        ),
        Span::styled(a.to_string(), theme.dim()),
        Span::styled(c.to_string(), theme.selected()),
        Span::styled(b.to_string(), theme.dim()),
    ])
}

fn split_at_char(s: &str, n: usize) -> (&str, &str) {
    let i = s.char_indices().nth(n).map_or(s.len(), |(i, _)| i);
    s.split_at(i)
}

/// The smallest round step (1 s, 5 s, 15 s, 1 m, …, 1 d, 7 d) at least `ms`.
fn nice_step(ms: i64) -> i64 {
    const STEPS: [i64; 16] = [
        1_000,
        5_000,
        15_000,
        30_000,
        60_000,
        300_000,
        900_000,
        1_800_000,
        3_600_000,
        10_800_000,
        21_600_000,
        43_200_000,
        86_400_000,
        172_800_000,
        604_800_000,
        2_592_000_000,
    ];
    STEPS
        .iter()
        .copied()
        .find(|&s| s >= ms)
        .unwrap_or(STEPS[STEPS.len() - 1])
}

/// One key's bar: each column shows the tenure covering the most of it.
fn bar_cells<'a>(
    tenures: &[Tenure],
    left: i64,
    cell: i64,
    bw: u16,
    now: i64,
    cursor: usize,
    theme: &Theme,
) -> Vec<Span<'a>> {
    // Start from the first tenure that can reach the view (bisect by start,
    // then step back over any long one that began earlier).
    let mut i = tenures.partition_point(|t| t.start < left);
    while i > 0 && end_of(&tenures[i - 1], now) >= left {
        i -= 1;
    }
    let mut spans: Vec<Span> = Vec::new();
    let mut run = String::new();
    let mut run_style = Style::new();
    for col in 0..bw as usize {
        let from = left + cell * col as i64;
        let to = from + cell;
        while i < tenures.len() && end_of(&tenures[i], now) < from {
            i += 1;
        }
        let mut best: Option<(&Tenure, i64)> = None;
        for t in tenures[i..].iter().take_while(|t| t.start < to) {
            let cover = end_of(t, now).min(to) - t.start.max(from);
            if cover >= 0 && best.is_none_or(|(_, c)| cover >= c) {
                best = Some((t, cover));
            }
        }
        let (ch, mut style) = match best {
            Some((t, _)) => {
                let (g, c) = bar(t.ending);
                (g, color(theme, c))
            }
            None => (' ', Style::new()),
        };
        if col == cursor {
            style = style.add_modifier(Modifier::REVERSED);
        }
        if style != run_style && !run.is_empty() {
            spans.push(Span::styled(std::mem::take(&mut run), run_style));
        }
        run_style = style;
        run.push(if col == cursor && ch == ' ' {
            '│'
        } else {
            ch
        });
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, run_style));
    }
    spans
}

fn end_of(t: &Tenure, now: i64) -> i64 {
    if t.is_held() {
        now.max(t.start)
    } else {
        t.end
    }
}

/// The selected key's tenure under the cursor, in words.
fn facts<'a>(
    index: &TenureIndex,
    row: Option<(&str, &[Tenure])>,
    cursor: i64,
    now: i64,
    local: bool,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let at = Line::styled(
        format!("cursor {}", clock(cursor, local, "%Y-%m-%d %H:%M:%S")),
        theme.dim(),
    );
    let Some((key, tenures)) = row else {
        return vec![at, Line::raw(""), Line::raw("")];
    };
    let Some(t) = tenure_at(tenures, cursor) else {
        return vec![
            Line::from(vec![
                Span::styled("key ", theme.label()),
                Span::raw(safe(key).into_owned()),
            ]),
            at,
            Line::styled("no tenure at or before the cursor", theme.dim()),
        ];
    };
    let (g, c) = bar(t.ending);
    let end = if t.is_held() {
        "now".to_string()
    } else {
        clock(t.end, local, "%Y-%m-%d %H:%M:%S")
    };
    let start = if t.start_seen {
        clock(t.start, local, "%Y-%m-%d %H:%M:%S")
    } else {
        format!(
            "{} (first seen)",
            clock(t.start, local, "%Y-%m-%d %H:%M:%S")
        )
    };
    let mut how = vec![
        Span::styled(format!("{g} "), color(theme, c)),
        Span::raw(t.ending.word()),
    ];
    if let Some(by) = t.by {
        how.push(Span::raw(match t.ending {
            Ending::ForceReleased => " by operator ",
            _ => " by ",
        }));
        how.push(Span::raw(safe(index.holder_name(by)).into_owned()));
    }
    if t.end < cursor && !t.is_held() {
        how.push(Span::styled(
            " (the last tenure before the cursor)",
            theme.dim(),
        ));
    }
    vec![
        Line::from(vec![
            Span::styled("key ", theme.label()),
            Span::raw(safe(key).into_owned()),
            Span::styled("  holder ", theme.label()),
            Span::raw(safe(index.holder_name(t.holder)).into_owned()),
            Span::styled(
                format!("  at {}", clock(cursor, local, "%H:%M:%S")),
                theme.dim(),
            ),
        ]),
        Line::from(vec![
            Span::styled("from ", theme.label()),
            Span::raw(start),
            Span::styled(" to ", theme.label()),
            Span::raw(end),
            Span::styled(" held ", theme.label()),
            Span::raw(coarse(duration_ms(t, now))),
        ]),
        Line::from(how),
    ]
}

/// `s` cut to `w` columns (with an ellipsis when cut) and padded to `w`.
fn fit(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        format!("{s:w$}")
    } else {
        let mut out: String = s.chars().take(w.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}
