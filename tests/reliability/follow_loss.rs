//! No change is lost on its way from a file root to a face: two roots in
//! one store, hammered while the dashboard's lanes and the publisher's
//! waited drivers follow them with no safety re-list (see
//! `follow_stress`). Each lane also lists again every 200 ms, so the
//! listings that skip what their stamps say is unchanged race the writes.

use crate::follow_stress::{from_env, hammered, Plan};
use claimtop::claims::Root;
use claimtop::store::{OpenCtx, Store};
use std::sync::Arc;
use std::time::Duration;

fn roots_store(n: usize) -> (Vec<tempfile::TempDir>, Arc<Store>) {
    let dirs: Vec<tempfile::TempDir> = (0..n)
        .map(|_| tempfile::tempdir().expect("a root"))
        .collect();
    let roots: Vec<Root> = dirs
        .iter()
        .map(|d| Root::with_events_here(d.path()))
        .collect();
    let store = Store::open(&[], &roots, &OpenCtx::default()).expect("the store");
    (dirs, Arc::new(store))
}

fn hammer(rounds: u64, write_for: Duration, writers: usize, seed: u64) {
    let (_dirs, store) = roots_store(2);
    let plan = Plan {
        relist_every: Some(Duration::from_millis(200)),
        ..Plan::hammer(writers, write_for, rounds, seed)
    };
    hammered(&store, plan);
}

#[test]
fn two_roots_hammered_by_eight_writers_are_followed_without_the_safety_net() {
    hammer(10, Duration::from_millis(700), 4, 0x5eed_0001);
}

#[test]
#[ignore = "a minute of writing: run by hand, under load, many times"]
fn two_roots_hammered_for_a_minute_are_followed_without_the_safety_net() {
    let (rounds, write_for, seed) = from_env(60, 1000);
    hammer(rounds, write_for, 6, seed);
}
