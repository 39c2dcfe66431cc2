//! How the verbs word what they refuse: instants as times, in UTC or, with
//! `--local-time`, in the local zone with its offset; the JSON document
//! keeps its fields.

use crate::common::{dead_holder_yaml, Sandbox};
use serde_json::Value;

fn refusal(s: &Sandbox, zone: &[&str], json: bool) -> (Option<i32>, String) {
    let mut args = zone.to_vec();
    args.extend([
        "force-release",
        "k",
        "--expect-acquired-at",
        "1700000000314",
    ]);
    if json {
        args.push("--json");
    }
    let out = s.cmd(&args).env("TZ", "EST5").output().expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_refused_force_release_words_acquired_at_as_a_time_in_the_chosen_zone() {
    let s = Sandbox::new();
    let claims = s.root().join(".fno/claims");
    std::fs::create_dir_all(&claims).expect("claims dir");
    // acquired_at 1700000000000: 2023-11-14T22:13:20Z.
    std::fs::write(claims.join("k.lock"), dead_holder_yaml("k", "gone")).expect("lockfile");

    let (code, text) = refusal(&s, &[], false);
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains(
            "acquired_at is now 2023-11-14T22:13:20.000Z, not the expected 2023-11-14T22:13:20.314Z"
        ),
        "{text}"
    );
    assert!(!text.contains("1700000000"), "epoch ms: {text}");

    let (code, text) = refusal(&s, &["--local-time"], false);
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains(
            "acquired_at is now 2023-11-14T17:13:20.000-05:00, not the expected 2023-11-14T17:13:20.314-05:00"
        ),
        "{text}"
    );

    let (code, text) = refusal(&s, &[], true);
    assert_eq!(code, Some(3), "{text}");
    let v: Value = serde_json::from_str(&text).expect("one document");
    let fields: Vec<&str> = v
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(fields, ["outcome", "reason"], "{v}");
    assert_eq!(v["outcome"], "refused");
}
