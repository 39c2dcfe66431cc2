//! Force-release from the dashboard, end to end: a corrupted claim on `y`,
//! a live one only once its key is typed in full, marked claims together,
//! and the right root's claim when several roots show the same key.

use super::*;

/// Wait until `root`'s `.expired/` holds `n` archives, or the patience runs
/// out (the asserts that follow then say what is there).
fn archives_appear(root: &Path, n: usize) {
    let deadline = Instant::now() + PATIENCE;
    while expired_files(root).len() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn dashboard_follows_claims_force_releases_a_corrupted_one_and_quits_cleanly() {
    let td = tempfile::TempDir::new().unwrap();
    let root = td.path();
    let broken = claimtop::claims::claim_path(root, "dispatch:broken");
    std::fs::create_dir_all(broken.parent().unwrap()).unwrap();
    std::fs::write(&broken, b"holder: [this is not\n\x00 a claim").unwrap();

    let Some(tmux) = dashboard_over(root) else {
        return;
    };
    tmux.wait_for("the dashboard with the corrupted claim", PATIENCE, |s| {
        row_reads(s, "dispatch:broken", "corrupted")
    });

    // Another process claims a key, bound to a pid we control.
    let mut holder = Sleeper::spawn();
    let pid = holder.pid().to_string();
    let out = claimtop(
        root,
        &[
            "acquire",
            "e2e:held",
            "--holder",
            "e2e:other-process",
            "--pid",
            &pid,
            "--reason",
            "held by another process",
        ],
    );
    assert!(
        out.status.success(),
        "acquire failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmux.wait_for("the other process's claim to show as live", PATIENCE, |s| {
        row_reads(s, "e2e:held", "live")
    });

    holder.kill();
    tmux.wait_for("the killed holder's claim to turn stale", PATIENCE, |s| {
        row_reads(s, "e2e:held", "stale")
    });

    // Corrupted sorts first by default; go to the top and force-release it.
    tmux.keys(&["g"]);
    tmux.keys(&["F"]);
    tmux.wait_for("the force-release confirmation", PATIENCE, |s| {
        s.contains("y force-release")
    });
    confirm_force_release(&tmux);
    archives_appear(root, 1);
    let archived = expired_files(root);
    assert_eq!(archived.len(), 1, "archived: {archived:?}");
    let name = archived[0].file_name().unwrap().to_string_lossy();
    assert!(
        name.starts_with("dispatch%3Abroken."),
        "archived the wrong claim: {name}"
    );
    assert!(!broken.exists(), "the corrupted lockfile is still in place");
    assert!(
        claimtop::claims::claim_path(root, "e2e:held").exists(),
        "the stale claim was archived too"
    );
    tmux.wait_for(
        "the force-release event in the events pane",
        PATIENCE,
        |s| event_shown(s, "claim_force_released", "dispatch:broken"),
    );

    tmux.keys(&["q"]);
    assert_clean_exit(&tmux);
}

/// The confirm dialog for a corrupted claim (not Live, so no typed key).
fn confirm_force_release(tmux: &Tmux) {
    tmux.keys(&["y"]);
}

