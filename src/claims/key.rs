//! Key encoding, claims-root resolution, and the name of every file the
//! protocol keeps in a claims dir: lockfile, temp file, archive. (The two
//! mutex names live with the mutex, in `crate::mutex`.)

use super::{ClaimError, CLAIMS_DIRNAME, MAX_ENCODED_FILENAME_BYTES, MAX_KEY_LENGTH};
use super::{MAX_TTL_MS, MIN_TTL_MS};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Prefix of the temp files we write (for a create or a replace).
pub const CREATE_TMP_PREFIX: &str = ".claim-tmp-";
/// Infix of the temp file other implementations' replace renames over the
/// lockfile (`<enc>.lock.tmp.<pid>.<seq>`); doctor still recognises it.
pub const REPLACE_TMP_INFIX: &str = ".lock.tmp.";

/// Percent-encode a key into a filename stem.
///
/// Byte parity with Python's `urllib.parse.quote(key, safe="")`: every byte
/// outside `[A-Za-z0-9._~-]` becomes `%XX` in UPPERCASE hex. A lowercase (or
/// otherwise different) encoder produces a different filename for the same key
/// and silently forks the lock: two holders, each believing it is alone.
pub fn encode_key(key: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(key.len() + 8);
    for b in key.bytes() {
        if is_safe_byte(b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0xF)] as char);
        }
    }
    out
}

/// Is `name` exactly `<encode_key(key)>.lock`? Compared without building the
/// encoding: a sweep asks this of every lockfile.
pub fn is_canonical_lockfile_name(name: &[u8], key: &str) -> bool {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let Some(mut rest) = name.strip_suffix(b".lock") else {
        return false;
    };
    for b in key.bytes() {
        let ok = if is_safe_byte(b) {
            rest.first() == Some(&b)
        } else {
            rest.get(..3) == Some(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xF)]])
        };
        if !ok {
            return false;
        }
        rest = &rest[if is_safe_byte(b) { 1 } else { 3 }..];
    }
    rest.is_empty()
}

fn is_safe_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'~' | b'-')
}

/// Decode a lockfile stem back to the key, for display and for `list`.
///
/// Lenient on purpose: a name no encoder of ours would produce (lowercase hex,
/// a stray `%`) still decodes to something showable, and invalid UTF-8 is kept
/// lossily, because a sweep must never abort on a strange file name.
pub fn decode_key(stem: &str) -> String {
    decode_stem(stem).0
}

/// [`decode_key`], and whether `stem` is exactly `encode_key` of the key it
/// decodes to (what [`is_canonical_lockfile_name`] asks), judged in the same
/// pass: a sweep asks both of every lockfile.
pub fn decode_stem(stem: &str) -> (String, bool) {
    let bytes = stem.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    // The encoder writes safe bytes as they are and every other byte as
    // `%XX` in uppercase hex, so anything else in the stem is another
    // encoder's doing.
    let mut canonical = true;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                let b = (h * 16 + l) as u8;
                canonical &= !is_safe_byte(b)
                    && !bytes[i + 1].is_ascii_lowercase()
                    && !bytes[i + 2].is_ascii_lowercase();
                out.push(b);
                i += 3;
                continue;
            }
        }
        canonical &= is_safe_byte(bytes[i]);
        out.push(bytes[i]);
        i += 1;
    }
    // One allocation: the decoded bytes become the String when they are
    // UTF-8 (always, for a name our encoder wrote); a lossy copy otherwise,
    // whose replacement characters no encoder could have written.
    match String::from_utf8(out) {
        Ok(key) => (key, canonical),
        Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), false),
    }
}

/// Prefixes whose identifier is globally unique: these keys coordinate across
/// worktrees and repos through the global root, never a cwd-local one.
const GLOBAL_ID_PREFIXES: [&str; 4] = ["node", "dispatch", "reconcile", "session"];

/// The global claims root: `$FNO_CLAIMS_ROOT`, else `$HOME`.
pub fn global_claims_root() -> Option<PathBuf> {
    let env = std::env::var_os;
    global_claims_root_from(env("FNO_CLAIMS_ROOT"), env("HOME"))
}

