//! Searches and counts against a line-by-line model, for any block size.

use super::*;
use proptest::prelude::*;
use std::io::Write;

/// The obvious answer: every line start and its text, then the first
/// matching line in the direction asked.
fn model(bytes: &[u8], needle: &str, from: SearchFrom) -> Option<u64> {
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            lines.push((start as u64, bytes[start..i].to_ascii_lowercase()));
            start = i + 1;
        }
    }
    let n = needle.as_bytes().to_ascii_lowercase();
    let hit = |l: &Vec<u8>| !n.is_empty() && memchr::memmem::find(l, &n).is_some();
    match from {
        SearchFrom::After(o) => lines.iter().find(|(s, l)| *s > o && hit(l)).map(|x| x.0),
        SearchFrom::ForwardAt(o) => lines.iter().find(|(s, l)| *s >= o && hit(l)).map(|x| x.0),
        SearchFrom::Start => lines.iter().find(|(_, l)| hit(l)).map(|x| x.0),
        SearchFrom::Before(o) => lines
            .iter()
            .rev()
            .find(|(s, l)| *s < o && hit(l))
            .map(|x| x.0),
    }
}

fn run(lf: &LogFile, needle: &Needle, mut from: SearchFrom, budget: u64) -> Option<u64> {
    for _ in 0..100_000 {
        match lf.search(needle, from, budget).expect("search") {
            SearchStep::Found(at) => return Some(at),
            SearchStep::NotFound => return None,
            SearchStep::Continue(next) => from = next,
        }
    }
    panic!("search never ended");
}

/// Lines over a small alphabet, each shorter than `block` (the reads
/// then always hold whole lines, and a search must agree with the
/// model exactly), joined by `\n`, with or without a last one.
fn lines_under(block: usize) -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![Just(b'a'), Just(b'B'), Just(b'b'), Just(b'x')];
    (
        proptest::collection::vec(proptest::collection::vec(byte, 0..block), 0..24),
        any::<bool>(),
    )
        .prop_map(|(lines, partial)| {
            let mut bytes = lines.join(&b'\n');
            if !partial && !bytes.is_empty() {
                bytes.push(b'\n');
            }
            bytes
        })
}

fn log_with_block(bytes: &[u8], block: usize) -> (tempfile::NamedTempFile, LogFile) {
    let mut f = tempfile::NamedTempFile::new().expect("tempfile");
    f.write_all(bytes).expect("write");
    let mut lf = LogFile::open(f.path()).expect("open").expect("exists");
    lf.block = block;
    (f, lf)
}

/// A search from the `at`-th line start of `bytes` (the partial last
/// line's counts), each way a step can begin there.
fn every_way_from(bytes: &[u8], at: usize) -> [SearchFrom; 3] {
    let starts: Vec<u64> = std::iter::once(0)
        .chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i as u64 + 1),
        )
        .filter(|&s| (s as usize) < bytes.len())
        .collect();
    let line = starts.get(at % starts.len().max(1)).copied().unwrap_or(0);
    [
        SearchFrom::After(line),
        SearchFrom::Before(line),
        SearchFrom::ForwardAt(line),
    ]
}

proptest! {
    #[test]
    fn search_agrees_with_a_line_by_line_scan_for_any_block_size(
        (block, bytes) in (4usize..40).prop_flat_map(|b| (Just(b), lines_under(b))),
        needle in "[abAB]{1,3}",
        budget in 1u64..64,
        at in 0usize..200,
    ) {
        let (_f, lf) = log_with_block(&bytes, block);
        let n = Needle::new(&needle);
        for from in every_way_from(&bytes, at) {
            prop_assert_eq!(run(&lf, &n, from, budget), model(&bytes, &needle, from), "{:?}", from);
        }
    }

    #[test]
    fn a_search_through_lines_longer_than_a_block_finds_only_lines_that_match(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b'\n'), Just(b'a'), Just(b'B'), Just(b'b'), Just(b'x')], 0..200),
        needle in "[abAB]{1,3}",
        block in 4usize..12,
        budget in 1u64..64,
        at in 0usize..200,
    ) {
        // A match across two pieces of a long line may be missed (such
        // lines are cut for display anyway); what is found must match.
        let (_f, lf) = log_with_block(&bytes, block);
        let n = Needle::new(&needle);
        for from in every_way_from(&bytes, at) {
            if let Some(found) = run(&lf, &n, from, budget) {
                let all = {
                    let mut v = Vec::new();
                    let mut f = SearchFrom::Start;
                    while let Some(m) = model(&bytes, &needle, f) {
                        v.push(m);
                        f = SearchFrom::After(m);
                    }
                    v
                };
                prop_assert!(all.contains(&found), "{:?} found {} of {:?}", from, found, all);
                let ahead = match from {
                    SearchFrom::After(o) => found > o,
                    SearchFrom::ForwardAt(o) => found >= o,
                    SearchFrom::Before(o) => found < o,
                    SearchFrom::Start => true,
                };
                prop_assert!(ahead, "{:?} found {}", from, found);
            }
        }
    }
}

