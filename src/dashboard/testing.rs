//! What the tests and the benchmarks drive, in one place: the model, its
//! update and view, the readers and the op worker, without the module
//! tree behind them (which stays the crate's own to reshape).

pub use super::action::{Action, ForceOptsShown, Op, OpResult, RootProblem, Verb};
pub use super::keys::{Overrides, Pane, Scope, KEYMAP};
pub use super::keys_doc::{commands_table, markdown_table, Keys};
pub use super::model::events::shown_by;
pub use super::model::store::{Link, StoreInfo, StoreView};
pub use super::model::Origins;
pub use super::model::{
    App, ClaimSet, CopyId, Dialog, Filter, Layer, Level, Modes, Overlay, RowId, Sort, PAGE,
};
pub use super::ops::{run_op, run_op_on, worker, DEFAULT_ASK_WAIT};
pub use super::readers::{spawn as spawn_readers, spawn_logs, spawn_rows};
pub use super::timeline::Timeline;
pub use super::update::{run_command_line, scroll_into_view, update, visible_signature, Effects};
pub use super::view::layout::{areas_of, table_capacity};
pub use super::view::timeline::{bar_width, draw as draw_timeline, visible_rows};
pub use super::view::{draw, Theme};
pub use super::{operator_id, Opening, Options};
pub use crate::columns::ColumnId;
pub use crate::events::service::Request;
pub use crate::store::drive::{Counters, Input, Lanes, Update};

/// The text `col`'s cell shows for the claim `s` (found by its place).
pub fn cell_text(app: &App, s: &crate::claims::Status, col: ColumnId) -> String {
    let shown = app.shown();
    let Some((id, s)) = shown.by_row.iter().find(|(_, x)| x.file == s.file) else {
        return String::new();
    };
    let places = app.places();
    let mut ctx = super::model::screen_ctx(app.shown_now(), app.local_time, &places);
    ctx.instants = app.flip_times;
    (col.spec().text)(&ctx, &super::model::row_view(shown, id, s)).into_owned()
}

/// A store of these roots alone, opened as the command line opens them.
pub fn store_of_roots(roots: &[crate::claims::Root]) -> std::sync::Arc<crate::store::Store> {
    let open = crate::store::Store::open(&[], roots, &crate::store::OpenCtx::default());
    // Opening roots reads nothing: it cannot fail.
    std::sync::Arc::new(open.unwrap_or_default())
}

/// Every reader of one root, wired as the live app wires them (its lane,
/// the clock, its events log): its lane's inbox and read counters.
pub fn readers_of_root(
    root: &crate::claims::Root,
    tx: &std::sync::mpsc::Sender<Action>,
) -> std::io::Result<(std::sync::mpsc::Sender<Input>, std::sync::Arc<Counters>)> {
    let store = store_of_roots(std::slice::from_ref(root));
    let lanes = super::readers::spawn(&store, tx, super::options::DEFAULT_TICK_MS)?;
    let inbox = lanes.inboxes.into_iter().next();
    let counters = lanes.counters.into_iter().next();
    inbox
        .zip(counters)
        .ok_or_else(|| std::io::Error::other("a store of one root has one lane"))
}

/// A driver of root `root` as origin `i`, driven by hand (benches feed it
/// inputs and apply what it says, as `Action::Update`s).
pub fn root_driver(
    root: &crate::claims::Root,
    i: u16,
    now: i64,
) -> crate::store::drive::Driver<'static> {
    let store = store_of_roots(std::slice::from_ref(root));
    let opts = crate::store::drive::DriveOpts {
        words: false,
        ..crate::store::drive::DriveOpts::default()
    };
    crate::store::drive::Driver::shared(
        store.members()[0].shared(),
        crate::store::OriginIx(i),
        None,
        crate::store::drive::Want::Whole { head: 0 },
        opts,
        now,
    )
}

/// What a lane says, as the model hears it.
pub fn heard(u: Update) -> Action {
    Action::Update(Box::new(u))
}

/// Does `a` replace a member's rows (a whole listing)?
pub fn is_whole(a: &Action) -> bool {
    matches!(a, Action::Update(u) if u.delta.as_ref().is_some_and(|d| d.whole.is_some()))
}
