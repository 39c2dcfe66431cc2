//! The layers that own the keys, driven without a terminal: every layer
//! is left by Esc through the one dispatch; Ctrl-C and F10 ask as `q` does;
//! the as-of table owns Esc, `G` and the header wherever the focus is; the
//! marks (all shown, none, Esc, a tenure's end, the rows the filter hides).

use crate::common::*;
use crate::effects::{forget, ops, quit, update};
use claimtop::dashboard::testing::{table_capacity, Action, App, Dialog, Layer, Pane};
use ratatui::crossterm::event::KeyCode;

/// Type `line` into the command line and run it.
fn run(app: &mut App, line: &str) {
    update(app, key(':'));
    type_text(app, line);
    update(app, code(KeyCode::Enter));
}

// ------------------------------------------------------------ the stack

/// The kinds of layer. `of` matches every `Layer` variant: a new kind of
/// layer does not compile until it is named here, opened by `open` and
/// so checked to be left by Esc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dialog,
    Prompt,
    Filter,
    Search,
    Overlay,
    Browse,
    AsOf,
}

impl Kind {
    const ALL: [Kind; 7] = [
        Kind::Dialog,
        Kind::Prompt,
        Kind::Filter,
        Kind::Search,
        Kind::Overlay,
        Kind::Browse,
        Kind::AsOf,
    ];

    fn of(l: &Layer) -> Kind {
        match l {
            Layer::Dialog(_) => Kind::Dialog,
            Layer::Prompt(_) => Kind::Prompt,
            Layer::Filter(_) => Kind::Filter,
            Layer::Search(_) => Kind::Search,
            Layer::Overlay { .. } => Kind::Overlay,
            Layer::Browse => Kind::Browse,
            Layer::AsOf(_) => Kind::AsOf,
        }
    }

    /// Open one, as its key does.
    fn open(self, app: &mut App) {
        let k = match self {
            Kind::Dialog => 'a',
            Kind::Prompt => ':',
            Kind::Filter => '/',
            Kind::Overlay => '?',
            Kind::Search | Kind::Browse => {
                app.focus = Pane::Events;
                if self == Kind::Search {
                    '/'
                } else {
                    'k'
                }
            }
            Kind::AsOf => return run(app, "asof 1h"),
        };
        update(app, key(k));
    }
}

#[test]
fn every_layer_takes_the_keys_from_on_top_and_esc_leaves_exactly_it() {
    for kind in Kind::ALL {
        let mut app = fixed_app(160, 48);
        kind.open(&mut app);
        let top = app.modes.top().map(Kind::of);
        assert_eq!(top, Some(kind), "{kind:?} did not open on top");
        // Opening the search opened the browse under it: one Esc each.
        let under = app.modes.len() - 1;
        update(&mut app, code(KeyCode::Esc));
        assert_eq!(app.modes.len(), under, "Esc left more than {kind:?}");
        assert_ne!(app.modes.top().map(Kind::of), top, "{kind:?} still on top");
        assert!(!quit() && ops().is_empty(), "{kind:?}: Esc did something");
    }
}

#[test]
fn a_dialog_over_a_form_returns_to_the_form_when_closed() {
    // fixed_app: the operator holds db:migrate, so quitting asks.
    let mut app = fixed_app(160, 48);
    update(&mut app, key('a'));
    type_text(&mut app, "half-typed");
    update(&mut app, key('q'));
    update(&mut app, ctrl('c'));
    assert!(matches!(app.modes.dialog(), Some(Dialog::Quit(_))));
    update(&mut app, code(KeyCode::Esc));
    match app.modes.dialog() {
        Some(Dialog::Acquire(f)) => assert_eq!(f.key.value(), "half-typedq"),
        other => panic!("the form is gone: {other:?}"),
    }
}

// ------------------------------------------------------------ quitting

