//! `list --json` written field by field: the exact bytes `serde_json` makes
//! of a [`Sweep`] (the tests below pin it), at a fraction of the cost.
//!
//! A 10 000-claim list is about 4.6 MB of JSON. Through serde_json, a
//! quarter of the whole `list --json` process went into its escape loop,
//! which looks up every byte of every string in a table. Claim text almost
//! never needs an escape, so each string is first checked with a
//! branch-free scan the compiler vectorises and copied whole; the rare one
//! that does need escaping is handed to serde_json itself, so every escape
//! stays serde_json's own.

use crate::claims::{ClaimRecord, Counts, Hazard, ItemRules, OwnHazards, Status, Sweep};
use std::io::{self, Write};
use std::path::Path;

/// Bytes gathered before they go to the writer: some hundreds of claims'
/// worth, and no less than stdout's own buffer, so that `BufWriter` hands
/// each chunk straight to the pipe instead of copying it once more (the
/// CLI's stdout buffer is this size).
const CHUNK: usize = 256 * 1024;

/// The whole document, newline-ended.
pub fn write_sweep(sw: &Sweep, w: &mut (impl Write + ?Sized)) -> io::Result<()> {
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    buf.extend_from_slice(b"{\"root\":");
    path(&mut buf, &sw.root)?;
    buf.extend_from_slice(b",\"claims\":");
    array(&mut buf, w, &sw.claims, status)?;
    buf.extend_from_slice(b",\"counts\":");
    counts(&mut buf, &sw.counts);
    buf.extend_from_slice(b",\"hazards\":");
    array(&mut buf, w, &sw.hazards, hazard)?;
    buf.extend_from_slice(b"}\n");
    w.write_all(&buf)
}

/// A JSON array of `items`, handing full chunks of `buf` to `w` as it goes.
fn array<T>(
    buf: &mut Vec<u8>,
    w: &mut (impl Write + ?Sized),
    items: &[T],
    each: fn(&mut Vec<u8>, &T) -> io::Result<()>,
) -> io::Result<()> {
    buf.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        each(buf, item)?;
        if buf.len() >= CHUNK {
            w.write_all(buf)?;
            buf.clear();
        }
    }
    buf.push(b']');
    Ok(())
}

/// A `Status` as [`crate::claims::census::Judged`] writes it: the derived
/// fields (skipped ones left out), then its own hazards.
fn status(buf: &mut Vec<u8>, s: &Status) -> io::Result<()> {
    buf.extend_from_slice(b"{\"key\":");
    string(buf, &s.key)?;
    buf.extend_from_slice(b",\"file\":");
    path(buf, &s.file)?;
    buf.extend_from_slice(b",\"state\":\"");
    buf.extend_from_slice(s.state.as_str().as_bytes());
    buf.extend_from_slice(b"\",\"record\":");
    match &s.record {
        Some(r) => record(buf, r)?,
        None => buf.extend_from_slice(b"null"),
    }
    buf.extend_from_slice(b",\"why\":");
    string(buf, &s.why)?;
    buf.extend_from_slice(b",\"error\":");
    match &s.error {
        Some(e) => string(buf, e)?,
        None => buf.extend_from_slice(b"null"),
    }
    buf.extend_from_slice(b",\"hazards\":[");
    for (i, kind) in OwnHazards::of(s, ItemRules::Lockfile).kinds().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.push(b'"');
        buf.extend_from_slice(kind.name.as_bytes());
        buf.push(b'"');
    }
    buf.extend_from_slice(b"]}");
    Ok(())
}

