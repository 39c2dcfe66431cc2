//! `list` over a store that hosts publish into: the store's own claims and
//! every online host's, in one table with HOST and SOURCE columns, then the
//! hosts themselves (an offline one with the time it was last seen).

use super::output::{CmdResult, Out, EXIT_OK};
use super::table::{columns, hazard_lines, summary};
use crate::claims::census::why_with_hazards;
use crate::claims::words::count;
use crate::claims::{Counts, ItemRules};
use crate::sanitize::sanitize;
use crate::store::fleet::{
    count_states, FleetHazard, FleetItem, FleetState, HostInfo, SOURCE_PUBLISHED, SOURCE_STORE,
};
use crate::store::Listing;
use crate::time::{human_ms, now_ms, utc_hms};
use serde_json::Value;

pub fn print_fleet_list(listing: &Listing, fleet: &FleetState, out: &mut Out) -> CmdResult {
    if out.json_mode() {
        let mut doc = listing.to_json();
        fleet.extend_list_json(&mut doc);
        out.json(&doc)?;
        return Ok(EXIT_OK);
    }
    let mut rows: Vec<Vec<String>> = listing
        .sweep
        .claims
        .iter()
        .map(|s| {
            let (host, holder, pid) = match &s.record {
                Some(r) => (r.host.as_str(), r.holder.as_str(), r.pid.to_string()),
                None => ("-", "-", "-".to_string()),
            };
            let why = why_with_hazards(s, ItemRules::StoreKey);
            let why = s.error.as_deref().unwrap_or(&why);
            cells(
                host,
                SOURCE_STORE,
                s.state.as_str(),
                &s.key,
                holder,
                pid,
                why,
            )
        })
        .collect();
    rows.extend(fleet.items.iter().map(published_row));
    // By key, then host: one key held on two hosts reads as two lines together.
    rows.sort_by(|a, b| (&a[3], &a[0]).cmp(&(&b[3], &b[0])));
    let header: Vec<String> = ["HOST", "SOURCE", "STATE", "KEY", "HOLDER", "PID", "WHY"]
        .map(String::from)
        .to_vec();
    if rows.is_empty() {
        out.line("no claims in the store or on any online host")?;
    } else {
        for line in columns(&header, &rows) {
            out.line(&line)?;
        }
    }
    let published = count_states(fleet.items.iter().map(FleetItem::state));
    // One count over every hazard line: the store's, the claims' and each
    // published root's.
    let mut hazards = hazard_lines(listing);
    hazards.extend(fleet.hazards.iter().map(fleet_hazard_text));
    summary(
        out,
        rows.len(),
        add(listing.sweep.counts, published),
        &hazards,
    )?;
    print_hosts(out, &fleet.hosts)?;
    Ok(EXIT_OK)
}

/// "N hosts:", then each host: online with its claim count (and any root
/// whose claims are unknown), or offline since when.
pub(super) fn print_hosts(out: &mut Out, hosts: &[HostInfo]) -> std::io::Result<()> {
    out.line(&format!("{}:", count(hosts.len(), "host")))?;
    for h in hosts {
        let state = host_state(h, now_ms());
        out.line(&format!(
            "  {} ({})  {}  roots: {}",
            sanitize(&h.hostname),
            sanitize(&h.host_id),
            state,
            h.roots
                .iter()
                .map(|r| format!("{}={}", sanitize(&r.id), sanitize(&r.path)))
                .collect::<Vec<_>>()
                .join(" ")
        ))?;
    }
    Ok(())
}

/// A host's state in words: online with every claim it publishes (an
/// unreadable one is held as far as anyone can tell, so it counts, as the
/// dashboard's hosts line counts it), and the roots whose claims are
/// unknown; or offline since when.
fn host_state(h: &HostInfo, now: i64) -> String {
    if !h.online {
        return format!(
            "OFFLINE, last seen {} ({} ago); its claims are unknown, not free",
            utc_hms(h.last_seen_ms),
            human_ms(now - h.last_seen_ms)
        );
    }
    let mut state = format!("online, {}", count(h.counts.total(), "claim"));
    for r in h.unknown_roots() {
        let why = r
            .error
            .as_deref()
            .map(|e| format!(" ({})", sanitize(e)))
            .unwrap_or_default();
        state.push_str(&format!(
            "; {} root {}{why}: its claims are unknown, not free",
            r.state.as_str().to_uppercase(),
            sanitize(&r.path)
        ));
    }
    state
}

fn published_row(i: &FleetItem) -> Vec<String> {
    let v = &i.item;
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("-");
    let pid = v
        .pointer("/record/pid")
        .and_then(Value::as_i64)
        .map_or("-".to_string(), |p| p.to_string());
    let why = v
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or_else(|| s("/why"));
    cells(
        &i.hostname,
        SOURCE_PUBLISHED,
        i.state(),
        i.key(),
        s("/record/holder"),
        pid,
        why,
    )
}

/// One row, every untrusted cell sanitized.
fn cells(
    host: &str,
    source: &str,
    state: &str,
    key: &str,
    holder: &str,
    pid: String,
    why: &str,
) -> Vec<String> {
    [host, source, state, key, holder]
        .iter()
        .map(|c| sanitize(c).into_owned())
        .chain([pid, sanitize(why).into_owned()])
        .collect()
}

fn add(mut a: Counts, b: Counts) -> Counts {
    a += b;
    a
}

/// A published hazard as a line: its own words, then the host and root it
/// was found in (every part sanitized: a host wrote it).
pub(super) fn fleet_hazard_text(h: &FleetHazard) -> String {
    let s = |k: &str| sanitize(h.hazard.get(k).and_then(Value::as_str).unwrap_or("")).into_owned();
    format!(
        "{}  {}  {}  host={} root={}",
        s("kind"),
        s("path"),
        s("detail"),
        sanitize(&h.host_id),
        sanitize(&h.root.path)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_publishing_an_unreadable_claim_counts_it_among_its_claims() {
        let h = HostInfo {
            host_id: "m1".into(),
            hostname: "vm".into(),
            online: true,
            last_seen_ms: 0,
            roots: Vec::new(),
            counts: Counts {
                live: 6,
                unreadable: 1,
                ..Counts::default()
            },
        };
        assert_eq!(host_state(&h, 0), "online, 7 claims");
    }
}
