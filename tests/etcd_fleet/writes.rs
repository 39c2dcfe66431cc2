//! What a publisher writes to etcd: one write for one changed lockfile,
//! a claim and its last known copy held and nothing written while idle,
//! and a holder's death published though no file changed.

use super::common::Sleeper;
use super::{
    published, py_write, root_dir, summary_of, wait_for, write_claims, Fleet, Publisher, PATIENCE,
};
use std::time::Duration;

#[test]
fn one_changed_lockfile_is_one_etcd_write() {
    let Some(f) = Fleet::start("/fleet7") else {
        return;
    };
    let a = root_dir();
    // No re-sweep during the test: only the change itself may write.
    let pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    let holder = Sleeper::spawn();
    for (i, key) in ["first", "second", "third"].iter().enumerate() {
        // The summary of what came before is written: nothing is pending.
        let settled = wait_for(PATIENCE, || summary_of(&f).1 == 2 * i as u64);
        assert!(settled, "{:?}\n{}", summary_of(&f), pa.log());
        let summaries = summary_version(&f);
        let before = f.revision();
        py_write(a.path(), key, &format!("agent-{i}"), holder.pid());
        assert!(wait_for(PATIENCE, || {
            !published(&f.list(), "host-a", key).is_empty()
        }));
        // Late notifications of the same change must not write again: a
        // lockfile written next, once published, says they have been read
        // (notifications come in order), and it is the one other write.
        let next = format!("{key}-next");
        py_write(a.path(), &next, "agent-next", holder.pid());
        assert!(wait_for(PATIENCE, || {
            !published(&f.list(), "host-a", &next).is_empty()
        }));
        // The root's summary is written besides, at most once a second:
        // its own writes are told apart by its version.
        let writes = f.revision() - before - (summary_version(&f) - summaries);
        assert_eq!(writes, 2, "{key} and {next}: {writes} writes\n{}", pa.log());
    }
}

/// How many times host-a's one root's summary was written.
fn summary_version(f: &Fleet) -> i64 {
    summary_of(f).0
}

/// Keys under `prefix` in the fleet's etcd.
fn count_keys(f: &Fleet, prefix: &str) -> i64 {
    let (rt, mut client) = f.etcd.client();
    let opts = etcd_client::GetOptions::new()
        .with_prefix()
        .with_count_only();
    rt.block_on(client.get(prefix, Some(opts)))
        .expect("count keys")
        .count()
}

#[test]
fn a_synced_publisher_holds_each_claim_and_its_last_known_copy_and_writes_nothing_while_idle() {
    let Some(f) = Fleet::start("/fleet-idle") else {
        return;
    };
    let a = root_dir();
    let holder = Sleeper::spawn();
    const CLAIMS: i64 = 120;
    write_claims(a.path(), "idle", CLAIMS as usize, holder.pid());
    // No re-sweep during the test: nothing changes, so nothing may write.
    let pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    // Synced: every claim and its last known copy (written together), the
    // root's hazards key, its summary, its owner key and the host record. A
    // count of the claims alone is reached halfway through the sync.
    let host_keys = "/fleet-idle/hosts/host-a/";
    let synced = wait_for(PATIENCE, || count_keys(&f, host_keys) == 2 * CLAIMS + 4);
    assert!(
        synced,
        "{} keys under {host_keys}\n{}",
        count_keys(&f, host_keys),
        pa.log()
    );
    // Past a few rounds of re-judging (every 2 s): none of them writes.
    let before = f.revision();
    std::thread::sleep(Duration::from_secs(5));
    let writes = f.revision() - before;
    assert_eq!(writes, 0, "{writes} writes while idle\n{}", pa.log());
}

#[test]
fn a_holder_dying_is_published_as_a_changed_state_without_any_file_changing() {
    let Some(f) = Fleet::start("/fleet9") else {
        return;
    };
    let a = root_dir();
    // The full re-sweep is out of the picture: only re-judging can see it.
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    let mut holder = Sleeper::spawn();
    py_write(a.path(), "k", "agent-1", holder.pid());
    let state = || {
        published(&f.list(), "host-a", "k")
            .first()
            .map(|i| i["state"].as_str().unwrap_or("").to_string())
    };
    assert!(wait_for(PATIENCE, || state().as_deref() == Some("live")));
    holder.kill();
    let changed = wait_for(Duration::from_secs(5), || {
        state().is_some_and(|s| s != "live")
    });
    assert!(changed, "still {:?}", state());
}
