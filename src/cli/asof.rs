//! `list --as-of TIME`: the claims table as it stood at TIME, rebuilt from
//! the store's events history (the dashboard's `:asof` reads the same).

use super::output::{CmdResult, Out, EXIT_OK};
use super::table::columns;
use crate::claims::words::count;
use crate::events::asof::{held_at, HeldAt};
use crate::events::history::Log;
use crate::sanitize::sanitize;
use crate::store::Store;
use crate::time::{clock, human_ms, now_ms, parse_instant};
use serde_json::{json, Value};

pub use crate::events::asof::AROUND_MS;

pub fn list_as_of(store: &dyn Store, text: &str, local: bool, out: &mut Out) -> CmdResult {
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
            &json!({"as_of": at, "as_of_text": shown, "store": store.url(), "claims": claims}),
        )?;
        return Ok(EXIT_OK);
    }
    out.line(&format!("as of {shown} · history"))?;
    if rows.is_empty() {
        out.line("no key was held then, as far as the log says")?;
        return Ok(EXIT_OK);
    }
    let header: Vec<String> = ["KEY", "HOLDER", "HELD FOR", "THEN"]
        .map(String::from)
        .to_vec();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let held = human_ms(at - r.since);
            vec![
                sanitize(&r.key).into_owned(),
                sanitize(&r.holder).into_owned(),
                if r.start_seen {
                    held
                } else {
                    format!("≥{held}")
                },
                ending_text(r, local),
            ]
        })
        .collect();
    for line in columns(&header, &cells) {
        out.line(&line)?;
    }
    out.line(&format!("{} held then", count(rows.len(), "key")))?;
    Ok(EXIT_OK)
}

/// The keys held at `at`, from the log around it.
pub fn table_at(store: &dyn Store, at: i64) -> Result<Vec<HeldAt>, String> {
    let mut history = store.history(&Log::Own).map_err(|e| e.to_string())?;
    history.start().map_err(|e| e.to_string())?;
    let ix = crate::events::asof::read_around(at, |from, to| history.window(from, to))
        .map_err(|e| e.to_string())?;
    Ok(held_at(&ix, at))
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
    json!({
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
    })
}
