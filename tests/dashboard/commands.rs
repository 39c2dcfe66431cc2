//! The command line (`:`), marked rows (space) and the verbs over them,
//! and the messages of the session (`m`), driven without a terminal.

use crate::common::*;
use crate::effects::{asked_log, ops, update};
use claimtop::dashboard::testing::{ColumnId, Dialog, Overlay, Pane, Verb};
use claimtop::events::history::Anchor;
use claimtop::events::service::Request;
use ratatui::crossterm::event::KeyCode;

/// Type `line` into the command line and run it.
fn run(app: &mut claimtop::dashboard::testing::App, line: &str) {
    update(app, key(':'));
    type_text(app, line);
    update(app, code(KeyCode::Enter));
}

fn prompt_error(app: &claimtop::dashboard::testing::App) -> Option<String> {
    app.modes.prompt().and_then(|p| p.error.clone())
}

#[test]
fn sort_and_filter_typed_do_what_their_keys_do_and_the_line_closes() {
    let mut app = fixed_app(160, 48);
    run(&mut app, "sort age rev");
    assert!(
        app.modes.prompt().is_none(),
        "a command that ran closes the line"
    );
    assert_eq!(app.table.sort.column, ColumnId::Age);
    assert!(app.table.sort.reverse);
    run(&mut app, "filter state:stale");
    assert_eq!(row_keys(&app), ["queue/jobs 7", "node:beta"]);
    run(&mut app, "filter");
    assert_eq!(row_keys(&app).len(), 7, "no words clears the filter");
}

#[test]
fn a_refused_line_stays_open_and_says_why() {
    let mut app = fixed_app(160, 48);
    run(&mut app, "sortt age");
    let why = prompt_error(&app).expect("an error");
    assert!(why.contains("no command \"sortt\""), "{why}");
    assert!(render(&app).contains("no command"), "the footer says it");
    update(&mut app, code(KeyCode::Esc));
    assert!(app.modes.prompt().is_none());

    run(&mut app, "sort colour");
    let why = prompt_error(&app).expect("an error");
    assert!(
        why.contains("no column \"colour\"") && why.contains("holder"),
        "{why}"
    );
    update(&mut app, code(KeyCode::Esc));
    run(&mut app, "hazards now");
    assert_eq!(
        prompt_error(&app).as_deref(),
        Some(":hazards takes no words")
    );
}

#[test]
fn tab_completes_a_verb_or_offers_what_it_could_be() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key(':'));
    type_text(&mut app, "tim");
    update(&mut app, code(KeyCode::Tab));
    assert_eq!(
        app.modes.prompt().map(|p| p.input.value()),
        Some("timeline ")
    );

    update(&mut app, code(KeyCode::Esc));
    update(&mut app, key(':'));
    type_text(&mut app, "re");
    update(&mut app, code(KeyCode::Tab));
    let p = app.modes.prompt().expect("open");
    assert_eq!(p.input.value(), "re");
    assert!(
        p.offers.iter().any(|o| o == "release") && p.offers.iter().any(|o| o == "renew"),
        "{:?}",
        p.offers
    );
    assert!(render(&app).contains("release renew"), "the offers show");

    // A verb's words complete from what it takes: keys of the claims shown.
    update(&mut app, code(KeyCode::Esc));
    update(&mut app, key(':'));
    type_text(&mut app, "release db:");
    update(&mut app, code(KeyCode::Tab));
    assert_eq!(
        app.modes.prompt().map(|p| p.input.value()),
        Some("release db:migrate ")
    );
}

#[test]
fn tab_after_a_sorts_column_offers_rev_not_the_columns_again() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key(':'));
    type_text(&mut app, "sort age ");
    update(&mut app, code(KeyCode::Tab));
    assert_eq!(
        app.modes.prompt().map(|p| p.input.value()),
        Some("sort age rev ")
    );
    update(&mut app, code(KeyCode::Tab));
    let p = app.modes.prompt().expect("open");
    assert!(p.error.is_some(), "nothing after rev: {:?}", p.offers);
}

