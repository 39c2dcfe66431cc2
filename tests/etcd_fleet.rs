//! A fleet through one etcd: two publishers (two temp roots standing in for
//! two hosts, told apart by the test-only machine-id override) and the CLI
//! reading them back over `--store etcd://...`. Claims are written by the
//! seed protocol's Python implementation or by `claimtop acquire` on the
//! roots themselves, never through the store.
//! Run with `cargo test --features etcd --test etcd_fleet`.
#![cfg(feature = "etcd")]

#[path = "common/mod.rs"]
mod common;
#[path = "etcd_fleet/doctor_events_metrics.rs"]
mod doctor_events_metrics;
mod etcd_common;
#[path = "etcd_fleet/feeds.rs"]
mod feeds;
#[path = "etcd_fleet/first_screen.rs"]
mod first_screen;
#[path = "etcd_fleet/fleet_view.rs"]
mod fleet_view;
#[path = "etcd_fleet/force_release.rs"]
mod force_release;
#[path = "etcd_fleet/host_index.rs"]
mod host_index;
#[path = "etcd_fleet/host_life.rs"]
mod host_life;
#[path = "etcd_fleet/idle.rs"]
mod idle;
#[path = "etcd_fleet/listing.rs"]
mod listing;
#[path = "etcd_fleet/merged.rs"]
mod merged;
#[path = "etcd_fleet/read_buffer.rs"]
mod read_buffer;
#[path = "etcd_fleet/reconnect.rs"]
mod reconnect;
#[path = "etcd_fleet/resync.rs"]
mod resync;
#[path = "etcd_fleet/roots.rs"]
mod roots;
#[path = "etcd_fleet/summary.rs"]
mod summary;
#[path = "etcd_fleet/writes.rs"]
mod writes;

use claimtop::cli::publish::TEST_MACHINE_ID_ENV;
use common::claimtop;
use etcd_common::Etcd;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

const PY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/fno_claims.py");
/// The publishers' lease in these tests: short, so "offline" is quick.
const LEASE_S: u64 = 3;
/// How long an "eventually" may take on a loaded CI box: only the
/// targets the issue names (1 s to appear, TTL + 1 s to go offline) are
/// timed tighter.
const PATIENCE: Duration = Duration::from_secs(10);

/// One etcd, a throwaway `$HOME`, and the roots of the hosts.
struct Fleet {
    etcd: Etcd,
    home: TempDir,
    url: String,
    prefix: String,
}

impl Fleet {
    fn start(prefix: &str) -> Option<Fleet> {
        if Command::new("python3").arg("--version").output().is_err() {
            common::cannot_run("no python3 for the seed-protocol writer");
            return None;
        }
        let etcd = Etcd::single()?;
        let url = etcd.url(prefix);
        Some(Fleet {
            etcd,
            home: TempDir::new().expect("home"),
            url,
            prefix: prefix.to_string(),
        })
    }

    fn over(&self, args: &[&str]) -> Output {
        claimtop(self.home.path())
            .env_remove("FNO_CLAIMS_STORE")
            .args(["--store", &self.url])
            .args(args)
            .output()
            .expect("run claimtop")
    }

    fn list(&self) -> Value {
        json_of(&self.over(&["list", "--json"]))
    }

    /// The host `id` as `list --json` shows it, if it is listed.
    fn host(&self, id: &str) -> Option<Value> {
        self.list()["hosts"]
            .as_array()?
            .iter()
            .find(|h| h["host_id"] == id)
            .cloned()
    }

    /// Every event `events --json` over the store prints.
    fn events(&self) -> Vec<Value> {
        let o = self.over(&["events", "--json"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("an event per line"))
            .collect()
    }

    /// The current revision of the store: every write moves it by one.
    fn revision(&self) -> i64 {
        let (rt, mut client) = self.etcd.client();
        rt.block_on(client.get("/", None))
            .expect("read a revision")
            .header()
            .map(|h| h.revision())
            .expect("a header")
    }
}

/// A running `claimtop publish`, killed (-9) on drop.
struct Publisher {
    child: Child,
    log: PathBuf,
}

impl Publisher {
    fn spawn(f: &Fleet, root: &Path, machine: &str, resweep: &str) -> Publisher {
        Publisher::spawn_from(f, claimtop(f.home.path()), root, machine, resweep)
    }

