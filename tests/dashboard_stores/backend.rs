//! The two stores behind one face: a temp file root, or a real etcd of its
//! own on free loopback ports. Each answers the same CLI verbs (`acquire`,
//! `list --json`, `doctor --json` ...), and plants what a peer writer or a
//! crash would leave, each the way its store keeps claims: bytes in a
//! lockfile, or a value on a lease under the store's prefix.

use crate::common::{plant_bytes, record};
use claimtop::claims::{ClaimRecord, Counts, Root};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Which store a case runs over.
pub enum Backend {
    File {
        home: tempfile::TempDir,
        root: tempfile::TempDir,
    },
    #[cfg(feature = "etcd")]
    Etcd {
        home: tempfile::TempDir,
        etcd: crate::etcd_common::Etcd,
        url: String,
    },
}

/// What a store has that the other has not, for the steps and cases that
/// only make sense on one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Has {
    /// A claim bound to a pid with no TTL, stale once the pid is gone
    /// (etcd needs a lease on every claim, so its dead claims vanish).
    Stale,
    /// Recovery mutexes, whose corpses are hazards `x` cleans (etcd's
    /// transactions need none).
    Mutexes,
}

/// The etcd prefix every case uses (one etcd per case, so nothing is shared).
#[cfg(feature = "etcd")]
const PREFIX: &str = "/stores";

impl Backend {
    pub fn file() -> Backend {
        Backend::File {
            home: tempfile::TempDir::new().expect("temp home"),
            root: tempfile::TempDir::new().expect("temp root"),
        }
    }