/// Every matching line start, as a count in steps of `budget` finds them.
fn count_all(lf: &LogFile, needle: &Needle, budget: u64) -> Vec<u64> {
    let (mut found, mut at) = (Vec::new(), 0);
    for _ in 0..100_000 {
        let (next, end) = lf
            .scan_matches(needle, at, budget, &mut found)
            .expect("scan");
        at = next;
        if end {
            return found;
        }
    }
    panic!("count never ended");
}

proptest! {
    #[test]
    fn a_count_finds_every_matching_whole_line_once_for_any_block_size(
        (block, bytes) in (4usize..40).prop_flat_map(|b| (Just(b), lines_under(b))),
        needle in "[abAB]{1,3}",
        budget in 1u64..64,
    ) {
        let (_f, lf) = log_with_block(&bytes, block);
        let n = Needle::new(&needle);
        let mut want = Vec::new();
        let mut from = SearchFrom::Start;
        while let Some(at) = model(&bytes, &needle, from) {
            want.push(at);
            from = SearchFrom::After(at);
        }
        prop_assert_eq!(count_all(&lf, &n, budget), want);
    }
}

#[test]
fn a_count_waits_for_the_partial_last_line_and_goes_on_once_it_is_whole() {
    let mut f = tempfile::NamedTempFile::new().expect("tempfile");
    f.write_all(b"gpu a\nb\ngpu c").expect("write");
    let lf = LogFile::open(f.path()).expect("open").expect("exists");
    let n = Needle::new("GPU");
    let mut found = Vec::new();
    let (next, end) = lf.scan_matches(&n, 0, 1 << 20, &mut found).unwrap();
    assert_eq!((found.as_slice(), next, end), (&[0u64][..], 8, true));
    f.write_all(b"\n").expect("write");
    let (next, end) = lf.scan_matches(&n, next, 1 << 20, &mut found).unwrap();
    assert_eq!((found, next, end), (vec![0, 8], 14, true));
}

#[test]
fn match_ranges_are_every_case_blind_non_overlapping_match() {
    let n = Needle::new("aA");
    assert_eq!(n.ranges("xaaaAé aa"), vec![1..3, 3..5, 8..10]);
    assert!(Needle::new("").ranges("abc").is_empty());
}

fn log(text: &str) -> (tempfile::NamedTempFile, LogFile) {
    let mut f = tempfile::NamedTempFile::new().expect("tempfile");
    f.write_all(text.as_bytes()).expect("write");
    let lf = LogFile::open(f.path()).expect("open").expect("exists");
    (f, lf)
}

fn texts(lines: &[Line]) -> Vec<&str> {
    lines.iter().map(|l| l.text.as_str()).collect()
}

#[test]
fn lines_before_a_line_start_end_just_before_it() {
    let (_f, lf) = log("a\nbb\nccc\ndddd\npartial");
    assert_eq!(texts(&lf.lines_before(9, 2).unwrap()), ["bb", "ccc"]);
    assert_eq!(texts(&lf.lines_before(9, 10).unwrap()), ["a", "bb", "ccc"]);
    assert!(lf.lines_before(0, 3).unwrap().is_empty());
}

#[test]
fn lines_from_a_line_start_stop_before_the_partial_last_line() {
    let (_f, lf) = log("a\nbb\nccc\ndddd\npartial");
    let got = lf.lines_from(2, 10).unwrap();
    assert_eq!(texts(&got), ["bb", "ccc", "dddd"]);
    assert_eq!(got[1].offset, 5);
    assert_eq!(texts(&lf.lines_from(0, 1).unwrap()), ["a"]);
}

#[test]
fn search_finds_the_nearest_matching_line_either_way_ignoring_ascii_case() {
    let (_f, lf) = log("x gpu\ny\nz GPU\nw\nv gpu\n");
    let n = Needle::new("gpu");
    // After the line at 8 ("z GPU"): "v gpu" at 16.
    assert_eq!(
        lf.search(&n, SearchFrom::After(8), 1 << 20).unwrap(),
        SearchStep::Found(16)
    );
    assert_eq!(
        lf.search(&n, SearchFrom::Before(8), 1 << 20).unwrap(),
        SearchStep::Found(0)
    );
    assert_eq!(
        lf.search(&n, SearchFrom::After(16), 1 << 20).unwrap(),
        SearchStep::NotFound
    );
    assert_eq!(
        lf.search(&n, SearchFrom::Before(0), 1 << 20).unwrap(),
        SearchStep::NotFound
    );
}

#[test]
fn counting_newlines_in_a_range_counts_exactly_those() {
    let (_f, lf) = log("a\nb\nc\nd\n");
    assert_eq!(lf.count_newlines(0, 8).unwrap(), 4);
    assert_eq!(lf.count_newlines(2, 6).unwrap(), 2);
    assert_eq!(lf.next_line_start(2).unwrap(), Some(4));
}
