//! The events pane's search through the update and the view: Enter counts
//! and looks back from the cursor, `n` goes towards newer lines and `N`
//! back, the wrap is said on the status line, the title counts the
//! matches, and every match on screen is lit without un-escaping anything.

use crate::common::{code, fixed_app, key, log_lines, render, render_buffer, type_text};
use crate::effects::{asked_log, clear_log, update};
use claimtop::dashboard::testing::{Action, App, Pane};
use claimtop::events::backward::SearchFrom;
use claimtop::events::service::{Matches, Page, Reply, Request};
use claimtop::events::tail::Line;
use ratatui::crossterm::event::KeyCode;
use ratatui::style::{Color, Modifier};

fn line(i: u64, key: &str) -> Line {
    Line {
        text: format!(
            r#"{{"ts":"2027-01-15T07:{:02}:00Z","type":"claim_acquired","data":{{"key":"{key}","holder":"w{i}"}}}}"#,
            i % 60
        ),
        offset: i * 100,
        truncated: false,
        claim: None,
    }
}

/// Browsing a window of ten lines, the last of the log, with the cursor
/// on the last; line 3 has a key with an escape sequence in it.
fn browsing() -> App {
    let mut app = fixed_app(160, 48);
    app.focus = Pane::Events;
    update(&mut app, key('k'));
    let lines = (0..10)
        .map(|i| match i {
            3 => line(i, "gpu\\u001b[31mred"),
            _ => line(i, &format!("gpu-{i}")),
        })
        .collect();
    let page = Page {
        lines,
        anchor: 10,
        first_line_no: Some(0),
        at_start: true,
        at_end: true,
        file_id: None,
    };
    update(&mut app, Action::Log(Box::new(Reply::Page(page))));
    clear_log();
    app
}

fn search(app: &mut App, text: &str) -> (u64, u64) {
    update(app, key('/'));
    type_text(app, text);
    update(app, code(KeyCode::Enter));
    let asked = asked_log();
    let count = asked.iter().find_map(|r| match r {
        Request::Count { id, needle } if needle.text() == text => Some(*id),
        _ => None,
    });
    let search = asked.iter().find_map(|r| match r {
        Request::Search {
            id,
            from,
            wrap: true,
            ..
        } => Some((*id, *from)),
        _ => None,
    });
    clear_log();
    let (Some(count), Some((id, from))) = (count, search) else {
        panic!("{asked:?}")
    };
    assert_eq!(
        from,
        SearchFrom::Before(u64::MAX),
        "the cursor's own line first"
    );
    (id, count)
}

fn reply(app: &mut App, r: Reply) {
    update(app, Action::Log(Box::new(r)));
}

fn last_search() -> (u64, SearchFrom) {
    let asked = asked_log();
    clear_log();
    asked
        .iter()
        .find_map(|r| match r {
            Request::Search { id, from, .. } => Some((*id, *from)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{asked:?}"))
}

#[test]
fn the_title_counts_the_matches_while_the_service_counts_then_says_which_one() {
    let mut app = browsing();
    let (id, count) = search(&mut app, "gpu");
    reply(
        &mut app,
        Reply::Search {
            id,
            found: Some(900),
            wrapped: false,
        },
    );
    let m = |counted, done, rank| Matches {
        id: count,
        counted,
        done,
        rank,
    };
    reply(&mut app, Reply::Matches(m(12, false, None)));
    let screen = render(&app);
    assert!(screen.contains("match ? of ≥12…"), "{screen}");
    reply(&mut app, Reply::Matches(m(40, false, Some(33))));
    assert!(render(&app).contains("match 33 of ≥40…"));
    reply(&mut app, Reply::Matches(m(41, true, Some(33))));
    assert!(render(&app).contains("match 33 of 41"));
    // Off the match, the count alone.
    update(&mut app, key('k'));
    assert!(render(&app).contains("41 matches"), "{}", render(&app));
}

#[test]
fn n_asks_for_newer_lines_and_capital_n_for_older_and_a_wrap_is_said() {
    let mut app = browsing();
    let (id, _) = search(&mut app, "gpu");
    reply(
        &mut app,
        Reply::Search {
            id,
            found: Some(900),
            wrapped: false,
        },
    );
    clear_log();
    update(&mut app, key('n'));
    let (id, from) = last_search();
    assert_eq!(from, SearchFrom::After(900));
    reply(
        &mut app,
        Reply::Search {
            id,
            found: Some(0),
            wrapped: true,
        },
    );
    assert!(
        render(&app).contains("search wrapped to the top"),
        "{}",
        render(&app)
    );
    update(&mut app, key('N'));
    let (id, from) = last_search();
    assert_eq!(
        from,
        SearchFrom::Before(900),
        "from the cursor, which stayed"
    );
    reply(
        &mut app,
        Reply::Search {
            id,
            found: Some(900),
            wrapped: true,
        },
    );
    assert!(render(&app).contains("search wrapped to the bottom"));
}

#[test]
fn no_match_at_all_keeps_its_message_in_the_title() {
    let mut app = browsing();
    let (id, _) = search(&mut app, "nowhere");
    reply(
        &mut app,
        Reply::Search {
            id,
            found: None,
            wrapped: false,
        },
    );
    assert!(render(&app).contains("no line matches \"nowhere\""));
}

#[test]
fn every_match_on_screen_is_lit_and_escapes_stay_escaped() {
    let mut app = browsing();
    // "[31m" follows an ESC, shown as `\e`: lighting it cuts the span
    // right after the escape, which must stay escaped.
    for needle in ["gpu", "[31m"] {
        search(&mut app, needle);
        let buf = render_buffer(&app);
        let screen = render(&app);
        assert!(!screen.contains('\u{1b}'), "{screen:?}");
        let lit = |y: u16, x: u16| {
            let c = &buf[(x, y)];
            c.bg == Color::Yellow || c.modifier.contains(Modifier::BOLD | Modifier::UNDERLINED)
        };
        let rows: Vec<u16> = (0..buf.area.height)
            .filter(|&y| {
                let text: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
                text.contains("acquired") && text.contains(needle)
            })
            .collect();
        let want = if needle == "gpu" { 10 } else { 1 };
        assert_eq!(rows.len(), want, "{needle}: {screen}");
        for y in rows {
            let text: Vec<String> = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            let joined: String = text.concat();
            let at = joined.find(needle).expect("shown");
            let x = joined[..at].chars().count() as u16;
            assert!(lit(y, x), "{needle} lit on row {y}: {joined}");
            assert!(!lit(y, 0), "only the match is lit on row {y}");
        }
        update(&mut app, code(KeyCode::Esc));
    }
}

#[test]
fn browsing_while_paused_says_paused_and_how_many_arrived() {
    let mut app = browsing();
    update(&mut app, key('p'));
    update(
        &mut app,
        log_lines(vec![line(20, "new-1"), line(21, "new-2")]),
    );
    let screen = render(&app);
    assert!(screen.contains("paused · 2 new"), "{screen}");
}
