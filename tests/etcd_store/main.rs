//! The etcd store against a real etcd: exclusivity and fencing, the
//! compare-the-revision verbs, lease expiry, an unreachable cluster, a leader
//! killed mid-run, and auth. Run with `cargo test --features etcd --test etcd_store`.
#![cfg(feature = "etcd")]

use claimtop::claims::Classifier;
use claimtop::claims::{
    AcquireOpts, AcquireOutcome, ForceOpts, ForceOutcome, NoRenew, ReleaseOutcome, RenewOutcome,
};
use claimtop::store::backend::list_whole;
use claimtop::store::etcd::{ConnOpts, EtcdStore};
use claimtop::store::{Audit, Change, Changes, Claims, Feed, Fence, MemberListing, StoreError};
use etcd_common::Etcd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod connection;
mod exclusion;
mod expiry;
mod feed;
mod follow_loss;
#[path = "../follow_stress/mod.rs"]
mod follow_stress;
mod history;
mod leases;
mod listing;
mod verbs;

#[path = "../etcd_common/mod.rs"]
mod etcd_common;

/// A classifier as the CLI makes one: fresh, at now.
fn fresh() -> Classifier {
    Classifier::new(claimtop::claims::now_ms())
}

/// The whole listing, as `list` reads it.
fn list_of(store: &EtcdStore) -> Result<MemberListing, StoreError> {
    list_whole(store, &mut fresh())
}

/// The listing and the hazards that cost more to find, as `doctor` reads
/// them.
fn doctor_of(store: &EtcdStore) -> MemberListing {
    let mut l = list_of(store).expect("list");
    l.store_hazards
        .extend(store.deep_hazards().expect("doctor"));
    l
}

fn ttl(secs: i64) -> AcquireOpts {
    AcquireOpts {
        ttl_ms: Some(secs * 1000),
        ..Default::default()
    }
}
