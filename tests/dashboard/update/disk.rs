//! What the disk tells the table: a changed, deleted or new lockfile re-read
//! alone, a root that is missing, a file, or appears, a big root's first
//! listing.

use super::*;

#[test]
fn a_changed_lockfile_is_re_read_alone_and_its_new_state_shows() {
    let (_td, root) = temp_root();
    for k in ["a", "b", "c"] {
        write_claim(&root, &rec(k, "pty:w", ALIVE, MIN, Some(10 * MIN)));
    }
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    assert!(collect(&mut app, &mut col, Input::Relist));
    assert_eq!((col.counters().reads(), col.counters().listings()), (0, 1));
    assert_eq!(app.table.rows.len(), 3);

    let path = write_claim(&root, &rec("b", "pty:w", DEAD, MIN, Some(-MIN)));
    assert!(collect(&mut app, &mut col, changed(&root, vec![path])));
    assert_eq!(
        col.counters().reads(),
        1,
        "exactly the one changed path was read"
    );
    assert_eq!(col.counters().listings(), 1);
    assert_eq!(state_of(&app, "b"), Some(ClaimState::Stale));
    assert_eq!(app.counted().stale, 1);
    assert_eq!(
        row_keys(&app)[0],
        "b",
        "the stale claim sorts first by severity"
    );
}

#[test]
fn a_deleted_lockfile_leaves_the_table_and_a_new_one_joins_it() {
    let (_td, root) = temp_root();
    let a = write_claim(&root, &rec("a", "pty:w", ALIVE, MIN, None));
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    std::fs::remove_file(&a).expect("rm");
    let b = write_claim(&root, &rec("b", "pty:w", ALIVE, MIN, None));
    assert!(collect(&mut app, &mut col, changed(&root, vec![a, b])));
    assert_eq!(row_keys(&app), ["b"]);
    assert_eq!(col.counters().reads(), 2);
}

#[test]
fn changes_outside_the_claims_dir_read_nothing_and_redraw_nothing() {
    let (_td, root) = temp_root();
    write_claim(&root, &rec("a", "pty:w", ALIVE, MIN, None));
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    let before = col.counters().reads();
    let elsewhere = vec![
        root.events_file(),
        root.root.join("unrelated.lock"),
        root.claims_dir().join("x.lock.recovery.d"),
    ];
    assert!(!collect(&mut app, &mut col, changed(&root, elsewhere)));
    assert_eq!(col.counters().reads(), before);
}

#[test]
fn a_rewrite_with_identical_content_asks_for_no_redraw() {
    let (_td, root) = temp_root();
    let r = rec("a", "pty:w", ALIVE, MIN, None);
    let path = write_claim(&root, &r);
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    write_claim(&root, &r);
    assert!(!collect(&mut app, &mut col, changed(&root, vec![path])));
}

#[test]
fn a_missing_claims_dir_is_an_empty_table_until_it_appears() {
    let (_td, root) = temp_root();
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    assert!(app.table.rows.is_empty());
    assert!(render(&app).contains("no claims under this root yet"));
    write_claim(&root, &rec("late", "pty:w", ALIVE, MIN, None));
    assert!(collect(&mut app, &mut col, Input::Relist));
    assert_eq!(row_keys(&app), ["late"]);
}

#[test]
fn a_root_that_does_not_exist_says_so_and_recovers_when_it_appears() {
    let td = tempfile::tempdir().expect("tempdir");
    let root = claimtop::claims::Root::with_events_here(td.path().join("not-yet"));
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    let screen = render(&app);
    assert!(screen.contains("does not exist"), "{screen}");
    assert!(
        !screen.contains("no claims under this root yet"),
        "{screen}"
    );

    write_claim(&root, &rec("late", "pty:w", ALIVE, MIN, None));
    assert!(collect(&mut app, &mut col, Input::Relist));
    assert_eq!(row_keys(&app), ["late"]);
    assert!(!render(&app).contains("does not exist"));
}

#[test]
fn a_root_that_is_a_file_is_named_as_not_a_directory() {
    let td = tempfile::tempdir().expect("tempdir");
    let file = td.path().join("plain-file");
    std::fs::write(&file, "x").expect("write");
    let root = claimtop::claims::Root::with_events_here(&file);
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    let screen = render(&app);
    assert!(screen.contains("is not a directory"), "{screen}");
}

#[test]
fn a_big_roots_first_screen_is_titled_as_listing_until_its_whole_listing_replaces_it() {
    let root = fixed_root();
    let mut app = app_at(root.clone());
    update(&mut app, Action::Resize(160, 48));
    let listing = |keys: &[&str]| {
        let claims: Vec<_> = keys
            .iter()
            .map(|k| status_of(&root, rec(k, "pty:w", ALIVE, MIN, None)))
            .collect();
        claimtop::store::MemberListing::of_sweep(
            claimtop::claims::Sweep {
                root: root.root.clone(),
                claims,
                counts: Default::default(),
                hazards: Vec::new(),
            },
            claimtop::claims::ItemRules::Lockfile,
        )
    };
    assert!(update(&mut app, head(listing(&["a"]), NOW)).redraw);
    assert_eq!(row_keys(&app), ["a"]);
    assert!(
        render(&app).contains("listing the root: its first 1 claims so far"),
        "{}",
        render(&app)
    );
    assert!(update(&mut app, listed(listing(&["a", "b"]), NOW, None)).redraw);
    assert_eq!(row_keys(&app), ["a", "b"]);
    assert!(!render(&app).contains("listing the root"));
}
