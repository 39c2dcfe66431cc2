//! The audit log `<events_dir>/.fno/events.jsonl`: appending (the seed's
//! envelope, under the shared mutex), reading it back incrementally, and
//! browsing, searching and indexing all of it in bounded memory.

pub mod asof;
pub mod backward;
pub mod claim_event;
pub mod emit;
pub mod event;
pub mod file_history;
pub mod history;
pub mod index;
pub mod kind;
pub mod lines_history;
pub mod log_set;
pub mod merge;
pub mod range;
mod range_pages;
pub mod seek;
pub mod service;
pub mod stream;
pub mod tail;
pub mod tenure;

pub use event::{parse_event, Event};
pub use kind::EventKind;
