//! What the screen adds when it shows several roots: the
//! header's per-root counts, one banner line per root that cannot be read,
//! and the root of each event and hazard. With one root none of it is drawn,
//! so the one-root screen is exactly what it always was.

use super::cells::{safe, safe_path, Theme};
use crate::claims::{ClaimState, Counts};
use crate::dashboard::model::App;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// One line per root that cannot be read as a normal one, each naming its
/// root: a missing root never hides the others' rows.
pub fn banners(app: &App, theme: &Theme) -> Vec<Line<'static>> {
    if !app.origins.several() {
        return Vec::new();
    }
    app.origins
        .problems()
        .map(|(i, p)| {
            Line::styled(
                format!("⚠ root {}: {p}", safe(app.origins.label(i))),
                theme.error(),
            )
        })
        .collect()
}

/// The table's area split into the roots' banner lines and what is left for
/// the table itself; drawing and mouse hits both go through it.
pub fn split_table_area(app: &App, area: Rect) -> (Rect, Rect) {
    let n = app.origins.problems().count();
    let n = if app.origins.several() { n as u16 } else { 0 };
    // Over a store that hosts publish into, one line names the hosts.
    let hosts = app.store.as_ref().is_some_and(|v| v.fleet.is_active());
    // The table keeps at least its title, header and one row.
    let n = (n + u16::from(hosts)).min(area.height.saturating_sub(3));
    let banner = Rect::new(area.x, area.y, area.width, n);
    let table = Rect::new(area.x, area.y + n, area.width, area.height - n);
    (banner, table)
}

pub fn draw_banners(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    if area.height > 0 {
        let mut lines = Vec::new();
        if let Some(store) = app.store.as_ref().filter(|v| v.fleet.is_active()) {
            lines.push(super::store::hosts_line(app, store, theme, area.width));
        }
        lines.extend(banners(app, theme));
        frame.render_widget(Paragraph::new(lines), area);
    }
}

/// The header's second line with several roots: each root's label and
/// counts, shortened until it fits `width`.
pub fn header_line(app: &App, theme: &Theme, width: u16) -> Line<'static> {
    // Each origin's own count, as its lane tallied it (counted once).
    let tallies = app.shown_tallies();
    let counts: Vec<(usize, Counts)> = app
        .origins
        .shown()
        .map(|i| (i, tallies.get(i).map(|t| t.counts).unwrap_or_default()))
        .collect();
    let problem = |i: usize| app.origins.problem(i);
    let full = |i: usize, c: &Counts| -> String {
        if let Some(p) = problem(i) {
            return format!("⚠ {}", problem_word(p));
        }
        let mut s = format!("{}", c.total());
        let bad: Vec<String> = [
            (ClaimState::Suspect, c.suspect),
            (ClaimState::Stale, c.stale),
            (ClaimState::Corrupted, c.corrupted),
            (ClaimState::Unreadable, c.unreadable),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(st, n)| format!("{n} {}", st.as_str()))
        .collect();
        if !bad.is_empty() {
            s.push_str(&format!(" ({})", bad.join(", ")));
        }
        s
    };
    let short = |i: usize, c: &Counts| -> String {
        if problem(i).is_some() {
            "⚠".into()
        } else {
            c.total().to_string()
        }
    };
    for form in [&full as &dyn Fn(usize, &Counts) -> String, &short] {
        let mut spans = vec![Span::styled(
            format!(" {} {} ", app.origins.len(), noun(app)),
            theme.label(),
        )];
        for (n, (i, c)) in counts.iter().enumerate() {
            let i = *i;
            if n > 0 {
                spans.push(Span::styled(" ·", theme.dim()));
            }
            spans.push(Span::styled(
                format!(" {} ", safe(app.origins.label(i))),
                theme.key(),
            ));
            spans.push(Span::raw(form(i, c)));
        }
        let line = Line::from(spans);
        if line.width() <= width as usize {
            return line;
        }
    }
    Line::from(vec![
        Span::styled(
            format!(" {} {} ", app.origins.len(), noun(app)),
            theme.label(),
        ),
        Span::styled(
            " (too many to count here: sort or filter by root)",
            theme.dim(),
        ),
    ])
}

/// What the origins are called together: roots, when all are.
fn noun(app: &App) -> &'static str {
    if app.origins.first_root().is_some()
        && app.origins.iter().all(|o| o.root.is_some() || !o.named)
    {
        "roots"
    } else {
        "origins"
    }
}

/// A root's problem in a word, for the header (its banner says it whole).
fn problem_word(p: &crate::dashboard::action::RootProblem) -> &'static str {
    use crate::dashboard::action::RootProblem;
    match p {
        RootProblem::Missing(_) => "missing",
        RootProblem::NotADirectory(_) => "not a directory",
        RootProblem::Unreadable(..) => "unreadable",
    }
}

/// An event row's root, padded to the widest label so the rows align.
pub fn event_root(app: &App, root: usize, theme: &Theme) -> Span<'static> {
    let w = app
        .origins
        .labels()
        .iter()
        .map(|l| safe(l).chars().count())
        .max()
        .unwrap_or(0);
    Span::styled(
        format!("{:<w$} ", safe(app.origins.label(root))),
        theme.key(),
    )
}

/// The detail pane's "root" field: the label, and the path in full.
pub fn detail_value(app: &App, root: usize) -> String {
    let path = app
        .origins
        .get(root)
        .map(|r| safe_path(&r.root))
        .unwrap_or_default();
    format!("{} — {path}", safe(app.origins.label(root)))
}

/// The whole-log views (the timeline, browsing the events log) read every
/// log of the store as one, or one root's: where that is more than one
/// log, or one of several roots', they say which at the right end of their
/// first line.
pub fn log_root_note(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let set = &app.events.browse.set;
    if area.height == 0 || !(app.origins.several() || app.events.browse.reads_a_set()) {
        return;
    }
    let note = if app.events.browse.reads_a_set() {
        let names: Vec<&str> = set.iter().map(|s| s.name.as_str()).collect();
        format!(" {} logs: {} ", set.len(), safe(&names.join(", ")))
    } else {
        format!(" log of root {} ", safe(app.origins.label(app.log_root)))
    };
    let w = (note.chars().count() as u16).min(area.width);
    let at = Rect::new(area.x + area.width - w, area.y, w, 1);
    frame.render_widget(Paragraph::new(Span::styled(note, theme.key())), at);
}

/// The help's word on several roots, when there are several.
pub fn help_note(app: &App) -> Option<String> {
    app.origins.several().then(|| {
        format!(
            "Several roots ({}): the root column says where each claim lives; root:TEXT \
             filters by root path; r, n and F act in the selected row's root, and a asks \
             which root. t opens the timeline, and the events search reads, every root's \
             log as one (the pane's note names them).",
            safe(&app.origins.labels().join(", "))
        )
    })
}