#[test]
fn a_live_claim_is_force_released_only_once_its_key_is_typed_in_full() {
    let td = tempfile::TempDir::new().unwrap();
    let root = td.path();
    let holder = Sleeper::spawn();
    let pid = holder.pid().to_string();
    let out = claimtop(
        root,
        &["acquire", "e2e:live", "--holder", "e2e:busy", "--pid", &pid],
    );
    assert!(
        out.status.success(),
        "acquire failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lockfile = claimtop::claims::claim_path(root, "e2e:live");
    let Some(tmux) = dashboard_over(root) else {
        return;
    };
    tmux.wait_for("the live claim", PATIENCE, |s| {
        row_reads(s, "e2e:live", "live")
    });
    tmux.keys(&["g", "F"]);
    tmux.wait_for("the typed-key confirmation", PATIENCE, |s| {
        s.contains("this claim is LIVE") && s.contains("type the key in full")
    });
    let untouched = |why: &str| {
        assert!(lockfile.exists(), "{why}: the live claim is gone");
        assert!(
            expired_files(root).is_empty(),
            "{why}: something was archived"
        );
    };

    // `y`, which confirms every other force-release, is only a letter here.
    tmux.keys(&["y"]);
    tmux.wait_for("`y` taken as the typed key's first letter", PATIENCE, |s| {
        typed_key_reads(s, "y")
    });
    untouched("after y");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the refusal of `y`", PATIENCE, |s| {
        s.contains("the typed key does not match; nothing done")
    });
    untouched("after y and Enter");

    // All of the key but its last letter is refused too.
    tmux.keys(&["C-u"]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", "e2e:liv"]);
    tmux.wait_for("the near miss typed, the refusal cleared", PATIENCE, |s| {
        typed_key_reads(s, "e2e:liv") && !s.contains("does not match")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the refusal of the near miss", PATIENCE, |s| {
        s.contains("the typed key does not match; nothing done")
    });
    untouched("after a near miss");

    // The key in full: archived to .expired/, with its event.
    tmux.keys(&["e"]);
    tmux.wait_for("the key typed in full", PATIENCE, |s| {
        typed_key_reads(s, "e2e:live")
    });
    tmux.keys(&["Enter"]);
    archives_appear(root, 1);
    let archived = expired_files(root);
    assert_eq!(archived.len(), 1, "archived: {archived:?}");
    let name = archived[0].file_name().unwrap().to_string_lossy();
    assert!(
        name.starts_with("e2e%3Alive."),
        "archived the wrong claim: {name}"
    );
    let rec = claimtop::claims::read_claim_file(&archived[0]).expect("the archive is a claim");
    assert_eq!(
        (rec.key.as_str(), rec.holder.as_str()),
        ("e2e:live", "e2e:busy")
    );
    assert!(!lockfile.exists(), "the live claim is still in place");
    // The archive is renamed into place before the event is appended: the
    // event in the pane is the sign the append is whole, and only then
    // does the log say how many force-releases there were.
    tmux.wait_for("the force-release in the events pane", PATIENCE, |s| {
        event_shown(s, "claim_force_released", "e2e:live")
    });
    let log = std::fs::read_to_string(root.join(".fno/events.jsonl")).unwrap_or_default();
    let forced: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|e: &serde_json::Value| e["type"] == "claim_force_released")
        .collect();
    assert_eq!(forced.len(), 1, "{log}");
    assert_eq!(forced[0]["data"]["key"], "e2e:live", "{log}");
    assert_eq!(forced[0]["data"]["holder"], "e2e:busy", "{log}");
    assert_eq!(forced[0]["data"]["previous_state"], "live", "{log}");

    tmux.keys(&["q"]);
    assert_clean_exit(&tmux);
    drop(holder);
}

/// Does the force-release dialog's typed-key field read exactly `text`?
/// It reads `› type key [TEXT▏]`, the cursor drawn after the text.
fn typed_key_reads(screen: &str, text: &str) -> bool {
    screen.lines().any(|l| {
        l.split_once("type key")
            .and_then(|(_, rest)| rest.split_once('['))
            .is_some_and(|(_, field)| {
                field
                    .trim_end_matches(|c: char| c == ']' || c == '│' || c.is_whitespace())
                    .trim_end_matches(|c: char| !c.is_ascii_graphic())
                    == text
            })
    })
}

/// With several roots a row reads `SYMBOL STATE ROOT KEY …`.
fn row_in_root_reads(screen: &str, root: &str, key: &str, state: &str) -> bool {
    screen.lines().any(|line| {
        let table = line.split('│').next().unwrap_or("");
        let mut words = table.trim_start_matches(['▶', ' ']).split_whitespace();
        let _symbol = words.next();
        words.next() == Some(state) && words.next() == Some(root) && words.next() == Some(key)
    })
}

