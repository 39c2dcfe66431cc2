//! Who answers and where the store is: the header of a dashboard over etcd.

use super::Core;
use crate::store::{StoreError, StoreInfo};

impl Core {
    /// One status call (the revision and the leader's id) and one member
    /// list (to name the leader). Both go to whichever member answers; the
    /// revision is the cluster's, since etcd serves it from the raft log.
    pub(super) fn info(&self) -> Result<StoreInfo, StoreError> {
        let status = self.conn.call(|mut c| async move { c.status().await })?;
        let members = self
            .conn
            .call(|mut c| async move { c.member_list().await })?;
        let leader_id = status.leader();
        let leader = (leader_id != 0).then(|| {
            members
                .members()
                .iter()
                .find(|m| m.id() == leader_id)
                .map(|m| match (m.name(), m.client_urls().first()) {
                    ("", Some(url)) => url.clone(),
                    ("", None) => format!("{leader_id:x}"),
                    (name, _) => name.to_string(),
                })
                .unwrap_or_else(|| format!("{leader_id:x}"))
        });
        Ok(StoreInfo {
            endpoints: self.conn.endpoints().to_string(),
            leader,
            revision: status.header().map(|h| h.revision()).unwrap_or(0),
        })
    }
}
