//! The selected claim in full: every field, the verdict and why, the
//! metadata, and what the events log says happened to this key.

use super::{coarse, safe, safe_path, state_label, ttl_cell, utc, Theme};
use crate::claims::{ClaimState, Locality, Status};
use crate::dashboard::app::App;
use crate::dashboard::keys::Pane;
use crate::sanitize::sanitize_bytes;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;
use std::borrow::Cow;

const LABEL_WIDTH: usize = 12;

fn field<'a>(theme: &Theme, name: &'a str, value: impl Into<Cow<'a, str>>) -> Line<'a> {
    field_styled(theme, name, value, Style::new())
}

fn field_styled<'a>(
    theme: &Theme,
    name: &'a str,
    value: impl Into<Cow<'a, str>>,
    style: Style,
) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!("{name:<LABEL_WIDTH$}"), theme.label()),
        Span::styled(value.into(), style),
    ])
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let focused = app.focus == Pane::Detail;
    let lines = match app.selected_status() {
        Some(s) => claim_lines(app, s, theme),
        None => vec![Line::styled(
            "no claim selected (a acquires one)",
            theme.dim(),
        )],
    };
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
        .scroll((app.detail_scroll, 0));
    frame.render_widget(p, area);
}

fn claim_lines<'a>(app: &'a App, s: &'a Status, theme: &Theme) -> Vec<Line<'a>> {
    let now = app.shown_now();
    let mut out = vec![
        field(theme, "key", safe(&s.key)),
        field_styled(theme, "state", state_label(s.state), theme.state(s.state)),
        field(theme, "why", safe(&s.why)),
    ];
    match &s.record {
        None => {
            if let Some(e) = &s.error {
                out.push(field_styled(
                    theme,
                    "error",
                    safe(e),
                    theme.state(ClaimState::Corrupted),
                ));
            }
            out.push(field(theme, "file", safe_path(&s.file)));
            out.push(field(theme, "first bytes", sanitize_bytes(&s.head)));
        }
        Some(r) => {
            out.push(field(theme, "holder", safe(&r.holder)));
            out.push(field(theme, "pid", r.pid.to_string()));
            let loc = match s.locality {
                Some(Locality::Local) => " (this machine)",
                Some(Locality::Other) => " (another machine)",
                Some(Locality::Unknown) => " (machine unknown: treated as this one)",
                None => "",
            };
            out.push(Line::from(vec![
                Span::styled(format!("{:<LABEL_WIDTH$}", "host"), theme.label()),
                Span::raw(safe(&r.host)),
                Span::styled(loc, theme.dim()),
            ]));
            if let Some(m) = &r.machine_id {
                out.push(field(theme, "machine_id", safe(m)));
            }
            out.push(field(
                theme,
                "acquired",
                format!(
                    "{} ({} ago)",
                    utc(r.acquired_at, "%Y-%m-%dT%H:%M:%SZ"),
                    coarse(now - r.acquired_at)
                ),
            ));
            out.push(field(
                theme,
                "expires",
                match r.expires_at {
                    Some(e) => format!(
                        "{} ({})",
                        utc(e, "%Y-%m-%dT%H:%M:%SZ"),
                        ttl_cell(Some(e), now)
                    ),
                    None => "pid-bound (no TTL: lives as long as its pid)".into(),
                },
            ));
            if let Some(h) = &r.harness {
                out.push(field(theme, "harness", safe(h)));
            }
            if let Some(x) = &r.reason {
                out.push(field(theme, "reason", safe(x)));
            }
            out.push(field(theme, "schema", r.schema_version.to_string()));
            out.push(field(theme, "file", safe_path(&s.file)));
            if !r.metadata.is_empty() {
                out.push(Line::styled("metadata", theme.label()));
                let pretty = serde_json::to_string_pretty(&r.metadata).unwrap_or_default();
                for l in pretty.lines() {
                    out.push(Line::raw(format!("  {}", safe(l))));
                }
            }
        }
    }
    let history = app.history_of(&s.key);
    out.push(Line::styled(
        if history.is_empty() {
            "history     (nothing for this key in the events tail)"
        } else {
            "history"
        },
        theme.label(),
    ));
    for ev in history {
        let who = ev.holder.as_deref().map(safe).unwrap_or_default();
        out.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(super::events::short_ts(&ev.ts), theme.dim()),
            Span::raw(" "),
            Span::styled(super::events::short_kind(&ev.kind), theme.event(&ev.kind)),
            Span::raw(" "),
            Span::raw(who),
            Span::raw(" "),
            Span::styled(safe(&ev.detail), theme.dim()),
        ]));
    }
    out
}
