//! What a case needs of a store under test, and the instances: a file
//! root, several roots, etcd, a root and etcd mixed (and, in `memory.rs`,
//! the in-memory store).

use claimtop::claims::{ClaimRecord, Root};
use claimtop::store::{OpenCtx, OriginIx, Store};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use tempfile::TempDir;

/// What only some stores do, so a case that needs it runs only there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// Each tenure has a fence, and a release may name the one it ends.
    Fences,
    /// Changes can be forgotten (a compacted revision) and must be said.
    Compaction,
    /// Recovery mutexes and temp files beside the claims (a file root).
    Mutexes,
}

pub trait StoreUnderTest {
    fn name(&self) -> &'static str;
    /// A fresh handle on the same world.
    fn store(&self) -> Arc<Store>;
    /// Another writer's handle (another process's view).
    fn peer(&self) -> Arc<Store>;
    /// The member the one-key cases use.
    fn target(&self) -> OriginIx;
    fn has(&self, c: Cap) -> bool;
    /// A peer's (or a bug's) bytes as the claim on `key` in the target.
    fn plant(&self, key: &str, bytes: &[u8]);
    /// `key`'s holder is gone: its lease revoked, or its pid dead.
    fn end_holder(&self, key: &str);
    /// Changes the feed has not brought yet are lost (a compaction).
    fn lose_changes(&self);
    /// Where the target keeps the claim on `key` (the item's `"file"`, a
    /// hazard's `"path"`).
    fn place_of(&self, key: &str) -> String;
    /// The CLI over the target alone: exit status and stdout (None: no CLI
    /// reaches this store).
    fn cli_one(&self, args: &[&str]) -> Option<(i32, Vec<u8>)> {
        let _ = args;
        None
    }
    /// The CLI over every origin.
    fn cli_all(&self, args: &[&str]) -> Option<(i32, Vec<u8>)> {
        let _ = args;
        None
    }
    /// The names each origin has in JSON (`"origin"`), when several are
    /// named.
    fn origins(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A case that cannot run on this store says so, by name.
pub fn lacks(u: &dyn StoreUnderTest, c: Cap, case: &str) -> bool {
    if u.has(c) {
        return false;
    }
    eprintln!("{case}: not run on {} (no {c:?})", u.name());
    true
}

pub const BIN: &str = env!("CARGO_BIN_EXE_claimtop");

/// The binary with a `$HOME` of its own and no store or root from the
/// environment.
fn claimtop(home: &Path, flags: &[String], args: &[&str]) -> (i32, Vec<u8>) {
    let out = Command::new(BIN)
        .env("HOME", home)
        .env_remove("FNO_CLAIMS_ROOT")
        .env_remove("FNO_CLAIMS_STORE")
        .env("USER", "tester")
        .args(flags)
        .args(args)
        .output()
        .expect("run claimtop");
    (out.status.code().unwrap_or(-1), out.stdout)
}

/// `--root DIR` for each root.
fn root_flags(dirs: &[&Path]) -> Vec<String> {
    dirs.iter()
        .flat_map(|d| ["--root".to_string(), d.to_string_lossy().into_owned()])
        .collect()
}

/// A record a peer writes, as the seed does.
pub fn record_of(key: &str, holder: &str, ttl_ms: Option<i64>) -> ClaimRecord {
    let now = claimtop::claims::now_ms();
    ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: holder.into(),
        acquired_at: now,
        pid: std::process::id() as i32,
        host: claimtop::claims::hostname(),
        expires_at: ttl_ms.map(|t| now + t),
        reason: None,
        harness: None,
        machine_id: Some(claimtop::claims::machine_id()).filter(|m| !m.is_empty()),
        metadata: Default::default(),
    }
}

/// A pid that was alive and is not any more.
fn dead_pid() -> i32 {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id() as i32;
    let _ = child.wait();
    pid
}

/// File roots: one, or several (the first is the target).
pub struct Roots {
    dirs: Vec<TempDir>,
    home: TempDir,
}

pub type File = Roots;

impl Roots {
    pub fn new(n: usize) -> Roots {
        Roots {
            dirs: (0..n).map(|_| tempfile::tempdir().expect("root")).collect(),
            home: tempfile::tempdir().expect("home"),
        }
    }

    pub fn one() -> Roots {
        Roots::new(1)
    }

    fn roots(&self) -> Vec<Root> {
        self.dirs
            .iter()
            .map(|d| Root::with_events_here(d.path()))
            .collect()
    }

    fn target_root(&self) -> Root {
        Root::with_events_here(self.dirs[0].path())
    }

