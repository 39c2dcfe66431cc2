//! Where a forward range over the prefix should end.
//!
//! etcd walks its key index over the whole of a range, whatever the
//! request's limit (3.4 gathers every revision in it, 3.5 counts them for
//! `more`): a page read as `[key, end of prefix)` costs every key after
//! it, so a scan of 100 000 events page by page walked the index some
//! 5 million times and spent most of a search there. A range that ends
//! about a page ahead walks about a page.
//!
//! A range runs to the end of the block of keys that share its first
//! key's first few bytes; how many bytes is learnt from the pages read:
//! as many as a page that held more than a page's keys shared, one fewer
//! after a block that held few. Blocks follow the keys' own digits (event
//! ids are times in decimal, a mirrored log's keys offsets), which a guess
//! by arithmetic on the bytes does not: it lands in the gaps past `9`. A
//! guess is never trusted: a block that held more than a page goes on
//! after its last key read, to the same end; what a scan reads is the same
//! either way, only what etcd walks for it changes.

use super::{after, EtcdHistory, PAGE};
use crate::store::StoreError;
use etcd_client::KeyValue;

/// One forward scan's guesses, kept from page to page.
#[derive(Debug, Clone, Default)]
pub(super) struct Reach {
    /// How many bytes of a key name its block.
    depth: Option<usize>,
    /// The end of the range in progress, when its last read was a full
    /// page: no guess may go past it, since what lies between is known.
    open: Option<Vec<u8>>,
    /// The last range held more than a page: the next one starts inside
    /// a block, and finding the rest of it empty says nothing of how the
    /// keys spread.
    after_full: bool,
}

fn common_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The first key past every key that starts with `prefix` (None: no such
/// key, the prefix is empty or all `0xff`).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Is `key` before `stop`? (A stop of `"\0"` is etcd's "to the end of
/// the key space".)
fn before(key: &[u8], stop: &[u8]) -> bool {
    stop == [0] || key < stop
}

impl Reach {
    /// Where a range from `at` should end, at most `stop`.
    pub(super) fn fence(&mut self, at: &[u8], stop: &[u8]) -> Vec<u8> {
        let open = self
            .open
            .take()
            .filter(|f| f.as_slice() > at && before(f, stop));
        let guess = self
            .depth
            .and_then(|d| successor(&at[..d.min(at.len())]))
            .filter(|g| g.as_slice() > at && before(g, stop));
        match (guess, open) {
            (Some(g), Some(o)) => g.min(o),
            (Some(f), None) | (None, Some(f)) => f,
            (None, None) => stop.to_vec(),
        }
    }

    /// What a read of up to [`PAGE`] keys from a range ending at `fence`
    /// brought (`more`: the range holds more than it).
    pub(super) fn learn(&mut self, kvs: &[KeyValue], more: bool, fence: &[u8]) {
        let after_full = std::mem::replace(&mut self.after_full, more);
        if more {
            self.open = Some(fence.to_vec());
            if let (Some(first), Some(last)) = (kvs.first(), kvs.last()) {
                self.depth = Some(common_len(first.key(), last.key()));
            }
        } else if kvs.len() < PAGE / 8 && !after_full {
            self.depth = self.depth.map(|d| d.saturating_sub(1));
        }
    }
}

/// A page of a forward scan ([`EtcdHistory::scan_page`]).
pub(super) struct Scanned {
    pub(super) kvs: Vec<KeyValue>,
    /// The revision it was read at.
    pub(super) rev: i64,
    /// Where the scan goes on; None once it reached its stop.
    pub(super) next: Option<Vec<u8>>,
}

impl EtcdHistory {
    /// Up to [`PAGE`] keys of a forward scan from `at` to `stop`, at
    /// revision `rev`, in a range that ends where `reach` guesses; and
    /// where the scan goes on (None: it reached `stop`).
    pub(super) fn scan_page(
        &self,
        reach: &mut Reach,
        at: &[u8],
        stop: &[u8],
        rev: i64,
    ) -> Result<Scanned, StoreError> {
        let fence = reach.fence(at, stop);
        let mut resp = self.range(at, &fence, PAGE, rev)?;
        let more = resp.more();
        let kvs = resp.take_kvs();
        reach.learn(&kvs, more, &fence);
        let next = match kvs.last() {
            Some(last) if more => Some(after(last.key())),
            _ if fence.as_slice() != stop => Some(fence),
            _ => None,
        };
        Ok(Scanned {
            kvs,
            rev: resp.header().map_or(0, |h| h.revision()),
            next,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_depth(depth: usize) -> Reach {
        Reach {
            depth: Some(depth),
            ..Reach::default()
        }
    }

    #[test]
    fn without_a_depth_a_range_runs_to_the_stop() {
        let mut r = Reach::default();
        assert_eq!(r.fence(b"/p/e/", b"/p/e0"), b"/p/e0".to_vec());
    }

    #[test]
    fn a_range_runs_to_the_end_of_its_block() {
        let mut r = at_depth(9);
        assert_eq!(r.fence(b"/p/e/1796093", b"/p/e0"), b"/p/e/1797".to_vec());
        // Past the stop, or no block at all: the stop.
        assert_eq!(r.fence(b"/p/e/1", b"/p/e/15"), b"/p/e/15".to_vec());
        let mut r = at_depth(0);
        assert_eq!(r.fence(b"/p/e/1", b"/p/e0"), b"/p/e0".to_vec());
        assert_eq!(successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(successor(b"\xff"), None);
    }

    #[test]
    fn a_range_that_held_more_than_a_page_bounds_the_next_one() {
        let mut r = at_depth(5);
        r.open = Some(b"/p/e/5".to_vec());
        assert_eq!(r.fence(b"/p/e/1", b"/p/f"), b"/p/e/5".to_vec());
        // Once passed, it bounds nothing.
        r.open = Some(b"/p/e/5".to_vec());
        assert_eq!(r.fence(b"/p/e/6", b"/p/f"), b"/p/e0".to_vec());
    }

    #[test]
    fn blocks_grow_where_keys_are_few_but_not_in_the_rest_of_a_full_one() {
        let mut r = at_depth(8);
        r.learn(&[], false, b"/p/e/2");
        assert_eq!(r.depth, Some(7));
        r.after_full = true;
        r.learn(&[], false, b"/p/e/3");
        assert_eq!(r.depth, Some(7));
        r.learn(&[], false, b"/p/e/4");
        assert_eq!(r.depth, Some(6));
    }

    #[test]
    fn the_key_space_end_is_no_bound() {
        assert!(before(b"\xff\xff", &[0]));
        assert!(!before(b"/q", b"/p"));
    }
}
