//! Reading and parsing a sweep's lockfiles, on a second core when there
//! are many.
//!
//! Opening, reading and parsing ten thousand small files is most of a
//! sweep, and each file is independent of the others; only the verdict
//! needs the shared classifier (its `/proc` cache), so that stays on the
//! caller's thread, in key order. The files are handed out in small chunks
//! from one counter rather than split in halves up front: on a busy machine
//! the helper may not run at all, and then the caller simply reads every
//! chunk itself, waiting at most for the one chunk the helper holds.

use super::dir_listing::DirListing;
use super::record::{parse_lockfile_bytes, read_listed_at, read_lockfile_bytes};
use super::{ClaimRecord, ReadError};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One lockfile the listing found, before it is read.
pub(super) struct Listed {
    pub key: String,
    pub path: PathBuf,
    /// Where the file's name starts in `path` (it is opened by name,
    /// relative to the listing).
    pub name_at: usize,
    /// The listing's `d_type` said "regular file" (its read needs no `fstat`).
    pub regular: bool,
    /// The name is the canonical encoding of `key`.
    pub canonical: bool,
}

pub(super) type Read = Result<ClaimRecord, ReadError>;

/// Files per hand-out: small enough that the caller never waits long for
/// a descheduled helper, large enough that the counter is not contended.
const CHUNK: usize = 64;
/// Below this many files a helper thread costs more than it saves.
const PARALLEL_FROM: usize = 1024;
/// More helpers than this only queue on the directory's locks.
const MAX_HELPERS: usize = 3;

/// Every listed file read and parsed, handed to `judge` in the order
/// listed. One thread hands each over as soon as it is read; with helpers,
/// each chunk's reads are handed over (and their memory freed for the
/// items `judge` builds) once every reader is done.
pub(super) fn read_each(dir: &DirListing, files: Vec<Listed>, judge: impl FnMut(Listed, Read)) {
    let helpers = if files.len() >= PARALLEL_FROM {
        helper_count()
    } else {
        0
    };
    read_each_with(dir, files, helpers, judge)
}

