//! The cases, each a sentence of behaviour over any store under test.

mod faces;
mod feed;
mod hazards;
mod listing;
mod several;
mod verbs;

pub use faces::*;
pub use feed::*;
pub use hazards::*;
pub use listing::*;
pub use several::*;
pub use verbs::*;

use crate::under_test::StoreUnderTest;
use claimtop::claims::{AcquireOpts, AcquireOutcome};
use claimtop::store::{Backend, Fenced, Store};
use std::sync::Arc;

/// The store under test and its target member's backend.
pub struct Target {
    pub store: Arc<Store>,
}

impl Target {
    pub fn of(u: &dyn StoreUnderTest) -> Target {
        Target { store: u.store() }
    }

    pub fn backend(&self, u: &dyn StoreUnderTest) -> &dyn Backend {
        self.store.backend(u.target()).expect("the target member")
    }
}

/// A TTL claim's options.
pub fn ttl(ms: i64) -> AcquireOpts {
    AcquireOpts {
        ttl_ms: Some(ms),
        ..AcquireOpts::default()
    }
}

pub const TEN_MIN: i64 = 10 * 60 * 1000;

/// `holder` takes `key` (for ten minutes), or the case fails.
pub fn take(b: &dyn Backend, key: &str, holder: &str) -> Fenced<AcquireOutcome> {
    let got = b.acquire(key, holder, &ttl(TEN_MIN)).expect("acquire");
    assert!(
        matches!(got.outcome, AcquireOutcome::Acquired { .. }),
        "{key} for {holder}: {:?}",
        got.outcome
    );
    got
}

/// The holder of `key` in the target now (None: free).
pub fn holder_of(b: &dyn Backend, key: &str) -> Option<String> {
    let s = claimtop::store::backend::status_now(b, key)
        .expect("status")
        .outcome;
    s.record.map(|r| r.holder)
}
