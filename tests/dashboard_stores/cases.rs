//! The dashboard's behaviour, one body per case run over both stores (see
//! `both_stores!`): what a case does not have on one store it says, and
//! checks what that store has instead.

use crate::backend::{claims_of, now, Backend, Has};
use crate::common::{dead_pid, Sleeper};
use crate::screen::{header, must_settle, rows, Dash};

/// Claims come and go from the CLI (another process): each row appears
/// and leaves, and the header counts each moment as `list` does.
pub fn rows_appear_and_vanish(b: Backend) {
    let Some(dash) = Dash::start(&b) else { return };
    must_settle(&b, &dash, "the first screen");
    let holder = Sleeper::spawn();
    b.acquire("appears-1", "pty:w1", holder.pid());
    b.acquire("appears-2", "pty:w2", holder.pid());
    let f = must_settle(&b, &dash, "two acquires");
    assert_eq!(f.rows.len(), 2, "{f:?}");
    b.must(&["release", "appears-1", "--holder", "pty:w1"], &[0]);
    let f = must_settle(&b, &dash, "a release");
    assert_eq!(f.rows, [("appears-2".to_string(), "live".to_string())]);
    b.must(&["release", "appears-2", "--holder", "pty:w2"], &[0]);
    let f = must_settle(&b, &dash, "the last release");
    assert!(f.rows.is_empty() && f.list_counts.total() == 0, "{f:?}");
    dash.quit();
}

/// One claim in every state the store has, and the claims that are hazards
/// by themselves: the header counts each state as `list` does and each
/// hazard as `doctor` does, and a record naming another key is marked.
pub fn header_counts_every_state_and_hazard(b: Backend) {
    let alive = Sleeper::spawn();
    let dead = dead_pid();
    b.acquire("state-live", "pty:a", alive.pid());
    b.acquire("state-suspect", "pty:b", dead as u32);
    if b.has(Has::Stale) {
        b.must(
            &[
                "acquire",
                "state-stale",
                "--holder",
                "pty:c",
                "--pid",
                &dead.to_string(),
            ],
            &[0],
        );
    }
    b.plant_corrupted("state-corrupted");
    b.plant_unreadable("state-unreadable");
    b.plant_mismatch("state-forked", "someone-else", alive.pid());
    let Some(dash) = Dash::start(&b) else { return };
    let f = must_settle(&b, &dash, "the first screen");
    let h = f.header.expect("a header");
    let stale = usize::from(b.has(Has::Stale));
    assert_eq!(
        (h.counts.live, h.counts.suspect, h.counts.stale),
        (2, 1, stale)
    );
    assert_eq!((h.counts.corrupted, h.counts.unreadable), (1, 1));
    // corrupted_claim, unreadable, key_mismatch: nothing else here.
    assert_eq!(h.hazards, 3, "{:?}", f.doctor);
    let screen = dash.screen();
    let forked = screen
        .lines()
        .find(|l| l.contains("state-forked"))
        .unwrap_or_default();
    assert!(forked.contains("state-forked ⚠"), "marked: {forked}");
    dash.quit();
}

/// F on a claim that is a hazard by itself: the hazard leaves the header
/// and `h` with the claim. On a file root the claim also had a killed
/// recoverer's mutex, which the force-release steals: that goes too (the
/// debounced watcher hears only the reaped copy's removal). etcd keeps no
/// mutexes, so there only the claim's own hazard goes.
pub fn hazards_after_force_release(b: Backend) {
    let alive = Sleeper::spawn();
    b.plant_corrupted("forced-corrupt");
    b.plant_mismatch("forced-forked", "someone-else", alive.pid());
    if b.has(Has::Mutexes) {
        b.plant_corpse("forced-corrupt");
    }
    let Some(dash) = Dash::start(&b) else { return };
    let before = must_settle(&b, &dash, "the first screen");
    let corpse = usize::from(b.has(Has::Mutexes));
    assert_eq!(before.doctor.len(), 2 + corpse, "{:?}", before.doctor);

    dash.select("forced-corrupt");
    dash.keys(&["F"]);
    dash.wait_for("the force-release question", |s| {
        s.contains("y force-release")
    });
    dash.keys(&["y"]);
    dash.wait_for("the archived claim gone", |s| {
        s.contains("force-released forced-corrupt") && rows(s).is_empty()
    });
    dash.unselect();
    let after = must_settle(&b, &dash, "F on the corrupted claim");
    assert_eq!(after.doctor.len(), 1, "only the forked claim is left");

    dash.keys(&["h"]);
    let listed = dash.wait_for("the hazards list", |s| s.contains("hazards (1)"));
    assert!(
        listed.contains("key_mismatch") && !listed.contains("stale_mutex"),
        "{listed}"
    );
    dash.keys(&["Escape"]);
    // An Esc followed at once by `q` reads as Alt+q: wait for it to land.
    dash.wait_for("the hazards list closed", |s| !s.contains("hazards (1)"));
    dash.quit();
}

