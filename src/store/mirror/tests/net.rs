//! The safety net over a file root stands on the claims dir's stamp: an
//! idle root is not listed each minute, a lockfile made or removed with no
//! notification is listed by the next net, and one written in place by
//! every tenth.

use super::*;
use crate::claims::SETTLED_MS;

/// Past the window in which the claims dir's stamp is not trusted.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(SETTLED_MS as u64 + 100));
}

/// Run the `n`th net after the listing at NOW: the clock past its spacing,
/// then whatever it owes read.
fn net(m: &mut Mirror, store: &FileStore, n: i64) {
    let at = NOW + n * RELIST_EVERY_MS;
    m.tick(at);
    assert!(m.wants_listing(), "net {n} is due");
    m.settle(store, at).expect("settle");
}

/// A root holding "a", listed once its claims dir's stamp has settled.
fn listed() -> World {
    let mut w = world(steady);
    write(&w.root, &rec("a", 200, None));
    settle();
    w.m.list(&w.store, NOW, None).expect("list");
    w
}

#[test]
fn an_idle_root_is_listed_by_every_tenth_net_only() {
    let mut w = listed();
    for n in 1..NET_LISTS_EVERY as i64 {
        net(&mut w.m, &w.store, n);
        assert_eq!(w.m.listings, 1, "net {n} listed an unchanged root");
    }
    net(&mut w.m, &w.store, NET_LISTS_EVERY as i64);
    assert_eq!(w.m.listings, 2, "the tenth net lists");
}

#[test]
fn a_lockfile_made_or_removed_unheard_is_listed_by_the_next_net() {
    let mut w = listed();
    net(&mut w.m, &w.store, 1);
    assert_eq!(w.m.listings, 1);
    // No change is applied: the notifications were lost.
    write(&w.root, &rec("b", 200, None));
    net(&mut w.m, &w.store, 2);
    assert_eq!(w.m.listings, 2, "a new lockfile moved the dir's stamp");
    assert!(holder_of(&w.m, &w.root, "b").is_some());
    settle();
    net(&mut w.m, &w.store, 3);
    std::fs::remove_file(w.root.lockfile("a")).expect("remove");
    net(&mut w.m, &w.store, 4);
    assert!(
        holder_of(&w.m, &w.root, "a").is_none(),
        "the removal was listed"
    );
}

#[test]
fn a_lockfile_written_in_place_unheard_is_found_by_the_tenth_net() {
    let mut w = listed();
    let mut other = rec("a", 200, None);
    other.holder = "mallory".into();
    // In place: the same inode, the dir untouched.
    std::fs::write(w.root.lockfile("a"), other.to_yaml().expect("yaml")).expect("write");
    for n in 1..NET_LISTS_EVERY as i64 {
        net(&mut w.m, &w.store, n);
    }
    assert_eq!(holder_of(&w.m, &w.root, "a").as_deref(), Some("h"));
    net(&mut w.m, &w.store, NET_LISTS_EVERY as i64);
    assert_eq!(holder_of(&w.m, &w.root, "a").as_deref(), Some("mallory"));
}

#[test]
fn a_listing_owed_for_a_reason_never_stands_on_the_mark() {
    let mut w = listed();
    // A lockfile under a name only a listing reads, and an operator's
    // ask: each lists whatever the mark says.
    w.m.apply(Change::Relist { why: None });
    w.m.settle(&w.store, NOW + 1).expect("settle");
    assert_eq!(w.m.listings, 2);
    w.m.relist_soon();
    w.m.settle(&w.store, NOW + 2).expect("settle");
    assert_eq!(w.m.listings, 3);
    // ...even when the net fell due before they were asked.
    w.m.tick(NOW + 2 + RELIST_EVERY_MS);
    w.m.relist_soon();
    w.m.settle(&w.store, NOW + 2 + RELIST_EVERY_MS)
        .expect("settle");
    assert_eq!(w.m.listings, 4);
}
