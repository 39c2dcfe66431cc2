//! After a burst of writes (a sync), a publisher grants and revokes one
//! lease with no key on it, so that etcd 3.4 lets go of the read buffer
//! the burst grew (see `store/etcd/read_buffer.rs`); a small write does
//! not.

use super::{
    etcd_common, loop_until_published, root_dir, wait_for, write_claims, Fleet, Publisher,
};
use std::time::Duration;

#[test]
fn a_publisher_trims_etcds_read_buffer_once_after_its_sync_and_not_after_one_claim() {
    let Some(f) = Fleet::start("/fleet-trim") else {
        return;
    };
    let etcd = f.etcd.members[0].endpoint();
    let calls = |method: &str| {
        etcd_common::grpc_started(&etcd)
            .get(method)
            .copied()
            .unwrap_or(0.0)
    };
    let a = root_dir();
    // 300 claims: a sync of several transactions, a burst.
    write_claims(a.path(), "bulk", 300, std::process::id());
    let (granted, revoked) = (calls("LeaseGrant"), calls("LeaseRevoke"));
    let pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    loop_until_published(&f, "bulk/299");
    let trimmed = wait_for(Duration::from_secs(15), || {
        calls("LeaseRevoke") - revoked >= 1.0
    });
    assert!(trimmed, "no trim after the sync\n{}", pa.log());
    // The publisher's own lease and the trim's.
    assert_eq!(calls("LeaseGrant") - granted, 2.0, "{}", pa.log());

    // One more claim: a write, not a burst.
    let (granted, revoked) = (calls("LeaseGrant"), calls("LeaseRevoke"));
    write_claims(a.path(), "one", 1, std::process::id());
    loop_until_published(&f, "one/000");
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(calls("LeaseGrant"), granted, "{}", pa.log());
    assert_eq!(calls("LeaseRevoke"), revoked, "{}", pa.log());
}
