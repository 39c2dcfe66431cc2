//! force-release: what it archives and audits, who the operator is, and
//! when it refuses.

use super::*;

#[test]
fn force_release_archives_a_corrupted_claim_and_audits_who_did_it() {
    let s = Sandbox::new();
    let p = s.write_lock("node%3Abad", "garbage: [");
    let (rc, v) = s.json(&["force-release", "node:bad", "--operator", "ops@desk"]);
    assert_eq!(rc, 0, "{v}");
    assert_eq!(v["outcome"], "archived");
    assert_eq!(v["previous"], Value::Null);
    let archived = PathBuf::from(v["archived_to"].as_str().unwrap());
    assert!(
        archived.starts_with(s.claims_dir().join(".expired")),
        "{archived:?}"
    );
    assert!(archived.is_file());
    assert!(!p.exists());

    let ev = s
        .events()
        .into_iter()
        .find(|e| e["type"] == "claim_force_released")
        .expect("claim_force_released event");
    assert_eq!(ev["source"], "fno-loop");
    assert_eq!(ev["data"]["key"], "node:bad");
    assert_eq!(ev["data"]["holder"], Value::Null);
    assert_eq!(ev["data"]["operator"], "ops@desk");
    assert_eq!(ev["data"]["previous_state"], "corrupted");
}

#[test]
fn force_release_operator_defaults_to_user_at_host() {
    let s = Sandbox::new();
    s.write_lock("k", &dead_holder_yaml("k", "gone"));
    let (rc, v) = s.json(&["force-release", "k"]);
    assert_eq!(rc, 0);
    assert_eq!(v["previous"]["holder"], "gone");
    assert_eq!(v["previous_state"], "stale");
    let ev = s.events().pop().expect("event");
    assert_eq!(
        ev["data"]["operator"],
        json!(format!("tester@{}", hostname()))
    );
}

#[test]
fn force_release_refuses_a_live_claim_unless_allowed() {
    let s = Sandbox::new();
    s.json(&["acquire", "k", "--holder", "a"]);
    let (rc, v) = s.json(&["force-release", "k"]);
    assert_eq!(rc, 3);
    assert_eq!(v["outcome"], "refused");
    assert!(v["reason"].as_str().unwrap().contains("live"), "{v}");
    assert!(s.lockfile("k").exists());

    let (rc, v) = s.json(&["force-release", "k", "--allow-live"]);
    assert_eq!((rc, v["outcome"].clone()), (0, json!("archived")));
    assert_eq!(v["previous"]["holder"], "a");
    assert!(!s.lockfile("k").exists());
}

#[test]
fn force_release_refuses_when_the_claim_is_no_longer_the_one_expected() {
    let s = Sandbox::new();
    s.write_lock("k", &dead_holder_yaml("k", "gone"));
    let (rc, v) = s.json(&["force-release", "k", "--expect-holder", "someone-else"]);
    assert_eq!((rc, v["outcome"].clone()), (3, json!("refused")));
    let (rc, _) = s.json(&["force-release", "k", "--expect-acquired-at", "5"]);
    assert_eq!(rc, 3);
    assert!(s.lockfile("k").exists());
    let (rc, _) = s.json(&[
        "force-release",
        "k",
        "--expect-holder",
        "gone",
        "--expect-acquired-at",
        "1700000000000",
    ]);
    assert_eq!(rc, 0);
}

#[test]
fn force_release_of_a_free_key_is_refused() {
    let s = Sandbox::new();
    let (rc, v) = s.json(&["force-release", "nothing"]);
    assert_eq!((rc, v["outcome"].clone()), (3, json!("refused")));
}

#[test]
fn an_empty_operator_is_refused_and_nothing_is_archived() {
    let s = Sandbox::new();
    let lock = s.write_lock("k", "not: [valid");
    let out = s.run(&["force-release", "k", "--operator", ""]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--operator"), "{}", stderr(&out));
    assert!(lock.exists());
}

#[test]
fn the_cli_and_the_dashboard_audit_one_operator_the_same_way() {
    use claimtop::claims::{operator_name, Root};
    use claimtop::dashboard::testing::{ForceOptsShown, Verb};
    let s = Sandbox::new();
    s.write_lock("a", "not: [valid");
    s.write_lock("b", "not: [valid");
    let user = claimtop::claims::operator::user_name().expect("a user name");
    let out = s
        .bare()
        .env("USER", &user)
        .arg("--root")
        .arg(s.root())
        .args(["force-release", "a"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let root = Root {
        root: s.root().to_path_buf(),
        events_dir: Some(s.root().to_path_buf()),
    };
    let op = Verb::ForceRelease {
        key: "b".into(),
        opts: ForceOptsShown {
            operator: "operator:someone@else".into(),
            ..ForceOptsShown::default()
        },
    };
    assert!(claimtop::dashboard::testing::run_op(&root, &op).ok);
    let operators: Vec<Value> = s
        .events()
        .iter()
        .map(|e| e["data"]["operator"].clone())
        .collect();
    assert_eq!(operators, [json!(operator_name()), json!(operator_name())]);
}
