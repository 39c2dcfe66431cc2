//! Text tables and summaries shared by `list`, `doctor` and the fleet's
//! list: padded columns of sanitized cells, the counts line, the hazards
//! block.

use super::output::{decimal, hazard_text, path_text, Out};
use crate::claims::census::why_with_hazards;
use crate::claims::words::count;
use crate::claims::{Counts, ItemRules, Status};
use crate::sanitize::sanitize;
use crate::store::{Listing, Member, Store, StoreHazard};
use std::borrow::Cow;
use std::io::{self, Write};

pub(super) fn store_hazard_text(h: &StoreHazard) -> String {
    format!("{}  {}  {}", h.kind, sanitize(&h.path), sanitize(&h.detail))
}

/// How a table and its lines name the origin of each row: not at all
/// over one origin; by root (`ROOT`, `root=DIR`) over roots alone, as
/// always; else by origin (`ORIGIN`, `origin=URL`).
pub(super) struct Shown {
    several: bool,
    roots: bool,
}

impl Shown {
    pub(super) fn of(store: &Store) -> Shown {
        Shown {
            several: store.several(),
            roots: store.all_roots(),
        }
    }

    /// The origin column's title.
    pub(super) fn title(&self) -> &'static str {
        if self.roots {
            "ROOT"
        } else {
            "ORIGIN"
        }
    }

    /// A row's origin cell, sanitized; None over one origin.
    pub(super) fn cell(&self, m: Option<&Member>) -> Option<String> {
        let m = m.filter(|_| self.several)?;
        Some(match m.root_dir() {
            Some(dir) if self.roots => path_text(dir),
            _ => sanitize(&m.name()).into_owned(),
        })
    }
}

/// Every hazard of a listing as a line of text (each naming its origin
/// when the listing covers several), each member's sweep's then its
/// store's own (etcd's), so that one count covers both.
pub(super) fn hazard_lines(listing: &Listing, store: &Store) -> Vec<String> {
    let shown = Shown::of(store);
    let mut lines = Vec::new();
    for l in &listing.members {
        let suffix = origin_suffix(&shown, store.member(l.at));
        lines.extend(
            l.sweep
                .hazards
                .iter()
                .map(|h| format!("{}{suffix}", hazard_text(h))),
        );
        lines.extend(
            l.store_hazards
                .iter()
                .map(|h| format!("{}{suffix}", store_hazard_text(h))),
        );
    }
    lines
}

/// The counts line, then the hazards (each with its root when it has one).
pub(super) fn summary(out: &mut Out, n: usize, c: Counts, hazards: &[String]) -> io::Result<()> {
    let mut line = format!(
        "{}: {} live, {} suspect, {} stale, {} corrupted",
        count(n, "claim"),
        c.live,
        c.suspect,
        c.stale,
        c.corrupted
    );
    // Held as far as anyone can tell, so never left out of the sum.
    if c.unreadable > 0 {
        line.push_str(&format!(", {} unreadable", c.unreadable));
    }
    // An offline host's copies: on the list, but vouched for by nobody.
    if c.last_known > 0 {
        line.push_str(&format!(", {} last known", c.last_known));
    }
    out.line(&line)?;
    if !hazards.is_empty() {
        hazards_text(out, hazards)?;
    }
    Ok(())
}

/// "N hazards:", then each hazard's line, indented.
pub(super) fn hazards_text(out: &mut Out, lines: &[String]) -> io::Result<()> {
    out.line(&format!("{}:", count(lines.len(), "hazard")))?;
    let w = out.writer();
    for line in lines {
        w.write_all(b"  ")?;
        w.write_all(line.as_bytes())?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// `  root=DIR` (over roots alone) or `  origin=URL` after a line, when
/// the line belongs to one of several origins.
pub(super) fn origin_suffix(shown: &Shown, m: Option<&Member>) -> String {
    let word = if shown.roots { "root" } else { "origin" };
    shown
        .cell(m)
        .map(|cell| format!("  {word}={cell}"))
        .unwrap_or_default()
}

/// One table row's cells, sanitized (borrowed unless something needed an
/// escape, which is rare), so a 10 000-row table builds no strings per row.
struct Row<'a> {
    root: Option<&'a str>,
    state: &'static str,
    key: Cow<'a, str>,
    holder: Cow<'a, str>,
    pid: Option<i32>,
    why: Cow<'a, str>,
}

impl Row<'_> {
    /// The padded text cells, in column order (then PID, a number, and
    /// WHY, the free text, which is not padded).
    fn padded(&self) -> [&str; 4] {
        [self.root.unwrap_or(""), self.state, &self.key, &self.holder]
    }
}

