use super::judge::Judge;
use super::*;
use crate::claims::Root;
use crate::claims::{hazard, ClaimRecord, LocalIdentity};
use crate::store::file::FileStore;
use std::sync::atomic::{AtomicBool, Ordering};

const NOW: i64 = 1_800_000_000_000;
const MIN: i64 = 60_000;

fn me() -> LocalIdentity {
    LocalIdentity {
        machine_id: "m-here:1".into(),
        hostname: "here".into(),
    }
}

/// pid 100 is alive (until KILLED), every other pid is gone.
static KILLED: AtomicBool = AtomicBool::new(false);

fn probe(pid: i32) -> Option<i64> {
    (pid == 100 && !KILLED.load(Ordering::SeqCst)).then_some(NOW - 3_600_000)
}

/// pid 200 is alive forever: a world the kill above never touches.
fn steady(pid: i32) -> Option<i64> {
    (pid == 200).then_some(NOW - 3_600_000)
}

fn rec(key: &str, pid: i32, ttl_left: Option<i64>) -> ClaimRecord {
    ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: "h".into(),
        acquired_at: NOW - MIN,
        pid,
        host: "here".into(),
        expires_at: ttl_left.map(|t| NOW + t),
        reason: None,
        harness: None,
        machine_id: Some("m-here:1".into()),
        metadata: Default::default(),
    }
}

struct World {
    _td: tempfile::TempDir,
    root: Root,
    store: FileStore,
    m: Mirror,
}

fn world(probe: fn(i32) -> Option<i64>) -> World {
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    let store = FileStore::new(root.clone());
    let m = Mirror::new(
        OriginIx(0),
        ItemRules::Lockfile,
        Some(Judge::with(me(), probe)),
        NOW,
    );
    World {
        _td: td,
        root,
        store,
        m,
    }
}

fn holder_of(m: &Mirror, root: &Root, key: &str) -> Option<String> {
    let (s, _) = m.row(&root.lockfile(key).into())?;
    s.record.as_ref().map(|r| r.holder.clone())
}

fn write(root: &Root, r: &ClaimRecord) {
    let yaml = r.to_yaml().expect("yaml");
    std::fs::write(root.lockfile(&r.key), yaml).expect("write");
}

fn state_of(m: &Mirror, root: &Root, key: &str) -> Option<ClaimState> {
    m.row(&root.lockfile(key).into()).map(|(s, _)| s.state)
}

#[test]
fn a_change_re_reads_exactly_the_key_it_names_and_says_only_that_row_moved() {
    let World {
        _td,
        root,
        store,
        mut m,
    } = world(steady);
    write(&root, &rec("a", 200, None));
    write(&root, &rec("b", 200, None));
    m.list(&store, NOW, None).expect("list");
    let first = m.take_delta().expect("the listing");
    assert!(first.whole.is_some());
    assert_eq!(first.rows.len(), 2);
    assert_eq!(first.tally.expect("a tally").counts.live, 2);

    write(&root, &rec("b", 999, None));
    assert!(m.apply(Change::Claim { key: "b".into() }).is_none());
    m.settle(&store, NOW).expect("settle");
    assert_eq!((m.reads, m.listings), (1, 1));
    let d = m.take_delta().expect("a delta");
    assert!(d.whole.is_none());
    assert_eq!(d.rows.len(), 1);
    assert_eq!(d.rows[0].status.key, "b");
    assert_eq!(d.rows[0].status.state, ClaimState::Stale);
    let t = d.tally.expect("counts moved");
    assert_eq!((t.counts.live, t.counts.stale), (1, 1));
    // The row is shared with the face, not copied.
    let (shared, _) = m.row(&root.lockfile("b").into()).expect("row");
    assert!(std::ptr::eq(shared, &*d.rows[0].status));

    std::fs::remove_file(root.lockfile("a")).expect("rm");
    m.apply(Change::Claim { key: "a".into() });
    m.settle(&store, NOW).expect("settle");
    let d = m.take_delta().expect("a delta");
    assert_eq!(d.rows[0].status.state, ClaimState::Free, "gone");
    assert!(m.take_delta().is_none(), "nothing more");
}

#[test]
fn an_unreadable_claim_is_one_hazard_as_doctor_counts_it() {
    let World {
        _td,
        root,
        store,
        mut m,
    } = world(steady);
    write(&root, &rec("ok", 200, None));
    // Past the read cap: unreadable, never corrupted.
    let big = format!("key: big\nholder: h\npad: '{}'\n", "x".repeat(1_100_000));
    std::fs::write(root.lockfile("big"), big).expect("write");
    m.list(&store, NOW, None).expect("list");
    let unreadable = |hs: &[Hazard]| hs.iter().filter(|h| h.kind == hazard::UNREADABLE).count();
    // Doctor (judging by this machine's identity) counts it once too.
    assert_eq!(unreadable(&crate::claims::doctor(&root)), 1);
    let tally = m.tally();
    assert_eq!(tally.hazards.len(), 1, "{:?}", tally.hazards);
    assert_eq!(unreadable(&tally.hazards), 1);
    // Re-read on its own: still one.
    m.apply(Change::Claim { key: "big".into() });
    m.settle(&store, NOW).expect("settle");
    assert_eq!(m.tally().hazards.len(), 1);
}