/// `x` offers what `doctor --fix` would remove now, and removes it: on the
/// `h` list's selected entry, that entry alone. Only a file root has
/// litter to clean (mutex corpses, temp files); over etcd a
/// lease ends an abandoned claim, and `x` says there is nothing to clean
/// while every count stays what `doctor` says.
pub fn clean_removes_what_it_offers(b: Backend) {
    b.plant_corrupted("clean-corrupt");
    if b.has(Has::Mutexes) {
        b.plant_corpse("clean-corrupt");
        b.plant_corpse("clean-elsewhere");
    }
    let Some(dash) = Dash::start(&b) else { return };
    must_settle(&b, &dash, "the first screen");
    dash.keys(&["h"]);
    dash.wait_for("the hazards list", |s| s.contains("▶corrupted_claim"));
    if b.has(Has::Mutexes) {
        // x acts on the entry selected: a corpse, below the claim.
        dash.keys(&["j"]);
        dash.wait_for("a corpse selected", |s| s.contains("▶stale_mutex"));
    }
    dash.keys(&["x"]);
    if b.has(Has::Mutexes) {
        // The selected corpse alone first, then the rest of the root.
        let offer = dash.wait_for("the one entry's question", |s| s.contains("y clean it"));
        assert!(
            offer.contains("clean-corrupt.lock.recovery.d")
                && !offer.contains("clean-elsewhere.lock.recovery.d"),
            "the selected corpse alone: {offer}"
        );
        dash.keys(&["y"]);
        dash.wait_for("the one entry removed", |s| {
            s.contains("clean-corrupt.lock.recovery.d: stole the corpse")
        });
        let f = must_settle(&b, &dash, "x on one entry");
        assert_eq!(
            f.doctor.len(),
            2,
            "the other corpse and the claim: {:?}",
            f.doctor
        );
        dash.keys(&["x"]);
        let offer = dash.wait_for("the clean question", |s| s.contains("y clean"));
        assert!(
            offer.contains("removes 1 abandoned entry"),
            "the corpse left, never the claim: {offer}"
        );
        dash.keys(&["y"]);
        dash.wait_for("what was removed", |s| s.contains("removed 1"));
    } else {
        dash.wait_for("nothing to clean", |s| s.contains("nothing to clean"));
    }
    dash.keys(&["Escape"]);
    let f = must_settle(&b, &dash, "x");
    assert_eq!(
        f.doctor.len(),
        1,
        "the corrupted claim stays: {:?}",
        f.doctor
    );
    dash.quit();
}

