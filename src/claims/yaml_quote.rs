//! Quoting the strings that PyYAML would read as something else.
//!
//! The seed writes with serde_yaml_ng, which quotes a string only when a
//! YAML 1.2 reader would take it for a bool, a number or null. The Python
//! side of the protocol reads with PyYAML, a YAML 1.1 reader: to it `yes`,
//! `off`, `12:30` (sexagesimal 750), `1_000`, `2001-12-14` (a date), `<<`
//! (a merge key) and `=` are not strings, so a holder spelled so reads as a
//! bool or a number, or fails, and a live claim looks corrupted there.
//!
//! Such a string is written exactly as PyYAML's own `safe_dump` writes it,
//! so a record written by either side is byte for byte the same; every
//! other scalar keeps the seed's bytes. serde_yaml_ng has no say-so over a
//! scalar's style, so the record is serialised with a placeholder in place
//! of each such string, and the placeholder is then replaced by the quoted
//! form: everything around it stays the seed's.

use super::ClaimError;
use super::ClaimRecord;
use serde_json::{Map, Value};

/// PyYAML's default line width (`safe_dump` without `width`): a quoted
/// scalar past this column is folded at its next single space.
const PYYAML_WIDTH: usize = 80;

/// `rec` as lockfile text: the seed's bytes, with each string PyYAML would
/// misread quoted as `safe_dump` quotes it.
pub(crate) fn to_yaml(rec: &ClaimRecord) -> Result<String, ClaimError> {
    let serialize = |r: &ClaimRecord| {
        serde_yaml_ng::to_string(r).map_err(|e| ClaimError::Serialize(e.to_string()))
    };
    let seed = serialize(rec)?;
    if !any_string(rec, &mut |s| misread(s)) {
        return Ok(seed);
    }
    // A private-use character the record does not contain marks the
    // placeholders, so none can be mistaken for text the record holds.
    let Some(marker) = ('\u{E000}'..='\u{F8FF}').find(|c| !seed.contains(*c)) else {
        return Err(ClaimError::Serialize(
            "no placeholder character is free in this record".into(),
        ));
    };
    let mut swaps: Vec<(String, String)> = Vec::new();
    let mut swapped = rec.clone();
    each_string_mut(&mut swapped, &mut |s| {
        if misread(s) {
            let mut ph = format!("{marker}{}{marker}", swaps.len());
            // As long as the string itself: libyaml writes a mapping key
            // over 128 bytes as a `? ` complex key, and the placeholder
            // must take the road the string would.
            while ph.len() < s.len() {
                ph.push('x');
            }
            swaps.push((ph.clone(), std::mem::replace(s, ph)));
        }
    });
    let text = serialize(&swapped)?;
    Ok(substitute(&text, &swaps))
}

/// Whether PyYAML would read `s`, written plain, as anything but this
/// string (or refuse it). Strings with a tab or a line break are left out:
/// the seed already writes those double-quoted or as a literal block, which
/// PyYAML reads back as strings.
pub fn misread(s: &str) -> bool {
    if s.contains(['\t', '\n']) {
        return false;
    }
    let b = s.as_bytes();
    matches!(
        s,
        "" | "~" | "null" | "Null" | "NULL" | "<<" | "=" | "!" | "&" | "*"
    ) || is_bool(s)
        || is_int(b)
        || is_float(b)
        || is_timestamp(b)
}

fn is_bool(s: &str) -> bool {
    matches!(
        s,
        "yes"
            | "Yes"
            | "YES"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    )
}

