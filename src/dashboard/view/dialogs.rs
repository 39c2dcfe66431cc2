//! The acquire form, the renew form and the force-release confirmation.
//! Each dangerous action has its own wording: nothing is confirmed by a
//! generic "are you sure".

use super::layout::{centered, wrapped_height};
use super::{safe, state_label, Theme};
use crate::dashboard::app::{AcquireForm, App, Dialog, ForceConfirm, RenewForm};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;
use std::borrow::Cow;

pub fn draw(frame: &mut Frame, area: Rect, d: &Dialog, app: &App, theme: &Theme) {
    let (title, lines) = match d {
        Dialog::Acquire(f) => (" acquire a key ", acquire(f, theme)),
        Dialog::Renew(f) => (" renew a claim ", renew(f, app, theme)),
        Dialog::ForceRelease(f) => (" force-release ", force(f, theme)),
    };
    let w = area.width.saturating_sub(4).min(76);
    let rect = centered(area, w, wrapped_height(&lines, w) + 2);
    frame.render_widget(Clear, rect);
    let p = Paragraph::new(lines)
        .block(
            Block::new()
                .borders(Borders::ALL)
                .title(Span::styled(title, theme.title(true))),
        )
        .wrap(Wrap { trim: false });
    frame.render_widget(p, rect);
}

fn label<'a>(theme: &Theme, name: &'a str) -> Span<'a> {
    Span::styled(format!("{name:<8} "), theme.label())
}

fn row<'a>(theme: &Theme, name: &'a str, value: impl Into<Cow<'a, str>>) -> Line<'a> {
    Line::from(vec![
        Span::raw("  "),
        label(theme, name),
        Span::raw(value.into()),
    ])
}

fn input<'a>(theme: &Theme, name: &'a str, value: &'a str, focused: bool) -> Line<'a> {
    Line::from(vec![
        Span::styled(if focused { "› " } else { "  " }, theme.key()),
        label(theme, name),
        Span::raw("["),
        Span::raw(safe(value)),
        Span::styled(if focused { "▏" } else { "" }, theme.key()),
        Span::raw("]"),
    ])
}

fn error_line<'a>(theme: &Theme, e: &'a Option<String>) -> Option<Line<'a>> {
    e.as_deref()
        .map(|e| Line::styled(format!("✖ {}", safe(e)), theme.error()))
}

fn acquire<'a>(f: &'a AcquireForm, theme: &Theme) -> Vec<Line<'a>> {
    let mut out: Vec<Line> = AcquireForm::LABELS
        .iter()
        .zip(f.fields())
        .enumerate()
        .map(|(i, (name, value))| input(theme, name, value, i == f.field))
        .collect();
    out.push(Line::styled(
        "TTL: 1h, 30m, 90s (60s–24h); empty = PID-bound to this dashboard",
        theme.dim(),
    ));
    out.extend(error_line(theme, &f.error));
    out.push(Line::styled(
        "Tab next field · Enter acquire · Esc cancel",
        theme.dim(),
    ));
    out
}

fn renew<'a>(f: &'a RenewForm, app: &'a App, theme: &Theme) -> Vec<Line<'a>> {
    let mut out = vec![
        row(theme, "key", safe(&f.key)),
        row(theme, "holder", safe(&f.holder)),
        input(theme, "ttl", &f.ttl, !f.confirming),
        Line::styled(
            "the deadline becomes now + TTL (default: the claim's original span)",
            theme.dim(),
        ),
    ];
    out.extend(error_line(theme, &f.error));
    if f.confirming {
        out.push(Line::from(vec![
            Span::styled("⚠ this claim is not yours: ", theme.error()),
            Span::raw(safe(&f.holder)),
            Span::raw(" is not "),
            Span::raw(safe(&app.operator)),
        ]));
        out.push(Line::styled(
            "renew it on its holder's behalf? y renews · any other key goes back · Esc cancels",
            theme.key(),
        ));
    } else {
        out.push(Line::styled("Enter renew · Esc cancel", theme.dim()));
    }
    out
}

fn force<'a>(f: &'a ForceConfirm, theme: &Theme) -> Vec<Line<'a>> {
    let mut out = vec![
        row(theme, "key", safe(&f.key)),
        row(
            theme,
            "holder",
            f.holder
                .as_deref()
                .map(safe)
                .unwrap_or(Cow::Borrowed("(unreadable file)")),
        ),
        row(
            theme,
            "pid",
            f.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
        ),
        Line::from(vec![
            Span::raw("  "),
            label(theme, "state"),
            Span::styled(state_label(f.state), theme.state(f.state)),
        ]),
        row(theme, "why", safe(&f.why)),
        Line::styled(
            "The lockfile is archived to .expired/ (never deleted) and audited as \
             claim_force_released; refused if the claim changed since it was shown.",
            theme.dim(),
        ),
    ];
    if f.needs_typed_key() {
        out.push(Line::styled(
            "⚠ this claim is LIVE: its holder is running and believes it owns the key.",
            theme.error(),
        ));
        out.push(input(theme, "type key", &f.typed, true));
        out.extend(error_line(theme, &f.error));
        out.push(Line::styled(
            "type the key in full, then Enter · Esc cancel",
            theme.dim(),
        ));
    } else {
        out.extend(error_line(theme, &f.error));
        out.push(Line::styled("y force-release · Esc cancel", theme.key()));
    }
    out
}
