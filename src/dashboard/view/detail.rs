//! The selected claim in full: every field, the verdict and why, the
//! metadata, and what the events log says happened to this key.

use super::cells::{clock, coarse, safe, safe_path, state_label, ttl_cell, Theme};
use crate::claims::{ClaimState, Locality, Status};
use crate::dashboard::keys::Pane;
use crate::dashboard::model::App;
use crate::dashboard::model::RowId;
use crate::sanitize::sanitize_bytes;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

const LABEL_WIDTH: usize = 12;

/// Builds the pane's lines, wrapping each value under its own column so a
/// long why, path or holder does not run back under the labels.
struct Fields<'t> {
    theme: &'t Theme,
    /// Columns available for a value.
    room: usize,
    lines: Vec<Line<'static>>,
}

impl Fields<'_> {
    fn field(&mut self, name: &str, value: &str) {
        self.styled(name, value, Style::new());
    }

    fn styled(&mut self, name: &str, value: &str, style: Style) {
        for (i, piece) in wrap(value, self.room).into_iter().enumerate() {
            let label = if i == 0 { name } else { "" };
            self.lines.push(Line::from(vec![
                Span::styled(format!("{label:<LABEL_WIDTH$}"), self.theme.label()),
                Span::styled(piece.to_string(), style),
            ]));
        }
    }

    fn line(&mut self, line: Line<'static>) {
        self.lines.push(line);
    }
}

/// Split `s` into pieces of at most `room` characters, at a space when
/// there is one.
pub fn wrap(s: &str, room: usize) -> Vec<&str> {
    let room = room.max(8);
    let mut out = Vec::new();
    let mut rest = s;
    while rest.chars().count() > room {
        let cut = rest.char_indices().nth(room).map_or(rest.len(), |(i, _)| i);
        let at = match rest[..cut].rfind(' ') {
            Some(sp) if sp > 0 => sp + 1,
            _ => cut,
        };
        out.push(&rest[..at]);
        rest = &rest[at..];
    }
    out.push(rest);
    out
}

/// The pane's lines for the selected claim, `inner` columns wide.
fn lines(app: &App, theme: &Theme, inner: usize) -> Vec<Line<'static>> {
    // While the table shows the past, the pane speaks of the row shown
    // there, not of the live row the table hides.
    if let Some(v) = app.modes.asof() {
        return asof_lines(app, v, theme, inner.saturating_sub(LABEL_WIDTH));
    }
    match app.selected_row() {
        Some((id, s)) => claim_lines(app, id, s, theme, inner.saturating_sub(LABEL_WIDTH)),
        None => vec![Line::styled(
            "no claim selected (a acquires one)",
            theme.dim(),
        )],
    }
}

/// Columns inside the pane (beside the table, a left rule takes one).
fn inner_width(area: Rect) -> usize {
    area.width.saturating_sub(u16::from(area.x > 0)) as usize
}

/// How far the pane can scroll: its wrapped lines less the rows it shows.
pub fn max_scroll(app: &App, area: Rect) -> u16 {
    let theme = Theme { color: false };
    let inner = inner_width(area).max(1);
    let rows: usize = lines(app, &theme, inner)
        .iter()
        .map(|l| l.width().div_ceil(inner).max(1))
        .sum();
    let shown = area.height.saturating_sub(1) as usize;
    rows.saturating_sub(shown).min(u16::MAX as usize) as u16
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let focused = app.focus == Pane::Detail;
    let lines = lines(app, theme, inner_width(area));
    let title = Span::styled(
        format!("{}detail", if focused { "» " } else { "" }),
        theme.title(focused),
    );
    // Beside the table (wide layout) a left rule keeps the table's last
    // column from running into the labels.
    let borders = if area.x > 0 {
        Borders::TOP | Borders::LEFT
    } else {
        Borders::TOP
    };
    let p = Paragraph::new(lines)
        .block(Block::new().borders(borders).title(title))
        .wrap(Wrap { trim: false })
        .scroll((app.table.detail_scroll, 0));
    frame.render_widget(p, area);
}

