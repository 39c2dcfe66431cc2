//! claimtop: the fno work-claim protocol core, plus the operator tools built on it.
//!
//! `claims` and `events` are the protocol (no terminal code); `cli` and
//! `dashboard` are faces that call only into them.

// The etcd tests' server helper (tests/etcd_common) names the crate as its
// integration tests do; the unit tests that pause inside a verb use it too.
#[cfg(all(test, feature = "etcd"))]
extern crate self as claimtop;

pub mod claims;
pub mod cli;
pub mod columns;
pub mod dashboard;
pub mod demo;
pub mod diag;
pub mod events;
#[cfg(test)]
mod fault;
pub mod metrics;
pub mod mutex;
pub mod plain_file;
#[cfg(feature = "etcd")]
pub mod publish;
pub mod sanitize;
#[cfg(test)]
mod seams;
pub mod store;
pub mod sys;
pub mod time;
pub mod wait;
