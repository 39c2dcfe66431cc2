//! One dashboard over several roots: the root column and filter, each
//! root's sweep replacing only its own rows, a banner per unreadable root,
//! the merged events pane, verbs routed to the selected row's root, and
//! whole screens at 80×24 and 160×48 with three roots.

use crate::common::*;
use crate::effects::{asked_log, clear_log, ops, routed, update};
use claimtop::claims::Root;
use claimtop::dashboard::testing::Input;
use claimtop::dashboard::testing::{Action, App, Options};
use claimtop::dashboard::testing::{ColumnId, Dialog};
use claimtop::dashboard::testing::{Op, RootProblem, Verb};
use claimtop::events::history::Log;
use claimtop::store::OriginIx;
use ratatui::crossterm::event::KeyCode;
use serde_json::json;
use std::sync::mpsc::channel;
use std::time::Duration;

const ROOT_B: &str = "/home/ana/api";
const ROOT_C: &str = "/mnt/ci/api";

fn roots3() -> [Root; 3] {
    [
        fixed_root(),
        Root::with_events_here(ROOT_B),
        Root::with_events_here(ROOT_C),
    ]
}

/// A model over `roots` at [`NOW`], colourless, 80×24.
fn app_over(roots: &[Root]) -> App {
    let opts = Options {
        root: roots[0].clone(),
        more_roots: roots[1..].to_vec(),
        ..opts(roots[0].clone())
    };
    let mut app = App::new(opts, NOW, me(), OPERATOR.into());
    update(&mut app, Action::Resize(80, 24));
    app
}

/// Root B's claims: one on a key root A also holds, and one of its own.
fn claims_of_b(b: &Root) -> Vec<claimtop::claims::Status> {
    let mut api = rec("deploy:api", "pty:ana", ALIVE, 7 * MIN, Some(20 * MIN));
    api.reason = Some("canary".into());
    vec![
        status_of(
            b,
            rec("build:web", "pty:ana", ALIVE, 2 * MIN, Some(30 * MIN)),
        ),
        status_of(b, api),
    ]
}

/// Three roots: A with every state and a mutex corpse, B with two claims,
/// C missing; each root's events log with its own lines.
fn three_roots(w: u16, h: u16) -> App {
    let [a, b, c] = roots3();
    let mut app = app_over(&[a.clone(), b.clone(), c.clone()]);
    apply_sweep(
        &mut app,
        sweep_of(&a, every_state(&a), vec![mutex_corpse(&a)]),
    );
    apply_sweep(
        &mut app,
        sweep_of(&b, claims_of_b(&b), vec![mutex_corpse(&b)]),
    );
    let mut missing = sweep_of(&c, vec![], vec![]);
    missing.problem = Some(RootProblem::Missing(c.root.clone()));
    apply_sweep(&mut app, missing);
    update(&mut app, log_lines_in(0, some_events()));
    let b_lines = vec![
        event(
            "2027-01-15T07:55:00Z",
            "claim_acquired",
            json!({"key": "deploy:api", "holder": "pty:ana", "pid": ALIVE, "host": "here",
                   "acquired_at": NOW - 7 * MIN, "expires_at": NOW + 20 * MIN, "reason": "canary"}),
        ),
        event(
            "2027-01-15T07:58:00Z",
            "claim_acquired",
            json!({"key": "build:web", "holder": "pty:ana", "pid": ALIVE, "host": "here",
                   "acquired_at": NOW - 2 * MIN, "expires_at": NOW + 30 * MIN}),
        ),
    ];
    update(&mut app, log_lines_in(1, b_lines));
    update(&mut app, Action::Resize(w, h));
    app
}

fn root_labels_of_rows(app: &App) -> Vec<String> {
    app.table
        .rows
        .iter()
        .filter_map(|p| app.shown().get(p))
        .map(|s| app.origins.label(app.origins.of(s)).to_string())
        .collect()
}

fn select_in(app: &mut App, key: &str, label: &str) {
    let i = app
        .table
        .rows
        .iter()
        .position(|p| {
            app.shown()
                .get(p)
                .is_some_and(|s| s.key == key && app.origins.label(app.origins.of(s)) == label)
        })
        .unwrap_or_else(|| panic!("no row for {key} in {label}"));
    app.table.selected = i;
}

