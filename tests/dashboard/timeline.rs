//! The timeline view: tenures rebuilt from a fixed log, drawn headless at
//! 80×24 and 160×48, and its model's keys.

use crate::common::{log_lines, log_reset_in};
use claimtop::dashboard::testing::Theme;
use claimtop::dashboard::testing::Timeline;
use claimtop::dashboard::testing::{bar_width, draw_timeline as draw, visible_rows};
use claimtop::events::service::Reply;
use claimtop::events::tail::Line;
use claimtop::events::tenure::{Limits, TenureIndex};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// 2027-01-15T08:00:00Z.
const NOW: i64 = 1_800_000_000_000;
const MIN: i64 = 60_000;

fn ts(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn ev(kind: &str, at: i64, data: &str) -> String {
    format!(
        r#"{{"ts":"{}","type":"{kind}","source":"fno-loop","data":{{{data}}}}}"#,
        ts(at)
    )
}

fn acquired(key: &str, holder: &str, at: i64) -> String {
    ev(
        "claim_acquired",
        at,
        &format!(r#""key":"{key}","holder":"{holder}","acquired_at":{at}"#),
    )
}

/// node:gpu: released, reclaimed as stale, force-released, then held;
/// build:web: released twice; a hostile key with an escape sequence.
fn story() -> Vec<String> {
    let t = |m: i64| NOW - m * MIN;
    vec![
        acquired("node:gpu", "codex:w1", t(14)),
        ev(
            "claim_released",
            t(11),
            &format!(
                r#""key":"node:gpu","holder":"codex:w1","acquired_at":{},"duration_held_ms":{}"#,
                t(14),
                3 * MIN
            ),
        ),
        acquired("build:web", "claude:session-4f2a", t(13)),
        acquired("node:gpu", "gemini:cli-7f2e", t(10)),
        ev(
            "claim_stale_reclaimed",
            t(7),
            &format!(
                r#""key":"node:gpu","holder":"claude:w2","acquired_at":{},"previous_holder":"gemini:cli-7f2e""#,
                t(7)
            ),
        ),
        ev(
            "claim_released",
            t(6),
            &format!(
                r#""key":"build:web","holder":"claude:session-4f2a","acquired_at":{},"duration_held_ms":{}"#,
                t(13),
                7 * MIN
            ),
        ),
        ev(
            "claim_force_released",
            t(4),
            r#""key":"node:gpu","holder":"claude:w2","operator":"operator:ana@ops""#,
        ),
        acquired("node:gpu", "codex:w9", t(3)),
        acquired("evil\\u001b[31m", "x", t(2)),
    ]
}

fn timeline(width: u16) -> Timeline {
    let mut ix = TenureIndex::new(Limits::default());
    for l in story() {
        assert!(ix.apply_line(&l), "{l}");
    }
    let mut tl = Timeline::new(NOW);
    let mut reply = Reply::Indexed {
        tenures: Box::new(ix),
        lines: 9,
        end: 4096,
        file_id: None,
    };
    tl.on_reply(&mut reply);
    // Select node:gpu (rows sort by key) and put the cursor in its
    // reclaimed tenure.
    tl.select(2, 3, 10);
    tl.move_cursor(0, bar_width(width));
    let cols = (8 * MIN) / tl.cell_ms(bar_width(width));
    tl.move_cursor(-cols, bar_width(width));
    tl
}

fn render_timeline(tl: &Timeline, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| {
        draw(
            f,
            f.area(),
            tl,
            &|_: &str| true,
            NOW,
            false,
            &Theme { color: false },
        )
    })
    .unwrap();
    let buf = term.backend().buffer().clone();
    let mut out = String::new();
    for y in 0..h {
        for x in 0..w {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

#[test]
fn each_tenure_is_a_bar_shaped_by_how_it_ended_with_the_selected_ones_facts_below() {
    for (w, h) in [(80, 24), (160, 48)] {
        let tl = timeline(w);
        let screen = render_timeline(&tl, w, h);
        assert!(
            screen.contains("reclaimed as stale by claude:w2"),
            "{screen}"
        );
        assert!(screen.contains("holder gemini:cli-7f2e"), "{screen}");
        assert!(!screen.contains('\u{1b}'));
        insta::assert_snapshot!(format!("timeline_{w}x{h}"), screen);
    }
}

#[test]
fn the_view_stays_live_as_events_arrive() {
    let mut tl = timeline(160);
    let line = Line {
        text: acquired("deploy:prod", "codex:w4", NOW - MIN),
        offset: 5000,
        truncated: false,
        claim: None,
    };
    assert!(tl.on_lines(&[line]));
    let screen = render_timeline(&tl, 160, 48);
    assert!(screen.contains("deploy:prod"), "{screen}");
}

#[test]
fn zoom_out_shows_more_time_per_column() {
    let mut tl = timeline(80);
    let before = tl.cell_ms(bar_width(80));
    tl.zoom(false);
    assert_eq!(tl.cell_ms(bar_width(80)), before * 2);
    assert!(visible_rows(24) >= 10);
}

// ------------------------------------------------------------ in the app

use crate::common::{code, fixed_app, key, render, some_events, type_text};
use crate::effects::{asked_log, clear_log, pop_log, update};
use claimtop::dashboard::testing::Overlay;
use claimtop::dashboard::testing::Pane;
use claimtop::dashboard::testing::{Action, App};
use claimtop::events::backward::SearchFrom;
use claimtop::events::service::{Anchor, Page, Request};
use ratatui::crossterm::event::KeyCode;

/// The fixed dashboard, its events log indexed (empty index: every line the
/// follower brought is new to it).
fn indexed_app(w: u16, h: u16) -> App {
    let mut app = fixed_app(w, h);
    let reply = Reply::Indexed {
        tenures: Box::new(TenureIndex::new(Limits::default())),
        lines: 120,
        end: 0,
        file_id: None,
    };
    update(&mut app, Action::Log(Box::new(reply)));
    app
}

#[test]
fn t_opens_the_timeline_over_the_whole_screen_and_esc_closes_it() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = indexed_app(w, h);
        update(&mut app, key('t'));
        assert_eq!(app.modes.overlay(), Some(Overlay::Timeline));
        let screen = render(&app);
        for k in ["build:web", "lint", "node:beta"] {
            assert!(screen.contains(k), "{screen}");
        }
        insta::assert_snapshot!(format!("timeline_app_{w}x{h}"), screen);
        update(&mut app, code(KeyCode::Esc));
        assert_eq!(app.modes.overlay(), None);
    }
}

#[test]
fn the_timeline_rows_follow_the_claims_filter() {
    let mut app = indexed_app(160, 48);
    update(&mut app, key('/'));
    type_text(&mut app, "build");
    update(&mut app, code(KeyCode::Enter));
    update(&mut app, key('t'));
    let screen = render(&app);
    assert!(screen.contains("build:web"), "{screen}");
    assert!(!screen.contains("lint"), "{screen}");
    assert!(screen.contains("1 keys"), "{screen}");
}

#[test]
fn timeline_keys_move_the_cursor_zoom_and_return_to_now() {
    let mut app = indexed_app(160, 48);
    update(&mut app, key('t'));
    let span = app.timeline.span;
    update(&mut app, key('h'));
    assert!(!app.timeline.follow);
    assert!(app.timeline.cursor < app.now);
    update(&mut app, key('+'));
    assert_eq!(app.timeline.span, span / 2);
    update(&mut app, key('-'));
    update(&mut app, key('-'));
    assert_eq!(app.timeline.span, span * 2);
    update(&mut app, key('G'));
    assert!(app.timeline.follow);
    assert_eq!(app.timeline.cursor, app.now);
    // `h` moves time here; it does not open the hazards.
    assert_eq!(app.modes.overlay(), Some(Overlay::Timeline));
    update(&mut app, key('t'));
    assert_eq!(app.modes.overlay(), None);
}

#[test]
fn the_timeline_in_the_app_stays_live_as_events_arrive() {
    let mut app = indexed_app(160, 48);
    update(&mut app, key('t'));
    let mut l = some_events().remove(1);
    l.text = l.text.replace("build:web", "deploy:prod");
    l.offset = 10_000;
    assert!(update(&mut app, log_lines(vec![l])).redraw);
    assert!(render(&app).contains("deploy:prod"));
}

#[test]
fn events_search_asks_the_service_then_lands_on_the_match_and_shows_its_raw_json() {
    let mut app = indexed_app(80, 24);
    app.focus = Pane::Events;
    update(&mut app, key('/'));
    type_text(&mut app, "lint");
    assert!(render(&app).contains("search: lint"));
    update(&mut app, code(KeyCode::Enter));
    let Some(Request::Search {
        id, needle, from, ..
    }) = pop_log()
    else {
        panic!("{:?}", asked_log())
    };
    assert_eq!(
        (needle.text(), from),
        ("lint", SearchFrom::Before(u64::MAX))
    );
    let found = Reply::Search {
        id,
        found: Some(300),
        wrapped: false,
    };
    update(&mut app, Action::Log(Box::new(found)));
    assert_eq!(
        pop_log(),
        Some(Request::Page {
            anchor: Anchor::At(300),
            before: claimtop::dashboard::testing::PAGE,
            after: claimtop::dashboard::testing::PAGE + 1,
        })
    );
    let mut lines = some_events();
    for (i, l) in lines.iter_mut().enumerate() {
        l.offset = i as u64 * 100;
    }
    let page = Page {
        lines,
        anchor: 3,
        first_line_no: Some(41),
        at_start: false,
        at_end: true,
        file_id: None,
    };
    // The service answers pages in the order asked: the log's end, which
    // `/` opened, comes before the match's.
    let end = Page {
        anchor: 0,
        first_line_no: Some(44),
        ..page.clone()
    };
    update(&mut app, Action::Log(Box::new(Reply::Page(end))));
    update(&mut app, Action::Log(Box::new(Reply::Page(page))));
    assert_eq!(app.events.browse.position(), Some(45));
    update(&mut app, key('v'));
    let screen = render(&app);
    assert!(screen.contains("\"duration_held_ms\": 480000"), "{screen}");
    insta::assert_snapshot!("events_raw_json_80x24", screen);
    update(&mut app, code(KeyCode::Esc));
    assert!(!app.events.browse.raw);
    // N asks for the previous (older) match, from the selected line.
    update(&mut app, key('N'));
    assert!(matches!(
        pop_log(),
        Some(Request::Search {
            from: SearchFrom::Before(300),
            ..
        })
    ));
}

#[test]
fn the_wheel_over_the_events_pane_browses_the_log_too() {
    use ratatui::crossterm::event::{KeyModifiers, MouseEvent, MouseEventKind};
    let mut app = indexed_app(160, 48);
    let a = claimtop::dashboard::testing::areas_of(app.size, app.look()).unwrap();
    let wheel = |kind| {
        Action::Mouse(MouseEvent {
            kind,
            column: a.events.x + 2,
            row: a.events.y + 2,
            modifiers: KeyModifiers::NONE,
        })
    };
    update(&mut app, wheel(MouseEventKind::ScrollUp));
    assert!(app.modes.browsing());
    let mut lines = some_events();
    for (i, l) in lines.iter_mut().enumerate() {
        l.offset = i as u64 * 100;
    }
    let page = Page {
        lines,
        first_line_no: Some(0),
        at_start: true,
        at_end: true,
        ..Page::default()
    };
    update(&mut app, Action::Log(Box::new(Reply::Page(page))));
    assert_eq!(app.events.browse.position(), Some(5));
    update(&mut app, wheel(MouseEventKind::ScrollUp));
    assert_eq!(app.events.browse.position(), Some(2));
}

#[test]
fn a_paused_timeline_holds_still_while_the_clock_moves() {
    let mut app = indexed_app(160, 48);
    update(&mut app, key('t'));
    let right = app.timeline.right;
    update(&mut app, key('p'));
    assert!(app.paused());
    let later = app.now + 60_000;
    update(&mut app, Action::Tick(later));
    assert_eq!(app.timeline.right, right);
    update(&mut app, key('p'));
    update(&mut app, Action::Tick(later + 1000));
    assert_eq!(app.timeline.right, later + 1000);
}

#[test]
fn a_log_reset_while_browsing_reindexes_before_asking_for_a_page_and_forgets_the_tenures() {
    let mut app = indexed_app(160, 48);
    app.focus = Pane::Events;
    update(&mut app, key('k'));
    clear_log();
    update(&mut app, log_reset_in(0));
    // The service answers in order: the page must come from the new file.
    assert!(
        matches!(
            asked_log().as_slice(),
            [
                Request::Reindex,
                Request::Page {
                    anchor: Anchor::End,
                    ..
                }
            ]
        ),
        "{:?}",
        asked_log()
    );
    assert!(app.timeline.tenures.is_none());
}
