//! The command line as scripts see it: exit codes, JSON shapes, text, and
//! races between concurrent invocations.

#[path = "../common/mod.rs"]
mod common;
#[cfg(feature = "etcd")]
#[path = "../etcd_common/mod.rs"]
mod etcd_common;

mod asof;
mod commands;
mod config;
mod doc_lines;
mod docs;
mod events_follow;
mod events_window;
mod list_golden;
mod metrics;
mod origins;
mod publish;
mod race;
mod roots;
mod run;
mod run_group;
mod words;
