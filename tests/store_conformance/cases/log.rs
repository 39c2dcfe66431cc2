//! The audit log: a face opens with the log's tail and follows from the
//! tail's cursor, and sees every line once — none twice, none lost between
//! the two. Every wait ends on the line it waits for, or fails after a
//! bound that only says "it never came".

use super::{take, Target};
use claimtop::events::tail::Line;
use claimtop::store::{LogFeed, LogNews};
use std::time::{Duration, Instant};

use crate::under_test::StoreUnderTest;

/// The bound on "it never came" (not a timing assertion).
const NEVER: Duration = Duration::from_secs(20);

/// The key an audit line names.
fn key_of(line: &Line) -> Option<String> {
    line.parse().ok().and_then(|e| e.key().map(str::to_string))
}

/// Read `feed` until lines naming every key of `keys` came; every line
/// that came, as written.
fn until_keys(feed: &mut dyn LogFeed, keys: &[&str]) -> Vec<Line> {
    let until = Instant::now() + NEVER;
    let mut got: Vec<Line> = Vec::new();
    while Instant::now() < until {
        let named = |k: &&str| got.iter().any(|l| key_of(l).as_deref() == Some(*k));
        if keys.iter().all(named) {
            return got;
        }
        match feed.next(Duration::from_millis(200)) {
            Ok(Some(LogNews::Lines { lines, .. })) => got.extend(lines),
            Ok(Some(other)) => panic!("unexpected news {other:?}"),
            Ok(None) => {}
            Err(e) => panic!("the log feed failed: {e}"),
        }
    }
    let seen: Vec<_> = got.iter().map(key_of).collect();
    panic!("no line named each of {keys:?}; saw {seen:?}");
}

pub fn tail_then_follow_brings_no_line_twice_and_misses_none(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "before", "alice");
    let audit = b.audit().expect("every store under test keeps a log");
    let (tail, at) = audit.tail(1000).expect("tail");
    assert!(
        tail.iter()
            .any(|(_, l)| key_of(l).as_deref() == Some("before")),
        "the tail holds the line written before it"
    );
    // Written between the tail and the feed: brought by the feed, once.
    let peer = u.peer();
    take(peer.backend(u.target()).expect("target"), "between", "bob");
    let mut feed = audit.follow(Some(&at)).expect("follow");
    take(b, "after", "alice");
    let got = until_keys(feed.as_mut(), &["between", "after"]);
    for line in &got {
        assert_ne!(
            key_of(line).as_deref(),
            Some("before"),
            "{line:?} came twice"
        );
    }
    let between = got
        .iter()
        .filter(|l| key_of(l).as_deref() == Some("between"));
    assert_eq!(between.count(), 1, "the line between came once: {got:?}");
}