    /// A fresh single-member etcd, or None (said on stderr) without one
    /// outside CI.
    #[cfg(feature = "etcd")]
    pub fn etcd() -> Option<Backend> {
        let etcd = crate::etcd_common::Etcd::single()?;
        let url = etcd.url(PREFIX);
        Some(Backend::Etcd {
            home: tempfile::TempDir::new().expect("temp home"),
            etcd,
            url,
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            Backend::File { .. } => "file",
            #[cfg(feature = "etcd")]
            Backend::Etcd { .. } => "etcd",
        }
    }

    pub fn has(&self, what: Has) -> bool {
        matches!(self, Backend::File { .. }) || !matches!(what, Has::Stale | Has::Mutexes)
    }

    pub fn home(&self) -> &Path {
        match self {
            Backend::File { home, .. } => home.path(),
            #[cfg(feature = "etcd")]
            Backend::Etcd { home, .. } => home.path(),
        }
    }

    /// `--root DIR` or `--store URL`: what names the store to every face.
    pub fn store_args(&self) -> Vec<String> {
        match self {
            Backend::File { root, .. } => {
                vec!["--root".into(), root.path().to_string_lossy().into_owned()]
            }
            #[cfg(feature = "etcd")]
            Backend::Etcd { url, .. } => vec!["--store".into(), url.clone()],
        }
    }

    /// `claimtop <store> ARGS`, in the sandboxed `$HOME`.
    pub fn cli(&self, args: &[&str]) -> Output {
        crate::common::claimtop(self.home())
            .env_remove("FNO_CLAIMS_STORE")
            .args(self.store_args())
            .args(args)
            .output()
            .expect("run claimtop")
    }

    /// [`Backend::cli`], which must exit with one of `ok` statuses.
    pub fn must(&self, args: &[&str], ok: &[i32]) -> Output {
        let out = self.cli(args);
        let code = out.status.code().unwrap_or(-1);
        assert!(
            ok.contains(&code),
            "claimtop {args:?} on {} exited {code}: {}{}",
            self.name(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn json(&self, args: &[&str], ok: &[i32]) -> Value {
        let out = self.must(args, ok);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "claimtop {args:?} printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    pub fn list(&self) -> Value {
        self.json(&["list", "--json"], &[0])
    }

    /// `doctor --json` (exit 3 when it found hazards).
    pub fn doctor(&self) -> Value {
        self.json(&["doctor", "--json"], &[0, 3])
    }

    /// A claim by `holder` on `key` for 5 minutes, bound to `pid`.
    pub fn acquire(&self, key: &str, holder: &str, pid: u32) -> Output {
        let pid = pid.to_string();
        self.must(
            &[
                "acquire", key, "--holder", holder, "--ttl", "5m", "--pid", &pid,
            ],
            &[0, 3],
        )
    }

    /// Plant `bytes` as `key`'s claim, as a peer writer (or a bug) would:
    /// the lockfile's bytes, or the key's value on a lease of its own.
    pub fn plant(&self, key: &str, bytes: &[u8]) {
        match self {
            Backend::File { root, .. } => {
                plant_bytes(&Root::with_events_here(root.path()), key, bytes);
            }
            #[cfg(feature = "etcd")]
            Backend::Etcd { etcd, .. } => {
                let ck = claimtop::store::etcd::Layout::new(PREFIX).claim(key);
                let (rt, mut c) = etcd.client();
                rt.block_on(async {
                    // Over a claim, on the claim's own lease: a lease left
                    // with no key would be a hazard of its own.
                    let got = c.get(ck.clone(), None).await.expect("get");
                    let lease = match got.kvs().first().map(|kv| kv.lease()) {
                        Some(l) if l != 0 => l,
                        _ => c.lease_grant(300, None).await.expect("grant").id(),
                    };
                    let opts = etcd_client::PutOptions::new().with_lease(lease);
                    c.put(ck, bytes.to_vec(), Some(opts)).await.expect("put");
                });
            }
        }
    }

    /// A claim whose value no reader can parse: `corrupted`.
    pub fn plant_corrupted(&self, key: &str) {
        self.plant(key, b"holder: [this is not\n a claim");
    }

    /// A claim too costly to parse (flow nesting past the limit):
    /// `unreadable`, and so held.
    pub fn plant_unreadable(&self, key: &str) {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let text = format!(
            "schema_version: 1\nkey: {key}\nholder: h\nacquired_at: 1\npid: 1\nhost: h\nreason: {deep}\n"
        );
        self.plant(key, text.as_bytes());
    }

    /// A claim at `key` whose record names `names`, held by `pid` of this
    /// machine for 5 minutes: a `key_mismatch` that reads live.
    pub fn plant_mismatch(&self, key: &str, names: &str, pid: u32) {
        let mut rec: ClaimRecord = record(names, "pty:forked", pid as i32, now());
        rec.expires_at = Some(now() + 300_000);
        self.plant(key, rec.to_yaml().expect("yaml").as_bytes());
    }

    /// A claim of this machine by dead `pid` whose TTL ends `in_ms` from
    /// now: suspect, then (on a file root) stale on its own once it ends.
    pub fn plant_expiring(&self, key: &str, pid: i32, in_ms: i64) {
        let mut rec = record(key, "pty:expiring", pid, now());
        rec.expires_at = Some(now() + in_ms);
        self.plant(key, rec.to_yaml().expect("yaml").as_bytes());
    }

    /// End `key`'s claim as its TTL running out would: on etcd its lease is
    /// revoked (etcd deletes the key); a lockfile's deadline is moved into
    /// the past (its holder dead), as the clock would.
    pub fn expire(&self, key: &str) {
        match self {
            Backend::File { .. } => self.plant_expiring(key, crate::common::dead_pid(), -1_000),
            #[cfg(feature = "etcd")]
            Backend::Etcd { etcd, .. } => {
                let ck = claimtop::store::etcd::Layout::new(PREFIX).claim(key);
                let (rt, mut c) = etcd.client();
                rt.block_on(async {
                    let got = c.get(ck, None).await.expect("get");
                    if let Some(kv) = got.kvs().first().filter(|kv| kv.lease() != 0) {
                        c.lease_revoke(kv.lease()).await.expect("revoke");
                    }
                });
            }
        }
    }

    /// A recovery mutex of `key` whose holder was killed ten minutes ago
    /// (file roots only: see [`Has::Mutexes`]).
    pub fn plant_corpse(&self, key: &str) -> PathBuf {
        let root = match self {
            Backend::File { root, .. } => root,
            #[cfg(feature = "etcd")]
            Backend::Etcd { .. } => panic!("only a file root has recovery mutexes"),
        };
        let lockfile = Root::with_events_here(root.path()).lockfile(key);
        let mutex = claimtop::claims::recovery_mutex_path(&lockfile);
        std::fs::create_dir_all(&mutex).expect("mkdir the mutex");
        std::fs::write(mutex.join("owner"), "elsewhere:1:1").expect("owner");
        claimtop::mutex::backdate(&mutex, 600).expect("age the mutex");
        mutex
    }
}

pub fn now() -> i64 {
    claimtop::claims::now_ms()
}

/// `list --json`'s counts.
pub fn counts_of(list: &Value) -> Counts {
    let n = |k: &str| list["counts"][k].as_u64().unwrap_or(0) as usize;
    Counts {
        live: n("live"),
        suspect: n("suspect"),
        stale: n("stale"),
        corrupted: n("corrupted"),
        unreadable: n("unreadable"),
        last_known: n("last_known"),
    }
}

/// `doctor --json`'s hazards, as `kind path` lines, sorted.
pub fn hazards_of(doctor: &Value) -> Vec<String> {
    let mut v: Vec<String> = doctor["hazards"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|h| format!("{} {}", h["kind"].as_str().unwrap_or(""), h["path"]))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// `list --json`'s claims as (key, state, holder), by key.
pub fn claims_of(list: &Value) -> Vec<(String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    list["claims"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| (s(&c["key"]), s(&c["state"]), s(&c["record"]["holder"])))
                .collect()
        })
        .unwrap_or_default()
}