// ------------------------------------------------------------ the model

#[test]
fn each_root_gets_the_shortest_path_suffix_that_tells_it_apart() {
    let app = three_roots(80, 24);
    assert_eq!(app.origins.labels(), ["work", "ana/api", "ci/api"]);
}

#[test]
fn the_same_key_in_two_roots_is_two_rows() {
    let app = three_roots(80, 24);
    let web: Vec<String> = app
        .table
        .rows
        .iter()
        .filter_map(|p| app.shown().get(p))
        .filter(|s| s.key == "build:web")
        .map(|s| app.origins.label(app.origins.of(s)).to_string())
        .collect();
    assert_eq!(web.len(), 2);
    assert!(web.contains(&"work".to_string()) && web.contains(&"ana/api".to_string()));
    assert_eq!(app.shown().len(), 7 + 2);
}

#[test]
fn a_root_filter_keeps_only_the_claims_of_the_roots_it_names() {
    let mut app = three_roots(80, 24);
    update(&mut app, key('/'));
    type_text(&mut app, "root:ana");
    update(&mut app, code(KeyCode::Enter));
    assert_eq!(root_labels_of_rows(&app), ["ana/api", "ana/api"]);
    // Terms of one field are alternatives: two roots' claims.
    update(&mut app, key('/'));
    type_text(&mut app, " root:work");
    update(&mut app, code(KeyCode::Enter));
    assert_eq!(app.table.rows.len(), 9);
    assert!(app.table.filter.not_fields.is_empty());
}

#[test]
fn sorting_by_root_groups_each_roots_claims_together() {
    let mut app = three_roots(160, 48);
    update(&mut app, key('s'));
    assert_eq!(app.table.sort.column, ColumnId::Root);
    let labels = root_labels_of_rows(&app);
    // Sorted by the roots' paths: /home/ana/api before /srv/work.
    let mut expect = vec!["ana/api".to_string(); 2];
    expect.extend(vec!["work".to_string(); 7]);
    assert_eq!(labels, expect);
    update(&mut app, key('S'));
    assert_eq!(
        root_labels_of_rows(&app).first().map(String::as_str),
        Some("work")
    );
    // And the cycle goes on to the key.
    update(&mut app, key('s'));
    assert_eq!(app.table.sort.column, ColumnId::Key);
}

#[test]
fn with_one_root_the_sort_cycle_never_offers_the_root_column() {
    let mut app = fixed_app(160, 48);
    for _ in 0..20 {
        update(&mut app, key('s'));
        assert_ne!(app.table.sort.column, ColumnId::Root);
    }
}

#[test]
fn a_roots_sweep_replaces_its_own_rows_and_leaves_the_others_alone() {
    let mut app = three_roots(80, 24);
    let [a, b, _] = roots3();
    let a_rows_before: Vec<_> = app
        .shown()
        .by_row
        .values()
        .filter(|s| app.origins.of(s) == 0)
        .cloned()
        .collect();
    // B now holds one other claim: its two rows go, the new one comes.
    let only = status_of(&b, rec("cache:warm", "pty:bo", ALIVE, MIN, Some(5 * MIN)));
    assert!(apply_sweep(&mut app, sweep_of(&b, vec![only], vec![])));
    let b_keys: Vec<String> = app
        .shown()
        .by_row
        .values()
        .filter(|s| app.origins.of(s) == 1)
        .map(|s| s.key.clone())
        .collect();
    assert_eq!(b_keys, ["cache:warm"]);
    for s in &a_rows_before {
        assert_eq!(
            app.shown().get_path(&s.file),
            Some(&**s),
            "root A's {} moved",
            s.key
        );
    }
    assert_eq!(app.shown().len(), 7 + 1);
    assert_eq!(
        app.hazard_count(),
        1 + 2,
        "B's corpse went; A's hazards stay"
    );
    // An empty sweep of A empties A only.
    assert!(apply_sweep(&mut app, sweep_of(&a, vec![], vec![])));
    assert_eq!(app.shown().len(), 1);
    assert_eq!(app.hazard_count(), 0);
    // The same sweep again changes nothing, so nothing is redrawn.
    assert!(!apply_sweep(&mut app, sweep_of(&a, vec![], vec![])));
}

