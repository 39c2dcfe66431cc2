//! The command line, as clap sees it, and the root every subcommand works on.
//!
//! Only what clap can reject on its own belongs here (unparseable or
//! non-positive DUR, metadata that is not an object, missing flags: exit 2).
//! What the protocol refuses (TTL out of range, a key too long once encoded)
//! is left to the library, so the CLI never disagrees with the other faces.
//!
//! The doc comments on flags are their `--help` text, written for a
//! terminal: `[:SS]` and `[default: …]` there are help syntax, not links.
#![allow(rustdoc::broken_intra_doc_links)]

use crate::claims::parse_ttl_ms;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueHint};
use serde_json::{Map, Value};
use std::path::PathBuf;

mod names;
pub use names::{Names, NamesError};

#[derive(Debug, Parser)]
#[command(
    name = "claimtop",
    version,
    about = "Watch and operate fno work claims (YAML lockfiles under .fno/claims)",
    long_about = "Watch and operate fno work claims (YAML lockfiles under .fno/claims).\n\n\
        Without a subcommand, opens the interactive dashboard.\n\n\
        ROOT is --root, else $FNO_CLAIMS_ROOT, else $HOME (empty counts as unset).",
    after_help = "Exit status: 0 done, 1 error, 2 usage error, 3 declined (held by another,\n\
        nothing renewed, force-release refused, hazards found), 4 the claim was lost\n\
        while run's command ran (otherwise run exits with its command's status).\n\
        A TTL (--ttl DUR: 1h, 30m, 3600s or bare seconds) lies within 60s–24h."
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
    /// Parse the process arguments. `Err` is clap's error: a usage error
    /// (exit 2), or help/version text (exit 0), for the caller to report.
    pub fn try_parse_checked() -> Result<Cli, clap::Error> {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        let cli = Cli::try_parse_from(&args)?;
        cli.check()?;
        cli.check_roots_kept(&args).map(|()| cli)
    }

    /// clap keeps only the `--root`s (and `--store`s) on one side of the
    /// subcommand when they are given on both (`--root a list --root b` is
    /// just `b`): a root silently missing from a list would read as "no
    /// claims there".
    pub fn check_roots_kept<S: AsRef<std::ffi::OsStr>>(
        &self,
        args: &[S],
    ) -> Result<(), clap::Error> {
        let given = |flag: &str| {
            let with_value = format!("{flag}=");
            args.iter()
                .skip(1)
                .map(AsRef::as_ref)
                .take_while(|a| *a != "--")
                .filter(|a| *a == flag || a.as_encoded_bytes().starts_with(with_value.as_bytes()))
                .count()
        };
        for (flag, kept) in [
            ("--root", self.global.root.len()),
            ("--store", self.global.store.len()),
        ] {
            if given(flag) != kept {
                return Err(Cli::command().error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "give every {flag} on the same side of the subcommand \
                         (all before it, or all after it)"
                    ),
                ));
            }
        }
        Ok(())
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
            // `publish` mirrors its roots into exactly one store.
            (Some(Command::Publish(_)), _) if self.global.store.len() > 1 => Err(Cli::command()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    "publish mirrors its roots into one store: give one --store",
                )),
            (None, _) if self.global.json => Err(Cli::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "--json needs a subcommand (list, status, ...); the dashboard has no JSON form",
            )),
            _ => Ok(()),
        }
    }
}

