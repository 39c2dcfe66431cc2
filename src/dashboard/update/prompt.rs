//! The command line (`:`): its keys, Tab completion, and running a line.
//! A verb is a key's command by its name (the keymap names them) or one of
//! the verbs that take words ([`crate::dashboard::keys::VERBS`]); both run
//! through the same transitions the keys do.

use super::effects::Effects;
use super::rows::scroll_into_view;
use super::run_cmd::{refusal, run as command};
use crate::columns::{choose, filter_fields, on_screen, ColumnId};
use crate::dashboard::keys::{self, Cmd, Completes, Pane, KEYMAP, VERBS};
use crate::dashboard::model::prompt::PROMPT_HISTORY;
use crate::dashboard::model::{App, Filter, Layer, Level, Prompt};
use ratatui::crossterm::event::{KeyCode, KeyEvent};

/// A key while the command line is open.
pub(super) fn prompt_key(app: &mut App, ev: &KeyEvent, fx: &mut Effects) -> bool {
    let Some(Layer::Prompt(mut p)) = app.modes.pop_if(|l| matches!(l, Layer::Prompt(_))) else {
        return false;
    };
    match ev.code {
        KeyCode::Esc => return true,
        KeyCode::Enter => {
            let line = p.input.value().trim().to_string();
            if line.is_empty() {
                return true;
            }
            remember(app, &line);
            return match run(app, &line, fx) {
                Ok(_) => true,
                Err(why) => {
                    p.error = Some(why);
                    p.offers.clear();
                    app.modes.push(Layer::Prompt(p));
                    true
                }
            };
        }
        KeyCode::Tab => complete(app, &mut p),
        KeyCode::Up | KeyCode::Down => {
            let n = app.prompt_history.len();
            p.history_pos = match (ev.code, p.history_pos) {
                (KeyCode::Up, None) => n.checked_sub(1),
                (KeyCode::Up, Some(i)) => Some(i.saturating_sub(1)),
                (_, Some(i)) if i + 1 < n => Some(i + 1),
                _ => None,
            };
            p.input = p
                .history_pos
                .and_then(|i| app.prompt_history.get(i))
                .map_or_else(|| "".into(), |h| h.as_str().into());
            p.error = None;
        }
        _ => {
            if !p.input.key(ev) {
                app.modes.push(Layer::Prompt(p));
                return false;
            }
            p.error = None;
            p.offers.clear();
        }
    }
    app.modes.push(Layer::Prompt(p));
    true
}

fn remember(app: &mut App, line: &str) {
    let h = &mut app.prompt_history;
    if h.last().map(String::as_str) != Some(line) {
        h.push(line.to_string());
        if h.len() > PROMPT_HISTORY {
            h.remove(0);
        }
    }
}

/// Run one command line; why it was refused, in words.
pub fn run(app: &mut App, line: &str, fx: &mut Effects) -> Result<bool, String> {
    let line = line.trim().trim_start_matches(':').trim();
    let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let name = name.to_ascii_lowercase();
    match name.as_str() {
        "filter" => Ok(filter(app, rest)),
        "sort" => sort(app, rest),
        "goto" => goto(app, rest, fx),
        "asof" => {
            // The parser `list --as-of` uses: it refuses what that refuses.
            let at = instant(app, rest, "asof", crate::time::read_past)?;
            Ok(super::asof::open(app, at, fx))
        }
        "columns" => columns(app, rest),
        "events" => super::event_verbs::filter(app, rest),
        "write" | "write!" => super::save::write(app, rest, name == "write!", fx),
        "q" => Ok(command(app, Cmd::Quit, fx)),
        "release" | "renew" | "force-release" if !rest.is_empty() => {
            let cmd = match name.as_str() {
                "release" => Cmd::Release,
                "renew" => Cmd::Renew,
                _ => Cmd::ForceRelease,
            };
            // Refused before its key's row is selected: a refused line
            // moves nothing under the layer that refuses it.
            if let Some(why) = refusal(app, cmd) {
                return Err(why);
            }
            select_key(app, rest)?;
            Ok(command(app, cmd, fx))
        }
        other => {
            let cmd = key_command(other).ok_or_else(|| {
                format!("no command {other:?}: Tab lists the commands, ? explains them")
            })?;
            if !rest.is_empty() {
                return Err(format!(":{other} takes no words"));
            }
            Ok(command(app, cmd, fx))
        }
    }
}

