//! `fleet forget HOST`: remove a decommissioned host's published record.
//!
//! Only an offline host can be forgotten, and "offline" is decided inside
//! the one transaction that deletes: its owner keys (`PREFIX/hosts/<m>/
//! owners/*`, which exist exactly while a publisher holds one of its
//! roots) must all be gone. A publisher that comes back between the
//! operator's look and the delete makes the transaction fail, so a live
//! host's mirror is never removed from under it. The host's entry in the
//! host index (`PREFIX/host-index/<m>`) goes in the same transaction.

use super::layout::range_end;
use super::Core;
use crate::store::fleet::Forgot;
use crate::store::StoreError;
use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, Txn, TxnOp, TxnOpResponse};

impl Core {
    pub(super) fn forget_host(&self, machine: &str) -> Result<Forgot, StoreError> {
        let dir = self.layout.host_dir(machine);
        let owners = self.layout.host_owners(machine);
        let record = self.layout.host_record(machine);
        let index = self.layout.host_index_entry(machine);
        let resp = self.conn.call(|mut c| {
            // A compare over a range holds for every key in it, and for an
            // empty range is made against a key that does not exist
            // (create_revision 0): "no owner key at all".
            let no_owner = Compare::create_revision(owners.clone(), CompareOp::Equal, 0)
                .with_range(range_end(&owners));
            let known = Compare::create_revision(record.clone(), CompareOp::Greater, 0);
            let txn = Txn::new()
                .when([no_owner, known])
                .and_then([
                    TxnOp::delete(
                        dir.clone(),
                        Some(DeleteOptions::new().with_range(range_end(&dir))),
                    ),
                    // Its index entry goes with it (a host an older
                    // publisher wrote has none: deleting nothing is fine).
                    TxnOp::delete(index.clone(), None),
                ])
                .or_else([
                    TxnOp::get(
                        owners.clone(),
                        Some(
                            GetOptions::new()
                                .with_range(range_end(&owners))
                                .with_count_only(),
                        ),
                    ),
                    TxnOp::get(record.clone(), Some(GetOptions::new().with_count_only())),
                ]);
            async move { c.txn(txn).await }
        })?;
        let mut answers = resp.op_responses().into_iter();
        if resp.succeeded() {
            let removed = match answers.next() {
                Some(TxnOpResponse::Delete(d)) => d.deleted(),
                _ => 0,
            };
            return Ok(Forgot::Forgotten { removed });
        }
        let count = |r: Option<TxnOpResponse>| match r {
            Some(TxnOpResponse::Get(g)) => g.count(),
            _ => 0,
        };
        let roots = count(answers.next());
        let record = count(answers.next());
        Ok(match (roots, record) {
            (0, 0) => Forgot::Unknown,
            (n, _) if n > 0 => Forgot::Online { roots: n },
            // No owner and a record, yet the compare failed: the host went
            // and came between the two reads of this one transaction's
            // answer. Said as online: nothing was removed.
            _ => Forgot::Online { roots: 0 },
        })
    }
}