fn claim_lines(
    app: &App,
    id: &RowId,
    s: &Status,
    theme: &Theme,
    room: usize,
) -> Vec<Line<'static>> {
    let now = app.shown_now();
    let mut f = Fields {
        theme,
        room,
        lines: Vec::new(),
    };
    f.field("key", &safe(&s.key));
    if app.origins.several() {
        f.field("root", &super::roots::detail_value(app, app.origins.of(s)));
    }
    f.styled("state", state_label(s.state), theme.state(s.state));
    // The verdict, then any hazard the claim is that the verdict does not
    // say (its record names another key): never shown as healthy alone.
    let why = crate::claims::census::why_with_hazards(s, app.shown().rules_of(id));
    f.field("why", &safe(&why));
    match &s.record {
        None => {
            if let Some(e) = &s.error {
                f.styled("error", &safe(e), theme.state(ClaimState::Corrupted));
            }
            f.field("file", &safe_path(&s.file));
            f.field("first bytes", &sanitize_bytes(&s.head));
        }
        Some(r) => {
            f.field("holder", &safe(&r.holder));
            f.field("pid", &r.pid.to_string());
            let loc = match s.locality {
                Some(Locality::Local) => " (this machine)",
                Some(Locality::Other) => " (another machine)",
                Some(Locality::Unknown) => " (machine unknown: treated as this one)",
                None => "",
            };
            f.field("host", &format!("{}{loc}", safe(&r.host)));
            if let Some(m) = &r.machine_id {
                f.field("machine_id", &safe(m));
            }
            f.field(
                "acquired",
                &format!(
                    "{} ({} ago)",
                    clock(r.acquired_at, app.local_time, "%Y-%m-%dT%H:%M:%S"),
                    coarse(now - r.acquired_at)
                ),
            );
            let expires = match r.expires_at {
                Some(e) => format!(
                    "{} ({})",
                    clock(e, app.local_time, "%Y-%m-%dT%H:%M:%S"),
                    ttl_cell(Some(e), now)
                ),
                None => "pid-bound (no TTL: lives as long as its pid)".into(),
            };
            f.field("expires", &expires);
            if let Some(h) = &r.harness {
                f.field("harness", &safe(h));
            }
            if let Some(x) = &r.reason {
                f.field("reason", &safe(x));
            }
            f.field("schema", &r.schema_version.to_string());
            f.field("file", &safe_path(&s.file));
            if !r.metadata.is_empty() {
                let pretty = serde_json::to_string_pretty(&r.metadata).unwrap_or_default();
                for (i, l) in pretty.lines().enumerate() {
                    f.field(if i == 0 { "metadata" } else { "" }, &safe(l));
                }
            }
        }
    }
    for (name, value) in super::store::tenure_fields(app, id, s) {
        f.field(name, &value);
    }
    let history = app.history_of_claim(s);
    if history.is_empty() {
        f.styled(
            "history",
            "(nothing for this key in the events tail)",
            theme.dim(),
        );
    } else {
        f.line(Line::styled("history", theme.label()));
    }
    let clock = super::event_line::clock_for(app, history.iter().copied());
    for ev in history {
        let who = ev.holder.as_deref().map(safe).unwrap_or_default();
        f.line(Line::from(vec![
            Span::raw("  "),
            Span::styled(ev.time_text(&clock).into_owned(), theme.dim()),
            Span::raw(" "),
            Span::styled(
                super::event_line::short_kind(&ev.kind).into_owned(),
                theme.event(&ev.kind),
            ),
            Span::raw(" "),
            Span::raw(who.into_owned()),
            Span::raw(" "),
            Span::styled(safe(&ev.detail).into_owned(), theme.dim()),
        ]));
    }
    f.lines
}

/// The key selected in the table as of an instant: who held it then,
/// since when, and how that tenure ended.
fn asof_lines(
    app: &App,
    v: &crate::dashboard::model::asof::AsOf,
    theme: &Theme,
    room: usize,
) -> Vec<Line<'static>> {
    let Some(r) = v.rows.as_ref().and_then(|rows| rows.get(v.selected)) else {
        let words = match v.rows {
            None => "reading the events log…",
            Some(_) => "no key was held then, as far as the log says",
        };
        return vec![Line::styled(words, theme.dim())];
    };
    let local = app.local_time;
    let full = |t: i64| clock(t, local, "%Y-%m-%d %H:%M:%S");
    let mut f = Fields {
        theme,
        room,
        lines: Vec::new(),
    };
    f.field("key", &safe(&r.key));
    if let Some(root) = &r.root {
        f.field("root", &safe(root));
    }
    f.field("holder", &safe(&r.holder));
    let held = coarse(v.at - r.since);
    let (held, since) = if r.start_seen {
        (held, full(r.since))
    } else {
        (
            format!("at least {held}"),
            format!("{} (the first the log read mentions it)", full(r.since)),
        )
    };
    f.field("held for", &format!("{held} at {}", full(v.at)));
    f.field("since", &since);
    f.field("then", &safe(&crate::events::asof::ending_words(r, full)));
    f.line(Line::from(""));
    let from = match r.known_from {
        crate::events::asof::KnownFrom::Log => "from the events log",
        crate::events::asof::KnownFrom::Store => "from the claim held now, taken before then",
    };
    f.line(Line::styled(
        format!("{from}: nothing acts on the past (G or Esc: now)"),
        theme.dim(),
    ));
    f.lines
}
