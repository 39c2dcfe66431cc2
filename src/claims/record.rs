//! The claim record, its states, and the YAML lockfile format.

use super::yaml_cost;
pub use super::yaml_quote::misread as pyyaml_misreads;
pub use super::yaml_scan::MAX_FLOW_DEPTH;
use super::yaml_scan::{scan, Scan};
use super::SCHEMA_VERSION;
// Re-exported where it lived before: other code names it by this path.
pub use crate::time::parse_ttl_ms;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::io::ErrorKind;
use std::io::Read;
use std::path::Path;

/// Largest lockfile we read. A real record is a few hundred bytes; anything
/// past this is not a claim, and reading it whole would let one planted file
/// stall or balloon every sweep.
pub const MAX_LOCKFILE_BYTES: u64 = 1 << 20;

/// A key's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimState {
    /// No lockfile exists.
    Free,
    /// The holder is verifiably alive (or its TTL has not run out and it is).
    Live,
    /// TTL still running but the holder is not provably alive (dead or foreign
    /// pid). Treated like Live by acquire: the TTL protects a respawned
    /// worker's slot; only expiry frees it.
    Suspect,
    /// The holder is dead or expired: recoverable.
    Stale,
    /// The file is there but is not a claim we can verify.
    Corrupted,
    /// The file is there and may well be a valid claim, but this reader
    /// cannot read it: permission denied, an I/O error, or refused for its
    /// size or parse cost. State-neutral: treated as held (force-release
    /// needs `--allow-live`), never as corrupted, so that a defensive limit
    /// never makes a claim easier to take away.
    Unreadable,
    /// A copy of a claim an offline host last published (see
    /// [`super::census::copy_state`]): nobody can vouch for it now, so it is
    /// never counted as live, nor acted on, but never shown as free either.
    /// No lockfile or store key is ever judged so.
    #[serde(rename = "last_known")]
    LastKnown,
}

impl ClaimState {
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimState::Free => "free",
            ClaimState::Live => "live",
            ClaimState::Suspect => "suspect",
            ClaimState::Stale => "stale",
            ClaimState::Corrupted => "corrupted",
            ClaimState::Unreadable => "unreadable",
            ClaimState::LastKnown => "last_known",
        }
    }

    /// May a holder be running and believe it owns the key? A live claim,
    /// and an unreadable one (which may be live): taking either away needs
    /// the operator to say so explicitly (`--allow-live`, or the key typed
    /// in full in the dashboard).
    pub fn may_be_held(self) -> bool {
        matches!(self, ClaimState::Live | ClaimState::Unreadable)
    }

    /// Operator attention order: what needs a human first sorts first.
    pub fn severity(self) -> u8 {
        match self {
            ClaimState::Corrupted => 0,
            ClaimState::Unreadable => 1,
            ClaimState::Stale => 2,
            ClaimState::Suspect => 3,
            ClaimState::Live => 4,
            ClaimState::LastKnown => 5,
            ClaimState::Free => 6,
        }
    }

    pub fn parse(s: &str) -> Option<ClaimState> {
        Some(match s {
            "free" => ClaimState::Free,
            "live" => ClaimState::Live,
            "suspect" => ClaimState::Suspect,
            "stale" => ClaimState::Stale,
            "corrupted" => ClaimState::Corrupted,
            "unreadable" => ClaimState::Unreadable,
            "last_known" => ClaimState::LastKnown,
            _ => return None,
        })
    }
}

