//! Several origins in one store: a verb on one key refuses to guess, and
//! everything listed says where it came from — only when several are named.

use super::{take, Target};
use crate::under_test::{json_of, StoreUnderTest};
use claimtop::store::StoreError;
use serde_json::Value;

pub fn a_one_key_verb_over_several_origins_exits_2_naming_each(u: &dyn StoreUnderTest) {
    let store = u.store();
    if !store.several() {
        assert!(
            store.one("status").is_ok(),
            "{}: one origin takes the verb",
            u.name()
        );
        return;
    }
    let err = store.one("status").expect_err("several origins");
    assert!(matches!(err, StoreError::SeveralOrigins { .. }), "{err}");
    let words = err.to_string();
    for m in store.named() {
        let named = match m.root_dir() {
            Some(dir) => dir.to_string_lossy().into_owned(),
            None => m.name(),
        };
        assert!(words.contains(&named), "{words} names {named}");
    }
    if let Some((code, out)) = u.cli_all(&["release", "k", "--holder", "h", "--json"]) {
        let v = json_of(&out);
        assert_eq!(
            (code, v["outcome"].as_str()),
            (2, Some("usage_error")),
            "{v}"
        );
        let msg = v["error"].as_str().unwrap_or_default();
        for m in store.named() {
            if let Some(dir) = m.root_dir() {
                assert!(msg.contains(&*dir.to_string_lossy()), "{msg}");
            }
        }
    }
}

pub fn every_item_and_hazard_names_its_origin_where_several_are_named(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    take(t.backend(u), "k", "alice");
    u.plant("bad", b"{{{ not a claim");
    let doc = t.store.list().expect("list").to_json(&t.store);
    check_origins(u, &doc);
    if let Some((code, out)) = u.cli_all(&["list", "--json"]) {
        assert_eq!(code, 0);
        check_origins(u, &json_of(&out));
    }
}

/// Every item and hazard of `doc` has `"origin"`, one of the store's,
/// exactly when several origins are named.
fn check_origins(u: &dyn StoreUnderTest, doc: &Value) {
    let origins = u.origins();
    let items = doc["claims"].as_array().expect("claims");
    let hazards = doc["hazards"].as_array().expect("hazards");
    assert!(!items.is_empty() && !hazards.is_empty(), "{doc}");
    for v in items.iter().chain(hazards) {
        match (origins.is_empty(), v.get("origin").and_then(Value::as_str)) {
            (true, None) => {}
            (true, Some(o)) => panic!("{}: one origin, yet {o} is named: {v}", u.name()),
            (false, Some(o)) => assert!(origins.iter().any(|x| x == o), "{o} among {origins:?}"),
            (false, None) => panic!("{}: no origin on {v}", u.name()),
        }
    }
    if !origins.is_empty() {
        let named: Vec<&str> = doc["origins"]
            .as_array()
            .expect("origins")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(named, origins);
    }
}

pub fn every_event_names_its_origin_where_several_are_named(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    take(t.backend(u), "k", "alice");
    let Some((code, out)) = u.cli_all(&["events", "--json"]) else {
        eprintln!(
            "every_event_names_its_origin...: no CLI reaches {}",
            u.name()
        );
        return;
    };
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out));
    let origins = u.origins();
    let lines: Vec<Value> = String::from_utf8_lossy(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    assert!(
        lines.iter().any(|l| l["type"] == "claim_acquired"),
        "{lines:?}"
    );
    for l in &lines {
        match (origins.is_empty(), l.get("origin").and_then(Value::as_str)) {
            (true, None) => {}
            (false, Some(o)) => assert!(origins.iter().any(|x| x == o), "{o} among {origins:?}"),
            (one, o) => panic!("{}: one origin {one}, origin {o:?} on {l}", u.name()),
        }
    }
}
