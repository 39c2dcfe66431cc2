//! A fast path for the one YAML shape writers actually produce.
//!
//! A sweep reads every lockfile, and a full YAML parse costs several times
//! the open + read + close of the file itself. Every writer we share roots
//! with (this crate, the seed, Python's `safe_dump`) emits a flat block
//! mapping of `name: plain-scalar` lines. This reader accepts exactly that
//! shape, restricted to values whose meaning cannot differ between YAML
//! readers, and answers `None` for anything else (quotes, comments,
//! metadata, continuation lines, unknown fields, non-ASCII...), which then
//! goes through `serde_yaml_ng` as before. So it may only ever agree with the
//! full parser: the differential tests below pin that.

use super::ClaimRecord;
use serde_json::{Map, Value};

/// The record in `text` if it has the simple canonical shape, else None.
pub(crate) fn parse(text: &str) -> Option<ClaimRecord> {
    let mut schema_version = None;
    let (mut key, mut holder, mut host) = (None, None, None);
    let (mut acquired_at, mut pid) = (None, None);
    let mut expires_at: Option<Option<i64>> = None;
    let (mut reason, mut harness, mut machine_id): (Option<Option<&str>>, _, _) =
        (None, None, None);
    let mut metadata: Option<Map<String, Value>> = None;
    let mut in_metadata = false;
    if text.is_empty() {
        return None;
    }
    for line in lines(text.strip_suffix('\n').unwrap_or(text)) {
        if line == "metadata:" {
            if metadata.is_some() {
                return None;
            }
            metadata = Some(Map::new());
            in_metadata = true;
            continue;
        }
        if let Some(entry) = line.strip_prefix("  ") {
            let map = metadata.as_mut().filter(|_| in_metadata)?;
            let colon = colon_at(entry)?;
            let (name, value) = (
                plain(&entry[..colon])?,
                entry[colon + 1..].strip_prefix(' ')?,
            );
            if map.insert(name.to_string(), untyped(value)?).is_some() {
                return None;
            }
            continue;
        }
        // An empty `metadata:` is null to the full parser, not an empty map.
        if in_metadata && metadata.as_ref().is_some_and(Map::is_empty) {
            return None;
        }
        in_metadata = false;
        // Field names hold no ':', so the first one ends the name.
        let colon = colon_at(line)?;
        let (name, value) = (&line[..colon], line[colon + 1..].strip_prefix(' ')?);
        // Each field at most once: a duplicate is for the full parser to judge.
        match name {
            "schema_version" => set(&mut schema_version, uint(value)?)?,
            "key" => set(&mut key, plain(value)?)?,
            "holder" => set(&mut holder, plain(value)?)?,
            "acquired_at" => set(&mut acquired_at, int(value)?)?,
            "pid" => set(&mut pid, i32::try_from(int(value)?).ok()?)?,
            "host" => set(&mut host, plain(value)?)?,
            "expires_at" => set(
                &mut expires_at,
                if value == "null" {
                    None
                } else {
                    Some(int(value)?)
                },
            )?,
            "reason" => set(&mut reason, optional(value)?)?,
            "harness" => set(&mut harness, optional(value)?)?,
            "machine_id" => set(&mut machine_id, optional(value)?)?,
            _ => return None,
        }
    }
    if metadata.as_ref().is_some_and(Map::is_empty) {
        return None;
    }
    let owned = |v: Option<Option<&str>>| v.flatten().map(str::to_string);
    Some(ClaimRecord {
        schema_version: schema_version.unwrap_or(super::SCHEMA_VERSION),
        key: key?.to_string(),
        holder: holder?.to_string(),
        acquired_at: acquired_at?,
        pid: pid?,
        host: host?.to_string(),
        expires_at: expires_at.flatten(),
        reason: owned(reason),
        harness: owned(harness),
        machine_id: owned(machine_id),
        metadata: metadata.unwrap_or_default(),
    })
}

/// The `\n`-separated lines of `text`. A byte loop: lines are a few dozen
/// bytes, where `str::split`'s searcher costs more to set up than to run.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let t = rest?;
        match t.bytes().position(|b| b == b'\n') {
            Some(i) => {
                rest = Some(&t[i + 1..]);
                Some(&t[..i])
            }
            None => {
                rest = None;
                Some(t)
            }
        }
    })
}

/// Where the first `:` of a line is (field names hold none).
fn colon_at(line: &str) -> Option<usize> {
    line.bytes().position(|b| b == b':')
}

fn set<T>(slot: &mut Option<T>, v: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(v);
    Some(())
}