/// A cursor over ASCII bytes, for PyYAML's resolver patterns (regular
/// languages simple enough to match greedily, each written out below).
struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    fn new(b: &'a [u8]) -> Cur<'a> {
        Cur { b, i: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    fn eat_any(&mut self, set: &[u8]) -> bool {
        match self.peek() {
            Some(c) if set.contains(&c) => {
                self.i += 1;
                true
            }
            _ => false,
        }
    }

    /// Consume a run of bytes matching `f`; its length.
    fn run(&mut self, f: impl Fn(u8) -> bool) -> usize {
        let from = self.i;
        while self.peek().is_some_and(&f) {
            self.i += 1;
        }
        self.i - from
    }

    fn digits(&mut self) -> usize {
        self.run(|c| c.is_ascii_digit())
    }

    fn done(&self) -> bool {
        self.i == self.b.len()
    }

    fn sign(&mut self) {
        self.eat_any(b"-+");
    }

    /// `(?::[0-5]?[0-9])+`: at least one sexagesimal group.
    fn base60_groups(&mut self) -> bool {
        let mut groups = 0;
        while self.eat(b':') {
            let first = self.peek();
            match self.digits() {
                1 => {}
                2 if first.is_some_and(|c| c <= b'5') => {}
                _ => return false,
            }
            groups += 1;
        }
        groups > 0
    }

    /// `(?:[eE][-+][0-9]+)?` then the end.
    fn exponent_then_end(&mut self) -> bool {
        if self.eat_any(b"eE") && (!self.eat_any(b"-+") || self.digits() == 0) {
            return false;
        }
        self.done()
    }
}

fn digit_or_underscore(c: u8) -> bool {
    c.is_ascii_digit() || c == b'_'
}

/// PyYAML's int resolver: binary, octal, decimal, hex, sexagesimal.
fn is_int(b: &[u8]) -> bool {
    let whole = |f: &dyn Fn(&mut Cur) -> bool| {
        let mut c = Cur::new(b);
        c.sign();
        f(&mut c) && c.done()
    };
    // [-+]?0b[0-1_]+
    whole(&|c| c.eat(b'0') && c.eat(b'b') && c.run(|x| matches!(x, b'0' | b'1' | b'_')) > 0)
        // [-+]?0[0-7_]+
        || whole(&|c| c.eat(b'0') && c.run(|x| matches!(x, b'0'..=b'7' | b'_')) > 0)
        // [-+]?(?:0|[1-9][0-9_]*)
        || whole(&|c| c.eat(b'0') && c.done())
        || whole(&|c| {
            c.eat_any(b"123456789") && {
                c.run(digit_or_underscore);
                true
            }
        })
        // [-+]?0x[0-9a-fA-F_]+
        || whole(&|c| {
            c.eat(b'0') && c.eat(b'x') && c.run(|x| x.is_ascii_hexdigit() || x == b'_') > 0
        })
        // [-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
        || whole(&|c| c.eat_any(b"123456789") && {
            c.run(digit_or_underscore);
            c.base60_groups()
        })
}

/// PyYAML's float resolver: decimal with a point, sexagesimal, inf, nan.
fn is_float(b: &[u8]) -> bool {
    let try_ = |f: &dyn Fn(&mut Cur) -> bool| f(&mut Cur::new(b));
    // [-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?
    try_(&|c| {
        c.sign();
        c.run(|x| x.is_ascii_digit()) > 0
            && {
                c.run(digit_or_underscore);
                c.eat(b'.')
            }
            && {
                c.run(digit_or_underscore);
                c.exponent_then_end()
            }
    })
        // \.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
        || try_(&|c| {
            c.eat(b'.') && c.digits() > 0 && {
                c.run(digit_or_underscore);
                c.exponent_then_end()
            }
        })
        // [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        || try_(&|c| {
            c.sign();
            c.digits() > 0 && {
                c.run(digit_or_underscore);
                c.base60_groups()
            } && c.eat(b'.') && {
                c.run(digit_or_underscore);
                c.done()
            }
        })
        // [-+]?\.(?:inf|Inf|INF) and \.(?:nan|NaN|NAN)
        || matches!(
            b.strip_prefix(b"-").or(b.strip_prefix(b"+")).unwrap_or(b),
            b".inf" | b".Inf" | b".INF"
        )
        || matches!(b, b".nan" | b".NaN" | b".NAN")
}

