//! completions: a shell completion script generated from the clap definition,
//! so it can never fall behind the real flags.

use super::args::Cli;
use super::output::{CmdResult, Out, EXIT_OK};
use clap::CommandFactory;

pub fn completions(shell: clap_complete::Shell, out: &mut Out) -> CmdResult {
    // Rendered into memory first: clap_complete panics on a failed write, and
    // `claimtop completions bash | head` must end quietly like every command.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "claimtop", &mut script);
    out.raw_bytes(&script)?;
    out.flush()?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_completion_names_every_subcommand() {
        let mut script = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut Cli::command(),
            "claimtop",
            &mut script,
        );
        let text = String::from_utf8(script).unwrap();
        for sub in ["force-release", "doctor", "events", "acquire"] {
            assert!(text.contains(sub), "{sub} missing");
        }
    }
}
