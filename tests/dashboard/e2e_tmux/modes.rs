//! The ways out and the layers, end to end: Ctrl-C and F10 ask while a
//! claim taken here is held and Ctrl-C twice quits keeping it; the marks
//! (all shown, what the filter hides, none); leaving the as-of table.

use super::*;

#[test]
fn ctrl_c_and_f10_ask_while_a_claim_taken_here_is_held_and_ctrl_c_twice_quits_keeping_it() {
    let td = tempfile::TempDir::new().unwrap();
    let root = td.path();
    let Some(tmux) = dashboard_over(root) else {
        return;
    };
    acquire_from_form(&tmux, "e2e:mine");
    let lockfile = claimtop::claims::claim_path(root, "e2e:mine");

    for (key, name) in [("C-c", "Ctrl-C"), ("F10", "F10")] {
        tmux.keys(&[key]);
        let asked = tmux.wait_for(&format!("the quit question after {name}"), PATIENCE, |s| {
            s.contains("release them and quit")
        });
        assert!(asked.contains("e2e:mine"), "{name}: {asked}");
        assert!(exit_status(&asked).is_none(), "{name} quit:\n{asked}");
        tmux.keys(&["Escape"]);
        tmux.wait_for("the question to close", PATIENCE, |s| {
            !s.contains("release them and quit")
        });
    }
    // Twice, at once: out, keeping the claim (it names this process, so
    // it is stale from now on, and still there for `list` to say so).
    tmux.keys(&["C-c", "C-c"]);
    assert_clean_exit(&tmux);
    assert!(lockfile.exists(), "Ctrl-C twice released the claim");
}

#[test]
fn marks_over_a_filter_say_what_it_hides_and_the_as_of_table_is_left_with_esc() {
    let td = tempfile::TempDir::new().unwrap();
    let root = td.path();
    stale_claims(root, &["e2e:k1", "e2e:k2", "e2e:k3"]);
    let Some(tmux) = dashboard_over(root) else {
        return;
    };
    tmux.wait_for("three stale claims", PATIENCE, |s| {
        ["e2e:k1", "e2e:k2", "e2e:k3"]
            .iter()
            .all(|k| row_reads(s, k, "stale"))
    });
    // Every row shown, marked at once; then a filter showing one of them.
    tmux.keys(&["C-Space"]);
    tmux.wait_for("three rows marked", PATIENCE, |s| s.contains("3 marked"));
    tmux.keys(&["/"]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", "k1"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the filter showing one row", PATIENCE, |s| {
        row_reads(s, "e2e:k1", "stale") && !row_reads(s, "e2e:k2", "stale")
    });
    tmux.keys(&["F"]);
    let asked = tmux.wait_for("the bulk question", PATIENCE, |s| {
        s.contains("Force-release 3 marked claims")
    });
    assert!(
        asked.contains("2 of them hidden by the filter (1 shown)"),
        "{asked}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the question to close", PATIENCE, |s| {
        !s.contains("Force-release 3")
    });
    assert!(expired_files(root).is_empty(), "archived without an answer");
    tmux.keys(&["C-\\"]);
    tmux.wait_for("every mark dropped", PATIENCE, |s| {
        s.contains("dropped 3 marks") && !s.contains("3 marked")
    });

    // The events log from an hour ago, then the table as of then: Esc
    // returns to now with the events pane focused.
    tmux.keys(&[":"]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", "goto 1h"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the events from an hour ago", PATIENCE, |s| {
        s.contains("events from")
    });
    tmux.keys(&[":"]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", "asof 1h"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the table as of an hour ago", PATIENCE, |s| {
        s.lines().next().is_some_and(|h| h.contains("as of"))
    });
    tmux.keys(&["Escape"]);
    let now = tmux.wait_for("the table of now", PATIENCE, |s| {
        s.contains("back to now") && row_reads(s, "e2e:k1", "stale")
    });
    assert!(!now.lines().next().unwrap_or("").contains("as of"), "{now}");
    tmux.keys(&["q"]);
    assert_clean_exit(&tmux);
}
