//! The help and the overlays: opening and closing, scrolling to their last
//! line, the legend, the too-small screen.

use super::*;

#[test]
fn help_and_hazards_overlays_open_and_close() {
    let mut app = fixed_app(80, 24);
    update(&mut app, key('?'));
    assert_eq!(app.modes.overlay(), Some(Overlay::Help));
    update(&mut app, code(KeyCode::Esc));
    assert_eq!(app.modes.overlay(), None);
    update(&mut app, key('h'));
    assert_eq!(app.modes.overlay(), Some(Overlay::Hazards));
    // The mutex corpse, the corrupted file, the foreign claim.
    assert_eq!(app.hazards().len(), 3);
    assert_eq!(app.hazard_count(), 3);
    update(&mut app, key('h'));
    assert_eq!(app.modes.overlay(), None);
}

#[test]
fn on_the_too_small_screen_no_key_acts_unseen() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "broken");
    update(&mut app, Action::Resize(40, 10));
    for k in ['g', 'F', 'y', 'r', 'n', 'a', 'p', 'h', '/'] {
        update(&mut app, key(k));
    }
    assert!(app.modes.dialog().is_none(), "{:?}", app.modes.dialog());
    assert!(ops().is_empty());
    assert!(!app.paused());
    assert!(app.modes.overlay().is_none());
    assert!(app.modes.filter_input().is_none());
    assert_eq!(selected_key(&app), "broken", "g did not move the selection");

    update(&mut app, key('?'));
    assert_eq!(app.modes.overlay(), Some(Overlay::Help));
    assert!(render(&app).contains("help"), "{}", render(&app));
    update(&mut app, key('?'));
    // The operator holds db:migrate: q asks, and the question is visible.
    update(&mut app, key('q'));
    assert!(!quit());
    assert!(render(&app).contains("release them"), "{}", render(&app));
    update(&mut app, key('k'));
    assert!(quit());
}

#[test]
fn on_the_too_small_screen_the_help_scrolls_and_closes_with_the_keys_it_names() {
    let mut app = fixed_app(40, 10);
    update(&mut app, key('?'));
    assert!(render(&app).contains("Esc or ? closes"), "{}", render(&app));
    let first = render(&app);
    update(&mut app, key('j'));
    assert_eq!(app.modes.overlay_scroll(), 1, "j did not scroll the help");
    update(&mut app, code(KeyCode::PageDown));
    assert!(app.modes.overlay_scroll() > 1);
    assert_ne!(render(&app), first, "the screen did not move");
    update(&mut app, key('G'));
    let end = app.modes.overlay_scroll();
    update(&mut app, key('j'));
    assert_eq!(app.modes.overlay_scroll(), end, "scrolled past the end");
    // Esc closes, as the title says; so does ? again.
    update(&mut app, code(KeyCode::Esc));
    assert_eq!(app.modes.overlay(), None);
    update(&mut app, key('?'));
    update(&mut app, key('?'));
    assert_eq!(app.modes.overlay(), None);
    // And nothing behind it acted meanwhile.
    assert!(app.modes.dialog().is_none() && ops().is_empty());
}

#[test]
fn scrolling_stops_at_the_last_line_of_the_detail_and_the_help() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    update(&mut app, code(KeyCode::Tab));
    for _ in 0..50 {
        update(&mut app, key('j'));
    }
    let max = app.table.detail_scroll;
    assert!(max > 0 && max < 50, "{max}");
    update(&mut app, key('k'));
    assert_eq!(
        app.table.detail_scroll,
        max - 1,
        "one k comes back one line"
    );

    update(&mut app, key('?'));
    for _ in 0..300 {
        update(&mut app, key('j'));
    }
    let help_max = app.modes.overlay_scroll();
    assert!(help_max < 300, "{help_max}");
    assert!(
        render(&app).contains("confirms, Esc cancels"),
        "the last line is in view: {}",
        render(&app)
    );
    update(&mut app, key('k'));
    assert_eq!(app.modes.overlay_scroll(), help_max.saturating_sub(1));
}

#[test]
fn help_shows_the_control_keys_that_page() {
    let mut app = fixed_app(160, 80);
    update(&mut app, key('?'));
    let screen = render(&app);
    assert!(
        screen.contains("PgUp/C-b") && screen.contains("PgDn/C-f"),
        "{screen}"
    );
    assert!(screen.contains("C-z"), "{screen}");
}

#[test]
fn a_first_look_explains_the_symbols_until_the_help_is_opened() {
    let mut app = fixed_app(160, 48);
    assert!(render(&app).contains("◐ suspect: TTL runs, holder gone"));
    update(&mut app, key('?'));
    update(&mut app, code(KeyCode::Esc));
    let screen = render(&app);
    assert!(!screen.contains("TTL runs, holder gone"), "{screen}");
    assert!(screen.contains("you are operator:op@here"), "{screen}");
}

#[test]
fn the_help_opens_on_its_legend_of_states() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('?'));
    let screen = render(&app);
    assert!(screen.contains("What the states mean"), "{screen}");
    assert!(screen.contains("the next acquire reclaims it"), "{screen}");
}