/// [`global_claims_root`] with the environment passed in.
///
/// A set-but-EMPTY value is unset: Python's `os.environ.get` returns `""`,
/// which is falsy there. Taking it as a real (relative, empty) path would put
/// this implementation's claims somewhere the other one never looks.
pub fn global_claims_root_from(
    claims_root: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    [claims_root, home]
        .into_iter()
        .flatten()
        .find(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The root a key routes to by its prefix alone.
///
/// Only `<prefix>:<id>` with a known global-id prefix routes globally; a bare
/// `node` or an unknown prefix has no implicit root (the caller must give one).
pub fn claims_root_for(key: &str) -> Option<PathBuf> {
    let (prefix, _id) = key.split_once(':')?;
    if GLOBAL_ID_PREFIXES.contains(&prefix) {
        global_claims_root()
    } else {
        None
    }
}

/// Resolve the claims root for `key`: the explicit root, else prefix routing.
pub fn resolve_root(explicit: Option<&Path>, key: &str) -> Result<PathBuf, ClaimError> {
    match explicit {
        Some(r) => Ok(r.to_path_buf()),
        None => claims_root_for(key).ok_or_else(|| ClaimError::NoRoot(key.to_string())),
    }
}

/// `<root>/.fno/claims`.
pub fn claims_dir(root: &Path) -> PathBuf {
    root.join(CLAIMS_DIRNAME)
}

/// The canonical lockfile path: `<root>/.fno/claims/<encoded-key>.lock`.
pub fn claim_path(root: &Path, key: &str) -> PathBuf {
    claims_dir(root).join(format!("{}.lock", encode_key(key)))
}

/// Process-unique sequence: pid + clock alone can collide between threads,
/// and a colliding temp name would fail `create_new` and be misread as a held
/// lock.
fn seq() -> u64 {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// A process-unique temp name in `dir`. Not derived from the lockfile name:
/// an encoded key may be up to 240 bytes, and any suffix on it would pass the
/// 255-byte name limit, failing every rewrite of such a claim.
pub(crate) fn temp_path(dir: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    dir.join(format!(
        "{CREATE_TMP_PREFIX}{}-{nanos}-{}",
        std::process::id(),
        seq()
    ))
}

/// `<stem>.<ms>.lock`, the stem cut short only when the whole would pass the
/// 255-byte name limit. A key may encode to 240 bytes and the stamp adds 19,
/// so without the cut such a claim, once stale, could never be archived and
/// so never reclaimed or force-released. The archived record still names its
/// full key.
pub(crate) fn archive_name(stem: &str, stamp: i64) -> String {
    const NAME_MAX: usize = 255;
    let tail = format!(".{stamp}.lock");
    let mut keep = stem.len().min(NAME_MAX.saturating_sub(tail.len()));
    while !stem.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{tail}", &stem[..keep])
}

/// Check a verb's inputs before anything touches the disk.
pub fn validate_inputs(key: &str, holder: &str, ttl_ms: Option<i64>) -> Result<(), ClaimError> {
    if key.is_empty() {
        return Err(ClaimError::EmptyKey);
    }
    if key.len() > MAX_KEY_LENGTH {
        return Err(ClaimError::KeyTooLong(key.len()));
    }
    // A raw length under the cap does not bound the filename: a reserved byte
    // expands to three.
    let encoded_len = encode_key(key).len();
    if MAX_ENCODED_FILENAME_BYTES < encoded_len {
        return Err(ClaimError::EncodedKeyTooLong(encoded_len));
    }
    if holder.is_empty() {
        return Err(ClaimError::EmptyHolder);
    }
    if let Some(ttl) = ttl_ms {
        let allowed = MIN_TTL_MS..=MAX_TTL_MS;
        if !allowed.contains(&ttl) {
            return Err(ClaimError::TtlOutOfRange(ttl));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_python_quote_with_empty_safe_set() {
        for (key, file) in [
            ("node:x-9f3", "node%3Ax-9f3"),
            ("a b/c", "a%20b%2Fc"),
            ("Az09._~-", "Az09._~-"),
        ] {
            assert_eq!(encode_key(key), file);
        }
        assert_eq!(encode_key("k:v"), "k%3Av");
        assert_eq!(encode_key("é"), "%C3%A9");
        assert_eq!(encode_key("走"), "%E8%B5%B0");
        assert_eq!(encode_key("%"), "%25");
        assert_eq!(encode_key("a+b=c&d?e#f"), "a%2Bb%3Dc%26d%3Fe%23f");
    }

    #[test]
    fn decoding_inverts_encoding_and_tolerates_strays() {
        for k in ["node:x", "a b/c", "走", "%", "x%2"] {
            assert_eq!(decode_key(&encode_key(k)), k);
        }
        assert_eq!(decode_key("100%"), "100%");
        assert_eq!(decode_key("%zz"), "%zz");
        assert_eq!(decode_key("%3a"), ":");
        assert_eq!(decode_key("%FF"), "\u{fffd}");
    }

    #[test]
    fn decoding_a_stem_judges_it_canonical_exactly_as_the_name_check_does() {
        for stem in [
            "node%3Ax",
            "node%3ax",
            "node:x",
            "a%20b%2Fc",
            "%E8%B5%B0",
            "%25",
            "%",
            "100%",
            "x%2",
            "%zz",
            "%FF",
            "%C3%A9",
            "%41",
            "%2e",
            "plain",
            "",
            "a%2",
            "%%41",
            "%3A%",
        ] {
            let (key, canonical) = decode_stem(stem);
            assert_eq!(key, decode_key(stem));
            let name = format!("{stem}.lock");
            assert_eq!(
                canonical,
                is_canonical_lockfile_name(name.as_bytes(), &key),
                "{stem}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn any_stem_is_judged_canonical_exactly_as_the_name_check_does(
            stem in "([a-zA-Z0-9._~:/ -]|%[0-9A-Fa-fxz]{0,2}|%[8-9A-F][0-9A-F]){0,8}"
        ) {
            let (key, canonical) = decode_stem(&stem);
            let name = format!("{stem}.lock");
            proptest::prop_assert_eq!(canonical, is_canonical_lockfile_name(name.as_bytes(), &key));
            proptest::prop_assert_eq!(key, decode_key(&stem));
        }
    }

    #[test]
    fn only_the_uppercase_encoding_is_a_canonical_lockfile_name() {
        for k in ["node:x", "a b/c", "走", "%", "plain", ""] {
            let name = format!("{}.lock", encode_key(k));
            assert!(is_canonical_lockfile_name(name.as_bytes(), k), "{name}");
        }
        assert!(!is_canonical_lockfile_name(b"node%3ax.lock", "node:x"));
        assert!(!is_canonical_lockfile_name(b"node:x.lock", "node:x"));
        assert!(!is_canonical_lockfile_name(b"node%3Ax", "node:x"));
        assert!(!is_canonical_lockfile_name(b"node%3Axy.lock", "node:x"));
        assert!(!is_canonical_lockfile_name(b"node%3A.lock", "node:x"));
    }

    #[test]
    fn set_but_empty_claims_root_falls_back_to_home() {
        let home = Some(OsString::from("/home/x"));
        assert_eq!(
            global_claims_root_from(Some(OsString::new()), home.clone()),
            Some(PathBuf::from("/home/x"))
        );
        assert_eq!(
            global_claims_root_from(Some("/custom".into()), home),
            Some(PathBuf::from("/custom"))
        );
        assert_eq!(
            global_claims_root_from(Some("".into()), Some("".into())),
            None
        );
        assert!(global_claims_root_from(None, None).is_none());
    }

    #[test]
    fn only_prefix_colon_id_keys_route_globally() {
        assert!(resolve_root(None, "node").is_err());
        assert!(resolve_root(None, "walker:/repo/root").is_err());
        assert!(resolve_root(None, "nodes:x").is_err());
        let r = resolve_root(Some(Path::new("/tmp/x")), "walker:/repo").unwrap();
        assert_eq!(claims_dir(&r), PathBuf::from("/tmp/x/.fno/claims"));
        assert_eq!(
            claim_path(Path::new("/r"), "node:a"),
            PathBuf::from("/r/.fno/claims/node%3Aa.lock")
        );
    }

    #[test]
    fn validation_names_each_bound() {
        assert!(matches!(
            validate_inputs("", "h", None),
            Err(ClaimError::EmptyKey)
        ));
        assert!(matches!(
            validate_inputs("k", "", None),
            Err(ClaimError::EmptyHolder)
        ));
        assert!(matches!(
            validate_inputs(&"k".repeat(257), "h", None),
            Err(ClaimError::KeyTooLong(257))
        ));
        assert!(validate_inputs(&"k".repeat(240), "h", None).is_ok());
        assert!(matches!(
            validate_inputs(&":".repeat(100), "h", None),
            Err(ClaimError::EncodedKeyTooLong(300))
        ));
        assert!(matches!(
            validate_inputs("k", "h", Some(59_999)),
            Err(ClaimError::TtlOutOfRange(59_999))
        ));
        assert!(validate_inputs("k", "h", Some(60_000)).is_ok());
        assert!(validate_inputs("k", "h", Some(86_400_000)).is_ok());
        assert!(validate_inputs("k", "h", Some(86_400_001)).is_err());
    }
}
