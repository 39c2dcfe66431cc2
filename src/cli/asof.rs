//! `list --as-of TIME`: the claims table as it stood at TIME, rebuilt from
//! the store's events history (the dashboard's `:asof` reads the same).

use super::output::{CmdResult, Out, EXIT_OK};
use super::table::columns;
use crate::claims::words::count;
use crate::events::asof::{by_root, held_at, HeldAt};
use crate::sanitize::sanitize;
use crate::store::Store;
use crate::time::{clock, human_ms, now_ms, parse_instant};
use serde_json::{json, Value};

pub use crate::events::asof::AROUND_MS;

pub fn list_as_of(store: &Store, text: &str, local: bool, out: &mut Out) -> CmdResult {
    let now = now_ms();
    let Some(at) = parse_instant(text, now, local) else {
        return out.usage_error(&format!(
            "--as-of {}: not a time (RFC 3339, or HH:MM[:SS] today)",
            sanitize(text)
        ));
    };
    if at > now {
        return out.usage_error(&format!(
            "--as-of {}: that is in the future; the log can only say what was",
            sanitize(text)
        ));
    }
    let rows = match table_at(store, at) {
        Ok(rows) => rows,
        Err(e) => return out.error(&e),
    };
    let shown = clock(at, local, "%Y-%m-%d %H:%M:%S");
    if out.json_mode() {
        let claims: Vec<Value> = rows.iter().map(|r| row_json(r, at)).collect();
        out.json(
            &json!({"as_of": at, "as_of_text": shown, "store": store_url(store), "claims": claims}),
        )?;
        return Ok(EXIT_OK);
    }
    out.line(&format!("as of {shown} · history"))?;
    if rows.is_empty() {
        out.line("no key was held then, as far as the log says")?;
        return Ok(EXIT_OK);
    }
    let several = rows.iter().any(|r| r.root.is_some());
    let mut header: Vec<String> = ["KEY", "HOLDER", "HELD FOR", "THEN"]
        .map(String::from)
        .to_vec();
    if several {
        header.insert(0, "ROOT".into());
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let held = human_ms(at - r.since);
            let root = r.root.as_deref().map(|p| sanitize(p).into_owned());
            root.into_iter()
                .chain([
                    sanitize(&r.key).into_owned(),
                    sanitize(&r.holder).into_owned(),
                    if r.start_seen {
                        held
                    } else {
                        format!("≥{held}")
                    },
                    ending_text(r, local),
                ])
                .collect()
        })
        .collect();
    for line in columns(&header, &cells) {
        out.line(&line)?;
    }
    out.line(&format!("{} held then", count(rows.len(), "key")))?;
    Ok(EXIT_OK)
}

/// The keys held at `at`, from the log around it: every log the store
/// keeps (one per root over several roots, each row naming its root), by
/// key, then in the order the roots were named.
pub fn table_at(store: &Store, at: i64) -> Result<Vec<HeldAt>, String> {
    let mut per_log = Vec::new();
    for log in store.logs().map_err(|e| e.to_string())? {
        let root = log.name.clone();
        let mut history = store.history(&log).map_err(|e| e.to_string())?;
        history.start().map_err(|e| e.to_string())?;
        let ix = history.around(at).map_err(|e| e.to_string())?;
        per_log.push((root, held_at(&ix, at)));
    }
    Ok(by_root(per_log))
}

/// `"store"`: the one store's URL; over roots alone `file:` and the roots
/// `:`-separated (as `$FNO_CLAIMS_ROOT` spells them); over a mix every
/// origin's URL, space-separated (as `$FNO_CLAIMS_STORE` does).
fn store_url(store: &Store) -> String {
    if store.all_roots() {
        let dirs: Vec<String> = store
            .named()
            .filter_map(|m| m.root_dir())
            .map(|d| d.to_string_lossy().into_owned())
            .collect();
        return format!("file:{}", dirs.join(":"));
    }
    let names: Vec<String> = store.named().map(|m| m.backend().url()).collect();
    names.join(" ")
}

fn ending_text(r: &HeldAt, local: bool) -> String {
    match &r.ended {
        None => "still held".into(),
        Some(e) => {
            let by =
                e.by.as_deref()
                    .map(|b| format!(" by {}", sanitize(b)))
                    .unwrap_or_default();
            format!(
                "{}{by} at {}",
                e.how.word(),
                clock(e.at, local, "%Y-%m-%d %H:%M:%S")
            )
        }
    }
}

fn row_json(r: &HeldAt, at: i64) -> Value {
    let mut row = json!({
        "key": r.key,
        "holder": r.holder,
        "since": r.since,
        "since_seen": r.start_seen,
        "held_ms": at - r.since,
        "ended": r.ended.as_ref().map(|e| json!({
            "at": e.at,
            "how": e.how.short(),
            "by": e.by,
        })),
    });
    if let (Some(root), Some(obj)) = (&r.root, row.as_object_mut()) {
        obj.insert("root".into(), json!(root));
    }
    row
}
