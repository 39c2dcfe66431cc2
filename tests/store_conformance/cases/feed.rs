//! The change feed: a peer's write is named, nothing between a listing and
//! its feed is lost, a cursor the store no longer has says so, and a key's
//! watch wakes when that key changes. Every wait here ends on what it
//! waits for, or fails after a bound that only says "it never came".

use super::{take, Target};
use crate::under_test::{lacks, Cap, StoreUnderTest};
use claimtop::store::backend::list_now;
use claimtop::store::{Change, Changes};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The bound on "it never came" (not a timing assertion).
const NEVER: Duration = Duration::from_secs(20);

/// Read `feed` until a change names `key`; what came before it.
fn until_named(feed: &mut Box<dyn Changes>, key: &str) -> Vec<Change> {
    let until = Instant::now() + NEVER;
    let mut seen = Vec::new();
    while Instant::now() < until {
        match feed.next(Duration::from_millis(200)) {
            Ok(Some(Change::Claim { key: k })) if k == key => return seen,
            Ok(Some(c)) => seen.push(c),
            Ok(None) => {}
            Err(e) => panic!("the feed failed: {e}"),
        }
    }
    panic!("no change named {key}; saw {seen:?}");
}

pub fn a_peer_acquire_is_named_by_the_feed(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    // A store that keeps its claims in a directory makes it at the first
    // claim: that is a re-read of everything, not this case.
    take(b, "first", "alice");
    let mut feed = b.changes(None).expect("feed");
    let peer = u.peer();
    take(peer.backend(u.target()).expect("target"), "watched", "bob");
    until_named(&mut feed, "watched");
}

pub fn nothing_written_between_a_listing_and_its_feed_is_lost(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "first", "alice");
    let peer = u.peer();
    let other = peer.backend(u.target()).expect("target");
    // A store whose feed resumes from a cursor is listed first; one without
    // cursors resumes from now only, so its feed is opened first (what
    // every follower of it does).
    let probe = list_now(b).expect("list");
    let mut feed = match probe.end.at {
        Some(at) => {
            take(other, "between", "bob");
            b.changes(Some(&at)).expect("feed after the listing")
        }
        None => {
            let feed = b.changes(None).expect("feed");
            list_now(b).expect("list");
            take(other, "between", "bob");
            feed
        }
    };
    until_named(&mut feed, "between");
}

pub fn a_lost_cursor_resyncs_with_a_reason(u: &dyn StoreUnderTest) {
    if lacks(u, Cap::Compaction, "a_lost_cursor_resyncs_with_a_reason") {
        return;
    }
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "first", "alice");
    let at = list_now(b).expect("list").end.at.expect("a cursor");
    take(b, "meanwhile", "alice");
    take(b, "and-this", "alice");
    u.lose_changes();
    let mut feed = b.changes(Some(&at)).expect("feed");
    let until = Instant::now() + NEVER;
    while Instant::now() < until {
        match feed.next(Duration::from_millis(200)) {
            Ok(Some(Change::Relist { why: Some(why) })) => {
                assert!(!why.trim().is_empty(), "a resync says why");
                return;
            }
            Ok(Some(Change::Claim { key })) => panic!("{key} named as if nothing was lost"),
            Ok(_) => {}
            Err(e) => panic!("the feed failed instead of resyncing: {e}"),
        }
    }
    panic!("changes were lost and nothing said so");
}

pub fn watch_key_wakes_when_its_key_changes(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "first", "alice");
    let woken = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&woken);
    let _watch = b
        .watch_key(
            "k",
            Arc::new(move || {
                count.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .expect("watch");
    let peer = u.peer();
    take(peer.backend(u.target()).expect("target"), "k", "bob");
    let until = Instant::now() + NEVER;
    while woken.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < until, "the key changed and nothing woke");
        std::thread::sleep(Duration::from_millis(20));
    }
}
