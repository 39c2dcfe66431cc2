//! The dashboard's first screen over a real fleet: the hosts and the
//! header's counts from the roots' summaries before the copies are in,
//! "loading N of M" meanwhile, and, once every copy is a row, the counts
//! and hazards `list --json` prints (each claim counted once).

use super::common::{render, Sleeper};
use super::{wait_for, write_claims, Fleet, Publisher, PATIENCE};
use claimtop::claims::{now_ms, LocalIdentity, Root};
use claimtop::dashboard::testing::Input;
use claimtop::dashboard::testing::{spawn_rows, update, Action, App, Options};
use claimtop::store::{OpenCtx, Store, StoreName};
use serde_json::Value;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

/// The dashboard's model over `url`, as the live app wires it (its rows'
/// lanes; no events pane).
fn dashboard(url: &str) -> (App, Receiver<Action>, Vec<Sender<Input>>) {
    let name = StoreName::parse(url).expect("a store URL");
    let store = std::sync::Arc::new(Store::open(&[name], &[], &OpenCtx::default()).expect("open"));
    let options = Options {
        root: Root {
            root: url.into(),
            events_dir: None,
        },
        more_roots: Vec::new(),
        read_only: true,
        no_color: true,
        demo: false,
        local_time: false,
        opening: Default::default(),
    };
    let mut app = App::new(
        options,
        now_ms(),
        LocalIdentity::current(),
        "operator:t".into(),
    );
    app.over(&store, &[], app.now);
    update(&mut app, Action::Resize(160, 40));
    let (tx, rx) = channel();
    let lanes = spawn_rows(&store, &tx, app.refresh_ms).expect("lanes");
    (app, rx, lanes.inboxes)
}

#[test]
fn the_first_screen_counts_from_the_summaries_then_from_every_copy_as_list_does() {
    let Some(f) = Fleet::start("/fleet-first") else {
        return;
    };
    let a = super::root_dir();
    let holder = Sleeper::spawn();
    write_claims(a.path(), "job", 40, holder.pid());
    let claims = a.path().join(".fno/claims");
    std::fs::write(claims.join("broken.lock"), b"{{{ not yaml").expect("corrupt");
    let pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    // Published, and summarised: the root's summary and `list --json`
    // (every copy) both say 41.
    let total = |v: &Value| -> u64 {
        [
            "live",
            "suspect",
            "stale",
            "corrupted",
            "unreadable",
            "last_known",
        ]
        .iter()
        .filter_map(|k| v[*k].as_u64())
        .sum()
    };
    let synced = wait_for(PATIENCE * 2, || {
        super::summary_of(&f).1 == 41 && total(&f.list()["counts"]) == 41
    });
    assert!(synced, "never published and summarised: {}", pa.log());
    let list = f.list();

    let (mut app, rx, _inboxes) = dashboard(&f.url);
    let mut loading_seen = None;
    let done = wait_for(PATIENCE, || {
        while let Ok(a) = rx.recv_timeout(Duration::from_millis(20)) {
            update(&mut app, a);
            if loading_seen.is_none() && app.loading().is_some() {
                // What the first screen says while the copies are listed.
                loading_seen = Some((app.counted(), app.hazard_count(), render(&app)));
            }
        }
        app.loading().is_none() && app.claims.live.len() == 41
    });
    assert!(done, "the copies never all came: {}", render(&app));
    let (counted, hazards, screen) = loading_seen.expect("a screen counted from the summaries");
    assert_eq!(counted.total(), 41, "the summaries' count: {screen}");
    assert_eq!(counted.corrupted, 1);
    assert_eq!(
        hazards, 1,
        "host-a's corrupted claim, as its summary counts it"
    );
    assert!(screen.contains(" of 41"), "loading N of 41: {screen}");
    let hosts_line = screen
        .lines()
        .find(|l| l.starts_with(" hosts "))
        .unwrap_or("");
    assert!(
        hosts_line.contains(" 41"),
        "the host with its 41 claims: {screen}"
    );

    // Every copy in: the counts and hazards are the copies' own, as `list`.
    let c = app.counted();
    assert_eq!(list["counts"]["live"].as_u64(), Some(c.live as u64));
    assert_eq!(
        list["counts"]["corrupted"].as_u64(),
        Some(c.corrupted as u64)
    );
    assert_eq!(total(&list["counts"]), c.total() as u64);
    assert_eq!(
        list["hazards"].as_array().map_or(0, Vec::len),
        app.hazard_count(),
        "{}",
        render(&app)
    );
    assert!(!render(&app).contains("loading"));
}
