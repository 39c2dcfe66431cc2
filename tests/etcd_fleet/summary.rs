//! Each root's summary agrees with a count of its copies: `fleet` (which
//! reads the summaries) and `list --json` (which reads every copy) say the
//! same of each host after random changes, online and once offline.

use super::{etcd_common, root_dir, wait_for, Fleet, Publisher, PATIENCE};
use common::Sleeper;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

use super::common;

/// One lockfile for `key`, held by `pid`, written straight into `root`.
fn write_claim(root: &Path, key: &str, pid: u32) {
    let claims = claimtop::claims::Root::new(root.to_path_buf());
    std::fs::create_dir_all(claims.claims_dir()).expect("claims dir");
    let id = claimtop::claims::LocalIdentity::current();
    let now = claimtop::claims::now_ms();
    let rec = claimtop::claims::ClaimRecord {
        schema_version: 1,
        key: key.to_string(),
        holder: "w".into(),
        acquired_at: now,
        pid: pid as i32,
        host: id.hostname.clone(),
        expires_at: Some(now + 3_600_000),
        reason: None,
        harness: None,
        machine_id: Some(id.machine_id.clone()).filter(|m| !m.is_empty()),
        metadata: Default::default(),
    };
    let path = claims.lockfile(&rec.key);
    std::fs::write(path, rec.to_yaml().expect("yaml")).expect("lockfile");
}

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

/// The fleet's count series as a scrape of the summaries and one of every
/// copy (`--per-claim`) give them (ages aside: they move with the clock).
fn same_scrapes(f: &Fleet) -> (BTreeMap<String, f64>, BTreeMap<String, f64>) {
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
    (read(&[]), read(&["--per-claim"]))
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
        let mut seen = (Value::Null, Value::Null);
        let agree = wait_for(PATIENCE, || {
            seen = both(&f, "host-a");
            seen.0 == seen.1 && !seen.0.is_null()
        });
        assert!(
            agree,
            "round {round} (seed {seed}): fleet says {}\nlist says {}\n{}",
            seen.0,
            seen.1,
            pa.log()
        );
    }
    // Whatever the dice said, the scrapes compare every kind of count.
    std::fs::write(claims.join("kz.lock"), b"{{{ not yaml").expect("corrupt");
    write_claim(a.path(), "ky", dead);
    write_claim(a.path(), "kx", holder.pid());
    let mut seen = (Value::Null, Value::Null);
    let agree = wait_for(PATIENCE, || {
        seen = both(&f, "host-a");
        seen.0 == seen.1 && seen.0["counts"]["corrupted"].as_u64() > Some(0)
    });
    assert!(agree, "fleet says {}\nlist says {}", seen.0, seen.1);
    let scrapes = same_scrapes(&f);
    assert!(
        scrapes.0 == scrapes.1,
        "summaries: {:?}\nper claim: {:?}",
        scrapes.0,
        scrapes.1
    );
    // Offline: what it last said, counted as last known by both.
    pa.kill();
    let mut seen = (Value::Null, Value::Null);
    let agree = wait_for(PATIENCE * 2, || {
        seen = both(&f, "host-a");
        seen.0 == seen.1 && seen.0["online"] == false
    });
    let scrapes = same_scrapes(&f);
    assert!(
        scrapes.0 == scrapes.1,
        "summaries: {:?}\nper claim: {:?}",
        scrapes.0,
        scrapes.1
    );
    assert!(
        agree,
        "offline (seed {seed}): fleet says {}\nlist says {}",
        seen.0, seen.1
    );
}