#[test]
fn a_mutex_corpse_leaves_the_hazards_when_its_entry_goes_and_a_young_one_comes_of_age() {
    let World {
        _td,
        root,
        store,
        mut m,
    } = world(steady);
    let corpse = crate::claims::recovery_mutex_path(&root.lockfile("k"));
    std::fs::create_dir(&corpse).expect("mkdir");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    std::fs::File::open(&corpse)
        .and_then(|f| f.set_modified(old))
        .expect("age it");
    let real_now = crate::claims::now_ms();
    m.list(&store, real_now, None).expect("list");
    assert_eq!(m.tally().hazards.len(), 1, "the listing saw the corpse");
    // A force-release stole it: the feed says it is gone.
    m.apply(Change::Entry {
        path: corpse.clone(),
        entry: None,
    });
    assert!(m.tally().hazards.is_empty(), "{:?}", m.tally().hazards);

    // A fresh mutex: no hazard until it is 120 s old, then one, by the
    // tick alone.
    let young = crate::claims::entry::Entry {
        role: crate::claims::entry::Role::RecoveryMutex,
        shape: crate::claims::entry::Shape::Dir,
        modified_ms: real_now,
        oddity: None,
    };
    m.apply(Change::Entry {
        path: corpse.clone(),
        entry: Some(young.clone()),
    });
    assert!(m.tally().hazards.is_empty(), "{:?}", m.tally().hazards);
    m.tick(real_now + 119_000);
    assert!(m.tally().hazards.is_empty());
    m.tick(real_now + 120_000);
    assert_eq!(m.tally().hazards[0].kind, hazard::STALE_MUTEX);
    // A planted owner is named at once, and the same look is a corpse
    // 120 s on: coming of age changes the hazard it already is.
    let planted = crate::claims::entry::Entry {
        modified_ms: real_now + 120_000,
        oddity: Some(crate::claims::entry::Oddity::ForeignOwner("a FIFO".into())),
        ..young.clone()
    };
    m.apply(Change::Entry {
        path: corpse.clone(),
        entry: Some(planted),
    });
    assert_eq!(m.tally().hazards[0].kind, hazard::UNREADABLE);
    m.tick(real_now + 240_000);
    assert_eq!(m.tally().hazards[0].kind, hazard::STALE_MUTEX);
    // A resync forgets it (the feed says what is there right after).
    m.apply(Change::Relist {
        why: Some("lost".into()),
    });
    assert!(m.tally().hazards.is_empty());
    assert!(m.wants_listing());
}

#[test]
fn a_tick_judges_again_what_time_changes_a_dead_pid_and_a_ttl_edge() {
    let World {
        _td,
        root,
        store,
        mut m,
    } = world(probe);
    write(&root, &rec("pid", 100, None));
    write(&root, &rec("ttl", 999, Some(2_000)));
    m.list(&store, NOW, None).expect("list");
    m.take_delta();
    assert_eq!(state_of(&m, &root, "pid"), Some(ClaimState::Live));
    assert_eq!(state_of(&m, &root, "ttl"), Some(ClaimState::Suspect));
    m.tick(NOW + 1000);
    assert!(m.take_delta().is_none(), "nothing moved");
    // The TTL runs out: Suspect to Stale, by the clock alone.
    m.tick(NOW + 2000);
    let d = m.take_delta().expect("the edge");
    assert_eq!(d.rows.len(), 1);
    assert_eq!(d.rows[0].status.state, ClaimState::Stale);
    // The holder dies: one check of its pid says so.
    KILLED.store(true, Ordering::SeqCst);
    m.tick(NOW + 3000);
    let d = m.take_delta().expect("the death");
    assert_eq!(d.pids, vec![(100, None)]);
    assert_eq!(d.rows.len(), 1);
    assert_eq!(d.rows[0].status.state, ClaimState::Stale);
    assert!(d.rows[0].status.why.contains("pid 100 is gone"));
    assert_eq!(m.reads, 0, "no file was read again");
}

#[test]
fn the_safety_net_lists_again_only_after_its_spacing() {
    let World {
        _td,
        root,
        store,
        mut m,
    } = world(steady);
    write(&root, &rec("a", 200, None));
    m.list(&store, NOW, None).expect("list");
    m.tick(NOW + RELIST_EVERY_MS - 1000);
    assert!(!m.wants_listing());
    m.tick(NOW + RELIST_EVERY_MS);
    assert!(m.wants_listing());
    m.settle(&store, NOW + RELIST_EVERY_MS).expect("settle");
    assert_eq!(m.listings, 2);
    let d = m.take_delta().expect("a whole");
    assert_eq!(
        d.whole.expect("whole").resync,
        None,
        "no notice for the net"
    );
}

