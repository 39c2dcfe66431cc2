//! The table's columns: sized from content, a pid never cut, ellipses and
//! sort arrows, the as-of table's ended column.

use super::*;

#[test]
fn columns_are_sized_from_their_content_key_and_holder_first() {
    let root = fixed_root();
    let claims = vec![
        status_of(
            &root,
            rec(
                "build:web-frontend",
                "claude:session-4f2a9c1e",
                ALIVE,
                MIN,
                Some(10 * MIN),
            ),
        ),
        status_of(
            &root,
            rec(
                "build:web-backend",
                "claude:session-4f2a9c7b",
                ALIVE,
                MIN,
                Some(10 * MIN),
            ),
        ),
    ];
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = app_at(root.clone());
        apply_sweep(&mut app, sweep_of(&root, claims.clone(), vec![]));
        update(&mut app, Action::Resize(w, h));
        let screen = render(&app);
        for full in [
            "claude:session-4f2a9c1e",
            "claude:session-4f2a9c7b",
            "build:web-frontend",
        ] {
            assert!(screen.contains(full), "{w}x{h}: {full} cut:\n{screen}");
        }
    }
    // The smallest screen: the key keeps more room than the TTL.
    let mut app = app_at(root.clone());
    apply_sweep(&mut app, sweep_of(&root, claims, vec![]));
    update(&mut app, Action::Resize(60, 15));
    let screen = render(&app);
    let line = screen
        .lines()
        .find(|l| l.contains("build:web-f"))
        .unwrap_or_else(|| panic!("no key row:\n{screen}"));
    assert!(
        line.contains("build:web-fro…"),
        "14 columns of key, not 8: {screen}"
    );
    assert!(line.contains("in 10m"), "{screen}");
}

#[test]
fn a_pid_is_never_cut_however_long_the_key_and_holder_are() {
    let root = fixed_root();
    let long = "x".repeat(120);
    let claims = vec![status_of(
        &root,
        rec(
            &format!("k-{long}"),
            &format!("h-{long}"),
            999_999,
            MIN,
            None,
        ),
    )];
    let mut app = app_at(root.clone());
    apply_sweep(&mut app, sweep_of(&root, claims, vec![]));
    // 80 wide: the medium table, which shows the pid.
    update(&mut app, Action::Resize(80, 24));
    let screen = render(&app);
    let row = line_with(&screen, "k-xxx");
    assert!(row.contains(" 999999 "), "{screen}");
    assert!(!row.contains("9999…"), "{screen}");
}

#[test]
fn cut_text_ends_in_an_ellipsis_and_every_sorted_column_shows_its_arrow() {
    let root = fixed_root();
    let long = "x".repeat(200);
    let mut r = rec("k", "pty:w", ALIVE, MIN, Some(10 * MIN));
    r.reason = Some(long.clone());
    r.harness = Some("codex".into());
    let mut app = app_at(root.clone());
    apply_sweep(&mut app, sweep_of(&root, vec![status_of(&root, r)], vec![]));
    update(&mut app, Action::Resize(160, 48));
    assert!(render(&app).contains("x…"), "{}", render(&app));
    for col in [ColumnId::Machine, ColumnId::Harness, ColumnId::Reason] {
        while app.table.sort.column != col {
            update(&mut app, key('s'));
        }
        let screen = render(&app);
        let header = line_with(&screen, "holder").to_string();
        assert!(
            header.contains(&format!("{} ▲", col.title())) || header.contains("… ▲"),
            "{col:?}: {header}"
        );
        let arrows = header.matches('▲').count();
        assert_eq!(arrows, 1, "{col:?}: {header}");
    }
}

#[test]
fn the_as_of_table_says_when_a_tenure_ended_in_a_time_that_fits() {
    use claimtop::events::asof::held_at;
    use claimtop::events::tenure::{Limits, TenureIndex};
    let mut app = fixed_app(80, 24);
    // 23:00 the day before NOW (08:00).
    update(&mut app, key(':'));
    type_text(&mut app, "asof 9h");
    update(&mut app, code(KeyCode::Enter));
    let at = NOW - 9 * 60 * MIN;
    let mut ix = TenureIndex::new(Limits::default());
    for (kind, ms, key, holder, acq) in [
        ("claim_acquired", at - 30 * MIN, "a", "w1", at - 30 * MIN),
        ("claim_released", at + 30 * MIN, "a", "w1", at - 30 * MIN),
        ("claim_acquired", at - 60 * MIN, "b", "w2", at - 60 * MIN),
        ("claim_released", NOW - 5 * MIN, "b", "w2", at - 60 * MIN),
    ] {
        ix.apply_line(&claim_line(kind, ms, key, holder, acq));
    }
    update(
        &mut app,
        Action::Log(Box::new(Reply::AsOf {
            at,
            answer: claimtop::events::asof::Answer {
                rows: held_at(&ix, at),
                complete: true,
                span: ix.span(),
            },
            trouble: None,
        })),
    );
    let screen = render(&app);
    // Yesterday's end with its date, today's with its time alone: both
    // whole in an 80-column table.
    assert!(screen.contains("released at 01-14 23:30Z"), "{screen}");
    assert!(screen.contains("released at 07:55:00Z"), "{screen}");
}
