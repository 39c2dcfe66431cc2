//! Hazards: the list and its selection, x and the doctor-fix ops that clean
//! all or one entry, the header's count of a broken events log.

use super::*;

#[test]
fn x_lists_what_doctor_fix_removes_and_runs_it_only_after_y() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('x'));
    match app.modes.dialog() {
        Some(Dialog::Clean(c)) => {
            assert_eq!(c.hazards.len(), 1, "the mutex corpse; never a claim");
            assert!(c.hazards[0].path().ends_with("node%3Abeta.lock.recovery.d"));
        }
        other => panic!("{other:?}"),
    }
    assert!(render(&app).contains("node%3Abeta.lock.recovery.d"));
    assert!(ops().is_empty());
    update(&mut app, key('y'));
    assert_eq!(ops(), [Verb::Clean]);

    let mut ro = fixed_app(80, 24);
    ro.read_only = true;
    update(&mut ro, key('x'));
    assert!(ro.modes.dialog().is_none(), "read-only refuses it");
}

#[test]
fn x_on_a_selected_hazard_entry_asks_about_that_entry_alone_and_cleans_only_it() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('h'));
    // The list opens on its most urgent entry, a corrupted claim: no litter.
    let first = app.selected_hazard().map(|h| h.kind.name().to_string());
    assert_eq!(first.as_deref(), Some("corrupted_claim"));
    update(&mut app, key('x'));
    assert!(app.modes.dialog().is_none());
    let said = said(&app);
    assert!(said.contains("not abandoned litter"), "{said}");
    while app.selected_hazard().is_some_and(|h| !h.kind.cleanable()) {
        update(&mut app, key('j'));
    }
    let chosen = app.selected_hazard().expect("the corpse");
    update(&mut app, key('x'));
    match app.modes.dialog() {
        Some(Dialog::CleanOne(h)) => assert_eq!(**h, chosen),
        other => panic!("the one entry's question, not the root's: {other:?}"),
    }
    let screen = render(&app);
    assert!(screen.contains("clean one entry"), "{screen}");
    assert!(screen.contains("node%3Abeta.lock.recovery.d"), "{screen}");
    assert!(screen.contains("nothing else under the root"), "{screen}");
    assert!(ops().is_empty());
    update(&mut app, key('y'));
    assert_eq!(ops(), [Verb::CleanOne(Box::new(chosen))]);
}

#[test]
fn the_hazards_list_selects_with_j_and_k_and_enter_goes_to_the_row_or_says_where_the_file_is() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('G'));
    update(&mut app, key('h'));
    assert!(
        render(&app).contains("▶corrupted_claim"),
        "the first is selected"
    );
    update(&mut app, code(KeyCode::Enter));
    assert!(
        app.modes.overlay().is_none(),
        "the list gave way to the row"
    );
    assert_eq!(selected_key(&app), "broken");
    assert_eq!(app.focus, Pane::Table);

    update(&mut app, key('h'));
    update(&mut app, key('j'));
    let h = app.selected_hazard().expect("a second entry");
    assert_eq!(h.kind.name(), "stale_mutex");
    assert!(render(&app).contains("▶stale_mutex"));
    update(&mut app, key('k'));
    update(&mut app, key('j'));
    update(&mut app, code(KeyCode::Enter));
    let said = said(&app);
    assert!(
        said.starts_with("stale_mutex: ") && said.contains("node%3Abeta.lock.recovery.d"),
        "{said}"
    );
}

#[test]
fn the_clean_one_op_removes_that_entry_alone_and_refuses_one_that_changed_since_listed() {
    let (_td, root) = temp_root();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(300);
    let corpse = |key: &str| {
        let m = root.claims_dir().join(format!("{key}.lock.recovery.d"));
        std::fs::create_dir_all(&m).expect("mkdir");
        std::fs::File::open(&m)
            .and_then(|f| f.set_modified(old))
            .expect("age");
        m
    };
    let (a, b) = (corpse("a"), corpse("b"));
    let listed = |m: &std::path::Path| {
        claimtop::claims::Hazard::at_path(
            claimtop::claims::hazard::STALE_MUTEX,
            m.to_path_buf(),
            "listed".into(),
        )
    };
    let r = run_op(&root, &Verb::CleanOne(Box::new(listed(&a))));
    assert!(r.ok, "{}", r.message);
    assert!(r.message.contains("a.lock.recovery.d"), "{}", r.message);
    assert!(!a.exists());
    assert!(b.exists(), "the other corpse is left");

    // Taken again since it was listed: a young mutex, someone's recovery.
    std::fs::remove_dir(&b).expect("rmdir");
    std::fs::create_dir(&b).expect("mkdir");
    let r = run_op(&root, &Verb::CleanOne(Box::new(listed(&b))));
    assert!(!r.ok);
    assert!(
        r.message.contains("changed since it was listed"),
        "{}",
        r.message
    );
    assert!(b.exists(), "nothing removed");
}

#[test]
fn the_clean_op_is_doctor_fix_and_says_what_it_removed() {
    let (_td, root) = temp_root();
    write_claim(&root, &rec("a", "pty:w", DEAD, 90 * MIN, None));
    let mutex = root.claims_dir().join("a.lock.recovery.d");
    std::fs::create_dir(&mutex).expect("mkdir");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(300);
    std::fs::File::open(&mutex)
        .and_then(|f| f.set_modified(old))
        .expect("age");
    let r = run_op(&root, &Verb::Clean);
    assert!(r.ok, "{}", r.message);
    assert!(
        r.message.contains("removed 1: a.lock.recovery.d"),
        "{}",
        r.message
    );
    assert!(!mutex.exists());
    assert!(
        root.lockfile("a").exists(),
        "the stale claim itself is left"
    );
}

#[test]
fn the_header_counts_a_broken_events_log_and_says_so_beside_it() {
    let (_td, root) = temp_root();
    std::fs::create_dir_all(root.claims_dir()).unwrap();
    std::fs::create_dir(root.events_file()).unwrap();
    let mut app = app_at(root.clone());
    // Wide enough for two temp paths and the mark after them.
    update(&mut app, Action::Resize(220, 24));
    let mut c = collector(&root);
    collect(&mut app, &mut c, Input::Relist);
    let screen = render(&app);
    let header = line_with(&screen, "claimtop");
    assert!(header.contains("⚠ 1 hazard"), "{header}");
    let events = line_with(&screen, "events");
    assert!(events.contains("broken: events lost"), "{events}");

    // Moved aside: the next sweep clears both.
    std::fs::remove_dir(root.events_file()).unwrap();
    collect(&mut app, &mut c, Input::Relist);
    let screen = render(&app);
    assert!(
        line_with(&screen, "claimtop").contains("⚠ 0 hazards"),
        "{screen}"
    );
    assert!(!screen.contains("events lost"), "{screen}");
}