/// The key command `name` names.
fn key_command(name: &str) -> Option<Cmd> {
    KEYMAP
        .iter()
        .map(|b| b.cmd)
        .find(|c| c.name() == Some(name))
}

fn filter(app: &mut App, text: &str) -> bool {
    let t = &mut app.table;
    t.filter = Filter::parse(text);
    if !text.is_empty() && t.filter_history.last().map(String::as_str) != Some(text) {
        t.filter_history.push(text.to_string());
    }
    app.rebuild_rows();
    scroll_into_view(app);
    true
}

fn sort(app: &mut App, words: &str) -> Result<bool, String> {
    let mut it = words.split_whitespace();
    let name = it.next().ok_or("sort by which column? :sort age (rev)")?;
    let column = ColumnId::named(name).ok_or_else(|| unknown_column(name))?;
    let reverse = match it.next() {
        None => false,
        Some("rev" | "reverse" | "desc") => true,
        Some(w) => {
            return Err(format!(
                "{w:?} after the column: only rev reverses the order"
            ))
        }
    };
    app.table.sort.column = column;
    app.table.sort.reverse = reverse;
    app.rebuild_rows();
    scroll_into_view(app);
    Ok(true)
}

fn unknown_column(name: &str) -> String {
    let names: Vec<&str> = on_screen().map(|c| c.title()).collect();
    format!("no column {name:?}: {}", names.join(", "))
}

/// `:goto TIME`: the events pane browses the whole log from that instant.
fn goto(app: &mut App, text: &str, fx: &mut Effects) -> Result<bool, String> {
    let at = instant(app, text, "goto", crate::time::read_instant)?;
    app.focus = Pane::Events;
    super::events_cmds::enter(app);
    app.events.browse.open_at(at, &mut fx.log);
    let when = crate::time::clock(at, app.local_time, "%Y-%m-%d %H:%M:%S");
    app.say(Level::Info, format!("events from {when}"));
    Ok(true)
}

/// A verb's TIME: an instant, or a duration back from now, as `read`
/// (one of [`crate::time`]'s readers, the one the CLI uses for the same
/// question) reads it.
fn instant(
    app: &App,
    text: &str,
    verb: &str,
    read: fn(&str, i64, bool) -> Result<i64, crate::time::InstantError>,
) -> Result<i64, String> {
    if text.is_empty() {
        return Err(format!(
            "{verb} when? :{verb} 03:00, :{verb} 2026-12-01T03:00Z, :{verb} 1h"
        ));
    }
    read(text, app.now, app.local_time).map_err(|e| match e {
        crate::time::InstantError::NotATime => {
            format!("{text:?} is no time: 03:00 (today), 2026-12-01T03:00Z, or 1h (an hour ago)")
        }
        _ => format!("{text:?}: {e}"),
    })
}

/// `:columns LIST`: show these (state and key always), in the table's
/// order; `all`: as many as the width fits; nothing: say which show.
fn columns(app: &mut App, words: &str) -> Result<bool, String> {
    if words.is_empty() {
        let shown = match &app.table.chosen {
            Some(c) => c.iter().map(|c| c.title()).collect::<Vec<_>>().join(", "),
            None => "as many as the width fits (:columns all)".into(),
        };
        app.say(Level::Info, format!("columns: {shown}"));
        return Ok(true);
    }
    if words.eq_ignore_ascii_case("all") {
        app.table.chosen = None;
        app.say(Level::Info, "columns: as many as the width fits");
        return Ok(true);
    }
    let mut want = Vec::new();
    for w in words.split(|c: char| c == ',' || c.is_whitespace()) {
        if w.is_empty() {
            continue;
        }
        want.push(ColumnId::named(w).ok_or_else(|| unknown_column(w))?);
    }
    let chosen = choose(&want);
    let names: Vec<&str> = chosen.iter().map(|c| c.title()).collect();
    app.say(Level::Info, format!("columns: {}", names.join(", ")));
    app.table.chosen = Some(chosen);
    Ok(true)
}