/// Decimal integer without sign tricks or leading zeros (`+1`, `0x1f`, `012`
/// and `1_000` all mean something parser-specific: left to the full parser).
fn int(v: &str) -> Option<i64> {
    let digits = v.strip_prefix('-').unwrap_or(v);
    let b = digits.as_bytes();
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) || (b[0] == b'0' && b.len() > 1) {
        return None;
    }
    if digits.len() != v.len() && digits == "0" {
        return None;
    }
    v.parse().ok()
}

fn uint(v: &str) -> Option<u32> {
    u32::try_from(int(v)?).ok()
}

/// A plain scalar that every YAML reader takes as this exact string:
/// printable ASCII, no leading indicator, nothing that starts a comment or a
/// nested mapping, no surrounding space, not a null spelling.
fn plain(v: &str) -> Option<&str> {
    let b = v.as_bytes();
    let first = *b.first()?;
    let last = *b.last()?;
    if b"-?:,[]{}#&*!|>'\"%@` ~".contains(&first)
        || last == b' '
        || last == b':'
        || matches!(v, "null" | "Null" | "NULL")
    {
        return None;
    }
    // Branch-free passes the compiler vectorises: these checks ran a byte at
    // a time and were a tenth of a `list` process.
    let unprintable = b
        .iter()
        .fold(false, |acc, &c| acc | !(0x20..0x7f).contains(&c));
    let starts_comment_or_mapping = b.iter().zip(&b[1..]).fold(false, |acc, (&p, &c)| {
        acc | ((p == b':') & (c == b' ')) | ((p == b' ') & (c == b'#'))
    });
    if unprintable || starts_comment_or_mapping {
        return None;
    }
    Some(v)
}

/// A metadata value whose type every reader resolves alike: `true`,
/// `false`, `null`, a decimal integer, or a plain string starting with a
/// letter that is none of those (a letter start also rules out floats:
/// the only float spellings that start with one are inf and nan, which YAML
/// reads as strings).
fn untyped(v: &str) -> Option<Value> {
    match v {
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        "null" => return Some(Value::Null),
        "True" | "TRUE" | "False" | "FALSE" => return None,
        _ => {}
    }
    if let Some(n) = int(v) {
        return Some(Value::from(n));
    }
    if !v.as_bytes().first()?.is_ascii_alphabetic() {
        return None;
    }
    plain(v).map(|s| Value::String(s.to_string()))
}