#[test]
fn a_listing_that_finds_a_row_unchanged_keeps_sharing_it() {
    let World {
        _td,
        root,
        store,
        mut m,
    } = world(steady);
    write(&root, &rec("same", 200, None));
    write(&root, &rec("moved", 200, None));
    m.list(&store, NOW, None).expect("list");
    let first = m.take_delta().expect("the listing");
    let shared = |d: &Delta, key: &str| {
        d.rows
            .iter()
            .find(|r| r.status.key == key)
            .map(|r| Arc::clone(&r.status))
            .expect("listed")
    };
    write(&root, &rec("moved", 999, None));
    m.list(&store, NOW, None).expect("list again");
    let second = m.take_delta().expect("the listing");
    assert!(Arc::ptr_eq(
        &shared(&first, "same"),
        &shared(&second, "same")
    ));
    assert!(!Arc::ptr_eq(
        &shared(&first, "moved"),
        &shared(&second, "moved")
    ));
}

#[test]
fn a_leased_mirror_re_reads_a_local_holder_gone_and_forgets_it_once_read() {
    // With no judge of its own (a store with leases), the mirror asks only
    // the pids of its live local claims, each tick, and a claim no longer
    // live is no longer asked about.
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    let store = FileStore::new(root.clone());
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let here = LocalIdentity::current();
    let mut r = rec("held", child.id() as i32, None);
    r.machine_id = Some(here.machine_id.clone());
    r.host = here.hostname.clone();
    r.acquired_at = crate::time::now_ms();
    write(&root, &r);
    let now = crate::time::now_ms();
    // Judged by the store's verdict, as a store with leases is.
    let mut m = Mirror::new(OriginIx(0), ItemRules::StoreKey, None, now);
    m.list(&store, now, None).expect("list");
    assert_eq!(state_of(&m, &root, "held"), Some(ClaimState::Live));
    m.tick(now + 1000);
    assert!(!m.has_unread(), "its holder is alive: nothing to re-read");
    let _ = child.kill();
    let _ = child.wait();
    m.tick(now + 2000);
    assert!(m.has_unread(), "its holder is gone: the key is read again");
    m.settle(&store, now + 2000).expect("settle");
    assert_ne!(state_of(&m, &root, "held"), Some(ClaimState::Live));
    m.tick(now + 3000);
    assert!(!m.has_unread(), "no longer live: no longer asked about");
    assert!(m.local_live.is_empty(), "its pid's count went with it");
}

#[test]
fn a_mirror_of_one_key_reads_that_key_alone_and_never_lists() {
    let World {
        _td, root, store, ..
    } = world(steady);
    for k in ["a", "b", "c"] {
        write(&root, &rec(k, 200, None));
    }
    let mut m = Mirror::of_keys(
        OriginIx(0),
        ItemRules::Lockfile,
        Some(Judge::with(me(), steady)),
        ["b".into()],
        NOW,
    );
    m.settle(&store, NOW).expect("settle");
    assert_eq!((m.reads, m.listings), (1, 0));
    assert_eq!(m.len(), 1);
    let (s, _) = m.row_of_key("b").expect("b is followed");
    assert_eq!(s.state, ClaimState::Live);
    assert!(m.row_of_key("a").is_none(), "a is not followed");

    // Another key's change is not its business.
    m.apply(Change::Claim { key: "a".into() });
    m.settle(&store, NOW).expect("settle");
    assert_eq!(m.reads, 1);

    // A change that says others were missed reads its key, not the store.
    write(&root, &rec("b", 999, None));
    m.apply(Change::Relist {
        why: Some("overflow".into()),
    });
    m.apply(Change::Relist { why: None });
    assert!(!m.wants_listing());
    m.settle(&store, NOW).expect("settle");
    assert_eq!((m.reads, m.listings), (2, 0));
    let (s, _) = m.row_of_key("b").expect("still there");
    assert_eq!(s.state, ClaimState::Stale, "its holder's pid is gone");
    assert_eq!(m.tally().counts.stale, 1);
    assert_eq!(m.tally().counts.live, 0, "a, c are not counted");

    // Its safety net reads the key again, never lists.
    m.tick(NOW + RELIST_EVERY_MS + 1);
    assert!(m.has_unread() && !m.wants_listing());
    std::fs::remove_file(root.lockfile("b")).expect("rm");
    m.settle(&store, NOW + RELIST_EVERY_MS + 1).expect("settle");
    assert_eq!((m.reads, m.listings), (3, 0));
    assert!(m.row_of_key("b").is_none(), "released: free");
}

mod net;
mod stamps;
