//! Listing every lockfile under a root, and the hazards doctor reports.

use super::atomic::{CREATE_TMP_PREFIX, REPLACE_TMP_INFIX};
use super::census::{census, own_hazards, ItemRules};
use super::dir_listing::DirListing;
use super::entry::{hazard_now, Entry, Oddity, Role, Shape};
use super::liveness::Classifier;
use super::stamp::{self, Held, Split, Stamp};
use super::sweep_read::{judge_each, sort_by_key, Listed};
use super::{decode_key, mutex, now_ms, ClaimState, RECOVERY_SUFFIX};
use super::{Root, Status};
use serde::Serialize;
use std::ffi::OsStr;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::hazard;
pub use super::hazard::{Hazard, HazardKind, TEMP_ABANDONED_AFTER};

pub type SweepItem = Status;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub live: usize,
    pub suspect: usize,
    pub stale: usize,
    pub corrupted: usize,
    /// Claims that cannot be read here (permission, size, parse cost).
    pub unreadable: usize,
    /// Copies an offline host last published: neither live nor free, since
    /// nobody can vouch for them. Only a fleet has any, so a listing
    /// without prints exactly what it always did.
    #[serde(skip_serializing_if = "is_zero")]
    pub last_known: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Counts {
    /// Every claim listed, whatever its state: an unreadable one is held as
    /// far as anyone can tell, so it is never left out of a total.
    pub fn total(&self) -> usize {
        self.live + self.suspect + self.stale + self.corrupted + self.unreadable + self.last_known
    }

    pub fn add(&mut self, s: ClaimState) {
        match s {
            ClaimState::Live => self.live += 1,
            ClaimState::Suspect => self.suspect += 1,
            ClaimState::Stale => self.stale += 1,
            ClaimState::Corrupted => self.corrupted += 1,
            ClaimState::Unreadable => self.unreadable += 1,
            ClaimState::LastKnown => self.last_known += 1,
            ClaimState::Free => {}
        }
    }

    pub fn remove(&mut self, s: ClaimState) {
        let n = match s {
            ClaimState::Live => &mut self.live,
            ClaimState::Suspect => &mut self.suspect,
            ClaimState::Stale => &mut self.stale,
            ClaimState::Corrupted => &mut self.corrupted,
            ClaimState::Unreadable => &mut self.unreadable,
            ClaimState::LastKnown => &mut self.last_known,
            ClaimState::Free => return,
        };
        *n = n.saturating_sub(1);
    }
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.live += o.live;
        self.suspect += o.suspect;
        self.stale += o.stale;
        self.corrupted += o.corrupted;
        self.unreadable += o.unreadable;
        self.last_known += o.last_known;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    #[serde(serialize_with = "super::lossy_path")]
    pub root: PathBuf,
    #[serde(serialize_with = "super::census::judged_lockfiles")]
    pub claims: Vec<SweepItem>,
    pub counts: Counts,
    pub hazards: Vec<Hazard>,
}

/// What a directory entry of the claims dir is, by name alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Lockfile,
    RecoveryMutex,
    Temp,
    Other,
}

