//! The dashboard: the pure update, rendered snapshots, the watcher, and the
//! end-to-end run in tmux.

#[path = "../common/mod.rs"]
mod common;

mod commands;
mod counts;
mod e2e_tmux;
mod effects;
mod event_verbs;
mod fleet;
mod fleet_first;
mod modes;
mod roots;
mod search;
mod snapshots;
mod store;
mod timeline;
mod update;
mod watch;
