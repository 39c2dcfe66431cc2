//! Whole log lines of any length, in bounded memory.
//!
//! [`super::tail`] keeps at most 64 KiB of a line, which suits a screen. A
//! script reading the audit log must get every line whole, however long (a
//! `--reason` can be megabytes), without the reader holding it all: here a
//! line is a byte range of the file, found by scanning for `\n` a block at a
//! time, and read back (or copied out) in pieces only when it is wanted.

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;

/// Unit of the backwards scans and of reading one long line.
const BLOCK: usize = 64 * 1024;

/// Unit of the forward scan, which also hands out the bytes of every
/// short line: bigger, so a tail of a thousand lines is one or two reads.
const SCAN_BLOCK: usize = 256 * 1024;

/// Lines up to this long are read into memory whole; longer ones are
/// validated and copied straight from the file.
pub const INLINE_LINE_BYTES: u64 = 1024 * 1024;

/// One complete line: `len` bytes at `offset`, its `\n` not included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: u64,
    pub len: u64,
}

/// Just past the last `\n` at or before `len`: where complete lines end. A
/// trailing line without its `\n` is a writer mid-append, not yet a line.
pub fn end_of_complete_lines(file: &File, len: u64) -> io::Result<u64> {
    let mut buf = vec![0u8; BLOCK];
    let mut pos = len;
    while pos > 0 {
        let lo = pos.saturating_sub(BLOCK as u64);
        let chunk = read_exact_at(file, &mut buf[..(pos - lo) as usize], lo)?;
        if let Some(i) = memchr::memrchr(b'\n', chunk) {
            return Ok(lo + i as u64 + 1);
        }
        pos = lo;
    }
    Ok(0)
}

/// Where the last `n` complete lines ending at `end` begin. Reads backwards
/// only as far as those lines reach, however long any of them is: counting
/// `\n` needs no memory beyond one block.
pub fn start_of_last_lines(file: &File, end: u64, n: usize) -> io::Result<u64> {
    if n == 0 {
        return Ok(end);
    }
    let mut buf = vec![0u8; BLOCK];
    // The `\n` ending the last line is not a boundary before it.
    let mut pos = end.saturating_sub(1);
    let mut found = 0usize;
    while pos > 0 {
        let lo = pos.saturating_sub(BLOCK as u64);
        let chunk = read_exact_at(file, &mut buf[..(pos - lo) as usize], lo)?;
        for i in memchr::memrchr_iter(b'\n', chunk) {
            found += 1;
            if found == n {
                return Ok(lo + i as u64 + 1);
            }
        }
        pos = lo;
    }
    Ok(0)
}

/// Call `each` for every complete line in `from..end` (`from` at a line
/// start, `end` just past a `\n`), oldest first, with its bytes when it is
/// at most [`INLINE_LINE_BYTES`] long (read a block at a time, not a line
/// at a time: a thousand short lines cost a few reads, not a thousand), and
/// `None` for a longer line, which the caller reads from the file itself.
pub fn for_each_line(
    file: &File,
    from: u64,
    end: u64,
    mut each: impl FnMut(Span, Option<&[u8]>) -> io::Result<()>,
) -> io::Result<()> {
    for_each_line_while(file, from, end, SCAN_BLOCK, |span, bytes| {
        each(span, bytes).map(|()| true)
    })
}

/// [`for_each_line`] reading `block` bytes at a time, until `each` says it
/// has seen enough (false): a look at a few lines costs one small read,
/// however far the range goes on.
pub fn for_each_line_while(
    file: &File,
    from: u64,
    end: u64,
    block: usize,
    mut each: impl FnMut(Span, Option<&[u8]>) -> io::Result<bool>,
) -> io::Result<()> {
    if from >= end {
        return Ok(());
    }
    // No bigger than the range: a short tail should not fault in (and
    // zero) a whole block it never fills.
    let mut buf = vec![
        0u8;
        block
            .max(1)
            .min(usize::try_from(end - from).unwrap_or(block))
    ];
    // A line begun in an earlier block: its bytes so far, until it grows
    // past the inline limit and only its start is kept.
    let mut carry: Vec<u8> = Vec::new();
    let mut too_long = false;
    let mut start = from;
    let mut pos = from;
    while pos < end {
        let want = ((end - pos) as usize).min(buf.len());
        let chunk = read_exact_at(file, &mut buf[..want], pos)?;
        let mut seg = 0;
        for stop in memchr::memchr_iter(b'\n', chunk) {
            let span = Span {
                offset: start,
                len: pos + stop as u64 - start,
            };
            let go_on = if too_long || span.len > INLINE_LINE_BYTES {
                each(span, None)?
            } else if carry.is_empty() {
                each(span, Some(&chunk[seg..stop]))?
            } else {
                carry.extend_from_slice(&chunk[seg..stop]);
                each(span, Some(&carry))?
            };
            if !go_on {
                return Ok(());
            }
            carry.clear();
            too_long = false;
            start = span.offset + span.len + 1;
            seg = stop + 1;
        }
        let rest = &chunk[seg..];
        if !too_long && !rest.is_empty() {
            if (carry.len() + rest.len()) as u64 > INLINE_LINE_BYTES {
                too_long = true;
                carry = Vec::new();
            } else {
                carry.extend_from_slice(rest);
            }
        }
        pos += want as u64;
    }
    Ok(())
}

