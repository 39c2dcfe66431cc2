//! Leaving and suspending: Ctrl-C, q with claims of your own, Ctrl-Z.

use super::*;

#[test]
fn ctrl_c_asks_as_q_does_even_from_a_text_input_and_twice_quits() {
    // fixed_app: the operator holds db:migrate.
    let mut app = fixed_app(80, 24);
    update(&mut app, key('a'));
    update(&mut app, key('q'));
    assert!(!quit(), "q is a letter of the key");
    update(&mut app, ctrl('c'));
    assert!(!quit(), "a claim taken here is held: asked first");
    assert!(matches!(app.modes.dialog(), Some(Dialog::Quit(_))));
    update(&mut app, ctrl('c'));
    assert!(quit(), "twice within a second: out, whatever is open");
}

#[test]
fn quitting_with_claims_of_your_own_asks_release_keep_or_stay() {
    // fixed_app: the operator holds db:migrate.
    let mut app = fixed_app(80, 24);
    update(&mut app, key('q'));
    assert!(!quit());
    match app.modes.dialog() {
        Some(Dialog::Quit(q)) => assert_eq!(q.keys, ["db:migrate"]),
        other => panic!("{other:?}"),
    }
    update(&mut app, code(KeyCode::Esc));
    assert!(!quit() && app.modes.dialog().is_none(), "Esc stays");

    update(&mut app, key('q'));
    update(&mut app, key('r'));
    assert!(!quit(), "not before the release is done");
    assert_eq!(
        ops(),
        [Verb::Release {
            key: "db:migrate".into(),
            holder: OPERATOR.into()
        }]
    );
    update(
        &mut app,
        Action::OpResult(claimtop::dashboard::testing::OpResult {
            verb: "release",
            key: "db:migrate".into(),
            root: 0,
            ok: true,
            message: "released db:migrate".into(),
        }),
    );
    assert!(quit());

    forget();
    let mut app = fixed_app(80, 24);
    update(&mut app, key('q'));
    update(&mut app, key('k'));
    assert!(quit() && ops().is_empty(), "k keeps them");

    let (_td, root) = temp_root();
    forget();
    let mut app = app_at(root);
    update(&mut app, key('q'));
    assert!(quit(), "nothing of yours: q quits at once");
}

#[test]
fn ctrl_z_asks_the_loop_to_suspend() {
    let mut app = fixed_app(80, 24);
    update(&mut app, ctrl('z'));
    assert!(suspended() && !quit());
}