pub fn entry_kind(name: &OsStr) -> EntryKind {
    let b = name.as_bytes();
    if b.ends_with(b".lock") {
        EntryKind::Lockfile
    } else if b.ends_with(RECOVERY_SUFFIX.as_bytes()) {
        EntryKind::RecoveryMutex
    } else if b.starts_with(CREATE_TMP_PREFIX.as_bytes())
        || contains(b, REPLACE_TMP_INFIX.as_bytes())
        || contains(b, b".reap.")
    {
        EntryKind::Temp
    } else {
        EntryKind::Other
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The key a lockfile name stands for, if the name is one.
pub fn key_of_lockfile(name: &OsStr) -> Option<String> {
    let s = name.to_str()?;
    s.strip_suffix(".lock").map(decode_key)
}

/// Classify every `*.lock` under the root and collect hazards.
///
/// One read per lockfile and one `/proc` probe per distinct pid. Nothing in
/// the directory aborts the sweep: an unreadable claims dir is a hazard, a bad
/// file is a Corrupted item.
pub fn sweep(root: &Root) -> Sweep {
    let mut c = Classifier::new(now_ms());
    sweep_with(root, &mut c)
}

/// [`sweep`] with a caller's classifier (the dashboard keeps one per tick).
///
/// The files are read, parsed and judged on every core the process may use
/// (see `sweep_read`), with `c`'s pid facts shared among them; the
/// items come out in key order.
pub fn sweep_with(root: &Root, c: &mut Classifier) -> Sweep {
    sweep_held(root, c, None).sweep
}

/// A sweep of the lockfiles the caller does not hold as they are now.
#[derive(Debug)]
pub struct HeldSweep {
    /// The lockfiles read (and only their hazards and counts).
    pub sweep: Sweep,
    /// Parallel to `sweep.claims`, each one's stamp as it was read (None:
    /// no stamp, read it again next time); empty without a `held`.
    pub stamps: Vec<Option<Stamp>>,
    /// The lockfiles whose stamp is the one `held` has: not read.
    pub kept: Vec<PathBuf>,
}

/// [`sweep_with`], where the caller holds what it read before: a lockfile
/// whose stamp is the one `held` gives for it is not read but named in
/// `kept` (see [`super::stamp`]). Every other entry is looked at as ever.
pub fn sweep_held(root: &Root, c: &mut Classifier, held: Option<Held>) -> HeldSweep {
    sweep_some(root, c, None, held).unwrap_or_else(|| HeldSweep {
        sweep: Sweep {
            root: root.root.clone(),
            claims: Vec::new(),
            counts: Counts::default(),
            hazards: Vec::new(),
        },
        stamps: Vec::new(),
        kept: Vec::new(),
    })
}

/// The first `n` lockfiles in key order, judged, with the hazards found on
/// the way: a big root's first screen, read in a fraction of a sweep
/// (every name is listed and sorted, only `n` files are read). None when
/// the root holds no more than `n`: the whole sweep costs no more.
pub fn sweep_head(root: &Root, n: usize) -> Option<Sweep> {
    sweep_head_with(root, n, &mut Classifier::new(now_ms()))
}

/// [`sweep_head`] with a caller's classifier.
pub fn sweep_head_with(root: &Root, n: usize, c: &mut Classifier) -> Option<Sweep> {
    sweep_some(root, c, Some(n), None).map(|h| h.sweep)
}

/// A sweep, or (with `head`) its first `head` lockfiles when there are more.
fn sweep_some(
    root: &Root,
    c: &mut Classifier,
    head: Option<usize>,
    held: Option<Held>,
) -> Option<HeldSweep> {
    let done = |sweep| HeldSweep {
        sweep,
        stamps: Vec::new(),
        kept: Vec::new(),
    };
    let dir = root.claims_dir();
    let mut out = Sweep {
        root: root.root.clone(),
        claims: Vec::new(),
        counts: Counts::default(),
        hazards: Vec::new(),
    };
    let mut listing = match DirListing::open(&dir) {
        Ok(l) => l,
        // Nothing claimed yet: a normal, empty root, unless the root
        // itself is missing.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound) => {
            if let Some(h) = root_missing(root) {
                out.hazards.push(h);
            }
            events_hazards(root, &mut out.hazards);
            return head.is_none().then(|| done(out));
        }
        Err(e) => {
            out.hazards.push(Hazard::at_path(
                hazard::UNREADABLE,
                dir,
                format!("claims dir cannot be listed: {e}"),
            ));
            return head.is_none().then(|| done(out));
        }
    };
    // Names first, items after: sorting the (key, path) pairs is cheap where
    // sorting finished items (hundreds of bytes each) is not, and reading in
    // key order tends to follow creation (inode) order.
    let mut lockfiles: Vec<Listed> = Vec::new();
    let dir_len = dir.as_os_str().len();
    while let Some(entry) = listing.next_entry() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.hazards.push(Hazard::at_path(
                    hazard::UNREADABLE,
                    dir.clone(),
                    format!("listing interrupted: {e}"),
                ));
                break;
            }
        };
        let name = OsStr::from_bytes(entry.name.to_bytes());
        // One allocation, sized once: the dir, a slash, the name.
        let mut path = PathBuf::with_capacity(dir_len + 1 + name.len());
        path.push(&dir);
        path.push(name);
        match entry_kind(name) {
            EntryKind::Lockfile => match name.to_str().and_then(|n| n.strip_suffix(".lock")) {
                Some(stem) => {
                    let key = decode_key(stem);
                    let name_at = path.as_os_str().len() - name.len();
                    lockfiles.push(Listed {
                        key,
                        path,
                        name_at,
                        regular: entry.regular,
                    })
                }
                None => out.hazards.extend(entry_hazard(&path)),
            },
            EntryKind::RecoveryMutex | EntryKind::Temp => {
                if let Some(h) = entry_hazard(&path) {
                    out.hazards.push(h);
                }
            }
            EntryKind::Other => {}
        }
    }
    archive_dir_hazard(&dir, &mut out.hazards);
    sort_by_key(&mut lockfiles);
    if let Some(n) = head {
        if lockfiles.len() <= n {
            return None;
        }
        lockfiles.truncate(n);
    }
    let Split {
        read: lockfiles,
        stamps: listed_stamps,
        kept,
    } = stamp::split(&listing, lockfiles, held, now_ms());
    out.claims.reserve_exact(lockfiles.len());
    let mut stamps = Vec::with_capacity(listed_stamps.len());
    let mut listed_stamps = listed_stamps.into_iter();
    let judge = |l: Listed, read, c: &mut Classifier| Status::judged(l.key, l.path, c, read);
    judge_each(&listing, lockfiles, c, judge, |item| {
        let stamp = listed_stamps.next().flatten();
        if item.state != ClaimState::Free {
            out.claims.push(item);
            if held.is_some() {
                stamps.push(stamp);
            }
        }
    });
    drop(listing);
    events_hazards(root, &mut out.hazards);
    // Counted and joined by the one census every face counts through.
    let entries = std::mem::take(&mut out.hazards);
    let all = census(&out.claims, entries, |_| ItemRules::Lockfile);
    out.counts = all.counts;
    out.hazards = all.hazards;
    Some(HeldSweep {
        sweep: out,
        stamps,
        kept,
    })
}