#[test]
fn ctrl_c_asks_once_and_quits_only_when_pressed_again_within_a_second() {
    let mut app = fixed_app(160, 48);
    let t = NOW + 5_000;
    update(&mut app, Action::Interrupt(t));
    assert!(!quit(), "a claim taken here is held: asked first");
    let screen = render(&app);
    assert!(screen.contains("release them and quit"), "{screen}");
    // Too late to count as the second: it asks again (still one question).
    update(&mut app, Action::Interrupt(t + 1_500));
    assert!(!quit());
    assert_eq!(app.modes.len(), 1, "one question, not two");
    update(&mut app, Action::Interrupt(t + 2_400));
    assert!(quit(), "the second within a second quits");
    assert!(ops().is_empty(), "quitting this way keeps the claims");
}

#[test]
fn f10_and_ctrl_c_ask_exactly_as_q_does_and_quit_at_once_without_claims_of_your_own() {
    type Press = fn() -> Action;
    let hows: [(&str, Press); 3] = [
        ("F10", || code(KeyCode::F(10))),
        ("Ctrl-C", || ctrl('c')),
        ("q", || key('q')),
    ];
    for (how, press) in hows {
        forget();
        let mut app = fixed_app(160, 48);
        update(&mut app, press());
        assert!(!quit(), "{how} quit over a claim taken here");
        match app.modes.dialog() {
            Some(Dialog::Quit(q)) => assert_eq!(q.keys, ["db:migrate"], "{how}"),
            other => panic!("{how}: {other:?}"),
        }
        // The answer quits: k keeps them.
        update(&mut app, key('k'));
        assert!(quit(), "{how}");
    }
    for (how, press) in &hows[..2] {
        forget();
        let (_td, root) = temp_root();
        let mut app = app_at(root);
        update(&mut app, press());
        assert!(quit(), "{how}: nothing held here, nothing to ask");
    }
}

// ------------------------------------------------------------ as of

/// The as-of answer for `at`: `keys` held then by w1 (beside the claims
/// held now that were taken before it).
fn answer(app: &mut App, at: i64, keys: &[&str]) {
    use claimtop::events::asof::{held_at, Answer};
    use claimtop::events::service::Reply;
    use claimtop::events::tenure::{Limits, TenureIndex};
    let mut ix = TenureIndex::new(Limits::default());
    for k in keys {
        let line = serde_json::json!({"ts": "2027-01-15T06:00:00Z", "type": "claim_acquired",
            "source": "t", "data": {"key": k, "holder": "w1", "acquired_at": at - MIN}});
        ix.apply_line(&line.to_string());
    }
    let reply = Reply::AsOf {
        at,
        answer: Answer {
            rows: held_at(&ix, at),
            complete: true,
            span: ix.span(),
        },
        trouble: None,
    };
    update(app, Action::Log(Box::new(reply)));
}

#[test]
fn after_goto_then_asof_esc_and_g_return_to_now_wherever_the_focus_is() {
    let esc: fn() -> Action = || code(KeyCode::Esc);
    let g: fn() -> Action = || key('G');
    for (setup, leave, how) in [
        ("goto 2h", esc, "Esc"),
        ("goto 2h", g, "G"),
        ("detail", esc, "Esc"),
        ("detail", g, "G"),
    ] {
        let mut app = fixed_app(160, 48);
        if setup == "detail" {
            app.focus = Pane::Detail;
        } else {
            run(&mut app, setup);
            assert_eq!(app.focus, Pane::Events);
            assert!(app.modes.browsing());
        }
        run(&mut app, "asof 1h");
        assert!(app.modes.asof().is_some(), "{setup}");
        update(&mut app, leave());
        assert!(
            app.modes.asof().is_none(),
            "{setup} then {how}: still as of"
        );
        let screen = render(&app);
        assert!(!screen.contains("as of"), "{screen}");
        assert!(said(&app).contains("back to now"), "{}", said(&app));
        // The browse under it is still there: the next Esc leaves it.
        assert_eq!(app.modes.browsing(), setup != "detail", "{setup}");
    }
}