#[test]
fn a_missing_root_shows_its_own_banner_without_hiding_the_others() {
    let mut app = three_roots(160, 48);
    let screen = render(&app);
    assert!(
        screen.contains("⚠ root ci/api: /mnt/ci/api does not exist"),
        "{screen}"
    );
    assert!(row_keys(&app).contains(&"deploy:api".to_string()));
    assert!(screen.contains("deploy:api"), "{screen}");
    // The root appears: its banner goes, the others are untouched.
    let c = Root::with_events_here(ROOT_C);
    assert!(apply_sweep(&mut app, sweep_of(&c, vec![], vec![])));
    assert!(!render(&app).contains("does not exist"));
    assert_eq!(app.shown().len(), 9);
}

#[test]
fn a_missing_first_root_is_a_banner_too_not_the_whole_tables_message() {
    let [a, b, _] = roots3();
    let mut app = app_over(&[a.clone(), b.clone()]);
    let mut missing = sweep_of(&a, vec![], vec![]);
    missing.problem = Some(RootProblem::Missing(a.root.clone()));
    apply_sweep(&mut app, missing);
    apply_sweep(&mut app, sweep_of(&b, vec![], vec![]));
    let screen = render(&app);
    assert!(
        screen.contains("⚠ root work: /srv/work does not exist"),
        "{screen}"
    );
    assert!(!screen.contains("claimtop keeps watching"), "{screen}");
    assert!(
        screen.contains("no claims under these roots yet"),
        "{screen}"
    );
}

#[test]
fn the_events_pane_merges_the_roots_logs_in_time_order_and_names_each_root() {
    let app = three_roots(160, 48);
    let shown: Vec<(String, usize)> = app
        .shown_events()
        .filter(|e| e.error.is_none())
        .map(|e| (e.ts.clone(), e.root))
        .collect();
    let mut sorted = shown.clone();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(shown, sorted, "arrival order was A's log then B's");
    assert!(shown.iter().any(|(_, r)| *r == 1));
    let screen = render(&app);
    assert!(
        screen
            .lines()
            .any(|l| l.contains("ana/api") && l.contains("deploy:api") && l.contains("acquired")),
        "{screen}"
    );
}

#[test]
fn a_roots_log_reset_forgets_only_that_roots_lines() {
    let mut app = three_roots(80, 24);
    update(&mut app, log_reset_in(1));
    assert!(app.events.ring.rows.iter().all(|r| r.root == 0));
    assert!(!app.events.ring.rows.is_empty());
}

#[test]
fn the_detail_pane_names_the_root_in_full_and_shows_that_roots_history() {
    let mut app = three_roots(160, 48);
    select_in(&mut app, "build:web", "ana/api");
    let screen = render(&app);
    assert!(screen.contains("ana/api — /home/ana/api"), "{screen}");
    let history = app
        .selected_status()
        .map(|s| app.history_of_claim(s).len())
        .unwrap_or_default();
    assert_eq!(history, 1, "root A's build:web events are another claim's");
}

#[test]
fn f_shows_the_selected_claims_events_from_its_own_root_only() {
    let mut app = three_roots(160, 48);
    select_in(&mut app, "build:web", "ana/api");
    update(&mut app, key('f'));
    let shown: Vec<(String, usize)> = app
        .shown_events()
        .map(|e| (e.key.clone().unwrap_or_default(), e.root))
        .collect();
    assert_eq!(shown, [("build:web".to_string(), 1)]);
}

fn asked_to_open_a_log() -> bool {
    use claimtop::events::service::Request;
    asked_log()
        .iter()
        .any(|r| matches!(r, Request::OpenLog(Log::Root(_))))
}