/// A `ClaimRecord` in field order, absent optionals omitted (never null).
fn record(buf: &mut Vec<u8>, r: &ClaimRecord) -> io::Result<()> {
    buf.extend_from_slice(b"{\"schema_version\":");
    int(buf, r.schema_version.into());
    buf.extend_from_slice(b",\"key\":");
    string(buf, &r.key)?;
    buf.extend_from_slice(b",\"holder\":");
    string(buf, &r.holder)?;
    buf.extend_from_slice(b",\"acquired_at\":");
    int(buf, r.acquired_at);
    buf.extend_from_slice(b",\"pid\":");
    int(buf, r.pid.into());
    buf.extend_from_slice(b",\"host\":");
    string(buf, &r.host)?;
    if let Some(e) = r.expires_at {
        buf.extend_from_slice(b",\"expires_at\":");
        int(buf, e);
    }
    for (name, v) in [
        (&b",\"reason\":"[..], &r.reason),
        (b",\"harness\":", &r.harness),
        (b",\"machine_id\":", &r.machine_id),
    ] {
        if let Some(v) = v {
            buf.extend_from_slice(name);
            string(buf, v)?;
        }
    }
    if !r.metadata.is_empty() {
        buf.extend_from_slice(b",\"metadata\":");
        // Arbitrary JSON values: serde_json's own output, unchanged.
        serde_json::to_writer(&mut *buf, &r.metadata).map_err(io::Error::other)?;
    }
    buf.push(b'}');
    Ok(())
}

fn counts(buf: &mut Vec<u8>, c: &Counts) {
    for (name, n) in [
        (&b"{\"live\":"[..], c.live),
        (b",\"suspect\":", c.suspect),
        (b",\"stale\":", c.stale),
        (b",\"corrupted\":", c.corrupted),
        (b",\"unreadable\":", c.unreadable),
    ] {
        buf.extend_from_slice(name);
        int(buf, n as i64);
    }
    buf.push(b'}');
}

fn hazard(buf: &mut Vec<u8>, h: &Hazard) -> io::Result<()> {
    buf.extend_from_slice(b"{\"kind\":\"");
    buf.extend_from_slice(h.kind.name().as_bytes());
    buf.extend_from_slice(b"\",\"path\":");
    path(buf, h.path())?;
    buf.extend_from_slice(b",\"detail\":");
    string(buf, &h.detail)?;
    buf.push(b'}');
    Ok(())
}

/// A path as the claims module serializes it: lossy UTF-8.
fn path(buf: &mut Vec<u8>, p: &Path) -> io::Result<()> {
    match p.to_str() {
        Some(s) => string(buf, s),
        None => string(buf, &p.to_string_lossy()),
    }
}

/// A JSON string: copied whole when nothing in it needs escaping.
fn string(buf: &mut Vec<u8>, s: &str) -> io::Result<()> {
    if needs_escape(s.as_bytes()) {
        return serde_json::to_writer(&mut *buf, s).map_err(io::Error::other);
    }
    buf.push(b'"');
    buf.extend_from_slice(s.as_bytes());
    buf.push(b'"');
    Ok(())
}

/// Whether JSON needs any byte of `b` escaped (controls, `"`, `\`). No early
/// exit inside a block, so each block is a handful of vector instructions.
fn needs_escape(b: &[u8]) -> bool {
    b.chunks(32).any(|block| {
        block.iter().fold(false, |acc, &c| {
            acc | (c < 0x20) | (c == b'"') | (c == b'\\')
        })
    })
}

