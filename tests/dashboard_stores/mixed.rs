//! The dashboard over a mix: a file root and a real etcd in one view,
//! through the one entry point. Rows of both show, each with its origin; a
//! verb on each row goes to that row's own store; the header counts what
//! `list --json` counts over the same mix.

use crate::backend::{claims_of, counts_of, Backend};
use crate::common::Sleeper;
use crate::screen::{header, Dash, PATIENCE};
use std::time::Instant;

/// `claimtop ARGS` over both stores at once, in `site`'s sandboxed home.
fn over_both(site: &Backend, root: &Backend, args: &[&str]) -> serde_json::Value {
    let out = crate::common::claimtop(site.home())
        .env_remove("FNO_CLAIMS_STORE")
        .env_remove("FNO_CLAIMS_ROOT")
        .args(site.store_args())
        .args(root.store_args())
        .args(args)
        .output()
        .expect("run claimtop");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "claimtop {args:?} over both printed no JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Filter the table to `key` (the only row, so the selected one).
fn select(dash: &Dash, key: &str) {
    dash.keys(&["/"]);
    dash.type_text(&format!("key:{key}"));
    dash.keys(&["Enter"]);
    dash.wait_for(&format!("the row of {key} alone"), |s| {
        s.contains("· filter:") && s.contains(key) && s.contains("claims 1/")
    });
}

/// F on the selected live claim `key`, its key typed in full.
fn force_release(dash: &Dash, key: &str) -> String {
    dash.keys(&["F"]);
    dash.wait_for("the typed-key question", |s| {
        s.contains("type the key in full")
    });
    dash.type_text(key);
    dash.keys(&["Enter"]);
    dash.wait_for(&format!("the force-release of {key}"), |s| {
        s.contains(&format!("force-released {key}"))
    })
}

pub fn a_mixed_view_shows_both_routes_each_verb_and_counts_as_list(site: Backend, root: Backend) {
    let holder = Sleeper::spawn();
    site.acquire("at-site", "pty:s", holder.pid());
    root.acquire("at-root", "pty:r", holder.pid());
    let mut args = site.store_args();
    args.extend(root.store_args());
    let Some(dash) = Dash::over(site.home(), &args) else {
        return;
    };
    let screen = dash.wait_for("a row of each origin", |s| {
        s.contains("at-site") && s.contains("at-root")
    });
    // Several origins named: each row says where it lives, and the header
    // counts each origin and says the site's link.
    assert!(screen.contains(" root "), "an origin column: {screen}");
    dash.wait_for("the origins' line with the site's link", |s| {
        s.lines()
            .nth(1)
            .is_some_and(|l| l.contains(" 2 origins ") && l.contains("● connected"))
    });

    // The header counts what `list --json` counts over the same mix.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let listed = counts_of(&over_both(&site, &root, &["list", "--json"]));
        let shown = header(&dash.screen()).map(|h| h.counts);
        if shown == Some(listed) {
            assert_eq!(listed.live, 2, "{listed:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the header {shown:?} never counted what list counts: {listed:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    // A verb on each row goes to that row's store, and to no other.
    select(&dash, "at-site");
    let said = force_release(&dash, "at-site");
    assert!(claims_of(&site.list()).is_empty(), "{said}");
    assert_eq!(
        claims_of(&root.list()).len(),
        1,
        "the root's claim is untouched"
    );
    dash.unselect();
    select(&dash, "at-root");
    force_release(&dash, "at-root");
    assert!(claims_of(&root.list()).is_empty());
    dash.unselect();
    dash.wait_for("both rows gone", |s| {
        header(s).is_some_and(|h| h.counts.live == 0)
    });
    dash.quit();
}

/// `t` over a root and a site: one timeline with the tenures of each
/// log, a key of each drawn, and the note names the two logs read.
pub fn the_timeline_shows_the_tenures_of_both_logs_and_names_them(site: Backend, root: Backend) {
    let holder = Sleeper::spawn();
    site.acquire("tenure-at-site", "pty:s", holder.pid());
    root.acquire("tenure-at-root", "pty:r", holder.pid());
    let mut args = site.store_args();
    args.extend(root.store_args());
    let Some(dash) = Dash::over(site.home(), &args) else {
        return;
    };
    dash.wait_for("a row of each origin", |s| {
        s.contains("tenure-at-site") && s.contains("tenure-at-root")
    });
    dash.keys(&["t"]);
    // The timeline takes the whole screen: the keys on it are its rows.
    let screen = dash.wait_for("the timeline with a key of each log", |s| {
        s.contains("timeline") && s.contains("tenure-at-site") && s.contains("tenure-at-root")
    });
    assert!(
        screen.contains("2 logs: "),
        "the note names both logs: {screen}"
    );
    dash.keys(&["Escape"]);
    dash.quit();
}