#[test]
fn the_timeline_opens_on_the_selected_rows_root_and_says_whose_log_it_reads() {
    use claimtop::events::service::Request;
    let mut app = three_roots(160, 48);
    select_in(&mut app, "deploy:api", "ana/api");
    update(&mut app, key('t'));
    assert_eq!(app.log_root, 1);
    let b_log = Log::Root(Root::with_events_here(ROOT_B).root);
    assert!(
        asked_log().contains(&Request::OpenLog(b_log)),
        "{:?}",
        asked_log()
    );
    assert!(render(&app).contains("log of root ana/api"));
    // Opening it again on the same root indexes nothing again.
    update(&mut app, key('t'));
    clear_log();
    update(&mut app, key('t'));
    assert!(!asked_to_open_a_log());
}

#[test]
fn the_log_service_told_to_open_another_log_indexes_that_one() {
    use claimtop::events::service::{serve, Reply, Request};
    let td = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, n: usize| {
        let path = td.path().join(name);
        let text: String = (0..n)
            .map(|i| {
                event(
                    "2027-01-15T07:00:00Z",
                    "claim_acquired",
                    json!({"key": format!("k{i}"), "holder": "h", "pid": 1, "host": "here",
                           "acquired_at": NOW, "expires_at": null}),
                )
                .text
                    + "\n"
            })
            .collect();
        std::fs::write(&path, text).expect("write log");
        path
    };
    let (a, b) = (write("a.jsonl", 2), write("b.jsonl", 3));
    let (req_tx, req_rx) = channel();
    let (out_tx, out_rx) = channel();
    let service = std::thread::spawn(move || serve(a, req_rx, move |r| out_tx.send(r).is_ok()));
    let indexed = |rx: &std::sync::mpsc::Receiver<Reply>| loop {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Reply::Indexed { lines, .. }) => return lines,
            Ok(_) => continue,
            Err(e) => panic!("no index: {e}"),
        }
    };
    assert_eq!(indexed(&out_rx), 2);
    req_tx.send(Request::Open(b)).expect("send");
    assert_eq!(indexed(&out_rx), 3);
    drop(req_tx);
    service.join().expect("service");
}

#[test]
fn with_one_root_the_timeline_never_moves_the_log() {
    let mut app = fixed_app(160, 48);
    update(&mut app, key('t'));
    assert!(!asked_to_open_a_log());
    assert_eq!(app.log_root, 0);
}

// ------------------------------------------------------------ verbs

#[test]
fn force_release_acts_on_the_selected_rows_root() {
    let mut app = three_roots(80, 24);
    select_in(&mut app, "deploy:api", "ana/api");
    update(&mut app, key('F'));
    assert!(render(&app).contains("/home/ana/api"));
    type_text(&mut app, "deploy:api");
    update(&mut app, code(KeyCode::Enter));
    match routed().as_slice() {
        [Op {
            at: OriginIx(1),
            verb,
        }] => {
            assert!(matches!(verb, Verb::ForceRelease { key, .. } if key == "deploy:api"))
        }
        other => panic!("expected a force-release in root 1, got {other:?}"),
    }
}

#[test]
fn the_acquire_form_offers_the_selected_rows_root_and_refuses_an_unknown_one() {
    let mut app = three_roots(80, 24);
    select_in(&mut app, "deploy:api", "ana/api");
    update(&mut app, key('a'));
    let Some(Dialog::Acquire(f)) = app.modes.dialog() else {
        panic!("no acquire form");
    };
    assert_eq!(
        f.root.as_ref().map(|r| r.value().to_string()),
        Some("ana/api".into())
    );
    type_text(&mut app, "cache:cold");
    // To the root field (the fifth), and type a root that is not shown.
    for _ in 0..4 {
        update(&mut app, code(KeyCode::Tab));
    }
    for _ in 0.."ana/api".len() {
        update(&mut app, code(KeyCode::Backspace));
    }
    type_text(&mut app, "nowhere");
    update(&mut app, code(KeyCode::Enter));
    let Some(Dialog::Acquire(f)) = app.modes.dialog() else {
        panic!("the form closed on an unknown root");
    };
    assert!(f
        .error
        .as_deref()
        .is_some_and(|e| e.contains("work, ana/api, ci/api")));
    assert!(ops().is_empty());
    for _ in 0.."nowhere".len() {
        update(&mut app, code(KeyCode::Backspace));
    }
    type_text(&mut app, "work");
    update(&mut app, code(KeyCode::Enter));
    match routed().as_slice() {
        [Op {
            at: OriginIx(0),
            verb,
        }] => {
            assert!(matches!(verb, Verb::Acquire { key, .. } if key == "cache:cold"))
        }
        other => panic!("expected an acquire in root 0, got {other:?}"),
    }
}

