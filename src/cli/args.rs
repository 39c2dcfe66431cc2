//! The command line, as clap sees it, and the root every subcommand works on.
//!
//! Only what clap can reject on its own belongs here (unparseable or
//! non-positive DUR, metadata that is not an object, missing flags: exit 2).
//! What the protocol refuses (TTL out of range, a key too long once encoded)
//! is left to the library, so the CLI never disagrees with the other faces.

use crate::claims::{global_claims_root, parse_ttl_ms, Root};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueHint};
use serde_json::{Map, Value};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "claimtop",
    version,
    about = "Watch and operate fno work claims (YAML lockfiles under .fno/claims)",
    long_about = "Watch and operate fno work claims (YAML lockfiles under .fno/claims).\n\n\
        Without a subcommand, opens the interactive dashboard.\n\n\
        ROOT is --root, else $FNO_CLAIMS_ROOT, else $HOME (empty counts as unset).\n\
        Exit status: 0 done, 1 error, 2 usage error, 3 declined (held by another,\n\
        nothing renewed, force-release refused, hazards found)."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(flatten)]
    pub dashboard: DashboardArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// Parse the process arguments, exiting 2 on a usage error.
    pub fn parse_checked() -> Cli {
        let cli = Cli::parse();
        if let Err(e) = cli.check() {
            e.exit();
        }
        cli
    }

    /// What clap's derive cannot say: dashboard flags belong to no
    /// subcommand. (`args_conflicts_with_subcommands` would also reject the
    /// global flags written before a subcommand.)
    pub fn check(&self) -> Result<(), clap::Error> {
        let d = &self.dashboard;
        let flags = [
            (d.read_only, "--read-only"),
            (d.no_color, "--no-color"),
            (d.demo, "--demo"),
            (d.keep, "--keep"),
        ];
        match (&self.command, flags.iter().find(|(set, _)| *set)) {
            (Some(_), Some((_, flag))) => Err(Cli::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                format!("{flag} is a dashboard flag and cannot be used with a subcommand"),
            )),
            (None, _) if self.global.json => Err(Cli::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "--json needs a subcommand (list, status, ...); the dashboard has no JSON form",
            )),
            _ => Ok(()),
        }
    }
}

/// Accepted before or after any subcommand.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// The directory containing .fno/claims [default: $FNO_CLAIMS_ROOT, else $HOME]
    #[arg(long, global = true, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub root: Option<PathBuf>,

    /// The directory containing .fno/events.jsonl [default: ROOT]
    #[arg(long, global = true, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub events_dir: Option<PathBuf>,

    /// Print exactly one JSON document on stdout (events: JSON Lines)
    #[arg(long, global = true)]
    pub json: bool,
}

/// Flags of the dashboard (no subcommand).
#[derive(Debug, Clone, Args)]
pub struct DashboardArgs {
    /// Disable every mutating key in the dashboard
    #[arg(long)]
    pub read_only: bool,

    /// No colour (also implied by a non-empty NO_COLOR)
    #[arg(long)]
    pub no_color: bool,

    /// Run on a sandbox root with simulated workers
    #[arg(long)]
    pub demo: bool,

    /// Show times in the local zone (with its offset) instead of UTC
    #[arg(long)]
    pub local_time: bool,