impl std::fmt::Display for ClaimState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One lockfile's mapping.
///
/// Field order IS the YAML order (serde keeps struct order), matching the
/// Python writer: schema_version, key, holder, acquired_at, pid, host, then the
/// optional tail. Every optional field is OMITTED when absent, never written
/// as `null`: a missing `expires_at` is how a PID-liveness claim is marked.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ClaimRecord {
    #[serde(default = "default_schema_version")]
    pub schema_version: u32,
    pub key: String,
    pub holder: String,
    /// Epoch milliseconds, UTC.
    pub acquired_at: i64,
    pub pid: i32,
    pub host: String,
    /// Epoch ms of TTL expiry; absent for PID-liveness claims (`null` reads the
    /// same as absent).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub expires_at: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// The acquiring harness (`codex`, `claude`, ...). Additive: older records
    /// lack it and read as unknown, never as a parse error.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub harness: Option<String>,
    /// Stable machine identity, compared instead of `host`. Additive beside
    /// `host` rather than replacing it: an older reader still compares `host`
    /// against its hostname and must keep seeing a hostname there.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub machine_id: Option<String>,
    /// Opaque to the protocol; replaced wholesale by a re-acquire. Built
    /// under the alias-expansion budget (see `yaml_cost`).
    #[serde(
        skip_serializing_if = "Map::is_empty",
        default,
        deserialize_with = "super::yaml_cost::metadata"
    )]
    pub metadata: Map<String, Value>,
}

fn default_schema_version() -> u32 {
    SCHEMA_VERSION
}

impl ClaimRecord {
    /// The YAML text of this record: the seed's bytes, except that strings
    /// PyYAML would misread are quoted as PyYAML quotes them (see
    /// `yaml_quote`).
    pub fn to_yaml(&self) -> Result<String, super::ClaimError> {
        super::yaml_quote::to_yaml(self)
    }

    /// The lockfile bytes for this record, or why no reader could take them.
    ///
    /// A record over the read cap or the parse-cost limits would land as a
    /// claim that every reader, its own holder's release included, calls
    /// unreadable and so held for ever: it is refused here, before anything
    /// is written.
    pub fn to_lockfile(&self) -> Result<String, super::ClaimError> {
        let text = self.to_yaml()?;
        match ClaimRecord::from_bytes(text.as_bytes()) {
            Ok(_) => Ok(text),
            Err(e) => Err(super::ClaimError::Unwritable {
                bytes: text.len(),
                reason: e.reason().to_string(),
            }),
        }
    }

    /// Parse lockfile text, applying the reader's schema rules.
    pub fn from_yaml(text: &str) -> Result<ClaimRecord, ParseError> {
        // The fast path only ever answers for shapes where it provably agrees
        // with serde_yaml_ng; everything else takes the full parse.
        let rec: ClaimRecord = match scan(text) {
            Scan::Record(rec) => rec,
            Scan::Full { too_deep } => full_parse(text, too_deep)?,
        };
        if rec.schema_version > SCHEMA_VERSION {
            return Err(ParseError::Invalid(format!(
                "claim schema_version={} > supported={SCHEMA_VERSION}: written by a newer writer, refusing to guess",
                rec.schema_version
            )));
        }
        if [&rec.key, &rec.holder].iter().any(|f| f.is_empty()) {
            return Err(ParseError::Invalid(
                "claim key/holder must be non-empty".into(),
            ));
        }
        Ok(rec)
    }

    /// Parse lockfile bytes: text rules plus size and encoding checks.
    pub fn from_bytes(bytes: &[u8]) -> Result<ClaimRecord, ParseError> {
        if bytes.len() as u64 > MAX_LOCKFILE_BYTES {
            return Err(ParseError::TooCostly(format!(
                "file is larger than {MAX_LOCKFILE_BYTES} bytes; too big to read"
            )));
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|e| ParseError::Invalid(format!("claim is not valid UTF-8: {e}")))?;
        ClaimRecord::from_yaml(text)
    }
}

/// serde_yaml_ng, as the seed reads, inside the cost bounds of `yaml_cost`
/// (`too_deep`: the scan found flow nesting past [`MAX_FLOW_DEPTH`]).
fn full_parse(text: &str, too_deep: bool) -> Result<ClaimRecord, ParseError> {
    if too_deep {
        return Err(ParseError::TooCostly(format!(
            "claim YAML nests deeper than {MAX_FLOW_DEPTH} flow levels; too costly to parse"
        )));
    }
    let (parsed, ran_out) = yaml_cost::with_budget(yaml_cost::EXPANSION_BUDGET, || {
        serde_yaml_ng::from_str::<ClaimRecord>(text)
    });
    parsed.map_err(|e| {
        if ran_out {
            ParseError::TooCostly(e.to_string())
        } else {
            ParseError::Invalid(format!("claim parse/schema failed: {e}"))
        }
    })
}