/// The operator's verbs from the keys, each checked against `list`:
/// `a` acquires (as `operator:…`), `n` renews (the deadline moves), `r`
/// releases, and `F` force-releases another process's live claim once
/// its key is typed.
pub fn operator_verbs_from_the_keys(b: Backend) {
    let Some(dash) = Dash::start(&b) else { return };
    must_settle(&b, &dash, "the first screen");

    dash.keys(&["a"]);
    dash.wait_for("the acquire form", |s| s.contains("acquire a key"));
    dash.type_text("ops-mine");
    dash.keys(&["Enter"]);
    dash.wait_for("the acquired claim", |s| s.contains("acquired ops-mine"));
    let f = must_settle(&b, &dash, "a");
    let mine = claims_of(&b.list());
    assert!(
        matches!(mine.as_slice(), [(k, s, h)] if k == "ops-mine" && s == "live" && h.starts_with("operator:")),
        "{mine:?}"
    );
    assert_eq!(f.rows.len(), 1);
    let deadline = |v: &serde_json::Value| v["claims"][0]["record"]["expires_at"].as_i64();
    let first = deadline(&b.list()).expect("a TTL claim");

    // Renewing a second later moves the deadline on.
    while now() < first - 30 * 60_000 + 1_100 {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    dash.keys(&["n"]);
    dash.wait_for("the renew form", |s| s.contains("Enter renew"));
    dash.keys(&["Enter"]);
    dash.wait_for("the renewal", |s| s.contains("renewed ops-mine"));
    let renewed = deadline(&b.list()).expect("still a TTL claim");
    assert!(renewed > first, "renewed {renewed} after {first}");
    must_settle(&b, &dash, "n");

    dash.keys(&["r"]);
    dash.wait_for("the release", |s| s.contains("released ops-mine"));
    let f = must_settle(&b, &dash, "r");
    assert!(f.list_rows.is_empty(), "{f:?}");

    // Another process's live claim: F asks for the key to be typed.
    let other = Sleeper::spawn();
    b.acquire("ops-theirs", "pty:other", other.pid());
    must_settle(&b, &dash, "another process's acquire");
    let screen = dash.screen();
    assert!(
        header(&screen).is_some_and(|h| h.counts.live == 1),
        "{screen}"
    );
    dash.keys(&["F"]);
    dash.wait_for("the typed-key question", |s| {
        s.contains("type the key in full")
    });
    dash.type_text("ops-theirs");
    dash.keys(&["Enter"]);
    dash.wait_for("the force-release", |s| {
        s.contains("force-released ops-theirs")
    });
    let f = must_settle(&b, &dash, "F");
    assert!(f.list_rows.is_empty(), "{f:?}");
    dash.quit();
}

/// The events pane's search counts its matches over the store's whole
/// history (the events service, through the history seam), and `n` past
/// the last one wraps to the first.
pub fn the_events_search_counts_through_the_history(b: Backend) {
    let holder = Sleeper::spawn();
    for i in 1..=3 {
        let key = format!("sought-{i}");
        b.acquire(&key, "pty:w1", holder.pid());
        b.must(&["release", &key, "--holder", "pty:w1"], &[0]);
    }
    b.acquire("other-1", "pty:w1", holder.pid());
    let Some(dash) = Dash::start(&b) else { return };
    must_settle(&b, &dash, "the first screen");
    dash.keys(&["Tab", "Tab", "/"]);
    dash.type_text("sought-");
    dash.keys(&["Enter"]);
    // Three acquires and three releases; the newest is the last release.
    dash.wait_for("the newest match, of six counted", |s| {
        s.contains("match 6 of 6") && !s.contains("searching…")
    });
    dash.keys(&["n"]);
    dash.wait_for("n wrapping to the first match", |s| {
        s.contains("match 1 of 6") && s.contains("search wrapped to the top")
    });
    dash.keys(&["N"]);
    dash.wait_for("N wrapping back to the last", |s| {
        s.contains("match 6 of 6") && s.contains("search wrapped to the bottom")
    });
    dash.keys(&["G"]);
    dash.quit();
}

/// `:asof TIME` turns the table into the one that stood then, rebuilt from
/// the store's events history: the claim held at TIME shows (with how it
/// ended later), the one taken after does not, and Esc is back to now.
pub fn asof_shows_the_table_that_stood_then(b: Backend) {
    let holder = Sleeper::spawn();
    b.acquire("then-held", "pty:w1", holder.pid());
    std::thread::sleep(std::time::Duration::from_millis(2_000));
    // Whole seconds: the instant typed is read to the second.
    let then = now() / 1000 * 1000;
    std::thread::sleep(std::time::Duration::from_millis(2_000));
    b.must(&["release", "then-held", "--holder", "pty:w1"], &[0]);
    b.acquire("taken-later", "pty:w2", holder.pid());
    let Some(dash) = Dash::start(&b) else { return };
    must_settle(&b, &dash, "the first screen");
    dash.keys(&[":"]);
    dash.type_text(&format!("asof {}", claimtop::time::utc_hms(then)));
    dash.keys(&["Enter"]);
    let screen = dash.wait_for("the table as of then", |s| {
        s.contains("1 key held then") && s.contains("then-held")
    });
    assert!(screen.contains("released"), "{screen}");
    // (The events pane below still lists what happened since.)
    let as_a_row = |s: &str| {
        s.lines().any(|l| {
            l.trim_start_matches('▶')
                .trim_start()
                .starts_with("taken-later")
        })
    };
    assert!(!as_a_row(&screen), "{screen}");
    assert!(
        screen.contains("held for    "),
        "the detail speaks of the row shown then: {screen}"
    );
    dash.keys(&["Escape"]);
    dash.wait_for("the table of now", |s| {
        s.lines()
            .any(|l| l.contains("● live") && l.contains("taken-later"))
            && !s.contains("held then")
    });
    dash.quit();
}