/// PyYAML's timestamp resolver: a date, or a date and a time with an
/// optional fraction and zone.
fn is_timestamp(b: &[u8]) -> bool {
    let mut c = Cur::new(b);
    // [0-9]{4}-[0-9][0-9]?-[0-9][0-9]?, and with exactly two digits each
    // the whole string may stop there.
    if c.digits() != 4 || !c.eat(b'-') {
        return false;
    }
    let month = c.digits();
    if !(1..=2).contains(&month) || !c.eat(b'-') {
        return false;
    }
    let day = c.digits();
    if !(1..=2).contains(&day) {
        return false;
    }
    if c.done() {
        return month == 2 && day == 2;
    }
    // (?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
    if !c.eat_any(b"Tt") && c.run(|x| x == b' ' || x == b'\t') == 0 {
        return false;
    }
    if !(1..=2).contains(&c.digits()) {
        return false;
    }
    for _ in 0..2 {
        if !c.eat(b':') || c.digits() != 2 {
            return false;
        }
    }
    if c.eat(b'.') {
        c.digits();
    }
    // (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?
    if c.done() {
        return true;
    }
    c.run(|x| x == b' ' || x == b'\t');
    if c.eat(b'Z') {
        return c.done();
    }
    if !c.eat_any(b"-+") || !(1..=2).contains(&c.digits()) {
        return false;
    }
    c.done() || (c.eat(b':') && c.digits() == 2 && c.done())
}

/// Whether `f` holds for any string scalar of the record (map keys too).
fn any_string(rec: &ClaimRecord, f: &mut impl FnMut(&str) -> bool) -> bool {
    let top = [Some(&rec.key), Some(&rec.holder), Some(&rec.host)];
    let tail = [&rec.reason, &rec.harness, &rec.machine_id];
    top.into_iter()
        .chain(tail.into_iter().map(Option::as_ref))
        .flatten()
        .any(|s| f(s))
        || any_in_map(&rec.metadata, f)
}

fn any_in_map(m: &Map<String, Value>, f: &mut impl FnMut(&str) -> bool) -> bool {
    m.iter().any(|(k, v)| f(k) || any_in_value(v, f))
}