/// [`read_each`] with a given number of helper threads.
fn read_each_with(
    dir: &DirListing,
    files: Vec<Listed>,
    helpers: usize,
    mut judge: impl FnMut(Listed, Read),
) {
    let mut buf = Vec::new();
    if helpers == 0 {
        for l in files {
            let read = read_one(dir, &l, &mut buf);
            judge(l, read);
        }
        return;
    }
    let chunks: Vec<&[Listed]> = files.chunks(CHUNK).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        let mut buf = Vec::new();
        let mut done: Vec<(usize, Vec<Read>)> = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(chunk) = chunks.get(i) else { break };
            done.push((
                i,
                chunk.iter().map(|l| read_one(dir, l, &mut buf)).collect(),
            ));
        }
        done
    };
    let mut slots: Vec<Option<Vec<Read>>> = (0..chunks.len()).map(|_| None).collect();
    std::thread::scope(|s| {
        // A helper that cannot be started (thread limit) is simply not
        // there: the caller reads its share.
        let started: Vec<_> = (0..helpers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("sweep-read".into())
                    .spawn_scoped(s, work)
                    .ok()
            })
            .collect();
        let mut place = |done: Vec<(usize, Vec<Read>)>| {
            for (i, reads) in done {
                slots[i] = Some(reads);
            }
        };
        place(work());
        for h in started {
            match h.join() {
                Ok(done) => place(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    drop(chunks);
    let mut files = files.into_iter();
    for slot in slots {
        let chunk: Vec<Listed> = files.by_ref().take(CHUNK).collect();
        // Every chunk was taken by exactly one reader; should one ever be
        // missing, it is read here rather than shifting keys against records.
        let reads =
            slot.unwrap_or_else(|| chunk.iter().map(|l| read_one(dir, l, &mut buf)).collect());
        for (l, read) in chunk.into_iter().zip(reads) {
            judge(l, read);
        }
    }
}

/// One file: read through the listing's descriptor, then parsed.
fn read_one(dir: &DirListing, l: &Listed, buf: &mut Vec<u8>) -> Read {
    let read = if l.regular {
        let name = l.path.as_os_str().as_encoded_bytes();
        read_listed_at(dir, &name[l.name_at..], &l.path, buf)
    } else {
        read_lockfile_bytes(&l.path).map(|bytes| *buf = bytes)
    };
    read.and_then(|()| parse_lockfile_bytes(buf))
}

/// Helpers besides the calling thread: one fewer than the cores this
/// process may run on, capped.
fn helper_count() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get().saturating_sub(1).min(MAX_HELPERS))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{ClaimRecord, SCHEMA_VERSION};

    fn record(key: &str, pid: i32) -> ClaimRecord {
        ClaimRecord {
            schema_version: SCHEMA_VERSION,
            key: key.into(),
            holder: format!("pty:{pid}"),
            acquired_at: 1_700_000_000_000 + i64::from(pid),
            pid,
            host: "h".into(),
            expires_at: (pid % 3 == 0).then_some(1_800_000_000_000),
            reason: (pid % 5 == 0).then(|| "long ".repeat(300)),
            harness: None,
            machine_id: Some("m".into()),
            metadata: Default::default(),
        }
    }

    /// A claims dir of `n` lockfiles of every shape a sweep meets: good
    /// records, large ones (past the one-read size), garbage, empty files,
    /// directories and FIFOs named `*.lock`, symlinks; listed as the sweep
    /// lists, in key order.
    fn mixed_dir(n: usize) -> (tempfile::TempDir, Vec<Listed>) {
        let td = tempfile::tempdir().unwrap();
        let dir = td.path();
        for i in 0..n {
            let name = format!("k{i:05}.lock");
            let path = dir.join(&name);
            match i % 9 {
                0 => std::fs::write(&path, b"{not: [yaml").unwrap(),
                1 => std::fs::write(&path, b"").unwrap(),
                2 => std::fs::create_dir(&path).unwrap(),
                3 => std::os::unix::fs::symlink(dir.join("k00000.lock"), &path).unwrap(),
                4 => {
                    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
                    // SAFETY: c is a valid NUL-terminated path.
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
                }
                _ => {
                    let rec = record(&format!("k{i:05}"), i as i32);
                    std::fs::write(&path, rec.to_yaml().unwrap()).unwrap();
                }
            }
        }
        let mut listing = DirListing::open(dir).unwrap();
        let mut files = Vec::new();
        while let Some(e) = listing.next_entry() {
            let e = e.unwrap();
            let name = std::str::from_utf8(e.name.to_bytes()).unwrap().to_string();
            let path = dir.join(&name);
            files.push(Listed {
                key: name.trim_end_matches(".lock").to_string(),
                name_at: path.as_os_str().len() - name.len(),
                path,
                regular: e.regular,
                canonical: true,
            });
        }
        files.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        (td, files)
    }

    fn verdict(r: &Read) -> String {
        match r {
            Ok(rec) => format!("ok {}", rec.key),
            Err(e) => format!("err {e:?}"),
        }
    }

    /// (key, verdict) of every file, in the order handed over.
    fn read_with(
        dir: &DirListing,
        files: Vec<Listed>,
        helpers: Option<usize>,
    ) -> Vec<(String, String)> {
        let mut got = Vec::new();
        let judge = |l: Listed, r: Read| got.push((l.key, verdict(&r)));
        match helpers {
            Some(h) => read_each_with(dir, files, h, judge),
            None => read_each(dir, files, judge),
        }
        got
    }

    #[test]
    fn helpers_read_exactly_what_one_thread_reads_in_the_same_order() {
        let (td, files) = mixed_dir(2_000);
        let dir = DirListing::open(td.path()).unwrap();
        let keys: Vec<String> = files.iter().map(|l| l.key.clone()).collect();
        // The path-based reader, file by file, is the reference.
        let by_path: Vec<(String, String)> = files
            .iter()
            .map(|l| {
                (
                    l.key.clone(),
                    verdict(&crate::claims::record::read_claim_file(&l.path)),
                )
            })
            .collect();
        let one = read_with(&dir, files, Some(0));
        assert_eq!(one, by_path);
        // Each record was handed over beside its own key, and every shape
        // was met.
        for (k, v) in &one {
            if let Some(rk) = v.strip_prefix("ok ") {
                assert_eq!(rk, k);
            }
        }
        for shape in [
            "ok ",
            "a directory",
            "a symlink",
            "not a regular file",
            "parse",
        ] {
            assert!(
                one.iter().any(|(_, v)| v.contains(shape)),
                "no {shape:?} verdict"
            );
        }
        for helpers in [1, 3] {
            let files = relisted(&td, &keys);
            assert_eq!(read_with(&dir, files, Some(helpers)), one);
        }
    }

    /// The listing of `mixed_dir` again, in the same key order.
    fn relisted(td: &tempfile::TempDir, keys: &[String]) -> Vec<Listed> {
        keys.iter()
            .map(|k| {
                let path = td.path().join(format!("{k}.lock"));
                let regular = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
                Listed {
                    key: k.clone(),
                    name_at: path.as_os_str().len() - k.len() - ".lock".len(),
                    path,
                    regular,
                    canonical: true,
                }
            })
            .collect()
    }

    #[test]
    fn a_listing_too_short_for_helpers_reads_on_the_caller() {
        let (td, files) = mixed_dir(50);
        assert!(files.len() < PARALLEL_FROM);
        let keys: Vec<String> = files.iter().map(|l| l.key.clone()).collect();
        let dir = DirListing::open(td.path()).unwrap();
        assert_eq!(
            read_with(&dir, files, None),
            read_with(&dir, relisted(&td, &keys), Some(2))
        );
    }
}
