//! The real binary, in a real terminal: the dashboard runs inside a detached
//! tmux session on a temp root, driven with `send-keys` and read with
//! `capture-pane`. Every wait polls the screen up to a deadline; no sleep is
//! ever the assertion.

use crate::common::tmux::Tmux;
use crate::common::Sleeper;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_claimtop");
const COLS: u16 = 160;
const ROWS: u16 = 48;
/// Generous: a loaded CI box can be slow to spawn and to notice a change.
const PATIENCE: Duration = Duration::from_secs(10);

/// A shell at COLS×ROWS that has started the dashboard over `root` and
/// will print `EXIT=<status>` when it quits; None (after saying why) when
/// tmux is missing outside CI.
fn dashboard_over(root: &Path) -> Option<Tmux> {
    dashboard_over_roots(&[root])
}

/// The dashboard with one `--root` per path.
fn dashboard_over_roots(roots: &[&Path]) -> Option<Tmux> {
    if let Err(why) = Tmux::available() {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set, so the tmux end-to-end test must run, but: {why}");
        }
        eprintln!("skipping the tmux end-to-end test: {why} (set CI to make this a failure)");
        return None;
    }
    let tmux = Tmux::start(COLS, ROWS);
    tmux.wait_for("the shell prompt", PATIENCE, |s| !s.trim().is_empty());
    let flags: Vec<String> = roots
        .iter()
        .map(|r| format!("--root {}", shell_quote(r)))
        .collect();
    tmux.type_line(&format!(
        "{} {}; echo EXIT=$?",
        shell_quote(Path::new(BIN)),
        flags.join(" ")
    ));
    Some(tmux)
}

/// Does the claims table show a row for `key` in `state`?
///
/// A row reads `[▶] SYMBOL WORD KEY …`, left of the detail pane's border: the
/// word, not only the colour, names the state. Matching the row's shape keeps
/// the detail pane (which repeats the key) and the events pane (whose types
/// contain words like "stale") from answering for it.
fn row_reads(screen: &str, key: &str, state: &str) -> bool {
    screen.lines().any(|line| {
        let table = line.split('│').next().unwrap_or("");
        let mut words = table.trim_start_matches(['▶', ' ']).split_whitespace();
        let _symbol = words.next();
        words.next() == Some(state) && words.next() == Some(key)
    })
}

/// Does the events pane (below its title line) show an event of `kind` for
/// `key`? A row reads `HH:MM:SS TYPE KEY …`; the pane may drop the `claim_`
/// prefix of the type.
fn event_shown(screen: &str, kind: &str, key: &str) -> bool {
    let short = kind.strip_prefix("claim_").unwrap_or(kind);
    screen
        .lines()
        .skip_while(|l| !l.starts_with("events"))
        .skip(1)
        .any(|line| {
            let mut words = line.split_whitespace();
            let _time = words.next();
            matches!(words.next(), Some(t) if t == kind || t == short) && words.next() == Some(key)
        })
}

