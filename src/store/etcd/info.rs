//! Who answers and where the store is: the header of a dashboard over etcd.

use super::Core;
use crate::store::{LinkFacts, StoreError};
use etcd_client::GetOptions;

impl Core {
    /// One status call (the revision and the leader's id) and one member
    /// list (to name the leader). Credentials limited to the prefix may not
    /// run either: the revision then comes from a count-only read of the
    /// prefix and the leader stays unknown. Only an unreachable store is an
    /// error here, since that is what a header must say.
    pub(super) fn info(&self) -> Result<LinkFacts, StoreError> {
        let status = match self.conn.call(|mut c| async move { c.status().await }) {
            Ok(s) => Some(s),
            Err(e @ StoreError::Unreachable { .. }) => return Err(e),
            Err(_) => None,
        };
        let revision = match status.as_ref().and_then(|s| s.header()) {
            Some(h) => h.revision(),
            None => {
                let (probe, opts) = (self.layout.all(), GetOptions::new().with_count_only());
                let resp = self.conn.call(|mut c| {
                    let (probe, opts) = (probe.clone(), opts.clone());
                    async move { c.get(probe, Some(opts)).await }
                })?;
                resp.header().map(|h| h.revision()).unwrap_or(0)
            }
        };
        let leader_id = status.as_ref().map_or(0, |s| s.leader());
        let leader = if leader_id == 0 {
            None
        } else {
            let members = self
                .conn
                .call(|mut c| async move { c.member_list().await })
                .ok();
            let name = members.as_ref().and_then(|m| {
                m.members()
                    .iter()
                    .find(|m| m.id() == leader_id)
                    .and_then(|m| match (m.name(), m.client_urls().first()) {
                        ("", url) => url.cloned(),
                        (name, _) => Some(name.to_string()),
                    })
            });
            Some(name.unwrap_or_else(|| format!("{leader_id:x}")))
        };
        Ok(LinkFacts {
            reached: self.conn.endpoints().to_string(),
            leader,
            at: Some(revision),
        })
    }
}
