//! `claimtop`: parse the command line and hand each subcommand to its module.

use claimtop::claims::Root;
use claimtop::cli::args::{json_requested, usage_message, Cli, Command};
use claimtop::cli::output::{CmdResult, Out};
use claimtop::cli::{self, claim_cmds, completions, events, exit_status, list, tui};
use std::process::ExitCode;

fn main() -> ExitCode {
    claim_cmds::note_parent();
    let Cli {
        global,
        dashboard,
        command,
    } = match Cli::try_parse_checked() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let root = global.root();
    let Some(command) = command else {
        return ExitCode::from(tui::dashboard(root, &dashboard));
    };
    let mut out = Out::new(global.json);
    let result = match (command, root) {
        // The only subcommand that needs no claims root.
        (Command::Completions { shell }, _) => completions::completions(shell, &mut out),
        (_, None) => cli::no_root(&mut out),
        (command, Some(root)) => dispatch(&root, command, &mut out),
    };
    ExitCode::from(exit_status(
        result.and_then(|code| out.flush().map(|()| code)),
    ))
}

/// A command line clap refused. Under `--json` the contract wants one JSON
/// document on stdout even now; help and version requests are not errors.
fn usage_error(e: clap::Error) -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if e.exit_code() == 0 || !json_requested(&args) {
        e.exit();
    }
    let mut out = Out::new(true);
    let result = out.usage_error(&usage_message(&e));
    ExitCode::from(exit_status(
        result.and_then(|code| out.flush().map(|()| code)),
    ))
}

fn dispatch(root: &Root, command: Command, out: &mut Out) -> CmdResult {
    match command {
        Command::List => list::list(root, out),
        Command::Status { key } => claim_cmds::status(root, &key, out),
        Command::Acquire(a) => claim_cmds::acquire(root, a, out),
        Command::Release { key, holder } => claim_cmds::release(root, &key, &holder, out),
        Command::Renew { key, holder, ttl } => claim_cmds::renew(root, &key, &holder, ttl, out),
        Command::ForceRelease(a) => claim_cmds::force_release(root, a, out),
        Command::Events(a) => events::events(root, a, out),
        Command::Doctor { fix } => list::doctor(root, fix, out),
        Command::Run(a) => cli::run::run(root, a, out),
        Command::Completions { shell } => completions::completions(shell, out),
    }
}