#[test]
fn quitting_releases_each_own_claim_in_its_own_root() {
    let [a, b, _] = roots3();
    let mut app = app_over(&[a.clone(), b.clone()]);
    let mine = |r: &Root| status_of(r, rec("shared", OPERATOR, ALIVE, MIN, None));
    apply_sweep(&mut app, sweep_of(&a, vec![mine(&a)], vec![]));
    apply_sweep(&mut app, sweep_of(&b, vec![mine(&b)], vec![]));
    update(&mut app, key('q'));
    let screen = render(&app);
    assert!(
        screen.contains("shared (work)") && screen.contains("shared (api)"),
        "{screen}"
    );
    update(&mut app, key('r'));
    let roots: Vec<usize> = routed()
        .iter()
        .map(|op| match op {
            Op {
                at,
                verb: Verb::Release { .. },
            } => usize::from(at.0),
            other => panic!("not a routed release: {other:?}"),
        })
        .collect();
    assert_eq!(roots, [0, 1]);
}

#[test]
fn the_op_worker_runs_a_routed_op_in_its_root_and_asks_that_roots_collector() {
    let (_ta, a) = temp_root();
    let (_tb, b) = temp_root();
    let store = claimtop::dashboard::testing::store_of_roots(&[a.clone(), b.clone()]);
    let set = claimtop::dashboard::testing::Origins::of_store(&store, &[]);
    let (op_tx, op_rx) = channel();
    let (out_tx, out_rx) = channel();
    let (ca_tx, ca_rx) = channel();
    let (cb_tx, cb_rx) = channel();
    let worker = std::thread::spawn(move || {
        claimtop::dashboard::testing::worker(store, set, op_rx, out_tx, vec![ca_tx, cb_tx])
    });
    let acquire = Verb::Acquire {
        key: "k".into(),
        holder: OPERATOR.into(),
        ttl_ms: Some(10 * MIN),
        reason: None,
    };
    op_tx
        .send(Op {
            at: OriginIx(1),
            verb: acquire,
        })
        .expect("send");
    drop(op_tx);
    let Ok(Action::OpResult(r)) = out_rx.recv_timeout(Duration::from_secs(10)) else {
        panic!("no result");
    };
    assert!(r.ok, "{}", r.message);
    let b_label = b.root.file_name().map(|n| n.to_string_lossy().into_owned());
    assert!(
        b_label.is_some_and(|l| r.message.ends_with(&format!("(root {l})"))),
        "{}",
        r.message
    );
    assert!(b.lockfile("k").exists());
    assert!(!a.lockfile("k").exists());
    assert!(matches!(
        cb_rx.recv_timeout(Duration::from_secs(1)),
        Ok(Input::Reread(k)) if k == "k"
    ));
    assert!(ca_rx.try_recv().is_err());
    worker.join().expect("worker");
}

#[test]
fn a_change_in_one_root_is_re_read_by_that_roots_collector_alone() {
    let (_ta, a) = temp_root();
    let (_tb, b) = temp_root();
    for r in [&a, &b] {
        for k in ["x", "y"] {
            write_claim(r, &rec(k, "pty:w", ALIVE, MIN, Some(10 * MIN)));
        }
    }
    let mut app = app_over(&[a.clone(), b.clone()]);
    let (mut ca, mut cb) = (collector_in(&a, 0), collector_in(&b, 1));
    collect(&mut app, &mut ca, Input::Relist);
    collect(&mut app, &mut cb, Input::Relist);
    assert_eq!(app.shown().len(), 4);
    let (ra, rb) = (ca.counters().reads(), cb.counters().reads());
    write_claim(&b, &rec("x", "pty:w", DEAD, MIN, Some(-MIN)));
    // Each watcher reports only its own claims dir; B's names one file.
    assert!(collect(
        &mut app,
        &mut cb,
        changed(&b, vec![b.lockfile("x")])
    ));
    // A path of another root is none of A's collector's business.
    collect(&mut app, &mut ca, changed(&a, vec![b.lockfile("x")]));
    assert_eq!(cb.counters().reads() - rb, 1);
    assert_eq!(ca.counters().reads() - ra, 0);
    let stale: Vec<usize> = app
        .shown()
        .by_row
        .values()
        .filter(|s| s.state == claimtop::claims::ClaimState::Stale)
        .map(|s| app.origins.of(s))
        .collect();
    assert_eq!(stale, [1]);
}

