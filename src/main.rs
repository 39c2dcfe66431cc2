//! `claimtop`: parse the command line and hand each subcommand to its module.

use claimtop::claims::{Root, RootsError};
use claimtop::cli::args::{json_requested, usage_message, Cli, Command, Names, NamesError};
use claimtop::cli::args::{DashboardArgs, GlobalArgs};
use claimtop::cli::dispatch::dispatch;
use claimtop::cli::output::{CmdResult, Out};
use claimtop::cli::{self, claim_cmds, completions, config, exit_status, publish, tui};
use claimtop::dashboard::Opening;
use claimtop::store::Store;
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
    let Some(command) = command else {
        return ExitCode::from(dashboard_of(&global, dashboard));
    };
    let mut out = Out::new(global.json);
    // HH:MM in --since/--until/--as-of is read in the zone the settings name.
    let mut local_time = dashboard.local_time;
    claimtop::time::set_local_words(local_time);
    if matches!(&command, Command::List { as_of: Some(_), .. }) {
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
    let result = match command {
        // The only subcommands that need no claims root.
        Command::Completions { shell } => completions::completions(shell, &mut out),
        Command::Config { .. } => config::print(global.config.as_deref(), &mut out),
        Command::Publish(a) => {
            let roots = global.roots();
            if let Ok(r) = &roots {
                warn_missing_roots(r.as_slice());
            }
            match (global.publish_store_url(), roots) {
                (Ok(Some(url)), Ok(roots)) => publish::publish(&url, &roots, a, &global, &mut out),
                (Err(e), _) => out.usage_error(&e.to_string()),
                (_, Err(e)) => out.usage_error(&e.to_string()),
                (Ok(None), _) => out.usage_error(
                    "publish needs --store etcd://HOST:PORT[/PREFIX] (where to mirror the roots)",
                ),
            }
        }
        command => on_store(&global, command, local_time, &mut out),
    };
    ExitCode::from(exit_status(
        result.and_then(|code| out.flush().map(|()| code)),
    ))
}

/// Every other command, on the one store the flags and the environment
/// name: its stores, then its roots.
fn on_store(global: &GlobalArgs, command: Command, local_time: bool, out: &mut Out) -> CmdResult {
    let names = match global.names() {
        Ok(n) => n,
        Err(NamesError::Roots(RootsError::NoRoot)) => return cli::no_root(out),
        Err(e) => return out.usage_error(&e.to_string()),
    };
    // A host's publisher is asked through its store's own connection.
    let one_store = match (names.stores.as_slice(), names.roots.as_slice()) {
        ([one], []) => claimtop::store::StoreUrl::parse(one.text()).ok(),
        _ => None,
    };
    let command = match (command, one_store) {
        (Command::ForceRelease(a), Some(url)) if a.host.is_some() => {
            return publish::force_release_on_host(&url, a, global, out)
        }
        (command, _) => command,
    };
    warn_missing_roots(&names.roots);
    let ctx = global.open_ctx(Some(cli::wait::say_mutex_wait()));
    match Store::open(&names.stores, &names.roots, &ctx) {
        Ok(store) => dispatch(&store, command, local_time, out),
        Err(e) => out.error(&e.to_string()),
    }
}

/// No subcommand: the dashboard, with the settings file's choices under
/// the flags.
fn dashboard_of(global: &GlobalArgs, dashboard: DashboardArgs) -> u8 {
    let (dashboard, opening) = match config::load(global.config.as_deref()) {
        Ok(loaded) => with_settings(dashboard, &loaded.settings.dashboard),
        Err(e) => return exit_status(Out::new(false).usage_error(&e.to_string())),
    };
    let ctx = global.open_ctx(None);
    if dashboard.demo {
        return tui::dashboard(nothing(), ctx, &dashboard, &opening);
    }
    match global.names() {
        Ok(names) => {
            warn_missing_roots(&names.roots);
            tui::dashboard(names, ctx, &dashboard, &opening)
        }
        // The dashboard says itself that there is no root.
        Err(NamesError::Roots(RootsError::NoRoot)) => {
            tui::dashboard(nothing(), ctx, &dashboard, &opening)
        }
        Err(e) => exit_status(Out::new(false).usage_error(&e.to_string())),
    }
}

/// Nothing named: the demo's own root, or the dashboard's "no root".
fn nothing() -> Names {
    Names {
        stores: Vec::new(),
        roots: Vec::new(),
    }
}

/// Say on stderr that a named root does not exist: a mistyped `--root`
/// would otherwise read as a healthy root with no claims (`doctor` and
/// `list --json` carry it as a `root_missing` hazard too).
fn warn_missing_roots(roots: &[Root]) {
    for root in roots {
        if let Some(h) = claimtop::claims::root_missing(root) {
            claimtop::diag::stderr_line(&format!(
                "claimtop: warning: the root {} does not exist (a mistyped --root?)",
                claimtop::sanitize::sanitize(&h.path().to_string_lossy())
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
