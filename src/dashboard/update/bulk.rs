//! Marked rows (space) and the verbs over them: F, r and n act on every
//! marked claim after one confirmation that lists them (and says how many
//! the filter hides), each through the same op (and the same guard) a
//! single row's key asks for; each claim's answer comes back as its own
//! line (`m` keeps them all). A mark holds one tenure: it goes when its
//! claim is released or taken again.

use super::effects::Effects;
use super::rows::move_by;
use crate::claims::words::count;
use crate::claims::Status;
use crate::dashboard::action::{ForceOptsShown, Op, Verb};
use crate::dashboard::model::dialogs::DEFAULT_ACQUIRE_TTL_MS;
use crate::dashboard::model::{
    App, BulkConfirm, BulkItem, BulkVerb, Dialog, Layer, Level, MarksConfirm, RowAt, RowId,
};
use crate::dashboard::view::layout;
use ratatui::crossterm::event::{KeyCode, KeyEvent};

/// Space: mark or unmark the selected row, then move down a row (as htop
/// and mutt do), so a run of rows is marked by holding the key.
pub(super) fn toggle_mark(app: &mut App) -> bool {
    let Some(path) = app.table.rows.get(app.table.selected).cloned() else {
        app.say(Level::Info, "no claim selected to mark");
        return true;
    };
    let Some(tenure) = app.tenure_id(&path) else {
        return false;
    };
    app.table.marked.toggle(path, tenure);
    move_by(app, 1);
    true
}

/// Ctrl-Space: mark every row the table shows (the filter's matches), as
/// k9s marks a filtered list.
pub(super) fn mark_all_shown(app: &mut App) -> bool {
    let before = app.table.marked.len();
    for id in app.table.rows.clone() {
        if let Some(t) = app.tenure_id(&id) {
            app.table.marked.insert(id, t);
        }
    }
    let added = app.table.marked.len() - before;
    let msg = format!(
        "marked {} shown ({} marked in all); Ctrl-\\ or U drops every mark",
        count(added, "more claim"),
        app.table.marked.len()
    );
    app.say(Level::Info, msg);
    true
}

/// Ctrl-\ or U: drop every mark at once.
pub(super) fn clear_marks(app: &mut App) -> bool {
    let n = app.table.marked.len();
    if n == 0 {
        app.say(Level::Info, "no claim is marked");
        return true;
    }
    app.table.marked.clear();
    app.say(Level::Info, format!("dropped {}", count(n, "mark")));
    true
}

/// Esc over marks: dropped at once when a screen shows them all, asked
/// first when there are more (marking them again may take as many keys).
pub(super) fn clear_marks_asking(app: &mut App) -> bool {
    let marked = app.table.marked.len();
    if marked <= layout::table_capacity(app.size, app.look()) {
        return clear_marks(app);
    }
    let hidden = app.marks_hidden();
    app.modes
        .push(Layer::Dialog(Dialog::ClearMarks(MarksConfirm {
            marked,
            hidden,
        })));
    true
}

/// A key in the "drop every mark?" question: y drops them, any other key
/// keeps them (Esc closes it, as every dialog).
pub(super) fn clear_marks_key(app: &mut App, c: MarksConfirm, ev: &KeyEvent) -> bool {
    match ev.code {
        KeyCode::Char('y') | KeyCode::Char('Y') => clear_marks(app),
        _ => {
            app.modes.push(Layer::Dialog(Dialog::ClearMarks(c)));
            false
        }
    }
}

/// The marked claims still shown, by key.
pub fn marked(app: &App) -> Vec<(&RowId, &Status)> {
    let shown = app.shown();
    let mut v: Vec<(&RowId, &Status)> = app
        .table
        .marked
        .iter()
        .filter_map(|p| Some((p, shown.get(p)?)))
        .collect();
    v.sort_by(|(ia, a), (ib, b)| a.key.cmp(&b.key).then(ia.cmp(ib)));
    v
}

