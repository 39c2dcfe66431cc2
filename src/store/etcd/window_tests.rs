//! The windows between an etcd verb's read and its guarded transaction,
//! held open by a fault point (`crate::fault`, `EtcdGuardedWrite`): a hook
//! armed for one claim key changes that key in etcd exactly there, on the
//! verb's own thread. Only the compare on the revision the verb read keeps
//! it off a claim that changed hands meanwhile; no timing can land a change
//! in that window, so without the point nothing would catch its loss.

/// The etcd servers the integration tests start, for the tests below.
#[path = "../../../tests/etcd_common/mod.rs"]
mod etcd_common;

use crate::claims::{AcquireOpts, AcquireOutcome, ForceOpts, ForceOutcome, ReleaseOutcome};
use crate::fault::{arm, Armed, Point};
use crate::store::etcd::EtcdStore;
use crate::store::{Audit, Claims, Fence, Fenced};
use std::path::Path;
use std::sync::Mutex;

/// Run `once` the first time a verb on the claim key `ck` has read it
/// and is about to act on what it read.
fn between_read_and_write(ck: &str, once: impl FnOnce() + Send + 'static) -> Armed {
    let once = Mutex::new(Some(once));
    arm(Point::EtcdGuardedWrite, Path::new(ck), move |_| {
        if let Some(f) = once.lock().ok().and_then(|mut o| o.take()) {
            f();
        }
    })
}

fn opts() -> AcquireOpts {
    AcquireOpts {
        ttl_ms: Some(60_000),
        ..AcquireOpts::default()
    }
}

/// `holder` takes `key` through `store`; the tenure's revision.
fn take(store: &EtcdStore, key: &str, holder: &str) -> i64 {
    let got = store.acquire(key, holder, &opts()).expect("acquire");
    assert!(
        matches!(got.outcome, AcquireOutcome::Acquired { .. }),
        "{got:?}"
    );
    got.tenure.expect("a tenure").revision
}

fn held_by(store: &EtcdStore, key: &str) -> Option<(String, i64)> {
    let Fenced { outcome, tenure } = crate::store::backend::status_now(store, key).expect("status");
    Some((outcome.record?.holder, tenure?.revision))
}

fn types(store: &EtcdStore) -> Vec<String> {
    let events = store.events(100).expect("events");
    events.into_iter().map(|e| e.kind().to_string()).collect()
}

/// An operator reads a claim and decides to force-release it; before
/// its guarded delete, the holder releases and a newcomer takes the
/// key. The force-release must find the key changed and do nothing:
/// without the compare on the revision it read, it would archive and
/// delete the newcomer's claim.
#[test]
fn a_force_release_never_deletes_a_claim_that_changed_hands_after_it_was_read() {
    let Some(etcd) = etcd_common::Etcd::single() else {
        return;
    };
    let (operator, agents) = (etcd.store("/seam"), etcd.store("/seam"));
    take(&agents, "k", "old");
    let newcomer = std::sync::Arc::new(std::sync::Mutex::new(0));
    let took = std::sync::Arc::clone(&newcomer);
    let _armed = between_read_and_write(&operator.layout().claim("k"), move || {
        let released = agents.release("k", "old", None).expect("release");
        assert!(matches!(released.outcome, ReleaseOutcome::Released { .. }));
        *took.lock().expect("newcomer") = take(&agents, "k", "new");
    });
    let force = ForceOpts {
        operator: Some("ops".into()),
        allow_live: true,
        ..ForceOpts::default()
    };
    let out = operator.force_release("k", &force).expect("force-release");
    let newcomer = *newcomer.lock().expect("newcomer");
    assert!(newcomer > 0, "the hook ran inside the force-release");
    assert!(
        matches!(&out.outcome, ForceOutcome::Refused(why) if why.contains("changed since it was read")),
        "{out:?}"
    );
    assert_eq!(held_by(&operator, "k"), Some(("new".into(), newcomer)));
    assert_eq!(
        types(&operator),
        ["claim_acquired", "claim_released", "claim_acquired"]
    );
}

/// A release fenced by a tenure's revision reads the claim; before its
/// guarded delete that tenure ends and a new one of the same holder
/// name begins. The fence was checked against the read: only the
/// compare on the revision it read keeps the new tenure alive.
#[test]
fn a_fenced_release_never_ends_a_tenure_that_began_after_it_read_the_key() {
    let Some(etcd) = etcd_common::Etcd::single() else {
        return;
    };
    let (late, agents) = (etcd.store("/seam2"), etcd.store("/seam2"));
    let first = take(&agents, "k", "w");
    let second = std::sync::Arc::new(std::sync::Mutex::new(0));
    let took = std::sync::Arc::clone(&second);
    let _armed = between_read_and_write(&late.layout().claim("k"), move || {
        agents.release("k", "w", None).expect("release");
        *took.lock().expect("second") = take(&agents, "k", "w");
    });
    let out = late
        .release("k", "w", Some(Fence::new(first as u64)))
        .expect("release");
    let second = *second.lock().expect("second");
    assert!(second > first, "the hook ran inside the release");
    assert!(
        matches!(&out.outcome, ReleaseOutcome::NotHeld { .. }),
        "{out:?}"
    );
    assert_eq!(held_by(&late, "k"), Some(("w".into(), second)));
}
