//! list and doctor: the whole root at once.

use super::output::{
    hazard_json, hazard_text, path_str, path_text, CmdResult, Out, EXIT_DECLINED, EXIT_OK,
};
use crate::claims::{self, Fix, Root, Status, Sweep};
use crate::sanitize::sanitize;
use serde_json::json;

pub fn list(root: &Root, out: &mut Out) -> CmdResult {
    let sw = claims::sweep(root);
    let result = print_list(&sw, out);
    // The process ends right after this: freeing ten thousand items one by
    // one was a tenth of a `list` process's instructions, for memory the
    // exit returns whole.
    std::mem::forget(sw);
    result
}

fn print_list(sw: &Sweep, out: &mut Out) -> CmdResult {
    if out.json_mode() {
        // Byte for byte the sweep's serde_json form; see list_json.
        super::list_json::write_sweep(sw, out.writer())?;
        return Ok(EXIT_OK);
    }
    if sw.claims.is_empty() {
        out.line(&format!("no claims under {}", path_text(&sw.root)))?;
    } else {
        for row in table(&sw.claims) {
            out.line(&row)?;
        }
    }
    let c = sw.counts;
    out.line(&format!(
        "{} claims: {} live, {} suspect, {} stale, {} corrupted",
        sw.claims.len(),
        c.live,
        c.suspect,
        c.stale,
        c.corrupted
    ))?;
    if !sw.hazards.is_empty() {
        out.line(&format!("{} hazards:", sw.hazards.len()))?;
        for h in &sw.hazards {
            out.line(&format!("  {}", hazard_text(h)))?;
        }
    }
    Ok(EXIT_OK)
}

/// STATE KEY HOLDER PID WHY, columns padded to the widest sanitized cell.
fn table(items: &[Status]) -> Vec<String> {
    let rows: Vec<[String; 5]> = items
        .iter()
        .map(|s| {
            let (holder, pid) = match &s.record {
                Some(r) => (sanitize(&r.holder).into_owned(), r.pid.to_string()),
                None => ("-".into(), "-".into()),
            };
            let why = s.error.as_deref().unwrap_or(&s.why);
            [
                s.state.as_str().to_string(),
                sanitize(&s.key).into_owned(),
                holder,
                pid,
                sanitize(why).into_owned(),
            ]
        })
        .collect();
    let header = ["STATE", "KEY", "HOLDER", "PID", "WHY"].map(String::from);
    let mut widths = [0usize; 4];
    for r in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    std::iter::once(&header)
        .chain(&rows)
        .map(|r| {
            let mut line = String::new();
            for (w, cell) in widths.iter().zip(r.iter()) {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', w - cell.chars().count() + 2));
            }
            line.push_str(&r[4]);
            line
        })
        .collect()
}

/// Hazards under the root; with `fix`, first clean what is provably
/// abandoned. Exit 3 while any hazard remains.
pub fn doctor(root: &Root, fix: bool, out: &mut Out) -> CmdResult {
    let fixes: Vec<Fix> = if fix {
        claims::doctor_fix(root)
    } else {
        Vec::new()
    };
    // Re-swept after fixing: what remains is what the exit status speaks of.
    let hazards = claims::doctor(root);
    if out.json_mode() {
        let mut v = json!({
            "root": path_str(&root.root),
            "hazards": hazards.iter().map(hazard_json).collect::<Vec<_>>(),
        });
        if fix {
            if let Some(obj) = v.as_object_mut() {
                obj.insert(
                    "fixed".into(),
                    fixes
                        .iter()
                        .map(|f| {
                            let mut h = hazard_json(&f.hazard);
                            if let Some(o) = h.as_object_mut() {
                                o.insert("fixed".into(), json!(f.fixed));
                                o.insert("action".into(), json!(f.action));
                            }
                            h
                        })
                        .collect(),
                );
            }
        }
        out.json(&v)?;
    } else {
        for f in &fixes {
            out.line(&format!(
                "{} {}: {}",
                if f.fixed { "fixed" } else { "left " },
                hazard_text(&f.hazard),
                sanitize(&f.action)
            ))?;
        }
        if hazards.is_empty() {
            out.line(&format!("no hazards under {}", path_text(&root.root)))?;
        } else {
            out.line(&format!("{} hazards:", hazards.len()))?;
            for h in &hazards {
                out.line(&format!("  {}", hazard_text(h)))?;
            }
        }
    }
    Ok(if hazards.is_empty() {
        EXIT_OK
    } else {
        EXIT_DECLINED
    })
}