/// F, r or n with rows marked: list what it will do, and ask once.
pub(super) fn start(app: &mut App, verb: BulkVerb) -> bool {
    let mut items = Vec::new();
    let mut skipped = Vec::new();
    let mut hidden = 0;
    let rows: std::collections::HashSet<&RowId> = app.table.rows.iter().collect();
    for (id, s) in marked(app) {
        match item(app, id, s, verb) {
            Ok(i) => {
                hidden += usize::from(!rows.contains(id));
                items.push(i);
            }
            Err(why) => skipped.push((s.key.clone(), why)),
        }
    }
    if items.is_empty() {
        let why: Vec<String> = skipped.iter().map(|(k, w)| format!("{k}: {w}")).collect();
        let msg = format!(
            "{} none of the marked claims: {}",
            verb.words(),
            why.join("; ")
        );
        app.say(Level::Error, msg);
        return true;
    }
    app.modes.push(Layer::Dialog(Dialog::Bulk(BulkConfirm {
        verb,
        items,
        skipped,
        hidden,
        typed: "".into(),
        error: None,
    })));
    true
}

/// What `verb` does to `s`, or why it leaves it alone.
fn item(app: &App, id: &RowId, s: &Status, verb: BulkVerb) -> Result<BulkItem, String> {
    let rec = s.record.as_ref();
    let host = app.store.as_ref().and_then(|v| v.fleet.origin(id));
    if host.is_some() && verb != BulkVerb::ForceRelease {
        return Err("a host's read-only copy (F asks its host)".into());
    }
    let ttl_ms = match (verb, rec) {
        (BulkVerb::Release, Some(r)) if r.holder != app.operator => {
            return Err(format!("held by {}, not you (F force-releases)", r.holder));
        }
        (BulkVerb::Release | BulkVerb::Renew, None) => {
            return Err("corrupted: no holder (F force-releases)".into());
        }
        (BulkVerb::Renew, Some(r)) if r.expires_at.is_none() => {
            return Err("PID-bound: no TTL to renew".into());
        }
        // What was asked for this tenure, as `n` offers it.
        (BulkVerb::Renew, Some(r)) => Some(
            app.asked_ttl(&s.key, r.acquired_at)
                .unwrap_or(DEFAULT_ACQUIRE_TTL_MS),
        ),
        _ => None,
    };
    Ok(BulkItem {
        key: s.key.clone(),
        root: app.origins.of(s),
        holder: rec.map(|r| r.holder.clone()),
        state: s.state,
        acquired_at: rec.map(|r| r.acquired_at),
        ttl_ms,
        host,
    })
}

/// A key in the bulk confirmation; the dialog stays open until it is
/// answered (Esc closes every dialog before this is reached).
pub(super) fn bulk_key(
    app: &mut App,
    mut c: BulkConfirm,
    ev: &KeyEvent,
    fx: &mut Effects,
) -> Option<Dialog> {
    let confirmed = if c.needs_typed_count() {
        if ev.code == KeyCode::Enter {
            let ok = c.typed.value().trim() == c.items.len().to_string();
            if !ok {
                c.error = Some("the typed number is not the number of claims; nothing done".into());
            }
            ok
        } else {
            if c.typed.key(ev) {
                c.error = None;
            }
            false
        }
    } else {
        matches!(ev.code, KeyCode::Char('y') | KeyCode::Char('Y'))
    };
    if !confirmed {
        return Some(Dialog::Bulk(c));
    }
    let n = c.items.len();
    for i in c.items {
        match op_of(app, c.verb, i) {
            Ok(op) => fx.ops.push(op),
            Err(why) => app.say(Level::Error, why),
        }
    }
    app.table.marked.clear();
    let msg = format!("{} {}…", c.verb.words(), count(n, "claim"));
    app.say(Level::Info, msg);
    None
}

/// The op one claim of a bulk verb asks for: the same one its own row's
/// key would.
fn op_of(app: &App, verb: BulkVerb, i: BulkItem) -> Result<Op, String> {
    let holder = i.holder.clone().unwrap_or_default();
    let op = match verb {
        BulkVerb::Release => Verb::Release { key: i.key, holder },
        BulkVerb::Renew => Verb::Renew {
            operator: (holder != app.operator).then(|| app.operator.clone()),
            key: i.key,
            holder,
            ttl_ms: i.ttl_ms.unwrap_or(DEFAULT_ACQUIRE_TTL_MS),
        },
        BulkVerb::ForceRelease => {
            let opts = ForceOptsShown {
                expect_holder: i.holder.clone(),
                expect_acquired_at: i.acquired_at,
                operator: app.operator.clone(),
                // The typed count confirmed it: the CLI's --allow-live.
                allow_live: i.state.may_be_held(),
            };
            Verb::ForceRelease { key: i.key, opts }
        }
    };
    let at = RowAt {
        root: i.root,
        host: i.host.as_ref(),
    };
    app.route(at, op)
}
