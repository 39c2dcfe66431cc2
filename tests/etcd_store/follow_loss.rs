//! No change is lost on its way to a face from the dashboard bench's mixed
//! view: two etcd sites and one file root in one store, hammered while
//! the dashboard's lanes and the publisher's waited drivers follow them
//! with no safety re-list (see `follow_stress`).

use crate::etcd_common::Etcd;
use crate::follow_stress::{from_env, hammered, run_apart, Plan};
use claimtop::claims::Root;
use claimtop::store::{OpenCtx, Store, StoreName};
use std::sync::Arc;
use std::time::Duration;

fn hammer(rounds: u64, write_for: Duration, writers: usize, seed: u64) {
    let (Some(a), Some(b)) = (Etcd::single(), Etcd::single()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("a root");
    let names: Vec<StoreName> = [a.url("/mix"), b.url("/mix")]
        .iter()
        .map(|u| StoreName::parse(u).expect("a store URL"))
        .collect();
    let root = Root::with_events_here(dir.path());
    let store = Store::open(&names, &[root], &OpenCtx::default()).expect("the store");
    hammered(
        &Arc::new(store),
        Plan::hammer(writers, write_for, rounds, seed),
    );
}

#[test]
fn two_sites_and_a_root_hammered_together_are_followed_without_the_safety_net() {
    hammer(8, Duration::from_millis(800), 3, 0x5eed_0002);
}

#[test]
#[ignore = "a minute of writing: run by hand, under load, many times"]
fn two_sites_and_a_root_hammered_for_a_minute_are_followed_without_the_safety_net() {
    let (rounds, write_for, seed) = from_env(60, 1000);
    hammer(rounds, write_for, 4, seed);
}

/// The faces reach both sites through a connection that is cut halfway
/// through each round, while the writers write on directly; during the
/// cut every site is compacted to its newest revision, so a watch that
/// resumes where it stood finds its history gone and must list again.
fn hammer_cut(rounds: u64, write_for: Duration, writers: usize, seed: u64) {
    use crate::etcd_common::Proxy;
    let (Some(a), Some(b)) = (Etcd::single(), Etcd::single()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("a root");
    let root = Root::with_events_here(dir.path());
    let open = |urls: &[String]| {
        let names: Vec<StoreName> = urls
            .iter()
            .map(|u| StoreName::parse(u).expect("a store URL"))
            .collect();
        let store = Store::open(&names, std::slice::from_ref(&root), &OpenCtx::default());
        Arc::new(store.expect("the store"))
    };
    let targets = [a.endpoints()[0].clone(), b.endpoints()[0].clone()];
    let mut proxies: Vec<Proxy> = targets.iter().map(|t| Proxy::to(t)).collect();
    let via: Vec<String> = proxies
        .iter()
        .map(|p| format!("etcd://{}/mix", p.endpoint()))
        .collect();
    let faces = open(&via);
    let writes = open(&[a.url("/mix"), b.url("/mix")]);
    let clients = [a.client(), b.client()];
    let mut midway = |_round: u64| {
        for p in &mut proxies {
            p.cut();
        }
        for (rt, client) in &clients {
            let mut c = client.clone();
            rt.block_on(async {
                let now = c.get("/", None).await.expect("a revision");
                let rev = now.header().map(|h| h.revision()).expect("a header");
                c.compact(rev, None).await.expect("compact");
            });
        }
        std::thread::sleep(Duration::from_millis(1200));
        for (p, t) in proxies.iter_mut().zip(&targets) {
            *p = Proxy::at(p.port, t);
        }
    };
    let plan = Plan {
        settle_within: Duration::from_secs(30),
        ..Plan::hammer(writers, write_for, rounds, seed)
    };
    let out = run_apart(&faces, &writes, plan, &mut midway);
    out.nothing_lost(&format!("{rounds} cut rounds"));
}

#[test]
#[ignore = "cuts and compactions, half a minute: run by hand, under load"]
fn two_sites_cut_and_compacted_midway_are_followed_without_the_safety_net() {
    let (rounds, write_for, seed) = from_env(8, 2500);
    hammer_cut(rounds, write_for, 3, seed);
}