/// A decimal integer, as serde_json writes one.
fn int(buf: &mut Vec<u8>, n: i64) {
    buf.extend_from_slice(crate::time::decimal(n, &mut [0u8; 20]));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{hazard, ClaimState};
    use serde_json::{json, Map};
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::path::PathBuf;

    fn serde_bytes(sw: &Sweep) -> Vec<u8> {
        let mut v = serde_json::to_vec(sw).expect("a sweep serializes");
        v.push(b'\n');
        v
    }

    fn ours(sw: &Sweep) -> Vec<u8> {
        let mut v = Vec::new();
        write_sweep(sw, &mut v).expect("writing into memory cannot fail");
        v
    }

    fn item(key: &str, state: ClaimState, record: Option<ClaimRecord>) -> Status {
        Status {
            key: key.into(),
            file: PathBuf::from(format!("/r/.fno/claims/{key}.lock")).into(),
            state,
            record,
            why: format!("why {key}"),
            error: None,
            locality: None,
            head: Box::default(),
        }
    }

    fn rec(key: &str, text: &str) -> ClaimRecord {
        let mut metadata = Map::new();
        metadata.insert("nested".into(), json!({"a": [1, -2.5, null, true, text]}));
        metadata.insert(text.into(), json!(text));
        ClaimRecord {
            schema_version: 1,
            key: key.into(),
            holder: text.into(),
            acquired_at: -1_700_000_000_123,
            pid: i32::MIN,
            host: text.into(),
            expires_at: Some(i64::MAX),
            reason: Some(text.into()),
            harness: None,
            machine_id: Some(String::new()),
            metadata: metadata.into(),
        }
    }

    #[test]
    fn hand_written_list_json_is_byte_identical_to_serde_json_on_hostile_text() {
        let hostile = [
            "plain",
            "",
            "quote \" backslash \\ slash /",
            "\u{1b}[2J\u{7}\u{0}\t\r\n\u{8}\u{c}\u{1f}\u{7f}",
            "caf\u{e9} \u{202e}rtl\u{200b} \u{1F600} \u{85}\u{2028}",
            "a long line past one scan block, with a quote at its very end....\"",
        ];
        let mut claims = Vec::new();
        for (i, t) in hostile.iter().enumerate() {
            let key = format!("k{i}{t}");
            let mut s = item(&key, ClaimState::Live, Some(rec(&key, t)));
            s.why = (*t).into();
            claims.push(s);
            let mut bare = ClaimRecord {
                harness: Some((*t).into()),
                expires_at: None,
                metadata: Default::default(),
                ..rec(&key, t)
            };
            bare.reason = None;
            claims.push(item(&format!("b{i}"), ClaimState::Stale, Some(bare)));
            let mut bad = item(t, ClaimState::Corrupted, None);
            bad.error = Some((*t).into());
            claims.push(bad);
        }
        let mut odd = item("odd-name", ClaimState::Unreadable, None);
        odd.file = Path::new(OsStr::from_bytes(b"/r/.fno/claims/\xff\xfe.lock")).into();
        claims.push(odd);
        let hazards = hostile
            .iter()
            .map(|t| Hazard::at_path(hazard::KEY_MISMATCH, format!("/r/{t}"), (*t).into()))
            .collect();
        let sw = Sweep {
            root: PathBuf::from(OsStr::from_bytes(b"/r\x80\"oot")),
            claims,
            counts: Counts {
                live: 1,
                suspect: 2,
                stale: 3,
                corrupted: 4,
                unreadable: 5,
                last_known: 0,
            },
            hazards,
        };
        let (expected, got) = (serde_bytes(&sw), ours(&sw));
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected)
        );
        assert_eq!(got, expected);
    }

    #[test]
    fn an_empty_sweep_and_one_past_the_write_chunk_match_serde_json_too() {
        let mut sw = Sweep {
            root: PathBuf::from("/r"),
            claims: Vec::new(),
            counts: Counts::default(),
            hazards: Vec::new(),
        };
        assert_eq!(ours(&sw), serde_bytes(&sw));
        let r = rec("k", "text");
        sw.claims = (0..6_000)
            .map(|i| item(&format!("key-{i}"), ClaimState::Suspect, Some(r.clone())))
            .collect();
        assert!(ours(&sw).len() > 4 * CHUNK);
        assert_eq!(ours(&sw), serde_bytes(&sw));
    }

    #[test]
    fn only_controls_quotes_and_backslashes_need_an_escape() {
        for c in 0u8..=0x7f {
            let s = [b'a'; 40]
                .iter()
                .chain([c].iter())
                .copied()
                .collect::<Vec<u8>>();
            let want = c < 0x20 || c == b'"' || c == b'\\';
            assert_eq!(needs_escape(&s), want, "byte {c:#x}");
        }
        assert!(!needs_escape("caf\u{e9} \u{1F600}".as_bytes()));
    }
}