    /// `publish` run by `cmd` (a claimtop command with its environment).
    fn spawn_from(
        f: &Fleet,
        mut cmd: Command,
        root: &Path,
        machine: &str,
        resweep: &str,
    ) -> Publisher {
        let log = root.join("publish.log");
        let child = publish_args(&mut cmd, f, root, machine, resweep)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start the publisher");
        let p = Publisher { child, log };
        let online = wait_for(Duration::from_secs(10), || {
            f.host(machine).is_some_and(|h| h["online"] == true)
        });
        assert!(
            online,
            "publisher {machine} never came online:\n{}",
            p.log()
        );
        p
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on a child this handle started and still owns.
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `cmd` made a `publish` of `root` as host `machine`.
fn publish_args<'a>(
    cmd: &'a mut Command,
    f: &Fleet,
    root: &Path,
    machine: &str,
    resweep: &str,
) -> &'a mut Command {
    cmd.env(TEST_MACHINE_ID_ENV, machine)
        .args(["publish", "--root"])
        .arg(root)
        .args(["--store", &f.url, "--lease-ttl"])
        .arg(format!("{LEASE_S}s"))
        .args(["--resweep", resweep])
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// Poll `cond` every 20 ms until it holds or `within` passes.
fn wait_for(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The seed protocol's Python writer puts one lockfile (temp + rename, no
/// event), exactly as an agent of that implementation would.
fn py_write(root: &Path, key: &str, holder: &str, pid: u32) {
    let o = Command::new("python3")
        .arg(PY)
        .arg("write")
        .arg(root)
        .args([key, holder, "--pid", &pid.to_string()])
        .args(["--ttl-ms", "3600000"])
        .output()
        .expect("python3");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The published items of `host` for `key`.
fn published(list: &Value, host: &str, key: &str) -> Vec<Value> {
    list["claims"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|c| c["host_id"] == host && c["key"] == key)
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

fn root_dir() -> TempDir {
    TempDir::new().expect("root")
}

/// `claimtop acquire KEY` for holder `w` with a 1 h TTL, in `root` itself
/// (never through the store), as an agent on that host would.
fn acquire_in(f: &Fleet, root: &Path, key: &str) {
    let o = claimtop(f.home.path())
        .arg("--root")
        .arg(root)
        .args(["acquire", key, "--holder", "w", "--ttl", "1h"])
        .output()
        .expect("acquire");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn events_of_host(events: &[Value], host: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["host_id"] == host)
        .cloned()
        .collect()
}

/// host-a's one root's summary: how many times it was written, and how
/// many claims it counts.
fn summary_of(f: &Fleet) -> (i64, u64) {
    let (rt, mut client) = f.etcd.client();
    let prefix = format!("{}/hosts/host-a/summaries/", f.prefix);
    let opts = etcd_client::GetOptions::new().with_prefix();
    let resp = rt
        .block_on(client.get(prefix, Some(opts)))
        .expect("read the summary");
    let Some(kv) = resp.kvs().first() else {
        return (0, 0);
    };
    let v: Value = serde_json::from_slice(kv.value()).unwrap_or(Value::Null);
    let total = v["counts"]
        .as_object()
        .map_or(0, |c| c.values().filter_map(Value::as_u64).sum());
    (kv.version(), total)
}

/// `n` live claims `<prefix>/000`... of holder `w`, bound to `pid`, written
/// straight into `root`'s claims dir (faster than a process per claim).
fn write_claims(root: &Path, prefix: &str, n: usize, pid: u32) {
    for i in 0..n {
        write_claim(root, &format!("{prefix}/{i:03}"), pid);
    }
}

/// One lockfile for `key`, held by `w` bound to `pid`, written straight
/// into `root`'s claims dir.
fn write_claim(root: &Path, key: &str, pid: u32) {
    let claims = claimtop::claims::Root::new(root.to_path_buf());
    std::fs::create_dir_all(claims.claims_dir()).expect("claims dir");
    let id = claimtop::claims::LocalIdentity::current();
    let rec = claimtop::claims::ClaimRecord {
        schema_version: 1,
        key: key.to_string(),
        holder: "w".into(),
        acquired_at: claimtop::claims::now_ms(),
        pid: pid as i32,
        host: id.hostname.clone(),
        expires_at: Some(claimtop::claims::now_ms() + 3_600_000),
        reason: None,
        harness: None,
        machine_id: Some(id.machine_id.clone()).filter(|m| !m.is_empty()),
        metadata: Default::default(),
    };
    let path = claims.lockfile(&rec.key);
    std::fs::write(path, rec.to_yaml().expect("yaml")).expect("lockfile");
}

/// `claimtop publish` of `root` as host-a with `args` (its store, lease
/// and the rest), its log beside the root; not waited for.
fn spawn_host_a(f: &Fleet, root: &Path, args: &[&str]) -> Publisher {
    let mut cmd = claimtop(f.home.path());
    cmd.env(TEST_MACHINE_ID_ENV, "host-a")
        .args(["publish", "--root"])
        .arg(root)
        .args(args);
    let log = root.join("publish.log");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("start the publisher");
    Publisher { child, log }
}

/// Wait until host-a publishes `key`; the listing that shows it.
fn loop_until_published_list(f: &Fleet, key: &str) -> Value {
    let mut list = Value::Null;
    let seen = wait_for(PATIENCE, || {
        list = f.list();
        !published(&list, "host-a", key).is_empty()
    });
    assert!(seen, "{key} was never published: {list}");
    list
}

/// Wait until host-a publishes `key`; its root id.
fn loop_until_published(f: &Fleet, key: &str) -> String {
    let mut root_id = String::new();
    let seen = wait_for(Duration::from_secs(5), || {
        match published(&f.list(), "host-a", key).first() {
            Some(item) => {
                root_id = item["root_id"].as_str().unwrap_or_default().to_string();
                true
            }
            None => false,
        }
    });
    assert!(seen, "{key} was never published");
    root_id
}
