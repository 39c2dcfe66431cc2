//! A re-sync after a partition shorter than the lease writes only what
//! changed meanwhile: the copies on the lease still hold.

use super::{etcd_common, root_dir, wait_for, write_claims, Fleet, PATIENCE};
use common::Sleeper;

use super::common;

#[test]
fn a_resync_after_a_partition_shorter_than_the_lease_writes_only_what_changed() {
    let Some(f) = Fleet::start("/fleet-short") else {
        return;
    };
    const CLAIMS: usize = 200;
    let a = root_dir();
    let holder = Sleeper::spawn();
    write_claims(a.path(), "short", CLAIMS, holder.pid());
    let proxy = etcd_common::Proxy::to(&f.etcd.members[0].endpoint());
    let url = format!("etcd://{}{}", proxy.endpoint(), f.prefix);
    let pa = super::spawn_host_a(
        &f,
        a.path(),
        &[
            "--store",
            &url,
            "--lease-ttl",
            "20s",
            "--resweep",
            "1h",
            "--timeout",
            "2s",
        ],
    );
    let synced = wait_for(PATIENCE, || {
        f.host("host-a")
            .is_some_and(|h| h["online"] == true && h["counts"]["live"] == CLAIMS)
    });
    assert!(synced, "never synced\n{}", pa.log());

    // Cut off; a claim changes, so the publisher finds etcd gone (its
    // write times out) and re-syncs once it answers again.
    proxy.black_hole(true);
    write_claims(a.path(), "moved", 1, holder.pid());
    let lost = wait_for(PATIENCE, || pa.log().contains("lost etcd"));
    assert!(lost, "the publisher never missed etcd\n{}", pa.log());
    let before = f.revision();
    proxy.black_hole(false);
    let connected = |log: &str| log.matches("level=info connected").count();
    let back = wait_for(PATIENCE * 2, || connected(&pa.log()) >= 2);
    assert!(back, "never re-synced\n{}", pa.log());
    let writes = f.revision() - before;
    let rewritten = copies_written_since(&f, before);
    println!(
        "re-sync after a short partition: {writes} transactions, {rewritten} of {CLAIMS} \
         claims written (1 changed)"
    );
    // The changed claim, never the ones that stood.
    assert!(
        rewritten <= 1,
        "{rewritten} claims written: the re-sync wrote claims that had not changed\n{}",
        pa.log()
    );
    let listed = wait_for(PATIENCE, || {
        f.host("host-a")
            .is_some_and(|h| h["counts"]["live"] == CLAIMS + 1)
    });
    assert!(listed, "the change was not published\n{}", pa.log());
    drop(proxy);
}

/// How many of host-a's claim copies were written after revision `at`.
fn copies_written_since(f: &Fleet, at: i64) -> usize {
    let (rt, mut client) = f.etcd.client();
    let opts = etcd_client::GetOptions::new()
        .with_prefix()
        .with_keys_only();
    let prefix = format!("{}/hosts/host-a/", f.prefix);
    let resp = rt
        .block_on(client.get(prefix, Some(opts)))
        .expect("read the copies");
    resp.kvs()
        .iter()
        .filter(|kv| kv.mod_revision() > at)
        .filter(|kv| String::from_utf8_lossy(kv.key()).contains("/claims/"))
        .count()
}
