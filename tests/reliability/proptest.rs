//! The two readers of untrusted bytes, under generated input: the lockfile
//! reader (`ClaimRecord::from_bytes`) and the events-line reader
//! (`parse_event`). Any record must survive write → read unchanged; no input
//! at all may make either panic, and the pathological shapes (huge, deep,
//! alias bombs, invalid UTF-8) must come back as errors, quickly enough that
//! the suite finishes.

use claimtop::claims::record::{ParseError, MAX_FLOW_DEPTH, MAX_LOCKFILE_BYTES};
use claimtop::claims::ClaimRecord;
use claimtop::events::parse_event;
use proptest::prelude::*;
use serde_json::{Map, Value};

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Text that stresses YAML quoting: indicators, look-alike scalars, controls.
fn tricky_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[-:?,\\[\\]{}#&*!|>'\"%@` \t\r\n\u{85}\u{feff}\u{2028}a0.~]{0,40}",
        prop::sample::select(vec![
            "true",
            "no",
            "null",
            "~",
            "0x1F",
            "1e3",
            ".inf",
            "-",
            "? x",
            "*a",
            "&a",
            "!tag",
            "'",
            "\"",
            "- x",
            "a: b",
            "# c",
            "012",
            "+1",
            "1_000",
            "2026-11-30",
            "=",
            "<<",
        ])
        .prop_map(str::to_string),
    ]
}

fn nonempty_text() -> impl Strategy<Value = String> {
    tricky_text().prop_filter("non-empty", |s| !s.is_empty())
}

prop_compose! {
    fn any_record()(
        schema_version in 0u32..=1,
        key in nonempty_text(),
        holder in nonempty_text(),
        acquired_at in any::<i64>(),
        pid in any::<i32>(),
        host in tricky_text(),
        expires_at in any::<Option<i64>>(),
        reason in prop::option::of(tricky_text()),
        harness in prop::option::of(tricky_text()),
        machine_id in prop::option::of(tricky_text()),
        metadata in prop::collection::btree_map(tricky_text(), json_value(), 0..5),
    ) -> ClaimRecord {
        ClaimRecord {
            schema_version, key, holder, acquired_at, pid, host, expires_at, reason, harness,
            machine_id,
            metadata: metadata.into_iter().collect::<Map<String, Value>>(),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_record_survives_write_then_read_unchanged(rec in any_record()) {
        let yaml = rec.to_yaml().unwrap();
        prop_assert_eq!(ClaimRecord::from_bytes(yaml.as_bytes()), Ok(rec.clone()), "{}", yaml);
    }

    #[test]
    fn any_record_read_by_the_full_parser_passes_the_bomb_guard_unchanged(rec in any_record()) {
        // A leading comment keeps the fast path out, so the guard and
        // serde_yaml_ng see every shape the writer can produce.
        let yaml = format!("# c\n{}", rec.to_yaml().unwrap());
        prop_assert_eq!(ClaimRecord::from_yaml(&yaml), Ok(rec.clone()), "{}", yaml);
    }

    #[test]
    fn the_lockfile_reader_never_panics_on_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..4096)
    ) {
        let _ = ClaimRecord::from_bytes(&bytes);
    }

    #[test]
    fn the_lockfile_reader_never_panics_on_yaml_shaped_text(
        s in "([a-z_]{1,12}: ?[-\\[\\]{}&*!|>'\"#:,.0-9a-z ]{0,30}\n {0,4}){0,20}"
    ) {
        let _ = ClaimRecord::from_bytes(s.as_bytes());
    }

    #[test]
    fn a_valid_record_with_any_garbage_appended_never_panics(
        rec in any_record(),
        tail in prop::collection::vec(any::<u8>(), 0..256)
    ) {
        let mut bytes = rec.to_yaml().unwrap().into_bytes();
        bytes.extend(tail);
        let _ = ClaimRecord::from_bytes(&bytes);
    }

    #[test]
    fn the_events_reader_never_panics_on_arbitrary_text(s in any::<String>()) {
        let _ = parse_event(&s);
    }

    #[test]
    fn the_events_reader_never_panics_on_json_shaped_text(
        s in r#"[\[\]{}":,0-9a-z\-.eE\\ ]{0,300}"#
    ) {
        let _ = parse_event(&s);
    }

    #[test]
    fn the_events_reader_never_panics_on_lossy_decoded_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..1024)
    ) {
        let _ = parse_event(&String::from_utf8_lossy(&bytes));
    }
}

const HEAD: &str = "key: k\nholder: h\nacquired_at: 1\npid: 1\nhost: x\n";

fn refused(bytes: &[u8], why: &str) {
    match ClaimRecord::from_bytes(bytes) {
        Err(e) => assert!(e.contains(why), "expected {why:?}, got {e}"),
        Ok(r) => panic!("accepted a hostile lockfile: {r:?}"),
    }
}

