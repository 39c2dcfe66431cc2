//! Reader and writer parity of the lockfile YAML, differentially: whatever
//! claimtop's reader makes of a text must be what the seed's reader makes of
//! it (a straight `serde_yaml_ng` parse of the record shape plus the seed's
//! schema checks), and whatever claimtop writes must be what the seed's
//! writer (`serde_yaml_ng::to_string` of the same struct) writes, but for
//! strings PyYAML would misread (quoted as PyYAML quotes them; see
//! `pyyaml_quoting.rs`), and must read back alike. Any fast path or
//! hand-written emitter added later has to keep both.

use claimtop::claims::record::pyyaml_misreads;
use claimtop::claims::{ClaimRecord, SCHEMA_VERSION};
use proptest::prelude::*;
use serde_json::{Map, Value};

/// The seed's reader: parse, then refuse newer schemas and empty identity.
fn seed_read(text: &str) -> Option<ClaimRecord> {
    let rec: ClaimRecord = serde_yaml_ng::from_str(text).ok()?;
    if rec.schema_version > SCHEMA_VERSION || rec.key.is_empty() || rec.holder.is_empty() {
        return None;
    }
    Some(rec)
}

fn assert_same_reading(text: &str) {
    let ours = ClaimRecord::from_yaml(text).ok();
    let seed = seed_read(text);
    assert_eq!(ours, seed, "readers disagree on {text:?}");
}

/// Values that mean different things to different YAML readers, or nothing.
const TRICKY: &[&str] = &[
    "null",
    "Null",
    "NULL",
    "~",
    "",
    "true",
    "True",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "0",
    "-0",
    "+1",
    "007",
    "0x1F",
    "0o17",
    "0b101",
    "1_000",
    "1e3",
    "1.5",
    ".inf",
    "-.inf",
    ".nan",
    "12:30",
    "12:30:45",
    "2026-11-30",
    "-",
    "- a",
    "? a",
    ": a",
    "a: b",
    "a #b",
    "#c",
    "'q'",
    "\"q\"",
    "'it''s'",
    "\"\\u00e9\"",
    "[1, 2]",
    "{a: 1}",
    "&x a",
    "*x",
    "!!str 5",
    "!x y",
    "|",
    ">",
    "%TAG",
    "@a",
    "`a",
    "a\tb",
    " lead",
    "trail ",
    "é",
    "走",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "2147483648",
    "1796006639001",
    "node:ab-1234abcd",
    "pty:w1",
    "3d1219c7:4026531836",
];

const FIELDS: &[&str] = &[
    "schema_version",
    "key",
    "holder",
    "acquired_at",
    "pid",
    "host",
    "expires_at",
    "reason",
    "harness",
    "machine_id",
    "metadata",
    "future_field",
];

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(TRICKY).prop_map(str::to_string),
        any::<i64>().prop_map(|n| n.to_string()),
        (0i64..3).prop_map(|n| n.to_string()),
        "[ -~]{0,10}",
    ]
}

