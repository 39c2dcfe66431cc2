//! Reading the audit log back: the last N lines without reading the whole
//! file, in bounded memory, and the pieces the follower
//! ([`super::follow`]) shares: lines cut to a cap, the file's identity,
//! opening only a regular file.
//!
//! The log is written by other processes, so everything here treats it as
//! untrusted: any bytes, any line length, a FIFO or directory at the path.
//! Lines come back raw (lossy UTF-8); escaping for a terminal is the job of
//! [`crate::sanitize`].

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::claim_event::{with_claim_event_bytes, OwnedClaimEvent};
use super::event::{parse_event, Event};

/// Longest line content kept in memory; the rest of a longer line is skipped
/// and the [`Line`] is flagged `truncated`.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Most bytes one [`super::follow::Follower::poll`] consumes, so a burst (or following a
/// huge file from the start) is spread over several polls instead of
/// stalling a UI frame or allocating without bound.
pub const MAX_POLL_BYTES: u64 = 8 * 1024 * 1024;

/// Most lines one poll returns: 8 MiB of bare `\n` would otherwise be
/// millions of `Line` structs, far more memory than the bytes themselves.
pub const MAX_POLL_LINES: usize = 100_000;

/// Unit of the backwards scan in [`read_last_lines`].
pub(crate) const BLOCK_SIZE: usize = 64 * 1024;

/// The backwards scan gives up on a line once this much of it has been read
/// without finding its start, so one absurd line (or a sparse hole of zeros)
/// cannot make opening the dashboard read gigabytes. Lines are cut to
/// [`MAX_LINE_BYTES`] anyway; only the start of such a line is unknowable.
pub(crate) const LINE_SCAN_BUDGET: u64 = 32 * 1024 * 1024;

/// How often the backwards read restarts when the file shrinks under it.
const SHRINK_RETRIES: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum TailError {
    #[error("{}: not a regular file (it is a {kind})", path.display())]
    NotRegularFile { path: PathBuf, kind: &'static str },
    #[error("{}: permission denied", path.display())]
    PermissionDenied { path: PathBuf },
    #[error("{}: {op}: {source}", path.display())]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: io::Error,
    },
}

impl TailError {
    pub(crate) fn io(path: &Path, op: &'static str, source: io::Error) -> Self {
        if source.kind() == io::ErrorKind::PermissionDenied {
            TailError::PermissionDenied {
                path: path.to_path_buf(),
            }
        } else {
            TailError::Io {
                path: path.to_path_buf(),
                op,
                source,
            }
        }
    }
}

/// Which file we are reading: a rename-and-recreate keeps the path but not
/// this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    pub(crate) fn of(meta: &Metadata) -> Self {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }
}

/// One complete line of the log, without its `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Lossy UTF-8 of the line's bytes (at most [`MAX_LINE_BYTES`] of them).
    pub text: String,
    /// Byte offset of the line's first byte in its file.
    pub offset: u64,
    /// The line was longer than [`MAX_LINE_BYTES`]; `text` is its prefix.
    pub truncated: bool,
    /// For a `truncated` line, the claim event read from the whole line,
    /// when its reader fetched it ([`super::follow::Follower::read_claims`]):
    /// the cut text no longer holds the fields a tenure is made of.
    pub claim: Option<Box<OwnedClaimEvent>>,
}

impl Line {
    /// A line held whole in memory (a store's value) as the readers keep
    /// it: cut to [`MAX_LINE_BYTES`], with its claim fields when cut.
    pub fn of_bytes(bytes: &[u8], offset: u64) -> Line {
        let truncated = bytes.len() > MAX_LINE_BYTES;
        let claim = truncated
            .then(|| with_claim_event_bytes(bytes, |e| Box::new(e.to_owned_event())))
            .flatten();
        Line {
            text: String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_LINE_BYTES)]).into_owned(),
            offset,
            truncated,
            claim,
        }
    }

    pub fn parse(&self) -> Result<Event, String> {
        parse_event(&self.text)
    }
}

/// Result of [`read_last_lines`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TailChunk {
    /// Oldest first.
    pub lines: Vec<Line>,
    /// Where a follower continues: just past the last `\n` (a trailing
    /// partial line is not included). 0 for a missing file.
    pub offset: u64,
    /// File length when it was read, including any partial line.
    pub file_len: u64,
    /// `None` when the file does not exist.
    pub file_id: Option<FileId>,
    /// No `\n` was found within the scan budget, so `offset` is inside a line
    /// whose start was never seen; a reader continuing from `offset` must
    /// skip through the next `\n`.
    pub starts_mid_line: bool,
}

