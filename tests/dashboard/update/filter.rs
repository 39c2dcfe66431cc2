//! The filter: its terms, its mistakes said, its input line, its highlights.

use super::*;

#[test]
fn the_filter_matches_words_and_state_holder_harness_terms() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('/'));
    type_text(&mut app, "state:stale");
    assert_eq!(row_keys(&app), ["node:beta", "queue/jobs 7"]);
    update(&mut app, code(KeyCode::Enter));
    assert!(app.modes.filter_input().is_none());
    assert_eq!(app.table.rows.len(), 2, "Enter keeps the filter");

    update(&mut app, key('/'));
    for _ in 0.."state:stale".len() {
        update(&mut app, code(KeyCode::Backspace));
    }
    type_text(&mut app, "holder:WORKER-2");
    assert_eq!(row_keys(&app), ["node:alpha"]);
    update(&mut app, code(KeyCode::Esc));
    assert_eq!(app.table.rows.len(), 7, "Esc clears the filter");

    update(&mut app, key('/'));
    type_text(&mut app, "harness:codex release");
    assert_eq!(row_keys(&app), ["build:web"]);
    update(&mut app, code(KeyCode::Enter));
    update(&mut app, code(KeyCode::Esc));
    assert!(
        app.table.filter.is_empty(),
        "Esc outside the input clears it too"
    );

    update(&mut app, key('/'));
    type_text(&mut app, "state:nonsense");
    assert!(app.table.rows.is_empty());
}

#[test]
fn alt_slash_does_not_open_the_filter() {
    use ratatui::crossterm::event::{KeyEvent, KeyModifiers};
    let mut app = fixed_app(80, 24);
    update(
        &mut app,
        Action::Key(KeyEvent::new(KeyCode::Char('/'), KeyModifiers::ALT)),
    );
    assert!(app.modes.filter_input().is_none());
}

#[test]
fn the_same_field_twice_is_either_and_different_fields_are_both() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('/'));
    type_text(&mut app, "state:stale state:corrupted");
    let mut keys = row_keys(&app);
    keys.sort();
    assert_eq!(keys, ["broken", "node:beta", "queue/jobs 7"]);
    type_text(&mut app, " holder:worker-3");
    assert_eq!(row_keys(&app), ["node:beta"]);
}

#[test]
fn an_unknown_state_or_field_says_so_instead_of_nothing_matches() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('/'));
    type_text(&mut app, "state:stael");
    assert!(app.table.rows.is_empty());
    let screen = render(&app);
    assert!(screen.contains("unknown state \"stael\""), "{screen}");

    update(&mut app, code(KeyCode::Esc));
    update(&mut app, key('/'));
    type_text(&mut app, "hodler:worker");
    assert!(app.table.rows.is_empty());
    let screen = render(&app);
    assert!(screen.contains("hodler: is not a field"), "{screen}");
    // Keys with colons are still plain text.
    update(&mut app, code(KeyCode::Esc));
    update(&mut app, key('/'));
    type_text(&mut app, "node:alpha");
    assert_eq!(row_keys(&app), ["node:alpha"]);
}

#[test]
fn the_filter_input_edits_with_a_cursor_and_recalls_history() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('/'));
    type_text(&mut app, "node");
    update(&mut app, code(KeyCode::Home));
    type_text(&mut app, "key:");
    assert_eq!(app.table.filter.text, "key:node");
    update(&mut app, code(KeyCode::End));
    update(&mut app, ctrl('w'));
    assert_eq!(app.table.filter.text, "");
    type_text(&mut app, "beta");
    update(&mut app, code(KeyCode::Enter));
    assert_eq!(row_keys(&app), ["node:beta"]);
    update(&mut app, code(KeyCode::Esc));
    assert!(app.table.filter.is_empty());

    update(&mut app, key('/'));
    update(&mut app, code(KeyCode::Up));
    assert_eq!(app.table.filter.text, "beta", "↑ recalls the last filter");
    assert_eq!(row_keys(&app), ["node:beta"]);
}

#[test]
fn matches_are_highlighted_in_the_table() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('/'));
    type_text(&mut app, "worker-3");
    update(&mut app, code(KeyCode::Enter));
    let buf = render_buffer(&app);
    let screen = render(&app);
    let (y, line) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("pty:worker-3") && l.contains("node:beta"))
        .expect("the row");
    let x = line.find("worker-3").expect("in the line");
    let x = line[..x].chars().count() as u16;
    let hl = buf[(x, y as u16)].style();
    let plain = buf[(x - 2, y as u16)].style();
    assert!(
        hl.add_modifier
            .contains(ratatui::style::Modifier::UNDERLINED),
        "{hl:?}"
    );
    assert!(!plain
        .add_modifier
        .contains(ratatui::style::Modifier::UNDERLINED));
}
