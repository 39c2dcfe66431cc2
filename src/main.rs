//! `claimtop`: parse the command line and hand each subcommand to its module.

use claimtop::claims::{Roots, RootsError};
use claimtop::cli::args::DashboardArgs;
use claimtop::cli::args::{json_requested, usage_message, Cli, Command};
use claimtop::cli::output::{CmdResult, Out};
use claimtop::cli::{
    self, claim_cmds, completions, config, events, exit_status, list, metrics, publish, tui,
};
use claimtop::dashboard::Opening;
use claimtop::store::{self, Store, StoreUrl};
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
    let store_url = match global.store_url() {
        Ok(u) => u,
        Err(e) => {
            return ExitCode::from(exit_status(
                Out::new(global.json).usage_error(&e.to_string()),
            ))
        }
    };
    // A file store named by URL is that root, exactly as `--root` names it.
    let (etcd, roots) = match store_url {
        Some(StoreUrl::File(dir)) => (None, Roots::resolve(&[dir], global.events_dir.as_deref())),
        Some(url) => (Some(url), global.roots()),
        None => (None, global.roots()),
    };
    let Some(command) = command else {
        let (dashboard, opening) = match config::load(global.config.as_deref()) {
            Ok(loaded) => with_settings(dashboard, &loaded.settings.dashboard),
            Err(e) => {
                return ExitCode::from(exit_status(Out::new(false).usage_error(&e.to_string())))
            }
        };
        if let Some(url) = etcd.filter(|_| !dashboard.demo) {
            return ExitCode::from(tui::dashboard_store(
                url,
                global.open_opts(),
                &dashboard,
                &opening,
            ));
        }
        return match dashboard_root(roots, dashboard.demo) {
            Ok(root) => ExitCode::from(tui::dashboard(root, &dashboard, &opening)),
            Err(e) => ExitCode::from(exit_status(Out::new(false).usage_error(&e))),
        };
    };
    // The roots are read only by a file store's commands and by publish.
    let reads_roots = match &command {
        Command::Completions { .. } | Command::Config { .. } => false,
        Command::Publish(_) => true,
        _ => etcd.is_none(),
    };
    if reads_roots {
        warn_missing_roots(&roots);
    }
    let mut out = Out::new(global.json);
    // HH:MM in --since/--until/--as-of is read in the zone the settings name.
    let mut local_time = dashboard.local_time;
    claimtop::time::set_local_words(local_time);
    if matches!(&command, Command::List { as_of: Some(_) }) {
        match config::load(global.config.as_deref()) {
            Ok(loaded) => {
                local_time |= loaded.settings.dashboard.time_zone == config::TimeZone::Local
            }
            Err(e) => return ExitCode::from(exit_status(out.usage_error(&e.to_string()))),
        }
    }
    let command = match command {
        // HH:MM in --since/--until is read in the zone the settings name.
        Command::Events(mut a) if a.since.is_some() || a.until.is_some() => {
            match config::load(global.config.as_deref()) {
                Ok(loaded) => {
                    a.local_time = dashboard.local_time
                        || loaded.settings.dashboard.time_zone == config::TimeZone::Local;
                    Command::Events(a)
                }
                Err(e) => return ExitCode::from(exit_status(out.usage_error(&e.to_string()))),
            }
        }
        Command::Events(mut a) => {
            a.local_time = dashboard.local_time;
            Command::Events(a)
        }
        other => other,
    };
    let result = match (command, etcd, roots) {
        // The only subcommands that need no claims root.
        (Command::Completions { shell }, _, _) => completions::completions(shell, &mut out),
        (Command::Config { .. }, _, _) => config::print(global.config.as_deref(), &mut out),
        (Command::Publish(a), Some(url), Ok(roots)) => {
            publish::publish(&url, &roots, a, &global, &mut out)
        }
        (Command::Publish(a), None, roots) => match (global.publish_store_url(), roots) {
            (Ok(Some(url)), Ok(roots)) => publish::publish(&url, &roots, a, &global, &mut out),
            (Err(e), _) => out.usage_error(&e.to_string()),
            (_, Err(e)) => out.usage_error(&e.to_string()),
            (Ok(None), _) => out.usage_error(
                "publish needs --store etcd://HOST:PORT[/PREFIX] (where to mirror the roots)",
            ),
        },
        (Command::Publish(_), Some(_), Err(e)) => out.usage_error(&e.to_string()),
        (Command::ForceRelease(a), Some(url), _) if a.host.is_some() => {
            publish::force_release_on_host(&url, a, &global, &mut out)
        }
        (command, Some(url), _) => match store::open(&url, &global.open_opts()) {
            Ok(store) => dispatch(&*store, command, local_time, &mut out),
            Err(e) => out.error(&e.to_string()),
        },
        (_, None, Err(RootsError::NoRoot)) => cli::no_root(&mut out),
        (_, None, Err(e)) => out.usage_error(&e.to_string()),
        (command, None, Ok(roots)) => {
            let store = store::open_roots(&roots, Some(cli::wait::say_mutex_wait()));
            dispatch(&*store, command, local_time, &mut out)
        }
    };
    ExitCode::from(exit_status(
        result.and_then(|code| out.flush().map(|()| code)),
    ))
}