/// Refused for its cost alone: an unreadable file, never a corrupted one.
fn too_costly(bytes: &[u8], why: &str) {
    match ClaimRecord::from_bytes(bytes) {
        Err(e @ ParseError::TooCostly(_)) => assert!(e.contains(why), "expected {why:?}, got {e}"),
        other => panic!("expected a cost refusal ({why:?}), got {other:?}"),
    }
}

#[test]
fn a_lockfile_past_the_size_cap_is_refused_unread() {
    too_costly(&vec![b'a'; MAX_LOCKFILE_BYTES as usize + 1], "larger than");
}

#[test]
fn invalid_utf8_is_refused_with_its_reason() {
    let mut b = HEAD.as_bytes().to_vec();
    b.extend(b"reason: \xff\xfe\n");
    refused(&b, "UTF-8");
}

#[test]
fn deep_flow_nesting_in_any_bracket_is_refused_before_parsing() {
    let depth = MAX_FLOW_DEPTH + 1;
    too_costly("[".repeat(1_000_000).as_bytes(), "nests deeper");
    too_costly("{".repeat(1_000_000).as_bytes(), "nests deeper");
    // JSON-shaped: 100 kB of this cost libyaml 40 s before the guard.
    let json_like = format!("{{\"type\":\"x\",\"data\":{}}}", "[".repeat(100_000));
    too_costly(json_like.as_bytes(), "nests deeper");
    let mixed = format!("{HEAD}metadata: {}", "[{".repeat(depth));
    too_costly(mixed.as_bytes(), "nests deeper");
}

#[test]
fn deep_block_nesting_hits_the_parsers_recursion_limit_not_the_stack() {
    let mut s = format!("{HEAD}metadata:\n");
    for i in 0..1300 {
        s.push_str(&" ".repeat(i + 2));
        s.push_str("a:\n");
    }
    assert!(ClaimRecord::from_bytes(s.as_bytes()).is_err());
    let seqs = "- ".repeat(400_000);
    assert!(ClaimRecord::from_bytes(seqs.as_bytes()).is_err());
}

#[test]
fn billion_laughs_and_wide_alias_fans_are_refused_and_modest_sharing_reads() {
    // Nested: nine levels of nine aliases each.
    let mut laughs =
        format!("{HEAD}metadata:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    let mut prev = "a".to_string();
    for l in ["b", "c", "d", "e", "f", "g", "h", "i"] {
        let refs = vec![format!("*{prev}"); 9].join(", ");
        laughs.push_str(&format!("  {l}: &{l} [{refs}]\n"));
        prev = l.to_string();
    }
    // The parser's own repetition limit refuses this one, as the seed's
    // does: corrupted by both readers.
    assert!(ClaimRecord::from_bytes(laughs.as_bytes()).is_err());
    // Wide: one node aliased a hundred thousand times (passes the parser's
    // own repetition limit, which bounds jumps, not values).
    let mut fan = format!("{HEAD}metadata:\n  a: &x [{}]\n  b: [", "1, ".repeat(64));
    fan.push_str(&"*x, ".repeat(100_000));
    fan.push_str("]\n");
    too_costly(fan.as_bytes(), "alias");
    // A few aliases in a large document expand by a few times its size:
    // within the budget, so they read as the seed reads them.
    let mut big = format!("{HEAD}metadata:\n  a: &x [");
    big.push_str(&"1, ".repeat(40_000));
    big.push_str("]\n  b: *x\n  c: *x\n");
    assert!(ClaimRecord::from_bytes(big.as_bytes()).is_ok());
    let mut ok = format!("{HEAD}metadata:\n  a: &x [1]\n");
    for i in 0..1000 {
        ok.push_str(&format!("  b{i}: *x\n"));
    }
    assert!(ClaimRecord::from_bytes(ok.as_bytes()).is_ok());
}

#[test]
fn hostile_event_lines_are_errors_not_panics() {
    assert!(parse_event(&"[".repeat(1_000_000)).is_err());
    assert!(parse_event(&format!(
        "{{\"type\":\"x\",\"data\":{}}}",
        "{\"a\":".repeat(100_000)
    ))
    .is_err());
    let huge = format!("{{\"type\":\"x\",\"data\":\"{}\"}}", "a".repeat(8 << 20));
    assert_eq!(parse_event(&huge).unwrap().kind(), "x");
    assert!(parse_event("{\"type\": 5}").is_err());
    assert!(parse_event("\u{0}\u{1b}[2J").is_err());
    // A lone surrogate escape: serde_json refuses it, and must not panic.
    let _ = parse_event("{\"type\":\"\\ud800\"}");
}
