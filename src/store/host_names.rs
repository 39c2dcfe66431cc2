//! What a publishing host is called wherever one is named: its hostname,
//! or, when another host of the fleet has the same hostname, the hostname
//! and the shortest distinguishing start of its machine id (`vm·3d12`);
//! and the one way every face finds a host by name and forgets it.
//!
//! Cloned VMs keep their hostname (and agents often run on `localhost`),
//! so a name alone can point at two machines; `fleet forget` must then
//! refuse rather than pick one.

use super::fleet::{Forgot, HostInfo};
use super::{Fleet, StoreError};

/// Between a shared hostname and its machine id's start.
pub const SUFFIX_MARK: char = '·';
/// The fewest characters of a machine id a label shows.
const MIN_SUFFIX: usize = 4;

/// Each host's label: its hostname when no other host shares it, else
/// `hostname·<id start>`, the start as long as it takes (at least
/// `MIN_SUFFIX`) to tell it from every host sharing the name.
pub fn label_hosts(hosts: &mut [HostInfo]) {
    let labels: Vec<String> = hosts
        .iter()
        .map(|h| {
            let twins: Vec<&str> = hosts
                .iter()
                .filter(|o| o.hostname == h.hostname && o.host_id != h.host_id)
                .map(|o| o.host_id.as_str())
                .collect();
            if twins.is_empty() {
                return h.hostname.clone();
            }
            let id: Vec<char> = h.host_id.chars().collect();
            let mut n = MIN_SUFFIX.min(id.len());
            let start = |n: usize| id[..n].iter().collect::<String>();
            while n < id.len() && twins.iter().any(|t| t.starts_with(&start(n))) {
                n += 1;
            }
            format!("{}{SUFFIX_MARK}{}", h.hostname, start(n))
        })
        .collect();
    for (h, label) in hosts.iter_mut().zip(labels) {
        h.label = label;
    }
}

/// Why a name finds no one host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostNameError {
    #[error("no host named {0} publishes into this store")]
    Unknown(String),
    /// The hostname of several hosts: each candidate's label and id.
    #[error("{} hosts are named {name:?}: name one as {}", .candidates.len(), candidates_text(.candidates))]
    Ambiguous {
        name: String,
        candidates: Vec<(String, String)>,
    },
}

fn candidates_text(c: &[(String, String)]) -> String {
    c.iter()
        .map(|(label, id)| format!("{label:?} (machine id {id})"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The one host `name` names: its machine id, its label, or a hostname
/// no other host has. A hostname several hosts share is refused with
/// every candidate, never guessed.
pub fn resolve<'h>(hosts: &'h [HostInfo], name: &str) -> Result<&'h HostInfo, HostNameError> {
    if let Some(h) = hosts
        .iter()
        .find(|h| h.host_id == name)
        .or_else(|| hosts.iter().find(|h| h.label == name))
    {
        return Ok(h);
    }
    let same: Vec<&HostInfo> = hosts.iter().filter(|h| h.hostname == name).collect();
    match same.as_slice() {
        [one] => Ok(one),
        [] => Err(HostNameError::Unknown(name.to_string())),
        many => Err(HostNameError::Ambiguous {
            name: name.to_string(),
            candidates: many
                .iter()
                .map(|h| (h.label.clone(), h.host_id.clone()))
                .collect(),
        }),
    }
}

/// Why `fleet forget` (or the dashboard's forget key) could not run.
#[derive(Debug, thiserror::Error)]
pub enum ForgetError {
    #[error(transparent)]
    Name(#[from] HostNameError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Forget the host `name` names (see [`resolve`]): the one library call
/// behind `fleet forget HOST` and the dashboard's forget key. Returns the
/// host as it was found and what [`Fleet::forget`] did (refused while the
/// host is online, decided in the delete's own transaction).
pub fn forget_named(fleet: &dyn Fleet, name: &str) -> Result<(HostInfo, Forgot), ForgetError> {
    let hosts = fleet.hosts()?;
    let host = resolve(&hosts, name)?.clone();
    let forgot = fleet.forget(&host.host_id)?;
    Ok((host, forgot))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(id: &str, name: &str) -> HostInfo {
        HostInfo {
            host_id: id.into(),
            hostname: name.into(),
            label: String::new(),
            online: false,
            last_seen_ms: 0,
            roots: Vec::new(),
            counts: Default::default(),
        }
    }

    fn labelled() -> Vec<HostInfo> {
        let mut hosts = vec![
            host("3d12aa00", "vm"),
            host("3d13bb00", "vm"),
            host("9f00", "build-7"),
        ];
        label_hosts(&mut hosts);
        hosts
    }

    #[test]
    fn a_shared_hostname_gains_the_shortest_machine_id_start_that_tells_them_apart() {
        let labels: Vec<String> = labelled().into_iter().map(|h| h.label).collect();
        assert_eq!(labels, ["vm·3d12", "vm·3d13", "build-7"]);
        let mut close = vec![host("abcdef01", "vm"), host("abcdef02", "vm")];
        label_hosts(&mut close);
        assert_eq!(close[0].label, "vm·abcdef01");
        assert_eq!(close[1].label, "vm·abcdef02");
    }

    #[test]
    fn a_host_is_found_by_id_or_label_and_a_shared_bare_name_names_every_candidate() {
        let hosts = labelled();
        assert_eq!(resolve(&hosts, "vm·3d13").unwrap().host_id, "3d13bb00");
        assert_eq!(resolve(&hosts, "3d12aa00").unwrap().label, "vm·3d12");
        assert_eq!(resolve(&hosts, "build-7").unwrap().host_id, "9f00");
        let err = resolve(&hosts, "vm").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("\"vm·3d12\" (machine id 3d12aa00)"), "{text}");
        assert!(text.contains("\"vm·3d13\" (machine id 3d13bb00)"), "{text}");
        assert_eq!(
            resolve(&hosts, "gamma").unwrap_err(),
            HostNameError::Unknown("gamma".into())
        );
    }
}