/// Say on stderr that a named root does not exist: a mistyped `--root`
/// would otherwise read as a healthy root with no claims (`doctor` and
/// `list --json` carry it as a `root_missing` hazard too).
fn warn_missing_roots(roots: &Result<Roots, RootsError>) {
    let Ok(roots) = roots else {
        return;
    };
    for root in roots.as_slice() {
        if let Some(h) = claimtop::claims::root_missing(root) {
            claimtop::diag::stderr_line(&format!(
                "claimtop: warning: the root {} does not exist (a mistyped --root?)",
                claimtop::sanitize::sanitize(&h.path.to_string_lossy())
            ));
        }
    }
}

/// The dashboard's flags with the settings file's under them: a flag turns
/// a setting on, never off.
fn with_settings(mut d: DashboardArgs, s: &config::DashboardSettings) -> (DashboardArgs, Opening) {
    d.local_time |= s.time_zone == config::TimeZone::Local;
    d.read_only |= s.read_only;
    d.no_color |= s.no_color;
    let opening = Opening {
        filter: s.filter.clone(),
        sort: s.sort(),
        columns: s.chosen_columns(),
        keys: s.key_overrides(),
        refresh_ms: s.refresh_ms(),
    };
    (d, opening)
}

/// The roots the dashboard covers, one or several. `None` when none is
/// named (the dashboard says so itself, or runs its demo sandbox).
fn dashboard_root(roots: Result<Roots, RootsError>, demo: bool) -> Result<Option<Roots>, String> {
    match roots {
        _ if demo => Ok(None),
        Ok(r) => Ok(Some(r)),
        Err(RootsError::NoRoot) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
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

/// Every command on one store, through the store seam: one root, several
/// (a verb on one key refuses them), or etcd.
fn dispatch(store: &dyn Store, command: Command, local_time: bool, out: &mut Out) -> CmdResult {
    match command {
        Command::List { as_of: None } => list::list(store, out),
        Command::List { as_of: Some(at) } => cli::asof::list_as_of(store, &at, local_time, out),
        Command::Doctor { fix } => list::doctor(store, fix, out),
        Command::Status { key } => claim_cmds::status(store, &key, out),
        Command::Acquire(a) => claim_cmds::acquire(store, a, out),
        Command::Release { key, holder } => claim_cmds::release(store, &key, &holder, out),
        Command::Renew {
            key,
            holder,
            ttl,
            operator,
        } => claim_cmds::renew(store, &key, &holder, ttl, operator.as_deref(), out),
        Command::ForceRelease(a) if a.host.is_some() => out.usage_error(
            "--host names a host publishing into an etcd store: give --store etcd://...",
        ),
        Command::ForceRelease(a) => claim_cmds::force_release(store, a, out),
        Command::Publish(_) => out.usage_error(
            "publish needs --store etcd://HOST:PORT[/PREFIX] (where to mirror the roots)",
        ),
        Command::Events(a) => events::events(store, a, out),
        Command::Run(a) => cli::run::run(store, a, out),
        Command::Fleet(a) => cli::fleet_cmd::fleet(store, a, out),
        Command::Metrics(a) => metrics::serve(store, &a, out),
        Command::Completions { shell } => completions::completions(shell, out),
        Command::Config { .. } => config::print(None, out),
    }
}
