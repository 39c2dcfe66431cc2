//! The real dashboard over a real etcd, in a real terminal (tmux): a claim
//! acquired by the CLI appears, `F` force-releases it through the store's
//! transaction, an etcd stopped for 3 s and an etcd killed and started
//! again each show as disconnected and are recovered from without a
//! keystroke, and after each the screen shows exactly what
//! `claimtop list --json` reports. Every wait polls the screen
//! up to a deadline; no sleep is ever the assertion.
//! Run with `cargo test --features etcd --test etcd_dashboard`.
#![cfg(feature = "etcd")]

#[path = "common/mod.rs"]
mod common;
mod etcd_common;

use common::tmux::Tmux;
use common::{cannot_run, claimtop};
use etcd_common::Etcd;
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_claimtop");
/// Generous: a loaded CI box can be slow to spawn and to notice a change.
const PATIENCE: Duration = Duration::from_secs(15);

fn cli(home: &Path, url: &str, args: &[&str]) -> Output {
    let out = claimtop(home)
        .env_remove("FNO_CLAIMS_STORE")
        .args(["--store", url])
        .args(args)
        .output()
        .expect("run claimtop");
    assert!(
        out.status.success(),
        "claimtop {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `list --json`'s claims as (key, state).
fn listed(home: &Path, url: &str) -> Vec<(String, String)> {
    let out = cli(home, url, &["list", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("list --json is JSON");
    let mut claims: Vec<(String, String)> = v["claims"]
        .as_array()
        .expect("a claims array")
        .iter()
        .map(|c| {
            (
                c["key"].as_str().unwrap_or_default().to_string(),
                c["state"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    claims.sort();
    claims
}

/// The table's rows as (key, state word), read off the screen: a row is
/// `[▶] SYMBOL WORD KEY …` left of the detail pane's border.
fn rows(screen: &str) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = screen
        .lines()
        .map(|l| l.split('│').next().unwrap_or_default())
        .filter_map(|l| {
            let words: Vec<&str> = l.trim_start_matches('▶').split_whitespace().collect();
            match words.as_slice() {
                [sym, state, key, ..]
                    if ["●", "◐", "✖", "‼", "?"].contains(sym)
                        && ["live", "suspect", "stale", "corrupted", "unreadable"]
                            .contains(state) =>
                {
                    Some((key.to_string(), state.to_string()))
                }
                _ => None,
            }
        })
        .collect();
    rows.sort();
    rows
}

fn has_row(screen: &str, key: &str) -> bool {
    rows(screen).iter().any(|(k, _)| k == key)
}

#[test]
fn the_dashboard_follows_etcd_force_releases_through_it_and_rides_out_a_stopped_and_a_restarted_etcd(
) {
    if let Err(why) = Tmux::available() {
        cannot_run(&format!("the etcd dashboard test needs tmux: {why}"));
        return;
    }
    let Some(mut etcd) = Etcd::single() else {
        return;
    };
    let home = tempfile::TempDir::new().expect("temp home");
    let url = etcd.url("/dash");

    let tmux = Tmux::start(160, 48);
    tmux.wait_for("the shell prompt", PATIENCE, |s| !s.trim().is_empty());
    tmux.type_line(&format!(
        "env -u FNO_CLAIMS_STORE -u FNO_CLAIMS_ROOT HOME='{}' '{BIN}' --store '{url}'; echo EXIT=$?",
        home.path().display()
    ));
    tmux.wait_for("the store header, connected", PATIENCE, |s| {
        s.contains(&format!("store {url}")) && s.contains("● connected") && s.contains("leader m0")
    });

    // A claim taken by another process shows up from the watch.
    cli(
        home.path(),
        &url,
        &["acquire", "e2e/first", "--holder", "tester", "--ttl", "5m"],
    );
    let screen = tmux.wait_for("the acquired claim's row", PATIENCE, |s| {
        has_row(s, "e2e/first")
    });
    assert!(screen.contains("lease"), "the lease column: {screen}");

    // F force-releases it: the store's transaction, not a file.
    tmux.keys(&["F"]);
    let dialog = tmux.wait_for("the force-release dialog", PATIENCE, |s| {
        s.contains("force-release") && s.contains("Esc cancel")
    });
    if dialog.contains("y force-release") {
        tmux.keys(&["y"]);
    } else {
        // A live claim asks for its key to be typed first.
        tmux.type_line("e2e/first");
    }
    tmux.wait_for("the row to leave the table", PATIENCE, |s| {
        !has_row(s, "e2e/first") && s.contains("force-released e2e/first")
    });
    assert!(
        listed(home.path(), &url).is_empty(),
        "list agrees it is gone"
    );

    // etcd stops answering for 3 s: the view stays, marked, and comes back.
    cli(
        home.path(),
        &url,
        &["acquire", "e2e/kept", "--holder", "tester", "--ttl", "5m"],
    );
    tmux.wait_for("the second claim's row", PATIENCE, |s| {
        has_row(s, "e2e/kept")
    });
    etcd.members[0].pause();
    let during = tmux.wait_for("disconnected", Duration::from_secs(3), |s| {
        s.contains("disconnected since")
    });
    std::thread::sleep(Duration::from_secs(3).saturating_sub(Duration::from_millis(500)));
    etcd.members[0].signal(libc::SIGCONT);
    assert!(
        has_row(&during, "e2e/kept"),
        "the last view is kept: {during}"
    );
    tmux.wait_for("connected again, on its own", PATIENCE, |s| {
        s.contains("● connected") && !s.contains("showing the view as of")
    });

    // What happens after the outage arrives too.
    cli(
        home.path(),
        &url,
        &["acquire", "e2e/after", "--holder", "tester", "--ttl", "5m"],
    );
    let want = listed(home.path(), &url);
    assert_eq!(want.len(), 2, "{want:?}");
    let screen = tmux.wait_for("the screen to equal list --json", PATIENCE, |s| {
        rows(s) == want
    });
    let title = screen
        .lines()
        .find(|l| l.contains("» claims "))
        .unwrap_or_default();
    assert!(
        title.contains(&format!("/{}─", want.len())),
        "the title counts every claim: {screen}"
    );

    // etcd killed (SIGKILL) and started again on the same ports and data:
    // the dashboard says so, reconnects without a keystroke, and ends on
    // exactly the store's model again.
    etcd.members[0].kill();
    let during = tmux.wait_for("disconnected after the kill", PATIENCE, |s| {
        s.contains("disconnected since")
    });
    assert!(
        has_row(&during, "e2e/kept") && has_row(&during, "e2e/after"),
        "the last view is kept while etcd is down: {during}"
    );
    etcd.start_again(0);
    tmux.wait_for("connected again after the restart", PATIENCE, |s| {
        s.contains("● connected") && !s.contains("showing the view as of")
    });
    cli(
        home.path(),
        &url,
        &[
            "acquire",
            "e2e/restarted",
            "--holder",
            "tester",
            "--ttl",
            "5m",
        ],
    );
    let want = listed(home.path(), &url);
    assert_eq!(want.len(), 3, "{want:?}");
    tmux.wait_for(
        "the screen to equal list --json after the restart",
        PATIENCE,
        |s| rows(s) == want,
    );

    tmux.keys(&["q"]);
    tmux.wait_for("a clean exit", PATIENCE, |s| s.contains("EXIT=0"));
}

/// Over etcd the events pane browses, searches and numbers the store's
/// whole history, and the timeline draws its tenures, an expired one too.
#[test]
fn over_etcd_the_events_pane_browses_to_the_first_event_searches_and_the_timeline_shows_an_expiry()
{
    use etcd_common::{event_line, put_events};
    use serde_json::json;
    if let Err(why) = Tmux::available() {
        cannot_run(&format!("the etcd dashboard test needs tmux: {why}"));
        return;
    }
    let Some(etcd) = Etcd::single() else {
        return;
    };
    let home = tempfile::TempDir::new().expect("temp home");
    let url = etcd.url("/hist");
    // 240 events over the last 20 minutes: acquires and releases of four
    // keys, two of them naming the searched-for job, then a tenure of
    // `tl/expiry` that ended with its lease.
    let now = claimtop::claims::now_ms();
    let base = now - 20 * 60_000;
    let mut lines = Vec::new();
    for i in 0..120i64 {
        let at = base + i * 9_000;
        let key = format!("hist/k{}", i % 4);
        let holder = format!("w{i}");
        let reason = if i == 20 || i == 60 {
            "job xyzzy"
        } else {
            "job"
        };
        lines.push((
            at,
            event_line(
                at,
                "claim_acquired",
                json!({"key": key, "holder": holder, "pid": 1, "host": "h",
                       "acquired_at": at, "expires_at": null, "reason": reason}),
            ),
        ));
        lines.push((
            at + 4_000,
            event_line(
                at + 4_000,
                "claim_released",
                json!({"key": key, "holder": holder, "pid": 1, "host": "h",
                       "acquired_at": at, "duration_held_ms": 4_000}),
            ),
        ));
    }
    let start = now - 5 * 60_000;
    lines.push((
        start,
        event_line(
            start,
            "claim_acquired",
            json!({"key": "tl/expiry", "holder": "lost", "pid": 1, "host": "h",
                   "acquired_at": start, "expires_at": null}),
        ),
    ));
    lines.push((
        start + 60_000,
        event_line(
            start + 60_000,
            "claim_expired",
            json!({"key": "tl/expiry", "holder": "lost", "acquired_at": start}),
        ),
    ));
    put_events(&etcd, "/hist", &lines);
    let total = lines.len();

    let tmux = Tmux::start(160, 48);
    tmux.wait_for("the shell prompt", PATIENCE, |s| !s.trim().is_empty());
    tmux.type_line(&format!(
        "env -u FNO_CLAIMS_STORE -u FNO_CLAIMS_ROOT HOME='{}' '{BIN}' --store '{url}'; echo EXIT=$?",
        home.path().display()
    ));
    tmux.wait_for("the store header, connected", PATIENCE, |s| {
        s.contains(&format!("store {url}")) && s.contains("● connected")
    });
    // The events pane: browsing starts at the last event, numbered.
    tmux.keys(&["Tab", "Tab", "k"]);
    let last = format!("event {total} of {total}");
    tmux.wait_for("the pane numbering the last event", PATIENCE, |s| {
        s.contains(&last)
    });
    // `/` finds the newer of the two matches, `N` the older one.
    tmux.keys(&["/"]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", "xyzzy"]);
    tmux.keys(&["Enter"]);
    let newer = format!("event 121 of {total}");
    tmux.wait_for("the search landing on event 121", PATIENCE, |s| {
        s.contains(&newer) && !s.contains("searching…")
    });
    tmux.keys(&["N"]);
    let older = format!("event 41 of {total}");
    tmux.wait_for("N moving to the older match, event 41", PATIENCE, |s| {
        s.contains(&older) && s.contains("match 1 of 2")
    });
    // `g`: the first event the store keeps.
    tmux.keys(&["g"]);
    let first = format!("event 1 of {total}");
    let screen = tmux.wait_for("the first event", PATIENCE, |s| s.contains(&first));
    assert!(
        screen.contains("hist/k0"),
        "the first event's key: {screen}"
    );
    // The timeline: the keys' tenures, and the expired one drawn as such.
    tmux.keys(&["t"]);
    let screen = tmux.wait_for("the timeline with an expired tenure", PATIENCE, |s| {
        s.contains("tl/expiry") && s.contains("hist/k1") && s.contains('▚')
    });
    assert!(
        !screen.contains("reading the events log"),
        "the timeline read the store's events: {screen}"
    );
    // `t` again closes it (an Escape followed at once by another key
    // reads as Alt+that key).
    tmux.keys(&["t"]);
    tmux.wait_for("the panes", PATIENCE, |s| s.contains(&first));
    tmux.keys(&["q"]);
    tmux.wait_for("the dashboard to exit", PATIENCE, |s| s.contains("EXIT=0"));
}

/// The events pane over etcd opens with the store's last events and then
/// follows it: no event is shown twice, the one written before the pane
/// opened nor any written after.
#[test]
fn the_events_pane_over_etcd_opens_with_no_line_twice() {
    use claimtop::dashboard::testing::{spawn_readers, update, Action, App, Options};
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/opening");
    let home = tempfile::TempDir::new().expect("home");
    for key in ["before-1", "before-2"] {
        cli(
            home.path(),
            &url,
            &["acquire", key, "--holder", "t", "--ttl", "5m"],
        );
    }
    let name = claimtop::store::StoreName::parse(&url).expect("a store URL");
    let ctx = claimtop::store::OpenCtx::default();
    let store = std::sync::Arc::new(
        claimtop::store::Store::open(&[name], &[], &ctx).expect("open the store"),
    );
    let options = Options {
        root: claimtop::claims::Root::with_events_here(home.path()),
        ..common::opts(claimtop::claims::Root::with_events_here(home.path()))
    };
    let now = claimtop::claims::now_ms();
    let mut app = App::new(options, now, common::me(), "operator:t@here".into());
    app.over(&store, &[], now);
    let (tx, rx) = std::sync::mpsc::channel::<Action>();
    let _lanes = spawn_readers(&store, &tx, 1000).expect("the readers");
    let shown = |app: &App, key: &str| {
        app.events
            .ring
            .rows
            .iter()
            .filter(|r| r.key.as_deref() == Some(key))
            .count()
    };
    let pump = |app: &mut App, until: &dyn Fn(&App) -> bool, what: &str| {
        let deadline = std::time::Instant::now() + PATIENCE;
        while !until(app) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(!left.is_zero(), "no {what}");
            if let Ok(a) = rx.recv_timeout(left) {
                update(app, a);
            }
        }
    };
    pump(&mut app, &|a| shown(a, "before-2") > 0, "opening lines");
    // Progress after the opening: an event written now arrives.
    cli(
        home.path(),
        &url,
        &["acquire", "after", "--holder", "t", "--ttl", "5m"],
    );
    pump(&mut app, &|a| shown(a, "after") > 0, "followed line");
    for key in ["before-1", "before-2", "after"] {
        assert_eq!(shown(&app, key), 1, "{key} shown once");
    }
}
