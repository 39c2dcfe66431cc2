//! The dashboard's model transitions, driven without a terminal: keys, file
//! changes, ticks of an injected clock, filter and sort, and the guards on
//! every mutation.

use crate::common::*;
use crate::effects::{clipboard, forget, ops, pop_log, quit, suspended, take_ops, update};
use claimtop::claims::{ClaimState, Classifier};
use claimtop::dashboard::testing::run_op;
use claimtop::dashboard::testing::visible_signature;
use claimtop::dashboard::testing::Input;
use claimtop::dashboard::testing::Pane;
use claimtop::dashboard::testing::{Action, App};
use claimtop::dashboard::testing::{ColumnId, Dialog, Level, Overlay};
use claimtop::dashboard::testing::{ForceOptsShown, Op, Verb};
use claimtop::events::service::{Anchor, Page, Reply, Request};
use ratatui::crossterm::event::KeyCode;

mod clock;
mod columns;
mod disk;
mod events_pane;
mod filter;
mod hazards;
mod help;
mod navigation;
mod op_results;
mod quitting;
mod release;
mod renew_acquire;

fn state_of(app: &App, k: &str) -> Option<ClaimState> {
    app.claims
        .live
        .by_row
        .values()
        .find(|s| s.key == k)
        .map(|s| s.state)
}

fn status_text(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

fn app_with_events(
    root: &claimtop::claims::Root,
    claims: Vec<claimtop::claims::Status>,
    events: Vec<claimtop::events::tail::Line>,
) -> App {
    let mut app = app_at(root.clone());
    apply_sweep(&mut app, sweep_of(root, claims, vec![]));
    update(&mut app, log_lines(events));
    app
}
