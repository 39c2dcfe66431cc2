//! list and doctor: the whole root at once.

use super::output::{
    decimal, hazard_json, hazard_text, path_str, path_text, CmdResult, Out, EXIT_DECLINED, EXIT_OK,
};
use crate::claims::census::why_with_hazards;
use crate::claims::words::count;
use crate::claims::{self, Counts, Fix, Hazard, ItemRules, Roots, Status};
use crate::sanitize::sanitize;
use crate::store::file::FileStore;
use crate::store::{Listing, Store, StoreHazard};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::io::{self, Write};
use std::path::Path;

pub fn list(roots: &Roots, out: &mut Out) -> CmdResult {
    if roots.is_several() {
        return list_several(roots, out);
    }
    list_store(&FileStore::new(roots.first().clone()), out)
}

/// `list` of one store: on a file root exactly the sweep's shape; over etcd
/// the same with `"store"`, `"revision"` and `"lease"` added.
pub fn list_store(store: &dyn Store, out: &mut Out) -> CmdResult {
    let listing = match store.list() {
        Ok(l) => l,
        Err(e) => return out.error(&e.to_string()),
    };
    let result = match store.fleet() {
        Ok(Some(fleet)) => super::fleet::print_fleet_list(&listing, &fleet, out),
        Ok(None) => print_list(&listing, out),
        Err(e) => return out.error(&e.to_string()),
    };
    // The process ends right after this: freeing ten thousand items one by
    // one was a tenth of a `list` process's instructions, for memory the
    // exit returns whole.
    std::mem::forget(listing);
    result
}

fn print_list(listing: &Listing, out: &mut Out) -> CmdResult {
    if out.json_mode() {
        match listing.store {
            // Byte for byte the sweep's serde_json form; see list_json.
            None => super::list_json::write_sweep(&listing.sweep, out.writer())?,
            Some(_) => out.json(&listing.to_json())?,
        }
        return Ok(EXIT_OK);
    }
    let sw = &listing.sweep;
    if sw.claims.is_empty() {
        let place = match &listing.store {
            Some(url) => sanitize(url).into_owned(),
            None => path_text(&sw.root),
        };
        out.line(&format!("no claims under {place}"))?;
    } else {
        let rows: Vec<(Option<&Path>, &Status)> = sw.claims.iter().map(|c| (None, c)).collect();
        write_table(out, &rows, listing.item_rules())?;
    }
    summary(out, sw.claims.len(), sw.counts, &hazard_lines(listing))?;
    Ok(EXIT_OK)
}

pub(super) fn store_hazard_text(h: &StoreHazard) -> String {
    format!("{}  {}  {}", h.kind, sanitize(&h.path), sanitize(&h.detail))
}

/// Every hazard of a listing as a line of text, the sweep's then the
/// store's own (etcd's), so that one count covers both.
pub(super) fn hazard_lines(listing: &Listing) -> Vec<String> {
    let sweep = listing.sweep.hazards.iter().map(hazard_text);
    let store = listing.store_hazards.iter().map(store_hazard_text);
    sweep.chain(store).collect()
}

/// `doctor` of a store that is not a file root (etcd): the claims' hazards
/// and the store's own (`etcd_*`). Nothing there is provably abandoned in
/// the file sense, so `--fix` is refused rather than silently ignored.
pub fn doctor_store(store: &dyn Store, fix: bool, out: &mut Out) -> CmdResult {
    if fix {
        return out.usage_error(
            "--fix cleans file roots only; over etcd, leases and keys are left to the operator",
        );
    }
    let listing = match store.doctor() {
        Ok(l) => l,
        Err(e) => return out.error(&e.to_string()),
    };
    // What publishing hosts found in their roots is the fleet's hazards too.
    let fleet_hazards = match store.fleet() {
        Ok(fleet) => fleet.map(|f| f.hazards).unwrap_or_default(),
        Err(e) => return out.error(&e.to_string()),
    };
    let mut hazards: Vec<Value> = listing.sweep.hazards.iter().map(hazard_json).collect();
    hazards.extend(
        listing
            .store_hazards
            .iter()
            .filter_map(|h| serde_json::to_value(h).ok()),
    );
    hazards.extend(fleet_hazards.iter().map(|h| h.to_json()));
    let place = store.url();
    if out.json_mode() {
        out.json(&json!({"root": place, "store": place, "hazards": hazards}))?;
    } else if hazards.is_empty() {
        out.line(&format!("no hazards in {}", sanitize(&place)))?;
    } else {
        let mut lines = hazard_lines(&listing);
        lines.extend(fleet_hazards.iter().map(super::fleet::fleet_hazard_text));
        hazards_text(out, &lines)?;
    }
    Ok(if hazards.is_empty() {
        EXIT_OK
    } else {
        EXIT_DECLINED
    })
}

/// `list` over several roots: one table with a ROOT column, the counts
/// added up, each hazard naming its root.
fn list_several(roots: &Roots, out: &mut Out) -> CmdResult {
    let ms = claims::sweep_roots(roots);
    if out.json_mode() {
        out.json_of(&ms)?;
        return Ok(EXIT_OK);
    }
    let rows: Vec<(Option<&Path>, &Status)> =
        ms.claims().into_iter().map(|(r, c)| (Some(r), c)).collect();
    if rows.is_empty() {
        out.line(&format!("no claims under {} roots", roots.len()))?;
    } else {
        write_table(out, &rows, ItemRules::Lockfile)?;
    }
    let hazards: Vec<String> = ms
        .hazards()
        .map(|(r, h)| format!("{}{}", hazard_text(h), root_suffix(Some(r))))
        .collect();
    summary(out, rows.len(), ms.counts(), &hazards)?;
    Ok(EXIT_OK)
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
    out.line(&line)?;
    if !hazards.is_empty() {
        hazards_text(out, hazards)?;
    }
    Ok(())
}

