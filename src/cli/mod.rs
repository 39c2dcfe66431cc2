//! The scriptable CLI: one module per subcommand family, text or `--json`.
//!
//! `main.rs` parses and dispatches; everything a command prints, and the exit
//! status it maps to, lives here. Protocol decisions stay in `claims`.

pub mod args;
pub mod asof;
pub mod claim_cmds;
pub mod completions;
pub mod config;
pub mod dispatch;
pub mod events;
mod events_history;
mod events_print;
mod fleet;
pub mod fleet_cmd;
pub mod list;
pub mod metrics;
pub mod output;
pub mod publish;
pub mod reference;
pub mod run;
mod table;
pub mod tui;
pub mod wait;

pub use output::{exit_status, EXIT_DECLINED, EXIT_ERROR, EXIT_OK, EXIT_USAGE};

/// Neither `--root` nor `$FNO_CLAIMS_ROOT` nor `$HOME`: nothing to work on.
/// A usage error, since the fix is a flag.
pub fn no_root(out: &mut output::Out) -> output::CmdResult {
    out.usage_error(&crate::claims::RootsError::NoRoot.to_string())
}
