//! list: counts, order and hazards, a name that is not UTF-8, hostile and
//! escaped text, a record naming another key.

use super::*;

#[test]
fn list_counts_sorts_by_key_and_reports_hazards_but_never_lists_them_as_claims() {
    let s = Sandbox::new();
    s.json(&["acquire", "b-live", "--holder", "a"]);
    s.write_lock("c-stale", &dead_holder_yaml("c-stale", "gone"));
    s.write_lock("a-corrupt", "- not\n- a mapping\n");
    let corpse = s.claims_dir().join("b-live.lock.recovery.d");
    std::fs::create_dir(&corpse).unwrap();
    mutex::backdate(&corpse, 600).unwrap();
    let litter = s.claims_dir().join(".claim-tmp-1234-5-6");
    std::fs::write(&litter, "half").unwrap();
    mutex::backdate(&litter, 600).unwrap();
    std::fs::create_dir_all(s.claims_dir().join(".expired")).unwrap();

    let (rc, v) = s.json(&["list"]);
    assert_eq!(rc, 0);
    assert_eq!(keys(&v), ["root", "claims", "counts", "hazards"]);
    assert_eq!(v["root"], json!(s.root().to_string_lossy()));
    let listed: Vec<_> = v["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["key"].as_str().unwrap(), c["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [
            ("a-corrupt", "corrupted"),
            ("b-live", "live"),
            ("c-stale", "stale")
        ]
    );
    assert_eq!(
        v["counts"],
        json!({"live": 1, "suspect": 0, "stale": 1, "corrupted": 1, "unreadable": 0})
    );
    let hazards: Vec<_> = v["hazards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            assert_eq!(keys(h), ["kind", "path", "detail"]);
            h["kind"].as_str().unwrap()
        })
        .collect();
    for kind in ["stale_mutex", "temp_litter", "corrupted_claim"] {
        assert!(hazards.contains(&kind), "{kind} missing from {hazards:?}");
    }
}

#[test]
fn list_json_survives_a_lockfile_name_that_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let s = Sandbox::new();
    s.json(&["acquire", "ok", "--holder", "a"]);
    let odd = s
        .claims_dir()
        .join(std::ffi::OsStr::from_bytes(b"x\xff.lock"));
    std::fs::write(&odd, "key: x\n").unwrap();
    let (rc, v) = s.json(&["list"]);
    assert_eq!(rc, 0);
    assert_eq!(v["claims"].as_array().map(Vec::len), Some(1));
    let kinds: Vec<_> = v["hazards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["unreadable"]);
}

#[test]
fn list_text_escapes_a_hostile_holder() {
    let s = Sandbox::new();
    let out = s.run(&["acquire", "k", "--holder", "evil\u{1b}]0;pwned\u{7}"]);
    assert_eq!(code(&out), 0);
    for out in [
        out,
        s.run(&["list"]),
        s.run(&["status", "k"]),
        s.run(&["events"]),
    ] {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        assert!(text.contains("evil\\e]0;pwned\\x07"), "{text:?}");
    }
}

#[test]
fn a_key_mismatch_names_the_key_found_in_the_record() {
    let s = Sandbox::new();
    let text = dead_holder_yaml("node:y", "a");
    s.write_lock("node%3ax", &text);
    let (_, v) = s.json(&["doctor"]);
    let details: Vec<&str> = v["hazards"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["kind"] == "key_mismatch")
        .map(|h| h["detail"].as_str().unwrap())
        .collect();
    assert_eq!(details.len(), 1, "{v}");
    assert!(
        details[0].contains("record claims key \"node:y\""),
        "{}",
        details[0]
    );
}

#[test]
fn a_literal_backslash_escape_and_a_real_escape_look_different_in_text() {
    let s = Sandbox::new();
    for holder in ["job\\e[2J", "job\u{1b}[2J"] {
        let out = s.run(&["acquire", holder, "--holder", holder, "--ttl", "1h"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let out = s.run(&["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("job\\\\e[2J"), "the literal one: {text}");
    assert!(text.contains("job\\e[2J"), "the real ESC, escaped: {text}");
    assert!(!text.contains('\u{1b}'));
}
