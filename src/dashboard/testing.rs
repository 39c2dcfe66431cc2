//! What the tests and the benchmarks drive, in one place: the model, its
//! update and view, the readers and the op worker, without the module
//! tree behind them (which stays the crate's own to reshape).

pub use super::action::{Action, ForceOptsShown, Op, OpResult, RootProblem};
pub use super::collector::{Collector, Counters, Input, Source, FEED};
pub use super::keys::{Overrides, Pane, Scope, KEYMAP};
pub use super::keys_doc::{commands_table, markdown_table, Keys};
pub use super::model::store::{Link, StoreInfo, StoreMsg, StoreView};
pub use super::model::{
    App, ClaimSet, CopyId, Dialog, Filter, Layer, Level, Modes, Overlay, RowId, RowKind, Sort, PAGE,
};
pub use super::ops::{run_op, run_store_op, worker, worker_over, DEFAULT_ASK_WAIT};
pub use super::roots::ShownRoots;
pub use super::timeline::Timeline;
pub use super::update::{run_command_line, scroll_into_view, update, visible_signature, Effects};
pub use super::view::layout::{areas_of, table_capacity};
pub use super::view::timeline::{bar_width, draw as draw_timeline, visible_rows};
pub use super::view::{draw, Theme};
pub use super::{spawn_readers, spawn_readers_over, spawn_store_readers, Opening, Options};
pub use crate::columns::ColumnId;
pub use crate::events::service::Request;

/// The text `col`'s cell shows for the claim `s` (found by its place).
pub fn cell_text(app: &App, s: &crate::claims::Status, col: ColumnId) -> String {
    let shown = app.shown();
    let Some((id, s)) = shown.by_row.iter().find(|(_, x)| x.file == s.file) else {
        return String::new();
    };
    let places = app.places();
    let ctx = super::model::screen_ctx(app.shown_now(), app.local_time, &places);
    (col.spec().text)(&ctx, &super::model::row_view(shown, id, s)).into_owned()
}