/// Bring a sweep's hazard list up to date after one lockfile changed:
/// the hazards at `file` are replaced by those `now` stands for (none once
/// it is gone), in the place a fresh sweep would put them. A publisher
/// that re-reads one changed key keeps its hazards current this way
/// without sweeping the root again.
pub fn patch_item_hazards(hazards: &mut Vec<Hazard>, file: &Path, now: Option<&SweepItem>) {
    // Every hazard at a lockfile's path is that claim's own: a mutex,
    // temp file or archive dir has a path of its own.
    hazards.retain(|h| h.path() != file);
    let mut fresh = Vec::new();
    if let Some(item) = now.filter(|i| i.state != ClaimState::Free) {
        item_hazards(item, &mut fresh);
    }
    // A sweep sorts by path, stably: one path's hazards stay in the order
    // they were found.
    let at = hazards.partition_point(|h| h.path() < file);
    hazards.splice(at..at, fresh);
}

/// Hazards one classified lockfile stands for (see [`own_hazards`]).
pub fn item_hazards(item: &SweepItem, hazards: &mut Vec<Hazard>) {
    own_hazards(item, ItemRules::Lockfile, hazards)
}

/// The entry a change at `path` stands for besides itself: a reaped mutex
/// (`<mutex>.reap.<pid>.<seq>`) is the mutex it was renamed from. A
/// debounced watcher may hear nothing else of a stolen corpse: the rename
/// away, a fresh mkdir and its rmdir fold into the reaped dir's removal
/// alone, so the mutex must be asked about again by that.
pub fn entry_behind(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.as_bytes();
    let mutex = reaped_mutex_name(name).filter(|m| is_mutex_name(m))?;
    Some(path.with_file_name(OsStr::from_bytes(mutex)))
}

/// The hazard a non-lockfile entry of the claims dir is now, if any: a
/// recovery mutex or a temp file becomes one only with age, so a watcher
/// that saw it appear asks again until it is old enough or gone.
pub fn entry_hazard(path: &Path) -> Option<Hazard> {
    hazard_now(Role::in_claims_dir(path.file_name()?)?, path)
}

/// `.expired` must be absent (made on first use) or a real directory;
/// [`super::atomic::expired_dir`] refuses anything else, so one planted
/// symlink or stray file silently stops every reclaim of a stale claim.
fn archive_dir_hazard(claims_dir: &Path, hazards: &mut Vec<Hazard>) {
    let path = claims_dir.join(super::EXPIRED_SUBDIR);
    hazards.extend(hazard_now(Role::ArchiveDir, &path));
}

