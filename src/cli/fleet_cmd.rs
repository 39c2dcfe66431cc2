//! `fleet`: the hosts publishing into a store, and `fleet forget HOST`.

use super::args::{FleetArgs, FleetVerb};
use super::output::{CmdResult, Out, EXIT_DECLINED, EXIT_OK};
use crate::claims::words::count;
use crate::sanitize::sanitize;
use crate::store::fleet::Forgot;
use crate::store::host_names::{forget_named, ForgetError, HostNameError};
use crate::store::{Fleet, Store};
use serde_json::json;

pub fn fleet(store: &Store, a: FleetArgs, out: &mut Out) -> CmdResult {
    let fleets: Vec<&dyn Fleet> = store
        .members()
        .iter()
        .filter_map(|m| m.backend().fleet())
        .collect();
    let fleet =
        match fleets.as_slice() {
            [one] => *one,
            [] => return out.usage_error(
                "fleet needs a store hosts publish into: give --store etcd://HOST:PORT[/PREFIX]",
            ),
            _ => {
                return out.usage_error(
                    "fleet reads the hosts of one store, and several were given: give one --store",
                )
            }
        };
    match a.verb {
        None => hosts(fleet, out),
        Some(FleetVerb::Forget { host }) => forget(fleet, &host, out),
    }
}

/// The hosts as `list`'s hosts part shows them, counted from their roots'
/// summaries (a few requests a host); from every copy where a root has no
/// summary yet.
fn hosts(fleet: &dyn Fleet, out: &mut Out) -> CmdResult {
    let hosts = match fleet.summaries() {
        Ok(Some(s)) => Ok(s.hosts),
        Ok(None) => fleet.state().map(|s| s.hosts),
        Err(e) => Err(e),
    };
    let hosts = match hosts {
        Ok(h) => h,
        Err(e) => return out.error(&e.to_string()),
    };
    if out.json_mode() {
        out.json(&json!({ "hosts": hosts }))?;
    } else if hosts.is_empty() {
        out.line("no host publishes into this store")?;
    } else {
        super::fleet::print_hosts(out, &hosts)?;
    }
    Ok(EXIT_OK)
}

fn forget(fleet: &dyn Fleet, name: &str, out: &mut Out) -> CmdResult {
    let (host, forgot) = match forget_named(fleet, name) {
        Ok(done) => done,
        // A hostname two hosts share names no one host: the operator must
        // say which, as with any argument that does not parse.
        Err(ForgetError::Name(e @ HostNameError::Ambiguous { .. })) => {
            return out.usage_error(&sanitize(&e.to_string()))
        }
        Err(ForgetError::Name(e)) => return out.error(&sanitize(&e.to_string())),
        Err(ForgetError::Store(e)) => return out.error(&e.to_string()),
    };
    let shown = format!("{} ({})", sanitize(&host.label), sanitize(&host.host_id));
    let refused = |out: &mut Out, reason: String| -> CmdResult {
        if out.json_mode() {
            out.json(&json!({"outcome": "refused", "reason": reason, "host_id": host.host_id}))?;
        } else {
            out.line(&format!("refused: {reason}"))?;
        }
        Ok(EXIT_DECLINED)
    };
    match forgot {
        Forgot::Forgotten { removed } => {
            if out.json_mode() {
                out.json(&json!({
                    "outcome": "forgotten",
                    "host": host.hostname,
                    "host_id": host.host_id,
                    "label": host.label,
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
        Forgot::Online { roots } => refused(
            out,
            format!(
                "host {shown} is online ({} published): stop its publisher first; nothing was removed",
                count(roots.max(0) as usize, "root")
            ),
        ),
        Forgot::Unknown => out.error(&format!(
            "host {shown} left the store before it could be forgotten; nothing was removed"
        )),
    }
}