/// Accepted before or after any subcommand. Shown under their own
/// headings, after each command's own flags, so that `acquire --help` leads
/// with what acquiring needs.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// The directory containing .fno/claims; repeat it to cover several
    /// roots (verbs on one key take exactly one)
    /// [default: $FNO_CLAIMS_ROOT, :-separated, else $HOME]
    #[arg(long, global = true, value_name = "DIR", value_hint = ValueHint::DirPath, help_heading = GLOBAL)]
    pub root: Vec<PathBuf>,

    /// The directory containing .fno/events.jsonl [default: ROOT]
    #[arg(long, global = true, value_name = "DIR", value_hint = ValueHint::DirPath, help_heading = GLOBAL)]
    pub events_dir: Option<PathBuf>,

    /// Print JSON on stdout instead of text, for scripts
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,

    /// The settings file [default: $XDG_CONFIG_HOME/claimtop/config.toml,
    /// else ~/.config/claimtop/config.toml]
    #[arg(long, global = true, value_name = "FILE", value_hint = ValueHint::FilePath, help_heading = GLOBAL)]
    pub config: Option<PathBuf>,

    /// Where the claims are: file:DIR, etcd://HOST:PORT[,HOST:PORT...][/PREFIX]
    /// or etcds://...; repeat it, and mix it with --root, to cover several
    /// stores (verbs on one key take exactly one)
    /// [default: $FNO_CLAIMS_STORE, space-separated, else file:ROOT]
    #[arg(long, global = true, value_name = "URL", help_heading = GLOBAL)]
    pub store: Vec<String>,

    /// The CA bundle that signs the server certificates (TLS)
    #[arg(long, global = true, value_name = "FILE", value_hint = ValueHint::FilePath, help_heading = ETCD, hide = !ETCD_BUILT)]
    pub etcd_cacert: Option<PathBuf>,

    /// This client's certificate (TLS client auth)
    #[arg(long, global = true, value_name = "FILE", value_hint = ValueHint::FilePath, help_heading = ETCD, hide = !ETCD_BUILT)]
    pub etcd_cert: Option<PathBuf>,

    /// This client's private key (TLS client auth)
    #[arg(long, global = true, value_name = "FILE", value_hint = ValueHint::FilePath, help_heading = ETCD, hide = !ETCD_BUILT)]
    pub etcd_key: Option<PathBuf>,

    /// The user to authenticate as; the password is read from
    /// $ETCD_PASSWORD only, so it never shows in a process listing
    #[arg(long, global = true, value_name = "USER", help_heading = ETCD, hide = !ETCD_BUILT)]
    pub etcd_user: Option<String>,

    /// Fail a command when the store has not answered within DUR [default: 5s]
    #[arg(long, global = true, value_name = "DUR", value_parser = parse_dur, help_heading = ETCD, hide = !ETCD_BUILT)]
    pub timeout: Option<i64>,

    /// How long events are kept [default: 7d]
    #[arg(long, global = true, value_name = "DUR", value_parser = parse_dur, help_heading = ETCD, hide = !ETCD_BUILT)]
    pub events_retention: Option<i64>,
}

/// The heading of the flags every command takes.
pub const GLOBAL: &str = "Global options";
/// The heading of the etcd store's flags. A build without the store still
/// accepts them (so a script's command line is not a usage error there:
/// the store URL is what gets refused, with a word on why), but does not
/// offer them in its help.
pub const ETCD: &str = "etcd store options";
const ETCD_BUILT: bool = cfg!(feature = "etcd");