#[test]
fn a_verb_with_a_key_acts_on_that_claim_as_its_key_would() {
    let mut app = fixed_app(160, 48);
    run(&mut app, "release db:migrate");
    assert!(
        matches!(ops().as_slice(), [Verb::Release { key, .. }] if key == "db:migrate"),
        "{:?}",
        ops()
    );
    run(&mut app, "force-release node:beta");
    assert!(
        matches!(app.modes.dialog(), Some(Dialog::ForceRelease(ref f)) if f.key == "node:beta")
    );
    update(&mut app, code(KeyCode::Esc));
    run(&mut app, "release no-such-key");
    assert_eq!(
        prompt_error(&app).as_deref(),
        Some("no claim on no-such-key is shown")
    );
}

#[test]
fn goto_browses_the_events_log_from_a_time() {
    let mut app = fixed_app(160, 48);
    run(&mut app, "goto 1h");
    assert_eq!(app.focus, Pane::Events);
    assert!(app.modes.browsing());
    let asked = asked_log();
    assert!(
        asked.iter().any(
            |r| matches!(r, Request::Page { anchor: Anchor::Time(t), .. } if *t == NOW - 60 * MIN)
        ),
        "{asked:?}"
    );
    run(&mut app, "goto noon");
    assert!(prompt_error(&app).is_some_and(|e| e.contains("is no time")));
}

#[test]
fn goto_and_asof_refuse_what_the_cli_refuses_instead_of_wrapping_or_reading_the_future() {
    let mut app = fixed_app(160, 48);
    run(&mut app, "goto 1000000000000000h");
    let e = prompt_error(&app).unwrap_or_default();
    assert!(e.contains("before 1970 or after 9999"), "{e}");
    assert!(!app.modes.browsing(), "nothing was opened");
    update(&mut app, code(KeyCode::Esc));
    // 23:59:60 today is tomorrow's first second; the CLI refuses the future.
    for future in ["23:59:60", "09:00", "2099-01-01T00:00:00Z"] {
        run(&mut app, &format!("asof {future}"));
        let e = prompt_error(&app).unwrap_or_default();
        assert!(e.contains("in the future"), "{future}: {e}");
        assert!(app.modes.asof().is_none(), "{future}");
        update(&mut app, code(KeyCode::Esc));
    }
    run(&mut app, "asof 07:00");
    assert!(app.modes.asof().is_some(), "an hour ago is the past");
}

#[test]
fn columns_chosen_are_the_only_ones_drawn_and_all_brings_the_rest_back() {
    let mut app = fixed_app(160, 48);
    let header = |app: &claimtop::dashboard::testing::App| {
        render(app)
            .lines()
            .find(|l| l.contains("state") && l.contains("key"))
            .unwrap_or_default()
            .to_string()
    };
    assert!(header(&app).contains("machine"), "{}", header(&app));
    run(&mut app, "columns holder,ttl");
    assert_eq!(
        app.table.chosen.as_deref(),
        Some(
            &[
                ColumnId::State,
                ColumnId::Key,
                ColumnId::Holder,
                ColumnId::Ttl
            ][..]
        )
    );
    let h = header(&app);
    assert!(h.contains("holder") && h.contains("ttl"), "{h}");
    assert!(!h.contains("machine") && !h.contains("pid"), "{h}");
    run(&mut app, "columns all");
    assert!(header(&app).contains("machine"));
}

