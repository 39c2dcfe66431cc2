//! Exit codes and what a failure prints: usage errors, protocol refusals,
//! one JSON document per command, a report that cannot be written, a record
//! too big, completions.

use super::*;

#[test]
fn usage_errors_exit_2_and_name_the_bad_argument() {
    let s = Sandbox::new();
    for (args, named) in [
        (
            &["acquire", "k", "--holder", "a", "--ttl", "abc"][..],
            "--ttl",
        ),
        (
            &["acquire", "k", "--holder", "a", "--ttl", "0"][..],
            "--ttl",
        ),
        (
            &["acquire", "k", "--holder", "a", "--ttl", "-5m"][..],
            "--ttl",
        ),
        (&["renew", "k", "--holder", "a", "--ttl", "1d"][..], "--ttl"),
        (
            &["acquire", "k", "--holder", "a", "--metadata", "[1]"][..],
            "--metadata",
        ),
        (
            &["acquire", "k", "--holder", "a", "--metadata", "{"][..],
            "--metadata",
        ),
        (&["acquire", "k"][..], "--holder"),
        (&["release", "k"][..], "--holder"),
        (&["renew", "k", "--holder", "a"][..], "--ttl"),
        (
            &["acquire", "k", "--holder", "a", "--pid", "x"][..],
            "--pid",
        ),
        (
            &["force-release", "k", "--expect-acquired-at", "soon"][..],
            "--expect-acquired-at",
        ),
        (&["events", "-n", "many"][..], "-n"),
        (&["--read-only", "list"][..], "--read-only"),
    ] {
        let out = s.run(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(named), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(s.claim_files().is_empty());
    assert!(!s.events_file().exists());
}

#[test]
fn protocol_refusals_exit_1_and_write_nothing() {
    let s = Sandbox::new();
    let long_key = "k".repeat(300);
    let spaced_key = " ".repeat(100);
    for args in [
        &["acquire", "k", "--holder", "a", "--ttl", "30s"][..],
        &["acquire", "k", "--holder", "a", "--ttl", "25h"][..],
        &["acquire", &long_key, "--holder", "a"][..],
        &["acquire", &spaced_key, "--holder", "a"][..],
        &["acquire", "", "--holder", "a"][..],
        &["acquire", "k", "--holder", ""][..],
        &["renew", "k", "--holder", "a", "--ttl", "30s"][..],
        &["status", &long_key][..],
        &["force-release", &long_key][..],
        &["release", "", "--holder", "a"][..],
    ] {
        let (rc, v) = s.json(args);
        assert_eq!(rc, 1, "{args:?}: {v}");
        assert_eq!(v["outcome"], "error", "{args:?}");
        assert!(!v["error"].as_str().unwrap().is_empty());
    }
    assert!(s.claim_files().is_empty(), "{:?}", s.claim_files());
    assert!(!s.events_file().exists());
}

#[test]
fn text_errors_go_to_stderr_with_exit_1() {
    let s = Sandbox::new();
    let out = s.run(&["acquire", "k", "--holder", "a", "--ttl", "30s"]);
    assert_eq!(code(&out), 1);
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("out of range"), "{}", stderr(&out));
}

#[test]
fn completions_are_generated_for_bash() {
    let out = Command::new(BIN)
        .args(["completions", "bash"])
        .env_remove("HOME")
        .env_remove("FNO_CLAIMS_ROOT")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(script.contains("force-release"));
}

#[test]
fn every_subcommand_prints_one_json_document() {
    let s = Sandbox::new();
    for args in [
        &["list"][..],
        &["status", "k"][..],
        &["acquire", "k", "--holder", "a", "--ttl", "1h"][..],
        &["renew", "k", "--holder", "a", "--ttl", "1h"][..],
        &["release", "k", "--holder", "a"][..],
        &["force-release", "k"][..],
        &["doctor"][..],
    ] {
        // `json` panics unless stdout is exactly one document.
        let (rc, v) = s.json(args);
        assert!(rc == 0 || rc == 3, "{args:?} {rc} {v}");
    }
}

#[test]
fn usage_errors_under_json_print_one_usage_error_document() {
    let s = Sandbox::new();
    for (args, named) in [
        (
            &["acquire", "k", "--holder", "a", "--ttl", "0"][..],
            "--ttl",
        ),
        (&["acquire", "k"][..], "--holder"),
        (&["force-release", "k", "--operator", ""][..], "--operator"),
        (&["list", "--bogus"][..], "--bogus"),
    ] {
        let (rc, v) = s.json(args);
        assert_eq!(rc, 2, "{args:?}: {v}");
        assert_eq!(v["outcome"], "usage_error", "{args:?}");
        assert!(
            v["error"].as_str().unwrap().contains(named),
            "{args:?}: {v}"
        );
    }
    let out = s
        .bare()
        .args(["list", "--json"])
        .env_remove("HOME")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert_eq!(one_document(&out)["outcome"], "usage_error");
    assert!(s.claim_files().is_empty());
}

#[test]
fn an_acquire_whose_report_cannot_be_written_gives_the_claim_back_and_exits_1() {
    let s = Sandbox::new();
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        cannot_run("no /dev/full on this system");
        return;
    };
    let out = s
        .bare()
        .args(["--root"])
        .arg(s.root())
        .args(["acquire", "k", "--holder", "a", "--json"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("released k again"),
        "{}",
        stderr(&out)
    );
    assert!(!s.lockfile("k").exists(), "the claim was left behind");
    let kinds: Vec<Value> = s.events().iter().map(|e| e["type"].clone()).collect();
    assert_eq!(kinds, [json!("claim_acquired"), json!("claim_released")]);
}

#[test]
fn a_release_whose_report_cannot_be_written_exits_1_and_says_what_stands() {
    let s = Sandbox::new();
    assert_eq!(
        code(&s.run(&["acquire", "k", "--holder", "a", "--ttl", "1h"])),
        0
    );
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        cannot_run("no /dev/full on this system");
        return;
    };
    let out = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .args(["release", "k", "--holder", "a"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("released k, and that cannot be undone"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_record_too_big_for_any_reader_is_refused_with_exit_1_and_nothing_written() {
    let s = Sandbox::new();
    // Control characters are written escaped (`\x01`, four bytes each), so
    // these arguments (each under the kernel's 128 KiB per argument) make a
    // record over the 1 MiB read cap.
    let holder = "\u{1}".repeat(130_000);
    let metadata = json!({"blob": "\u{1}".repeat(21_000)}).to_string();
    let args = [
        "acquire",
        "big",
        "--holder",
        &holder,
        "--reason",
        &holder,
        "--metadata",
        &metadata,
        "--ttl",
        "60",
    ];
    let (rc, v) = s.json(&args);
    assert_eq!(rc, 1, "{v}");
    assert_eq!(v["outcome"], "error");
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("larger than 1048576 bytes"), "{error}");
    assert!(s.claim_files().is_empty(), "{:?}", s.claim_files());
    assert!(s.events().is_empty(), "{:?}", s.events());
    // The key stays free: a sane record takes it at once.
    let (rc, v) = s.json(&["acquire", "big", "--holder", "me", "--ttl", "60"]);
    assert_eq!((rc, &v["outcome"]), (0, &json!("acquired")), "{v}");
}

#[test]
fn fleet_over_a_file_root_is_a_usage_error_that_names_the_store_flag() {
    let s = Sandbox::new();
    for verb in [&["fleet"][..], &["fleet", "forget", "h"]] {
        let (rc, v) = s.json(verb);
        assert_eq!(rc, 2, "{verb:?}: {v}");
        assert_eq!(v["outcome"], "usage_error");
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.contains("--store etcd://")),
            "{v}"
        );
    }
}