/// Select the row of the claim on `key`, for a verb typed with its key.
fn select_key(app: &mut App, key: &str) -> Result<(), String> {
    let shown = app.shown();
    let at: Vec<usize> = app
        .table
        .rows
        .iter()
        .enumerate()
        .filter(|(_, p)| shown.get(p).is_some_and(|s| s.key == key))
        .map(|(i, _)| i)
        .collect();
    match at.as_slice() {
        [i] => {
            app.table.selected = *i;
            app.table.detail_scroll = 0;
            scroll_into_view(app);
            Ok(())
        }
        [] if shown.by_row.values().any(|s| s.key == key) => {
            Err(format!("{key} is hidden by the filter: :filter clears it"))
        }
        [] => Err(format!("no claim on {key} is shown")),
        many => Err(format!(
            "{key} is claimed in {} roots: select its row and press the key",
            many.len()
        )),
    }
}

/// Tab: complete the word before the cursor, or offer what it could be.
fn complete(app: &App, p: &mut Prompt) {
    let (before, after) = p.input.split();
    let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let word = &before[start..];
    let first = before[..start].trim().is_empty();
    let mut words = before[..start].split_whitespace();
    let verb_name = words.next().unwrap_or("");
    let mut offers = if first {
        verb_names()
    } else {
        arg_offers(app, verb_name, words.count(), word)
    };
    offers.retain(|o| o.starts_with(word));
    offers.sort();
    offers.dedup();
    let fill = match offers.as_slice() {
        [] => {
            p.offers.clear();
            p.error = Some(format!("nothing completes {word:?}"));
            return;
        }
        // A field (`holder:`) is completed to where its value goes.
        [one] if one.ends_with(':') => one.clone(),
        [one] => format!("{one} "),
        many => common_prefix(many),
    };
    p.offers = if offers.len() > 1 { offers } else { Vec::new() };
    let text = format!("{}{fill}{after}", &before[..start]);
    p.input = text.into();
    p.error = None;
}

fn verb_names() -> Vec<String> {
    let keyed = KEYMAP.iter().filter_map(|b| b.cmd.name());
    VERBS
        .iter()
        .map(|v| v.name)
        .chain(keyed)
        .map(str::to_string)
        .collect()
}

/// What the verb's word number `nth` (0: the first after the verb) may be.
fn arg_offers(app: &App, verb: &str, nth: usize, word: &str) -> Vec<String> {
    let Some(v) = keys::verb(verb) else {
        return Vec::new();
    };
    let titles = || on_screen().map(|c| c.title().to_string());
    match v.completes {
        Completes::Nothing => Vec::new(),
        // `:sort COLUMN [rev]`: a column, then only `rev`.
        Completes::Columns if verb == "sort" => match nth {
            0 => titles().collect(),
            1 => vec!["rev".to_string()],
            _ => Vec::new(),
        },
        Completes::Columns => titles().chain(["all".to_string()]).collect(),
        Completes::Keys => {
            let mut keys: Vec<String> = app
                .shown()
                .by_row
                .values()
                .map(|s| s.key.clone())
                .filter(|k| k.starts_with(word))
                .collect();
            keys.sort();
            keys.truncate(50);
            keys
        }
        Completes::Filter if word.starts_with("state:") => {
            ["live", "suspect", "stale", "corrupted", "unreadable"]
                .iter()
                .map(|s| format!("state:{s}"))
                .collect()
        }
        Completes::Filter => filter_fields().map(|f| format!("{f}:")).collect(),
        Completes::Events => crate::dashboard::model::event_filter::offers(word),
        Completes::Path => Vec::new(),
    }
}

fn common_prefix(words: &[String]) -> String {
    let first = &words[0];
    let mut end = first.len();
    for w in &words[1..] {
        end = end.min(
            first
                .char_indices()
                .zip(w.chars())
                .find(|((_, a), b)| a != b)
                .map_or(end.min(w.len()), |((i, _), _)| i),
        );
    }
    first[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_prefix_of_offers_is_what_tab_fills_in() {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(common_prefix(&w(&["release", "renew"])), "re");
        assert_eq!(common_prefix(&w(&["force-release", "filter"])), "f");
        assert_eq!(common_prefix(&w(&["sort", "sort-next"])), "sort");
    }

    #[test]
    fn every_key_command_with_a_name_is_a_verb_and_none_is_named_twice() {
        let names = verb_names();
        for b in KEYMAP {
            if let Some(n) = b.cmd.name() {
                assert!(names.iter().any(|x| x == n), "{n}");
                assert_eq!(key_command(n), Some(b.cmd));
            }
        }
        for v in VERBS {
            assert!(
                key_command(v.name).is_none()
                    || matches!(v.name, "filter" | "release" | "renew" | "force-release"),
                "{} is both a verb and another key's command",
                v.name
            );
        }
    }
}
