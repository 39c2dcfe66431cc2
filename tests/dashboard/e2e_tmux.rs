//! The real binary, in a real terminal: the dashboard runs inside a detached
//! tmux session on a temp root, driven with `send-keys` and read with
//! `capture-pane`. Every wait polls the screen up to a deadline; no sleep is
//! ever the assertion.

mod force;
mod log_viewer;
mod modes;

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

/// A shell at COLS×ROWS at its prompt; None (after saying why) when tmux
/// is missing outside CI.
fn shell() -> Option<Tmux> {
    if let Err(why) = Tmux::available() {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set, so the tmux end-to-end test must run, but: {why}");
        }
        eprintln!("skipping the tmux end-to-end test: {why} (set CI to make this a failure)");
        return None;
    }
    let tmux = Tmux::start(COLS, ROWS);
    tmux.wait_for("the shell prompt", PATIENCE, |s| !s.trim().is_empty());
    Some(tmux)
}

/// The dashboard with one `--root` per path.
fn dashboard_over_roots(roots: &[&Path]) -> Option<Tmux> {
    let tmux = shell()?;
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

/// Once the dashboard shows: `a`, `key` typed (the TTL left at its
/// default), Enter; waits for the claim taken here to show as live.
fn acquire_from_form(tmux: &Tmux, key: &str) {
    tmux.wait_for("the dashboard", PATIENCE, |s| {
        s.contains("claims") && s.contains('─')
    });
    tmux.keys(&["a"]);
    tmux.wait_for("the acquire form", PATIENCE, |s| {
        s.contains("acquire a key")
    });
    tmux.run(&["send-keys", "-t", "e2e", "-l", key]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("the claim taken here", PATIENCE, |s| {
        row_reads(s, key, "live")
    });
}

/// Claims on `keys` held by a pid that is gone: stale from the start.
fn stale_claims(root: &Path, keys: &[&str]) {
    let dead = crate::common::dead_pid().to_string();
    for key in keys {
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

#[test]
fn with_nothing_named_the_dashboard_says_how_to_name_a_root_or_a_store_and_q_quits() {
    let Some(tmux) = shell() else {
        return;
    };
    // No root, no store, no home: nothing to show, and no settings file.
    let config = tempfile::TempDir::new().unwrap();
    tmux.type_line(&format!(
        "env -u HOME -u FNO_CLAIMS_ROOT -u FNO_CLAIMS_STORE XDG_CONFIG_HOME={} {}; echo EXIT=$?",
        shell_quote(config.path()),
        shell_quote(Path::new(BIN)),
    ));
    tmux.wait_for("the screen that says how to name one", PATIENCE, |s| {
        s.contains("nothing named") && s.contains("--root DIR") && s.contains("--store etcd://")
    });
    tmux.keys(&["q"]);
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

#[test]
fn an_operator_acquires_opens_suspends_shrinks_and_releases_on_quit() {
    let td = tempfile::TempDir::new().unwrap();
    let root = td.path();
    let Some(tmux) = dashboard_over(root) else {
        return;
    };
    acquire_from_form(&tmux, "e2e:mine");
    tmux.wait_for("the new claim, selected", PATIENCE, |s| {
        s.contains("claims 1/1")
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

    // Too small: the keys that would force-release our own live claim (F,
    // the key typed in full, Enter) do nothing unseen. `?` works here, so
    // the help showing says every key before it was read.
    tmux.run(&["resize-window", "-t", "e2e", "-x", "40", "-y", "10"]);
    tmux.wait_for("the too-small message", PATIENCE, |s| {
        s.contains("terminal too small")
    });
    tmux.keys(&["F"]);
    tmux.run(&["send-keys", "-t", "e2e", "-l", "e2e:mine"]);
    tmux.keys(&["Enter", "?"]);
    tmux.wait_for("the help, over the small screen", PATIENCE, |s| {
        s.contains("? closes")
    });
    assert!(lockfile.exists(), "a key acted on the too-small screen");
    assert!(
        expired_files(root).is_empty(),
        "archived from the too-small screen"
    );
    tmux.keys(&["?"]);
    tmux.wait_for("the too-small message again", PATIENCE, |s| {
        s.contains("terminal too small")
    });
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
    tmux.run(&["send-keys", "-t", "e2e", "-l", "worker-7 "]);
    tmux.keys(&["Enter"]);
    // The only line naming worker-7 (not worker-70..) is its release, the
    // newest of its two: line 16 of 5 000.
    tmux.wait_for("the search's line", PATIENCE, |s| {
        s.contains("line 16 of 5 000")
    });
    tmux.keys(&["v"]);
    tmux.wait_for("the raw JSON", PATIENCE, |s| {
        s.contains("\"duration_held_ms\": 1000")
    });
    tmux.keys(&["v", "N"]);
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
    // A regular expression (`~`): worker-7 as a word, not worker-70.
    tmux.run(&["send-keys", "-t", "e2e", "-l", "~worker-7\\b"]);
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
