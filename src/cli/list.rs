//! list and doctor: the whole store at once, every origin it composes.

use super::output::{hazard_json, hazard_text, path_str, path_text, CmdResult, Out};
use super::output::{EXIT_DECLINED, EXIT_OK};
use super::table::{hazard_lines, hazards_text, origin_suffix, summary, write_table, Shown};
use crate::claims::words::count;
use crate::claims::Fix;
use crate::sanitize::sanitize;
use crate::store::listing_stream::{Only, StreamError};
use crate::store::{Listing, Member, Store, StoreError};
use serde_json::{json, Value};

/// `list` of a store: on a file root exactly the sweep's shape; over
/// several origins the same with an origin column (`"origin"`, and
/// `"root"` for a root's, on every item); over etcd with `"store"`,
/// `"revision"` and `"lease"` added, and what hosts publish.
///
/// `--json` goes out as the store is read: a big store's first claims
/// are out before its last page is read.
pub fn list(store: &Store, only: &Only, out: &mut Out) -> CmdResult {
    if out.json_mode() {
        return match store.write_list_json(out.writer(), only) {
            Ok(()) => Ok(EXIT_OK),
            Err(StreamError::Io(e)) => Err(e),
            Err(StreamError::Store(e)) => out.error(&e.to_string()),
            // The document cut short ends its line; the error follows on
            // its own, as every failed command's does.
            Err(StreamError::Cut(e)) => {
                out.raw_line(b"")?;
                out.error(&e.to_string())
            }
        };
    }
    let mut listing = match store.list() {
        Ok(l) => l,
        Err(e) => return out.error(&e.to_string()),
    };
    if let Some(fleet) = listing.fleet.as_mut() {
        only.limit(fleet);
    }
    let result = match &listing.fleet {
        Some(fleet) => super::fleet::print_fleet_list(&listing, store, fleet, out),
        None => print_list(&listing, store, out),
    };
    // The process ends right after this: freeing ten thousand items one by
    // one was a tenth of a `list` process's instructions, for memory the
    // exit returns whole.
    std::mem::forget(listing);
    result
}

fn print_list(listing: &Listing, store: &Store, out: &mut Out) -> CmdResult {
    let shown = Shown::of(store);
    // Each member's origin cell once (none over one origin), not per row.
    let cells: Vec<Option<String>> = listing
        .members
        .iter()
        .map(|l| shown.cell(store.member(l.at)))
        .collect();
    let rows: Vec<_> = match listing.members.as_slice() {
        [one] => one
            .sweep
            .claims
            .iter()
            .map(|s| (None, s, one.rules))
            .collect(),
        _ => listing
            .claims()
            .into_iter()
            .map(|(l, s)| {
                let at = listing.members.iter().position(|m| m.at == l.at);
                (at.and_then(|i| cells[i].as_deref()), s, l.rules)
            })
            .collect(),
    };
    if rows.is_empty() {
        out.line(&format!(
            "no claims {}",
            place(listing, store, "under", "under")
        ))?;
    } else {
        write_table(out, &rows, shown.title())?;
    }
    summary(
        out,
        rows.len(),
        listing.counts(),
        &hazard_lines(listing, store),
    )?;
    Ok(EXIT_OK)
}

/// Where a listing is, for "no claims …" and "no hazards …": a root's
/// path, a store's URL, or how many origins.
fn place(listing: &Listing, store: &Store, under: &str, inside: &str) -> String {
    if store.several() {
        let n = store.named().count();
        return match store.all_roots() {
            true => format!("{under} {n} roots"),
            false => format!("{inside} {}", count(n, "origin")),
        };
    }
    match listing.members.first().and_then(|l| store.member(l.at)) {
        Some(m) if m.root_dir().is_some() => {
            format!("{under} {}", path_text(&listing.members[0].sweep.root))
        }
        Some(m) => format!("{inside} {}", sanitize(&m.backend().url())),
        None => format!("{under} nothing"),
    }
}

