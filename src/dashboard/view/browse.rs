//! The events pane while browsing the whole log: the window around the
//! cursor, where it is in the file, the search, and the raw JSON popup.

use super::cells::{safe, Theme};
use crate::dashboard::input::TextInput;
use crate::dashboard::model::{raw_lines, Browse};
use crate::events::backward::Needle;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

/// `1 234 567`: line numbers of a big log read at a glance.
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// "line 1 234 of 3 245 678" ("event …" in a store), or as much of it as
/// is known.
pub fn position_words(b: &Browse) -> String {
    let total = match (b.count.total(), b.count.counting) {
        (Some(t), _) => grouped(t),
        (None, Some(p)) => format!(
            "≥{} (counting {}%)",
            grouped(p.lines),
            p.scanned * 100 / p.len.max(1)
        ),
        (None, None) => "?".into(),
    };
    let noun = b.nouns.entry;
    match b.position() {
        Some(n) => format!("{noun} {} of {total}", grouped(n)),
        None => format!("{noun} ? of {total}"),
    }
}

/// "match 3 of 41", "match ? of ≥12…" while the count runs, or "41
/// matches" when the cursor is off the match the last search found.
pub fn match_words(b: &Browse) -> Option<String> {
    let s = b.search.as_ref()?;
    let h = s.hits;
    let total = if h.done {
        grouped(h.counted)
    } else if h.counted == 0 {
        return Some("counting matches…".into());
    } else {
        format!("≥{}…", grouped(h.counted))
    };
    Some(if b.on_focus() {
        let rank = h.rank.map_or("?".to_string(), grouped);
        format!("match {rank} of {total}")
    } else if h.done && h.counted == 1 {
        "1 match".to_string()
    } else {
        format!("{total} matches")
    })
}

/// Every match of `needle` in a line as drawn, restyled with `hit`. The
/// line's spans are already sanitised, and this only cuts them where a
/// match begins or ends: an escaped control character stays escaped.
/// Also says whether the line shows a match at all.
pub fn highlight<'a>(line: Line<'a>, needle: &Needle, hit: Style) -> (Line<'a>, bool) {
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    let ranges = needle.ranges(&text);
    if ranges.is_empty() {
        return (line, false);
    }
    let mut spans = Vec::with_capacity(line.spans.len() + 2 * ranges.len());
    let mut at = 0usize;
    for span in line.spans {
        let (start, end) = (at, at + span.content.len());
        at = end;
        // Cut points inside this span: its ends and every match edge.
        let mut cuts = vec![start];
        for r in ranges.iter().filter(|r| r.start < end && r.end > start) {
            cuts.extend([r.start.max(start), r.end.min(end)]);
        }
        cuts.push(end);
        cuts.dedup();
        if cuts.len() == 2 && !ranges.iter().any(|r| r.start <= start && r.end >= end) {
            spans.push(span);
            continue;
        }
        for w in cuts.windows(2) {
            let (a, z) = (w[0], w[1]);
            if a == z {
                continue;
            }
            let piece = &span.content[a - start..z - start];
            let inside = ranges.iter().any(|r| r.start <= a && z <= r.end);
            let style = if inside {
                span.style.patch(hit)
            } else {
                span.style
            };
            spans.push(Span::styled(piece.to_string(), style));
        }
    }
    (Line::from(spans).style(line.style), true)
}

/// What the pane's title and lines depend on beyond the browse model.
#[derive(Debug, Clone, Copy)]
pub struct Pane<'a> {
    pub focused: bool,
    /// The view is paused (`p`).
    pub paused: bool,
    /// The shown clock's date (`YYYY-MM-DD`).
    pub today: &'a str,
    /// The search being typed, if it is.
    pub typing: Option<&'a TextInput>,
}

/// The events pane in browse mode.
pub fn draw(frame: &mut Frame, area: Rect, b: &Browse, pane: Pane, theme: &Theme) {
    let Pane {
        focused,
        paused,
        today,
        typing,
    } = pane;
    let cap = area.height.saturating_sub(1) as usize;
    let mut title = vec![
        Span::styled(
            format!("{}events", if focused { "» " } else { "" }),
            theme.title(focused),
        ),
        Span::styled(format!(" · {}", position_words(b)), theme.key()),
    ];
    if let Some(input) = typing {
        title.push(Span::raw(" · search: "));
        title.extend(super::cells::cursor_spans(input, true, theme));
    } else if let Some(s) = &b.search {
        title.push(Span::raw(format!(" · /{}", safe(s.needle.text()))));
        if let Some(words) = match_words(b) {
            title.push(Span::styled(format!(" · {words}"), theme.key()));
        }
        title.push(Span::styled(
            if s.running {
                " searching…"
            } else {
                " (n next, N previous)"
            },
            theme.dim(),
        ));
    }
    // Browsing is not following: say what arrived meanwhile.
    if paused {
        title.push(Span::styled(" · paused", theme.key()));
    }
    if b.new_lines > 0 {
        title.push(Span::styled(
            format!(" · {} new", grouped(b.new_lines)),
            theme.key(),
        ));
    }
    if let Some(m) = &b.message {
        title.push(Span::styled(format!(" · {m}"), theme.error()));
    }
    title.push(Span::styled(" · Enter: raw · G follows", theme.dim()));

    // Keep the cursor on screen, a third from the top when possible.
    let start = b
        .cursor
        .saturating_sub(cap.saturating_sub(cap / 3).saturating_sub(1))
        .min(b.rows.len().saturating_sub(cap));
    let mut lines: Vec<Line> = Vec::with_capacity(cap);
    let dated = super::event_line::needs_dates(
        b.rows
            .iter()
            .skip(start)
            .take(cap)
            .map(|r| r.row.ts.as_str()),
        today,
    );
    for (i, r) in b.rows.iter().enumerate().skip(start).take(cap) {
        let mut line = super::event_line::row(&r.row, theme, dated);
        if let Some(s) = b.search.as_ref().filter(|_| b.is_match(r)) {
            let (lit, shown) = highlight(line, &s.needle, theme.hit());
            // A match only in what the line does not show (a field name,
            // the raw JSON): the whole line is marked instead.
            line = if shown {
                lit
            } else {
                lit.patch_style(theme.key())
            };
        }
        if i == b.cursor {
            line = line.patch_style(if focused {
                theme.selected()
            } else {
                ratatui::style::Style::new().add_modifier(Modifier::UNDERLINED)
            });
        }
        lines.push(line);
    }
    if lines.is_empty() {
        let word = if b.waiting() {
            "reading…".to_string()
        } else {
            format!("no {}s in this log", b.nouns.entry)
        };
        lines.push(Line::styled(word, theme.dim()));
    }
    let p =
        Paragraph::new(lines).block(Block::new().borders(Borders::TOP).title(Line::from(title)));
    frame.render_widget(p, area);
}

/// The selected line's raw JSON, over the screen.
pub fn draw_raw(frame: &mut Frame, area: Rect, b: &Browse, theme: &Theme) {
    let Some(r) = b.selected() else {
        return;
    };
    let lines: Vec<Line> = raw_lines(&r.line).into_iter().map(Line::raw).collect();
    let title = format!(
        " {} · {} {} — Esc or Enter closes ",
        position_words(b),
        b.nouns.mark,
        grouped(r.line.offset)
    );
    super::help::overlay(frame, area, &title, lines, 0, theme);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1 000");
        assert_eq!(grouped(3_245_678), "3 245 678");
    }
}