/// A mapping in the shape writers produce, with tricky values, sometimes a
/// field missing, repeated or unknown, and sometimes CRLF or no final newline.
fn record_text() -> impl Strategy<Value = String> {
    let line = (
        prop_oneof![
            4 => Just(None),
            1 => proptest::sample::select(FIELDS).prop_map(Some),
        ],
        value(),
    );
    (
        proptest::collection::vec(value(), 6),
        proptest::collection::vec(line, 0..4),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(base, extra, crlf, final_nl, drop_one)| {
            let mut lines: Vec<String> = FIELDS[..6]
                .iter()
                .zip(&base)
                .map(|(f, v)| format!("{f}: {v}"))
                .collect();
            if drop_one {
                lines.remove(base[0].len() % 6);
            }
            for (field, v) in extra {
                let f = field.unwrap_or(FIELDS[6 + v.len() % 4]);
                lines.push(format!("{f}: {v}"));
            }
            let nl = if crlf { "\r\n" } else { "\n" };
            let mut text = lines.join(nl);
            if final_nl {
                text.push_str(nl);
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn claimtop_reads_every_generated_record_as_the_seed_does(text in record_text()) {
        assert_same_reading(&text);
    }
}

#[test]
fn claimtop_reads_every_canonical_record_with_a_tricky_value_as_the_seed_does() {
    // Exhaustive over one tricky value in each field of an otherwise good
    // record: the cases a fast path is most likely to get wrong.
    let good = [
        ("schema_version", "1"),
        ("key", "node:x"),
        ("holder", "pty:h"),
        ("acquired_at", "1796006639001"),
        ("pid", "4242"),
        ("host", "vm"),
        ("expires_at", "1796006699001"),
        ("reason", "why"),
        ("harness", "codex"),
        ("machine_id", "m:1"),
    ];
    for i in 0..good.len() {
        for tricky in TRICKY {
            let text: String = good
                .iter()
                .enumerate()
                .map(|(j, (f, v))| format!("{f}: {}\n", if i == j { tricky } else { v }))
                .collect();
            assert_same_reading(&text);
        }
    }
}

#[test]
fn claimtop_reads_other_writers_styles_as_the_seed_does() {
    for text in [
        // PyYAML safe_dump(sort_keys=False) style, block metadata with a list.
        "schema_version: 1\nkey: node:x\nholder: pty:h\nacquired_at: 5\npid: 7\nhost: vm\n\
         metadata:\n  paths:\n  - a\n  - b\n",
        // Quoted scalars, an explicit null, a comment and document markers.
        "---\nschema_version: 1\nkey: 'node:x'\nholder: \"pty:h\"\nacquired_at: 5 # ms\n\
         pid: 7\nhost: vm\nexpires_at: null\n...\n",
        // A flow mapping for the whole record.
        "{schema_version: 1, key: k, holder: h, acquired_at: 5, pid: 7, host: vm}\n",
        // JSON is YAML.
        "{\"key\": \"k\", \"holder\": \"h\", \"acquired_at\": 5, \"pid\": 7, \"host\": \"x\"}",
        // Anchors and aliases, tags.
        "key: &k k\nholder: *k\nacquired_at: !!int 5\npid: 7\nhost: vm\n",
        // Duplicate field, wrong types, empty document.
        "key: k\nkey: k2\nholder: h\nacquired_at: 5\npid: 7\nhost: vm\n",
        "key: k\nholder: h\nacquired_at: '5'\npid: 7\nhost: vm\n",
        "key: k\nholder: h\nacquired_at: 5\npid: 7.0\nhost: vm\n",
        "key: k\nholder: h\nacquired_at: 5\npid: 7\nhost: vm\nmetadata: null\n",
        "key: k\nholder: h\nacquired_at: 5\npid: 7\nhost: vm\nmetadata: [1]\n",
        "",
        "\n",
        "# only a comment\n",
        // Indented continuation of a plain scalar.
        "key: k\nholder: h\n  continued\nacquired_at: 5\npid: 7\nhost: vm\n",
        // Trailing spaces and a tab after the colon.
        "key: k  \nholder:\th\nacquired_at: 5\npid: 7\nhost: vm\n",
    ] {
        assert_same_reading(text);
    }
}

fn text_value() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(TRICKY).prop_map(str::to_string),
        "\\PC{0,12}",
        any::<String>(),
    ]
}

fn record() -> impl Strategy<Value = ClaimRecord> {
    (
        (
            text_value(),
            text_value(),
            any::<i64>(),
            any::<i32>(),
            text_value(),
        ),
        (
            proptest::option::of(any::<i64>()),
            proptest::option::of(text_value()),
            proptest::option::of(text_value()),
            proptest::option::of(text_value()),
            proptest::collection::vec((text_value(), text_value()), 0..3),
        ),
    )
        .prop_map(
            |((key, holder, acquired_at, pid, host), (expires_at, reason, harness, mid, meta))| {
                ClaimRecord {
                    schema_version: 1,
                    key,
                    holder,
                    acquired_at,
                    pid,
                    host,
                    expires_at,
                    reason,
                    harness,
                    machine_id: mid,
                    metadata: meta
                        .into_iter()
                        .map(|(k, v)| (k, Value::String(v)))
                        .collect::<Map<String, Value>>()
                        .into(),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn claimtop_writes_as_the_seed_writer_does_but_for_pyyaml_misread_strings_and_reads_back(
        rec in record()
    ) {
        let ours = rec.to_yaml().unwrap();
        let seed = serde_yaml_ng::to_string(&rec).unwrap();
        let special = [&rec.key, &rec.holder, &rec.host]
            .into_iter()
            .chain([&rec.reason, &rec.harness, &rec.machine_id].into_iter().flatten())
            .chain(rec.metadata.keys())
            .map(String::as_str)
            .chain(rec.metadata.values().filter_map(Value::as_str))
            .any(pyyaml_misreads);
        if !special {
            prop_assert_eq!(&ours, &seed);
        }
        // The seed's reader reads claimtop's bytes as it reads its own.
        prop_assert_eq!(
            serde_yaml_ng::from_str::<ClaimRecord>(&ours).ok(),
            serde_yaml_ng::from_str::<ClaimRecord>(&seed).ok()
        );
        // An absent optional field has no line at all, never a null.
        for (field, absent) in [
            ("expires_at", rec.expires_at.is_none()),
            ("reason", rec.reason.is_none()),
            ("harness", rec.harness.is_none()),
            ("machine_id", rec.machine_id.is_none()),
            ("metadata", rec.metadata.is_empty()),
        ] {
            let has_line = ours.lines().any(|l| l.starts_with(&format!("{field}:")));
            prop_assert_eq!(has_line, !absent, "{} in {:?}", field, ours);
        }
        if !rec.key.is_empty() && !rec.holder.is_empty() {
            prop_assert_eq!(ClaimRecord::from_yaml(&ours).ok(), Some(rec));
        }
    }
}
