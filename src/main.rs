//! `claimtop`: parse the command line and hand each subcommand to its module.

use claimtop::claims::Root;
use claimtop::cli::args::{Cli, Command};
use claimtop::cli::output::{CmdResult, Out};
use claimtop::cli::{self, claim_cmds, completions, events, exit_status, list, tui};
use std::process::ExitCode;

fn main() -> ExitCode {
    let Cli {
        global,
        dashboard,
        command,
    } = Cli::parse_checked();
    let root = global.root();
    let Some(command) = command else {
        return ExitCode::from(tui::dashboard(root, &dashboard));
    };
    let mut out = Out::new(global.json);
    let result = match (command, root) {
        // The only subcommand that needs no claims root.
        (Command::Completions { shell }, _) => completions::completions(shell, &mut out),
        (_, None) => return ExitCode::from(cli::no_root()),
        (command, Some(root)) => dispatch(&root, command, &mut out),
    };
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
        Command::Renew {
            key,
            holder,
            ttl,
            operator,
        } => claim_cmds::renew(root, &key, &holder, ttl, operator.as_deref(), out),
        Command::ForceRelease(a) => claim_cmds::force_release(root, a, out),
        Command::Events(a) => events::events(root, a, out),
        Command::Doctor { fix } => list::doctor(root, fix, out),
        Command::Completions { shell } => completions::completions(shell, out),
    }
}
