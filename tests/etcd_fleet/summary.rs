//! Each root's summary agrees with a count of its copies: `fleet` (which
//! reads the summaries) and `list --json` (which reads every copy) say the
//! same of each host after random changes, online and once offline.

use super::{etcd_common, root_dir, wait_for, write_claim, Fleet, Publisher, PATIENCE};
use common::Sleeper;
use serde_json::Value;
use std::collections::BTreeMap;

use super::common;

/// Host `id` as `fleet --json` and as `list --json` give it, when the
/// host is listed by both, its time of last sight aside (an online host's
/// is the time of the reading).
fn both(f: &Fleet, id: &str) -> (Value, Value) {
    let strip = |mut h: Value| {
        if let Some(o) = h.as_object_mut() {
            o.remove("last_seen_ms");
        }
        h
    };
    let fleet = super::json_of(&f.over(&["fleet", "--json"]));
    let from_summaries = fleet["hosts"]
        .as_array()
        .and_then(|hs| hs.iter().find(|h| h["host_id"] == id).cloned())
        .map_or(Value::Null, strip);
    let from_copies = f.host(id).map_or(Value::Null, strip);
    (from_summaries, from_copies)
}

/// The fleet's count series are the same in a scrape of the summaries and
/// in one of every copy (`--per-claim`), ages aside (they move with the
/// clock).
fn same_scrapes(f: &Fleet) {
    let read = |flags: &[&str]| {
        let mut over = super::claimtop(f.home.path());
        over.env_remove("FNO_CLAIMS_STORE")
            .args(["--store", &f.url]);
        let (mut server, addr) = etcd_common::start_metrics_with(over, flags);
        let got: BTreeMap<String, f64> = etcd_common::scrape(&addr)
            .into_iter()
            .filter(|(k, _)| k.contains("host_id="))
            .filter(|(k, _)| !k.contains("seconds") && !k.contains("events"))
            .collect();
        let _ = server.kill();
        let _ = server.wait();
        got
    };
    let (summed, counted) = (read(&[]), read(&["--per-claim"]));
    assert!(
        summed == counted,
        "summaries: {summed:?}\nper claim: {counted:?}"
    );
}

/// A small xorshift: the seed printed, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn each_hosts_counts_from_the_summaries_equal_a_count_of_its_copies_after_random_changes() {
    let Some(f) = Fleet::start("/fleet-sum") else {
        return;
    };
    let a = root_dir();
    let holder = Sleeper::spawn();
    let mut gone = Sleeper::spawn();
    let dead = gone.pid();
    gone.kill();
    let seed = claimtop::claims::now_ms() as u64 | 1;
    println!("seed {seed}");
    let mut rng = Rng(seed);
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    let claims = a.path().join(".fno/claims");
    std::fs::create_dir_all(&claims).expect("claims dir");
    for round in 0..4 {
        for _ in 0..12 {
            let key = format!("k{}", rng.below(10));
            match rng.below(4) {
                0 => write_claim(a.path(), &key, holder.pid()),
                1 => write_claim(a.path(), &key, dead),
                2 => std::fs::write(claims.join(format!("{key}.lock")), b"{{{ not yaml")
                    .expect("corrupt"),
                _ => {
                    let _ = std::fs::remove_file(claims.join(format!("{key}.lock")));
                }
            }
        }
        let seen = agreed(&f, |h| !h.is_null());
        assert!(
            seen.is_ok(),
            "round {round} (seed {seed}): {seen:?}\n{}",
            pa.log()
        );
    }
    // Whatever the dice said, the scrapes compare every kind of count.
    std::fs::write(claims.join("kz.lock"), b"{{{ not yaml").expect("corrupt");
    write_claim(a.path(), "ky", dead);
    write_claim(a.path(), "kx", holder.pid());
    let seen = agreed(&f, |h| h["counts"]["corrupted"].as_u64() > Some(0));
    assert!(seen.is_ok(), "{seen:?}");
    same_scrapes(&f);
    // Offline: what it last said, counted as last known by both.
    pa.kill();
    let seen = agreed(&f, |h| h["online"] == false);
    assert!(seen.is_ok(), "offline (seed {seed}): {seen:?}");
    same_scrapes(&f);
}

/// Wait until `fleet --json` and `list --json` say the same of host-a, and
/// `also` holds of it; what each said when they never did.
fn agreed(f: &Fleet, also: impl Fn(&Value) -> bool) -> Result<(), String> {
    let mut seen = (Value::Null, Value::Null);
    let agree = wait_for(PATIENCE * 2, || {
        seen = both(f, "host-a");
        seen.0 == seen.1 && also(&seen.0)
    });
    match agree {
        true => Ok(()),
        false => Err(format!("fleet says {}\nlist says {}", seen.0, seen.1)),
    }
}

#[test]
fn a_scrape_reads_every_hosts_summaries_in_one_transaction_once_the_hosts_were_found() {
    let Some(f) = Fleet::start("/fleet-scrape") else {
        return;
    };
    const HOSTS: usize = 4;
    let holder = Sleeper::spawn();
    let roots: Vec<_> = (0..HOSTS).map(|_| root_dir()).collect();
    let _publishers: Vec<Publisher> = roots
        .iter()
        .enumerate()
        .map(|(i, r)| {
            write_claim(r.path(), &format!("k{i}"), holder.pid());
            Publisher::spawn(&f, r.path(), &format!("host-{i}"), "1h")
        })
        .collect();
    // Every host's summary written (a host without one is read from its
    // copies instead).
    let summed = wait_for(PATIENCE, || {
        let fleet = super::json_of(&f.over(&["fleet", "--json"]));
        let hosts = fleet["hosts"].as_array().cloned().unwrap_or_default();
        hosts.len() == HOSTS && hosts.iter().all(|h| h["counts"]["live"] == 1)
    });
    assert!(summed, "the summaries never all came");
    let mut over = super::claimtop(f.home.path());
    over.env_remove("FNO_CLAIMS_STORE")
        .args(["--store", &f.url]);
    let (mut server, addr) = etcd_common::start_metrics_with(over, &[]);
    let etcd = f.etcd.members[0].endpoint();
    let txns = || {
        etcd_common::grpc_started(&etcd)
            .get("Txn")
            .copied()
            .unwrap_or(0.0)
    };
    // The first scrape finds the hosts, one search each.
    let first = etcd_common::metrics_text(&addr);
    let before = txns();
    let second = etcd_common::metrics_text(&addr);
    let read = txns() - before;
    let _ = server.kill();
    let _ = server.wait();
    for i in 0..HOSTS {
        let host = format!("host_id=\"host-{i}\"");
        assert!(first.contains(&host), "host-{i} missing:\n{first}");
        assert!(second.contains(&host), "host-{i} missing:\n{second}");
    }
    println!("a scrape of {HOSTS} hosts' summaries: {read} transactions");
    // One transaction holds 40 hosts' reads; one a host was the old way.
    assert_eq!(read, 1.0, "transactions in one scrape of {HOSTS} hosts");
}
