//! The CLI reference, generated from the clap definition the program parses
//! with, so the documents in `docs/` and the man pages cannot drift from the
//! code: `tests/cli/docs.rs` fails when they differ.
//!
//! The documents show one build, the one with the etcd store, whichever
//! build generates them; what works only there says so, since a reader
//! cannot tell from a flag's name which build they installed.

use super::args::{Cli, ETCD};
use clap::CommandFactory;

/// How the documents mark what works only in a build with the etcd store.
pub const ETCD_ONLY: &str = "(etcd build only)";

/// What needs the etcd store although no `etcd store options` heading says
/// so: a subcommand (`None`), or one of its flags by id.
const NEEDS_ETCD: [(&str, Option<&str>); 4] = [
    ("publish", None),
    ("fleet", None),
    ("force-release", Some("host")),
    ("force-release", Some("root_id")),
];

/// The whole command line as documented, before clap builds it.
fn defined() -> clap::Command {
    // The etcd flags are global: marked here, the mark goes with them into
    // every subcommand when clap builds the command.
    let mut cmd = Cli::command().mut_args(|a| {
        if a.get_help_heading() == Some(ETCD) {
            marked(a.hide(false))
        } else {
            a
        }
    });
    for (sub, arg) in NEEDS_ETCD {
        cmd = cmd.mut_subcommand(sub, |s| match arg {
            Some(id) => s.mut_arg(id, marked),
            None => {
                let about = s.get_about().map(|a| a.to_string()).unwrap_or_default();
                s.about(format!("{about} {ETCD_ONLY}"))
            }
        });
    }
    // Marked in place, so the subcommand keeps its place in the documents.
    cmd.mut_subcommands(|s| match s.get_name() {
        "list" => s.mut_arg("host", marked).mut_arg("root_id", marked),
        _ => s,
    })
}

fn marked(a: clap::Arg) -> clap::Arg {
    let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
    a.help(format!("{help} {ETCD_ONLY}"))
}

/// The command line as documented, built: the global flags propagated into
/// every subcommand and each one's usage line named after its parent, as a
/// real `--help` would show them.
pub fn documented_command() -> clap::Command {
    let mut cmd = defined();
    cmd.build();
    cmd
}

/// What the man pages are rendered from: as documented, saying which build
/// that is, without the `help` subcommands (a page of their own would only
/// restate the others).
pub fn man_command() -> clap::Command {
    fn without_help(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    let cmd = without_help(defined());
    let about = cmd
        .get_long_about()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let mut cmd = cmd.long_about(format!(
        "{about}\n\n\
         This page shows the build with the etcd store (cargo feature etcd). What \
         is marked {ETCD_ONLY} works only in that build: a default build does not \
         offer those options in its --help, and refuses an etcd:// store (exit 1, \
         \"built without etcd support\")."
    ));
    cmd.build();
    cmd
}

/// Every command a man page is made for: `claimtop` first, then each
/// subcommand, depth first, in the order `--help` lists them. Each is
/// built, so its name (`claimtop-fleet-forget`) and usage are a page's.
pub fn man_commands() -> Vec<clap::Command> {
    fn walk(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
        out.push(cmd.clone());
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, out);
        }
    }
    let mut out = Vec::new();
    walk(&man_command(), &mut out);
    out
}

/// `docs/cli-reference.md`: the long help of `claimtop` and of each
/// subcommand, in the order `claimtop --help` lists them.
pub fn markdown() -> String {
    let mut cmd = documented_command();
    let mut out = String::from(
        "# CLI reference\n\n\
         <!-- Generated from the program's own command-line definition by\n     \
         `CLAIMTOP_BLESS=1 cargo test --test cli docs::`; edit src/cli/args/, not this file. -->\n\n\
         Every command's `--help`, in full, as the build with the etcd store\n\
         (`cargo install --features etcd`) prints it; what works only in that build\n\
         is marked (etcd build only). The same text is in the man pages\n\
         (`assets/man/`: `man claimtop`, `man claimtop-run`, …). The guide is\n\
         [cli.md](cli.md); the JSON shapes are the project's CLI contract.\n",
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
