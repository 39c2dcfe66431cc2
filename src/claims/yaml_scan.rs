//! One pass over a lockfile's YAML text, before any parser sees it.
//!
//! A sweep reads every lockfile, and a full YAML parse costs several times
//! the open + read + close of the file itself. Every writer we share roots
//! with (this crate, the seed, Python's `safe_dump`) emits a flat block
//! mapping of `name: plain-scalar` lines. [`scan`] reads exactly that shape,
//! restricted to values whose meaning cannot differ between YAML readers,
//! into the record itself. Anything else (quotes, comments, nested
//! metadata, continuation lines, unknown fields, non-ASCII...) goes to
//! `serde_yaml_ng`, and for that the same pass goes on to measure the one
//! cost libyaml does not bound itself: how deep flow collections (`[`, `{`)
//! nest (see `yaml_cost` for why that must be judged first).
//!
//! So the fast path may only ever agree with the full parser (the
//! differential tests below pin that), and the nesting verdict is the one a
//! separate scan of the whole text would give (pinned too).

use super::ClaimRecord;
use serde_json::{Map, Value};

/// Deepest flow nesting (`[`/`{`) the scan lets through to libyaml: as deep
/// as the seed itself can read metadata (its recursion limit of 128 counts
/// the record and the metadata mapping), so nothing the seed reads is
/// refused by it.
pub const MAX_FLOW_DEPTH: usize = 128;

/// What one pass over lockfile text found.
// Unpacked by the caller at once, never stored: boxing the record would add
// an allocation to every lockfile of every sweep.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
pub(crate) enum Scan {
    /// The simple canonical shape, read.
    Record(ClaimRecord),
    /// Not that shape: the full parser must judge it, unless flow nesting
    /// passes [`MAX_FLOW_DEPTH`] (`too_deep`), which only a refusal can.
    Full { too_deep: bool },
}

/// Read `text` as the fast path's record, or say how the full parser must
/// take it.
pub(crate) fn scan(text: &str) -> Scan {
    let mut at = 0;
    match record(text, &mut at) {
        Some(rec) => Scan::Record(rec),
        // Every line before `at` was a flat `name: scalar` line, which holds
        // no flow structure and leaves the nesting scan in its start state
        // at the next line, so only the rest needs measuring. The line at
        // `at` is measured again because it may own the lines after it (a
        // plain scalar continues onto more-indented lines).
        None => Scan::Full {
            too_deep: flow_too_deep(&text[at..]),
        },
    }
}

/// The record in `text` if it has the simple canonical shape. `at` is left
/// at the start of the last line read as part of that shape.
fn record(text: &str, at: &mut usize) -> Option<ClaimRecord> {
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
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut start = 0;
    loop {
        let end =
            memchr::memchr(b'\n', &body.as_bytes()[start..]).map_or(body.len(), |k| start + k);
        let line = &body[start..end];
        if line == "metadata:" {
            if metadata.is_some() {
                return None;
            }
            metadata = Some(Map::new());
            in_metadata = true;
        } else if let Some(entry) = line.strip_prefix("  ") {
            let map = metadata.as_mut().filter(|_| in_metadata)?;
            let (name, value) = name_value(entry)?;
            if map
                .insert(plain(name)?.to_string(), untyped(value)?)
                .is_some()
            {
                return None;
            }
        } else {
            // An empty `metadata:` is null to the full parser, not an empty map.
            if in_metadata && metadata.as_ref().is_some_and(Map::is_empty) {
                return None;
            }
            in_metadata = false;
            let (name, value) = name_value(line)?;
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
        *at = start;
        if end == body.len() {
            break;
        }
        start = end + 1;
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
        metadata: metadata.unwrap_or_default().into(),
    })
}

