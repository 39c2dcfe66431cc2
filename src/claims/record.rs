//! The claim record, its states, and the YAML lockfile format.

pub use super::metadata::Metadata;
use super::yaml_cost;
pub use super::yaml_quote::misread as pyyaml_misreads;
pub use super::yaml_scan::MAX_FLOW_DEPTH;
use super::yaml_scan::{scan, Scan};
use super::SCHEMA_VERSION;
// Re-exported where it lived before: other code names it by this path.
pub use crate::time::parse_ttl_ms;
use serde::{Deserialize, Serialize};

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
        skip_serializing_if = "Metadata::is_empty",
        default,
        deserialize_with = "metadata"
    )]
    pub metadata: Metadata,
}

/// The metadata map, built under the budget (see `yaml_cost`).
fn metadata<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Metadata, D::Error> {
    yaml_cost::metadata(d).map(Metadata::from)
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn rec() -> ClaimRecord {
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
            metadata: Default::default(),
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
            .insert("note".into(), serde_json::Value::String("{".repeat(200)));
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
    fn brackets_quoted_after_a_comma_in_a_flow_are_text_not_nesting() {
        // Each item of a flow sequence starts a token, so its quotes are
        // skipped whole: a hand-written list holding a bracketed string is
        // read, never refused as too deep.
        let brackets = "[".repeat(MAX_FLOW_DEPTH + 10);
        for item in [format!("'{brackets}'"), format!("\"{brackets}\"")] {
            let yaml = format!("{HEAD}metadata:\n  l: [x, {item}]\n");
            let rec = ClaimRecord::from_yaml(&yaml).unwrap_or_else(|e| panic!("{e}: {yaml}"));
            assert_eq!(
                rec.metadata["l"][1],
                serde_json::Value::String(brackets.clone())
            );
        }
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