#[test]
fn the_as_of_header_counts_the_table_then_never_the_live_claims() {
    let mut app = fixed_app(160, 48);
    let live = render(&app);
    let head = |s: &str| s.lines().next().unwrap_or("").to_string();
    assert!(head(&live).contains("2 live"), "{live}");
    run(&mut app, "asof 1h");
    let h = head(&render(&app));
    assert!(h.contains("as of"), "{h}");
    assert!(
        !h.contains("live") && !h.contains("stale"),
        "live counts: {h}"
    );
    assert!(!h.contains("hazard"), "live hazards: {h}");
    answer(&mut app, NOW - 60 * MIN, &["a", "b", "c"]);
    let then = app.modes.asof().and_then(|v| v.rows.as_ref()).map(Vec::len);
    assert!(then.is_some_and(|n| n >= 3), "{then:?}");
    let h = head(&render(&app));
    let counted = format!("{} keys held then", then.unwrap_or_default());
    assert!(h.contains(&counted), "{h}");
    assert!(!h.contains("live"), "{h}");
}

#[test]
fn a_verb_typed_over_the_as_of_table_is_refused_and_moves_nothing() {
    for focus in [Pane::Table, Pane::Detail, Pane::Events] {
        let mut app = fixed_app(160, 48);
        select(&mut app, "build:web");
        let selected = app.table.selected;
        app.focus = focus;
        run(&mut app, "asof 1h");
        run(&mut app, "release db:migrate");
        let why = app
            .modes
            .prompt()
            .and_then(|p| p.error.clone())
            .unwrap_or_default();
        assert!(
            why.contains("as of") && why.contains("G or Esc returns to now"),
            "{focus:?}: {why}"
        );
        assert!(ops().is_empty(), "{focus:?}: {:?}", ops());
        assert_eq!(app.table.selected, selected, "the live selection moved");
        // Pressed, the keys are refused the same way in every pane (the
        // events pane has no r, n or F of its own: a is everywhere).
        update(&mut app, code(KeyCode::Esc));
        let keys: &[char] = match focus {
            Pane::Events => &['a'],
            _ => &['r', 'F', 'n', 'a'],
        };
        for &k in keys {
            update(&mut app, key(k));
            assert!(
                app.modes.dialog().is_none(),
                "{focus:?} {k} opened a dialog"
            );
            assert!(
                said(&app).contains("as of"),
                "{focus:?} {k}: {}",
                said(&app)
            );
        }
        assert!(ops().is_empty());
    }
}

// ------------------------------------------------------------ marks

#[test]
fn ctrl_space_marks_every_row_the_filter_shows_and_ctrl_backslash_or_u_drops_them() {
    let mut app = fixed_app(160, 48);
    run(&mut app, "filter state:stale");
    update(&mut app, ctrl(' '));
    assert_eq!(app.table.marked.len(), 2);
    run(&mut app, "filter");
    assert_eq!(app.table.marked.len(), 2, "only what the filter showed");
    update(&mut app, ctrl('4'));
    assert!(app.table.marked.is_empty(), "Ctrl-\\ (read as Ctrl-4)");
    update(&mut app, ctrl(' '));
    assert_eq!(app.table.marked.len(), 7);
    update(&mut app, key('U'));
    assert!(app.table.marked.is_empty());
}

#[test]
fn esc_drops_the_marks_first_asking_when_more_than_a_screen_are_marked() {
    let mut app = fixed_app(160, 48);
    run(&mut app, "filter state:stale");
    update(&mut app, ctrl(' '));
    update(&mut app, code(KeyCode::Esc));
    assert!(app.table.marked.is_empty(), "a screenful goes at once");
    assert!(
        !app.table.filter.is_empty(),
        "the filter waits for the next Esc"
    );

    // A short terminal: seven marks are more than a screen of rows.
    let mut app = fixed_app(80, 16);
    assert!(table_capacity(app.size, app.look()) < 7);
    update(&mut app, ctrl(' '));
    assert_eq!(app.table.marked.len(), 7);
    update(&mut app, code(KeyCode::Esc));
    assert!(matches!(app.modes.dialog(), Some(Dialog::ClearMarks(_))));
    assert!(render(&app).contains("Drop every mark"));
    update(&mut app, key('n'));
    assert_eq!(app.table.marked.len(), 7, "any other key keeps them");
    update(&mut app, code(KeyCode::Esc));
    update(&mut app, code(KeyCode::Esc));
    update(&mut app, key('y'));
    assert!(app.table.marked.is_empty());
}

