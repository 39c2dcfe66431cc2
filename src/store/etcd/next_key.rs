//! The first key after a point in a big range, found without reading the
//! whole range once per key found.
//!
//! etcd (3.4 and 3.5) walks every key of a range to count it, even for a
//! read of one key: a read of `[from, end)` costs the keys in it, not the
//! keys it returns. The hosts under `PREFIX/hosts/` are found one after the
//! other, each by the first key after the one before: asked as `[from,
//! end)`, every step walked the rest of the fleet, every host's claims and
//! their last known copies, so that finding 20 hosts walked the fleet ten
//! times over.
//!
//! A search here asks narrow windows first. The keys after `from` fall, in
//! key order, into levels: those that start with all of `from`, then for
//! each byte of `from` from the last to the first, those that agree with
//! `from` before it and are greater there. A level is asked a few bytes'
//! worth at a time (1, then 4, 16, 64 and the rest of the byte values), so
//! a window that answers holds about one host and its neighbours, not the
//! fleet. The levels below the byte where the previous search found its
//! key are asked as one window: the next host's id usually differs from
//! the one before at about the same place (`host-07`, `host-08`), and those
//! deeper levels are mostly empty.

/// Successive searches over keys that all start with one prefix.
#[derive(Debug, Clone)]
pub struct NextKey {
    /// The length of the prefix every key shares.
    base: usize,
    /// Where the keys of the last two searches first differed from where
    /// each search began.
    last: [Option<usize>; 2],
}

impl NextKey {
    /// Searches over the keys under a prefix of `base` bytes.
    pub fn new(base: usize) -> NextKey {
        NextKey {
            base,
            last: [None; 2],
        }
    }

    /// The first key at or after `from` (which starts with the prefix) and
    /// under the prefix. `probe(lo, hi)` answers the first key in `[lo, hi)`.
    pub fn find<E>(
        &mut self,
        from: &[u8],
        mut probe: impl FnMut(&[u8], &[u8]) -> Result<Option<Vec<u8>>, E>,
    ) -> Result<Option<Vec<u8>>, E> {
        let (base, n) = (self.base, from.len());
        let found = if n <= base {
            // From the prefix itself: one window over everything.
            probe(from, &prefix_end(from))?
        } else {
            match self.last.iter().flatten().max() {
                Some(&d) => {
                    // The levels deeper than where the last keys were found
                    // as one window, then that level and up, byte values a
                    // few at a time.
                    let deep = d.clamp(base, n - 1);
                    match probe(from, &prefix_end(&from[..deep + 1]))? {
                        Some(k) => Some(k),
                        None => Self::levels(from, base, deep, &mut probe)?,
                    }
                }
                None => Self::unhinted(from, base, &mut probe)?,
            }
        };
        // The first search, from the prefix itself, says nothing of where
        // ids differ.
        if let Some(k) = found.as_ref().filter(|_| n > base) {
            let d = k.iter().zip(from).position(|(a, b)| a != b);
            self.last = [self.last[1], Some(d.unwrap_or(n))];
        }
        Ok(found)
    }

    /// Without a hint: the keys that start with `from`, then each level
    /// from the last byte of `from` up to the second after the prefix as
    /// two windows, the next byte value (the next of a run of ids) and the
    /// rest of the level (mostly empty); then the first byte's level.
    fn unhinted<E>(
        from: &[u8],
        base: usize,
        probe: &mut impl FnMut(&[u8], &[u8]) -> Result<Option<Vec<u8>>, E>,
    ) -> Result<Option<Vec<u8>>, E> {
        if let Some(k) = probe(from, &prefix_end(from))? {
            return Ok(Some(k));
        }
        for d in (base + 1..from.len()).rev() {
            let (at, next) = (&from[..d], u16::from(from[d]) + 1);
            if next > 0xff {
                continue;
            }
            let start = [at, &[next as u8]].concat();
            let mut windows = vec![start];
            if next < 0xff {
                windows.push([at, &[next as u8 + 1]].concat());
            }
            windows.push(prefix_end(at));
            for w in windows.windows(2) {
                if let Some(k) = probe(&w[0], &w[1])? {
                    return Ok(Some(k));
                }
            }
        }
        Self::levels(from, base, base, probe)
    }

    /// Levels `top` down to `base`: at level `d`, the keys that agree with
    /// `from` before byte `d` and are greater there, asked 1, 4, 16, 64 and
    /// then the rest of the byte values at a time.
    fn levels<E>(
        from: &[u8],
        base: usize,
        top: usize,
        probe: &mut impl FnMut(&[u8], &[u8]) -> Result<Option<Vec<u8>>, E>,
    ) -> Result<Option<Vec<u8>>, E> {
        for d in (base..=top).rev() {
            let at = &from[..d];
            let mut lo = u16::from(from[d]) + 1;
            let mut width = 1u16;
            while lo <= 0xff {
                let hi = (lo + width).min(0x100);
                let start = [at, &[lo as u8]].concat();
                let end = match hi {
                    0x100 => prefix_end(at),
                    hi => [at, &[hi as u8]].concat(),
                };
                if let Some(k) = probe(&start, &end)? {
                    return Ok(Some(k));
                }
                lo = hi;
                width = width.saturating_mul(4);
            }
        }
        Ok(None)
    }
}

