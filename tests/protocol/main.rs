//! Parity with the seed and the Python implementation: every verb, the
//! YAML, the sweep, interop in both directions. One binary; `protocol_roots`
//! stays a binary of its own because it sets environment variables and the
//! working directory, which every test in a shared process would see.

#[path = "../common/mod.rs"]
mod common;

mod acquire;
mod force_release;
mod golden;
mod interop;
mod parity;
mod pyyaml_quoting;
mod recovery;
mod release_renew;
mod sweep;
mod yaml;
