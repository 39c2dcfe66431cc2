//! `:write PATH`: the view as data, to a file. The focused table's rows as
//! shown (filtered, sorted, the columns chosen or all the view has; over
//! the as-of table, its rows), or the events pane's filtered lines; CSV when the path ends in `.csv`,
//! else JSON lines. The text is made here; the main loop writes it (no
//! I/O in an update), never over a file unless asked with `:write!`.

use super::effects::{Effects, Save};
use crate::columns::{chosen_columns, default_columns, CellCtx, ColumnId, Face};
use crate::dashboard::keys::Pane;
use crate::dashboard::model::events::EventClock;
use crate::dashboard::model::{row_view, App};
use std::path::PathBuf;

/// How the text is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    JsonLines,
}

impl Format {
    pub fn of(path: &str) -> Format {
        if path.to_ascii_lowercase().ends_with(".csv") {
            Format::Csv
        } else {
            Format::JsonLines
        }
    }
}

/// `:write PATH` (`replace`: `:write! PATH`).
pub(super) fn write(
    app: &mut App,
    path: &str,
    replace: bool,
    fx: &mut Effects,
) -> Result<bool, String> {
    if path.is_empty() {
        return Err("write to which file? :write claims.csv (or .jsonl)".into());
    }
    let format = Format::of(path);
    let (titles, rows, what) = match app.focus {
        Pane::Events => {
            let (t, r) = events_table(app);
            let n = r.len();
            (t, r, crate::claims::words::count(n, "event"))
        }
        // Over the table as it stood then: those rows.
        Pane::Table | Pane::Detail if app.modes.asof().is_some() => {
            let Some((at, Some(held))) = app.modes.asof().map(|v| (v.at, v.rows.as_ref())) else {
                return Err("the as-of table is still being read: :write once it shows".into());
            };
            let (t, r) = crate::dashboard::view::asof::text(app, at, held);
            let n = r.len();
            let t = t.into_iter().map(String::from).collect();
            (t, r, crate::claims::words::count(n, "row"))
        }
        Pane::Table | Pane::Detail => {
            let (t, r) = claims_table(app);
            let n = r.len();
            (t, r, crate::claims::words::count(n, "row"))
        }
    };
    fx.save = Some(Save {
        path: PathBuf::from(path),
        replace,
        bytes: render(format, &titles, &rows).into_bytes(),
        what,
    });
    Ok(true)
}

/// The table's rows as shown, cell by cell (escaped as a terminal shows
/// them: a key or reason written by anyone stays inert text).
fn claims_table(app: &App) -> (Vec<String>, Vec<Vec<String>>) {
    let avail = app.avail();
    let cols: Vec<ColumnId> = match &app.table.chosen {
        Some(chosen) => chosen_columns(chosen, avail),
        None => default_columns(u16::MAX, avail),
    };
    let places = app.places();
    let ctx = CellCtx {
        now: app.shown_now(),
        local_time: app.local_time,
        instants: app.flip_times,
        face: Face::Text,
        places: &places,
    };
    let shown = app.shown();
    let rows = app
        .table
        .rows
        .iter()
        .filter_map(|id| {
            let s = shown.get(id)?;
            let row = row_view(shown, id, s);
            Some(
                cols.iter()
                    .map(|c| (c.spec().text)(&ctx, &row).into_owned())
                    .collect(),
            )
        })
        .collect();
    let titles = cols.iter().map(|c| c.title().to_string()).collect();
    (titles, rows)
}

/// The events the pane shows (its `f` key and `:events` filter applied),
/// oldest first, each as its line says it.
fn events_table(app: &App) -> (Vec<String>, Vec<Vec<String>>) {
    let several = app.origins.several();
    let mut titles: Vec<String> = ["ts", "time", "type", "key", "holder", "detail"]
        .map(String::from)
        .to_vec();
    if several {
        titles.push("root".into());
    }
    let clock = EventClock {
        now: app.shown_now(),
        local: app.local_time,
        relative: false,
        dated: true,
    };
    let safe = |s: &str| crate::sanitize::sanitize(s).into_owned();
    let rows = app
        .shown_events()
        .map(|e| {
            let kind = match &e.kind {
                Ok(k) => k.name().to_string(),
                Err(other) => safe(other),
            };
            let mut row = vec![
                safe(&e.ts),
                e.time_text(&clock).into_owned(),
                kind,
                e.key.as_deref().map(safe).unwrap_or_default(),
                e.holder.as_deref().map(safe).unwrap_or_default(),
                match &e.error {
                    Some(why) => format!("unparseable line: {}", safe(why)),
                    None => safe(&e.detail),
                },
            ];
            if several {
                row.push(safe(app.origins.label(e.root)));
            }
            row
        })
        .collect();
    (titles, rows)
}

/// The text of a file: a header line and the rows (CSV), or one JSON
/// object a row named by the titles (JSON lines).
pub fn render(format: Format, titles: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    match format {
        Format::Csv => {
            for line in std::iter::once(titles).chain(rows.iter().map(Vec::as_slice)) {
                let cells: Vec<String> = line.iter().map(|c| csv_cell(c)).collect();
                out.push_str(&cells.join(","));
                out.push_str("\r\n");
            }
        }
        Format::JsonLines => {
            for row in rows {
                let obj: serde_json::Map<String, serde_json::Value> = titles
                    .iter()
                    .cloned()
                    .zip(row.iter().map(|c| serde_json::Value::String(c.clone())))
                    .collect();
                out.push_str(&serde_json::Value::Object(obj).to_string());
                out.push('\n');
            }
        }
    }
    out
}

/// A CSV field (RFC 4180): quoted, its quotes doubled. A field a
/// spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) gets a
/// leading `'`, so a holder named `=cmd|…` stays text when opened.
fn csv_cell(text: &str) -> String {
    let lead = match text.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => "'",
        _ => "",
    };
    format!("\"{lead}{}\"", text.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_every_field_and_defuses_formulas() {
        let t = ["key".to_string(), "holder".to_string()];
        let rows = vec![vec!["a,\"b\"".to_string(), "=HYPERLINK(\"x\")".to_string()]];
        assert_eq!(
            render(Format::Csv, &t, &rows),
            "\"key\",\"holder\"\r\n\"a,\"\"b\"\"\",\"'=HYPERLINK(\"\"x\"\")\"\r\n"
        );
        let json = render(Format::JsonLines, &t, &rows);
        let v: serde_json::Value = serde_json::from_str(json.trim()).expect("one object");
        assert_eq!(v["key"], "a,\"b\"");
        assert_eq!(Format::of("out.CSV"), Format::Csv);
        assert_eq!(Format::of("out.json"), Format::JsonLines);
    }
}
