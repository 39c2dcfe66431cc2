//! Every subcommand on one store, whatever it composes: what covers the
//! whole store (list, doctor, events, metrics, fleet, `list --as-of`)
//! covers every member; a verb on one key goes to the one member that
//! takes claims, and over several is a usage error naming them.

use super::args::Command;
use super::output::{CmdResult, Out};
use super::{asof, claim_cmds, completions, config, events, fleet_cmd, list, metrics, run};
use crate::store::listing_stream::Only;
use crate::store::{Backend, Store};

pub fn dispatch(store: &Store, command: Command, local_time: bool, out: &mut Out) -> CmdResult {
    match command {
        Command::List {
            as_of: None,
            host,
            root_id,
        } => {
            let only = Only {
                hosts: host,
                root_ids: root_id,
            };
            list::list(store, &only, out)
        }
        Command::List {
            as_of: Some(at), ..
        } => asof::list_as_of(store, &at, local_time, out),
        Command::Doctor { fix } => list::doctor(store, fix, out),
        Command::Status { key } => on_one(store, "status", out, |b, out| {
            claim_cmds::status(b, &key, out)
        }),
        Command::Acquire(a) => on_one(store, "acquire", out, |b, out| {
            claim_cmds::acquire(b, a, out)
        }),
        Command::Release { key, holder } => on_one(store, "release", out, |b, out| {
            claim_cmds::release(b, &key, &holder, out)
        }),
        Command::Renew {
            key,
            holder,
            ttl,
            operator,
        } => on_one(store, "renew", out, |b, out| {
            claim_cmds::renew(b, &key, &holder, ttl, operator.as_deref(), out)
        }),
        Command::ForceRelease(a) if a.host.is_some() => out.usage_error(
            "--host names a host publishing into an etcd store: give --store etcd://...",
        ),
        Command::ForceRelease(a) => on_one(store, "force-release", out, |b, out| {
            claim_cmds::force_release(b, a, out)
        }),
        Command::Publish(_) => out.usage_error(
            "publish needs --store etcd://HOST:PORT[/PREFIX] (where to mirror the roots)",
        ),
        Command::Events(a) => events::events(store, a, out),
        Command::Run(a) => on_one(store, "run", out, |b, out| run::run(b, a, out)),
        Command::Fleet(a) => fleet_cmd::fleet(store, a, out),
        Command::Metrics(a) => metrics::serve(store, &a, out),
        Command::Completions { shell } => completions::completions(shell, out),
        Command::Config { .. } => config::print(None, out),
    }
}

/// Run `verb` on the one member that takes claims; over several, the
/// usage error that names them (nothing is written anywhere).
fn on_one(
    store: &Store,
    verb: &'static str,
    out: &mut Out,
    f: impl FnOnce(&dyn Backend, &mut Out) -> CmdResult,
) -> CmdResult {
    match store.one(verb) {
        Ok(m) => f(m.backend(), out),
        Err(e) => claim_cmds::store_error(out, e),
    }
}
