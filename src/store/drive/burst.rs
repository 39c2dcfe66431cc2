//! One burst of a feed: what a driver (or a lane's drain thread) takes
//! from its member's feed at once.

use crate::store::{Change, Changes, StoreError};
use std::time::{Duration, Instant};

/// The longest a burst is let settle before it is read anyway: the screen
/// keeps up with a member that never goes quiet.
const SETTLE_MAX: Duration = Duration::from_millis(400);
/// Most changes read at once: a burst is one batch.
const FEED_BATCH: usize = 4096;

/// One burst of `feed`: the first change within `first`, then what is
/// already there, then — with a `debounce` — what else comes until it is
/// quiet that long (at most [`SETTLE_MAX`]). With why the feed ended, if
/// it did (what came before is kept).
pub(crate) fn burst(
    feed: &mut dyn Changes,
    first: Duration,
    debounce: Option<Duration>,
) -> (Vec<Change>, Option<String>) {
    let mut out = Vec::new();
    let ended = |e: StoreError| Some(e.to_string());
    match feed.next(first) {
        Ok(Some(c)) => out.push(c),
        Ok(None) => return (out, None),
        Err(e) => return (out, ended(e)),
    }
    let cap = Instant::now() + SETTLE_MAX;
    loop {
        while out.len() < FEED_BATCH {
            match feed.next(Duration::ZERO) {
                Ok(Some(c)) => out.push(c),
                Ok(None) => break,
                Err(e) => return (out, ended(e)),
            }
        }
        let Some(quiet) = debounce else {
            return (out, None);
        };
        let left = cap.saturating_duration_since(Instant::now());
        if out.len() >= FEED_BATCH || left.is_zero() {
            return (out, None);
        }
        match feed.next(quiet.min(left)) {
            Ok(Some(c)) => out.push(c),
            Ok(None) => return (out, None),
            Err(e) => return (out, ended(e)),
        }
    }
}