/// Return the last `n` complete lines of `path`, reading backwards from the
/// end in blocks. A missing file is empty, not an error.
pub fn read_last_lines(path: &Path, n: usize) -> Result<TailChunk, TailError> {
    match open_regular(path)? {
        None => Ok(TailChunk::default()),
        Some((file, id)) => tail_of(&file, path, id, n, BLOCK_SIZE, LINE_SCAN_BUDGET),
    }
}

/// Open `path` for reading without ever blocking, and insist it is a regular
/// file. `Ok(None)` when it does not exist.
pub fn open_regular(path: &Path) -> Result<Option<(File, FileId)>, TailError> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
    // forever; we reject it right after, via fstat on what we actually opened.
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(TailError::io(path, "open", e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| TailError::io(path, "stat", e))?;
    check_regular(path, &meta)?;
    Ok(Some((file, FileId::of(&meta))))
}

fn check_regular(path: &Path, meta: &Metadata) -> Result<(), TailError> {
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(());
    }
    let kind = if ft.is_dir() {
        "directory"
    } else if ft.is_fifo() {
        "FIFO"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_char_device() {
        "character device"
    } else if ft.is_block_device() {
        "block device"
    } else {
        "special file"
    };
    Err(TailError::NotRegularFile {
        path: path.to_path_buf(),
        kind,
    })
}

/// `pread` until `buf` is full or EOF; returns bytes read.
pub(crate) fn read_full_at(file: &File, buf: &mut [u8], mut at: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], at) {
            Ok(0) => break,
            Ok(k) => {
                got += k;
                at += k as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

pub(crate) fn shrank(path: &Path) -> TailError {
    TailError::io(
        path,
        "read",
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "file kept shrinking while being read",
        ),
    )
}

pub(crate) fn tail_of(
    file: &File,
    path: &Path,
    id: FileId,
    n: usize,
    block: usize,
    budget: u64,
) -> Result<TailChunk, TailError> {
    // A concurrent truncation makes a read come up short; the only sane
    // answer is to look at the file again from its new end.
    for _ in 0..SHRINK_RETRIES {
        let len = file
            .metadata()
            .map_err(|e| TailError::io(path, "stat", e))?
            .len();
        if let Some(chunk) = tail_attempt(file, path, id, len, n, block, budget)? {
            return Ok(chunk);
        }
    }
    Err(shrank(path))
}

/// One backwards scan at a fixed `len`; `Ok(None)` if the file shrank.
pub(crate) fn tail_attempt(
    file: &File,
    path: &Path,
    id: FileId,
    len: u64,
    n: usize,
    block: usize,
    budget: u64,
) -> Result<Option<TailChunk>, TailError> {
    let block = block.max(1);
    // The last `\n` ends the last complete line; the (n+1)-th from the end
    // ends the line just before the ones we want.
    let wanted_newlines = n.saturating_add(1);
    let mut seen = 0usize;
    let mut end: Option<u64> = None;
    let mut earliest_start: Option<u64> = None;
    let mut start: Option<u64> = None;
    let mut buf = vec![0u8; block.min(usize::try_from(len).unwrap_or(usize::MAX)).max(1)];
    let mut pos = len;
    // The budget bounds each line, not the whole scan: a large `n` of normal
    // lines costs time in proportion to what was asked for, but one endless
    // line costs at most the budget.
    let floor_for = |earliest: Option<u64>| earliest.map_or(len, |s| s - 1).saturating_sub(budget);
    'scan: while pos > floor_for(earliest_start) {
        let lo = pos
            .saturating_sub(block as u64)
            .max(floor_for(earliest_start));
        let want = (pos - lo) as usize;
        let chunk = &mut buf[..want];
        let got = read_full_at(file, chunk, lo).map_err(|e| TailError::io(path, "read", e))?;
        if got < want {
            return Ok(None);
        }
        let mut upto = want;
        while let Some(i) = chunk[..upto].iter().rposition(|&b| b == b'\n') {
            let after = lo + i as u64 + 1;
            seen += 1;
            if end.is_none() {
                end = Some(after);
            }
            if seen == wanted_newlines {
                start = Some(after);
                break 'scan;
            }
            earliest_start = Some(after);
            upto = i;
        }
        pos = lo;
    }
    let gave_up = start.is_none() && pos > 0;

    let Some(end) = end else {
        // No complete line at all: either an empty/partial-only file, or a
        // single trailing line longer than the budget.
        return Ok(Some(TailChunk {
            lines: Vec::new(),
            offset: if gave_up { len } else { 0 },
            file_len: len,
            file_id: Some(id),
            starts_mid_line: gave_up,
        }));
    };
    let start = match start {
        Some(s) => s,
        // Budget ran out inside a line: keep only lines whose start we saw.
        None if gave_up => earliest_start.unwrap_or(end),
        None => 0,
    };

    let mut lines = Vec::with_capacity(seen.min(n));
    let mut asm = LineAssembler::default();
    let mut at = start;
    while at < end {
        let want = ((end - at) as usize).min(buf.len());
        let got =
            read_full_at(file, &mut buf[..want], at).map_err(|e| TailError::io(path, "read", e))?;
        if got < want {
            return Ok(None);
        }
        asm.feed(&buf[..got], at, &mut lines, usize::MAX);
        at += got as u64;
    }
    Ok(Some(TailChunk {
        lines,
        offset: end,
        file_len: len,
        file_id: Some(id),
        starts_mid_line: false,
    }))
}

