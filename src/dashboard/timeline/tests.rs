use super::*;
use crate::events::tenure::Limits;

fn line(offset: u64, text: &str) -> Line {
    Line {
        text: text.to_string(),
        offset,
        truncated: false,
        claim: None,
    }
}

fn acquire(key: &str, holder: &str, ms: i64) -> String {
    format!(
        r#"{{"ts":"1970-01-01T00:00:00Z","type":"claim_acquired","data":{{"key":"{key}","holder":"{holder}","acquired_at":{ms}}}}}"#
    )
}

#[test]
fn lines_that_came_while_indexing_are_applied_once_the_index_arrives() {
    let mut tl = Timeline::new(0);
    tl.on_lines(&[
        line(10, &acquire("a", "h", 1000)),
        line(90, &acquire("b", "h", 2000)),
    ]);
    let mut whole = TenureIndex::new(Limits::default());
    whole.apply_line(&acquire("a", "h", 1000));
    let mut reply = Reply::Indexed {
        tenures: Box::new(whole),
        lines: 1,
        end: 50,
        file_id: None,
    };
    assert!(tl.on_reply(&mut reply));
    let t = tl.tenures.as_ref().unwrap();
    // `a` (offset 10) was already in the index; `b` (90) was not.
    assert_eq!(t.tenures_of("a").len(), 1);
    assert_eq!(t.tenures_of("b").len(), 1);
    assert_eq!(tl.coverage, Coverage::Whole);
    // From now on, only lines past the index's end are applied.
    assert!(!tl.on_lines(&[line(40, &acquire("c", "h", 3000))]));
    assert!(tl.on_lines(&[line(200, &acquire("c", "h", 3000))]));
}

#[test]
fn a_second_whole_index_replays_the_lines_it_ends_before() {
    let mut tl = Timeline::new(0);
    let empty = |end| Reply::Indexed {
        tenures: Box::new(TenureIndex::new(Limits::default())),
        lines: 0,
        end,
        file_id: None,
    };
    tl.on_reply(&mut empty(0));
    tl.on_lines(&[
        line(0, &acquire("a", "h", 1000)),
        line(90, &acquire("b", "h", 2000)),
    ]);
    // Indexed again up to 50: `a` is in it (here: not, the index is
    // empty, so it stays out), `b` came after and must survive.
    tl.on_reply(&mut empty(50));
    let t = tl.tenures.as_ref().unwrap();
    assert!(t.tenures_of("a").is_empty());
    assert_eq!(t.tenures_of("b").len(), 1);
}

#[test]
fn a_view_older_than_what_the_index_keeps_asks_once_for_that_span_and_shows_it() {
    // An index over its limit: only the recent past is kept.
    let mut ix = TenureIndex::new(Limits {
        max_tenures: 10,
        max_names: 200,
    });
    for i in 0..100 {
        ix.apply_line(&acquire("k", &format!("h{i}"), i * 60_000));
    }
    let h = ix.horizon().expect("over the limit");
    let mut tl = Timeline::new(100 * 60_000);
    tl.on_reply(&mut Reply::Indexed {
        tenures: Box::new(ix),
        lines: 100,
        end: 1000,
        file_id: None,
    });
    tl.span = 10 * 60_000;
    assert_eq!(tl.wanted_window(), None, "the recent past is kept");
    tl.move_cursor(-1000, 10); // 1000 minutes back
    assert!(tl.left() < h);
    let (from, to) = tl.wanted_window().expect("a span to read");
    assert!(from <= tl.left() && tl.right <= to);
    assert_eq!(tl.wanted_window(), None, "asked once");
    let mut old = TenureIndex::new(Limits::default());
    old.apply_line(&acquire("k", "old-holder", tl.cursor));
    tl.on_reply(&mut Reply::Window {
        from,
        to,
        tenures: Box::new(old),
    });
    let shown = tl.shown().unwrap();
    assert_eq!(
        shown.holder_name(shown.tenures_of("k")[0].holder),
        "old-holder"
    );
    tl.follow_now(100 * 60_000);
    let main = tl.shown().unwrap();
    assert!(main.tenures_of("k").len() > 1, "back to the whole index");
}