/// `name: value` split at the first `:` (names hold none), which must be
/// followed by one space.
fn name_value(line: &str) -> Option<(&str, &str)> {
    let colon = line.bytes().position(|b| b == b':')?;
    Some((&line[..colon], line[colon + 1..].strip_prefix(' ')?))
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
/// Digits are accumulated by hand: `str::parse` re-validated what this has
/// already checked, on every number of every lockfile.
fn int(v: &str) -> Option<i64> {
    let (negative, digits) = match v.strip_prefix('-') {
        Some(d) => (true, d.as_bytes()),
        None => (false, v.as_bytes()),
    };
    let (&first, _) = digits.split_first()?;
    if (first == b'0' && (digits.len() > 1 || negative)) || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Accumulated on the side of the sign, so i64::MIN reads too.
    digits.iter().try_fold(0i64, |n, &c| {
        let d = i64::from(c - b'0');
        let n = n.checked_mul(10)?;
        if negative {
            n.checked_sub(d)
        } else {
            n.checked_add(d)
        }
    })
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
    // A match, not `slice::contains`, which calls memchr for one byte.
    let indicator = matches!(
        first,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
            | b' '
            | b'~'
    );
    if indicator
        || last == b' '
        || last == b':'
        || !(0x20..0x7f).contains(&first)
        || matches!(v, "null" | "Null" | "NULL")
    {
        return None;
    }
    // One branch-free pass over byte pairs, which the compiler vectorises:
    // each later byte printable, and no `: ` or ` #` anywhere.
    let bad = b.iter().zip(&b[1..]).fold(false, |acc, (&p, &c)| {
        acc | !(0x20..0x7f).contains(&c) | ((p == b':') & (c == b' ')) | ((p == b' ') & (c == b'#'))
    });
    (!bad).then_some(v)
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

/// Whether flow nesting passes [`MAX_FLOW_DEPTH`], judged before the full
/// parser sees the text (`yaml_cost` says why it must be before). A lexical
/// scan, not a parser, but one that knows where YAML text cannot hold
/// structure: quoted scalars, comments, block scalars (`|`, `>`) and block
/// plain scalars with their continuation lines are skipped whole, so a
/// reason such as `don't [x` or a multi-line literal full of brackets is
/// never counted.
fn flow_too_deep(text: &str) -> bool {
    let b = text.as_bytes();
    let n = b.len();
    let blank_at = |k: usize| matches!(b.get(k), None | Some(b' ' | b'\t' | b'\r' | b'\n'));
    let (mut depth, mut i) = (0usize, 0usize);
    // Whether a YAML token may start here (line start, after an indicator).
    let mut at_token_start = true;
    // What lines must be indented past to continue this line's scalar: the
    // column of its first plain token (a mapping key, possibly after `- `),
    // else its indentation.
    let mut line_start = 0;
    let mut line_indent = leading_spaces(b, 0);
    let mut key_col: Option<usize> = None;
    while i < n {
        let c = b[i];
        let deeper_than = key_col.unwrap_or(line_indent);
        match c {
            b'\n' => {
                at_token_start = true;
                line_start = i + 1;
                line_indent = leading_spaces(b, i + 1);
                key_col = None;
            }
            b' ' | b'\t' | b'\r' => {}
            b'#' if i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'\n') => {
                i = end_of_line(b, i);
                continue;
            }
            b'"' | b'\'' if at_token_start => {
                i = end_of_quoted(b, i);
                at_token_start = false;
            }
            b'|' | b'>' if at_token_start && depth == 0 => {
                i = skip_indented_lines(b, end_of_line(b, i), deeper_than);
                continue;
            }
            // An anchor or tag precedes a node: skip its name, stay at start.
            b'&' | b'!' if at_token_start => {
                while i < n && !blank_at(i) {
                    i += 1;
                }
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_FLOW_DEPTH {
                    return true;
                }
                at_token_start = true;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                at_token_start = false;
            }
            b',' => at_token_start = true,
            // `- `, `: `, `? ` are indicators only before whitespace; in
            // `a-b` or `10:30` they are text.
            b':' | b'-' | b'?' if blank_at(i + 1) => at_token_start = true,
            // A block plain scalar: text up to `: `, ` #` or the line's end,
            // plus any more-indented continuation lines.
            _ if at_token_start && depth == 0 => {
                key_col.get_or_insert(i - line_start);
                let mut j = i;
                while j < n && b[j] != b'\n' {
                    if (b[j] == b':' && blank_at(j + 1))
                        || (b[j] == b'#' && matches!(b[j - 1], b' ' | b'\t'))
                    {
                        break;
                    }
                    j += 1;
                }
                if j < n && b[j] == b'\n' {
                    j = skip_indented_lines(b, j, deeper_than);
                }
                i = j;
                at_token_start = false;
                continue;
            }
            _ => at_token_start = false,
        }
        i += 1;
    }
    false
}

fn leading_spaces(b: &[u8], from: usize) -> usize {
    b.get(from..)
        .map_or(0, |rest| rest.iter().take_while(|&&c| c == b' ').count())
}

/// Index of the `\n` ending the line that `from` is on (or the end).
fn end_of_line(b: &[u8], from: usize) -> usize {
    b[from..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |k| from + k)
}

/// Index of the quote closing the one at `open` (or the end).
fn end_of_quoted(b: &[u8], open: usize) -> usize {
    let q = b[open];
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b'\\' if q == b'"' => i += 1,
            // '' is an escaped quote inside single quotes.
            c if c == q && q == b'\'' && b.get(i + 1) == Some(&b'\'') => i += 1,
            c if c == q => return i,
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// From the `\n` at `nl`, skip every following line that is blank or
/// indented deeper than `indent`; returns the `\n` before the first line
/// that is not (or the end).
fn skip_indented_lines(b: &[u8], mut nl: usize, indent: usize) -> usize {
    while nl < b.len() {
        let start = nl + 1;
        let spaces = leading_spaces(b, start);
        let blank = matches!(b.get(start + spaces), None | Some(b'\n' | b'\r'));
        if !(blank || spaces > indent) {
            break;
        }
        nl = end_of_line(b, start);
    }
    nl
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The fast path's answer alone.
    fn parse(text: &str) -> Option<ClaimRecord> {
        match scan(text) {
            Scan::Record(rec) => Some(rec),
            Scan::Full { .. } => None,
        }
    }

    fn full(text: &str) -> Option<ClaimRecord> {
        serde_yaml_ng::from_str(text).ok()
    }

    /// Whenever the fast path answers, the full parser agrees exactly.
    fn agrees(text: &str) {
        if let Some(fast) = parse(text) {
            assert_eq!(Some(fast), full(text), "fast path disagrees on {text:?}");
        }
    }

    /// Whenever the fast path declines, the nesting verdict is the one a
    /// scan of the whole text gives.
    fn same_depth_verdict(text: &str) {
        if let Scan::Full { too_deep } = scan(text) {
            assert_eq!(too_deep, flow_too_deep(text), "{text:?}");
        }
    }

    #[test]
    fn the_nesting_verdict_after_flat_lines_is_the_whole_texts() {
        let head = "key: k\nholder: h\nacquired_at: 1\npid: 1\nhost: x\n";
        let deep = "[".repeat(MAX_FLOW_DEPTH + 1);
        for (tail, too_deep) in [
            // A plain scalar's continuation lines are text, not structure.
            (format!("reason: fix it\n  {deep}\n"), false),
            (format!("reason: fix it\n{deep}\n"), true),
            (format!("metadata:\n  a: 1\n  b: {deep}\n"), true),
            (format!("metadata:\n  a: x\n    {deep}\n"), false),
            (format!("# {deep}\n"), false),
            (format!("reason: '{deep}'\n"), false),
            (format!("metadata: {deep}\n"), true),
        ] {
            let text = format!("{head}{tail}");
            assert_eq!(scan(&text), Scan::Full { too_deep }, "{text:?}");
            same_depth_verdict(&text);
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

    #[test]
    fn a_value_with_bytes_past_printable_ascii_in_pairs_is_left_to_the_full_parser() {
        // Each such byte is as telling as one alone: a second must never
        // cancel the first. NEL (two bytes) is a line break to YAML, and a
        // control is refused by it; the fast path may answer neither.
        for v in [
            "a\u{1}b\u{1}c",
            "a\u{85}b",
            "a\u{7f}\u{7f}",
            "a: b: c",
            "a: b #c",
        ] {
            let text = format!("key: k\nholder: h\nacquired_at: 1\npid: 1\nhost: x\nreason: {v}\n");
            assert_eq!(parse(&text), None, "{text:?}");
            agrees(&text);
        }
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
        fn the_one_pass_nesting_verdict_never_differs_from_a_whole_scan(
            flat in proptest::collection::vec(0usize..4, 0..4),
            tail in proptest::collection::vec(0usize..14, 0..12),
        ) {
            const FLAT: [&str; 4] = ["key: k\n", "pid: 1\n", "metadata:\n", "  a: b\n"];
            let deep = "[".repeat(MAX_FLOW_DEPTH / 3);
            let pieces = [
                deep.as_str(), "{", "]", "}", "\n", "\n  ", "  ", " # ", "'", "\"", ": ", "- ",
                "reason: x", "|\n",
            ];
            let mut text: String = flat.iter().map(|&i| FLAT[i]).collect();
            text.extend(tail.iter().map(|&i| pieces[i]));
            same_depth_verdict(&text);
        }

        #[test]
        fn numeric_fields_never_disagree(a in "-?[0-9]{1,20}", p in "-?[0-9]{1,11}") {
            agrees(&format!("key: k\nholder: h\nacquired_at: {a}\npid: {p}\nhost: x\n"));
        }
    }
}