/// Flags of the dashboard (no subcommand).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Dashboard options")]
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
    #[command(
        after_help = "Examples:\n  claimtop list --json | jq '.claims[] | select(.state == \"stale\") | .key'\n  claimtop --root ~/src/api --root ~/src/web list\n  claimtop list --as-of 03:00"
    )]
    List {
        /// The table as it was at TIME, rebuilt from the events log and the
        /// claims held now: who held each key then, since when, and how the
        /// tenure ended (RFC 3339, HH:MM[:SS] today, UTC unless --local-time,
        /// or a duration back from now: 2h)
        #[arg(long, value_name = "TIME")]
        as_of: Option<String>,
        /// Over a store hosts publish into: only what the host NAME (its
        /// label or host_id) publishes, beside the store's own claims
        /// (repeatable)
        #[arg(long = "host", value_name = "NAME", conflicts_with = "as_of")]
        host: Vec<String>,
        /// Over a store hosts publish into: only what is published from
        /// the root ID (a root_id from list --json; repeatable)
        #[arg(long = "root-id", value_name = "ID", conflicts_with = "as_of")]
        root_id: Vec<String>,
    },
    /// Classify one key
    #[command(
        after_help = "Examples:\n  claimtop status node:gpu\n  claimtop status node:gpu --json | jq -r .why"
    )]
    Status {
        /// The claim key (e.g. node:abc123)
        key: String,
    },
    /// Acquire KEY for HOLDER (exit 3 when another holder has it)
    #[command(
        after_help = "Exit status: 0 acquired, 1 error (a TTL outside 60s–24h among them: nothing\n\
            is written), 2 usage error, 3 held by another (with --wait: still held when\n\
            DUR ran out).\n\n\
            Examples:\n  claimtop acquire dispatch:pr-12 --holder codex:w3 --ttl 30m --reason review\n  claimtop acquire node:gpu --holder codex:w3 --wait=10m\n  claimtop acquire build:cache --holder ci:7 --pid $$ --metadata '{\"job\": 7}'"
    )]
    Acquire(AcquireArgs),
    /// Release HOLDER's claim on KEY (exit 0 also when there was nothing to release)
    #[command(
        after_help = "Examples:\n  claimtop release dispatch:pr-12 --holder codex:w3\n  claimtop release dispatch:pr-12 --holder codex:w3 --json"
    )]
    Release {
        /// The claim key
        key: String,
        /// Release only if this holder holds it
        #[arg(long, value_name = "H")]
        holder: String,
    },
    /// Reset an unexpired TTL claim's deadline to now + DUR (exit 3 when nothing was renewed)
    #[command(
        after_help = "Exit status: 0 renewed, 1 error (a TTL outside 60s–24h among them), 2 usage\n\
            error, 3 nothing renewed (not HOLDER's claim, no TTL, or its deadline has\n\
            passed: acquire it again).\n\n\
            Examples:\n  claimtop renew dispatch:pr-12 --holder codex:w3 --ttl 30m\n  claimtop renew dispatch:pr-12 --holder codex:w3 --ttl 30m --operator ops:alice"
    )]
    Renew {
        /// The claim key
        key: String,
        /// Renew only if this holder holds it
        #[arg(long, value_name = "H")]
        holder: String,
        /// The new deadline, counted from now: 1h, 30m, 3600s, or bare seconds; 60s to 24h
        #[arg(long, value_name = "DUR", value_parser = parse_dur, allow_hyphen_values = true)]
        ttl: i64,
        /// Renewing on the holder's behalf: who did it, recorded in the claim_renewed event
        #[arg(long, value_name = "NAME")]
        operator: Option<String>,
    },
    /// Archive a stuck claim into .expired/ (exit 3 when refused)
    #[command(
        after_help = "Examples:\n  claimtop force-release node:gpu\n  claimtop force-release node:gpu --expect-holder gemini:cli-7f2e --expect-acquired-at 1764576000000\n  claimtop force-release node:gpu --allow-live --operator ops:alice"
    )]
    ForceRelease(ForceArgs),
    /// Print (and follow) the audit log (with --json: one event per line, JSON Lines)
    #[command(
        after_help = "Examples:\n  claimtop events -n 50 --follow\n  claimtop events --since 1h --key node:gpu --type claim_force_released\n  claimtop events --since 2026-12-01T03:00:00Z --until 2026-12-01T03:30:00Z --json"
    )]
    Events(EventsArgs),
    /// Report hazards in the root (exit 3 when any are found)
    #[command(
        after_help = "Examples:\n  claimtop doctor\n  claimtop doctor --fix\n  claimtop doctor --json | jq -r '.hazards[].kind'"
    )]
    Doctor {
        /// Remove only what is provably abandoned: old temp files, mutex corpses
        #[arg(long)]
        fix: bool,
    },
    /// Serve Prometheus metrics at http://ADDR/metrics until interrupted
    #[command(
        after_help = "Examples:\n  claimtop metrics --listen 127.0.0.1:9464\n  claimtop --root ~/a --root ~/b metrics --listen 127.0.0.1:0"
    )]
    Metrics(MetricsArgs),
    /// Mirror the claims, hazards and new events of local roots (--root) into
    /// an etcd store (--store) until stopped (a service: logs on stderr, exits
    /// 0 on SIGTERM)
    #[command(
        after_help = "Examples:\n  claimtop publish --root /srv/repo-a --store etcd://etcd1:2379,etcd2:2379/fno\n  claimtop publish --root /srv/repo-a --root /srv/repo-b --store etcd://etcd1:2379/fno --lease-ttl 15s"
    )]
    Publish(PublishArgs),
    /// The hosts publishing into an etcd store (--store): list them, or
    /// forget a decommissioned one
    #[command(
        after_help = "Examples:\n  claimtop --store etcd://etcd1:2379/fno fleet\n  claimtop --store etcd://etcd1:2379/fno fleet forget build-7\n  claimtop --store etcd://etcd1:2379/fno fleet --json"
    )]
    Fleet(FleetArgs),
    /// Acquire KEY, run CMD while holding it, release it once no process of
    /// CMD's process group is left (exit 3 when held by another, 4 when the
    /// claim is lost while CMD runs)
    #[command(
        after_help = "Exit status: CMD's own (128+N when signal N ended it); 1 an error before CMD\n\
            ran (a TTL outside 60s–24h among them); 2 usage error; 3 held by another\n\
            (CMD never ran); 4 the claim was lost while CMD ran (force-released,\n\
            replaced, or a renewal refused), and CMD was stopped.\n\n\
            Examples:\n  claimtop run node:gpu --holder codex:w3 -- make train\n  claimtop run deploy:prod --holder ci:1234 --ttl 10m --wait=5m -- ./deploy.sh\n  claimtop --store etcd://127.0.0.1:2379 run node:gpu --holder w3 --ttl 1m -- make train"
    )]
    Run(RunArgs),
    /// Show the settings the dashboard and events read (config.toml)
    #[command(
        after_help = "Examples:\n  claimtop config --print\n  claimtop config --print --config ./ops.toml"
    )]
    Config {
        /// Print the effective settings as TOML (every key, defaults included)
        #[arg(long)]
        print: bool,
    },
    /// Print a shell completion script
    #[command(
        after_help = "Examples:\n  claimtop completions bash > /etc/bash_completion.d/claimtop\n  claimtop completions zsh > ~/.zfunc/_claimtop"
    )]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub verb: Option<FleetVerb>,
}