#[test]
fn space_marks_rows_and_f_force_releases_them_all_after_one_question() {
    let mut app = fixed_app(160, 48);
    select(&mut app, "node:beta");
    update(&mut app, key(' '));
    select(&mut app, "queue/jobs 7");
    update(&mut app, key(' '));
    assert_eq!(app.table.marked.len(), 2);
    assert!(render(&app).contains("2 marked"));
    assert!(render(&app).contains('✓'), "marked rows carry a mark");

    update(&mut app, key('F'));
    let Some(Dialog::Bulk(c)) = app.modes.dialog() else {
        panic!("{:?}", app.modes.dialog())
    };
    assert_eq!(c.items.len(), 2);
    assert!(!c.needs_typed_count(), "both are stale: y is enough");
    let screen = render(&app);
    assert!(
        screen.contains("node:beta") && screen.contains("queue/jobs 7"),
        "{screen}"
    );
    update(&mut app, key('y'));
    let keys: Vec<String> = ops()
        .iter()
        .map(|op| match op {
            Verb::ForceRelease { key, opts } => {
                assert!(!opts.allow_live);
                key.clone()
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(keys, ["node:beta", "queue/jobs 7"]);
    assert!(app.table.marked.is_empty(), "marks go once acted on");
}

#[test]
fn a_live_claim_among_the_marked_needs_their_number_typed() {
    let mut app = fixed_app(160, 48);
    for k in ["build:web", "node:beta"] {
        select(&mut app, k);
        update(&mut app, key(' '));
    }
    update(&mut app, key('F'));
    update(&mut app, key('y'));
    assert!(ops().is_empty(), "y is no answer when a claim may be live");
    // (y was typed into the count: gone again.)
    update(&mut app, code(KeyCode::Backspace));
    type_text(&mut app, "3");
    update(&mut app, code(KeyCode::Enter));
    assert!(ops().is_empty());
    assert!(render(&app).contains("not the number of claims"));
    update(&mut app, code(KeyCode::Backspace));
    type_text(&mut app, "2");
    update(&mut app, code(KeyCode::Enter));
    assert_eq!(ops().len(), 2);
    assert!(ops()
        .iter()
        .all(|op| matches!(op, Verb::ForceRelease { opts, key }
        if opts.allow_live == (key == "build:web"))));
}

#[test]
fn r_over_marks_releases_your_own_and_says_which_it_leaves() {
    let mut app = fixed_app(160, 48);
    for k in ["db:migrate", "build:web"] {
        select(&mut app, k);
        update(&mut app, key(' '));
    }
    update(&mut app, key('r'));
    let Some(Dialog::Bulk(c)) = app.modes.dialog() else {
        panic!("{:?}", app.modes.dialog())
    };
    assert_eq!(c.items.len(), 1);
    assert_eq!(c.skipped[0].0, "build:web");
    assert!(render(&app).contains("Left alone (1)"));
    update(&mut app, key('y'));
    assert!(matches!(ops().as_slice(), [Verb::Release { key, .. }] if key == "db:migrate"));
}

#[test]
fn messages_keep_every_line_said_and_m_shows_them_in_full() {
    let mut app = fixed_app(160, 48);
    run(&mut app, "columns");
    run(&mut app, "sort key");
    update(&mut app, key('y'));
    assert!(app.messages.len() >= 2, "{:?}", app.messages);
    update(&mut app, key('m'));
    assert_eq!(app.modes.overlay(), Some(Overlay::Messages));
    let screen = render(&app);
    assert!(screen.contains("messages ("), "{screen}");
    assert!(
        screen.contains("columns: as many as the width fits"),
        "{screen}"
    );
    update(&mut app, key('m'));
    assert_eq!(app.modes.overlay(), None);
}

#[test]
fn the_help_lists_the_commands_with_their_words() {
    let mut app = fixed_app(160, 200);
    update(&mut app, key('?'));
    let screen = render(&app);
    assert!(
        screen.contains(":goto") && screen.contains("TIME"),
        "{screen}"
    );
    assert!(screen.contains(":columns"), "{screen}");
}

#[test]
fn a_settings_file_chooses_the_columns_and_names_one_that_is_not() {
    use claimtop::cli::config::parse;
    let s = parse("[dashboard]\ncolumns = [\"holder\", \"TTL\"]\n").expect("valid");
    assert_eq!(
        s.dashboard.chosen_columns(),
        [ColumnId::Holder, ColumnId::Ttl]
    );
    let e = parse("[dashboard]\ncolumns = [\"colour\"]\n").expect_err("refused");
    assert!(e.contains("dashboard.columns: no column \"colour\""), "{e}");
}

#[test]
fn asof_rebuilds_the_table_at_an_instant_from_the_logs_tenures() {
    use claimtop::dashboard::testing::Action;
    use claimtop::events::asof::{held_at, Answer};
    use claimtop::events::service::Reply;
    use claimtop::events::tenure::{Limits, TenureIndex};
    let mut app = fixed_app(160, 48);
    let at = NOW - 60 * MIN;
    run(&mut app, "asof 1h");
    assert!(
        asked_log().contains(&Request::AsOf { at, logs: vec![] }),
        "one root: the log the service serves; {:?}",
        asked_log()
    );
    let screen = render(&app);
    assert!(screen.contains("reading the events log"), "{screen}");
    assert!(
        screen.lines().next().unwrap_or("").contains("as of"),
        "the header says it"
    );

    // Known tenures: a held across the instant and released after it, b
    // begun after it, c ended before it, d held since and still.
    let mut ix = TenureIndex::new(Limits::default());
    for (kind, ms, key, holder, acq) in [
        ("claim_acquired", at - 30 * MIN, "a", "w1", at - 30 * MIN),
        ("claim_acquired", at - 90 * MIN, "c", "w3", at - 90 * MIN),
        ("claim_released", at - 70 * MIN, "c", "w3", at - 90 * MIN),
        ("claim_acquired", at - 10 * MIN, "d", "w4", at - 10 * MIN),
        ("claim_released", at + 5 * MIN, "a", "w1", at - 30 * MIN),
        ("claim_acquired", at + 10 * MIN, "b", "w2", at + 10 * MIN),
    ] {
        ix.apply_line(&claim_line(kind, ms, key, holder, acq));
    }
    // Another instant's answer (asked before) is not this view's.
    update(
        &mut app,
        Action::Log(Box::new(Reply::AsOf {
            at: at + 1,
            answer: Answer {
                rows: held_at(&ix, at + 1),
                complete: true,
                span: ix.span(),
            },
            trouble: None,
        })),
    );
    assert!(app.modes.asof().is_some_and(|v| v.rows.is_none()));
    update(
        &mut app,
        Action::Log(Box::new(Reply::AsOf {
            at,
            answer: Answer {
                rows: held_at(&ix, at),
                complete: true,
                span: ix.span(),
            },
            trouble: None,
        })),
    );
    let keys: Vec<(&str, &str)> = app
        .modes
        .asof()
        .and_then(|v| v.rows.as_ref())
        .map(|r| {
            r.iter()
                .map(|h| (h.key.as_str(), h.known_from.word()))
                .collect()
        })
        .unwrap_or_default();
    // The tenures that covered the instant, and the claims the table holds
    // now that were taken before it (the log read never saw them begin).
    assert_eq!(
        keys,
        [
            ("a", "log"),
            ("d", "log"),
            ("db:migrate", "store"),
            ("node:beta", "store"),
            ("queue/jobs 7", "store")
        ]
    );
    let screen = render(&app);
    assert!(screen.contains("5 keys held then"), "{screen}");
    assert!(!screen.contains("not complete"), "{screen}");
    assert!(
        screen.contains("released by w1") || screen.contains("released"),
        "{screen}"
    );
    assert!(screen.contains("still held"), "{screen}");

    // :write writes the table shown: the past's rows, as drawn.
    update(&mut app, key(':'));
    type_text(&mut app, "write then.csv");
    let fx = claimtop::dashboard::testing::update(&mut app, code(KeyCode::Enter));
    let save = fx.save.expect("a file to write");
    let text = String::from_utf8(save.bytes).unwrap_or_default();
    assert!(
        text.starts_with("\"key\",\"holder\",\"held for\",\"since\",\"then\""),
        "{text}"
    );
    assert_eq!(text.lines().count(), 6, "{text}");

    // Nothing acts on the past; G goes back to now.
    update(&mut app, key('F'));
    assert!(app.modes.dialog().is_none());
    assert!(ops().is_empty());
    update(&mut app, key('G'));
    assert!(app.modes.asof().is_none());
    assert!(!render(&app).contains("as of"));
}

#[test]
fn a_on_the_timeline_shows_the_table_as_of_its_cursor() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('t'));
    assert_eq!(app.modes.overlay(), Some(Overlay::Timeline));
    let cursor = app.timeline.cursor;
    update(&mut app, key('A'));
    assert_eq!(
        app.modes.overlay(),
        None,
        "the timeline gives way to the table"
    );
    assert_eq!(app.modes.asof().map(|v| v.at), Some(cursor));
}

#[test]
fn keys_the_settings_rebind_act_and_the_help_and_footer_say_them() {
    use claimtop::dashboard::testing::Overrides;
    let mut app = fixed_app(160, 80);
    let map = [("release".to_string(), "R".to_string())]
        .into_iter()
        .collect();
    app.key_overrides = Overrides::parse(&map).expect("valid");
    select(&mut app, "db:migrate");
    update(&mut app, key('r'));
    assert!(ops().is_empty(), "r is no longer release");
    update(&mut app, key('R'));
    assert!(matches!(ops().as_slice(), [Verb::Release { key, .. }] if key == "db:migrate"));
    assert!(render(&app).contains("R release"), "the footer says R");
    update(&mut app, key('?'));
    let help = render(&app);
    assert!(
        help.lines()
            .any(|l| l.contains(" R ") && l.contains("release the selected claim")),
        "{help}"
    );
}

#[test]
fn the_settings_file_names_a_rebinding_it_cannot_use() {
    use claimtop::cli::config::parse;
    let s = parse("[dashboard.keys]\nrelease = \"R\"\ntimeline = \"f5\"\n").expect("valid");
    assert!(!s.dashboard.key_overrides().is_empty());
    let e = parse("[dashboard.keys]\nrelase = \"R\"\n").expect_err("refused");
    assert!(e.starts_with("dashboard.keys.relase: no command"), "{e}");
    let e = parse("[dashboard.keys]\nrelease = \"ctrl-\"\n").expect_err("refused");
    assert!(e.contains("is no key"), "{e}");
}

#[test]
fn a_rebinding_that_shadows_a_key_is_a_usage_error_naming_both_in_config_print_and_at_start() {
    use claimtop::cli::config::parse;
    let e = parse("[dashboard.keys]\nforce-release = \"q\"\n").expect_err("refused");
    assert!(
        e.starts_with("dashboard.keys.force-release: q is quit's key"),
        "{e}"
    );
    let e = parse("[dashboard.keys]\nrelease = \"t\"\n").expect_err("refused");
    assert_eq!(e, "dashboard.keys.release: t is already bound to timeline");

    // The real binary: `config --print`, and the dashboard itself, refuse
    // it before the terminal is taken.
    let td = tempfile::tempdir().expect("tempdir");
    let file = td.path().join("config.toml");
    std::fs::write(&file, "[dashboard.keys]\nforce-release = \"q\"\n").expect("write");
    let bin = env!("CARGO_BIN_EXE_claimtop");
    for args in [&["config", "--print"][..], &["--root", "."][..]] {
        let out = std::process::Command::new(bin)
            .arg("--config")
            .arg(&file)
            .args(args)
            .current_dir(td.path())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("claimtop runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("force-release") && err.contains("quit"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn the_settings_refresh_is_whole_seconds_from_one_to_sixty() {
    use claimtop::cli::config::parse;
    let s = parse("[dashboard]\nrefresh = \"2s\"\n").expect("valid");
    assert_eq!(s.dashboard.refresh_ms(), 2_000);
    assert_eq!(parse("").expect("defaults").dashboard.refresh_ms(), 1_000);
    for bad in ["0s", "2h", "soon"] {
        let e = parse(&format!("[dashboard]\nrefresh = \"{bad}\"\n")).expect_err(bad);
        assert!(e.starts_with("dashboard.refresh:"), "{e}");
    }
}