    fn paths(&self) -> Vec<&Path> {
        self.dirs.iter().map(TempDir::path).collect()
    }
}

impl StoreUnderTest for Roots {
    fn name(&self) -> &'static str {
        if self.dirs.len() == 1 {
            "file"
        } else {
            "roots"
        }
    }

    fn store(&self) -> Arc<Store> {
        Arc::new(Store::open(&[], &self.roots(), &OpenCtx::default()).expect("open the roots"))
    }

    fn peer(&self) -> Arc<Store> {
        self.store()
    }

    fn target(&self) -> OriginIx {
        OriginIx(0)
    }

    fn has(&self, c: Cap) -> bool {
        c == Cap::Mutexes
    }

    fn plant(&self, key: &str, bytes: &[u8]) {
        let root = self.target_root();
        std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
        std::fs::write(root.lockfile(key), bytes).expect("plant");
    }

    /// Its record rewritten with a pid that is gone (what a holder killed
    /// leaves behind).
    fn end_holder(&self, key: &str) {
        let path = self.target_root().lockfile(key);
        let text = std::fs::read_to_string(&path).expect("a claim to end");
        let mut rec = ClaimRecord::from_yaml(&text).expect("a record");
        rec.pid = dead_pid();
        std::fs::write(&path, rec.to_yaml().expect("yaml")).expect("rewrite");
    }

    fn lose_changes(&self) {}

    fn place_of(&self, key: &str) -> String {
        self.target_root()
            .lockfile(key)
            .to_string_lossy()
            .into_owned()
    }

    fn cli_one(&self, args: &[&str]) -> Option<(i32, Vec<u8>)> {
        Some(claimtop(
            self.home.path(),
            &root_flags(&self.paths()[..1]),
            args,
        ))
    }

    fn cli_all(&self, args: &[&str]) -> Option<(i32, Vec<u8>)> {
        Some(claimtop(self.home.path(), &root_flags(&self.paths()), args))
    }

    fn origins(&self) -> Vec<String> {
        if self.dirs.len() < 2 {
            return Vec::new();
        }
        self.paths()
            .iter()
            .map(|d| format!("file:{}", d.to_string_lossy()))
            .collect()
    }
}

/// One JSON document from a command's stdout.
pub fn json_of(stdout: &[u8]) -> Value {
    serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}): {}",
            String::from_utf8_lossy(stdout)
        )
    })
}

#[cfg(feature = "etcd")]
pub use with_etcd::{Etcd, Mixed};

#[cfg(feature = "etcd")]
mod with_etcd {
    use super::*;
    use crate::etcd_common;
    use claimtop::store::etcd::Layout;
    use claimtop::store::StoreName;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;

    /// One etcd for the whole test binary, each case under a prefix of its
    /// own: the suite costs seconds, not an etcd start per case.
    static SHARED: OnceLock<Option<etcd_common::Etcd>> = OnceLock::new();
    static NEXT: AtomicUsize = AtomicUsize::new(0);

    /// Kill the shared etcd and remove its data when the binary exits
    /// (a static is never dropped).
    extern "C" fn stop_shared() {
        if let Some(Some(etcd)) = SHARED.get() {
            for m in &etcd.members {
                // SAFETY: a plain signal to a child's pid; nothing is read
                // or written through it.
                unsafe { libc::kill(m.pid(), libc::SIGKILL) };
                let _ = std::fs::remove_dir_all(m.dir.path());
            }
        }
    }

