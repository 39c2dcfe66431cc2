use super::*;
use proptest::prelude::*;

fn root() -> PublishedRoot {
    PublishedRoot::new("00000000000000aa".into(), "/srv/a \"b\"\u{1}é".into())
}

fn copy_root() -> Arc<CopyRoot> {
    Arc::new(CopyRoot::new("m1", "alpha\tβ", &root()))
}

/// The plain way: parsed, placed, written (None: not JSON, left out).
fn plain(bytes: &[u8]) -> Option<Vec<u8>> {
    let item: Value = serde_json::from_slice(bytes).ok()?;
    let item = FleetItem {
        host_id: "m1".into(),
        hostname: "alpha\tβ".into(),
        root: root(),
        item,
    };
    let v = item.into_json();
    Some(serde_json::to_vec(&v).expect("json"))
}

fn raw(bytes: &[u8]) -> Option<(Vec<u8>, String, String)> {
    let r = RawCopy::of(&copy_root(), bytes.to_vec()).ok()?;
    let mut out = Vec::new();
    r.write(&mut out).expect("write");
    Some((out, r.key().to_string(), r.state().to_string()))
}

/// A copy taken as it stands is written as the plain way writes it, and
/// its key and state are the parsed item's.
fn agrees(bytes: &[u8]) -> Result<bool, TestCaseError> {
    let Some((got, key, state)) = raw(bytes) else {
        return Ok(false);
    };
    let want = plain(bytes);
    prop_assert_eq!(
        Some(&got),
        want.as_ref(),
        "{}",
        String::from_utf8_lossy(bytes)
    );
    let v: Value = serde_json::from_slice(bytes).expect("json");
    prop_assert_eq!(v.get("key").and_then(Value::as_str), Some(key.as_str()));
    prop_assert_eq!(
        v.get("state").and_then(Value::as_str).unwrap_or(""),
        state.as_str()
    );
    let order = ListCopy::Raw(RawCopy::of(&copy_root(), bytes.to_vec()).expect("raw"));
    let (k, h, r) = order.order();
    let whole: Value = serde_json::from_slice(&got).expect("json");
    prop_assert_eq!(
        (k.to_string(), h.to_string(), r.to_string()),
        list_order(&whole)
    );
    Ok(true)
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z/ -]{0,8}",
        any::<String>(),
        "[\\x00-\\x1f\"\\\\\u{7f}é\u{2028}]{0,6}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        (-5i64..5).prop_map(Value::from),
        text().prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A copy as a host writes one, with odd fields and values besides.
fn item() -> impl Strategy<Value = Value> {
    (
        prop_oneof![text().prop_map(Value::from), leaf()],
        prop_oneof![
            Just(Value::from("live")),
            Just(Value::from("stale")),
            leaf()
        ],
        prop::collection::vec(
            (
                prop_oneof![
                    text(),
                    Just("host".to_string()),
                    Just("root_id".to_string()),
                    Just("record".to_string())
                ],
                value(),
            ),
            0..5,
        ),
        any::<bool>(),
    )
        .prop_map(|(key, state, rest, state_first)| {
            let mut m = serde_json::Map::new();
            if state_first {
                m.insert("state".into(), state.clone());
            }
            m.insert("key".into(), key);
            m.insert("state".into(), state);
            for (k, v) in rest {
                m.insert(k, v);
            }
            Value::Object(m)
        })
}

