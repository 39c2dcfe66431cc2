//! The entries of a time window, as [`super::history::History::read_range`]
//! hands them out: each with its mark and its text as stored, whatever its
//! length. A file log's entry is a byte range of the file (read, probed or
//! copied out in pieces when too long to hold); a store's is a value in
//! hand. A reader that prints them byte for byte (`events --json`) never
//! learns which.

use super::stream::{self, Probe, Span, INLINE_LINE_BYTES};
use super::tail::FileId;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// What a range read is asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Range {
    /// Epoch ms: entries from the first written at or after it, every
    /// entry from the first without it. The start is found within the
    /// writers' clock slack ([`super::seek::CLOCK_SLACK_MS`]), so entries a
    /// little before it may come too: the visitor judges each.
    pub since: Option<i64>,
    /// Epoch ms: a reader may stop once the entries are past it by more
    /// than the writers' clocks can be apart. The visitor still judges
    /// each entry it is handed: one past `until` may come.
    pub until: Option<i64>,
    /// Only the last this many entries are wanted: the read may begin
    /// with them (a file reads back from its end) instead of the window's
    /// start. Only a hint: earlier entries may come too, so the visitor
    /// keeps the last ones itself.
    pub last: Option<usize>,
}

/// Where a range read ended: just past the last entry it could have
/// visited, which is where a follower resumes to bring none of them again
/// ([`crate::store::Audit::resume_after`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RangeEnd {
    /// The mark past the last entry (a file's byte offset after its last
    /// complete line). None: the log is not there yet (every entry it will
    /// have is new).
    pub next: Option<u64>,
    /// The file read, where the log is one.
    pub file_id: Option<FileId>,
}

/// One entry a range read visits.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub mark: u64,
    /// The text, when it is held (every entry up to [`INLINE_LINE_BYTES`]).
    bytes: Option<&'a [u8]>,
    /// Where it is in its file, where it is a file's line.
    place: Option<(&'a Arc<File>, Span)>,
}

impl<'a> Entry<'a> {
    /// An entry in hand (a store's value).
    pub fn held(mark: u64, bytes: &'a [u8]) -> Entry<'a> {
        Entry {
            mark,
            bytes: Some(bytes),
            place: None,
        }
    }

    /// A file's line at `span`, with its bytes when the scan holds them.
    pub fn in_file(file: &'a Arc<File>, span: Span, bytes: Option<&'a [u8]>) -> Entry<'a> {
        Entry {
            mark: span.offset,
            bytes,
            place: Some((file, span)),
        }
    }

    /// The whole text, when it is in hand.
    pub fn bytes(&self) -> Option<&'a [u8]> {
        self.bytes
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        match (self.bytes, self.place) {
            (Some(b), _) => b.len() as u64,
            (None, Some((_, span))) => span.len,
            (None, None) => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What a filter and a text line need of it, read without holding it.
    pub fn probe(&self) -> Result<Probe, String> {
        match (self.bytes, self.place) {
            (Some(b), _) => Probe::of_slice(b),
            (None, Some((file, span))) => Probe::of_span(file, span),
            (None, None) => Probe::of_slice(b""),
        }
    }

    /// The whole text into `buf` (cleared first), however long.
    pub fn read_into(&self, buf: &mut Vec<u8>) -> io::Result<()> {
        buf.clear();
        match (self.bytes, self.place) {
            (Some(b), _) => {
                buf.extend_from_slice(b);
                Ok(())
            }
            (None, Some((file, span))) => {
                buf.resize(span.len as usize, 0);
                file.read_exact_at(buf, span.offset)
            }
            (None, None) => Ok(()),
        }
    }

    /// The whole text copied to `out`, in pieces when it is not held.
    pub fn copy_to(&self, mut out: &mut dyn Write) -> io::Result<()> {
        match (self.bytes, self.place) {
            (Some(b), _) => out.write_all(b),
            (None, Some((file, span))) => stream::copy_span(file, span, &mut out).map(|_| ()),
            (None, None) => Ok(()),
        }
    }

    /// The entry kept with its text when that is in hand (no second read
    /// to print it), else by its place.
    pub fn keep_text(&self) -> Kept {
        match self.bytes {
            Some(b) => Kept {
                mark: self.mark,
                text: KeptText::Held(b.to_vec()),
            },
            None => self.keep(),
        }
    }

    /// The entry, kept past the visit: a file's line by its place (so
    /// keeping many costs a few bytes each), a store's value by a copy.
    pub fn keep(&self) -> Kept {
        match (self.place, self.bytes) {
            (Some((file, span)), _) => Kept {
                mark: self.mark,
                text: KeptText::Place(Arc::clone(file), span),
            },
            (None, b) => Kept {
                mark: self.mark,
                text: KeptText::Held(b.unwrap_or_default().to_vec()),
            },
        }
    }
}

/// An entry kept past its visit ([`Entry::keep`]).
#[derive(Debug, Clone)]
pub struct Kept {
    pub mark: u64,
    text: KeptText,
}

#[derive(Debug, Clone)]
enum KeptText {
    Held(Vec<u8>),
    Place(Arc<File>, Span),
}

impl Kept {
    /// The entry again: a file's line read back now when it is short
    /// enough to hold, into `buf`.
    pub fn entry<'a>(&'a self, buf: &'a mut Vec<u8>) -> io::Result<Entry<'a>> {
        match &self.text {
            KeptText::Held(b) => Ok(Entry::held(self.mark, b)),
            KeptText::Place(file, span) if span.len <= INLINE_LINE_BYTES => {
                buf.resize(span.len as usize, 0);
                file.read_exact_at(buf, span.offset)?;
                Ok(Entry::in_file(file, *span, Some(buf)))
            }
            KeptText::Place(file, span) => Ok(Entry::in_file(file, *span, None)),
        }
    }

    /// The whole text into `buf` (cleared first), however long.
    pub fn read_into(&self, buf: &mut Vec<u8>) -> io::Result<()> {
        match &self.text {
            KeptText::Held(b) => {
                buf.clear();
                buf.extend_from_slice(b);
                Ok(())
            }
            KeptText::Place(file, span) => Entry::in_file(file, *span, None).read_into(buf),
        }
    }
}
