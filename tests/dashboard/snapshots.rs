//! Whole screens of the dashboard, drawn headless at 80×24 and 160×48 from a
//! fixed model (fixed clock, fixed paths), compared against reviewed
//! snapshots in `tests/snapshots/`.

use crate::common::*;
use claimtop::dashboard::testing::{update, Action, App};
use claimtop::sanitize::is_unsafe;
use ratatui::crossterm::event::KeyCode;
use ratatui::style::Color;

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

fn snap(name: &str, app: &App) {
    let (w, h) = app.size;
    insta::assert_snapshot!(format!("{name}_{w}x{h}"), render(app));
}

fn each_size(name: &str, setup: impl Fn(&mut App)) {
    for (w, h) in SIZES {
        let mut app = fixed_app(w, h);
        setup(&mut app);
        snap(name, &app);
    }
}

#[test]
fn main_screen_shows_every_state_with_symbol_and_word() {
    each_size("main", |_| {});
}

#[test]
fn a_corrupted_file_shows_its_parse_error_and_escaped_first_bytes() {
    each_size("corrupted_detail", |app| {
        select(app, "broken");
        app.focus = claimtop::dashboard::testing::Pane::Detail;
    });
}

#[test]
fn the_detail_of_a_live_claim_has_every_field_metadata_and_history() {
    each_size("live_detail", |app| select(app, "build:web"));
}

#[test]
fn help_overlay_is_generated_from_the_keymap() {
    each_size("help", |app| {
        update(app, key('?'));
    });
}

#[test]
fn hazards_list_names_kind_path_and_detail() {
    each_size("hazards", |app| {
        update(app, key('h'));
    });
}

#[test]
fn acquire_form_shows_its_fields_and_validation() {
    each_size("acquire", |app| {
        update(app, key('a'));
        type_text(app, "deploy:prod");
        update(app, code(KeyCode::Tab));
        update(app, code(KeyCode::Tab));
        for _ in 0..3 {
            update(app, code(KeyCode::Backspace));
        }
        type_text(app, "5s");
        update(app, code(KeyCode::Enter));
    });
}

#[test]
fn renew_of_someone_elses_claim_asks_first() {
    each_size("renew_confirm", |app| {
        select(app, "build:web");
        update(app, key('n'));
        update(app, code(KeyCode::Enter));
    });
}

#[test]
fn force_release_of_a_live_claim_asks_for_the_key() {
    each_size("force_live", |app| {
        select(app, "build:web");
        update(app, key('F'));
        type_text(app, "build:");
    });
}

#[test]
fn force_release_of_a_stale_claim_names_what_it_archives() {
    each_size("force_stale", |app| {
        select(app, "node:beta");
        update(app, key('F'));
    });
}

#[test]
fn filter_input_shows_what_is_typed_and_how_many_match() {
    each_size("filter", |app| {
        update(app, key('/'));
        type_text(app, "state:suspect");
    });
}

#[test]
fn read_only_and_paused_badges_show_and_mutating_keys_leave_the_footer() {
    each_size("read_only_paused", |app| {
        app.read_only = true;
        update(app, key('p'));
        update(app, key('F'));
    });
}

#[test]
fn a_terminal_too_small_gets_a_message_not_garbage() {
    let mut app = fixed_app(80, 24);
    update(&mut app, Action::Resize(50, 12));
    snap("too_small", &app);
}

/// Hostile strings everywhere a writer controls text.
const HOSTILE: &str =
    "evil\u{1b}[2J\u{1b}]0;pwned\u{7}\u{9b}31m\u{202e}gnp.exe\u{200b}\r\n\ttab\u{7f}end";

fn hostile_app(w: u16, h: u16) -> App {
    let root = fixed_root();
    let mut app = app_at(root.clone());
    let mut r = rec(
        &format!("key{HOSTILE}"),
        HOSTILE,
        ALIVE,
        2 * MIN,
        Some(10 * MIN),
    );
    r.reason = Some(HOSTILE.into());
    r.harness = Some(HOSTILE.into());
    r.host = HOSTILE.into();
    r.machine_id = Some(HOSTILE.into());
    r.metadata
        .insert(HOSTILE.into(), serde_json::json!({ "v": HOSTILE }));
    let mut bad = corrupted(&root, "junk", HOSTILE.as_bytes());
    bad.error = Some(HOSTILE.into());
    let claims = vec![status_of(&root, r.clone()), bad];
    apply_sweep(&mut app, sweep_of(&root, claims, vec![]));
    let ev = event(
        HOSTILE,
        HOSTILE,
        serde_json::json!({"key": r.key, "holder": HOSTILE, "pid": HOSTILE}),
    );
    update(
        &mut app,
        log_lines(vec![ev, line(&format!("not json {HOSTILE}"))]),
    );
    update(&mut app, Action::Resize(w, h));
    let k = r.key.clone();
    select(&mut app, &k);
    app.status = None;
    update(&mut app, Action::Warning(HOSTILE.into()));
    app
}

fn assert_clean(app: &App) {
    let buf = render_buffer(app);
    for cell in buf.content() {
        for c in cell.symbol().chars() {
            let n = c as u32;
            assert!(
                !(n < 0x20 || (0x7f..=0x9f).contains(&n) || is_unsafe(c)),
                "unsafe char U+{n:04X} reached the screen"
            );
        }
    }
}

#[test]
fn a_hostile_holder_full_of_escapes_reaches_the_screen_only_escaped() {
    for (w, h) in SIZES {
        let mut app = hostile_app(w, h);
        assert_clean(&app);
        snap("hostile", &app);
        for overlay in ['?', 'h'] {
            update(&mut app, key(overlay));
            assert_clean(&app);
            update(&mut app, code(KeyCode::Esc));
        }
        for dialog in ['F', 'n'] {
            update(&mut app, key(dialog));
            assert_clean(&app);
            update(&mut app, code(KeyCode::Esc));
        }
        let text = render(&app);
        assert!(
            text.contains("\\e[2J"),
            "the escape is shown, not dropped:\n{text}"
        );
    }
}

#[test]
fn without_colour_no_cell_has_a_colour_and_with_colour_states_do() {
    let mut app = fixed_app(160, 48);
    app.color = false;
    let buf = render_buffer(&app);
    assert!(buf
        .content()
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    app.color = true;
    let buf = render_buffer(&app);
    assert!(buf.content().iter().any(|c| c.fg == Color::Red));
}

#[test]
fn enter_shows_the_whole_record_as_yaml_with_its_history() {
    each_size("claim_overlay", |app| {
        select(app, "build:web");
        update(app, code(KeyCode::Enter));
    });
}

#[test]
fn quitting_with_own_claims_asks_what_to_do_with_them() {
    each_size("quit_confirm", |app| {
        update(app, key('q'));
    });
}

#[test]
fn clean_lists_exactly_what_it_removes() {
    each_size("clean_confirm", |app| {
        update(app, key('x'));
    });
}

#[test]
fn renewing_a_claim_whose_holder_is_gone_says_what_it_keeps_blocked() {
    each_size("renew_suspect", |app| {
        select(app, "node:alpha");
        update(app, key('n'));
        update(app, code(KeyCode::Enter));
    });
}

#[test]
fn a_missing_root_shows_a_banner_not_an_empty_table() {
    for (w, h) in SIZES {
        let root = claimtop::claims::Root::with_events_here("/nonexistent/claimtop-root");
        let mut app = app_at(root.clone());
        let mut world = sweep_of(&root, vec![], vec![]);
        world.problem = root.problem();
        world.show(&mut app);
        update(&mut app, Action::Resize(w, h));
        snap("missing_root", &app);
    }
}
