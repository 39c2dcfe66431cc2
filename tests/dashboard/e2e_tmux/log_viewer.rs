//! The events pane as a log viewer and the view as data, end to end, in
//! one scenario: one clock in the local zone, a search of what lines show,
//! the `:events` filter, Enter from a line to its claim, the `h` list's
//! selection, and `:write` refusing to write over a file.

use super::*;

/// The dashboard over `root` in the zone `tz`, with `--local-time`.
fn dashboard_in_zone(root: &Path, tz: &str) -> Option<Tmux> {
    let tmux = shell()?;
    tmux.type_line(&format!(
        "cd {} && TZ={tz} {} --root . --local-time; echo EXIT=$?",
        shell_quote(root),
        shell_quote(Path::new(BIN)),
    ));
    Some(tmux)
}

/// The events pane's lines, below its title.
fn pane(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .skip_while(|l| !l.contains("events ·"))
        .skip(1)
        .collect()
}

/// `lead` (`:` or `/`), `text` typed as it is, then Enter.
fn typed(tmux: &Tmux, lead: &str, text: &str) {
    tmux.keys(&[lead]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", text]);
    tmux.keys(&["Enter"]);
}

fn command(tmux: &Tmux, line: &str) {
    typed(tmux, ":", line);
}

#[test]
fn the_events_pane_reads_one_clock_finds_what_it_shows_filters_jumps_and_the_view_is_saved() {
    let td = tempfile::TempDir::new().unwrap();
    let root = td.path();
    stale_claims(root, &["e2e:k1"]);
    for (key, holder) in [("e2e:k2", "ci-7"), ("e2e:k2", "")] {
        let out = match holder {
            "" => claimtop(root, &["release", key, "--holder", "ci-7"]),
            h => claimtop(root, &["acquire", key, "--holder", h, "--ttl", "10m"]),
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A corrupted claim file, and a recovery mutex left by a killed holder.
    let claims = root.join(".fno/claims");
    std::fs::write(claims.join("e2e%3Abad.lock"), "garbage: [").unwrap();
    let corpse = claims.join("e2e%3Ak9.lock.recovery.d");
    std::fs::create_dir(&corpse).unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(600);
    std::fs::File::open(&corpse)
        .and_then(|f| f.set_modified(old))
        .unwrap();

    let Some(tmux) = dashboard_in_zone(root, "Asia/Kolkata") else {
        return;
    };
    // One clock: the header and every event line in the local zone, marked.
    let screen = tmux.wait_for("the events in local time", PATIENCE, |s| {
        pane(s).iter().filter(|l| l.contains("+05:30 ")).count() >= 3
    });
    assert!(
        screen.lines().next().unwrap_or("").contains("+05:30"),
        "{screen}"
    );

    // A search matches the line as shown, not its JSON.
    tmux.keys(&["Tab", "Tab"]);
    typed(&tmux, "/", "held=");
    tmux.wait_for("the release, found by its shown field", PATIENCE, |s| {
        s.contains("/held=") && s.contains("match 1 of 1")
    });
    typed(&tmux, "/", "duration_held_ms");
    tmux.wait_for("a wire name no line shows", PATIENCE, |s| {
        s.contains("no line matches \"duration_held_ms\"")
    });
    typed(&tmux, "/", "~k[0-9]+ +ci-");
    tmux.wait_for("a regular expression's two matches", PATIENCE, |s| {
        s.contains("match 2 of 2")
    });
    typed(&tmux, "/", "~k([");
    tmux.wait_for("a broken pattern, said", PATIENCE, |s| {
        s.contains("not a regular expression")
    });
    tmux.keys(&["G"]);

    // The filter: acquires only, not ci's.
    command(&tmux, "events type:acquired -holder:ci");
    let screen = tmux.wait_for("the filtered tail", PATIENCE, |s| {
        s.contains("type:acquired -holder:ci (:events clears)")
    });
    let lines: Vec<&str> = pane(&screen)
        .into_iter()
        .filter(|l| l.contains("+05:30 "))
        .collect();
    assert_eq!(lines.len(), 1, "{screen}");
    assert!(
        lines[0].contains("acquired") && lines[0].contains("e2e:k1"),
        "{screen}"
    );
    // Saved as shown: one event, as JSON lines.
    command(&tmux, "write events.jsonl");
    tmux.wait_for("the events written", PATIENCE, |s| {
        s.contains("wrote 1 event to events.jsonl")
    });
    let saved = std::fs::read_to_string(root.join("events.jsonl")).unwrap();
    let v: serde_json::Value = serde_json::from_str(saved.trim()).unwrap();
    assert_eq!(
        (v["type"].as_str(), v["key"].as_str()),
        (Some("claim_acquired"), Some("e2e:k1"))
    );

    // Enter: the line's claim, selected in the table.
    tmux.keys(&["Enter"]);
    tmux.wait_for("the claim's row", PATIENCE, |s| {
        s.contains("» claims")
            && s.lines()
                .any(|l| l.starts_with("▶") && l.contains("e2e:k1"))
    });

    // The table as shown, to CSV; never over the file.
    command(&tmux, "write claims.csv");
    tmux.wait_for("the rows written", PATIENCE, |s| {
        s.contains("wrote 2 rows to claims.csv")
    });
    let csv = std::fs::read_to_string(root.join("claims.csv")).unwrap();
    assert!(csv.starts_with("\"state\",\"key\""), "{csv}");
    assert!(
        csv.contains("\"e2e:k1\"") && csv.contains("\"e2e:bad\""),
        "{csv}"
    );
    command(&tmux, "write claims.csv");
    tmux.wait_for("the refusal", PATIENCE, |s| {
        s.contains("claims.csv exists: :write! claims.csv")
    });
    assert_eq!(
        std::fs::read_to_string(root.join("claims.csv")).unwrap(),
        csv
    );

    // The hazards: Enter goes to the corrupted claim's row; x on the
    // corpse cleans it after the same question as x anywhere.
    tmux.keys(&["g", "j", "h"]);
    tmux.wait_for("the hazards list", PATIENCE, |s| {
        s.contains("▶corrupted_claim")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the corrupted row", PATIENCE, |s| {
        !s.contains("hazards (")
            && s.lines()
                .any(|l| l.starts_with("▶") && l.contains("e2e:bad"))
    });
    tmux.keys(&["h", "j"]);
    tmux.wait_for("the corpse selected", PATIENCE, |s| {
        s.contains("▶stale_mutex")
    });
    tmux.keys(&["x"]);
    tmux.wait_for("the clean question", PATIENCE, |s| {
        s.contains("e2e%3Ak9.lock.recovery.d") && !s.contains("hazards (")
    });
    tmux.keys(&["y"]);
    tmux.wait_for("the corpse cleaned", PATIENCE, |_| !corpse.exists());

    // T: events as spans from now.
    tmux.keys(&["T"]);
    tmux.wait_for("times as spans", PATIENCE, |s| {
        pane(s).iter().any(|l| l.contains(" ago acquired"))
    });
    tmux.keys(&["q"]);
    assert_clean_exit(&tmux);
}
