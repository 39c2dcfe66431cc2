//! One key's state: the verdict on its lockfile, with the record and the
//! reason in words.

use super::liveness::{Classifier, Locality, Verdict};
use super::loc::Loc;
use super::lockfile_read::{
    parse_lockfile_bytes, read_claim_file_raw, read_listed_lockfile_into, read_lockfile_bytes,
    ReadError,
};
use super::{ClaimRecord, ClaimState};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One key's state, with the record and the reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    pub key: String,
    /// Shared, not copied, with whoever keys the claim by its place (a
    /// mirror's rows, the dashboard's): over 100 000 claims a second copy
    /// of every path was a tenth of what each row cost. Serialized as the
    /// path alone; the origin it carries is the composed store's business.
    pub file: Loc,
    pub state: ClaimState,
    pub record: Option<ClaimRecord>,
    pub why: String,
    pub error: Option<String>,
    /// Where the record was written (None when free or corrupted).
    #[serde(skip)]
    pub locality: Option<Locality>,
    /// The first bytes of a corrupted file, for display.
    #[serde(skip)]
    pub head: Box<[u8]>,
}

impl Status {
    /// The status of the file at `path` (named `key`), classified with `c`.
    pub fn of_file(key: &str, path: &Path, c: &mut Classifier) -> Status {
        Status::of_read(key, path, c, read_claim_file_raw(path))
    }

    /// A sweep's entry: the key it listed becomes the item's own (the
    /// path, one shared copy of it), and the file is read into `buf`, which the sweep reuses
    /// from file to file. `listed_regular`: the listing's `d_type` said
    /// "regular file", so its read needs no `fstat`; the verdict is the
    /// same either way (see [`read_listed_lockfile_into`]).
    pub fn of_entry(
        key: String,
        file: PathBuf,
        listed_regular: bool,
        c: &mut Classifier,
        buf: &mut Vec<u8>,
    ) -> Status {
        let read = if listed_regular {
            read_listed_lockfile_into(&file, buf)
        } else {
            read_lockfile_bytes(&file).map(|bytes| *buf = bytes)
        };
        let read = read.and_then(|()| parse_lockfile_bytes(buf));
        Status::judged(key, file, c, read)
    }

    fn of_read(
        key: &str,
        path: &Path,
        c: &mut Classifier,
        read: Result<(ClaimRecord, Vec<u8>), ReadError>,
    ) -> Status {
        let read = read.map(|(rec, _)| rec);
        Status::judged(key.to_string(), path, c, read)
    }

    /// `key` with no claim at `file`, and `why` in words.
    pub fn free(key: String, file: impl Into<Loc>, why: String) -> Status {
        Status {
            key,
            file: file.into(),
            state: ClaimState::Free,
            record: None,
            why,
            error: None,
            locality: None,
            head: Box::default(),
        }
    }

    /// The status of a file whose read (and parse) came out as `read`.
    pub(crate) fn judged(
        key: String,
        file: impl Into<Loc>,
        c: &mut Classifier,
        read: Result<ClaimRecord, ReadError>,
    ) -> Status {
        // `why` is filled in below; an empty String allocates nothing.
        let mut s = Status::free(key, file, String::new());
        match read {
            Ok(rec) => {
                let Verdict {
                    state,
                    locality,
                    why,
                    ..
                } = c.verdict(&rec);
                s.state = state;
                s.why = why;
                s.locality = Some(locality);
                s.record = Some(rec);
            }
            Err(ReadError::GoneAway) => s.why = "no claim file".into(),
            Err(ReadError::Corrupted { reason, head }) => {
                s.state = ClaimState::Corrupted;
                s.why = "the file cannot be parsed as a claim; force-release archives it".into();
                s.error = Some(reason);
                s.head = head.into();
            }
            Err(ReadError::Unreadable { reason }) => {
                s.state = ClaimState::Unreadable;
                s.why = "the file cannot be read here, so it may be a live claim; \
                         treated as held (force-release needs --allow-live)"
                    .into();
                s.error = Some(reason);
            }
        }
        s
    }
}

/// Who a waiter is waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    pub holder: String,
    pub pid: i32,
    pub host: String,
    /// When the claim's TTL (or lease) runs out (epoch ms), if it has one.
    pub expires_at: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mirror keeps one shared status a row (`Arc<Status>`): 100 000 of
    /// them are most of what a dashboard over a big store holds. Kept at
    /// 296 bytes, the `Arc` is 312 and lands in glibc's 320-byte class
    /// (with a record's unused metadata map inline it was 368, in 400).
    #[test]
    fn a_shared_status_fits_its_allocation_class() {
        assert!(
            std::mem::size_of::<Status>() <= 296,
            "{}",
            std::mem::size_of::<Status>()
        );
        assert!(std::mem::size_of::<ClaimRecord>() <= 184);
    }
}