fn any_in_value(v: &Value, f: &mut impl FnMut(&str) -> bool) -> bool {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().any(|v| any_in_value(v, f)),
        Value::Object(m) => any_in_map(m, f),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Call `f` on every string scalar of the record, map keys included.
fn each_string_mut(rec: &mut ClaimRecord, f: &mut impl FnMut(&mut String)) {
    for s in [&mut rec.key, &mut rec.holder, &mut rec.host] {
        f(s);
    }
    for s in [&mut rec.reason, &mut rec.harness, &mut rec.machine_id]
        .into_iter()
        .flatten()
    {
        f(s);
    }
    each_in_map(&mut rec.metadata, f);
}

fn each_in_map(m: &mut Map<String, Value>, f: &mut impl FnMut(&mut String)) {
    let entries = std::mem::take(m);
    for (mut k, mut v) in entries {
        f(&mut k);
        each_in_value(&mut v, f);
        m.insert(k, v);
    }
}

fn each_in_value(v: &mut Value, f: &mut impl FnMut(&mut String)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter_mut().for_each(|v| each_in_value(v, f)),
        Value::Object(m) => each_in_map(m, f),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `text` with each placeholder replaced by its string, quoted as PyYAML
/// quotes it where it stands.
fn substitute(text: &str, swaps: &[(String, String)]) -> String {
    let mut found: Vec<(usize, &str, &str)> = swaps
        .iter()
        .filter_map(|(ph, s)| {
            text.find(ph.as_str())
                .map(|at| (at, ph.as_str(), s.as_str()))
        })
        .collect();
    found.sort_unstable_by_key(|f| f.0);
    let mut out = String::with_capacity(text.len() + 16 * found.len());
    let mut from = 0;
    for (at, ph, s) in found {
        out.push_str(&text[from..at]);
        let line = &out[out.rfind('\n').map_or(0, |n| n + 1)..];
        let after = &text[at + ph.len()..];
        let place = Place::of(line, after.starts_with(':'));
        single_quoted(&mut out, s, place);
        from = at + ph.len();
    }
    out.push_str(&text[from..]);
    out
}

/// Where a quoted scalar starts, as PyYAML's emitter tracks it.
struct Place {
    /// The column of the opening quote (characters, as PyYAML counts).
    column: usize,
    /// The indent of continuation lines if the scalar folds.
    indent: usize,
    /// A simple mapping key: never folded.
    simple_key: bool,
}

impl Place {
    /// `line` is what precedes the scalar on its line. Block indicators
    /// (`- `, `? `, `: `) each open a node two columns in; a scalar right
    /// after them is that node (indented with it), a scalar after a key's
    /// `: ` is the key's value, indented two past the key.
    fn of(line: &str, simple_key: bool) -> Place {
        let mut rest = line.trim_start_matches(' ');
        let mut node_col = line.len() - rest.len();
        while let Some(r) = ["- ", "? ", ": "]
            .iter()
            .find_map(|ind| rest.strip_prefix(ind))
        {
            rest = r;
            node_col += 2;
        }
        let column = line.chars().count();
        let indent = if column == node_col {
            node_col
        } else {
            node_col + 2
        };
        Place {
            column,
            indent,
            simple_key,
        }
    }
}

/// PyYAML's `write_single_quoted` for a string without line breaks: `'`
/// doubled, and past [`PYYAML_WIDTH`] a lone space (never the first or the
/// last character) becomes a line break and the indent, outside a simple
/// key.
fn single_quoted(out: &mut String, s: &str, at: Place) {
    let chars: Vec<char> = s.chars().collect();
    out.push('\'');
    let mut column = at.column + 1;
    let (mut start, mut spaces) = (0, false);
    for end in 0..=chars.len() {
        let ch = chars.get(end).copied();
        if spaces {
            if ch != Some(' ') {
                if start + 1 == end
                    && column > PYYAML_WIDTH
                    && !at.simple_key
                    && start != 0
                    && end != chars.len()
                {
                    out.push('\n');
                    out.extend(std::iter::repeat_n(' ', at.indent));
                    column = at.indent;
                } else {
                    out.extend(&chars[start..end]);
                    column += end - start;
                }
                start = end;
            }
        } else if matches!(ch, None | Some(' ' | '\'')) && start < end {
            out.extend(&chars[start..end]);
            column += end - start;
            start = end;
        }
        if ch == Some('\'') {
            out.push_str("''");
            column += 2;
            start = end + 1;
        }
        spaces = ch == Some(' ');
    }
    out.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyyaml_resolver_spellings_are_recognised_and_plain_words_are_not() {
        for s in [
            "yes",
            "NO",
            "on",
            "Off",
            "12:30",
            "-1:20:30",
            "190:20:30.15",
            "2001-12-14",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14 21:59:43.10 -5",
            "2001-1-1 1:00:00Z",
            "<<",
            "=",
            "~",
            "",
            "0x1F",
            "0b1_0",
            "017",
            "0_7",
            "+1_000",
            "1.",
            ".5",
            "-.inf",
            ".NaN",
            "6.8523015e+5",
            "685_230.15",
            "0",
            "-0",
        ] {
            assert!(misread(s), "{s:?}");
        }
        for s in [
            "y",
            "n",
            "yes please",
            "1e3",
            "0o17",
            "12:60",
            "1:2:3:",
            "2001-12-1",
            "2001-12-14 ",
            "2001-12-14 21:59",
            "2001-12-14 21:59:43 ",
            "2001-12-14T21:59:43+5:0",
            "0x",
            "0b",
            ".",
            "1.2.3",
            "pty:aa",
            "node:x",
            "fix bug",
            "1e+3",
            "inf",
            "nan",
            "12:30\n",
            "2001-12-14\t21:59:43",
        ] {
            assert!(!misread(s), "{s:?}");
        }
    }

    #[test]
    fn a_long_quoted_value_folds_where_pyyaml_folds_it() {
        let mut out = String::from("holder: ");
        let s = format!("2001-12-14 21:59:43.{} Z", "1".repeat(90));
        single_quoted(&mut out, &s, Place::of("holder: ", false));
        assert_eq!(
            out,
            format!("holder: '2001-12-14 21:59:43.{}\n  Z'", "1".repeat(90))
        );
        let place = Place::of("  - k: ", false);
        assert_eq!((place.column, place.indent), (7, 6));
        let place = Place::of("  - ", false);
        assert_eq!((place.column, place.indent), (4, 4));
    }
}