/// The line that starts at `offset`: up to the next `\n`, or `None` if
/// there is none yet.
pub fn line_at(file: &File, offset: u64) -> io::Result<Option<Span>> {
    let mut buf = vec![0u8; BLOCK];
    let mut pos = offset;
    loop {
        let got = file.read_at(&mut buf, pos)?;
        if got == 0 {
            return Ok(None);
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..got]) {
            return Ok(Some(Span {
                offset,
                len: pos + i as u64 - offset,
            }));
        }
        pos += got as u64;
    }
}

/// `buf.len()` bytes at `at`, or an error if the file is shorter now (it
/// was truncated under us: the caller's offsets no longer mean anything).
fn read_exact_at<'a>(file: &File, buf: &'a mut [u8], at: u64) -> io::Result<&'a [u8]> {
    file.read_exact_at(buf, at).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            io::Error::new(e.kind(), "the events log shrank while being read")
        } else {
            e
        }
    })?;
    Ok(buf)
}

/// A byte range of a file as a reader, for lines too long to hold.
pub struct SpanReader<'a> {
    file: &'a File,
    at: u64,
    left: u64,
}

impl<'a> SpanReader<'a> {
    pub fn new(file: &'a File, span: Span) -> Self {
        SpanReader {
            file,
            at: span.offset,
            left: span.len,
        }
    }
}

impl Read for SpanReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = (buf.len() as u64).min(self.left) as usize;
        if want == 0 {
            return Ok(0);
        }
        let got = self.file.read_at(&mut buf[..want], self.at)?;
        if got == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the events log shrank while being read",
            ));
        }
        self.at += got as u64;
        self.left -= got as u64;
        Ok(got)
    }
}

/// Copy a line from the file to `out`, in pieces.
pub fn copy_span(file: &File, span: Span, out: &mut impl Write) -> io::Result<u64> {
    io::copy(&mut SpanReader::new(file, span), out)
}

/// What is needed of an event to filter it and name it, read without
/// holding the rest: the fields the contract's filters use (`type`,
/// `data.key`) and the ones a text line starts with.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Probe {
    pub ts: Option<String>,
    pub kind: Option<String>,
    pub key: Option<String>,
    pub holder: Option<String>,
}

impl Probe {
    /// Check that `line` is exactly one JSON object, and take its probe.
    pub fn of_slice(line: &[u8]) -> Result<Probe, String> {
        let mut de = serde_json::Deserializer::from_slice(line);
        let probe = Probe::from_de(&mut de)?;
        de.end().map_err(|e| format!("invalid JSON: {e}"))?;
        Ok(probe)
    }

    /// Is `line` exactly one JSON object? The check alone, for when no
    /// filter needs the probed fields: nothing is allocated.
    pub fn is_object(line: &[u8]) -> bool {
        let mut de = serde_json::Deserializer::from_slice(line);
        line.trim_ascii_start().first() == Some(&b'{')
            && IgnoredAny::deserialize(&mut de).is_ok()
            && de.end().is_ok()
    }

    /// [`Probe::of_slice`] for a line read from the file piecewise: memory
    /// stays at one buffer plus the four probed strings.
    pub fn of_span(file: &File, span: Span) -> Result<Probe, String> {
        let reader = io::BufReader::with_capacity(BLOCK, SpanReader::new(file, span));
        let mut de = serde_json::Deserializer::from_reader(reader);
        let probe = Probe::from_de(&mut de)?;
        de.end().map_err(|e| format!("invalid JSON: {e}"))?;
        Ok(probe)
    }

    fn from_de<'de, D: de::Deserializer<'de>>(de: D) -> Result<Probe, String>
    where
        D::Error: fmt::Display,
    {
        de.deserialize_map(ProbeVisitor).map_err(|e| {
            let msg = e.to_string();
            if msg.contains("invalid type") {
                "not a JSON object".to_string()
            } else {
                format!("invalid JSON: {msg}")
            }
        })
    }
}