/// Text a host could not have written but a store could hold: objects
/// with whitespace, other escapes, repeated fields, other numbers.
fn mangled() -> impl Strategy<Value = Vec<u8>> {
    let name = prop_oneof![
        Just("\"key\""),
        Just("\"state\""),
        Just("\"a\""),
        Just("\"a\""),
        Just("\"host\""),
        Just("\"k\\u0041\""),
        Just("\"k\\u001f\""),
        Just("\"k\\u001F\""),
    ];
    let leaf = prop_oneof![
        Just("\"live\""),
        Just("\"k\\u0041\""),
        Just("\"k\\u001f\""),
        Just("\"k\\u001F\""),
        Just("\"k\\u0009\""),
        Just("\"k\\/\""),
        Just("\"k\\n\""),
        Just("\"k\\ud83d\\ude00\""),
        Just("-0"),
        Just("0"),
        Just("007"),
        Just("1.0"),
        Just("1e3"),
        Just("-12"),
        Just("123456789012345678"),
        Just("1234567890123456789"),
        Just("99999999999999999999"),
        Just("true"),
        Just("null"),
        Just("nul"),
        Just("[]"),
        Just("[1 ,2]"),
    ];
    let space = prop_oneof![Just(""), Just(""), Just(""), Just(" "), Just("\n")];
    let field = (name, space.clone(), leaf.clone(), space);
    let object = prop::collection::vec(field, 0..6).prop_map(|fields| {
        let inner: Vec<String> = fields
            .into_iter()
            .map(|(n, s1, v, s2)| format!("{n}{s1}:{v}{s2}"))
            .collect();
        format!("{{{}}}", inner.join(","))
    });
    (object.clone(), object, leaf, 0..3u8).prop_map(|(a, b, v, how)| {
        let text = match how {
            0 => a,
            // One object nested in another, or a value where the
            // object would be.
            1 if a == "{}" => format!("{{\"o\":{b}}}"),
            1 => format!("{},\"o\":{b}}}", &a[..a.len() - 1]),
            _ => v.to_string(),
        };
        text.into_bytes()
    })
}

/// Only integers of at most 18 digits: what the fast way takes.
fn short_integers(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.as_i64().is_some_and(|i| i.unsigned_abs() < 10u64.pow(18))
                || n.as_u64().is_some_and(|u| u < 10u64.pow(18))
        }
        Value::Array(a) => a.iter().all(short_integers),
        Value::Object(o) => o.values().all(short_integers),
        _ => true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn a_copy_serde_json_wrote_is_taken_as_it_stands_and_written_as_parsed(v in item()) {
        let bytes = serde_json::to_vec(&v).expect("json");
        let taken = agrees(&bytes)?;
        // Taken unless its key is no plain string or it has a field the
        // listing adds.
        let plain_key = v["key"].as_str().is_some_and(|k| !serde_json::to_string(k).expect("json").contains('\\'));
        let plain_state = v["state"].as_str().is_none_or(|s| !serde_json::to_string(s).expect("json").contains('\\'));
        let added = ADDED.iter().any(|a| v.get(std::str::from_utf8(a).expect("utf-8")).is_some());
        if plain_key && plain_state && !added && short_integers(&v) {
            prop_assert!(taken, "{}", String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn text_serde_json_would_write_otherwise_is_never_taken_as_it_stands(
        body in mangled(),
        key in prop::option::of("[a-z]{1,3}"),
    ) {
        agrees(&body)?;
        // With a plain key first, so that only the rest decides.
        if let (Some(k), Some(rest)) = (key, body.strip_prefix(b"{")) {
            let sep = if rest == b"}" { "" } else { "," };
            let mut bytes = format!("{{\"key\":\"{k}\"{sep}").into_bytes();
            bytes.extend_from_slice(rest);
            agrees(&bytes)?;
        }
    }
}

#[test]
fn what_the_fast_way_refuses_it_refuses_for_a_reason() {
    let refused = [
        &br#"{"key":"a", "state":"live"}"#[..],
        br#"{"key":"a","key":"b"}"#,
        br#"{"key":"a","n":-0}"#,
        br#"{"key":"a","n":1.0}"#,
        br#"{"key":"a","n":1234567890123456789}"#,
        br#"{"key":"a","s":"\u0041"}"#,
        br#"{"key":"a","s":"\u001F"}"#,
        br#"{"key":"a","s":"\u000a"}"#,
        br#"{"key":"a","s":"\/"}"#,
        br#"{"key":"a\n"}"#,
        br#"{"key":"a","host":"h"}"#,
        br#"{"key":"a"}
"#,
        br#"{"state":"live"}"#,
        br#"["key"]"#,
    ];
    for bytes in refused {
        assert!(raw(bytes).is_none(), "{}", String::from_utf8_lossy(bytes));
    }
    let taken = r#"{"key":"a","s":"\u001f\n\"\\é","n":[-1,0,123456789012345678,{},[]],"t":true}"#
        .as_bytes();
    let (got, key, _) = raw(taken).expect("taken");
    assert_eq!(Some(got), plain(taken));
    assert_eq!(key, "a");
}