// ------------------------------------------------------------ screens

#[test]
fn three_roots_show_a_root_column_per_root_counts_and_a_banner() {
    for (w, h) in [(80, 24), (160, 48)] {
        let app = three_roots(w, h);
        insta::assert_snapshot!(format!("three_roots_{w}x{h}"), render(&app));
    }
}

#[test]
fn the_hazards_list_over_three_roots_says_which_root_each_is_in() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = three_roots(w, h);
        update(&mut app, key('h'));
        insta::assert_snapshot!(format!("three_roots_hazards_{w}x{h}"), render(&app));
    }
}

#[test]
fn asof_over_several_roots_reads_each_roots_log_and_names_each_rows_root() {
    use claimtop::events::asof::{Answer, HeldAt, KnownFrom};
    use claimtop::events::service::{Reply, Request, Which};
    let mut app = three_roots(160, 48);
    clear_log();
    update(&mut app, key(':'));
    type_text(&mut app, "asof 1h");
    update(&mut app, code(KeyCode::Enter));
    let at = NOW - 60 * MIN;
    let logs: Vec<(Option<String>, Which)> = roots3()
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (
                Some(app.origins.label(i).to_string()),
                Which::Log(Log::Root(r.root.clone())),
            )
        })
        .collect();
    assert_eq!(asked_log(), [Request::AsOf { at, logs }]);

    let row = |root: usize, key: &str, holder: &str| HeldAt {
        key: key.into(),
        holder: holder.into(),
        since: at - 5 * MIN,
        start_seen: true,
        ended: None,
        root: Some(app.origins.label(root).to_string()),
        known_from: KnownFrom::Log,
    };
    let rows = vec![
        row(0, "deploy:api", "pty:ann"),
        row(1, "deploy:api", "pty:ana"),
    ];
    update(
        &mut app,
        Action::Log(Box::new(Reply::AsOf {
            at,
            answer: Answer {
                rows,
                complete: false,
                span: None,
            },
            trouble: Some("mnt/ci/api: cannot read".into()),
        })),
    );
    let screen = render(&app);
    assert!(
        screen
            .lines()
            .any(|l| l.contains("root") && l.contains("holder")),
        "a root column: {screen}"
    );
    let label_b = app.origins.label(1).to_string();
    assert!(
        screen
            .lines()
            .any(|l| l.contains(&label_b) && l.contains("pty:ana") && l.contains("deploy:api")),
        "{screen}"
    );
    // The two from the logs, and three claims held now that were taken
    // before the instant.
    assert!(screen.contains("5 keys held then"), "{screen}");
    assert!(screen.contains("not complete"), "{screen}");
    assert!(
        app.messages.iter().any(|m| m.text.contains("cannot read")),
        "a log that could not be read is said"
    );
}

#[test]
fn a_search_after_t_on_another_root_reads_the_selected_rows_root_log() {
    use claimtop::events::service::Request;
    let mut app = three_roots(160, 48);
    select_in(&mut app, "deploy:api", "ana/api");
    update(&mut app, key('t'));
    assert_eq!(app.log_root, 1);
    update(&mut app, code(KeyCode::Esc));
    // Back on a row of the first root, `/` in the events pane searches
    // that root's log, and says so.
    select_in(&mut app, "build:web", "work");
    clear_log();
    app.focus = claimtop::dashboard::testing::Pane::Events;
    update(&mut app, key('/'));
    assert_eq!(app.log_root, 0, "the search reads root work's log");
    let a_log = Log::Root(fixed_root().root);
    assert!(
        asked_log().contains(&Request::OpenLog(a_log)),
        "{:?}",
        asked_log()
    );
    assert!(render(&app).contains("log of root work"));
}