#[derive(Debug, Subcommand)]
pub enum FleetVerb {
    /// Remove an offline host's published record, its roots' copies and its
    /// mirrored events (exit 3, nothing removed, while the host is online)
    Forget {
        /// The host's name or its machine id (as `fleet` lists them)
        host: String,
    },
}

#[derive(Debug, Args)]
pub struct AcquireArgs {
    /// The claim key (e.g. node:abc123)
    pub key: String,
    /// Who claims it (e.g. pty:worker-1)
    #[arg(long, value_name = "H")]
    pub holder: String,
    /// TTL claim: 1h, 30m, 3600s, or bare seconds; 60s to 24h (default: a PID-bound claim)
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
    /// While another holder has KEY, wait for it: up to DUR, else forever (exit 3 when DUR passes)
    #[arg(long, value_name = "DUR", num_args = 0..=1, require_equals = true, value_parser = parse_dur)]
    pub wait: Option<Option<i64>>,
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
    #[arg(long, value_name = "NAME", value_parser = parse_operator)]
    pub operator: Option<String>,
    /// Also archive a claim whose holder is alive
    #[arg(long)]
    pub allow_live: bool,
    /// Over etcd: the claim is one a host publishes; ask that host's
    /// publisher to do it (a host_id, or a unique hostname)
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// With --host: which of its roots (a root_id from list --json; not
    /// needed when the host publishes one root)
    #[arg(long, value_name = "ID", requires = "host")]
    pub root_id: Option<String>,
}

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// The publisher's lease: a host whose publisher dies or is cut off
    /// drops out of the fleet within DUR (renewed every third of it)
    #[arg(long, value_name = "DUR", value_parser = parse_dur, default_value = "30s")]
    pub lease_ttl: i64,
    /// How often every root is looked at whole, a safety net for lost file
    /// notifications: re-read when its claims dir changed since it was last
    /// read, and every tenth time (a holder's pid dying or a TTL running
    /// out is noticed every 2 s without it)
    #[arg(long, value_name = "DUR", value_parser = parse_dur, default_value = "60s")]
    pub resweep: i64,
}

#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Where to listen, e.g. 127.0.0.1:9464 (port 0: any free port, printed on stderr)
    #[arg(long, value_name = "ADDR")]
    pub listen: std::net::SocketAddr,
    /// Over a fleet, count every published copy at each scrape (O(claims))
    /// instead of reading each root's summary (O(hosts), up to a second
    /// behind)
    #[arg(long)]
    pub per_claim: bool,
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
    /// Only events of type T: claim_acquired, claim_idempotent_reacquired,
    /// claim_stale_reclaimed, claim_released, claim_force_released,
    /// claim_renewed or claim_expired
    #[arg(long = "type", value_name = "T")]
    pub kind: Option<String>,
    /// Only events at or after this: a DUR back from now (1h), an RFC 3339
    /// time, or HH:MM[:SS] today (UTC, or local with --local-time before the
    /// subcommand)
    #[arg(long, value_name = "DUR|TIME", value_parser = check_since, allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Only events before this: an RFC 3339 time, or HH:MM[:SS] today
    #[arg(long, value_name = "TIME", value_parser = check_since, allow_hyphen_values = true)]
    pub until: Option<String>,
    /// The dashboard's --local-time, for HH:MM in --since and --until.
    #[arg(skip)]
    pub local_time: bool,
}