/// Why lockfile text is not a record we can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The seed's own reader refuses it too: a corrupted claim.
    #[error("{0}")]
    Invalid(String),
    /// Refused only for its size or parse cost: it may be a valid claim, so
    /// it reads as unreadable, never as corrupted.
    #[error("{0}")]
    TooCostly(String),
}

impl ParseError {
    pub fn reason(&self) -> &str {
        match self {
            ParseError::Invalid(r) | ParseError::TooCostly(r) => r,
        }
    }

    /// Whether the reason mentions `needle`.
    pub fn contains(&self, needle: &str) -> bool {
        self.reason().contains(needle)
    }
}

/// Why a lockfile could not be turned into a record.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    /// The file vanished between listing (or collision) and read: a release or
    /// an archive won the race. Callers treat it as Free and retry.
    GoneAway,
    /// Present but not a claim we can verify.
    Corrupted { reason: String, head: Vec<u8> },
    /// Present, perhaps a valid claim, but not readable here (permission,
    /// I/O, or refused for its size or parse cost): treated as held.
    Unreadable { reason: String },
}

impl ReadError {
    pub fn reason(&self) -> &str {
        match self {
            ReadError::GoneAway => "claim file vanished while being read",
            ReadError::Corrupted { reason, .. } | ReadError::Unreadable { reason } => reason,
        }
    }
}

/// How many leading bytes of a corrupted file are kept for display.
pub const CORRUPT_HEAD_BYTES: usize = 256;

/// Read a lockfile's bytes, refusing anything that is not a plain file.
///
/// O_NOFOLLOW: a symlink planted as a lockfile is not a claim, and following
/// it would let a sweep read (and a verdict act on) a file outside the claims
/// dir. O_NONBLOCK: a FIFO named `*.lock` must never hang a sweep in open().
pub fn read_lockfile_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    let corrupted = |reason: String| ReadError::Corrupted {
        reason,
        head: Vec::new(),
    };
    let unreadable = |reason: String| ReadError::Unreadable { reason };
    let file = open_lockfile(path)?;
    let meta = file
        .metadata()
        .map_err(|e| unreadable(format!("claim stat failed: {e}")))?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(corrupted(format!("lockfile is {what}")));
    }
    let expect = meta.len().min(MAX_LOCKFILE_BYTES) as usize;
    let mut bytes = vec![0u8; expect + 1];
    let mut file = file;
    // A published lockfile is never written in place (writers link or rename
    // a finished temp), so once a read has delivered every byte fstat
    // promised, the EOF probe read_to_end would add is a wasted syscall on
    // every file of every sweep. Anything else (a short read, a file longer
    // than its stat) falls through to reading until EOF.
    let first = loop {
        match file.read(&mut bytes) {
            Ok(n) => break n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(unreadable(format!("claim read failed: {e}"))),
        }
    };
    bytes.truncate(first);
    if first != expect {
        file.take(MAX_LOCKFILE_BYTES + 1 - first as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| unreadable(format!("claim read failed: {e}")))?;
    }
    Ok(bytes)
}

/// Open a lockfile for reading: no symlink followed, no FIFO waited on.
fn open_lockfile(path: &Path) -> Result<std::fs::File, ReadError> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => Ok(f),
        Err(e) => Err(open_error(e)),
    }
}

