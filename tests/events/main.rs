//! The audit log read back: tailing, partial lines, truncation and rotation,
//! and the index over the whole log.

#[path = "../common/mod.rs"]
mod common;

mod hostile_log;
mod index;
mod tail;