/// "N hazards:", then each hazard's line, indented.
fn hazards_text(out: &mut Out, lines: &[String]) -> io::Result<()> {
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
fn root_suffix(root: Option<&Path>) -> String {
    root.map(|r| format!("  root={}", path_text(r)))
        .unwrap_or_default()
}

/// One table row's cells, sanitized (borrowed unless something needed an
/// escape, which is rare), so a 10 000-row table builds no strings per row.
struct Row<'a> {
    root: Option<String>,
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
        [
            self.root.as_deref().unwrap_or(""),
            self.state,
            &self.key,
            &self.holder,
        ]
    }
}

/// [ROOT] STATE KEY HOLDER PID WHY, columns padded to the widest sanitized
/// cell; the ROOT column only when the rows name their roots. Written
/// straight into the output, one line per row. WHY says, after the
/// verdict, each hazard a claim is that its verdict does not (`rules`).
fn write_table(
    out: &mut Out,
    items: &[(Option<&Path>, &Status)],
    rules: ItemRules,
) -> io::Result<()> {
    let with_root = items.iter().any(|(r, _)| r.is_some());
    let rows: Vec<Row> = items
        .iter()
        .map(|(root, s)| {
            let (holder, pid) = match &s.record {
                Some(r) => (sanitize(&r.holder), Some(r.pid)),
                None => (Cow::Borrowed("-"), None),
            };
            Row {
                root: root.map(path_text),
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
    let mut widths = [4, 5, 3, 6, 3];
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
    let header = ["ROOT", "STATE", "KEY", "HOLDER", "PID"];
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
fn pad(w: &mut impl Write, cell: &str, column: usize) -> io::Result<()> {
    pad_bytes(w, cell.as_bytes(), width(cell), column)
}

fn pad_bytes(w: &mut impl Write, cell: &[u8], cell_width: usize, column: usize) -> io::Result<()> {
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
fn width(cell: &str) -> usize {
    if cell.is_ascii() {
        cell.len()
    } else {
        cell.chars().count()
    }
}

/// Hazards under every root; with `fix`, first clean what is provably
/// abandoned. Exit 3 while any hazard remains.
pub fn doctor(roots: &Roots, fix: bool, out: &mut Out) -> CmdResult {
    let several = roots.is_several();
    // Only with several roots does each entry say which it is: one root's
    // output stays exactly what it always was.
    let mut fixes: Vec<(Option<&Path>, Fix)> = Vec::new();
    let mut hazards: Vec<(Option<&Path>, Hazard)> = Vec::new();
    for root in roots.as_slice() {
        let tag = several.then_some(root.root.as_path());
        if fix {
            fixes.extend(claims::doctor_fix(root).into_iter().map(|f| (tag, f)));
        }
        // Re-swept after fixing: what remains is what the exit status speaks of.
        hazards.extend(claims::doctor(root).into_iter().map(|h| (tag, h)));
    }
    if out.json_mode() {
        let mut v = json!({
            "root": path_str(&roots.first().root),
            "hazards": hazards.iter().map(|(r, h)| rooted(hazard_json(h), *r)).collect::<Vec<_>>(),
        });
        if let Some(obj) = v.as_object_mut() {
            if several {
                let all: Vec<String> = roots.as_slice().iter().map(|r| path_str(&r.root)).collect();
                obj.insert("roots".into(), json!(all));
            }
            if fix {
                obj.insert(
                    "fixed".into(),
                    fixes
                        .iter()
                        .map(|(root, f)| {
                            let mut h = hazard_json(&f.hazard);
                            if let Some(o) = h.as_object_mut() {
                                o.insert("fixed".into(), json!(f.fixed));
                                o.insert("action".into(), json!(f.action));
                            }
                            rooted(h, *root)
                        })
                        .collect(),
                );
            }
        }
        out.json(&v)?;
    } else {
        for (root, f) in &fixes {
            out.line(&format!(
                "{} {}: {}{}",
                if f.fixed { "fixed" } else { "left " },
                hazard_text(&f.hazard),
                sanitize(&f.action),
                root_suffix(*root)
            ))?;
        }
        if hazards.is_empty() {
            let place = if several {
                format!("{} roots", roots.len())
            } else {
                path_text(&roots.first().root)
            };
            out.line(&format!("no hazards under {place}"))?;
        } else {
            out.line(&format!("{}:", count(hazards.len(), "hazard")))?;
            for (root, h) in &hazards {
                out.line(&format!("  {}{}", hazard_text(h), root_suffix(*root)))?;
            }
        }
    }
    Ok(if hazards.is_empty() {
        EXIT_OK
    } else {
        EXIT_DECLINED
    })
}

/// A JSON object with `"root"` added, when it belongs to one of several.
fn rooted(mut v: Value, root: Option<&Path>) -> Value {
    if let (Some(root), Some(o)) = (root, v.as_object_mut()) {
        o.insert("root".into(), json!(path_str(root)));
    }
    v
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