/// [ROOT|ORIGIN] STATE KEY HOLDER PID WHY, columns padded to the widest
/// sanitized cell; the origin column (titled `origin_title`) only when
/// the rows name their origins. Written straight into the output, one line
/// per row. WHY says, after the verdict, each hazard a claim is that its
/// verdict does not (by its member's `rules`).
pub(super) fn write_table<'a>(
    out: &mut Out,
    items: &'a [(Option<&'a str>, &'a Status, ItemRules)],
    origin_title: &str,
) -> io::Result<()> {
    let with_root = items.iter().any(|(r, _, _)| r.is_some());
    let rows: Vec<Row> = items
        .iter()
        .map(|(root, s, rules)| {
            let rules = *rules;
            let (holder, pid) = match &s.record {
                Some(r) => (sanitize(&r.holder), Some(r.pid)),
                None => (Cow::Borrowed("-"), None),
            };
            Row {
                root: *root,
                state: s.state.as_str(),
                key: sanitize(&s.key),
                holder,
                pid,
                why: match (&s.error, why_with_hazards(s, rules)) {
                    (Some(e), _) => sanitize(e),
                    (None, Cow::Borrowed(why)) => sanitize(why),
                    (None, Cow::Owned(why)) => Cow::Owned(sanitize(&why).into_owned()),
                },
            }
        })
        .collect();
    // Widths of ROOT, STATE, KEY, HOLDER, PID; the header counts too.
    let mut widths = [width(origin_title), 5, 3, 6, 3];
    let mut pid_buf = [0u8; 20];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.padded()) {
            *w = (*w).max(width(cell));
        }
        let pid = row.pid.map_or(1, |p| decimal(p.into(), &mut pid_buf).len());
        widths[4] = widths[4].max(pid);
    }
    let first = usize::from(!with_root);
    let w = out.writer();
    let header = [origin_title, "STATE", "KEY", "HOLDER", "PID"];
    for (i, cell) in header.iter().enumerate().skip(first) {
        pad(w, cell, widths[i])?;
    }
    w.write_all(b"WHY\n")?;
    for row in &rows {
        let cells = row.padded();
        for i in first..4 {
            pad(w, cells[i], widths[i])?;
        }
        let pid = row
            .pid
            .map_or(&b"-"[..], |p| decimal(p.into(), &mut pid_buf));
        pad_bytes(w, pid, pid.len(), widths[4])?;
        w.write_all(row.why.as_bytes())?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// A cell and the spaces after it: two past the column's width.
pub(super) fn pad(w: &mut impl Write, cell: &str, column: usize) -> io::Result<()> {
    pad_bytes(w, cell.as_bytes(), width(cell), column)
}

pub(super) fn pad_bytes(
    w: &mut impl Write,
    cell: &[u8],
    cell_width: usize,
    column: usize,
) -> io::Result<()> {
    const SPACES: &[u8] = &[b' '; 64];
    w.write_all(cell)?;
    let mut n = column - cell_width + 2;
    while n > 0 {
        let k = n.min(SPACES.len());
        w.write_all(&SPACES[..k])?;
        n -= k;
    }
    Ok(())
}

/// Display width as the table counts it: chars (bytes, for ASCII).
pub(super) fn width(cell: &str) -> usize {
    if cell.is_ascii() {
        cell.len()
    } else {
        cell.chars().count()
    }
}

/// A header and rows of cells as padded lines (the fleet's table, whose
/// rows are few enough to build as strings).
pub(super) fn columns(header: &[String], rows: &[Vec<String>]) -> Vec<String> {
    // Every column but the last (WHY, free text) is padded.
    let mut widths = vec![0usize; header.len().saturating_sub(1)];
    for r in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        for (w, cell) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(width(cell));
        }
    }
    std::iter::once(header)
        .chain(rows.iter().map(Vec::as_slice))
        .map(|r| {
            let mut line = String::new();
            for (w, cell) in widths.iter().zip(r.iter()) {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', w - width(cell) + 2));
            }
            if let Some(last) = r.get(widths.len()) {
                line.push_str(last);
            }
            line
        })
        .collect()
}
