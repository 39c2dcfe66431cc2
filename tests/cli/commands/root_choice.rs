//! Which root a command reads: --root, FNO_CLAIMS_ROOT, $HOME, none at all,
//! a separate events dir, a mistyped root.

use super::*;

#[test]
fn an_empty_fno_claims_root_falls_back_to_home() {
    let s = Sandbox::new();
    let out = s
        .bare()
        .env("FNO_CLAIMS_ROOT", "")
        .args(["acquire", "k", "--holder", "a", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(s.home.path().join(".fno/claims/k.lock").is_file());
    assert!(s.home.path().join(".fno/events.jsonl").is_file());
}

#[test]
fn fno_claims_root_wins_over_home_and_root_wins_over_both() {
    let s = Sandbox::new();
    let other = TempDir::new().unwrap();
    let out = s
        .bare()
        .env("FNO_CLAIMS_ROOT", other.path())
        .args(["acquire", "k", "--holder", "a"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    assert!(other.path().join(".fno/claims/k.lock").is_file());
    assert!(!s.home.path().join(".fno").exists());

    let out = s
        .bare()
        .env("FNO_CLAIMS_ROOT", other.path())
        .args(["--root"])
        .arg(s.root())
        .args(["status", "k", "--json"])
        .output()
        .unwrap();
    assert_eq!(one_document(&out)["state"], "free");
}

#[test]
fn no_root_at_all_is_a_usage_error() {
    let s = Sandbox::new();
    let out = s
        .bare()
        .env("HOME", "")
        .args(["list", "--json"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("--root"), "{}", stderr(&out));
}

#[test]
fn events_dir_moves_the_audit_log_only() {
    let s = Sandbox::new();
    let ev = TempDir::new().unwrap();
    let out = s
        .bare()
        .arg("--root")
        .arg(s.root())
        .arg("--events-dir")
        .arg(ev.path())
        .args(["acquire", "k", "--holder", "a"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0);
    assert!(s.lockfile("k").is_file());
    assert!(ev.path().join(".fno/events.jsonl").is_file());
    assert!(!s.events_file().exists());
}

#[test]
fn a_mistyped_root_is_said_on_stderr_and_is_a_root_missing_hazard_while_an_empty_root_stays_quiet()
{
    let s = Sandbox::new();
    let typo = s.root().join("clams");
    let typo_arg = typo.to_string_lossy().into_owned();
    let over_typo = |args: &[&str]| {
        s.bare()
            .arg("--root")
            .arg(&typo_arg)
            .args(args)
            .output()
            .expect("run claimtop")
    };
    for args in [&["list"][..], &["status", "k"], &["doctor"], &["events"]] {
        let out = over_typo(args);
        assert!(
            stderr(&out).contains("does not exist (a mistyped --root?)"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = over_typo(&["list", "--json"]);
    let v = one_document(&out);
    assert_eq!(v["hazards"][0]["kind"], "root_missing", "{v}");
    assert_eq!(v["hazards"][0]["path"], typo_arg.as_str());
    let out = over_typo(&["doctor", "--json"]);
    assert_eq!(code(&out), 3);
    assert_eq!(one_document(&out)["hazards"][0]["kind"], "root_missing");
    // The sandbox's own root exists and has no .fno yet: no hazard, no word.
    let out = s.run(&["doctor"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}