    /// Keep the demo sandbox on exit
    #[arg(long, requires = "demo")]
    pub keep: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Classify every lockfile under the root, and list hazards
    List,
    /// Classify one key
    Status {
        /// The claim key (e.g. node:abc123)
        key: String,
    },
    /// Acquire KEY for HOLDER (exit 3 when another holder has it)
    Acquire(AcquireArgs),
    /// Release HOLDER's claim on KEY (exit 0 also when there was nothing to release)
    Release {
        /// The claim key
        key: String,
        /// Release only if this holder holds it
        #[arg(long, value_name = "H")]
        holder: String,
    },
    /// Reset a live TTL claim's deadline to now + DUR (exit 3 when nothing was renewed)
    Renew {
        /// The claim key
        key: String,
        /// Renew only if this holder holds it
        #[arg(long, value_name = "H")]
        holder: String,
        /// 1h, 30m, 3600s, or bare seconds
        #[arg(long, value_name = "DUR", value_parser = parse_dur, allow_hyphen_values = true)]
        ttl: i64,
        /// Renewing on the holder's behalf: who did it, recorded in the claim_renewed event
        #[arg(long, value_name = "NAME")]
        operator: Option<String>,
    },
    /// Archive a stuck claim into .expired/ (exit 3 when refused)
    ForceRelease(ForceArgs),
    /// Print (and follow) the audit log
    Events(EventsArgs),
    /// Report hazards in the root (exit 3 when any are found)
    Doctor {
        /// Remove only what is provably abandoned: old temp files, mutex corpses
        #[arg(long)]
        fix: bool,
    },
    /// Print a shell completion script
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct AcquireArgs {
    /// The claim key (e.g. node:abc123)
    pub key: String,
    /// Who claims it (e.g. pty:worker-1)
    #[arg(long, value_name = "H")]
    pub holder: String,
    /// TTL claim: 1h, 30m, 3600s, or bare seconds (default: a PID-bound claim)
    #[arg(long, value_name = "DUR", value_parser = parse_dur, allow_hyphen_values = true)]
    pub ttl: Option<i64>,
    /// The pid the claim is bound to [default: the process that ran claimtop]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(i32::MAX)))]
    pub pid: Option<u32>,
    /// Why, for the operator reading the claim
    #[arg(long, value_name = "R")]
    pub reason: Option<String>,
    /// A JSON object stored in the record
    #[arg(long, value_name = "JSON", value_parser = parse_metadata)]
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Args)]
pub struct ForceArgs {
    /// The claim key
    pub key: String,
    /// Refuse unless the file still names this holder
    #[arg(long, value_name = "H")]
    pub expect_holder: Option<String>,
    /// Refuse unless the file still has this acquired_at (epoch ms)
    #[arg(long, value_name = "MS")]
    pub expect_acquired_at: Option<i64>,
    /// Who is doing this, for the audit log [default: $USER@hostname]
    #[arg(long, value_name = "NAME")]
    pub operator: Option<String>,
    /// Also archive a claim whose holder is alive
    #[arg(long)]
    pub allow_live: bool,
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Only the last N events (after filtering) [default: all]
    #[arg(short = 'n', value_name = "N")]
    pub lines: Option<usize>,
    /// Keep printing new events until interrupted
    #[arg(short, long)]
    pub follow: bool,
    /// Only events whose data.key is K
    #[arg(long, value_name = "K")]
    pub key: Option<String>,
    /// Only events of type T (e.g. claim_acquired)
    #[arg(long = "type", value_name = "T")]
    pub kind: Option<String>,
}

/// DUR: the seed's TTL syntax, positive. Range is the protocol's call.
/// (`--ttl` takes hyphen values so `-5m` is reported as a non-positive DUR
/// rather than as an unknown flag.)
fn parse_dur(s: &str) -> Result<i64, String> {
    parse_ttl_ms(s).ok_or_else(|| {
        "expected a positive duration such as 1h, 30m, 3600s or bare seconds".to_string()
    })
}

fn parse_metadata(s: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(s) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("expected a JSON object, e.g. '{\"pr\": 12}'".to_string()),
        Err(e) => Err(format!("not valid JSON: {e}")),
    }
}

impl GlobalArgs {
    /// The claims root and events dir these flags name, or None when neither
    /// `--root` nor the environment gives one.
    pub fn root(&self) -> Option<Root> {
        let root = self.root.clone().or_else(global_claims_root)?;
        let events_dir = self.events_dir.clone().unwrap_or_else(|| root.clone());
        Some(Root {
            root,
            events_dir: Some(events_dir),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_are_accepted_before_and_after_the_subcommand() {
        let a = Cli::try_parse_from(["claimtop", "--root", "/r", "list", "--json"]).unwrap();
        assert_eq!(a.global.root, Some(PathBuf::from("/r")));
        assert!(a.global.json);
        let b = Cli::try_parse_from(["claimtop", "status", "k", "--events-dir", "/e"]).unwrap();
        assert_eq!(b.global.events_dir, Some(PathBuf::from("/e")));
    }

    fn parse_and_check(args: &[&str]) -> Result<Cli, clap::Error> {
        let cli = Cli::try_parse_from(args)?;
        cli.check().map(|()| cli)
    }

    #[test]
    fn dashboard_flags_do_not_mix_with_subcommands() {
        let err = parse_and_check(&["claimtop", "--read-only", "list"]).unwrap_err();
        assert!(err.to_string().contains("--read-only"), "{err}");
        assert!(parse_and_check(&["claimtop", "list", "--no-color"]).is_err());
        assert!(parse_and_check(&["claimtop", "--keep"]).is_err());
        assert!(parse_and_check(&["claimtop", "--demo", "--keep", "--no-color"]).is_ok());
    }

    #[test]
    fn json_without_a_subcommand_is_a_usage_error() {
        let err = parse_and_check(&["claimtop", "--json"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn metadata_must_be_a_json_object() {
        assert!(parse_metadata("{\"a\": [1]}").is_ok());
        assert!(parse_metadata("[1]").unwrap_err().contains("JSON object"));
        assert!(parse_metadata("{").unwrap_err().contains("not valid JSON"));
    }

    #[test]
    fn explicit_root_wins_and_events_default_to_it() {
        let g = GlobalArgs {
            root: Some("/r".into()),
            events_dir: None,
            json: false,
        };
        let r = g.root().unwrap();
        assert_eq!(r.events_dir, Some(PathBuf::from("/r")));
    }
}
