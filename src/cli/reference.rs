//! The CLI reference, generated from the clap definition the program parses
//! with, so the documents in `docs/` and the man page cannot drift from the
//! code: `tests/cli/docs.rs` fails when they differ.

use super::args::{Cli, ETCD};
use clap::CommandFactory;

/// The whole command line as documented: every flag, the etcd store's too
/// (a build without that store hides them from its own `--help` only).
pub fn documented_command() -> clap::Command {
    let mut cmd = Cli::command().mut_args(|a| {
        if a.get_help_heading() == Some(ETCD) {
            a.hide(false)
        } else {
            a
        }
    });
    // Propagates the global flags into every subcommand and names each
    // one's usage line after its parent, as a real `--help` would.
    cmd.build();
    cmd
}

/// `docs/cli-reference.md`: the long help of `claimtop` and of each
/// subcommand, in the order `claimtop --help` lists them.
pub fn markdown() -> String {
    let mut cmd = documented_command();
    let mut out = String::from(
        "# CLI reference\n\n\
         <!-- Generated from the program's own command-line definition by\n     \
         `CLAIMTOP_BLESS=1 cargo test --test cli docs::`; edit src/cli/args.rs, not this file. -->\n\n\
         Every command's `--help`, in full. The guide is [cli.md](cli.md); the JSON\n\
         shapes are the project's CLI contract.\n",
    );
    section(&mut out, "claimtop", &mut cmd);
    for sub in cmd.get_subcommands_mut() {
        if sub.get_name() == "help" {
            continue;
        }
        let title = format!("claimtop {}", sub.get_name());
        section(&mut out, &title, sub);
    }
    out
}

fn section(out: &mut String, title: &str, cmd: &mut clap::Command) {
    // StyledStr's Display is the plain text, without terminal styling.
    let help = cmd.render_long_help().to_string();
    out.push_str(&format!(
        "\n## {title}\n\n```text\n{}\n```\n",
        help.trim_end()
    ));
}