/// The events log's own hazards: a mutex corpse, or a log no append can
/// reach.
fn events_hazards(root: &Root, hazards: &mut Vec<Hazard>) {
    let log = root.events_file();
    let lock = crate::events::emit::events_mutex_path(&log);
    hazards.extend(hazard_now(Role::EventsMutex, &lock));
    hazards.extend(hazard_now(Role::EventsLog, &log));
}

/// `doctor`: the hazards under a root (changes nothing).
pub fn doctor(root: &Root) -> Vec<Hazard> {
    sweep(root).hazards
}

/// [`hazard::ROOT_MISSING`], when the root directory does not exist (as
/// the process sees it: a symlink to nowhere counts as missing).
pub fn root_missing(root: &Root) -> Option<Hazard> {
    match std::fs::metadata(&root.root) {
        Err(e) if e.kind() == ErrorKind::NotFound => Some(Hazard::at_path(
            hazard::ROOT_MISSING,
            root.root.clone(),
            "the root directory does not exist (a mistyped --root?); \
             the first acquire would create it"
                .into(),
        )),
        _ => None,
    }
}

/// One hazard `doctor --fix` dealt with, or could not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fix {
    pub hazard: Hazard,
    pub fixed: bool,
    pub action: String,
}

/// Clean only what is provably abandoned: temp files past
/// [`TEMP_ABANDONED_AFTER`] and mutex corpses past the steal rule, and of
/// those only the exact names and contents the protocol writes (see
/// `Leftover`). Anything else that merely looks like them — a directory
/// under a temp name, a mutex holding more than its `owner` file, a backup
/// called `x.reap.2024` — is left for a human, and nothing is ever removed
/// recursively. Claims themselves (corrupted, foreign) are never touched
/// here: that is force-release's job, with its guards.
pub fn doctor_fix(root: &Root) -> Vec<Fix> {
    let events_mutex = crate::events::emit::events_mutex_path(&root.events_file());
    doctor(root)
        .into_iter()
        .map(|h| fix_hazard(h, &events_mutex))
        .collect()
}

/// What `doctor --fix` does with one hazard found now: the one set of rules
/// for the whole root and for a single entry ([`super::clean_one`]).
pub(super) fn fix_hazard(h: Hazard, events_mutex: &Path) -> Fix {
    let path = h.path();
    let (fixed, action) = if h.kind.cleanable() {
        match Leftover::of(path, events_mutex) {
            Ok(shape) => shape.remove(path),
            Err(why) => (false, format!("left: {why}; needs a human")),
        }
    } else if h.kind == hazard::EVENTS_LOG_BROKEN {
        fix_events_log(path)
    } else if h.kind == hazard::UNREADABLE && is_a_mutex(path, events_mutex) {
        // A young mutex with a planted owner: the age rule alone may
        // end a mutex, whoever made it.
        (
            false,
            "left: a mutex is honoured until it is 120 s old; --fix steals it then".into(),
        )
    } else {
        let what = h.kind.spec().map_or("needs a human", |s| s.fix);
        (false, format!("left: {what}"))
    };
    Fix {
        hazard: h,
        fixed,
        action,
    }
}

/// The hazard the events log's mutex is now, if any.
pub(super) fn events_mutex_hazard(events_mutex: &Path) -> Option<Hazard> {
    hazard_now(Role::EventsMutex, events_mutex)
}

fn is_a_mutex(path: &Path, events_mutex: &Path) -> bool {
    path == events_mutex
        || path
            .file_name()
            .is_some_and(|n| is_mutex_name(n.as_bytes()))
}

/// A torn last line is terminated (under the events mutex, as an append
/// would); a full file system or a log that is no regular file is a
/// human's to deal with.
fn fix_events_log(log: &Path) -> (bool, String) {
    let trouble = match Entry::look(Role::EventsLog, log) {
        Some(Entry {
            oddity: Some(Oddity::Log(t)),
            ..
        }) => t,
        Some(Entry {
            shape: Shape::File, ..
        }) => return (true, "already mended".into()),
        _ => return (false, format!("left: {}", hazard::EVENTS_LOG_BROKEN.fix)),
    };
    let budget = crate::events::emit::EVENTS_LOCK_BUDGET;
    match (trouble.torn, trouble.full) {
        (true, _) => match crate::events::emit::mend_torn_tail(log, budget) {
            Ok(_) if trouble.full => (
                true,
                "terminated the torn line; the file system is still full".into(),
            ),
            Ok(_) => (true, "terminated the torn line with a newline".into()),
            Err(e) => (false, format!("could not terminate the torn line: {e}")),
        },
        _ => (
            false,
            "left: free space on its file system; appends fail until then".into(),
        ),
    }
}

