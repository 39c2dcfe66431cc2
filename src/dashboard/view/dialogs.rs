//! The acquire form, the renew form and the force-release confirmation.
//! Each dangerous action has its own wording: nothing is confirmed by a
//! generic "are you sure".

use super::cells::{safe, state_label, Theme};
use super::layout::{centered, wrapped_height};
use crate::claims::words::count;
use crate::claims::{hazard, parse_ttl_ms, ClaimState, Hazard};
use crate::dashboard::input::TextInput;
use crate::dashboard::model::{
    AcquireForm, App, CleanConfirm, Dialog, ForceConfirm, ForgetConfirm, QuitConfirm, RenewForm,
};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;
use std::borrow::Cow;

pub fn draw(frame: &mut Frame, area: Rect, d: &Dialog, app: &App, theme: &Theme) {
    let (title, lines) = match d {
        Dialog::Acquire(f) => (" acquire a key ", acquire(f, app, theme)),
        Dialog::Renew(f) => (
            " renew a claim ",
            in_root(app, f.root, renew(f, app, theme)),
        ),
        Dialog::ForceRelease(f) => (
            " force-release ",
            in_root(app, f.root, force(f, app, theme)),
        ),
        Dialog::Quit(q) => (" quit ", quit(q, app, theme)),
        Dialog::Clean(c) => (" clean the root (doctor --fix) ", clean(c, theme)),
        Dialog::CleanOne(h) => (" clean one entry ", clean_one(h, theme)),
        Dialog::Bulk(c) => (" marked claims ", super::bulk::lines(c, app, theme)),
        Dialog::ForgetHost(f) => (
            " forget an offline host ",
            forget_host_lines(f).into_iter().map(Line::from).collect(),
        ),
        Dialog::ClearMarks(c) => (" marked claims ", super::bulk::clear_lines(c, theme)),
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

fn input<'a>(theme: &Theme, name: &'a str, value: &'a TextInput, focused: bool) -> Line<'a> {
    let mut spans = vec![
        Span::styled(if focused { "› " } else { "  " }, theme.key()),
        label(theme, name),
        Span::raw("["),
    ];
    spans.extend(super::cells::cursor_spans(value, focused, theme));
    spans.push(Span::raw("]"));
    Line::from(spans)
}

fn error_line<'a>(theme: &Theme, e: &'a Option<String>) -> Option<Line<'a>> {
    e.as_deref()
        .map(|e| Line::styled(format!("✖ {}", safe(e)), theme.error()))
}

/// With several roots, a verb's dialog says first which root it acts on.
fn in_root<'a>(app: &App, root: usize, mut lines: Vec<Line<'a>>) -> Vec<Line<'a>> {
    if app.origins.several() {
        let value = super::roots::detail_value(app, root);
        lines.insert(0, row(&Theme { color: app.color }, "root", value));
    }
    lines
}

fn acquire<'a>(f: &'a AcquireForm, app: &App, theme: &Theme) -> Vec<Line<'a>> {
    let mut out: Vec<Line> = AcquireForm::LABELS
        .iter()
        .zip(f.fields())
        .enumerate()
        .map(|(i, (name, value))| input(theme, name, value, i == f.field))
        .collect();
    if let Some(root) = &f.root {
        out.push(input(theme, "root", root, f.field == 4));
        out.push(Line::styled(
            format!("roots: {}", safe(&app.origins.labels().join(", "))),
            theme.dim(),
        ));
    }
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
            format!("the deadline becomes now + TTL; offered: {}", f.offered),
            theme.dim(),
        ),
    ];
    out.extend(error_line(theme, &f.error));
    if f.confirming {
        let until = parse_ttl_ms(&f.ttl)
            .map(|t| super::cells::clock(app.now + t, app.local_time, "%H:%M:%S"))
            .unwrap_or_default();
        if f.state == ClaimState::Suspect {
            out.push(Line::styled(
                format!(
                    "⚠ the holder's pid {} is gone: renewing keeps {} blocked until {until} \
                     for a holder that may never come back.",
                    f.pid,
                    safe(&f.key)
                ),
                theme.error(),
            ));
            out.push(Line::styled(
                "A respawned worker renews its own claim; renew for it only if you know it will \
                 return. Force-release (F) frees the key instead.",
                theme.dim(),
            ));
        } else {
            out.push(Line::from(vec![
                Span::styled("⚠ this claim is not yours: ", theme.error()),
                Span::raw(safe(&f.holder)),
                Span::raw(" is not "),
                Span::raw(safe(&app.operator)),
                Span::raw(format!(" — it stays held until {until}")),
            ]));
        }
        if f.foreign {
            out.push(Line::styled(
                format!(
                    "the claim_renewed event records you ({}) as the operator",
                    safe(&app.operator)
                ),
                theme.dim(),
            ));
        }
        out.push(Line::styled(
            if f.foreign {
                "renew it on its holder's behalf? y renews · any other key goes back · Esc cancels"
            } else {
                "renew it all the same? y renews · any other key goes back · Esc cancels"
            },
            theme.key(),
        ));
    } else {
        out.push(Line::styled("Enter renew · Esc cancel", theme.dim()));
    }
    out
}

