//! A log's history through the seam: pages from its start, its end and a
//! mark, searches each way, and a count that goes on where it stopped —
//! the same answers whichever store keeps the log.

use super::{take, Target};
use crate::under_test::StoreUnderTest;
use claimtop::events::backward::{Needle, SearchFrom, SearchStep};
use claimtop::events::history::{Anchor, History, ScanAt};
use claimtop::events::range::Range;
use claimtop::events::tail::Line;
use claimtop::store::StoreError;

/// How many claims (one event each) a case writes.
const N: usize = 30;

fn key(i: usize) -> String {
    format!("h{i:02}")
}

fn key_of(line: &Line) -> String {
    let ev = line.parse().expect("an event line");
    ev.key().unwrap_or_default().to_string()
}

fn keys(lines: &[Line]) -> Vec<String> {
    lines.iter().map(key_of).collect()
}

fn expect(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(key).collect()
}

/// `N` claims taken, one event each, and the target's own log's history;
/// None (said on stderr) where the store keeps no history of it.
fn written(u: &dyn StoreUnderTest, case: &str) -> Option<Box<dyn History>> {
    let t = Target::of(u);
    let b = t.backend(u);
    for i in 0..N {
        take(b, &key(i), "hist");
    }
    let audit = b.audit().expect("every store under test keeps a log");
    let logs = audit.logs().expect("its logs");
    let (_, log) = logs.first().expect("a log");
    match audit.history(log) {
        Ok(h) => Some(h),
        Err(StoreError::Unsupported(why)) => {
            eprintln!("{case}: not run on {} ({why})", u.name());
            None
        }
        Err(e) => panic!("the history: {e}"),
    }
}

fn search(h: &mut dyn History, text: &str, from: SearchFrom) -> Option<u64> {
    let needle = Needle::new(text);
    let mut from = h.search_from(from)?;
    loop {
        match h.search(&needle, from).expect("a search step") {
            SearchStep::Found(m) => return Some(m),
            SearchStep::NotFound => return None,
            SearchStep::Continue(next) => from = next,
        }
    }
}

fn key_at(h: &mut dyn History, mark: u64) -> String {
    let p = h.page(Anchor::At(mark), 0, 1).expect("a page");
    key_of(&p.lines[0])
}

pub fn history_pages_from_its_start_its_end_and_a_mark(u: &dyn StoreUnderTest) {
    let Some(mut h) = written(u, "history_pages_from_its_start_its_end_and_a_mark") else {
        return;
    };
    h.start().expect("start");
    let p = h.page(Anchor::Start, 0, 5).expect("the first page");
    assert_eq!(keys(&p.lines), expect(0..5));
    assert!(p.at_start && !p.at_end, "{p:?}");
    let p = h.page(Anchor::End, 5, 0).expect("the last page");
    assert_eq!(keys(&p.lines), expect(N - 5..N));
    assert!(p.at_end && !p.at_start, "{p:?}");
    assert_eq!(p.anchor, 5);
    let all = h.page(Anchor::Start, 0, N).expect("every entry");
    let mark = all.lines[10].offset;
    let p = h.page(Anchor::At(mark), 2, 3).expect("around a mark");
    assert_eq!(keys(&p.lines), expect(8..13));
    assert_eq!(p.anchor, 2);
}

pub fn history_search_finds_older_and_newer(u: &dyn StoreUnderTest) {
    let Some(mut h) = written(u, "history_search_finds_older_and_newer") else {
        return;
    };
    h.start().expect("start");
    let found = search(&mut *h, "\"H17\"", SearchFrom::Before(u64::MAX)).expect("found");
    assert_eq!(
        key_at(&mut *h, found),
        "h17",
        "matched without regard to case"
    );
    let older = search(&mut *h, "\"h03\"", SearchFrom::Before(found)).expect("older");
    assert_eq!(key_at(&mut *h, older), "h03");
    assert_eq!(search(&mut *h, "\"h17\"", SearchFrom::Before(found)), None);
    let from = h.page(Anchor::Start, 0, 6).expect("a page").lines[5].offset;
    let newer = search(&mut *h, "\"h17\"", SearchFrom::After(from));
    assert_eq!(newer, Some(found), "the same entry, found forward");
    assert_eq!(search(&mut *h, "nowhere", SearchFrom::After(from)), None);
}