/// `doctor`: every hazard of the store (under each root; on etcd its own
/// `etcd_*` ones and what publishing hosts found in their roots). With
/// `fix`, first clean what is provably abandoned ([`Store::repair`]); a
/// store with nothing of its own to clean refuses `--fix` rather than
/// silently ignoring it. Exit 3 while any hazard remains.
pub fn doctor(store: &Store, fix: bool, out: &mut Out) -> CmdResult {
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
    // Counted as `list` and the dashboard count them: what offline hosts
    // last said is no hazard, but said beside them.
    let (fleet_hazards, hosts, last_known) =
        listing.fleet.as_ref().map_or((&[][..], &[][..], 0), |f| {
            (
                f.hazards.as_slice(),
                f.hosts.as_slice(),
                f.counts().last_known,
            )
        });
    // Only with several origins does each entry say which it is: one
    // root's output stays exactly what it always was.
    let several = store.several();
    let mut hazards: Vec<Value> = Vec::new();
    for l in &listing.members {
        let m = store.member(l.at);
        hazards.extend(
            (l.sweep.hazards.iter())
                .chain(&l.store_hazards)
                .map(|h| origined(hazard_json(h), m.filter(|_| several))),
        );
    }
    hazards.extend(fleet_hazards.iter().map(hazard_json));
    let fixed: Vec<(&Fix, Option<&Member>)> = fixes
        .iter()
        .flat_map(|(at, fs)| {
            let m = store.member(*at).filter(|_| several);
            fs.iter().map(move |f| (f, m))
        })
        .collect();
    if out.json_mode() {
        out.json(&doctor_json(
            &listing,
            store,
            hazards.clone(),
            fix.then_some(&fixed),
            last_known,
        ))?;
    } else {
        let shown = Shown::of(store);
        for (f, m) in &fixed {
            out.line(&format!(
                "{} {}: {}{}",
                if f.fixed { "fixed" } else { "left " },
                hazard_text(&f.hazard, &[]),
                sanitize(&f.action),
                origin_suffix(&shown, *m)
            ))?;
        }
        if hazards.is_empty() {
            out.line(&format!(
                "no hazards {}",
                place(&listing, store, "under", "in")
            ))?;
            last_known_line(out, last_known)?;
        } else {
            let mut lines = hazard_lines(&listing, store);
            lines.extend(fleet_hazards.iter().map(|h| hazard_text(h, hosts)));
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

/// `doctor --json`: `{"root", "hazards"}`, with `"store"` over one store,
/// `"roots"` and `"origins"` over several, `"last_known"` and `"fixed"`
/// when they have something to say.
fn doctor_json(
    listing: &Listing,
    store: &Store,
    hazards: Vec<Value>,
    fixed: Option<&Vec<(&Fix, Option<&Member>)>>,
    last_known: usize,
) -> Value {
    let first = listing.members.first();
    let url = first
        .and_then(|l| store.member(l.at))
        .filter(|m| m.root_dir().is_none() && !store.several())
        .map(|m| m.backend().url());
    let root = match (&url, first) {
        (Some(url), _) => url.clone(),
        (None, Some(l)) => path_str(&l.sweep.root),
        (None, None) => String::new(),
    };
    let mut v = json!({ "root": root });
    let Some(obj) = v.as_object_mut() else {
        return v;
    };
    if let Some(url) = &url {
        obj.insert("store".into(), json!(url));
    }
    obj.insert("hazards".into(), Value::Array(hazards));
    if last_known > 0 {
        obj.insert("last_known".into(), json!(last_known));
    }
    if store.several() {
        let roots: Vec<String> = store
            .named()
            .filter_map(|m| m.root_dir().map(path_str))
            .collect();
        if !roots.is_empty() {
            obj.insert("roots".into(), json!(roots));
        }
        let origins: Vec<String> = store.named().map(Member::name).collect();
        obj.insert("origins".into(), json!(origins));
    }
    if let Some(fixed) = fixed {
        let fixed = fixed.iter().map(|(f, m)| {
            let mut h = hazard_json(&f.hazard);
            if let Some(o) = h.as_object_mut() {
                o.insert("fixed".into(), json!(f.fixed));
                o.insert("action".into(), json!(f.action));
            }
            origined(h, *m)
        });
        obj.insert("fixed".into(), Value::Array(fixed.collect()));
    }
    v
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

/// A JSON object with where it came from added, when it belongs to one of
/// several origins: `"root"` for a root's, and `"origin"`.
fn origined(mut v: Value, m: Option<&Member>) -> Value {
    if let (Some(m), Some(o)) = (m, v.as_object_mut()) {
        if let Some(dir) = m.root_dir() {
            o.insert("root".into(), json!(path_str(dir)));
        }
        o.insert("origin".into(), json!(m.name()));
    }
    v
}
