//! Text tables and summaries shared by `list`, `doctor` and the fleet's
//! list: padded columns of sanitized cells, the counts line, the hazards
//! block.

use super::output::{hazard_text, path_text, Out};
use crate::claims::words::count;
use crate::claims::{Counts, ItemRules, Status};
#[cfg(test)]
use crate::columns::Unplaced;
use crate::columns::{cli_columns, Avail, CellCtx, Face, HostName, Places, RootName, RowView};
use crate::store::Listing;
use std::borrow::Cow;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Every hazard of a listing as a line of text (each naming its root when
/// the listing covers several), the sweep's then the store's own (etcd's),
/// so that one count covers both.
pub(super) fn hazard_lines(listing: &Listing) -> Vec<String> {
    let sweep = (listing.sweep.hazards.iter().enumerate()).map(|(i, h)| {
        format!(
            "{}{}",
            hazard_text(h, &[]),
            root_suffix(listing.hazard_root(i))
        )
    });
    let store = listing.store_hazards.iter().map(|h| hazard_text(h, &[]));
    sweep.chain(store).collect()
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

/// `  root=DIR` after a line, when the line belongs to one of several roots.
pub(super) fn root_suffix(root: Option<&Path>) -> String {
    root.map(|r| format!("  root={}", path_text(r)))
        .unwrap_or_default()
}

/// Room a padded column keeps at most. One long key (or holder, or root)
/// is printed whole and pushes along only its own row's next cells: padding
/// every row to it made each line as wide as the longest cell.
pub(super) const PAD_MAX: usize = 48;

/// Where `list`'s rows live, when there are several roots.
struct ListPlaces<'a> {
    roots: &'a [PathBuf],
}

impl Places for ListPlaces<'_> {
    /// The deepest root holding the lockfile (one root may lie in another).
    fn root(&self, s: &Status) -> Option<RootName<'_>> {
        let r = (self.roots.iter())
            .filter(|r| s.file.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())?;
        Some(RootName { label: "", path: r })
    }
    fn host(&self, _: &str) -> Option<HostName<'_>> {
        None
    }
    fn lease_ms(&self, _: &Status, _: i64) -> Option<i64> {
        None
    }
}

/// `list`'s table: the columns the specs give it ([ROOT] STATE KEY HOLDER
/// PID WHY: the ROOT column only over several roots), every cell but the
/// last padded to its column, the header counting too. Written straight
/// into the output, one line per row: the cells are borrowed unless
/// something needed an escape, which is rare, so a 10 000-row table builds
/// few strings.
pub(super) fn write_table(out: &mut Out, listing: &Listing) -> io::Result<()> {
    let roots = listing.origins.as_ref().map_or(&[][..], |o| &o.roots[..]);
    let avail = Avail {
        several: listing.origins.is_some(),
        ..Avail::default()
    };
    write_rows(
        out.writer(),
        &listing.sweep.claims,
        listing.item_rules(),
        &ListPlaces { roots },
        avail,
    )
}

fn write_rows(
    w: &mut impl Write,
    claims: &[Status],
    rules: ItemRules,
    places: &dyn Places,
    avail: Avail,
) -> io::Result<()> {
    let cols = cli_columns(avail);
    let ctx = CellCtx {
        now: crate::time::now_ms(),
        local_time: false,
        face: Face::Text,
        places,
    };
    let mut cells: Vec<Cow<str>> = Vec::with_capacity(claims.len() * cols.len());
    for s in claims {
        let row = RowView {
            status: s,
            rules,
            copy_of: None,
        };
        cells.extend(cols.iter().map(|c| (c.spec().text)(&ctx, &row)));
    }
    let titles: Vec<String> = cols.iter().map(|c| c.title().to_uppercase()).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{ClaimRecord, ClaimState};

    fn claim(key: &str) -> Status {
        Status {
            key: key.into(),
            file: std::path::Path::new("/r/.fno/claims/k.lock").into(),
            state: ClaimState::Live,
            record: Some(ClaimRecord {
                schema_version: 1,
                key: key.into(),
                holder: "pty:a".into(),
                acquired_at: 1,
                pid: 4_194_303,
                host: "box".into(),
                expires_at: None,
                reason: None,
                harness: None,
                machine_id: None,
                metadata: Default::default(),
            }),
            why: "holder pid 4194303 is alive".into(),
            error: None,
            locality: None,
            head: Vec::new(),
        }
    }

    #[test]
    fn one_long_key_does_not_pad_every_row_of_the_fleets_table() {
        let header: Vec<String> = ["HOST", "KEY", "WHY"].map(String::from).to_vec();
        let long = "k".repeat(215);
        let rows = vec![
            vec!["alpha".into(), long.clone(), "live".into()],
            vec!["beta".into(), "short".into(), "live".into()],
        ];
        let lines = columns(&header, &rows);
        assert!(lines[1].contains(&long), "the long key whole: {}", lines[1]);
        assert!(lines[2].len() < 80, "{:?}", lines[2]);
        assert_eq!(lines[0].find("KEY"), lines[2].find("short"), "{lines:#?}");
    }

    #[test]
    fn one_long_key_does_not_pad_every_row_of_lists_table() {
        let claims = [claim(&"k".repeat(215)), claim("short")];
        let mut out = Vec::new();
        let avail = Avail::default();
        write_rows(&mut out, &claims, ItemRules::StoreKey, &Unplaced, avail).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[2].find("holder pid").is_some_and(|at| at < 80),
            "{text}"
        );
        assert!(
            lines[2].contains(" 4194303 "),
            "a seven-digit pid whole: {text}"
        );
        assert_eq!(lines[0].find("HOLDER"), lines[2].find("pty:a"), "{text}");
    }
}