/// Count the entries containing `text` from `at` to the end of what is
/// there; where a later count goes on from.
fn count(h: &mut dyn History, text: &str, mut at: ScanAt) -> (usize, ScanAt) {
    let needle = Needle::new(text);
    let mut found = Vec::new();
    loop {
        let step = h
            .count_matches(&needle, &at, &mut found)
            .expect("a count step");
        at = step.next;
        if step.at_end {
            return (found.len(), at);
        }
    }
}

pub fn count_matches_counts_every_match_and_goes_on_where_it_stopped(u: &dyn StoreUnderTest) {
    let case = "count_matches_counts_every_match_and_goes_on_where_it_stopped";
    let Some(mut h) = written(u, case) else {
        return;
    };
    h.start().expect("start");
    let (n, at) = count(&mut *h, "\"hist\"", ScanAt::default());
    assert_eq!(n, N);
    let t = Target::of(u);
    take(t.backend(u), "later", "hist");
    let (more, _) = count(&mut *h, "\"hist\"", at);
    assert_eq!(more, 1, "only what was written after");
}

/// The keys of the entries a range read visits, in order, and their marks.
fn read(h: &mut dyn History, range: &Range) -> (Vec<String>, Vec<u64>) {
    let (mut keys, mut marks) = (Vec::new(), Vec::new());
    let mut buf = Vec::new();
    h.read_range(range, &mut |e| {
        e.read_into(&mut buf)?;
        let ev = claimtop::events::parse_event(std::str::from_utf8(&buf).expect("utf-8"))
            .expect("an event");
        keys.push(ev.key().unwrap_or_default().to_string());
        marks.push(e.mark);
        Ok(())
    })
    .expect("a range read");
    (keys, marks)
}

pub fn a_range_read_visits_the_window_whole_in_order_and_an_entry_by_its_mark(
    u: &dyn StoreUnderTest,
) {
    let case = "a_range_read_visits_the_window_whole_in_order_and_an_entry_by_its_mark";
    let Some(mut h) = written(u, case) else {
        return;
    };
    let (all, marks) = read(&mut *h, &Range::default());
    assert_eq!(all, expect(0..N), "every entry, oldest first");
    assert!(marks.windows(2).all(|w| w[0] < w[1]), "{marks:?}");
    // `last` is a hint: whatever comes, the last entries are among it.
    let (tail, _) = read(
        &mut *h,
        &Range {
            last: Some(5),
            ..Range::default()
        },
    );
    assert!(tail.ends_with(&expect(N - 5..N)), "{tail:?}");
    let now = claimtop::time::now_ms();
    let (later, _) = read(
        &mut *h,
        &Range {
            since: Some(now + 3_600_000),
            ..Range::default()
        },
    );
    // A window's start is found within the writers' clock slack: entries
    // before it may come (the visitor judges each), never out of order.
    assert!(all.ends_with(&later), "{later:?}");
    let (from_before, _) = read(
        &mut *h,
        &Range {
            since: Some(now - 3_600_000),
            ..Range::default()
        },
    );
    assert_eq!(
        from_before,
        expect(0..N),
        "everything was written since an hour ago"
    );
    let mut seen = Vec::new();
    let found = h
        .read_at(marks[7], &mut |e| {
            e.read_into(&mut seen)?;
            Ok(())
        })
        .expect("a read at a mark");
    assert!(found, "the entry marked {} is there", marks[7]);
    let ev = claimtop::events::parse_event(std::str::from_utf8(&seen).expect("utf-8"))
        .expect("an event");
    assert_eq!(ev.key(), Some(key(7).as_str()));
}
