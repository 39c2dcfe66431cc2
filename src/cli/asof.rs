//! `list --as-of TIME`: the claims table as it stood at TIME, rebuilt from
//! the store's events history and what the store still holds (the
//! dashboard's `:asof` reads the same), saying so where the log read
//! cannot tell.

use super::output::{CmdResult, Out, EXIT_OK};
use super::table::columns;
use crate::claims::words::count;
use crate::events::asof::{Answer, HeldAt, HeldNow};
use crate::events::history::Log;
use crate::sanitize::sanitize;
use crate::store::{LogRef, Store};
use crate::time::{clock, human_ms, now_ms, read_past};
use serde_json::{json, Value};

pub use crate::events::asof::AROUND_MS;

pub fn list_as_of(store: &Store, text: &str, local: bool, out: &mut Out) -> CmdResult {
    let now = now_ms();
    let at = match read_past(text, now, local) {
        Ok(at) => at,
        Err(e) => return out.usage_error(&format!("--as-of {}: {e}", sanitize(text))),
    };
    let answer = match answer_at(store, at) {
        Ok(answer) => answer,
        Err(e) => return out.error(&e),
    };
    let rows = &answer.rows;
    let shown = clock(at, local, "%Y-%m-%d %H:%M:%S");
    if out.json_mode() {
        let claims: Vec<Value> = rows.iter().map(|r| row_json(r, at)).collect();
        let span = answer
            .span
            .map(|(from, to)| json!({"from": from, "to": to}));
        out.json(&json!({
            "as_of": at,
            "as_of_text": shown,
            "store": store_url(store),
            "claims": claims,
            "complete": answer.complete,
            "span": span,
        }))?;
        return Ok(EXIT_OK);
    }
    out.line(&format!("as of {shown} · history"))?;
    if rows.is_empty() {
        out.line("no key was held then, as far as the log says")?;
    } else {
        for line in columns(&header(rows), &cells(rows, at, local)) {
            out.line(&line)?;
        }
        out.line(&format!("{} held then", count(rows.len(), "key")))?;
    }
    if !answer.complete {
        out.line(&incomplete_words(answer.span, local))?;
    }
    Ok(EXIT_OK)
}

/// What an answer that cannot tell says, in words.
fn incomplete_words(span: Option<(i64, i64)>, local: bool) -> String {
    let fmt = "%Y-%m-%d %H:%M:%S";
    match span {
        Some((from, to)) => format!(
            "not complete: the log was read from {} to {}; a key taken before that and given \
             up after it, and no longer held, would not show",
            clock(from, local, fmt),
            clock(to, local, fmt)
        ),
        None => "not complete: the log read around then holds no claim event; a key taken \
                 before and given up after it, and no longer held, would not show"
            .into(),
    }
}

fn header(rows: &[HeldAt]) -> Vec<String> {
    let mut header: Vec<String> = ["KEY", "HOLDER", "HELD FOR", "THEN"]
        .map(String::from)
        .to_vec();
    if rows.iter().any(|r| r.root.is_some()) {
        header.insert(0, "ROOT".into());
    }
    header
}

fn cells(rows: &[HeldAt], at: i64, local: bool) -> Vec<Vec<String>> {
    rows.iter()
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
        .collect()
}

/// The keys held at `at`: from the log around it, every log the store
/// keeps (one per root over several roots, each row naming its root), by
/// key, then in the order the roots were named; and every claim the store
/// still holds whose record says it was taken by then.
pub fn answer_at(store: &Store, at: i64) -> Result<Answer, String> {
    let logs = store.logs().map_err(|e| e.to_string())?;
    let mut reads = Vec::new();
    for log in &logs {
        let root = &log.name;
        let mut history = store.history(log).map_err(|e| e.to_string())?;
        history.start().map_err(|e| e.to_string())?;
        let read = history.around(at).map_err(|e| e.to_string())?;
        reads.push((root.clone(), read));
    }
    let now = held_now(store, &logs)?;
    Ok(Answer::of(at, &reads, &now))
}

/// Every claim the store holds now, named by the log that speaks for its
/// root: several roots' by their root, a fleet's copies by host and root,
/// the store's own by its own log.
fn held_now(store: &Store, logs: &[LogRef]) -> Result<Vec<HeldNow>, String> {
    let listing = store.list().map_err(|e| e.to_string())?;
    let mut now: Vec<HeldNow> = Vec::new();
    for member in &listing.members {
        // Named as the member's own log is named.
        let own = logs
            .iter()
            .find(|r| r.origin == member.at && r.log == Log::Own)
            .and_then(|r| r.name.clone());
        now.extend(member.sweep.claims.iter().filter_map(|item| {
            let r = item.record.as_ref()?;
            Some(HeldNow {
                key: item.key.clone(),
                holder: r.holder.clone(),
                acquired_at: r.acquired_at,
                root: own.clone(),
            })
        }));
    }
    if let Some(state) = &listing.fleet {
        for item in &state.items {
            let Some(host) = state.hosts.iter().find(|h| h.host_id == item.host_id) else {
                continue;
            };
            let record = &item.item["record"];
            let (Some(holder), Some(acquired_at)) =
                (record["holder"].as_str(), record["acquired_at"].as_i64())
            else {
                continue;
            };
            now.push(HeldNow {
                key: item.key().to_string(),
                holder: holder.to_string(),
                acquired_at,
                root: Some(format!("{}:{}", host.label, item.root.path)),
            });
        }
    }
    Ok(now)
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
    if let Some(obj) = row.as_object_mut() {
        obj.insert("known_from".into(), json!(r.known_from.word()));
        if let Some(root) = &r.root {
            obj.insert("root".into(), json!(root));
        }
    }
    row
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
