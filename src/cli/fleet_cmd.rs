//! `fleet`: the hosts publishing into a store, and `fleet forget HOST`.

use super::args::{FleetArgs, FleetVerb};
use super::output::{CmdResult, Out, EXIT_DECLINED, EXIT_OK};
use crate::claims::words::count;
use crate::sanitize::sanitize;
use crate::store::fleet::{Forgot, HostInfo};
use crate::store::{Fleet, Store};
use serde_json::json;

pub fn fleet(store: &dyn Store, a: FleetArgs, out: &mut Out) -> CmdResult {
    let Some(fleet) = store.fleet() else {
        return out.usage_error(
            "fleet needs a store hosts publish into: give --store etcd://HOST:PORT[/PREFIX]",
        );
    };
    match a.verb {
        None => hosts(fleet, out),
        Some(FleetVerb::Forget { host }) => forget(fleet, &host, out),
    }
}

/// The hosts as `list`'s hosts part shows them.
fn hosts(fleet: &dyn Fleet, out: &mut Out) -> CmdResult {
    let state = match fleet.state() {
        Ok(s) => s,
        Err(e) => return out.error(&e.to_string()),
    };
    if out.json_mode() {
        out.json(&json!({ "hosts": state.hosts }))?;
    } else if state.hosts.is_empty() {
        out.line("no host publishes into this store")?;
    } else {
        super::fleet::print_hosts(out, &state.hosts)?;
    }
    Ok(EXIT_OK)
}

/// The one host `name` names (its machine id, or a hostname no other host
/// shares): a name two hosts share is refused with their ids, never guessed.
fn named<'h>(hosts: &'h [HostInfo], name: &str) -> Result<&'h HostInfo, String> {
    if let Some(h) = hosts.iter().find(|h| h.host_id == name) {
        return Ok(h);
    }
    let same: Vec<&HostInfo> = hosts.iter().filter(|h| h.hostname == name).collect();
    match same.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "no host named {} publishes into this store",
            sanitize(name)
        )),
        many => Err(format!(
            "{} hosts are named {}: give one's machine id ({})",
            many.len(),
            sanitize(name),
            many.iter()
                .map(|h| sanitize(&h.host_id).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

fn forget(fleet: &dyn Fleet, name: &str, out: &mut Out) -> CmdResult {
    let hosts = match fleet.hosts() {
        Ok(h) => h,
        Err(e) => return out.error(&e.to_string()),
    };
    let host = match named(&hosts, name) {
        Ok(h) => h,
        Err(why) => return out.error(&why),
    };
    let shown = format!("{} ({})", sanitize(&host.hostname), sanitize(&host.host_id));
    let refused = |out: &mut Out, reason: String| -> CmdResult {
        if out.json_mode() {
            out.json(&json!({"outcome": "refused", "reason": reason, "host_id": host.host_id}))?;
        } else {
            out.line(&format!("refused: {reason}"))?;
        }
        Ok(EXIT_DECLINED)
    };
    match fleet.forget(&host.host_id) {
        Ok(Forgot::Forgotten { removed }) => {
            if out.json_mode() {
                out.json(&json!({
                    "outcome": "forgotten",
                    "host": host.hostname,
                    "host_id": host.host_id,
                    "removed": removed,
                }))?;
            } else {
                out.line(&format!(
                    "forgot host {shown}: {} removed from the store (its own roots are untouched)",
                    count(removed.max(0) as usize, "key")
                ))?;
            }
            Ok(EXIT_OK)
        }
        Ok(Forgot::Online { roots }) => refused(
            out,
            format!(
                "host {shown} is online ({} published): stop its publisher first; nothing was removed",
                count(roots.max(0) as usize, "root")
            ),
        ),
        Ok(Forgot::Unknown) => out.error(&format!(
            "host {shown} left the store before it could be forgotten; nothing was removed"
        )),
        Err(e) => out.error(&e.to_string()),
    }
}
