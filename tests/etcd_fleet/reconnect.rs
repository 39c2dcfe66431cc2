//! A publisher cut off from etcd: it reconnects on its own and publishes
//! what changed meanwhile, and, back from a partition past its lease, its
//! host never reads online with its claims missing.

use super::common::Sleeper;
use super::etcd_common;
use super::{
    published, py_write, root_dir, spawn_host_a, wait_for, write_claims, Fleet, Publisher, LEASE_S,
    PATIENCE,
};
use std::time::{Duration, Instant};

#[test]
fn a_publisher_reconnects_on_its_own_after_etcd_stops_answering_and_publishes_what_changed_meanwhile(
) {
    let Some(f) = Fleet::start("/fleet8") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    f.etcd.members[0].pause();
    py_write(a.path(), "meanwhile", "agent-1", holder.pid());
    // Longer than the lease: etcd ends it once it runs again.
    std::thread::sleep(Duration::from_secs(LEASE_S + 1));
    f.etcd.members[0].signal(libc::SIGCONT);
    let back = wait_for(Duration::from_secs(15), || {
        let list = f.list();
        list["hosts"][0]["online"] == true && !published(&list, "host-a", "meanwhile").is_empty()
    });
    assert!(back, "not re-published after etcd came back:\n{}", pa.log());
    assert!(pa.log().contains("level=warn"), "{}", pa.log());
}

/// How host `id` reads in `fleet`: online or not, how many claims it
/// publishes now, and how many it last published.
fn host_reads(fleet: &claimtop::store::fleet::FleetState, id: &str) -> (bool, usize, usize) {
    let online = fleet.hosts.iter().any(|h| h.host_id == id && h.online);
    let of = |items: &[claimtop::store::fleet::FleetItem]| {
        items.iter().filter(|i| i.host_id == id).count()
    };
    (online, of(&fleet.items), of(&fleet.last_known))
}

/// A publisher (lease 5 s) black-holed from etcd for 8 s loses its lease,
/// and its host reads offline with its claims last known. When the
/// partition heals it takes its root again and writes every copy back:
/// read over and over meanwhile, the host is never online with a claim
/// missing, nor offline without its last known copies. Its keys never
/// look free.
#[test]
fn a_host_back_from_a_partition_past_its_lease_never_reads_online_with_its_claims_missing() {
    use claimtop::store::Backend;
    let Some(f) = Fleet::start("/fleet-hole") else {
        return;
    };
    const CLAIMS: usize = 300;
    let a = root_dir();
    let holder = Sleeper::spawn();
    write_claims(a.path(), "hole", CLAIMS, holder.pid());
    let proxy = etcd_common::Proxy::to(&f.etcd.members[0].endpoint());
    let url = format!("etcd://{}/fleet-hole", proxy.endpoint());
    let args = ["--store", &url, "--lease-ttl", "5s", "--resweep", "1h"];
    let pa = spawn_host_a(&f, a.path(), &args);
    let store = f.etcd.store("/fleet-hole");
    let fleet = store.fleet().expect("a fleet");
    let reads = || host_reads(&fleet.state().expect("read the fleet"), "host-a");
    let synced = wait_for(PATIENCE, || reads() == (true, CLAIMS, 0));
    assert!(synced, "never published: {:?}\n{}", reads(), pa.log());

    proxy.black_hole(true);
    let cut = Instant::now();
    let gone = wait_for(PATIENCE, || reads() == (false, 0, CLAIMS));
    assert!(gone, "the lease outlived the partition: {:?}", reads());
    // The 8 s: well past the 5 s lease.
    std::thread::sleep(Duration::from_secs(8).saturating_sub(cut.elapsed()));
    proxy.black_hole(false);
    let healed = Instant::now();
    let (mut samples, mut offline, mut wrong) = (0, 0, Vec::new());
    loop {
        let (online, now, known) = reads();
        samples += 1;
        let at = healed.elapsed().as_millis();
        if online && now < CLAIMS {
            wrong.push(format!(
                "+{at} ms: online with {now} claims, {known} last known"
            ));
        }
        if !online {
            offline += 1;
            if known < CLAIMS {
                wrong.push(format!("+{at} ms: offline with {known} last known"));
            }
        }
        if online && now == CLAIMS {
            break;
        }
        assert!(
            healed.elapsed() < PATIENCE * 3,
            "not back within {:?}: {:?}\n{}",
            PATIENCE * 3,
            reads(),
            pa.log()
        );
    }
    println!(
        "back from the partition: online with all {CLAIMS} claims {} ms after it healed; \
         {samples} readings, {offline} of them offline with the claims last known",
        healed.elapsed().as_millis()
    );
    assert!(
        wrong.is_empty(),
        "the host read wrong: {wrong:?}\n{}",
        pa.log()
    );
}