/// The `ts` of a line too long to hold: read from its first block when the
/// envelope puts it first (every writer of the protocol does), else from
/// the whole line, piece by piece.
pub fn ts_of_long(file: &File, span: Span) -> Option<String> {
    let mut head = vec![0u8; (span.len as usize).min(BLOCK)];
    if file.read_exact_at(&mut head, span.offset).is_ok() {
        let mut ts = None;
        let mut json = serde_json::Deserializer::from_slice(&head);
        // The head is cut mid-line, so the parse ends in an error; what it
        // met before the cut is kept.
        let _ = de::Deserializer::deserialize_map(&mut json, TsVisitor(&mut ts));
        if ts.is_some() {
            return ts;
        }
    }
    Probe::of_span(file, span).ok()?.ts
}

/// The top level of an event, for its `ts` alone, noted as soon as it is
/// met.
struct TsVisitor<'b>(&'b mut Option<String>);

impl<'de> Visitor<'de> for TsVisitor<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        while let Some(name) = a.next_key::<Name>()? {
            match name {
                Name::Ts => *self.0 = a.next_value::<Shallow>()?.into_str(),
                _ => {
                    a.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// One JSON value, looked at only as deep as a probe needs: a string kept,
/// an object's `key` and `holder` strings kept (the shape of `data`), and
/// anything else walked and dropped. (`"type": 7` is a valid event for
/// `--json`, just not one a `--type` filter matches.)
enum Shallow {
    Str(String),
    Object {
        key: Option<String>,
        holder: Option<String>,
    },
    Other,
}

impl Shallow {
    fn into_str(self) -> Option<String> {
        match self {
            Shallow::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Shallow {
    fn deserialize<D: de::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_any(ShallowVisitor)
    }
}

struct ShallowVisitor;

impl<'de> Visitor<'de> for ShallowVisitor {
    type Value = Shallow;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Shallow, E> {
        Ok(Shallow::Str(s.to_string()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Shallow, E> {
        Ok(Shallow::Str(s))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Shallow, E> {
        Ok(Shallow::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Shallow, E> {
        Ok(Shallow::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Shallow, E> {
        Ok(Shallow::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Shallow, E> {
        Ok(Shallow::Other)
    }
    fn visit_unit<E>(self) -> Result<Shallow, E> {
        Ok(Shallow::Other)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<Shallow, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Shallow::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Shallow, A::Error> {
        let (mut key, mut holder) = (None, None);
        while let Some(name) = a.next_key::<Name>()? {
            match name {
                Name::Key => key = a.next_value::<Shallow>()?.into_str(),
                Name::Holder => holder = a.next_value::<Shallow>()?.into_str(),
                _ => {
                    a.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Shallow::Object { key, holder })
    }
}

/// A member name, compared without allocating: most names of an event are
/// none of the probed ones.
enum Name {
    Ts,
    Type,
    Data,
    Key,
    Holder,
    Other,
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: de::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Name, E> {
                Ok(match s {
                    "ts" => Name::Ts,
                    "type" => Name::Type,
                    "data" => Name::Data,
                    "key" => Name::Key,
                    "holder" => Name::Holder,
                    _ => Name::Other,
                })
            }
        }
        de.deserialize_str(V)
    }
}

/// The top level: an object, or the line is no event.
struct ProbeVisitor;

impl<'de> Visitor<'de> for ProbeVisitor {
    type Value = Probe;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Probe, A::Error> {
        let mut p = Probe::default();
        // A repeated field: the last one wins, as in every JSON reader here.
        while let Some(name) = a.next_key::<Name>()? {
            match name {
                Name::Ts => p.ts = a.next_value::<Shallow>()?.into_str(),
                Name::Type => p.kind = a.next_value::<Shallow>()?.into_str(),
                Name::Data => {
                    (p.key, p.holder) = match a.next_value::<Shallow>()? {
                        Shallow::Object { key, holder } => (key, holder),
                        _ => (None, None),
                    }
                }
                _ => {
                    a.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().expect("tempfile");
        f.write_all(bytes).expect("write");
        f
    }

    fn spans(f: &File, from: u64, end: u64) -> Vec<(Span, Option<Vec<u8>>)> {
        let mut v = Vec::new();
        for_each_line(f, from, end, |s, bytes| {
            v.push((s, bytes.map(<[u8]>::to_vec)));
            Ok(())
        })
        .unwrap();
        v
    }

    #[test]
    fn lines_across_blocks_come_back_whole_and_overlong_ones_as_spans() {
        let across = vec![b'x'; SCAN_BLOCK + 7];
        let overlong = vec![b'y'; INLINE_LINE_BYTES as usize + 1];
        let mut bytes = b"a\n".to_vec();
        bytes.extend(&across);
        bytes.push(b'\n');
        bytes.extend(&overlong);
        bytes.extend(b"\nb\npartial");
        let f = file_with(&bytes);
        let end = end_of_complete_lines(&f, bytes.len() as u64).unwrap();
        assert_eq!(end, bytes.len() as u64 - 7, "the partial line waits");
        let got = spans(&f, 0, end);
        let at_overlong = 2 + across.len() as u64 + 1;
        let want = [
            (Span { offset: 0, len: 1 }, Some(b"a".to_vec())),
            (
                Span {
                    offset: 2,
                    len: across.len() as u64,
                },
                Some(across.clone()),
            ),
            (
                Span {
                    offset: at_overlong,
                    len: overlong.len() as u64,
                },
                None,
            ),
            (
                Span {
                    offset: at_overlong + overlong.len() as u64 + 1,
                    len: 1,
                },
                Some(b"b".to_vec()),
            ),
        ];
        // Compared without printing megabytes on a mismatch.
        let summary = |v: &[(Span, Option<Vec<u8>>)]| -> Vec<(Span, Option<usize>, bool)> {
            v.iter()
                .map(|(s, b)| {
                    (
                        *s,
                        b.as_ref().map(Vec::len),
                        b.as_ref().is_some_and(|b| b.iter().all(|&c| c == b[0])),
                    )
                })
                .collect()
        };
        assert_eq!(summary(&got), summary(&want));
        assert!(got == want);
        let mut copied = Vec::new();
        copy_span(&f, got[2].0, &mut copied).unwrap();
        assert_eq!(copied, overlong);
    }

    #[test]
    fn the_last_n_lines_start_past_any_number_of_long_lines() {
        let long = vec![b'y'; 5 * BLOCK];
        let mut bytes = Vec::new();
        for _ in 0..3 {
            bytes.extend(&long);
            bytes.push(b'\n');
        }
        let f = file_with(&bytes);
        let end = bytes.len() as u64;
        let line = long.len() as u64 + 1;
        assert_eq!(start_of_last_lines(&f, end, 1).unwrap(), 2 * line);
        assert_eq!(start_of_last_lines(&f, end, 2).unwrap(), line);
        assert_eq!(start_of_last_lines(&f, end, 3).unwrap(), 0);
        assert_eq!(start_of_last_lines(&f, end, 99).unwrap(), 0);
        assert_eq!(start_of_last_lines(&f, end, 0).unwrap(), end);
    }

    #[test]
    fn any_object_passes_the_probe_and_anything_else_is_named() {
        let p = Probe::of_slice(br#"{"type":7,"data":"x","ts":"t"}"#).unwrap();
        assert_eq!(p.kind, None);
        assert_eq!(p.ts.as_deref(), Some("t"));
        let p =
            Probe::of_slice(br#" {"data":{"key":"k","n":[1,{"a":2}]},"type":"claim_acquired"} "#)
                .unwrap();
        assert_eq!(p.key.as_deref(), Some("k"));
        assert_eq!(p.kind.as_deref(), Some("claim_acquired"));
        assert_eq!(Probe::of_slice(b"[1]").unwrap_err(), "not a JSON object");
        for (line, object) in [
            (&br#" {"a":[1,{"b":null}]} "#[..], true),
            (b"[1]", false),
            (b"{} {}", false),
            (b"{\"a\":", false),
            (b"\"{}\"", false),
        ] {
            assert_eq!(
                Probe::is_object(line),
                object,
                "{:?}",
                String::from_utf8_lossy(line)
            );
            assert_eq!(Probe::of_slice(line).is_ok(), object);
        }
        assert!(Probe::of_slice(b"{} {}")
            .unwrap_err()
            .contains("invalid JSON"));
        assert!(Probe::of_slice(b"{\"a\":").is_err());
    }

    #[test]
    fn a_span_probe_agrees_with_a_slice_probe() {
        let line = format!(
            r#"{{"ts":"t","type":"claim_released","data":{{"key":"k","reason":"{}"}}}}"#,
            "r".repeat(3 * BLOCK)
        );
        let f = file_with(line.as_bytes());
        let span = Span {
            offset: 0,
            len: line.len() as u64,
        };
        assert_eq!(
            Probe::of_span(&f, span).unwrap(),
            Probe::of_slice(line.as_bytes()).unwrap()
        );
    }
}
