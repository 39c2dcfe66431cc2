//! Text tables and summaries shared by `list`, `doctor` and the fleet's
//! list: padded columns of sanitized cells, the counts line, the hazards
//! block.

use super::output::{hazard_text, path_text, Out};
use crate::claims::words::count;
use crate::claims::{Counts, ItemRules, Status};
use crate::columns::{cli_columns, Avail, CellCtx, ColumnId, Face, RowView, Unplaced};
use crate::sanitize::sanitize;
use crate::store::{Listing, Member, Store};
use std::borrow::Cow;
use std::io::{self, Write};

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
            (l.sweep.hazards.iter())
                .chain(&l.store_hazards)
                .map(|h| format!("{}{suffix}", hazard_text(h, &[]))),
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

/// Room a padded column keeps at most. One long key (or holder, or origin)
/// is printed whole and pushes along only its own row's next cells: padding
/// every row to it made each line as wide as the longest cell.
pub(super) const PAD_MAX: usize = 48;

/// `list`'s table: the columns the specs give it ([ROOT|ORIGIN] STATE KEY
/// HOLDER PID WHY; the origin column, titled `origin_title`, only when the
/// rows name their origins), every cell but the last padded to its
/// column, the header counting too. Written straight into the output, one
/// line per row: the cells are borrowed unless something needed an escape,
/// which is rare, so a 10 000-row table builds few strings. WHY says,
/// after the verdict, each hazard a claim is that its verdict does not (by
/// its member's `rules`).
pub(super) fn write_table<'a>(
    out: &mut Out,
    items: &'a [(Option<&'a str>, &'a Status, ItemRules)],
    origin_title: &str,
) -> io::Result<()> {
    write_rows(out.writer(), items, origin_title)
}

fn write_rows<'a>(
    w: &mut impl Write,
    items: &'a [(Option<&'a str>, &'a Status, ItemRules)],
    origin_title: &str,
) -> io::Result<()> {
    let avail = Avail {
        several: items.iter().any(|(o, _, _)| o.is_some()),
        ..Avail::default()
    };
    let cols = cli_columns(avail);
    let ctx = CellCtx {
        now: crate::time::now_ms(),
        local_time: false,
        face: Face::Text,
        places: &Unplaced,
    };
    let mut cells: Vec<Cow<str>> = Vec::with_capacity(items.len() * cols.len());
    for (origin, status, rules) in items {
        let row = RowView {
            status,
            rules: *rules,
            copy_of: None,
            origin: *origin,
        };
        cells.extend(cols.iter().map(|c| (c.spec().text)(&ctx, &row)));
    }
    let titles: Vec<String> = cols
        .iter()
        .map(|c| match c {
            ColumnId::Root => origin_title.to_string(),
            c => c.title().to_uppercase(),
        })
        .collect();
    // Every column but the last (free text) is padded.
    let padded = cols.len().saturating_sub(1);
    let mut widths: Vec<usize> = titles[..padded].iter().map(|t| width(t)).collect();
    for row in cells.chunks(cols.len().max(1)) {
        for (wd, cell) in widths.iter_mut().zip(row) {
            *wd = (*wd).max(width(cell));
        }
    }
    for wd in &mut widths {
        *wd = (*wd).min(PAD_MAX);
    }
    let mut line = |row: &mut dyn Iterator<Item = &str>| -> io::Result<()> {
        for (i, cell) in row.enumerate() {
            match widths.get(i) {
                Some(wd) => pad(w, cell, *wd)?,
                None => w.write_all(cell.as_bytes())?,
            }
        }
        w.write_all(b"\n")
    };
    line(&mut titles.iter().map(String::as_str))?;
    for row in cells.chunks(cols.len().max(1)) {
        line(&mut row.iter().map(|c| c.as_ref()))?;
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
    let mut n = column.saturating_sub(cell_width) + 2;
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
            *w = (*w).max(width(cell)).min(PAD_MAX);
        }
    }
    std::iter::once(header)
        .chain(rows.iter().map(Vec::as_slice))
        .map(|r| {
            let mut line = String::new();
            for (w, cell) in widths.iter().zip(r.iter()) {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', w.saturating_sub(width(cell)) + 2));
            }
            if let Some(last) = r.get(widths.len()) {
                line.push_str(last);
            }
            line
        })
        .collect()
}