/// Most bytes a temp file the protocol wrote can hold: one claim record.
/// Anything bigger under a temp name is someone's data.
const MAX_TEMP_BYTES: u64 = 1024 * 1024;

/// What the protocol leaves behind when a writer dies, by exact shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leftover {
    /// `.claim-tmp-<pid>-<nanos>-<seq>` or `<enc>.lock.tmp.<pid>.<seq>`: a
    /// regular file holding (part of) one record (or a planted symlink).
    TempFile,
    /// `<enc>.lock.recovery.d`, or the events mutex: a directory holding at
    /// most its `owner` file (or a planted symlink, stolen like a corpse).
    MutexCorpse,
    /// `<mutex>.reap.<pid>.<seq>`: a stolen corpse whose removal was cut
    /// short; a directory holding at most `owner`, or a symlink that was
    /// planted as the mutex (unlinked, never followed).
    ReapedMutex,
}

impl Leftover {
    /// The shape of the thing at `path`, or why it is none of them.
    fn of(path: &Path, events_mutex: &Path) -> Result<Leftover, String> {
        let name = path.file_name().map(OsStr::as_bytes).unwrap_or_default();
        let md = match std::fs::symlink_metadata(path) {
            Ok(md) => md,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Leftover::TempFile),
            Err(e) => return Err(format!("cannot stat it: {e}")),
        };
        // A symlink under any of these names is unlinked, never followed:
        // that loses nothing (its target is untouched), and a link planted as
        // a mutex would otherwise block every recovery of its claim.
        let ft = md.file_type();
        if ft.is_symlink() && (is_temp_name(name) || is_mutex_name(name) || path == events_mutex) {
            return Ok(if is_temp_name(name) {
                Leftover::TempFile
            } else {
                Leftover::MutexCorpse
            });
        }
        if is_temp_name(name) {
            if !ft.is_file() {
                return Err("not a regular file, so no temp file the protocol wrote".into());
            }
            if md.len() > MAX_TEMP_BYTES {
                return Err(format!("{} bytes, more than any claim record", md.len()));
            }
            return Ok(Leftover::TempFile);
        }
        if let Some(mutex) = reaped_mutex_name(name) {
            if !is_mutex_name(mutex) {
                return Err("named like a reaped mutex, but not of any claim's mutex".into());
            }
            if ft.is_symlink() {
                return Ok(Leftover::ReapedMutex);
            }
            return holds_only_owner(path, &md).map(|()| Leftover::ReapedMutex);
        }
        if is_mutex_name(name) || path == events_mutex {
            return holds_only_owner(path, &md).map(|()| Leftover::MutexCorpse);
        }
        Err("not a name the protocol writes".into())
    }

    fn remove(self, path: &Path) -> (bool, String) {
        match self {
            Leftover::MutexCorpse => {
                if mutex::steal_if_stale(path) {
                    (
                        true,
                        "stole the corpse by rename and removed it".to_string(),
                    )
                } else {
                    (
                        false,
                        "not stolen: it was taken again meanwhile".to_string(),
                    )
                }
            }
            Leftover::TempFile | Leftover::ReapedMutex => remove_litter(path),
        }
    }
}

fn all_digits(b: &[u8]) -> bool {
    !b.is_empty() && b.iter().all(u8::is_ascii_digit)
}

/// `<a>.<b>` with both decimal: the `<pid>.<seq>` tail of a name.
fn pid_seq(b: &[u8]) -> bool {
    let mut parts = b.splitn(2, |&c| c == b'.');
    matches!((parts.next(), parts.next()), (Some(p), Some(q)) if all_digits(p) && all_digits(q))
}

fn is_temp_name(name: &[u8]) -> bool {
    if let Some(rest) = name.strip_prefix(CREATE_TMP_PREFIX.as_bytes()) {
        let parts: Vec<&[u8]> = rest.split(|&c| c == b'-').collect();
        return parts.len() == 3 && parts.iter().all(|p| all_digits(p));
    }
    let infix = REPLACE_TMP_INFIX.as_bytes();
    match name.windows(infix.len()).rposition(|w| w == infix) {
        Some(i) => i > 0 && pid_seq(&name[i + infix.len()..]),
        None => false,
    }
}