/// An optional string: `null` is absent, as in the full parser.
fn optional(v: &str) -> Option<Option<&str>> {
    if v == "null" {
        return Some(None);
    }
    plain(v).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn full(text: &str) -> Option<ClaimRecord> {
        serde_yaml_ng::from_str(text).ok()
    }

    /// Whenever the fast path answers, the full parser agrees exactly.
    fn agrees(text: &str) {
        if let Some(fast) = parse(text) {
            assert_eq!(Some(fast), full(text), "fast path disagrees on {text:?}");
        }
    }

    #[test]
    fn records_this_crate_writes_take_the_fast_path_and_match_the_full_parser() {
        let text = "schema_version: 1\nkey: task:000001/build step\nholder: pty:ab12\n\
                    acquired_at: 1764460000000\npid: 4242\nhost: build-7\n\
                    expires_at: 1764463600000\nreason: rebuild shard 3 after dep bump\n\
                    harness: codex\nmachine_id: 0f3c2d5e9a8b47c6:4026531836\n";
        let fast = parse(text).expect("canonical shape takes the fast path");
        assert_eq!(Some(fast), full(text));
        let pid_bound = "schema_version: 1\nkey: k\nholder: h\nacquired_at: 5\npid: 1\nhost: x";
        assert_eq!(parse(pid_bound), full(pid_bound));
        assert!(parse(pid_bound).is_some());
    }

    #[test]
    fn anything_outside_the_simple_shape_is_left_to_the_full_parser() {
        for text in [
            "",
            "key: 'quoted'\nholder: h\nacquired_at: 5\npid: 1\nhost: x\n",
            "key: k\nholder: h\nacquired_at: 5\npid: 1\nhost: x\nreason: a\n  continued\n",
            "key: k # comment\nholder: h\nacquired_at: 5\npid: 1\nhost: x\n",
            "key: k\nkey: k2\nholder: h\nacquired_at: 5\npid: 1\nhost: x\n",
            "key: k\nholder: h\nacquired_at: 0x10\npid: 1\nhost: x\n",
            "key: k\nholder: h\nacquired_at: 010\npid: 1\nhost: x\n",
            "key: k\nholder: h\nacquired_at: 5\npid: 99999999999\nhost: x\n",
            "key: k\nholder: h\nacquired_at: 5\npid: 1\nhost: x\nfuture: 1\n",
            "key: k\r\nholder: h\r\nacquired_at: 5\r\npid: 1\r\nhost: x\r\n",
            "key: null\nholder: h\nacquired_at: 5\npid: 1\nhost: x\n",
            "key: k\nholder: h\nacquired_at: 5\npid: 1\nhost: x\nreason: ~\n",
            "key: k\nholder: h\nacquired_at: 5\npid: 1\n\nhost: x\n",
            "key: k\nholder: h\nacquired_at: 5\npid: 1\n",
            "---\nkey: k\nholder: h\nacquired_at: 5\npid: 1\nhost: x\n",
        ] {
            assert_eq!(parse(text), None, "{text:?}");
            agrees(text);
        }
    }

    #[test]
    fn flat_metadata_takes_the_fast_path_and_nested_metadata_does_not() {
        let flat = "key: k\nholder: h\nacquired_at: 5\npid: 1\nhost: x\n\
                    metadata:\n  node: n3\n  attempt: 3\n  ok: true\n  gone: null\n";
        let rec = parse(flat).expect("flat metadata is the simple shape");
        assert_eq!(
            rec.metadata.keys().collect::<Vec<_>>(),
            ["node", "attempt", "ok", "gone"]
        );
        agrees(flat);
        for text in [
            "key: k\nholder: h\nacquired_at: 5\npid: 1\nhost: x\nmetadata:\n  a:\n    b: 1\n",
            "key: k\nholder: h\nacquired_at: 5\npid: 1\nhost: x\nmetadata:\n  a: 1.5\n",
            "key: k\nholder: h\nacquired_at: 5\npid: 1\nhost: x\nmetadata:\n  a: 1\n  a: 2\n",
            "key: k\nholder: h\nacquired_at: 5\npid: 1\nhost: x\nmetadata:\n",
            "key: k\nholder: h\nacquired_at: 5\npid: 1\nmetadata:\nhost: x\n",
            "key: k\n  a: 1\nholder: h\nacquired_at: 5\npid: 1\nhost: x\n",
        ] {
            assert_eq!(parse(text), None, "{text:?}");
            agrees(text);
        }
    }

    #[test]
    fn null_optionals_and_negative_numbers_match_the_full_parser() {
        let text = "key: k\nholder: h\nacquired_at: -5\npid: -1\nhost: x\n\
                    expires_at: null\nreason: null\n";
        assert!(parse(text).is_some());
        agrees(text);
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9][a-z0-9:/ ._#=-]{0,10}[a-z0-9.:]",
            "[a-z0-9][a-z0-9:/ ._#=-]{0,10}[a-z0-9.:]",
            "[ -~]{0,12}",
            "[0-9a-f:+.-]{1,10}",
            Just("null".to_string()),
            Just("~".to_string()),
            Just("yes".to_string()),
            Just("true".to_string()),
            Just("False".to_string()),
            Just("inf".to_string()),
            Just("nan".to_string()),
            Just("0123".to_string()),
            Just("1e3".to_string()),
            Just("-0".to_string()),
            Just("12:30:00".to_string()),
            Just("2001-12-14".to_string()),
            Just(".inf".to_string()),
        ]
    }

    fn number() -> impl Strategy<Value = String> {
        prop_oneof![3 => "-?[1-9][0-9]{0,12}", 1 => value()]
    }

    proptest! {
        #[test]
        fn the_fast_path_never_disagrees_with_the_full_parser(
            strings in proptest::collection::vec(value(), 6),
            numbers in proptest::collection::vec(number(), 4),
            drop in proptest::collection::vec(prop::bool::weighted(0.2), 10),
        ) {
            let mut text = String::new();
            let fields = [("schema_version", &numbers[0]), ("key", &strings[0]),
                          ("holder", &strings[1]), ("acquired_at", &numbers[1]),
                          ("pid", &numbers[2]), ("host", &strings[2]),
                          ("expires_at", &numbers[3]), ("reason", &strings[3]),
                          ("harness", &strings[4]), ("machine_id", &strings[5])];
            for ((n, v), d) in fields.iter().zip(&drop) {
                if !d {
                    text.push_str(&format!("{n}: {v}\n"));
                }
            }
            agrees(&text);
        }

        #[test]
        fn metadata_blocks_never_disagree(
            entries in proptest::collection::vec(("[a-z][a-z0-9_]{0,6}", value()), 0..4),
            after in any::<bool>(),
        ) {
            let mut text = String::from("key: k\nholder: h\nacquired_at: 5\npid: 1\n");
            if !after {
                text.push_str("host: x\n");
            }
            text.push_str("metadata:\n");
            for (k, v) in &entries {
                text.push_str(&format!("  {k}: {v}\n"));
            }
            if after {
                text.push_str("host: x\n");
            }
            agrees(&text);
        }

        #[test]
        fn numeric_fields_never_disagree(a in "-?[0-9]{1,20}", p in "-?[0-9]{1,11}") {
            agrees(&format!("key: k\nholder: h\nacquired_at: {a}\npid: {p}\nhost: x\n"));
        }
    }
}