impl EventsArgs {
    /// `--since` and `--until` as epoch ms, read against `now_ms`.
    pub fn window(&self, now_ms: i64) -> (Option<i64>, Option<i64>) {
        let at = |t: &Option<String>| {
            t.as_deref()
                .and_then(|t| crate::time::parse_since(t, now_ms, self.local_time))
        };
        (at(&self.since), at(&self.until))
    }

    /// What the flags' forms allow but no event can match, in words: a
    /// window that ends before it begins, a type no event has (the known
    /// ones named). A usage error, not an empty answer: a typo in a script
    /// would otherwise read as "nothing happened".
    pub fn refusal(&self, now_ms: i64) -> Option<String> {
        if let (Some(since), Some(until)) = self.window(now_ms) {
            if since > until {
                return Some(format!(
                    "--since {} is after --until {}: no event can be in that window",
                    crate::sanitize::sanitize(self.since.as_deref().unwrap_or("")),
                    crate::sanitize::sanitize(self.until.as_deref().unwrap_or(""))
                ));
            }
        }
        let kind = self.kind.as_deref()?;
        if crate::events::EventKind::parse(kind).is_some() {
            return None;
        }
        Some(format!(
            "--type {}: not an event type; the types are {}",
            crate::sanitize::sanitize(kind),
            crate::events::kind::EVENT_TYPES.join(", ")
        ))
    }
}

/// `--since` / `--until` text that names a time; what time depends on when
/// the command runs, so only its form (and range) is checked here.
fn check_since(s: &str) -> Result<String, String> {
    match crate::time::read_instant(s, crate::time::now_ms(), false) {
        Ok(_) => Ok(s.to_string()),
        Err(crate::time::InstantError::NotATime) => Err(
            "expected a duration back from now (1h, 30m), an RFC 3339 time \
             (2026-12-01T03:00:00Z) or HH:MM[:SS] today"
                .to_string(),
        ),
        Err(e) => Err(e.to_string()),
    }
}

/// DUR: the seed's TTL syntax, positive. Range is the protocol's call.
/// (`--ttl` takes hyphen values so `-5m` is reported as a non-positive DUR
/// rather than as an unknown flag.)
pub(crate) fn parse_dur(s: &str) -> Result<i64, String> {
    parse_ttl_ms(s).ok_or_else(|| {
        "expected a positive duration such as 1h, 30m, 3600s or bare seconds".to_string()
    })
}

/// An audit trail entry that names nobody is worse than the default.
fn parse_operator(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err(
            "the operator name must not be empty (omit --operator for $USER@hostname)".into(),
        );
    }
    Ok(s.to_string())
}

/// Did the command line ask for JSON? Used only when clap could not parse it,
/// so the usage error can still be one JSON document on stdout. Words after
/// `--` belong to no flag.
pub fn json_requested<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> bool {
    args.iter()
        .skip(1)
        .map(AsRef::as_ref)
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
}

/// A clap error in one line of words: its message (with the arguments it
/// lists) without the `error:` prefix, the usage block or the `--help` tip.
pub fn usage_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let words: Vec<&str> = text
        .trim_start()
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let msg = words.join(" ");
    msg.strip_prefix("error: ").unwrap_or(&msg).to_string()
}

fn parse_metadata(s: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(s) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("expected a JSON object, e.g. '{\"pr\": 12}'".to_string()),
        Err(e) => Err(format!("not valid JSON: {e}")),
    }
}

/// `claimtop run`: hold KEY while CMD runs.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The claim key (e.g. node:abc123)
    pub key: String,
    /// Who claims it (e.g. pty:worker-1)
    #[arg(long, value_name = "H")]
    pub holder: String,
    /// Also bound the claim by a TTL, renewed while CMD runs: 1h, 30m, 3600s, or bare
    /// seconds; 60s to 24h
    #[arg(long, value_name = "DUR", value_parser = parse_dur, allow_hyphen_values = true)]
    pub ttl: Option<i64>,
    /// While another holder has KEY, wait for it: up to DUR, else forever (exit 3 when DUR passes)
    #[arg(long, value_name = "DUR", num_args = 0..=1, require_equals = true, value_parser = parse_dur)]
    pub wait: Option<Option<i64>>,
    /// Why, for the operator reading the claim
    #[arg(long, value_name = "R")]
    pub reason: Option<String>,
    /// The command to run while holding KEY, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[cfg(test)]
mod tests;
