//! `list` over a store that hosts publish into: the store's own claims and
//! every online host's, in one table with HOST and SOURCE columns, then the
//! hosts themselves (an offline one with the time it was last seen).

use super::output::{hazard_text, CmdResult, Out, EXIT_OK};
use super::table::{columns, hazard_lines, summary};
use crate::claims::census::{copy_state, why_with_hazards};
use crate::claims::words::count;
use crate::claims::ClaimState;
use crate::claims::Counts;
use crate::sanitize::sanitize;
use crate::store::fleet::{FleetItem, FleetState, HostInfo, SOURCE_PUBLISHED, SOURCE_STORE};
use crate::store::{Listing, Store};
use crate::time::{human_ms, now_ms, utc_hms};
use serde_json::Value;

/// The text table (`--json` is the listing's own document, fleet and all).
pub fn print_fleet_list(
    listing: &Listing,
    store: &Store,
    fleet: &FleetState,
    out: &mut Out,
) -> CmdResult {
    let mut rows: Vec<Vec<String>> = listing
        .claims()
        .into_iter()
        .map(|(l, s)| {
            let (host, holder, pid) = match &s.record {
                Some(r) => (r.host.as_str(), r.holder.as_str(), r.pid.to_string()),
                None => ("-", "-", "-".to_string()),
            };
            let why = why_with_hazards(s, l.rules);
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
    let label = |id: &str| fleet.host(id).map_or("", |h| h.label.as_str()).to_string();
    rows.extend(
        fleet
            .items
            .iter()
            .map(|i| published_row(i, &label(&i.host_id), None)),
    );
    // What offline hosts last said: listed, never counted as live.
    rows.extend(fleet.last_known.iter().map(|i| {
        let seen = fleet.host(&i.host_id).map_or(0, |h| h.last_seen_ms);
        published_row(i, &label(&i.host_id), Some(seen))
    }));
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
    let published = fleet.counts();
    // One count over every hazard line: the store's, the claims' and each
    // published root's.
    let mut hazards = hazard_lines(listing, store);
    hazards.extend(fleet.hazards.iter().map(|h| hazard_text(h, &fleet.hosts)));
    summary(out, rows.len(), add(listing.counts(), published), &hazards)?;
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
            sanitize(&h.label),
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
        let kept = match h.counts.last_known {
            0 => String::new(),
            n => format!(" ({n} last known, listed as it last said)"),
        };
        return format!(
            "OFFLINE, last seen {} ({} ago); its claims are unknown, not free{kept}",
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

/// One published claim's row; `last_seen` set for a copy its offline host
/// last published, which reads as last known, with its host's words after.
fn published_row(i: &FleetItem, label: &str, last_seen: Option<i64>) -> Vec<String> {
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
    let host = if label.is_empty() { &i.hostname } else { label };
    let Some(seen) = last_seen else {
        return cells(
            host,
            SOURCE_PUBLISHED,
            i.state(),
            i.key(),
            s("/record/holder"),
            pid,
            why,
        );
    };
    let state =
        ClaimState::parse(i.state()).map_or(ClaimState::LastKnown, |st| copy_state(st, false));
    let why = format!(
        "last known at {}, host offline; it was {} then: {why}",
        utc_hms(seen),
        i.state()
    );
    cells(
        host,
        SOURCE_PUBLISHED,
        state.as_str(),
        i.key(),
        s("/record/holder"),
        pid,
        &why,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_publishing_an_unreadable_claim_counts_it_among_its_claims() {
        let h = HostInfo {
            host_id: "m1".into(),
            hostname: "vm".into(),
            label: "vm".into(),
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