/// Splits a byte stream into capped [`Line`]s, carrying a partial line
/// across calls.
#[derive(Debug, Default)]
pub(crate) struct LineAssembler {
    buf: Vec<u8>,
    /// Offset of the partial line's first byte, once one has begun.
    start: Option<u64>,
    /// Bytes of the partial line seen so far, kept or not.
    seen: u64,
    /// Skipping the rest of a line whose start we never saw.
    pub(crate) discarding: bool,
}

impl LineAssembler {
    /// Feed `bytes` (found at file offset `at`), pushing completed lines to
    /// `out` until it holds `max_lines`. Returns how many bytes were consumed,
    /// which is less than `bytes.len()` only when the line cap was hit.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        at: u64,
        out: &mut Vec<Line>,
        max_lines: usize,
    ) -> usize {
        let mut i = 0;
        while i < bytes.len() {
            if out.len() >= max_lines {
                return i;
            }
            let rest = &bytes[i..];
            match rest.iter().position(|&b| b == b'\n') {
                Some(nl) => {
                    if self.discarding {
                        self.discarding = false;
                    } else {
                        self.push(&rest[..nl], at + i as u64);
                        out.push(self.take());
                    }
                    i += nl + 1;
                }
                None => {
                    if !self.discarding {
                        self.push(rest, at + i as u64);
                    }
                    return bytes.len();
                }
            }
        }
        bytes.len()
    }

    /// Bytes of the partial line held so far (not yet ended by a `\n`).
    pub(crate) fn pending(&self) -> u64 {
        self.seen
    }

    fn push(&mut self, seg: &[u8], seg_at: u64) {
        self.start.get_or_insert(seg_at);
        let room = MAX_LINE_BYTES.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&seg[..seg.len().min(room)]);
        self.seen += seg.len() as u64;
    }

    fn take(&mut self) -> Line {
        let truncated = self.seen > MAX_LINE_BYTES as u64;
        let mut bytes = std::mem::take(&mut self.buf);
        if truncated {
            // Cutting at the cap may split a character; drop the fragment
            // rather than show a spurious U+FFFD at the end.
            if let Err(e) = std::str::from_utf8(&bytes) {
                if e.error_len().is_none() {
                    bytes.truncate(e.valid_up_to());
                }
            }
        }
        let text = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        let offset = self.start.take().unwrap_or(0);
        self.seen = 0;
        Line {
            text,
            offset,
            truncated,
            claim: None,
        }
    }

    pub(crate) fn reset(&mut self) {
        *self = LineAssembler::default();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().expect("tempfile");
        f.write_all(bytes).expect("write");
        f.flush().expect("flush");
        f
    }

    /// The obvious whole-file implementation the block reader must agree with.
    pub(crate) fn model_last(bytes: &[u8], n: usize) -> (Vec<(String, u64, bool)>, u64) {
        let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, &b) in bytes[..end].iter().enumerate() {
            if b == b'\n' {
                let raw = &bytes[start..i];
                let truncated = raw.len() > MAX_LINE_BYTES;
                let mut kept = raw[..raw.len().min(MAX_LINE_BYTES)].to_vec();
                if truncated {
                    if let Err(e) = std::str::from_utf8(&kept) {
                        if e.error_len().is_none() {
                            kept.truncate(e.valid_up_to());
                        }
                    }
                }
                lines.push((
                    String::from_utf8_lossy(&kept).into_owned(),
                    start as u64,
                    truncated,
                ));
                start = i + 1;
            }
        }
        let skip = lines.len().saturating_sub(n);
        (lines.split_off(skip), end as u64)
    }

    fn tail_with_block(bytes: &[u8], n: usize, block: usize) -> TailChunk {
        let f = file_with(bytes);
        let file = f.reopen().expect("reopen");
        let id = FileId::of(&file.metadata().expect("meta"));
        tail_of(&file, f.path(), id, n, block, LINE_SCAN_BUDGET).expect("tail")
    }

    pub(crate) fn as_tuples(lines: &[Line]) -> Vec<(String, u64, bool)> {
        lines
            .iter()
            .map(|l| (l.text.clone(), l.offset, l.truncated))
            .collect()
    }

    #[test]
    fn tiny_blocks_split_lines_anywhere_and_still_agree_with_whole_file_read() {
        let bytes = b"alpha\nbeta\n\ngamma delta\nepsilon\npartial";
        for block in 1..=12 {
            for n in 0..8 {
                let chunk = tail_with_block(bytes, n, block);
                let (want, end) = model_last(bytes, n);
                assert_eq!(as_tuples(&chunk.lines), want, "block {block} n {n}");
                assert_eq!(chunk.offset, end);
                assert_eq!(chunk.file_len, bytes.len() as u64);
            }
        }
    }

    #[test]
    fn a_line_longer_than_the_scan_budget_is_dropped_and_the_follower_resyncs() {
        let mut bytes = b"early\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', 100));
        let f = file_with(&bytes);
        let file = f.reopen().expect("reopen");
        let id = FileId::of(&file.metadata().expect("meta"));
        let chunk = tail_of(&file, f.path(), id, 5, 16, 50).expect("tail");
        assert!(chunk.lines.is_empty());
        assert!(chunk.starts_mid_line);
        assert_eq!(chunk.offset, bytes.len() as u64);
    }

    #[test]
    fn budget_exhaustion_keeps_only_lines_whose_start_was_seen() {
        let mut bytes = std::iter::repeat_n(b'y', 200).collect::<Vec<u8>>();
        bytes.extend_from_slice(b"\none\ntwo\n");
        let f = file_with(&bytes);
        let file = f.reopen().expect("reopen");
        let id = FileId::of(&file.metadata().expect("meta"));
        let chunk = tail_of(&file, f.path(), id, 10, 16, 64).expect("tail");
        let texts: Vec<_> = chunk.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["one", "two"]);
        assert!(!chunk.starts_mid_line);
    }

    #[test]
    fn assembler_stops_at_the_line_cap_and_reports_bytes_consumed() {
        let mut asm = LineAssembler::default();
        let mut out = Vec::new();
        let used = asm.feed(b"a\nb\nc\n", 0, &mut out, 2);
        assert_eq!(used, 4);
        assert_eq!(out.len(), 2);
        let used = asm.feed(b"c\n", 4, &mut out, 3);
        assert_eq!(used, 2);
        assert_eq!(out[2].text, "c");
        assert_eq!(out[2].offset, 4);
    }

    #[test]
    fn a_value_longer_than_the_cap_is_cut_and_keeps_its_claim_fields() {
        let long = format!(
            r#"{{"ts":"2026-12-01T05:00:00Z","type":"claim_acquired","data":{{"reason":"{}","key":"k","holder":"h","acquired_at":7}}}}"#,
            "r".repeat(MAX_LINE_BYTES)
        );
        let line = Line::of_bytes(long.as_bytes(), 9);
        assert!(line.truncated);
        assert_eq!(line.text.len(), MAX_LINE_BYTES);
        let claim = line.claim.expect("the claim fields");
        assert_eq!((claim.key.as_str(), claim.at), ("k", 7));
        let short = Line::of_bytes(b"{}", 0);
        assert!(!short.truncated && short.claim.is_none());
    }

    #[test]
    fn a_line_of_exactly_the_cap_is_whole_and_one_byte_more_is_truncated() {
        let mut raw = vec![b'a'; MAX_LINE_BYTES];
        raw.push(b'\n');
        raw.extend(vec![b'b'; MAX_LINE_BYTES + 1]);
        raw.push(b'\n');
        let mut asm = LineAssembler::default();
        let mut out = Vec::new();
        asm.feed(&raw, 0, &mut out, usize::MAX);
        assert!(!out[0].truncated);
        assert!(out[1].truncated);
        assert_eq!(out[1].text.len(), MAX_LINE_BYTES);
        assert_eq!(out[1].offset, MAX_LINE_BYTES as u64 + 1);
    }

    #[test]
    fn a_truncated_line_does_not_end_in_a_split_character() {
        let mut raw = vec![b'a'; MAX_LINE_BYTES - 1];
        raw.extend_from_slice("é and more".as_bytes());
        raw.push(b'\n');
        let mut asm = LineAssembler::default();
        let mut out = Vec::new();
        asm.feed(&raw, 0, &mut out, usize::MAX);
        assert!(out[0].truncated);
        assert_eq!(out[0].text.len(), MAX_LINE_BYTES - 1);
        assert!(!out[0].text.contains('\u{fffd}'));
    }

    proptest! {
        #[test]
        fn block_reader_agrees_with_whole_file_read_for_any_bytes(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'a'), Just(0xffu8), any::<u8>()], 0..300),
            n in 0usize..20,
            block in 1usize..40,
        ) {
            let chunk = tail_with_block(&bytes, n, block);
            let (want, end) = model_last(&bytes, n);
            prop_assert_eq!(as_tuples(&chunk.lines), want);
            prop_assert_eq!(chunk.offset, end);
        }

    }
}
