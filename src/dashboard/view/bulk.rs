//! The bulk confirmation: every marked claim a verb acts on, and those it
//! leaves alone with the reason, before anything is done.

use super::cells::{safe, state_label, Theme};
use crate::claims::words::count;
use crate::dashboard::model::{App, BulkConfirm, BulkVerb, MarksConfirm};
use ratatui::text::{Line, Span};

/// Claims listed one per line before the rest are counted.
const LISTED: usize = 12;

pub fn lines<'a>(c: &'a BulkConfirm, app: &App, theme: &Theme) -> Vec<Line<'a>> {
    let n = c.items.len();
    let mut out = vec![Line::raw(format!(
        "{} {}:",
        capitalised(c.verb.words()),
        count(n, "marked claim")
    ))];
    // Said before the list: the table behind shows fewer than this acts on.
    if c.hidden > 0 {
        out.push(Line::styled(
            format!(
                "⚠ {} of them hidden by the filter ({} shown)",
                c.hidden,
                n - c.hidden
            ),
            theme.error(),
        ));
    }
    for i in c.items.iter().take(LISTED) {
        let mut spans = vec![
            Span::raw("  "),
            Span::styled(
                format!("{:<12}", state_label(i.state)),
                theme.state(i.state),
            ),
            Span::raw(safe(&i.key).into_owned()),
        ];
        if let Some(h) = &i.holder {
            spans.push(Span::styled(format!("  {}", safe(h)), theme.dim()));
        }
        if app.origins.several() {
            spans.push(Span::styled(
                format!("  ({})", safe(app.origins.label(i.root))),
                theme.dim(),
            ));
        }
        if let Some(o) = &i.host {
            spans.push(Span::styled(
                format!("  asks {}", safe(&o.hostname)),
                theme.dim(),
            ));
        }
        out.push(Line::from(spans));
    }
    if n > LISTED {
        out.push(Line::styled(
            format!("  … and {} more", n - LISTED),
            theme.dim(),
        ));
    }
    if !c.skipped.is_empty() {
        out.push(Line::styled(
            format!("Left alone ({}):", c.skipped.len()),
            theme.dim(),
        ));
        for (k, why) in c.skipped.iter().take(LISTED) {
            out.push(Line::styled(
                format!("  {} — {}", safe(k), safe(why)),
                theme.dim(),
            ));
        }
    }
    out.push(Line::styled(
        match c.verb {
            BulkVerb::Release => "Each is released as r releases it; each answer is its own line (m lists them).",
            BulkVerb::Renew => "Each is renewed for the TTL last asked for it (else 30m), naming you on others' claims.",
            BulkVerb::ForceRelease => "Each lockfile is archived to .expired/ and audited; each is refused if it changed since it was shown.",
        },
        theme.dim(),
    ));
    if c.needs_typed_count() {
        out.push(Line::styled(
            "⚠ some of these may be LIVE: their holders may be running and believe they own the key.",
            theme.error(),
        ));
        let mut spans = vec![Span::styled("› type the number of claims: [", theme.key())];
        spans.extend(super::cells::cursor_spans(&c.typed, true, theme));
        spans.push(Span::raw("]"));
        out.push(Line::from(spans));
    }
    if let Some(e) = &c.error {
        out.push(Line::styled(format!("✖ {}", safe(e)), theme.error()));
    }
    out.push(Line::styled(
        if c.needs_typed_count() {
            format!("type {n}, then Enter · Esc cancel")
        } else {
            format!("y {} {} · Esc cancel", c.verb.words(), count(n, "claim"))
        },
        theme.key(),
    ));
    out
}

/// Esc over more marks than a screen shows: how many would go.
pub fn clear_lines<'a>(c: &MarksConfirm, theme: &Theme) -> Vec<Line<'a>> {
    let mut out = vec![Line::raw(format!(
        "Drop every mark: {}?",
        count(c.marked, "marked claim")
    ))];
    if c.hidden > 0 {
        out.push(Line::styled(
            format!("{} of them hidden by the filter.", c.hidden),
            theme.dim(),
        ));
    }
    out.push(Line::styled(
        "y drop them · Esc keep them (Ctrl-\\ or U drops them without asking)",
        theme.key(),
    ));
    out
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