fn force<'a>(f: &'a ForceConfirm, app: &App, theme: &Theme) -> Vec<Line<'a>> {
    // Where the claim goes is its origin's to say: a lockfile to a root's
    // .expired/, a store's key under its expired/ prefix.
    let words = app.origins.words(f.root);
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
            format!(
                "The {} is {} (never deleted) and audited as claim_force_released; \
                 refused if the claim changed since it was shown.",
                words.noun, words.archive
            ),
            theme.dim(),
        ),
    ];
    if let Some(o) = &f.host {
        // A copy: the words say who acts, and where.
        out.pop();
        out.push(row(
            theme,
            "host",
            format!("{} · root {}", safe(&o.hostname), safe(&o.root_path)),
        ));
        out.push(Line::styled(
            "A published copy: the request goes to that host's publisher, which \
             archives the lockfile to .expired/ in its own root and answers; refused \
             if the claim changed there since it was published.",
            theme.dim(),
        ));
    }
    if f.needs_typed_key() {
        out.push(Line::styled(
            if f.state == ClaimState::Unreadable {
                "⚠ this claim cannot be read here, so it may be LIVE: its holder may be \
                 running and believe it owns the key."
            } else {
                "⚠ this claim is LIVE: its holder is running and believes it owns the key."
            },
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

/// Shown claims before they are named: a dashboard holding many lists the
/// first few and the count.
const QUIT_LISTED: usize = 5;

fn quit<'a>(q: &'a QuitConfirm, app: &App, theme: &Theme) -> Vec<Line<'a>> {
    let n = q.keys.len();
    let mut out = vec![Line::raw(format!(
        "You hold {} taken from this dashboard:",
        count(n, "claim")
    ))];
    for (i, k) in q.keys.iter().enumerate().take(QUIT_LISTED) {
        // With several roots one key may be held in two: say where.
        let root = match q.roots.get(i) {
            Some(r) if app.origins.several() => format!(" ({})", safe(app.origins.label(*r))),
            _ => String::new(),
        };
        out.push(Line::raw(format!("  {}{root}", safe(k))));
    }
    if n > QUIT_LISTED {
        out.push(Line::styled(
            format!("  … and {} more", n - QUIT_LISTED),
            theme.dim(),
        ));
    }
    out.push(Line::styled(
        if n == 1 {
            "Once the dashboard exits, the claim names a dead pid: Suspect until its TTL \
             runs out, Stale at once when PID-bound."
        } else {
            "Once the dashboard exits, they name a dead pid: Suspect until their TTL runs \
             out, Stale at once when PID-bound."
        },
        theme.dim(),
    ));
    out.push(Line::styled(
        "r release them and quit · k keep them and quit · Esc stay · Ctrl-C twice: quit, keeping them",
        theme.key(),
    ));
    out
}

fn clean<'a>(c: &'a CleanConfirm, theme: &Theme) -> Vec<Line<'a>> {
    let mut out = vec![Line::raw(format!(
        "This removes {} abandoned entr{} under the root:",
        c.hazards.len(),
        if c.hazards.len() == 1 { "y" } else { "ies" }
    ))];
    for h in &c.hazards {
        out.push(Line::from(vec![
            Span::styled(format!("  {:<12} ", h.kind.name()), theme.error()),
            Span::raw(super::cells::safe_path(h.path())),
        ]));
    }
    out.push(Line::styled(
        "Each is checked again as it goes (a mutex taken meanwhile is left). Claims are \
         never touched here: F force-releases them.",
        theme.dim(),
    ));
    out.push(Line::styled("y clean · Esc cancel", theme.key()));
    out
}

/// `x` on one entry: what it is, and what `y` does to it alone.
fn clean_one<'a>(h: &'a Hazard, theme: &Theme) -> Vec<Line<'a>> {
    let what = if h.kind == hazard::STALE_MUTEX {
        "It is stolen by rename (as a waiter steals a corpse) and removed."
    } else {
        "It is removed: one file, or one mutex and its owner file, never more."
    };
    vec![
        Line::raw("This cleans one abandoned entry, and nothing else under the root:"),
        Line::from(vec![
            Span::styled(format!("  {:<12} ", h.kind.name()), theme.error()),
            Span::raw(super::cells::safe_path(h.path())),
        ]),
        Line::raw(format!("  {}", safe(&h.detail))),
        Line::raw(what),
        Line::styled(
            "It is judged again when y is pressed: if it changed since it was listed \
             (taken again, younger, gone), nothing is removed and the status line says so.",
            theme.dim(),
        ),
        Line::styled("y clean it · Esc cancel", theme.key()),
    ]
}

/// The confirmation's words, each line sanitized (a host named itself).
fn forget_host_lines(f: &ForgetConfirm) -> Vec<String> {
    vec![
        format!(
            "Forget host {} (machine id {})?",
            crate::sanitize::sanitize(&f.label),
            crate::sanitize::sanitize(&f.host_id)
        ),
        format!(
            "It is offline, last seen {}. Its record, its {} last known and its mirrored \
             events leave the store, as `claimtop fleet forget` does; its own roots are \
             never touched. Refused if its publisher is back meanwhile.",
            crate::time::instant_words(f.last_seen_ms, false),
            crate::claims::words::count(f.rows, "claim")
        ),
        "y forget it · Esc keep it".to_string(),
    ]
}
