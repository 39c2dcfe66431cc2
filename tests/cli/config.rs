//! `claimtop config --print` and the settings file: where it is looked for,
//! what it prints, and that a key or value it cannot use is named, never
//! ignored.

use crate::common::claimtop;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn run(home: &Path, env: &[(&str, &Path)], args: &[&str]) -> Output {
    let mut c = claimtop(home);
    c.env_remove("XDG_CONFIG_HOME");
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn without_a_file_print_shows_every_default_and_where_it_looked() {
    let home = tempfile::tempdir().unwrap();
    let out = run(home.path(), &[], &["config", "--print"]);
    assert_eq!(out.status.code(), Some(0));
    let shown = text(&out.stdout);
    let expected = home.path().join(".config/claimtop/config.toml");
    assert!(
        shown.starts_with(&format!("# defaults: no file at {}\n", expected.display())),
        "{shown}"
    );
    for line in [
        "[dashboard]",
        "filter = \"\"",
        "sort = \"state\"",
        "time_zone = \"utc\"",
    ] {
        assert!(
            shown.lines().any(|l| l == line),
            "{line} missing from\n{shown}"
        );
    }
}

#[test]
fn xdg_config_home_is_read_first_and_config_overrides_both() {
    let home = tempfile::tempdir().unwrap();
    let xdg = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(xdg.path().join("claimtop")).unwrap();
    std::fs::write(
        xdg.path().join("claimtop/config.toml"),
        "[dashboard]\nfilter = \"state:stale\"\nsort = \"age\"\n",
    )
    .unwrap();
    let out = run(
        home.path(),
        &[("XDG_CONFIG_HOME", xdg.path())],
        &["config", "--print", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["settings"]["dashboard"]["filter"], "state:stale");
    assert_eq!(doc["settings"]["dashboard"]["sort"], "age");
    assert_eq!(
        doc["path"],
        xdg.path()
            .join("claimtop/config.toml")
            .to_string_lossy()
            .as_ref()
    );

    let other = home.path().join("ops.toml");
    std::fs::write(&other, "[dashboard]\ntime_zone = \"local\"\n").unwrap();
    let out = run(
        home.path(),
        &[("XDG_CONFIG_HOME", xdg.path())],
        &[
            "config",
            "--print",
            "--json",
            "--config",
            other.to_str().unwrap(),
        ],
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["settings"]["dashboard"]["time_zone"], "local");
    assert_eq!(doc["settings"]["dashboard"]["filter"], "");
}

#[test]
fn an_unknown_key_a_bad_value_or_a_missing_named_file_is_a_usage_error_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let bad = home.path().join("bad.toml");
    for (body, named) in [
        ("[dashboard]\nfilterr = \"x\"\n", "filterr"),
        ("[dashboard]\nsort = \"size\"\n", "dashboard.sort"),
        ("[dashboard]\ntime_zone = \"mars\"\n", "time_zone"),
    ] {
        std::fs::write(&bad, body).unwrap();
        let out = run(
            home.path(),
            &[],
            &["config", "--print", "--config", bad.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(2), "{body}");
        let err = text(&out.stderr);
        assert!(err.contains(named) && err.contains("bad.toml"), "{err}");
        // The dashboard refuses to start on it too, before touching the terminal.
        let out = run(
            home.path(),
            &[],
            &[
                "--config",
                bad.to_str().unwrap(),
                "--root",
                home.path().to_str().unwrap(),
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{body}");
        assert!(text(&out.stderr).contains(named));
        // Under --json the one document says so.
        let out = run(
            home.path(),
            &[],
            &[
                "config",
                "--print",
                "--json",
                "--config",
                bad.to_str().unwrap(),
            ],
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["outcome"], "usage_error");
    }
    let out = run(
        home.path(),
        &[],
        &[
            "config",
            "--print",
            "--config",
            "/nonexistent/claimtop.toml",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent/claimtop.toml"));
}

#[test]
fn a_local_time_zone_setting_reads_events_since_hh_mm_in_local_time() {
    // TZ=EST5 is five hours behind UTC. The event is two hours old; --since
    // names the local clock of half an hour ago. Read as local time that
    // is half an hour ago, after the event: nothing. Read as UTC it is five
    // and a half hours ago (once the UTC day is that old), before the event.
    let home = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join(".fno")).unwrap();
    let now = claimtop::time::now_ms();
    let line = format!(
        "{{\"ts\":\"{}\",\"type\":\"claim_acquired\",\"source\":\"fno-loop\",\"data\":{{\"key\":\"k\"}}}}\n",
        claimtop::time::utc_hms(now - 2 * 3_600_000)
    );
    std::fs::write(root.path().join(".fno/events.jsonl"), line).unwrap();
    let local = home.path().join("local.toml");
    std::fs::write(&local, "[dashboard]\ntime_zone = \"local\"\n").unwrap();
    let half_hour_ago_local = claimtop::time::utc_hms(now - 5 * 3_600_000 - 30 * 60_000);
    let since = &half_hour_ago_local[11..16];
    let count = |cfg: Option<&Path>| {
        let mut c = claimtop(home.path());
        c.env("TZ", "EST5").arg("--root").arg(root.path());
        if let Some(cfg) = cfg {
            c.arg("--config").arg(cfg);
        }
        let out = c
            .args(["events", "--json", "--since", since])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout).lines().count()
    };
    assert_eq!(count(Some(&local)), 0, "--since {since} read as UTC");
    // Without the setting: UTC, so the event is in unless the UTC day is
    // younger than five and a half hours (then --since is later today).
    let utc_day_age = now.rem_euclid(86_400_000);
    let utc_reading_lets_it_in = utc_day_age >= 5 * 3_600_000 + 31 * 60_000;
    if utc_day_age < 5 * 3_600_000 + 29 * 60_000 || utc_reading_lets_it_in {
        assert_eq!(count(None), usize::from(utc_reading_lets_it_in));
    }
}
