//! list and doctor: the whole root at once.

use super::output::{
    hazard_json, hazard_text, path_str, path_text, CmdResult, Out, EXIT_DECLINED, EXIT_OK,
};
use super::table::{hazard_lines, hazards_text, root_suffix, summary, write_table};
use crate::claims::{Fix, Status};
use crate::sanitize::sanitize;
use crate::store::{Listing, Store, StoreError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// `list` of a store: on a file root exactly the sweep's shape; over
/// several roots the same with a ROOT column (`"root"` on every item);
/// over etcd with `"store"`, `"revision"` and `"lease"` added.
pub fn list(store: &dyn Store, out: &mut Out) -> CmdResult {
    let listing = match store.list() {
        Ok(l) => l,
        Err(e) => return out.error(&e.to_string()),
    };
    let fleet = match store.fleet().map(|f| f.state()).transpose() {
        Ok(fleet) => fleet.filter(|f| !f.is_empty()),
        Err(e) => return out.error(&e.to_string()),
    };
    // A store nobody publishes into prints its listing as it always has.
    let result = match fleet {
        Some(fleet) => super::fleet::print_fleet_list(&listing, fleet, out),
        None => print_list(&listing, out),
    };
    // The process ends right after this: freeing ten thousand items one by
    // one was a tenth of a `list` process's instructions, for memory the
    // exit returns whole.
    std::mem::forget(listing);
    result
}

fn print_list(listing: &Listing, out: &mut Out) -> CmdResult {
    if out.json_mode() {
        match (&listing.store, &listing.origins) {
            // Byte for byte the sweep's serde_json form; see list_json.
            (None, None) => {
                crate::store::file::list_json::write_sweep(&listing.sweep, out.writer())?
            }
            _ => out.json(&listing.to_json())?,
        }
        return Ok(EXIT_OK);
    }
    let sw = &listing.sweep;
    if sw.claims.is_empty() {
        let place = match (&listing.store, &listing.origins) {
            (_, Some(o)) => format!("{} roots", o.roots.len()),
            (Some(url), None) => sanitize(url).into_owned(),
            (None, None) => path_text(&sw.root),
        };
        out.line(&format!("no claims under {place}"))?;
    } else {
        let rows: Vec<(Option<&Path>, &Status)> = sw
            .claims
            .iter()
            .enumerate()
            .map(|(i, c)| (listing.claim_root(i), c))
            .collect();
        write_table(out, &rows, listing.item_rules())?;
    }
    summary(out, sw.claims.len(), sw.counts, &hazard_lines(listing))?;
    Ok(EXIT_OK)
}

/// `doctor`: every hazard of the store (under each root; on etcd its own
/// `etcd_*` ones and what publishing hosts found in their roots). With
/// `fix`, first clean what is provably abandoned ([`Store::repair`]); a
/// store with nothing of its own to clean refuses `--fix` rather than
/// silently ignoring it. Exit 3 while any hazard remains.
pub fn doctor(store: &dyn Store, fix: bool, out: &mut Out) -> CmdResult {
    let fixes = match fix.then(|| store.repair()).transpose() {
        Ok(fixes) => fixes.unwrap_or_default(),
        Err(StoreError::Unsupported(why)) => return out.usage_error(&why),
        Err(e) => return out.error(&e.to_string()),
    };
    // Re-read after fixing: what remains is what the exit status speaks of.
    let listing = match store.doctor() {
        Ok(l) => l,
        Err(e) => return out.error(&e.to_string()),
    };
    // What publishing hosts found in their roots is the fleet's hazards too.
    let (fleet_hazards, last_known) = match store.fleet().map(|f| f.state()).transpose() {
        // Counted as `list` and the dashboard count them: what offline
        // hosts last said is no hazard, but said beside them.
        Ok(fleet) => fleet.map_or((Vec::new(), 0), |f| {
            let n = f.counts().last_known;
            (f.hazards, n)
        }),
        Err(e) => return out.error(&e.to_string()),
    };
    // Only with several roots does each entry say which it is: one root's
    // output stays exactly what it always was.
    let roots = listing.origins.as_ref().map(|o| o.roots.as_slice());
    let fix_root = |f: &Fix| roots.and_then(|r| root_of(&f.hazard.path, r));
    let mut hazards: Vec<Value> = (listing.sweep.hazards.iter().enumerate())
        .map(|(i, h)| rooted(hazard_json(h), listing.hazard_root(i)))
        .collect();
    hazards.extend(
        listing
            .store_hazards
            .iter()
            .filter_map(|h| serde_json::to_value(h).ok()),
    );
    hazards.extend(fleet_hazards.iter().map(|h| h.to_json()));
    if out.json_mode() {
        let mut v = json!({"root": match &listing.store {
            Some(url) => url.clone(),
            None => path_str(&listing.sweep.root),
        }});
        if let Some(obj) = v.as_object_mut() {
            if let Some(url) = &listing.store {
                obj.insert("store".into(), json!(url));
            }
            obj.insert("hazards".into(), Value::Array(hazards.clone()));
            if last_known > 0 {
                obj.insert("last_known".into(), json!(last_known));
            }
            if let Some(roots) = roots {
                let all: Vec<String> = roots.iter().map(|r| path_str(r)).collect();
                obj.insert("roots".into(), json!(all));
            }
            if fix {
                let fixed = fixes.iter().map(|f| {
                    let mut h = hazard_json(&f.hazard);
                    if let Some(o) = h.as_object_mut() {
                        o.insert("fixed".into(), json!(f.fixed));
                        o.insert("action".into(), json!(f.action));
                    }
                    rooted(h, fix_root(f))
                });
                obj.insert("fixed".into(), Value::Array(fixed.collect()));
            }
        }
        out.json(&v)?;
    } else {
        for f in &fixes {
            out.line(&format!(
                "{} {}: {}{}",
                if f.fixed { "fixed" } else { "left " },
                hazard_text(&f.hazard),
                sanitize(&f.action),
                root_suffix(fix_root(f))
            ))?;
        }
        if hazards.is_empty() {
            let place = match (&listing.store, roots) {
                (Some(url), _) => format!("in {}", sanitize(url)),
                (None, Some(r)) => format!("under {} roots", r.len()),
                (None, None) => format!("under {}", path_text(&listing.sweep.root)),
            };
            out.line(&format!("no hazards {place}"))?;
            last_known_line(out, last_known)?;
        } else {
            let mut lines = hazard_lines(&listing);
            lines.extend(fleet_hazards.iter().map(super::fleet::fleet_hazard_text));
            hazards_text(out, &lines)?;
            last_known_line(out, last_known)?;
        }
    }
    Ok(if hazards.is_empty() {
        EXIT_OK
    } else {
        EXIT_DECLINED
    })
}

/// What offline hosts last published, as `list` counts it.
fn last_known_line(out: &mut Out, n: usize) -> std::io::Result<()> {
    if n == 0 {
        return Ok(());
    }
    out.line(&format!(
        "{n} last known: claims offline hosts last published, vouched for by nobody \
         (`claimtop fleet` names the hosts; `fleet forget HOST` removes one)"
    ))
}

/// The root of several that `path` lies under (the deepest, should one
/// root lie inside another).
fn root_of<'r>(path: &Path, roots: &'r [PathBuf]) -> Option<&'r Path> {
    roots
        .iter()
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.as_os_str().len())
        .map(PathBuf::as_path)
}

/// A JSON object with `"root"` added, when it belongs to one of several.
fn rooted(mut v: Value, root: Option<&Path>) -> Value {
    if let (Some(root), Some(o)) = (root, v.as_object_mut()) {
        o.insert("root".into(), json!(path_str(root)));
    }
    v
}