/// A claim's recovery mutex: `<enc>.lock.recovery.d`.
fn is_mutex_name(name: &[u8]) -> bool {
    name.strip_suffix(RECOVERY_SUFFIX.as_bytes())
        .and_then(|lock| lock.strip_suffix(b".lock"))
        .is_some_and(|enc| !enc.is_empty())
}

/// The mutex name inside `<mutex>.reap.<pid>.<seq>`.
fn reaped_mutex_name(name: &[u8]) -> Option<&[u8]> {
    let infix = b".reap.";
    let i = name.windows(infix.len()).rposition(|w| w == infix)?;
    pid_seq(&name[i + infix.len()..]).then(|| &name[..i])
}

/// A mutex dir as the protocol makes it: a real directory whose only entry,
/// if any, is `owner`. A planted owner (a FIFO, a socket, a symlink, an
/// empty directory) goes with its mutex: removing it opens and follows
/// nothing, and it is what made the mutex unreadable. A directory with
/// anything in it is never removed recursively.
fn holds_only_owner(path: &Path, md: &std::fs::Metadata) -> Result<(), String> {
    if !md.is_dir() {
        return Err("not a real directory, so no mutex the protocol made".into());
    }
    let entries = std::fs::read_dir(path).map_err(|e| format!("cannot list it: {e}"))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list it: {e}"))?;
        let removable = |t: std::fs::FileType| {
            !t.is_dir() || std::fs::read_dir(entry.path()).is_ok_and(|mut d| d.next().is_none())
        };
        let is_owner = entry.file_name() == "owner" && entry.file_type().is_ok_and(removable);
        if !is_owner {
            return Err(format!(
                "it holds {:?}, and a mutex holds nothing but its owner file",
                entry.file_name()
            ));
        }
    }
    Ok(())
}

/// Remove a temp file or a reaped mutex of the exact shape [`Leftover::of`]
/// accepted: one file, or one `owner` file and its directory, never more.
fn remove_litter(path: &Path) -> (bool, String) {
    // Re-check age at the moment of removal: a write in flight is not litter.
    match std::fs::symlink_metadata(path) {
        Ok(_) if mutex::age(path).is_some_and(|a| a > TEMP_ABANDONED_AFTER) => {}
        Ok(_) => return (false, "left: it is no longer old".into()),
        Err(_) => return (true, "already gone".into()),
    }
    let res = match std::fs::symlink_metadata(path) {
        Ok(md) if md.is_dir() => match remove_owner(&path.join("owner")) {
            Ok(()) => std::fs::remove_dir(path),
            Err(e) if e.kind() == ErrorKind::NotFound => std::fs::remove_dir(path),
            Err(e) => Err(e),
        },
        _ => std::fs::remove_file(path),
    };
    match res {
        Ok(()) => (true, "removed".into()),
        // remove_dir refuses a directory that gained an entry meanwhile.
        Err(e) => (false, format!("could not remove: {e}")),
    }
}

/// A mutex's `owner`: a file of any type, or an empty directory
/// (`rmdir` refuses any other).
fn remove_owner(owner: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(owner) {
        Ok(md) if md.is_dir() => std::fs::remove_dir(owner),
        _ => std::fs::remove_file(owner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_temp_and_reap_names_the_protocol_writes_are_recognised() {
        assert!(is_temp_name(b".claim-tmp-12-1700000000000000000-3"));
        assert!(is_temp_name(b"node%3Ax.lock.tmp.12.0"));
        for lookalike in [
            &b".claim-tmp-data"[..],
            b".claim-tmp-1-2",
            b".claim-tmp-1-2-3-4",
            b"k.lock.tmp.1.0.bak",
            b".lock.tmp.1.0",
            b"k.lock.tmp.x.0",
        ] {
            assert!(
                !is_temp_name(lookalike),
                "{:?}",
                String::from_utf8_lossy(lookalike)
            );
        }
        assert_eq!(
            reaped_mutex_name(b"k.lock.recovery.d.reap.12.0"),
            Some(&b"k.lock.recovery.d"[..])
        );
        assert_eq!(reaped_mutex_name(b"backup.reap.2024.01.tar"), None);
        assert!(!is_mutex_name(b"backup"));
        assert!(!is_mutex_name(b"x.recovery.d"));
        assert!(is_mutex_name(b"k.lock.recovery.d"));
    }
}