#[test]
fn over_two_roots_a_claim_made_in_b_shows_with_bs_label_and_f_archives_it_in_b() {
    let td = tempfile::TempDir::new().unwrap();
    let (a, b) = (td.path().join("alpha"), td.path().join("beta"));
    for r in [&a, &b] {
        std::fs::create_dir_all(r).unwrap();
    }
    // The same key held in A by a live process: F must not touch it.
    let live = Sleeper::spawn();
    let live_pid = live.pid().to_string();
    let take = |root: &Path, pid: &str| {
        let out = claimtop(
            root,
            &[
                "acquire",
                "e2e:shared",
                "--holder",
                "e2e:other",
                "--pid",
                pid,
            ],
        );
        assert!(
            out.status.success(),
            "acquire failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    take(&a, &live_pid);

    let Some(tmux) = dashboard_over_roots(&[&a, &b]) else {
        return;
    };
    tmux.wait_for("A's claim with A's label", PATIENCE, |s| {
        row_in_root_reads(s, "alpha", "e2e:shared", "live")
    });

    // Another process claims the same key in B, then dies.
    let mut holder = Sleeper::spawn();
    take(&b, &holder.pid().to_string());
    tmux.wait_for("B's claim with B's label", PATIENCE, |s| {
        row_in_root_reads(s, "beta", "e2e:shared", "live")
    });
    holder.kill();
    tmux.wait_for("B's claim to turn stale", PATIENCE, |s| {
        row_in_root_reads(s, "beta", "e2e:shared", "stale")
    });

    // Stale sorts before live: B's row is the first; force-release it.
    tmux.keys(&["g"]);
    tmux.keys(&["F"]);
    tmux.wait_for("the force-release confirmation naming B", PATIENCE, |s| {
        s.contains("y force-release") && s.contains("beta —")
    });
    confirm_force_release(&tmux);
    archives_appear(&b, 1);
    let archived = expired_files(&b);
    assert_eq!(archived.len(), 1, "archived in B: {archived:?}");
    assert!(expired_files(&a).is_empty(), "something was archived in A");
    assert!(claimtop::claims::claim_path(&a, "e2e:shared").exists());
    assert!(!claimtop::claims::claim_path(&b, "e2e:shared").exists());
    tmux.wait_for("B's row to go while A's stays", PATIENCE, |s| {
        !row_in_root_reads(s, "beta", "e2e:shared", "stale")
            && row_in_root_reads(s, "alpha", "e2e:shared", "live")
    });

    tmux.keys(&["q"]);
    assert_clean_exit(&tmux);
    drop(live);
}

#[test]
fn marked_stale_claims_are_force_released_together_and_the_command_line_sorts() {
    let td = tempfile::TempDir::new().unwrap();
    let root = td.path();
    stale_claims(root, &["e2e:one", "e2e:two", "e2e:kept"]);
    let Some(tmux) = dashboard_over(root) else {
        return;
    };
    tmux.wait_for("three stale claims", PATIENCE, |s| {
        ["e2e:one", "e2e:two", "e2e:kept"]
            .iter()
            .all(|k| row_reads(s, k, "stale"))
    });
    // Sorted by key, reversed: two, one, kept.
    tmux.keys(&[":"]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", "sort key rev"]);
    tmux.keys(&["Enter"]);
    let sorted = tmux.wait_for("the rows sorted by key, reversed", PATIENCE, |s| {
        s.contains("key ▼")
    });
    let order: Vec<&str> = sorted
        .lines()
        .map(|l| l.split('│').next().unwrap_or(""))
        .filter(|table| table.contains("✖ stale"))
        .filter_map(|table| {
            ["e2e:two", "e2e:one", "e2e:kept"]
                .into_iter()
                .find(|k| table.contains(k))
        })
        .collect();
    assert_eq!(order, ["e2e:two", "e2e:one", "e2e:kept"], "{sorted}");

    // The first two rows marked (space moves down), then F once.
    tmux.keys(&["g", "Space", "Space"]);
    tmux.wait_for("two rows marked", PATIENCE, |s| s.contains("2 marked"));
    tmux.keys(&["F"]);
    let asked = tmux.wait_for("the bulk question", PATIENCE, |s| {
        s.contains("y force-release 2 claims")
    });
    assert!(asked.contains("Force-release 2 marked claims"), "{asked}");
    tmux.keys(&["y"]);
    archives_appear(root, 2);
    let mut archived: Vec<String> = expired_files(root)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    archived.sort();
    assert_eq!(archived.len(), 2, "{archived:?}");
    assert!(archived[0].starts_with("e2e%3Aone.") && archived[1].starts_with("e2e%3Atwo."));
    assert!(claimtop::claims::claim_path(root, "e2e:kept").exists());
    tmux.wait_for("only the unmarked claim left", PATIENCE, |s| {
        row_reads(s, "e2e:kept", "stale") && !row_reads(s, "e2e:one", "stale")
    });
    // Each claim's answer is a message of its own.
    tmux.keys(&["m"]);
    let messages = tmux.wait_for("the messages", PATIENCE, |s| s.contains("messages ("));
    assert!(
        messages.contains("e2e:one") && messages.contains("e2e:two"),
        "{messages}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the messages closed", PATIENCE, |s| {
        !s.contains("messages (")
    });
    tmux.keys(&["q"]);
    assert_clean_exit(&tmux);
}
