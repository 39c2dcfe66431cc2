//! The events history over etcd: pages across range and checkpoint
//! boundaries, a search each way, scans of unevenly spread keys, a pass
//! whose revision is compacted away, a time window read again.

use super::etcd_common::{event_line, put_events, Etcd};
use claimtop::events::backward::{Needle, SearchFrom, SearchStep};
use claimtop::events::history::{Anchor, History, Log, ScanAt, Start, Step};
use claimtop::store::Audit;
use serde_json::json;

const BASE: i64 = 1_764_547_200_000; // 2025-12-01T00:00:00Z

/// `n` events one second apart, each naming itself `e00000`, `e00001`...
fn plant(etcd: &Etcd, prefix: &str, n: usize) {
    let times: Vec<i64> = (0..n).map(|i| BASE + i as i64 * 1000).collect();
    plant_at(etcd, prefix, &times);
}

/// An event at each time, each naming itself by its place in `times`.
fn plant_at(etcd: &Etcd, prefix: &str, times: &[i64]) {
    let lines: Vec<(i64, String)> = times
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            let data = json!({"key": format!("k{}", i % 7), "holder": format!("e{i:05}"),
                              "pid": 1, "host": "h", "acquired_at": at, "expires_at": null});
            (at, event_line(at, "claim_acquired", data))
        })
        .collect();
    put_events(etcd, prefix, &lines);
}

