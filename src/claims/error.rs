//! Typed errors of the protocol core. The CLI and the dashboard turn them into
//! words; the library never prints them.

use crate::time::ttl_text;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("key must be non-empty")]
    EmptyKey,
    #[error("holder must be non-empty")]
    EmptyHolder,
    #[error("key length {0} exceeds MAX_KEY_LENGTH={max}", max = super::MAX_KEY_LENGTH)]
    KeyTooLong(usize),
    #[error(
        "URL-encoded key length {0} exceeds MAX_ENCODED_FILENAME_BYTES={max}",
        max = super::MAX_ENCODED_FILENAME_BYTES
    )]
    EncodedKeyTooLong(usize),
    /// Worded in the TTL syntax a person types (`TTL 10s is out of range
    /// 60s–24h`), never in raw milliseconds.
    #[error(
        "TTL {} is out of range {}–{}",
        ttl_text(*.0),
        ttl_text(super::MIN_TTL_MS),
        ttl_text(super::MAX_TTL_MS)
    )]
    TtlOutOfRange(i64),
    #[error("pid {0} is not a process id (1..=2147483647)")]
    BadPid(u32),
    #[error("ttl_ms must be positive")]
    TtlNotPositive,
    #[error("no claims root for key {0:?}: not a global-id prefix and no explicit root given")]
    NoRoot(String),
    /// The lockfile exists but cannot be verified; it is left in place for
    /// force-release rather than reclaimed blind.
    #[error("claim file {path} is corrupted: {reason}")]
    Corrupted { path: PathBuf, reason: String },
    /// The lockfile exists but cannot be read here (permission, size, parse
    /// cost): it may be a live claim, so nothing acts on it blind.
    #[error("claim file {path} cannot be read here: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Something planted in the claims dir would make us write elsewhere.
    #[error("refusing to use {path}: {why}")]
    Unsafe { path: PathBuf, why: String },
    #[error("failed to archive stale claim: {0}")]
    Archive(Box<ClaimError>),
    #[error("claim YAML serialize failed: {0}")]
    Serialize(String),
    /// The record would not read back (over the size cap or the parse-cost
    /// limits): written, it would be a claim no one could release.
    #[error("refusing to write a {bytes}-byte claim record that readers would refuse: {reason}")]
    Unwritable { bytes: usize, reason: String },
    #[error("acquire gave up after {attempts} contention retries on {key:?}")]
    Contention { attempts: usize, key: String },
}

impl ClaimError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ClaimError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ttl_out_of_range_is_worded_as_a_person_types_it() {
        assert_eq!(
            ClaimError::TtlOutOfRange(10_000).to_string(),
            "TTL 10s is out of range 60s–24h"
        );
        assert_eq!(
            ClaimError::TtlOutOfRange(90_000_000).to_string(),
            "TTL 25h is out of range 60s–24h"
        );
    }
}