/// What a failed open of a lockfile says about it.
fn open_error(e: std::io::Error) -> ReadError {
    if matches!(e.kind(), ErrorKind::NotFound) {
        ReadError::GoneAway
    } else if e.raw_os_error() == Some(libc::ELOOP) {
        ReadError::Corrupted {
            reason: "lockfile is a symlink; refusing to follow it".into(),
            head: Vec::new(),
        }
    } else {
        // EACCES, EIO...: the file may be a perfectly good claim that this
        // user cannot read. Calling it corrupted would let them archive a
        // live claim they cannot even see.
        ReadError::Unreadable {
            reason: format!("claim read failed: {e}"),
        }
    }
}

/// Most lockfiles are a few hundred bytes: one read of this size takes a
/// whole one (a bigger one, with metadata, takes the guarded way).
const LISTED_READ: usize = 1024;

/// [`read_lockfile_bytes`] for an entry the directory listing already
/// called a regular file (`d_type`): a short, non-empty read is the whole
/// file, so the `fstat` (a syscall per file of every sweep) is left out.
/// Anything else (an empty or larger file, an error, an entry swapped for a
/// directory or FIFO since the listing) is read again the guarded way, so
/// every verdict stays that of [`read_lockfile_bytes`].
pub fn read_listed_lockfile_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    read_listed_lockfile_into(path, &mut bytes)?;
    Ok(bytes)
}

/// [`read_listed_lockfile_bytes`] into the caller's buffer, which a sweep
/// keeps from one file to the next rather than allocating one per file.
pub fn read_listed_lockfile_into(path: &Path, bytes: &mut Vec<u8>) -> Result<(), ReadError> {
    let file = open_lockfile(path)?;
    read_listed_open(file, path, bytes)
}

/// [`read_listed_lockfile_into`] for an entry of an open listing of the
/// claims dir: `name` is opened relative to it (same flags, same verdicts),
/// and `path` is only for the guarded re-read of an unusual file.
pub fn read_listed_at(
    dir: &super::dir_listing::DirListing,
    name: &[u8],
    path: &Path,
    bytes: &mut Vec<u8>,
) -> Result<(), ReadError> {
    let file = dir.open_file(name).map_err(open_error)?;
    read_listed_open(file, path, bytes)
}

fn read_listed_open(
    file: std::fs::File,
    path: &Path,
    bytes: &mut Vec<u8>,
) -> Result<(), ReadError> {
    use std::os::fd::AsRawFd;
    bytes.clear();
    // Into spare capacity: zeroing a buffer first (`vec![0; n]` or a stack
    // array) cost more than the fstat this saves.
    bytes.reserve(LISTED_READ);
    // SAFETY: the pointer is valid for LISTED_READ bytes of the Vec's spare
    // capacity (reserved above, the Vec being empty), read(2) writes at most
    // that many into it, and set_len below covers only the bytes it reported
    // written.
    let n = unsafe { libc::read(file.as_raw_fd(), bytes.as_mut_ptr().cast(), LISTED_READ) };
    match usize::try_from(n) {
        Ok(n) if n > 0 && n < LISTED_READ => {
            // SAFETY: read(2) initialised exactly the first n bytes.
            unsafe { bytes.set_len(n) };
            Ok(())
        }
        // An error (EINTR included), an empty or a longer file: the guarded way.
        _ => {
            *bytes = read_lockfile_bytes(path)?;
            Ok(())
        }
    }
}

/// Read and parse one lockfile.
pub fn read_claim_file(path: &Path) -> Result<ClaimRecord, ReadError> {
    read_claim_file_raw(path).map(|(rec, _)| rec)
}

/// Read and parse one lockfile, keeping the bytes (archive verification
/// compares them; the dashboard shows the head of a corrupted file).
pub fn read_claim_file_raw(path: &Path) -> Result<(ClaimRecord, Vec<u8>), ReadError> {
    parse_claim_bytes(read_lockfile_bytes(path)?)
}

fn parse_claim_bytes(bytes: Vec<u8>) -> Result<(ClaimRecord, Vec<u8>), ReadError> {
    parse_lockfile_bytes(&bytes).map(|rec| (rec, bytes))
}