/// The end of the range of every key that starts with `prefix` (etcd's
/// `"\0"`, no end, when no such bound exists).
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use std::convert::Infallible;

    const PREFIX: &[u8] = b"/p/hosts/";

    /// A store of keys whose reads cost what etcd's do: every key of the
    /// range asked.
    struct Model {
        keys: BTreeSet<Vec<u8>>,
        walked: usize,
        reads: usize,
    }

    impl Model {
        fn new(keys: impl IntoIterator<Item = Vec<u8>>) -> Model {
            Model {
                keys: keys.into_iter().collect(),
                walked: 0,
                reads: 0,
            }
        }

        fn first(&mut self, lo: &[u8], hi: &[u8]) -> Option<Vec<u8>> {
            self.reads += 1;
            let in_range = |k: &&Vec<u8>| hi == [0] || k.as_slice() < hi;
            self.walked += self.keys.range(lo.to_vec()..).take_while(in_range).count();
            self.keys.range(lo.to_vec()..).find(in_range).cloned()
        }

        /// Every host, each found after the one before as the fleet reader
        /// finds them.
        fn hosts(&mut self) -> Vec<Vec<u8>> {
            let mut next = NextKey::new(PREFIX.len());
            let mut from = PREFIX.to_vec();
            let mut out = Vec::new();
            while let Some(k) = next
                .find(&from, |lo, hi| Ok::<_, Infallible>(self.first(lo, hi)))
                .unwrap()
            {
                let rest = &k[PREFIX.len()..];
                let Some(slash) = rest.iter().position(|b| *b == b'/') else {
                    break;
                };
                let dir = [PREFIX, &rest[..=slash]].concat();
                from = prefix_end(&dir);
                out.push(rest[..slash].to_vec());
            }
            out
        }
    }

    /// `claims` keys of host `id`, with its record and owner key.
    fn host(id: &[u8], claims: usize) -> Vec<Vec<u8>> {
        let dir = [PREFIX, id, b"/"].concat();
        let mut keys: Vec<Vec<u8>> = (0..claims)
            .flat_map(|i| {
                let c = format!("00000000000000aa/claims/k{i:05}");
                let k = format!("00000000000000aa/known/k{i:05}");
                [
                    [&dir[..], c.as_bytes()].concat(),
                    [&dir[..], k.as_bytes()].concat(),
                ]
            })
            .collect();
        keys.push([&dir[..], b"host"].concat());
        keys.push([&dir[..], b"owners/00000000000000aa"].concat());
        keys
    }

    fn fleet(ids: &[Vec<u8>], claims: usize) -> Model {
        Model::new(ids.iter().flat_map(|id| host(id, claims)))
    }

    #[test]
    fn every_host_is_found_in_order_and_the_fleet_is_walked_about_twice_not_once_per_host() {
        let ids: Vec<Vec<u8>> = (0..20)
            .map(|h| format!("host-{h:02}").into_bytes())
            .collect();
        let mut m = fleet(&ids, 500);
        let total = m.keys.len();
        assert_eq!(m.hosts(), ids);
        // Skipping from each host to the end of the prefix walked about
        // ten times the fleet here.
        assert!(m.walked <= 3 * total, "walked {} keys of {total}", m.walked);
        assert!(m.reads <= 5 * ids.len(), "{} reads", m.reads);
    }

    #[test]
    fn random_machine_ids_are_found_by_a_few_narrow_reads_each() {
        let mut ids: Vec<Vec<u8>> = (0u64..20)
            .map(|h| {
                let x = h.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x3d12_19c7_c4c5_404a;
                format!("{x:016x}{:016x}%3A4026531836", x.rotate_left(17)).into_bytes()
            })
            .collect();
        ids.sort();
        let mut m = fleet(&ids, 500);
        let total = m.keys.len();
        assert_eq!(m.hosts(), ids);
        assert!(m.walked <= 3 * total, "walked {} of {total}", m.walked);
        assert!(m.reads <= 10 * ids.len(), "{} reads", m.reads);
    }

    #[test]
    fn no_host_and_a_lone_host() {
        assert!(Model::new(Vec::new()).hosts().is_empty());
        assert_eq!(fleet(&[b"m".to_vec()], 3).hosts(), [b"m".to_vec()]);
    }

    proptest! {
        #[test]
        fn the_first_key_at_or_after_any_point_is_found(
            keys in proptest::collection::btree_set(
                proptest::collection::vec(prop_oneof![Just(0u8), Just(b'/'), Just(b'0'), Just(b'a'), Just(0xfe), Just(0xff)], 0..5),
                0..30,
            ),
            starts in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just(0u8), Just(b'/'), Just(b'0'), Just(b'a'), Just(0xfe), Just(0xff)], 0..6),
                1..6,
            ),
        ) {
            let mut m = Model::new(keys.iter().map(|k| [PREFIX, k].concat()));
            let mut next = NextKey::new(PREFIX.len());
            let mut starts: Vec<Vec<u8>> = starts.iter().map(|s| [PREFIX, s].concat()).collect();
            starts.sort();
            for from in starts {
                let want = m.keys.range(from.clone()..).next().cloned();
                let got = next.find(&from, |lo, hi| Ok::<_, Infallible>(m.first(lo, hi))).unwrap();
                prop_assert_eq!(got, want, "from {:?}", from);
            }
        }
    }
}
