//! The safety net's listing reads only the lockfiles that changed since
//! the mirror read them (their `lstat` stamp moved), and finds every
//! hazard as a listing always has.

use super::*;
use crate::claims::SETTLED_MS;
use std::io::Write as _;

/// Past the window in which a stamp is not trusted: files written before
/// this are listed with stamps.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(SETTLED_MS as u64 + 100));
}

fn held_by(key: &str, holder: &str) -> ClaimRecord {
    ClaimRecord {
        holder: holder.into(),
        ..rec(key, 200, None)
    }
}

#[test]
fn an_unchanged_lockfile_is_not_read_again_and_keeps_its_row() {
    let World {
        _td,
        root,
        store,
        mut m,
    } = world(steady);
    for k in ["a", "b", "c"] {
        write(&root, &held_by(k, "alice"));
    }
    // Written just now: too young to be trusted by their stamps.
    m.list(&store, NOW, None).expect("list");
    assert_eq!(m.listed_reads, 3);
    m.list(&store, NOW, None).expect("list again");
    assert_eq!(m.listed_reads, 6, "young files are read again");
    settle();
    m.list(&store, NOW, None).expect("list, stamped");
    assert_eq!(m.listed_reads, 9);
    let first = m.take_delta().expect("the listing");
    m.list(&store, NOW, None).expect("the safety net");
    assert_eq!(m.listed_reads, 9, "nothing changed: nothing read");
    assert_eq!(m.listings, 4);
    // Every row as it was: nothing to hand a face, nothing rebuilt.
    assert_eq!(m.take_delta(), None, "an unchanged root says nothing");
    assert_eq!(m.len(), 3);
    assert_eq!(m.tally().counts.live, 3);
    // Each row kept is the very row the face holds.
    for r in &first.rows {
        let (now, _) = m.row(&r.path).expect("row");
        assert!(std::ptr::eq(now, &*r.status), "{:?}", r.path);
    }
    // One lockfile gone: the listing is taken whole again.
    std::fs::remove_file(root.lockfile("b")).expect("rm");
    m.list(&store, NOW, None).expect("the safety net");
    let gone = m.take_delta().expect("a whole listing");
    assert!(gone.whole.is_some());
    assert_eq!(gone.rows.len(), 2);
    assert_eq!(gone.tally.expect("a tally").counts.live, 2);
}

#[test]
fn a_lockfile_replaced_or_written_in_place_at_its_own_size_is_read_again() {
    let World {
        _td,
        root,
        store,
        mut m,
    } = world(steady);
    for k in ["moved", "inplace", "still"] {
        write(&root, &held_by(k, "alice"));
    }
    settle();
    m.list(&store, NOW, None).expect("list");
    assert_eq!(m.listed_reads, 3);

    // A new tenure: written aside and renamed over it (a new inode).
    let tmp = root.claims_dir().join(".claim-tmp-moved");
    std::fs::write(&tmp, held_by("moved", "bobby").to_yaml().expect("yaml")).expect("write");
    std::fs::rename(&tmp, root.lockfile("moved")).expect("rename");
    // The same bytes' length written over the old ones, in place, and the
    // file's mtime set back: only its ctime says it changed.
    let path = root.lockfile("inplace");
    let before = std::fs::metadata(&path).expect("stat");
    let text = held_by("inplace", "bobby").to_yaml().expect("yaml");
    assert_eq!(text.len() as u64, before.len());
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    f.write_all(text.as_bytes()).expect("write in place");
    f.set_modified(before.modified().expect("mtime"))
        .expect("mtime back");
    drop(f);
    let after = std::fs::metadata(&path).expect("stat");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (after.ino(), after.len(), after.mtime(), after.mtime_nsec()),
        (
            before.ino(),
            before.len(),
            before.mtime(),
            before.mtime_nsec()
        )
    );

    // Past the window, so that the stamps alone tell the changes.
    settle();
    m.list(&store, NOW, None).expect("the safety net");
    assert_eq!(holder_of(&m, &root, "moved").as_deref(), Some("bobby"));
    assert_eq!(holder_of(&m, &root, "inplace").as_deref(), Some("bobby"));
    assert_eq!(holder_of(&m, &root, "still").as_deref(), Some("alice"));
    assert_eq!(m.listed_reads, 5, "the two that changed, not the third");
}

#[test]
fn a_listing_that_reads_nothing_finds_every_hazard_as_before() {
    let World {
        _td,
        root,
        store,
        mut m,
    } = world(steady);
    write(&root, &held_by("ok", "alice"));
    std::fs::write(root.lockfile("bad"), b"{not: [yaml").expect("garbage");
    settle();
    m.list(&store, NOW, None).expect("list");
    let first = m.tally();
    assert_eq!(first.counts.corrupted, 1);
    let reads = m.listed_reads;

    // Entries the feed never told of: a temp file, a mutex corpse, both
    // ten minutes old.
    let tmp = root.claims_dir().join(".claim-tmp-x");
    std::fs::write(&tmp, b"half").expect("temp");
    let corpse = crate::claims::recovery_mutex_path(&root.lockfile("ok"));
    std::fs::create_dir(&corpse).expect("mkdir");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    for p in [&tmp, &corpse] {
        std::fs::File::open(p)
            .and_then(|f| f.set_modified(old))
            .expect("age it");
    }
    m.list(&store, NOW, None).expect("the safety net");
    assert_eq!(m.listed_reads, reads, "no lockfile changed");
    let t = m.tally();
    assert_eq!(t.counts, first.counts, "the corrupted claim still counted");
    let kinds: Vec<_> = t.hazards.iter().map(|h| (&h.kind, h.path())).collect();
    for (kind, path) in [
        (hazard::CORRUPTED_CLAIM, root.lockfile("bad")),
        (hazard::TEMP_LITTER, tmp),
        (hazard::STALE_MUTEX, corpse),
    ] {
        assert!(
            kinds.iter().any(|(k, p)| **k == kind && *p == path),
            "{kind:?} at {path:?} in {kinds:?}"
        );
    }
    assert_eq!(
        t.hazards.len(),
        crate::claims::sweep_with(&root, &mut me_at(NOW))
            .hazards
            .len(),
        "the same hazards a whole sweep finds"
    );
}

fn me_at(now: i64) -> crate::claims::Classifier {
    crate::claims::Classifier::with(now, me(), steady)
}