/// Lockfile bytes as a record, or why they are none: the verdict a read of
/// these bytes gives, keeping the head of a corrupted file for display.
pub fn parse_lockfile_bytes(bytes: &[u8]) -> Result<ClaimRecord, ReadError> {
    match ClaimRecord::from_bytes(bytes) {
        Ok(rec) => Ok(rec),
        Err(ParseError::TooCostly(reason)) => Err(ReadError::Unreadable { reason }),
        Err(ParseError::Invalid(reason)) => Err(ReadError::Corrupted {
            reason,
            head: bytes[..bytes.len().min(CORRUPT_HEAD_BYTES)].to_vec(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec() -> ClaimRecord {
        ClaimRecord {
            schema_version: 1,
            key: "node:x".into(),
            holder: "pty:aa".into(),
            acquired_at: 1_700_000_000_000,
            pid: 4242,
            host: "box".into(),
            expires_at: None,
            reason: None,
            harness: None,
            machine_id: None,
            metadata: Map::new(),
        }
    }

    #[test]
    fn pid_claim_yaml_is_byte_exact_and_has_no_expires_at_line() {
        let mut r = rec();
        r.machine_id = Some("abc:4026531836".into());
        assert_eq!(
            r.to_yaml().unwrap(),
            "schema_version: 1\nkey: node:x\nholder: pty:aa\nacquired_at: 1700000000000\n\
             pid: 4242\nhost: box\nmachine_id: abc:4026531836\n"
        );
    }

    #[test]
    fn ttl_claim_yaml_is_byte_exact_in_field_order() {
        let mut r = rec();
        r.expires_at = Some(1_700_000_060_000);
        r.reason = Some("fix bug".into());
        r.harness = Some("codex".into());
        r.machine_id = Some("m".into());
        r.metadata.insert("z".into(), json!(1));
        r.metadata.insert("a".into(), json!({"b": [true, null]}));
        assert_eq!(
            r.to_yaml().unwrap(),
            "schema_version: 1\nkey: node:x\nholder: pty:aa\nacquired_at: 1700000000000\n\
             pid: 4242\nhost: box\nexpires_at: 1700000060000\nreason: fix bug\nharness: codex\n\
             machine_id: m\nmetadata:\n  z: 1\n  a:\n    b:\n    - true\n    - null\n"
        );
    }

    #[test]
    fn null_and_absent_expires_at_read_the_same() {
        let r = ClaimRecord::from_yaml(
            "schema_version: 1\nkey: q\nholder: w\nacquired_at: 9\npid: 3\nhost: y\nexpires_at: null\n",
        )
        .unwrap();
        assert_eq!(r.expires_at, None);
    }

    #[test]
    fn unknown_fields_are_ignored_and_schema_version_defaults_to_one() {
        let r = ClaimRecord::from_yaml(
            "key: q\nholder: w\nacquired_at: 9\npid: 3\nhost: y\nnext_gen_field: {a: [1]}\n",
        )
        .unwrap();
        assert_eq!(r.schema_version, 1);
        assert!(r.metadata.is_empty());
        assert_eq!(r.harness, None);
    }

    #[test]
    fn newer_schema_lists_garbage_and_empty_fields_are_corrupted() {
        for text in [
            "schema_version: 2\nkey: q\nholder: w\nacquired_at: 9\npid: 3\nhost: y\n",
            "- just\n- a\n- list\n",
            "{{{{not yaml",
            "",
            "plain scalar",
            "key: ''\nholder: w\nacquired_at: 9\npid: 3\nhost: y\n",
            "key: k\nholder: ''\nacquired_at: 5\npid: 1\nhost: x\n",
            "key: k\nholder: h\nacquired_at: soon\npid: 1\nhost: x\n",
        ] {
            assert!(ClaimRecord::from_yaml(text).is_err(), "accepted: {text:?}");
        }
        assert!(ClaimRecord::from_bytes(b"key: \xff\xfe").is_err());
    }

    #[test]
    fn record_with_metadata_round_trips() {
        let mut r = rec();
        r.reason = Some("why: not \"quoted\"\nmultiline".into());
        r.harness = Some("claude".into());
        r.metadata
            .insert("nested".into(), json!({"a": [1, 2], "b": "text"}));
        r.metadata.insert("yes".into(), json!("no"));
        r.metadata.insert("num_str".into(), json!("0123"));
        let back = ClaimRecord::from_yaml(&r.to_yaml().unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn special_files_read_as_corrupted_never_followed() {
        let td = tempfile::TempDir::new().unwrap();
        let dir = td.path().join("d.lock");
        std::fs::create_dir(&dir).unwrap();
        assert!(matches!(
            read_claim_file(&dir),
            Err(ReadError::Corrupted { .. })
        ));
        let target = td.path().join("real");
        std::fs::write(&target, rec().to_yaml().unwrap()).unwrap();
        let link = td.path().join("l.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = read_claim_file(&link).unwrap_err();
        assert!(err.reason().contains("symlink"), "{err:?}");
        // Too big is unreadable (state-neutral), not corrupted.
        let big = td.path().join("big.lock");
        std::fs::write(&big, vec![b'a'; (MAX_LOCKFILE_BYTES + 10) as usize]).unwrap();
        assert!(matches!(
            read_claim_file(&big),
            Err(ReadError::Unreadable { reason }) if reason.contains("larger")
        ));
        assert_eq!(
            read_claim_file(&td.path().join("missing.lock")),
            Err(ReadError::GoneAway)
        );
    }

    #[test]
    fn a_listed_read_answers_exactly_as_the_guarded_read_whatever_the_entry_became() {
        let td = tempfile::TempDir::new().unwrap();
        let p = |n: &str| td.path().join(n);
        std::fs::write(p("small.lock"), rec().to_yaml().unwrap()).unwrap();
        std::fs::write(p("empty.lock"), b"").unwrap();
        std::fs::write(p("edge.lock"), vec![b'k'; LISTED_READ - 1]).unwrap();
        std::fs::write(p("full.lock"), vec![b'k'; LISTED_READ]).unwrap();
        std::fs::write(p("long.lock"), vec![b'k'; 3 * LISTED_READ + 7]).unwrap();
        let huge = vec![b'a'; (MAX_LOCKFILE_BYTES + 10) as usize];
        std::fs::write(p("huge.lock"), huge).unwrap();
        std::fs::create_dir(p("dir.lock")).unwrap();
        std::os::unix::fs::symlink(p("small.lock"), p("link.lock")).unwrap();
        let fifo = std::ffi::CString::new(p("fifo.lock").into_os_string().into_encoded_bytes());
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(fifo.unwrap().as_ptr(), 0o600) }, 0);
        for name in [
            "small.lock",
            "empty.lock",
            "edge.lock",
            "full.lock",
            "long.lock",
            "huge.lock",
            "dir.lock",
            "link.lock",
            "fifo.lock",
            "missing.lock",
        ] {
            assert_eq!(
                read_listed_lockfile_bytes(&p(name)),
                read_lockfile_bytes(&p(name)),
                "{name}"
            );
        }
    }

    #[test]
    fn a_fifo_named_like_a_lockfile_never_blocks_the_reader() {
        let td = tempfile::TempDir::new().unwrap();
        let fifo = td.path().join("f.lock");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_claim_file(&fifo).unwrap_err();
        assert!(err.reason().contains("not a regular file"), "{err:?}");
    }

    const HEAD: &str = "key: k\nholder: h\nacquired_at: 1\npid: 1\nhost: x\n";

    #[test]
    fn a_megabyte_of_open_brackets_is_refused_before_the_full_parser_sees_it() {
        for open in ["[", "{"] {
            let err = ClaimRecord::from_bytes(open.repeat(1_000_000).as_bytes()).unwrap_err();
            assert!(err.contains("nests deeper"), "{err}");
        }
        let mut deep = format!("{HEAD}metadata: {{a: ");
        deep.push_str(&"[".repeat(MAX_FLOW_DEPTH));
        assert!(ClaimRecord::from_yaml(&deep)
            .unwrap_err()
            .contains("nests deeper"));
    }

    #[test]
    fn an_alias_bomb_is_too_costly_and_a_shared_anchor_still_reads() {
        let mut bomb = format!("{HEAD}metadata:\n  a: &x [{}]\n  b: [", "1, ".repeat(64));
        bomb.push_str(&"*x, ".repeat(100_000));
        bomb.push_str("]\n");
        // Refused for its cost, not judged: unreadable, never corrupted.
        let err = ClaimRecord::from_bytes(bomb.as_bytes()).unwrap_err();
        assert!(matches!(err, ParseError::TooCostly(_)), "{err}");
        // What Python's safe_dump writes for one object referenced twice.
        let shared = format!("{HEAD}metadata:\n  a: &id001\n  - x\n  b: *id001\n");
        let rec = ClaimRecord::from_yaml(&shared).unwrap();
        assert_eq!(rec.metadata["a"], rec.metadata["b"]);
    }

    #[test]
    fn brackets_and_stars_inside_text_are_not_mistaken_for_structure() {
        let mut r = rec();
        r.metadata
            .insert("note".into(), Value::String("{".repeat(200)));
        r.metadata.insert(
            "list".into(),
            serde_json::json!([{"a": "b, *c ".repeat(20)}]),
        );
        for reason in [
            format!("{} don't [x", "a [".repeat(100)),
            "a, *b ".repeat(20),
            format!("multi\nline {}\n{}", "[".repeat(100), "*x, ".repeat(20)),
            "- *x ? *y ".repeat(20),
        ] {
            r.reason = Some(reason);
            // A comment keeps the fast path out: this is the full parser's road.
            let yaml = format!("# written by hand\n{}", r.to_yaml().unwrap());
            assert_eq!(ClaimRecord::from_yaml(&yaml), Ok(r.clone()), "{yaml}");
        }
        // Python's safe_dump folds a long plain scalar onto indented lines.
        let folded = format!("{HEAD}reason: fix it\n  [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n  *a *b *c *d *e *f *g *h *i\n");
        assert!(ClaimRecord::from_yaml(&folded).is_ok());
        let commented = format!("{HEAD}# [[[[[[ *a *b *c *d *e *f *g *h *i\nreason: a-*b 10:*c\n");
        assert!(ClaimRecord::from_yaml(&commented).is_ok());
    }

    #[test]
    fn structure_inside_a_sequence_of_mappings_is_still_counted() {
        let hidden = format!(
            "{HEAD}metadata:\n  l:\n  - name: x\n    val: {}\n",
            "[".repeat(MAX_FLOW_DEPTH + 1)
        );
        assert!(ClaimRecord::from_yaml(&hidden)
            .unwrap_err()
            .contains("nests deeper"));
    }

    #[test]
    fn many_aliases_in_a_large_record_read_as_the_seed_reads_them() {
        // Python's safe_dump anchors every object referenced twice; a big
        // record with many shared objects is still a claim.
        let mut text = format!(
            "{HEAD}metadata:\n  a: &x [1, 2]\n  pad: '{}'\n",
            "p".repeat(70_000)
        );
        for i in 0..200 {
            text.push_str(&format!("  v{i}: *x\n"));
        }
        let rec = ClaimRecord::from_yaml(&text).unwrap();
        assert_eq!(rec.metadata["v199"], serde_json::json!([1, 2]));
        // As deep in metadata as the seed reads, and one level past it.
        let nest = |d: usize| {
            format!(
                "{HEAD}metadata:\n  a: {}1{}\n",
                "[".repeat(d),
                "]".repeat(d)
            )
        };
        assert!(ClaimRecord::from_yaml(&nest(126)).is_ok());
        assert!(matches!(
            ClaimRecord::from_yaml(&nest(127)),
            Err(ParseError::Invalid(_))
        ));
    }
}