#[test]
fn the_tail_does_not_replace_a_whole_index() {
    let mut tl = Timeline::new(0);
    let mut reply = Reply::Indexed {
        tenures: Box::new(TenureIndex::new(Limits::default())),
        lines: 0,
        end: 0,
        file_id: None,
    };
    tl.on_reply(&mut reply);
    let mut tail = Reply::TailTenures(Box::new(TenureIndex::new(Limits::default())));
    assert!(!tl.on_reply(&mut tail));
    assert_eq!(tl.coverage, Coverage::Whole);
}

#[test]
fn moving_the_cursor_past_an_edge_slides_the_view_and_stops_following() {
    let mut tl = Timeline::new(1_000_000);
    tl.span = 100_000;
    tl.move_cursor(-200, 100);
    assert!(!tl.follow);
    assert_eq!(tl.cursor, 800_000);
    assert_eq!(tl.left(), 800_000);
    tl.move_cursor(300, 100);
    assert_eq!(tl.right, 1_100_000);
    assert!(!tl.on_tick(2_000_000));
    tl.follow_now(2_000_000);
    assert!(tl.on_tick(2_001_000));
    assert_eq!(tl.right, 2_001_000);
}

#[test]
fn zooming_keeps_the_cursor_where_it_is_on_screen_within_limits() {
    let mut tl = Timeline::new(1_000_000);
    tl.span = 400_000;
    tl.cursor = 900_000; // a quarter of the width from the right
    tl.zoom(true);
    assert_eq!(tl.span, 200_000);
    assert_eq!(tl.right - tl.cursor, 50_000);
    for _ in 0..40 {
        tl.zoom(true);
    }
    assert_eq!(tl.span, MIN_SPAN_MS);
    for _ in 0..80 {
        tl.zoom(false);
    }
    assert_eq!(tl.span, MAX_SPAN_MS);
}

#[test]
fn the_tenure_under_the_cursor_is_the_one_covering_it_else_the_last_before() {
    let mut ix = TenureIndex::new(Limits::default());
    ix.apply_line(&acquire("k", "a", 1000));
    ix.apply_line(&acquire("k", "b", 5000));
    let t = ix.tenures_of("k");
    assert_eq!(ix.holder_name(tenure_at(t, 3000).unwrap().holder), "a");
    assert_eq!(ix.holder_name(tenure_at(t, 9000).unwrap().holder), "b");
    assert!(tenure_at(t, 500).is_none());
}

#[test]
fn selection_is_clamped_and_scrolled_into_view() {
    let mut tl = Timeline::new(0);
    tl.select(50, 10, 4);
    assert_eq!((tl.selected, tl.offset), (9, 6));
    tl.select(-100, 10, 4);
    assert_eq!((tl.selected, tl.offset), (0, 0));
}

fn indexed(tl: &mut Timeline, lines: &[String]) {
    let mut ix = TenureIndex::new(Limits {
        max_tenures: 1000,
        max_names: 1000,
    });
    for l in lines {
        ix.apply_line(l);
    }
    tl.on_reply(&mut Reply::Indexed {
        tenures: Box::new(ix),
        lines: lines.len() as u64,
        end: 1,
        file_id: None,
    });
}

#[test]
fn the_first_screen_fits_the_logs_span_up_to_a_day() {
    let now = 10 * 86_400_000;
    // Two hours of history: the view shows all of it, and a little more.
    let mut tl = Timeline::new(now);
    indexed(&mut tl, &[acquire("a", "h", now - 2 * 3_600_000)]);
    assert!(
        tl.span >= 2 * 3_600_000 && tl.span <= 2 * 3_600_000 * 11 / 10,
        "{}",
        tl.span
    );
    assert!(tl.left() < now - 2 * 3_600_000);
    // Three days: the last day.
    let mut tl = Timeline::new(now);
    indexed(&mut tl, &[acquire("a", "h", now - 3 * 86_400_000)]);
    assert_eq!(tl.span, FIT_MAX_SPAN_MS);
    // Seconds: no narrower than the narrowest zoom.
    let mut tl = Timeline::new(now);
    indexed(&mut tl, &[acquire("a", "h", now - 1000)]);
    assert_eq!(tl.span, MIN_SPAN_MS);
}

#[test]
fn a_width_the_operator_chose_is_never_fitted_over() {
    let now = 10 * 86_400_000;
    let mut tl = Timeline::new(now);
    tl.zoom(true);
    let chosen = tl.span;
    indexed(&mut tl, &[acquire("a", "h", now - 5 * 3_600_000)]);
    assert_eq!(tl.span, chosen);
}
