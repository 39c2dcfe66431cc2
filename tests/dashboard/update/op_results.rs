//! Ops run against a real root: their results and warnings on the status
//! line, the audit events they write, a re-acquired or corrupted key.

use super::*;

#[test]
fn an_op_result_is_shown_and_its_lockfile_re_read_at_once() {
    let (_td, root) = temp_root();
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    let (op_tx, op_rx) = std::sync::mpsc::channel();
    let (out_tx, out_rx) = std::sync::mpsc::channel();
    let (in_tx, in_rx) = std::sync::mpsc::channel();
    let r = root.clone();
    let worker = std::thread::spawn(move || {
        use claimtop::dashboard::testing::{store_of_roots, worker, Origins};
        let store = store_of_roots(&[r]);
        let shown = Origins::of_store(&store, &[]);
        worker(store, shown, op_rx, out_tx, vec![in_tx])
    });
    let verb = Verb::Acquire {
        key: "new".into(),
        holder: OPERATOR.into(),
        ttl_ms: Some(10 * MIN),
        reason: None,
    };
    let at = claimtop::store::OriginIx(0);
    op_tx.send(Op { at, verb }).expect("send op");
    drop(op_tx);
    let reread = in_rx.recv().expect("the worker asks for a re-read");
    assert!(
        matches!(&reread, Input::Reread(k) if k == "new"),
        "{reread:?}"
    );
    for a in out_rx.iter() {
        update(&mut app, a);
    }
    worker.join().expect("worker");
    collect(&mut app, &mut col, reread);
    assert_eq!(row_keys(&app), ["new"]);
    assert_eq!(status_text(&app), "acquired new");
}

#[test]
fn a_warning_from_the_core_lands_on_the_status_line() {
    let mut app = fixed_app(80, 24);
    assert!(
        update(
            &mut app,
            Action::Warning("failed to emit \"claim_released\": lock timeout".into())
        )
        .redraw
    );
    assert!(render(&app).contains("failed to emit"));
}

#[test]
fn dashboard_mutations_go_through_the_verbs_and_write_the_same_audit_events() {
    let (_td, root) = temp_root();
    let acquire = Verb::Acquire {
        key: "deploy:prod".into(),
        holder: OPERATOR.into(),
        ttl_ms: Some(30 * MIN),
        reason: Some("hotfix".into()),
    };
    let r = run_op(&root, &acquire);
    assert!(r.ok, "{}", r.message);
    assert_eq!((r.root, r.key.as_str()), (0, "deploy:prod"));
    let r = run_op(
        &root,
        &Verb::Renew {
            key: "deploy:prod".into(),
            holder: OPERATOR.into(),
            ttl_ms: 10 * MIN,
            operator: None,
        },
    );
    assert!(r.ok, "{}", r.message);
    let r = run_op(
        &root,
        &Verb::Release {
            key: "deploy:prod".into(),
            holder: OPERATOR.into(),
        },
    );
    assert!(r.ok, "{}", r.message);
    assert!(!root.lockfile("deploy:prod").exists());
    let log = std::fs::read_to_string(root.events_file()).expect("events");
    let types: Vec<String> = log
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            v["type"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(types, ["claim_acquired", "claim_renewed", "claim_released"]);
}

#[test]
fn force_release_refuses_a_key_re_acquired_after_it_was_shown() {
    let (_td, root) = temp_root();
    // A stale claim (its pid does not exist anywhere) as the operator saw it.
    let shown = rec("k", "pty:gone", i32::MAX - 7, 5 * MIN, None);
    let path = write_claim(&root, &shown);
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, changed(&root, vec![path.clone()]));
    select(&mut app, "k");
    update(&mut app, key('F'));
    update(&mut app, key('y'));
    let op = take_ops().pop().expect("an op");
    // Meanwhile the key is released and taken by someone else.
    let mut now_held = rec("k", "pty:new", i32::MAX - 7, 0, None);
    now_held.acquired_at = shown.acquired_at + 1;
    write_claim(&root, &now_held);
    let r = run_op(&root, &op.verb);
    assert!(!r.ok);
    assert!(r.message.contains("refused"), "{}", r.message);
    assert!(path.exists(), "the new holder's file is untouched");
}

#[test]
fn force_release_of_a_corrupted_file_archives_it_and_audits_it() {
    let (_td, root) = temp_root();
    std::fs::create_dir_all(root.claims_dir()).expect("dir");
    let path = root.lockfile("junk");
    std::fs::write(&path, b"\x00\x01 not yaml [").expect("write");
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    select(&mut app, "junk");
    update(&mut app, key('F'));
    update(&mut app, key('y'));
    let op = take_ops().pop().expect("an op");
    let r = run_op(&root, &op.verb);
    assert!(r.ok, "{}", r.message);
    assert!(!path.exists());
    assert!(root.claims_dir().join(".expired").is_dir());
    let path = root.lockfile(&r.key);
    update(&mut app, Action::OpResult(r));
    collect(&mut app, &mut col, changed(&root, vec![path]));
    assert!(app.table.rows.is_empty());
    let log = std::fs::read_to_string(root.events_file()).expect("events");
    assert!(log.contains("claim_force_released"));
}

#[test]
fn a_fresh_classifier_agrees_with_the_fixture_world() {
    // Guards the fixtures the other tests lean on.
    let mut c = Classifier::with(NOW, me(), probe);
    assert_eq!(
        c.verdict(&rec("k", "h", ALIVE, MIN, None)).state,
        ClaimState::Live
    );
    assert_eq!(
        c.verdict(&rec("k", "h", DEAD, MIN, Some(MIN))).state,
        ClaimState::Suspect
    );
}

#[test]
fn status_messages_go_away_by_themselves() {
    let mut app = fixed_app(80, 24);
    update(&mut app, Action::Warning("something failed".into()));
    assert!(update(&mut app, Action::Tick(NOW + 5_000)).redraw || app.status.is_some());
    assert!(app.status.is_some(), "still there after 5 s");
    assert!(update(&mut app, Action::Tick(NOW + 21_000)).redraw);
    assert!(app.status.is_none(), "gone after 20 s");
}

#[test]
fn a_claim_acquired_here_is_selected_when_it_arrives() {
    let (_td, root) = temp_root();
    for k in ["a", "b", "c"] {
        write_claim(&root, &rec(k, "pty:w", ALIVE, MIN, None));
    }
    let mut app = app_at(root.clone());
    let mut col = collector(&root);
    collect(&mut app, &mut col, Input::Relist);
    assert_eq!(selected_key(&app), "a");
    let path = write_claim(&root, &rec("b2", OPERATOR, ALIVE, 0, Some(10 * MIN)));
    update(
        &mut app,
        Action::OpResult(claimtop::dashboard::testing::OpResult {
            verb: "acquire",
            key: "b2".into(),
            root: 0,
            ok: true,
            message: "acquired b2".into(),
        }),
    );
    collect(&mut app, &mut col, changed(&root, vec![path]));
    assert_eq!(selected_key(&app), "b2");
}
