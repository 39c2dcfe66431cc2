//! Release and force-release from the dashboard: read-only, whose claim it
//! is, the guards a live or unreadable claim needs, Esc.

use super::*;

#[test]
fn read_only_refuses_every_mutation_and_says_so() {
    let mut app = fixed_app(80, 24);
    app.read_only = true;
    for c in ['a', 'r', 'n', 'F'] {
        app.status = None;
        update(&mut app, key(c));
        assert!(app.modes.dialog().is_none(), "{c} opened a dialog");
        assert!(status_text(&app).contains("read-only"), "{c}");
    }
    assert!(ops().is_empty());
}

#[test]
fn r_on_someone_elses_claim_is_refused_and_points_to_force() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    update(&mut app, key('r'));
    assert!(ops().is_empty());
    let msg = status_text(&app);
    assert!(
        msg.contains("pty:worker-1") && msg.contains("use F"),
        "{msg}"
    );
    assert_eq!(app.status.as_ref().map(|s| s.level), Some(Level::Error));
}

#[test]
fn r_on_the_operators_own_claim_queues_a_release_as_the_operator() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "db:migrate");
    update(&mut app, key('r'));
    assert_eq!(
        ops(),
        [Verb::Release {
            key: "db:migrate".into(),
            holder: OPERATOR.into()
        }]
    );
}

#[test]
fn force_release_of_a_live_claim_needs_the_key_typed_in_full() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "build:web");
    update(&mut app, key('F'));
    assert!(matches!(app.modes.dialog(), Some(Dialog::ForceRelease(_))));
    update(&mut app, key('y'));
    update(&mut app, code(KeyCode::Enter));
    assert!(ops().is_empty(), "y is just a typed letter here");
    for _ in 0..2 {
        update(&mut app, code(KeyCode::Backspace));
    }
    type_text(&mut app, "build:we");
    update(&mut app, code(KeyCode::Enter));
    assert!(ops().is_empty(), "a prefix is not the key");
    match app.modes.dialog() {
        Some(Dialog::ForceRelease(f)) => assert!(f.error.is_some()),
        other => panic!("dialog closed: {other:?}"),
    }
    type_text(&mut app, "b");
    update(&mut app, code(KeyCode::Enter));
    assert!(app.modes.dialog().is_none());
    assert_eq!(
        ops(),
        [Verb::ForceRelease {
            key: "build:web".into(),
            opts: ForceOptsShown {
                expect_holder: Some("pty:worker-1".into()),
                expect_acquired_at: Some(NOW - 3 * MIN),
                operator: OPERATOR.into(),
                allow_live: true,
            }
        }]
    );
}

#[test]
fn force_release_of_an_unreadable_claim_is_guarded_as_live_and_then_allowed() {
    // Held as far as anyone can tell: y alone must not take it away, and a
    // typed key must, which the CLI spells --allow-live.
    let (_td, root) = temp_root();
    let path = root.lockfile("vault:big");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // Over the read cap: a claim this reader refuses to read.
    std::fs::write(&path, vec![b'#'; 2 << 20]).unwrap();
    let mut app = app_at(root.clone());
    let mut c = collector(&root);
    collect(&mut app, &mut c, Input::Relist);
    update(&mut app, Action::Resize(100, 30));
    assert_eq!(state_of(&app, "vault:big"), Some(ClaimState::Unreadable));
    select(&mut app, "vault:big");
    update(&mut app, key('F'));
    assert!(render(&app).contains("may be LIVE"), "{}", render(&app));
    update(&mut app, key('y'));
    assert!(ops().is_empty(), "y is just a typed letter here");
    update(&mut app, code(KeyCode::Backspace));
    type_text(&mut app, "vault:big");
    update(&mut app, code(KeyCode::Enter));
    let op = match ops().as_slice() {
        [op @ Verb::ForceRelease { opts, .. }] => {
            assert!(opts.allow_live, "typed key, yet not allowed: {opts:?}");
            op.clone()
        }
        other => panic!("{other:?}"),
    };
    // Carried out through the verbs: archived, not refused.
    let r = run_op(&root, &op);
    assert!(r.ok, "{}", r.message);
    assert!(!path.exists());
}

#[test]
fn force_release_of_a_stale_claim_confirms_with_y_and_never_allows_live() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "node:beta");
    update(&mut app, key('F'));
    update(&mut app, key('x'));
    assert!(ops().is_empty());
    update(&mut app, key('y'));
    match ops().as_slice() {
        [Verb::ForceRelease { key, opts }] => {
            assert_eq!(key, "node:beta");
            assert!(!opts.allow_live);
            assert_eq!(opts.expect_holder.as_deref(), Some("pty:worker-3"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn force_release_of_a_corrupted_file_has_no_holder_guard() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "broken");
    update(&mut app, key('F'));
    update(&mut app, key('y'));
    match ops().as_slice() {
        [Verb::ForceRelease { opts, .. }] => {
            assert_eq!(opts.expect_holder, None);
            assert_eq!(opts.expect_acquired_at, None);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn esc_closes_a_dialog_without_acting() {
    let mut app = fixed_app(80, 24);
    select(&mut app, "node:beta");
    update(&mut app, key('F'));
    update(&mut app, code(KeyCode::Esc));
    assert!(app.modes.dialog().is_none());
    assert!(ops().is_empty());
}
