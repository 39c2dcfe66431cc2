//! The audit log `<events_dir>/.fno/events.jsonl`: appending (the seed's
//! envelope, under the shared mutex) and reading it back incrementally.

pub mod emit;
pub mod merge;
pub mod stream;
pub mod tail;