/// The status the shell printed after `echo EXIT=$?`. The typed command line
/// itself reads `EXIT=$?`, so only digits after the `=` count.
fn exit_status(screen: &str) -> Option<String> {
    // The last one: a job stopped with Ctrl-Z prints its own before `fg`.
    screen.rmatch_indices("EXIT=").find_map(|(at, m)| {
        let digits: String = screen[at + m.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        (!digits.is_empty()).then_some(digits)
    })
}

fn claimtop(root: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--root")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("claimtop runs")
}

fn expired_files(root: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(root.join(".fno/claims/.expired"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.to_string_lossy().replace('\'', r"'\''"))
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
    let deadline = Instant::now() + PATIENCE;
    while expired_files(root).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
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

#[test]
fn sigterm_quits_the_dashboard_and_restores_the_terminal() {
    let td = tempfile::TempDir::new().unwrap();
    let Some(tmux) = dashboard_over(td.path()) else {
        return;
    };
    tmux.wait_for("the dashboard", PATIENCE, |s| {
        s.contains("claims") && s.contains('─')
    });
    let shell: u32 = tmux.pane_var("pane_pid").parse().expect("pane pid");
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
        .expect("the shell's children");
    let dashboard: i32 = children
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the dashboard's pid");
    // SAFETY: sending a signal to a pid we just read; no memory involved.
    assert_eq!(unsafe { libc::kill(dashboard, libc::SIGTERM) }, 0);
    assert_clean_exit(&tmux);
}

/// The dashboard exited 0 and left the terminal as it found it.
fn assert_clean_exit(tmux: &Tmux) {
    let screen = tmux.wait_for("the shell after quitting", PATIENCE, |s| {
        exit_status(s).is_some()
    });
    assert_eq!(
        exit_status(&screen).as_deref(),
        Some("0"),
        "the dashboard did not exit with status 0:\n{screen}"
    );
    assert!(
        !screen.contains('│') && !screen.contains('─'),
        "dashboard drawing left on the screen:\n{screen}"
    );
    assert_eq!(
        tmux.pane_var("alternate_on"),
        "0",
        "still on the alternate screen"
    );
    assert_eq!(
        tmux.pane_var("cursor_flag"),
        "1",
        "the cursor was left hidden"
    );
}

/// The confirm dialog for a corrupted claim (not Live, so no typed key).
fn confirm_force_release(tmux: &Tmux) {
    tmux.keys(&["y"]);
}

#[test]
fn an_operator_acquires_opens_suspends_shrinks_and_releases_on_quit() {
    let td = tempfile::TempDir::new().unwrap();
    let root = td.path();
    let Some(tmux) = dashboard_over(root) else {
        return;
    };
    tmux.wait_for("the dashboard", PATIENCE, |s| {
        s.contains("claims") && s.contains('─')
    });

    // Acquire from the form: key typed, TTL left at its default.
    tmux.keys(&["a"]);
    tmux.wait_for("the acquire form", PATIENCE, |s| {
        s.contains("acquire a key")
    });
    tmux.run(&["send-keys", "-t", "e2e", "-l", "e2e:mine"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the new claim, selected", PATIENCE, |s| {
        row_reads(s, "e2e:mine", "live") && s.contains("claims 1/1")
    });
    let lockfile = claimtop::claims::claim_path(root, "e2e:mine");
    assert!(lockfile.exists());

    // Enter: the whole record.
    tmux.keys(&["Enter"]);
    tmux.wait_for("the record overlay", PATIENCE, |s| {
        s.contains("record (YAML") && s.contains("key: e2e:mine")
    });
    tmux.keys(&["Escape"]);
    // Wait for it to close: an Esc followed at once by another key reads as
    // Alt plus that key, as in any terminal program.
    tmux.wait_for("the record overlay to close", PATIENCE, |s| {
        !s.contains("record (YAML")
    });

    // Ctrl-Z hands the terminal back; fg brings the dashboard back whole.
    tmux.keys(&["C-z"]);
    tmux.wait_for("the shell with the job stopped", PATIENCE, |s| {
        tmux.pane_var("alternate_on") == "0" && !s.contains("claims 1/1")
    });
    tmux.type_line("clear; fg; echo EXIT=$?");
    tmux.wait_for("the dashboard again", PATIENCE, |s| {
        row_reads(s, "e2e:mine", "live")
    });

    // Too small: a force-release key does nothing unseen.
    tmux.run(&["resize-window", "-t", "e2e", "-x", "40", "-y", "10"]);
    tmux.wait_for("the too-small message", PATIENCE, |s| {
        s.contains("terminal too small")
    });
    tmux.keys(&["F", "y"]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(lockfile.exists(), "a key acted on the too-small screen");
    let (cols, rows) = (COLS.to_string(), ROWS.to_string());
    tmux.run(&["resize-window", "-t", "e2e", "-x", &cols, "-y", &rows]);
    tmux.wait_for("the table again", PATIENCE, |s| {
        row_reads(s, "e2e:mine", "live")
    });
    assert!(
        !tmux.screen().contains("force-release ─"),
        "no dialog was opened while too small"
    );

    // q with a claim of our own asks; r releases it, then quits.
    tmux.keys(&["q"]);
    tmux.wait_for("the quit question", PATIENCE, |s| {
        s.contains("release them and quit")
    });
    tmux.keys(&["r"]);
    assert_clean_exit(&tmux);
    assert!(!lockfile.exists(), "the claim was not released on quit");
}

/// Five thousand claim events over a hundred keys, timed in the last hour:
/// key `node:gpu-<i % 100>` acquired by `worker-<i>`, then released.
fn write_history(root: &Path) {
    let now = claimtop::claims::now_ms();
    let mut text = String::new();
    for i in 0..2500i64 {
        let at = now - 3_600_000 + i * 1_400;
        let ts = |ms: i64| {
            chrono::DateTime::from_timestamp_millis(ms)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        };
        let key = format!("node:gpu-{}", i % 100);
        text.push_str(&format!(
            "{{\"ts\":\"{}\",\"type\":\"claim_acquired\",\"source\":\"fno-loop\",\"data\":{{\"key\":\"{key}\",\"holder\":\"worker-{i}\",\"pid\":1,\"host\":\"h\",\"acquired_at\":{at},\"expires_at\":null}}}}\n",
            ts(at)
        ));
        text.push_str(&format!(
            "{{\"ts\":\"{}\",\"type\":\"claim_released\",\"source\":\"fno-loop\",\"data\":{{\"key\":\"{key}\",\"holder\":\"worker-{i}\",\"pid\":1,\"host\":\"h\",\"acquired_at\":{at},\"expires_at\":null,\"duration_held_ms\":1000}}}}\n",
            ts(at + 1000)
        ));
    }
    std::fs::create_dir_all(root.join(".fno")).unwrap();
    std::fs::write(root.join(".fno/events.jsonl"), text).unwrap();
}

#[test]
fn the_timeline_and_the_events_search_work_over_the_whole_log() {
    let td = tempfile::TempDir::new().unwrap();
    write_history(td.path());
    let Some(tmux) = dashboard_over(td.path()) else {
        return;
    };
    tmux.wait_for("the dashboard", PATIENCE, |s| {
        s.contains("claims") && s.contains('─')
    });
    tmux.keys(&["t"]);
    let screen = tmux.wait_for("the whole log in the timeline", PATIENCE, |s| {
        s.contains("timeline ·") && s.contains("whole log")
    });
    assert!(screen.contains("node:gpu-0"), "{screen}");
    assert!(screen.contains("100 keys"), "{screen}");
    // `t` again closes it (an Escape followed at once by another key reads
    // as Alt+that key to the terminal).
    tmux.keys(&["t"]);
    tmux.wait_for("the panes", PATIENCE, |s| {
        s.contains("events") && !s.contains("timeline ·")
    });
    tmux.keys(&["Tab", "Tab", "/"]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", "worker-7\""]);
    tmux.keys(&["Enter"]);
    // The only line naming worker-7 (not worker-70..) is its release, the
    // newest of its two: line 16 of 5 000.
    tmux.wait_for("the search's line", PATIENCE, |s| {
        s.contains("line 16 of 5 000")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the raw JSON", PATIENCE, |s| {
        s.contains("\"duration_held_ms\": 1000")
    });
    tmux.keys(&["Enter", "N"]);
    // The older match is its acquire, just above.
    tmux.wait_for("the older match", PATIENCE, |s| {
        s.contains("line 15 of 5 000")
    });
    tmux.keys(&["G", "q"]);
    assert_clean_exit(&tmux);
}

#[test]
fn the_events_search_counts_its_matches_and_n_and_capital_n_wrap_at_the_ends() {
    let td = tempfile::TempDir::new().unwrap();
    write_history(td.path());
    let Some(tmux) = dashboard_over(td.path()) else {
        return;
    };
    tmux.wait_for("the dashboard", PATIENCE, |s| {
        s.contains("claims") && s.contains('─')
    });
    // worker-7's two lines, 15 and 16 of 5 000: Enter lands on the newer.
    tmux.keys(&["Tab", "Tab", "/"]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", "worker-7\""]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the last match, counted", PATIENCE, |s| {
        s.contains("line 16 of 5 000") && s.contains("match 2 of 2")
    });
    // n goes towards newer lines: past the last match, to the first.
    tmux.keys(&["n"]);
    tmux.wait_for("n wrapping to the first match", PATIENCE, |s| {
        s.contains("line 15 of 5 000")
            && s.contains("match 1 of 2")
            && s.contains("search wrapped to the top")
    });
    // N goes back: before the first match, to the last.
    tmux.keys(&["N"]);
    tmux.wait_for("N wrapping to the last match", PATIENCE, |s| {
        s.contains("line 16 of 5 000")
            && s.contains("match 2 of 2")
            && s.contains("search wrapped to the bottom")
    });
    tmux.keys(&["N"]);
    tmux.wait_for("N to the older match, without wrapping", PATIENCE, |s| {
        s.contains("line 15 of 5 000") && s.contains("match 1 of 2")
    });
    // No match at all: said so, and the cursor stays.
    tmux.keys(&["/"]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", "nowhere-zq"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("no match at all", PATIENCE, |s| {
        s.contains("no line matches \"nowhere-zq\"") && s.contains("line 15 of 5 000")
    });
    tmux.keys(&["G", "q"]);
    assert_clean_exit(&tmux);
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
    let deadline = Instant::now() + PATIENCE;
    while expired_files(&b).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
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
fn the_dashboard_opens_with_the_filter_and_sort_the_settings_file_names() {
    let td = tempfile::TempDir::new().unwrap();
    let root = td.path();
    let stale = claimtop::claims::claim_path(root, "e2e:stale");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(
        &stale,
        crate::common::dead_holder_yaml("e2e:stale", "e2e:gone"),
    )
    .unwrap();
    let live = Sleeper::spawn();
    let pid = live.pid().to_string();
    let out = claimtop(
        root,
        &[
            "acquire",
            "e2e:live",
            "--holder",
            "e2e:alive",
            "--pid",
            &pid,
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let settings = td.path().join("settings.toml");
    std::fs::write(
        &settings,
        "[dashboard]\nfilter = \"state:stale\"\nsort = \"key\"\nreverse = true\n",
    )
    .unwrap();

    if let Err(why) = Tmux::available() {
        assert!(std::env::var_os("CI").is_none(), "CI is set, but: {why}");
        eprintln!("skipping: {why}");
        return;
    }
    let tmux = Tmux::start(COLS, ROWS);
    tmux.wait_for("the shell prompt", PATIENCE, |s| !s.trim().is_empty());
    tmux.type_line(&format!(
        "{} --root {} --config {}; echo EXIT=$?",
        shell_quote(Path::new(BIN)),
        shell_quote(root),
        shell_quote(&settings)
    ));
    let screen = tmux.wait_for("the stale claim, filtered", PATIENCE, |s| {
        row_reads(s, "e2e:stale", "stale")
    });
    assert!(
        !row_reads(&screen, "e2e:live", "live"),
        "the settings' filter let a live claim through:\n{screen}"
    );
    assert!(screen.contains("filter: state:stale"), "{screen}");
    assert!(
        screen.contains("key ▼") || screen.contains("key▼"),
        "not sorted by key, reversed:\n{screen}"
    );
    // Esc clears it, as a typed filter: the live claim shows.
    tmux.keys(&["Escape"]);
    tmux.wait_for("every claim once the filter is cleared", PATIENCE, |s| {
        row_reads(s, "e2e:live", "live")
    });
    tmux.keys(&["q"]);
    assert_clean_exit(&tmux);
    drop(live);
}

#[test]
fn marked_stale_claims_are_force_released_together_and_the_command_line_sorts() {
    let td = tempfile::TempDir::new().unwrap();
    let root = td.path();
    let dead = crate::common::dead_pid().to_string();
    for key in ["e2e:one", "e2e:two", "e2e:kept"] {
        let out = claimtop(
            root,
            &["acquire", key, "--holder", "e2e:gone", "--pid", &dead],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
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
    let deadline = Instant::now() + PATIENCE;
    while expired_files(root).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
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