    fn shared() -> Option<&'static etcd_common::Etcd> {
        SHARED
            .get_or_init(|| {
                let etcd = etcd_common::Etcd::single();
                if etcd.is_some() {
                    // SAFETY: registers a function with no arguments that
                    // only signals children and removes directories.
                    unsafe { libc::atexit(stop_shared) };
                }
                etcd
            })
            .as_ref()
    }

    /// A fresh prefix on the shared etcd, and its URL.
    fn fresh() -> Option<(&'static etcd_common::Etcd, String, String)> {
        let etcd = shared()?;
        let prefix = format!(
            "/conf-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let url = etcd.url(&prefix);
        Some((etcd, prefix, url))
    }

    fn open(url: &str, roots: &[Root]) -> Arc<Store> {
        let name = StoreName::parse(url).expect("an etcd URL");
        Arc::new(Store::open(&[name], roots, &OpenCtx::default()).expect("open etcd"))
    }

    /// What a peer does to the raw keys: plant a value, revoke a lease,
    /// compact.
    struct Raw {
        etcd: &'static etcd_common::Etcd,
        prefix: String,
    }

    impl Raw {
        fn key(&self, key: &str) -> String {
            Layout::new(&self.prefix).claim(key)
        }

        fn plant(&self, key: &str, bytes: &[u8]) {
            let (rt, mut client) = self.etcd.client();
            rt.block_on(client.put(self.key(key), bytes.to_vec(), None))
                .expect("plant");
        }

        fn end_holder(&self, key: &str) {
            let (rt, mut client) = self.etcd.client();
            let got = rt.block_on(client.get(self.key(key), None)).expect("get");
            let lease = got.kvs().first().map_or(0, |kv| kv.lease());
            if lease != 0 {
                rt.block_on(client.lease_revoke(lease)).expect("revoke");
            }
        }

        fn lose_changes(&self) {
            let (rt, mut client) = self.etcd.client();
            let rev = rt
                .block_on(client.get(self.key("-"), None))
                .expect("get")
                .header()
                .map_or(0, |h| h.revision());
            rt.block_on(client.compact(rev, None)).expect("compact");
        }
    }

    /// One etcd site (and what hosts publish into it).
    pub struct Etcd {
        raw: Raw,
        url: String,
        home: TempDir,
    }

    impl Etcd {
        pub fn new() -> Option<Etcd> {
            let (etcd, prefix, url) = fresh()?;
            Some(Etcd {
                raw: Raw { etcd, prefix },
                url,
                home: tempfile::tempdir().expect("home"),
            })
        }
    }

    impl StoreUnderTest for Etcd {
        fn name(&self) -> &'static str {
            "etcd"
        }
        fn store(&self) -> Arc<Store> {
            open(&self.url, &[])
        }
        fn peer(&self) -> Arc<Store> {
            open(&self.url, &[])
        }
        fn target(&self) -> OriginIx {
            OriginIx(0)
        }
        fn has(&self, c: Cap) -> bool {
            matches!(c, Cap::Fences | Cap::Compaction)
        }
        fn plant(&self, key: &str, bytes: &[u8]) {
            self.raw.plant(key, bytes)
        }
        fn end_holder(&self, key: &str) {
            self.raw.end_holder(key)
        }
        fn lose_changes(&self) {
            self.raw.lose_changes()
        }
        fn place_of(&self, key: &str) -> String {
            self.raw.key(key)
        }
        fn cli_one(&self, args: &[&str]) -> Option<(i32, Vec<u8>)> {
            Some(claimtop(
                self.home.path(),
                &["--store".into(), self.url.clone()],
                args,
            ))
        }
        fn cli_all(&self, args: &[&str]) -> Option<(i32, Vec<u8>)> {
            self.cli_one(args)
        }
    }

    /// A file root and an etcd site in one store; the site is the target,
    /// written to as the site alone is.
    pub struct Mixed {
        site: Etcd,
        root: TempDir,
    }

    impl Mixed {
        pub fn new() -> Option<Mixed> {
            Some(Mixed {
                site: Etcd::new()?,
                root: tempfile::tempdir().expect("root"),
            })
        }

        fn roots(&self) -> Vec<Root> {
            vec![Root::with_events_here(self.root.path())]
        }
    }

    impl StoreUnderTest for Mixed {
        fn name(&self) -> &'static str {
            "mixed"
        }
        fn store(&self) -> Arc<Store> {
            open(&self.site.url, &self.roots())
        }
        fn peer(&self) -> Arc<Store> {
            open(&self.site.url, &self.roots())
        }
        fn target(&self) -> OriginIx {
            self.site.target()
        }
        fn has(&self, c: Cap) -> bool {
            self.site.has(c)
        }
        fn plant(&self, key: &str, bytes: &[u8]) {
            self.site.plant(key, bytes)
        }
        fn end_holder(&self, key: &str) {
            self.site.end_holder(key)
        }
        fn lose_changes(&self) {
            self.site.lose_changes()
        }
        fn place_of(&self, key: &str) -> String {
            self.site.place_of(key)
        }
        fn cli_one(&self, args: &[&str]) -> Option<(i32, Vec<u8>)> {
            self.site.cli_one(args)
        }
        fn cli_all(&self, args: &[&str]) -> Option<(i32, Vec<u8>)> {
            let mut flags = vec!["--store".to_string(), self.site.url.clone()];
            flags.extend(root_flags(&[self.root.path()]));
            Some(claimtop(self.site.home.path(), &flags, args))
        }
        fn origins(&self) -> Vec<String> {
            let url = self.store().members()[0].name();
            vec![url, format!("file:{}", self.root.path().to_string_lossy())]
        }
    }
}