/// The `e00000` names of a page's lines.
fn names(lines: &[claimtop::events::tail::Line]) -> Vec<String> {
    lines
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(&l.text).expect("a JSON line");
            v["data"]["holder"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

fn expect(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("e{i:05}")).collect()
}

/// Run the pass to its end; the count and the end mark it reports.
fn pass(h: &mut dyn History) -> (u64, u64) {
    loop {
        match h.step().expect("a step") {
            Step::Indexed { lines, end, .. } => return (lines, end),
            Step::Restart => panic!("restarted"),
            _ => {}
        }
    }
}

fn search(h: &mut dyn History, text: &str, from: SearchFrom) -> Option<u64> {
    let needle = Needle::new(text);
    let mut from = h.search_from(from).expect("something to search");
    loop {
        match h.search(&needle, from).expect("a search step") {
            SearchStep::Found(m) => return Some(m),
            SearchStep::NotFound => return None,
            SearchStep::Continue(next) => from = next,
        }
    }
}

fn holder_at(h: &mut dyn History, mark: u64) -> String {
    let p = h.page(Anchor::At(mark), 0, 1).expect("a page");
    names(&p.lines)[0].clone()
}

#[test]
fn an_empty_prefix_has_nothing_to_index_page_or_find() {
    let Some(etcd) = Etcd::single() else { return };
    let store = etcd.store("/hempty");
    let mut h = store.history(&Log::Own).expect("a history");
    assert!(matches!(h.start().expect("start"), Start::Nothing));
    assert!(!h.indexing());
    let p = h.page(Anchor::End, 10, 0).expect("a page");
    assert!(p.lines.is_empty() && p.at_start && p.at_end, "{p:?}");
    let p = h.page(Anchor::Start, 0, 10).expect("a page");
    assert!(p.lines.is_empty() && p.at_end, "{p:?}");
    assert_eq!(search(&mut *h, "x", SearchFrom::Before(u64::MAX)), None);
    assert!(matches!(h.step().expect("a step"), Step::Idle));
    // An event comes: the next look counts it.
    plant(&etcd, "/hempty", 1);
    assert!(matches!(
        h.step().expect("a step"),
        Step::Counted { lines: 1, .. }
    ));
}

#[test]
fn pages_cross_range_page_and_checkpoint_boundaries_in_order_before_and_after_the_pass() {
    let Some(etcd) = Etcd::single() else { return };
    plant(&etcd, "/hpages", 2500);
    let store = etcd.store("/hpages");
    let mut h = store.history(&Log::Own).expect("a history");
    assert!(matches!(h.start().expect("start"), Start::Tail(t) if !t.is_empty()));
    for round in ["before the pass", "after it"] {
        let p = h.page(Anchor::Start, 0, 1001).expect("first page");
        assert_eq!(names(&p.lines), expect(0..1001), "{round}");
        assert_eq!(p.first_line_no, Some(0));
        assert!(p.at_start && !p.at_end);
        let p = h.page(Anchor::End, 1001, 0).expect("last page");
        assert_eq!(names(&p.lines), expect(1499..2500), "{round}");
        assert_eq!((p.first_line_no, p.anchor), (Some(1499), 1001));
        assert!(p.at_end && !p.at_start);
        // Around a mark handed out above: 600 before it, 601 from it.
        let mark = p.lines[1].offset; // e01500
        let p = h.page(Anchor::At(mark), 600, 601).expect("a middle page");
        assert_eq!(names(&p.lines), expect(900..2101), "{round}");
        assert_eq!((p.first_line_no, p.anchor), (Some(900), 600));
        // A time: the first event at or after it.
        let p = h
            .page(Anchor::Time(BASE + 1234 * 1000), 1, 2)
            .expect("a time");
        assert_eq!(names(&p.lines), expect(1233..1236), "{round}");
        assert_eq!(p.anchor, 1);
        if round == "before the pass" {
            let (lines, end) = pass(&mut *h);
            assert_eq!(lines, 2500);
            assert!(end > mark, "the end mark is past every event read");
        }
    }
}

#[test]
fn a_search_finds_the_nearest_match_each_way_before_and_after_the_pass() {
    let Some(etcd) = Etcd::single() else { return };
    plant(&etcd, "/hsearch", 3000);
    let store = etcd.store("/hsearch");
    let mut h = store.history(&Log::Own).expect("a history");
    h.start().expect("start");
    for round in 0..2 {
        let found = search(&mut *h, "E00017", SearchFrom::Before(u64::MAX)).expect("found");
        assert_eq!(holder_at(&mut *h, found), "e00017", "round {round}");
        // Older than it: nothing; newer from e00010: it again.
        assert_eq!(search(&mut *h, "e00017", SearchFrom::Before(found)), None);
        let from = h.page(Anchor::Start, 0, 11).expect("a page").lines[10].offset;
        let again = search(&mut *h, "e00017", SearchFrom::After(from));
        assert_eq!(again, Some(found));
        // Across every page boundary forward, to the last event.
        let last = search(&mut *h, "e02999", SearchFrom::After(from)).expect("the last");
        assert_eq!(holder_at(&mut *h, last), "e02999");
        assert_eq!(search(&mut *h, "nowhere", SearchFrom::After(from)), None);
        if round == 0 {
            pass(&mut *h);
        }
    }
}

/// Count the entries containing `text` from the start, to the end of
/// what is there; where a later count goes on from.
fn count(h: &mut dyn History, text: &str, mut at: ScanAt) -> (u64, ScanAt) {
    let needle = Needle::new(text);
    let mut found = Vec::new();
    loop {
        let step = h
            .count_matches(&needle, &at, &mut found)
            .expect("a count step");
        at = step.next;
        if step.at_end {
            return (found.len() as u64, at);
        }
    }
}

#[test]
fn scans_read_every_key_however_unevenly_the_keys_spread() {
    let Some(etcd) = Etcd::single() else { return };
    // A second apart, then a burst within one millisecond, then a few
    // days apart: ranges guessed from one stretch are wrong in the next.
    let mut times: Vec<i64> = (0..1500).map(|i| BASE + i * 1000).collect();
    times.extend(std::iter::repeat_n(BASE + 2_000_000, 1500));
    times.extend((1..=10).map(|i| BASE + i * 300_000_000));
    plant_at(&etcd, "/huneven", &times);
    let store = etcd.store("/huneven");
    let mut h = store.history(&Log::Own).expect("a history");
    h.start().expect("start");
    // Before the pass: back from the end to the very first event.
    let first = search(&mut *h, "e00000", SearchFrom::Before(u64::MAX)).expect("found");
    assert_eq!(holder_at(&mut *h, first), "e00000");
    let (n, at) = count(&mut *h, "claim_acquired", ScanAt::default());
    assert_eq!(n, 3010);
    assert_eq!(pass(&mut *h).0, 3010);
    let last = search(&mut *h, "e03009", SearchFrom::After(first)).expect("the last");
    assert_eq!(holder_at(&mut *h, last), "e03009");
    // What is written after the count reached the end is counted from
    // where it stopped, and only that.
    plant_at(&etcd, "/huneven", &[BASE + 11 * 300_000_000]);
    assert_eq!(count(&mut *h, "claim_acquired", at).0, 1);
}

#[test]
fn a_pass_whose_revision_is_compacted_away_starts_over_and_counts_what_is_there() {
    let Some(etcd) = Etcd::single() else { return };
    plant(&etcd, "/hcompact", 2500);
    let store = etcd.store("/hcompact");
    let mut h = store.history(&Log::Own).expect("a history");
    h.start().expect("start");
    // The first page pins the pass's revision.
    assert!(h.indexing());
    assert!(!matches!(h.step().expect("a step"), Step::Indexed { .. }));
    plant(&etcd, "/hcompact", 10);
    let (rt, mut raw) = etcd.client();
    let rev = rt
        .block_on(raw.get("/hcompact/", None))
        .expect("a read")
        .header()
        .map(|h| h.revision())
        .expect("a revision");
    rt.block_on(raw.compact(rev, None)).expect("compact");
    assert!(matches!(h.step().expect("a step"), Step::Restart));
    h.start().expect("start again");
    assert_eq!(pass(&mut *h).0, 2510);
}

#[test]
fn a_time_window_is_read_again_from_the_checkpoints_around_it() {
    let Some(etcd) = Etcd::single() else { return };
    // More events than a log read whole (16 000), so the window's
    // ends come from the checkpoints.
    plant(&etcd, "/hwindow", 17_000);
    let store = etcd.store("/hwindow");
    let mut h = store.history(&Log::Own).expect("a history");
    h.start().expect("start");
    pass(&mut *h);
    let from = BASE + 2000 * 1000;
    let w = h.window(from, from + 10_000).expect("a window");
    let holders: Vec<String> = (0..7)
        .flat_map(|k| {
            w.tenures_of(&format!("k{k}"))
                .iter()
                .map(|t| w.holder_name(t.holder).to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    for i in 2000..2010 {
        assert!(holders.contains(&format!("e{i:05}")), "e{i:05}");
    }
    assert!(
        w.len() < 3000,
        "only the window's part was read: {}",
        w.len()
    );
}