#[test]
fn a_mark_goes_when_its_claim_is_released_and_taken_again_by_someone_else() {
    let mut app = fixed_app(160, 48);
    for k in ["node:beta", "build:web"] {
        select(&mut app, k);
        update(&mut app, key(' '));
    }
    assert_eq!(app.table.marked.len(), 2);
    // node:beta is taken again by another holder; build:web only renewed.
    let root = fixed_root();
    let claims: Vec<_> = every_state(&root)
        .into_iter()
        .map(|s| match s.key.as_str() {
            "node:beta" => status_of(
                &root,
                rec("node:beta", "pty:newcomer", ALIVE, MIN, Some(30 * MIN)),
            ),
            "build:web" => {
                let mut r = s.record.clone().expect("a record");
                r.expires_at = Some(NOW + 29 * MIN);
                status_of(&root, r)
            }
            _ => s,
        })
        .collect();
    apply_sweep(&mut app, sweep_of(&root, claims, vec![mutex_corpse(&root)]));
    let marked: Vec<String> = app
        .table
        .marked
        .iter()
        .filter_map(|id| app.shown().get(id).map(|s| s.key.clone()))
        .collect();
    assert_eq!(marked, ["build:web"], "the renewed tenure keeps its mark");
    assert!(said(&app).contains("1 mark dropped"), "{}", said(&app));
    update(&mut app, key('F'));
    match app.modes.dialog() {
        Some(Dialog::Bulk(c)) => {
            let keys: Vec<&str> = c.items.iter().map(|i| i.key.as_str()).collect();
            assert_eq!(keys, ["build:web"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_bulk_verb_over_marks_the_filter_hides_says_how_many_are_hidden() {
    let mut app = fixed_app(160, 48);
    for k in ["node:beta", "queue/jobs 7", "build:web"] {
        select(&mut app, k);
        update(&mut app, key(' '));
    }
    run(&mut app, "filter build");
    assert_eq!(row_keys(&app), ["build:web"]);
    update(&mut app, key('F'));
    match app.modes.dialog() {
        Some(Dialog::Bulk(c)) => assert_eq!((c.items.len(), c.hidden), (3, 2)),
        other => panic!("{other:?}"),
    }
    let screen = render(&app);
    assert!(
        screen.contains("2 of them hidden by the filter (1 shown)"),
        "{screen}"
    );
    assert!(ops().is_empty(), "nothing before the answer");
}

// ------------------------------------------------------------ smaller

#[test]
fn n_on_a_suspect_claim_warns_its_holder_is_not_provably_alive_and_asks_even_for_your_own() {
    let mut app = fixed_app(160, 48);
    select(&mut app, "node:alpha");
    update(&mut app, key('n'));
    assert!(said(&app).contains("not provably alive"), "{}", said(&app));
    // Your own suspect claim (a dashboard before this one took it).
    let root = fixed_root();
    let claims: Vec<_> = every_state(&root)
        .into_iter()
        .map(|s| match s.key.as_str() {
            "node:alpha" => status_of(
                &root,
                rec("node:alpha", OPERATOR, DEAD, 20 * MIN, Some(40 * MIN)),
            ),
            _ => s,
        })
        .collect();
    let mut app = fixed_app(160, 48);
    apply_sweep(&mut app, sweep_of(&root, claims, vec![mutex_corpse(&root)]));
    select(&mut app, "node:alpha");
    update(&mut app, key('n'));
    assert!(said(&app).contains("not provably alive"));
    update(&mut app, code(KeyCode::Enter));
    assert!(ops().is_empty(), "asked again before renewing");
    let screen = render(&app);
    assert!(screen.contains("renew it all the same?"), "{screen}");
    update(&mut app, key('y'));
    assert!(
        matches!(ops().as_slice(), [claimtop::dashboard::testing::Verb::Renew { key, operator: None, .. }] if key == "node:alpha"),
        "{:?}",
        ops()
    );
}
