//! A fleet through one etcd: two publishers (two temp roots standing in for
//! two hosts, told apart by the test-only machine-id override) and the CLI
//! reading them back over `--store etcd://...`. Claims are written by the
//! seed protocol's Python implementation or by `claimtop acquire` on the
//! roots themselves, never through the store.
//! Run with `cargo test --features etcd --test etcd_fleet`.
#![cfg(feature = "etcd")]

#[path = "common/mod.rs"]
mod common;
mod etcd_common;
#[path = "etcd_fleet/feeds.rs"]
mod feeds;
#[path = "etcd_fleet/first_screen.rs"]
mod first_screen;
#[path = "etcd_fleet/idle.rs"]
mod idle;
#[path = "etcd_fleet/resync.rs"]
mod resync;
#[path = "etcd_fleet/summary.rs"]
mod summary;

use claimtop::cli::publish::TEST_MACHINE_ID_ENV;
use common::{claimtop, Sleeper};
use etcd_common::Etcd;
use serde_json::{json, Value};
use std::collections::BTreeSet;
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

#[test]
fn a_claim_written_on_one_hosts_root_appears_in_the_fleet_listing_within_a_second() {
    let Some(f) = Fleet::start("/fleet1") else {
        return;
    };
    let (a, b) = (root_dir(), root_dir());
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let _pb = Publisher::spawn(&f, b.path(), "host-b", "5s");
    let holder = Sleeper::spawn();
    let started = Instant::now();
    py_write(a.path(), "issue/7", "agent-1", holder.pid());
    let mut seen = Value::Null;
    let shown = wait_for(Duration::from_secs(1), || {
        seen = f.list();
        !published(&seen, "host-a", "issue/7").is_empty()
    });
    assert!(shown, "not listed within 1 s: {seen}");
    eprintln!("write → listed: {:?}", started.elapsed());
    let item = &published(&seen, "host-a", "issue/7")[0];
    assert_eq!(item["source"], "published");
    assert_eq!(item["state"], "live");
    assert_eq!(item["record"]["holder"], "agent-1");
    assert!(published(&seen, "host-b", "issue/7").is_empty());
    let hosts = seen["hosts"].as_array().expect("hosts");
    assert_eq!(hosts.len(), 2, "{seen}");
    assert!(hosts.iter().all(|h| h["online"] == true));
    let text = f.over(&["list"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.starts_with("HOST") && text.contains("SOURCE"),
        "{text}"
    );
}

#[test]
fn a_force_release_asked_over_the_store_is_carried_out_on_the_hosts_root_and_audited_in_both_places(
) {
    let Some(f) = Fleet::start("/fleet2") else {
        return;
    };
    let a = root_dir();
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let mut gone = Sleeper::spawn();
    py_write(a.path(), "stuck", "agent-9", gone.pid());
    gone.kill();
    assert!(wait_for(PATIENCE, || {
        !published(&f.list(), "host-a", "stuck").is_empty()
    }));
    let o = f.over(&[
        "force-release",
        "stuck",
        "--host",
        "host-a",
        "--operator",
        "ops",
        "--json",
    ]);
    let answer = json_of(&o);
    assert_eq!(o.status.code(), Some(0), "{answer}");
    assert_eq!(answer["outcome"], "archived");
    assert_eq!(answer["previous"]["holder"], "agent-9");
    let archived = PathBuf::from(answer["archived_to"].as_str().expect("archived_to"));
    assert!(
        archived.starts_with(a.path().join(".fno/claims/.expired")) && archived.is_file(),
        "{archived:?}"
    );
    assert!(!a.path().join(".fno/claims/stuck.lock").exists());
    let log = std::fs::read_to_string(a.path().join(".fno/events.jsonl")).expect("A's log");
    assert!(
        log.lines()
            .any(|l| l.contains("claim_force_released") && l.contains("\"operator\":\"ops\"")),
        "{log}"
    );
    let mirrored = wait_for(PATIENCE, || {
        events_of_host(&f.events(), "host-a")
            .iter()
            .any(|e| e["type"] == "claim_force_released" && e["data"]["key"] == "stuck")
    });
    assert!(mirrored, "the audit event was not mirrored");
    assert!(wait_for(PATIENCE, || {
        published(&f.list(), "host-a", "stuck").is_empty()
    }));
}

#[test]
fn a_force_release_of_a_key_that_changed_hands_since_it_was_seen_is_refused_by_the_host() {
    let Some(f) = Fleet::start("/fleet3") else {
        return;
    };
    let a = root_dir();
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "k", "agent-1", holder.pid());
    assert!(wait_for(PATIENCE, || {
        !published(&f.list(), "host-a", "k").is_empty()
    }));
    let o = f.over(&[
        "force-release",
        "k",
        "--host",
        "host-a",
        "--expect-holder",
        "someone-else",
        "--allow-live",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", json_of(&o));
    assert_eq!(json_of(&o)["outcome"], "refused");
    assert!(a.path().join(".fno/claims/k.lock").is_file());
}

#[test]
fn a_killed_publishers_host_goes_offline_within_its_lease_and_its_claims_are_not_shown_free() {
    let Some(f) = Fleet::start("/fleet4") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "held", "agent-1", holder.pid());
    assert!(wait_for(PATIENCE, || {
        !published(&f.list(), "host-a", "held").is_empty()
    }));
    pa.signal(libc::SIGKILL);
    let killed = Instant::now();
    let offline = wait_for(Duration::from_secs(LEASE_S + 1), || {
        f.host("host-a").is_some_and(|h| h["online"] == false)
    });
    assert!(offline, "still online {:?} after kill -9", killed.elapsed());
    eprintln!("kill -9 → offline: {:?}", killed.elapsed());
    let list = f.list();
    assert!(
        list["claims"]
            .as_array()
            .expect("claims")
            .iter()
            .all(|c| c["key"] != "held" || c["state"] != "free"),
        "{list}"
    );
    let host = f.host("host-a").expect("an offline host is still listed");
    assert!(host["last_seen_ms"].as_i64().unwrap_or(0) > 0, "{host}");
    let text = String::from_utf8_lossy(&f.over(&["list"]).stdout).into_owned();
    assert!(text.contains("OFFLINE, last seen"), "{text}");
}

#[test]
fn a_restarted_publisher_resyncs_its_claims_without_duplicating_events() {
    let Some(f) = Fleet::start("/fleet5") else {
        return;
    };
    let a = root_dir();
    let acquire = |key: &str| acquire_in(&f, a.path(), key);
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    acquire("one");
    assert!(wait_for(PATIENCE, || {
        events_of_host(&f.events(), "host-a").len() == 1
    }));
    pa.signal(libc::SIGKILL);
    pa.kill();
    // While the host is down: one claim released, another taken.
    let o = claimtop(f.home.path())
        .arg("--root")
        .arg(a.path())
        .args(["release", "one", "--holder", "w"])
        .output()
        .expect("release");
    assert!(o.status.success());
    acquire("two");
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let log_lines = std::fs::read_to_string(a.path().join(".fno/events.jsonl"))
        .expect("log")
        .lines()
        .count();
    assert_eq!(log_lines, 3);
    let mut mirrored = Vec::new();
    let caught_up = wait_for(Duration::from_secs(3), || {
        mirrored = events_of_host(&f.events(), "host-a");
        mirrored.len() >= 3
    });
    assert!(caught_up, "{mirrored:?}");
    // A line appended after the re-sync, once mirrored, says the re-sync
    // and everything it could have written twice are behind us.
    acquire("three");
    let mut mirrored = Vec::new();
    let past = wait_for(PATIENCE, || {
        mirrored = events_of_host(&f.events(), "host-a");
        mirrored.iter().any(|e| e["data"]["key"] == "three")
    });
    assert!(past, "{mirrored:?}");
    let kinds: Vec<&str> = mirrored.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "claim_acquired",
            "claim_released",
            "claim_acquired",
            "claim_acquired"
        ],
        "every line of the log exactly once"
    );
    let list = f.list();
    assert!(published(&list, "host-a", "one").is_empty(), "{list}");
    assert_eq!(published(&list, "host-a", "two").len(), 1, "{list}");
}

#[test]
fn a_decommissioned_host_is_forgotten_only_once_offline_and_leaves_nothing_behind() {
    let Some(f) = Fleet::start("/fleetforget") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    acquire_in(&f, a.path(), "kept");
    assert!(wait_for(PATIENCE, || {
        !published(&f.list(), "host-a", "kept").is_empty()
    }));
    let listed = json_of(&f.over(&["fleet", "--json"]));
    assert!(
        listed["hosts"].as_array().is_some_and(|h| h
            .iter()
            .any(|h| h["host_id"] == "host-a" && h["online"] == true)),
        "{listed}"
    );
    // Online: refused, exit 3, nothing removed.
    let o = f.over(&["fleet", "forget", "host-a", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(json_of(&o)["outcome"], "refused");
    assert!(!published(&f.list(), "host-a", "kept").is_empty());
    pa.signal(libc::SIGKILL);
    assert!(wait_for(Duration::from_secs(LEASE_S + 2), || {
        f.host("host-a").is_some_and(|h| h["online"] == false)
    }));
    let o = f.over(&["fleet", "forget", "host-a"]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.starts_with("forgot host "), "{text}");
    assert!(f.host("host-a").is_none(), "the host is no longer listed");
    // Nothing of the host is left under the prefix; its own root is untouched.
    let (rt, mut client) = f.etcd.client();
    let left = rt
        .block_on(
            client.get(
                "/fleetforget/hosts/",
                Some(
                    etcd_client::GetOptions::new()
                        .with_prefix()
                        .with_count_only(),
                ),
            ),
        )
        .expect("count");
    assert_eq!(left.count(), 0);
    assert!(a
        .path()
        .join(".fno/claims")
        .read_dir()
        .expect("root")
        .next()
        .is_some());
    // A second forget names no host: an error, not a silent success.
    let o = f.over(&["fleet", "forget", "host-a"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no host named host-a"));
}

#[test]
fn sigterm_stops_the_publisher_with_status_0_and_its_host_goes_offline_at_once() {
    let Some(f) = Fleet::start("/fleet6") else {
        return;
    };
    let a = root_dir();
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    pa.signal(libc::SIGTERM);
    let status = pa.child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{}", pa.log());
    let host = f.host("host-a").expect("listed");
    assert_eq!(host["online"], false, "offline as soon as it exits: {host}");
    assert!(pa.log().contains("level=info stopped"), "{}", pa.log());
}

#[test]
fn a_force_release_to_an_offline_host_is_declined_naming_the_host() {
    let Some(f) = Fleet::start("/fleet6b") else {
        return;
    };
    let a = root_dir();
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let hostname = f.host("host-a").expect("listed")["hostname"]
        .as_str()
        .expect("a hostname")
        .to_string();
    pa.signal(libc::SIGTERM);
    assert_eq!(pa.child.wait().expect("wait").code(), Some(0));
    let o = f.over(&["force-release", "k", "--host", "host-a", "--json"]);
    let v = json_of(&o);
    assert_eq!(o.status.code(), Some(3), "declined: {v}");
    assert_eq!(v["outcome"], "refused", "{v}");
    let reason = v["reason"].as_str().expect("a reason");
    assert!(
        reason.contains(&format!("host {hostname} (host-a) is offline")),
        "{reason}"
    );
    let o = f.over(&["force-release", "k", "--host", &hostname]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(
        text.contains(&format!("host {hostname} (host-a) is offline")),
        "{text}"
    );
}

#[test]
fn one_changed_lockfile_is_one_etcd_write() {
    let Some(f) = Fleet::start("/fleet7") else {
        return;
    };
    let a = root_dir();
    // No re-sweep during the test: only the change itself may write.
    let pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    let holder = Sleeper::spawn();
    for (i, key) in ["first", "second", "third"].iter().enumerate() {
        // The summary of what came before is written: nothing is pending.
        let settled = wait_for(PATIENCE, || summary_of(&f).1 == 2 * i as u64);
        assert!(settled, "{:?}\n{}", summary_of(&f), pa.log());
        let summaries = summary_version(&f);
        let before = f.revision();
        py_write(a.path(), key, &format!("agent-{i}"), holder.pid());
        assert!(wait_for(PATIENCE, || {
            !published(&f.list(), "host-a", key).is_empty()
        }));
        // Late notifications of the same change must not write again: a
        // lockfile written next, once published, says they have been read
        // (notifications come in order), and it is the one other write.
        let next = format!("{key}-next");
        py_write(a.path(), &next, "agent-next", holder.pid());
        assert!(wait_for(PATIENCE, || {
            !published(&f.list(), "host-a", &next).is_empty()
        }));
        // The root's summary is written besides, at most once a second:
        // its own writes are told apart by its version.
        let writes = f.revision() - before - (summary_version(&f) - summaries);
        assert_eq!(writes, 2, "{key} and {next}: {writes} writes\n{}", pa.log());
    }
}

/// How many times host-a's one root's summary was written.
fn summary_version(f: &Fleet) -> i64 {
    summary_of(f).0
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

/// Keys under `prefix` in the fleet's etcd.
fn count_keys(f: &Fleet, prefix: &str) -> i64 {
    let (rt, mut client) = f.etcd.client();
    let opts = etcd_client::GetOptions::new()
        .with_prefix()
        .with_count_only();
    rt.block_on(client.get(prefix, Some(opts)))
        .expect("count keys")
        .count()
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

#[test]
fn a_synced_publisher_holds_each_claim_and_its_last_known_copy_and_writes_nothing_while_idle() {
    let Some(f) = Fleet::start("/fleet-idle") else {
        return;
    };
    let a = root_dir();
    let holder = Sleeper::spawn();
    const CLAIMS: i64 = 120;
    write_claims(a.path(), "idle", CLAIMS as usize, holder.pid());
    // No re-sweep during the test: nothing changes, so nothing may write.
    let pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    // Synced: every claim and its last known copy (written together), the
    // root's hazards key, its summary, its owner key and the host record. A
    // count of the claims alone is reached halfway through the sync.
    let host_keys = "/fleet-idle/hosts/host-a/";
    let synced = wait_for(PATIENCE, || count_keys(&f, host_keys) == 2 * CLAIMS + 4);
    assert!(
        synced,
        "{} keys under {host_keys}\n{}",
        count_keys(&f, host_keys),
        pa.log()
    );
    // Past a few rounds of re-judging (every 2 s): none of them writes.
    let before = f.revision();
    std::thread::sleep(Duration::from_secs(5));
    let writes = f.revision() - before;
    assert_eq!(writes, 0, "{writes} writes while idle\n{}", pa.log());
}

#[test]
fn a_publisher_reconnects_on_its_own_after_etcd_stops_answering_and_publishes_what_changed_meanwhile(
) {
    let Some(f) = Fleet::start("/fleet8") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    f.etcd.members[0].pause();
    py_write(a.path(), "meanwhile", "agent-1", holder.pid());
    // Longer than the lease: etcd ends it once it runs again.
    std::thread::sleep(Duration::from_secs(LEASE_S + 1));
    f.etcd.members[0].signal(libc::SIGCONT);
    let back = wait_for(Duration::from_secs(15), || {
        let list = f.list();
        list["hosts"][0]["online"] == true && !published(&list, "host-a", "meanwhile").is_empty()
    });
    assert!(back, "not re-published after etcd came back:\n{}", pa.log());
    assert!(pa.log().contains("level=warn"), "{}", pa.log());
}

#[test]
fn a_holder_dying_is_published_as_a_changed_state_without_any_file_changing() {
    let Some(f) = Fleet::start("/fleet9") else {
        return;
    };
    let a = root_dir();
    // The full re-sweep is out of the picture: only re-judging can see it.
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "1h");
    let mut holder = Sleeper::spawn();
    py_write(a.path(), "k", "agent-1", holder.pid());
    let state = || {
        published(&f.list(), "host-a", "k")
            .first()
            .map(|i| i["state"].as_str().unwrap_or("").to_string())
    };
    assert!(wait_for(PATIENCE, || state().as_deref() == Some("live")));
    holder.kill();
    let changed = wait_for(Duration::from_secs(5), || {
        state().is_some_and(|s| s != "live")
    });
    assert!(changed, "still {:?}", state());
}

#[test]
fn doctor_over_the_store_reports_what_a_publishing_host_found_in_its_root() {
    let Some(f) = Fleet::start("/fleetdoc") else {
        return;
    };
    let a = root_dir();
    // No full re-sweep within the test (the claims dir exists before the
    // publisher starts, and its tick is a minute): the changed lockfile's
    // own re-read must carry its hazard to the store.
    let claims = a.path().join(".fno/claims");
    std::fs::create_dir_all(&claims).expect("claims dir");
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "60s");
    std::fs::write(claims.join("broken.lock"), b"{{{ not yaml").expect("plant");
    let mut doc = Value::Null;
    let found = wait_for(Duration::from_secs(5), || {
        doc = json_of(&f.over(&["doctor", "--json"]));
        doc["hazards"]
            .as_array()
            .is_some_and(|hs| hs.iter().any(|h| h["host_id"] == "host-a"))
    });
    assert!(found, "the host's hazard is not in doctor: {doc}");
    let h = doc["hazards"]
        .as_array()
        .and_then(|hs| hs.iter().find(|h| h["host_id"] == "host-a"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(h["kind"], "corrupted_claim", "{h}");
    assert_eq!(h["root"], a.path().to_string_lossy().as_ref(), "{h}");
    let text = f.over(&["doctor"]);
    assert_eq!(text.status.code(), Some(3), "hazards decline: {text:?}");
    let words = String::from_utf8_lossy(&text.stdout);
    // The host is named as the HOST column names it, not by its machine id.
    let label = f
        .host("host-a")
        .map(|h| h["label"].clone())
        .unwrap_or_default();
    let label = label.as_str().unwrap_or("(no label)");
    let line = words.lines().find(|l| l.contains("corrupted_claim"));
    assert!(
        line.is_some_and(|l| l.contains(&format!("host={label} "))),
        "{words}"
    );
    // The published copy names its own hazards, as the host's list does.
    let copy = published(&f.list(), "host-a", "broken");
    assert_eq!(copy[0]["hazards"], json!(["corrupted_claim"]), "{copy:?}");
}

/// The fleet view in a real terminal (tmux) over a real etcd with one
/// publisher: a claim written in the publisher's root shows with its host
/// and source, F on it is carried out in that root (archived under its
/// `.expired/`) and answered in the status line, and a publisher killed
/// with -9 turns its host offline on screen within its lease's TTL + 1 s.
#[test]
fn the_fleet_view_shows_a_hosts_claim_force_releases_it_in_the_hosts_root_and_sees_the_host_die() {
    use common::tmux::Tmux;
    if let Err(why) = Tmux::available() {
        common::cannot_run(&format!("the fleet view test needs tmux: {why}"));
        return;
    }
    let Some(f) = Fleet::start("/fleetview1") else {
        return;
    };
    let patience = Duration::from_secs(15);
    let a = root_dir();
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let hostname = f
        .host("host-a")
        .and_then(|h| h["hostname"].as_str().map(String::from))
        .expect("host-a's hostname");
    // Shown as the table shows it: sanitized, and cut to the column's 16.
    let shown_host: String = hostname.chars().take(15).collect();
    let mut gone = Sleeper::spawn();
    py_write(a.path(), "stuck", "agent-9", gone.pid());
    gone.kill();

    let tmux = Tmux::start(160, 48);
    tmux.wait_for("the shell prompt", patience, |s| !s.trim().is_empty());
    tmux.type_line(&format!(
        "env -u FNO_CLAIMS_STORE -u FNO_CLAIMS_ROOT HOME='{}' '{}' --store '{}'; echo EXIT=$?",
        f.home.path().display(),
        common::BIN,
        f.url
    ));
    // A table row, not the status line (which names the holder too).
    let row = |s: &str| {
        s.lines()
            .find(|l| l.contains("stuck") && l.contains("agent-9") && l.contains("published"))
            .map(String::from)
    };
    let screen = tmux.wait_for("the published claim with its host", patience, |s| {
        row(s).is_some_and(|r| r.contains(&shown_host) && r.contains("published"))
    });
    assert!(
        screen.contains(&format!(" hosts {hostname} 1")),
        "the hosts line counts host-a's claim: {screen}"
    );

    // F asks host-a's publisher; the claim is archived in host-a's root.
    tmux.keys(&["F"]);
    let dialog = tmux.wait_for("the force-release dialog", patience, |s| {
        s.contains("force-release") && s.contains("Esc cancel")
    });
    assert!(dialog.contains("publisher"), "says who acts: {dialog}");
    if dialog.contains("y force-release") {
        tmux.keys(&["y"]);
    } else {
        tmux.type_line("stuck");
    }
    tmux.wait_for("the host's answer and the row gone", patience, |s| {
        row(s).is_none() && s.contains(&format!("host {hostname}: "))
    });
    assert!(!a.path().join(".fno/claims/stuck.lock").exists());
    let expired: Vec<_> = std::fs::read_dir(a.path().join(".fno/claims/.expired"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        expired
            .iter()
            .any(|n| n.to_string_lossy().starts_with("stuck")),
        "archived under host-a's .expired/: {expired:?}"
    );

    // A corrupted lockfile in host-a's root: host-a's hazard list changes,
    // which re-reads the fleet at once (not at the host's next record
    // refresh, a minute away), and the header counts it as `list` does.
    let planted = Instant::now();
    std::fs::write(a.path().join(".fno/claims/broken.lock"), b"{{{ not yaml").expect("plant");
    tmux.wait_for("host-a's hazard in the header", patience, |s| {
        s.contains("1 hazard") && !s.contains("1 hazards")
    });
    eprintln!(
        "corrupted lockfile in host-a's root → hazard in the header: {:?}",
        planted.elapsed()
    );
    tmux.keys(&["h"]);
    let listed = tmux.wait_for("the hazards overlay", patience, |s| {
        s.contains("hazards (1)")
    });
    assert!(
        listed.contains(&format!("host {shown_host}")) && listed.contains("corrupted_claim"),
        "the overlay names the host and the hazard: {listed}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the overlay closed", patience, |s| {
        !s.contains("hazards (1)")
    });

    // A claim on host-a again, then its publisher dies without a word.
    let holder = Sleeper::spawn();
    let written = Instant::now();
    py_write(a.path(), "held", "agent-1", holder.pid());
    tmux.wait_for("the second claim", patience, |s| {
        s.lines()
            .any(|l| l.contains("held") && l.contains("agent-1") && l.contains("published"))
    });
    // Polled every 100 ms, and the write includes starting python3.
    eprintln!(
        "write in host-a's root → row on screen: {:?}",
        written.elapsed()
    );
    pa.signal(libc::SIGKILL);
    let killed = Instant::now();
    tmux.wait_for("host-a offline", Duration::from_secs(LEASE_S + 1), |s| {
        s.contains("offline, last seen")
    });
    eprintln!("kill -9 → offline on screen: {:?}", killed.elapsed());
    // Last seen is the host record's own word, the one the CLI prints: a
    // killed publisher was last seen when it last wrote, not when the
    // dashboard last looked.
    let seen = f
        .host("host-a")
        .and_then(|h| h["last_seen_ms"].as_i64())
        .expect("host-a's last_seen_ms");
    let said = format!(
        "last seen {}",
        claimtop::time::clock(seen, false, "%H:%M:%S")
    );
    let screen = tmux.wait_for("the record's last seen", patience, |s| s.contains(&said));
    assert!(screen.contains(&said), "{said}: {screen}");
    assert!(
        !screen
            .lines()
            .any(|l| l.contains("agent-1") && l.contains("published")),
        "an offline host's claims are not shown: {screen}"
    );
    pa.kill();
    tmux.keys(&["q"]);
    tmux.wait_for("a clean exit", patience, |s| s.contains("EXIT=0"));
}

/// F in the fleet view on a host whose publisher hangs: the op worker's
/// request is withdrawn after the wait and the status line says which host
/// did not answer, and in how long; nothing is done in the root.
#[test]
fn a_fleet_view_force_release_to_a_silent_host_says_it_did_not_answer_and_does_nothing() {
    use claimtop::dashboard::testing::{run_op_on, DEFAULT_ASK_WAIT};
    use claimtop::dashboard::testing::{ForceOptsShown, Verb};
    let Some(f) = Fleet::start("/fleetview2") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "k", "agent-1", holder.pid());
    let root_id = loop_until_published(&f, "k");
    let store = f.etcd.store("/fleetview2");
    pa.signal(libc::SIGSTOP);
    let op = Verb::AskHost {
        host_id: "host-a".into(),
        hostname: "alpha".into(),
        root_id: root_id.clone(),
        key: "k".into(),
        opts: ForceOptsShown {
            operator: "ops".into(),
            allow_live: true,
            ..ForceOptsShown::default()
        },
    };
    let asked = Instant::now();
    let result = run_op_on(&store, &op);
    pa.signal(libc::SIGCONT);
    assert!(!result.ok, "{result:?}");
    let within = claimtop::time::human_ms(DEFAULT_ASK_WAIT.as_millis() as i64);
    assert!(
        result
            .message
            .contains(&format!("(host-a) did not answer within {within}")),
        "{}",
        result.message
    );
    assert!(asked.elapsed() >= DEFAULT_ASK_WAIT);
    // Withdrawn: the publisher, back, finds nothing to do. A request asked
    // after its return, once answered, says it has served requests since
    // (whatever it was doing when stopped, it finished first).
    answered_after(&f, &root_id, &pa);
    assert!(a.path().join(".fno/claims/k.lock").is_file());
    assert!(!pa.log().contains("key=\"k\""), "{}", pa.log());
}

/// Ask host-a's root `root_id`, straight through the store, to
/// force-release a key it has no claim on, and wait for its answer: a sign
/// that the publisher has looked at its requests since.
fn answered_after(f: &Fleet, root_id: &str, pa: &Publisher) {
    let request = serde_json::json!({
        "key": "no-such-claim", "expect_holder": null, "expect_acquired_at": null,
        "operator": "probe", "allow_live": false, "at_ms": 0,
    });
    let base = format!("{}/hosts/host-a/{root_id}/", f.prefix);
    let (rt, mut client) = f.etcd.client();
    rt.block_on(client.put(format!("{base}requests/probe"), request.to_string(), None))
        .expect("put the probe request");
    let answered = wait_for(PATIENCE, || {
        rt.block_on(client.get(format!("{base}answers/probe"), None))
            .is_ok_and(|r| !r.kvs().is_empty())
    });
    assert!(
        answered,
        "the probe request was never answered\n{}",
        pa.log()
    );
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

/// `events --follow` over the store prints a host's events as the host
/// mirrors them, marked with its host and root exactly as `events` marks
/// the history.
#[test]
fn events_follow_over_the_store_prints_a_hosts_events_as_they_are_mirrored() {
    use std::io::{BufRead, BufReader};
    let Some(f) = Fleet::start("/fleetfollow") else {
        return;
    };
    let a = root_dir();
    let acquire = |key: &str| acquire_in(&f, a.path(), key);
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    acquire("before");
    assert!(wait_for(PATIENCE, || {
        events_of_host(&f.events(), "host-a").len() == 1
    }));

    let mut follow = claimtop(f.home.path())
        .env_remove("FNO_CLAIMS_STORE")
        .args(["--store", &f.url, "events", "--follow", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start events --follow");
    let stdout = follow.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                if tx.send(v).is_err() {
                    return;
                }
            }
        }
    });
    let key_of = |v: &Value| v["data"]["key"].as_str().unwrap_or("").to_string();
    // The history first: its feed is open by the time this is printed.
    let history = rx.recv_timeout(PATIENCE).expect("the history's line");
    assert_eq!(key_of(&history), "before", "{history}");
    assert_eq!(history["host_id"], "host-a", "{history}");

    let written = Instant::now();
    acquire("live");
    let live = rx.recv_timeout(PATIENCE);
    let latency = written.elapsed();
    let _ = follow.kill();
    let _ = follow.wait();
    let live = live.expect("the host's new event, followed");
    eprintln!("acquire in host-a's root → line of events --follow over the store: {latency:?}");
    assert_eq!(key_of(&live), "live", "{live}");
    let printed = events_of_host(&f.events(), "host-a");
    let same = printed
        .iter()
        .find(|e| key_of(e) == "live")
        .expect("the event in the history too");
    assert_eq!(&live, same, "followed and read back, one shape");
    for field in ["host", "host_id", "root"] {
        assert!(live[field].is_string(), "{field} missing: {live}");
    }
}

/// `claimtop metrics` over the store exports each online host's roots,
/// labelled with the host and root, counts what the host mirrors as the
/// feed brings it, says which hosts are up, and passes `promtool`.
#[test]
fn metrics_over_the_store_export_each_hosts_roots_and_whether_the_host_is_up() {
    let Some(f) = Fleet::start("/fleetmetrics") else {
        return;
    };
    let a = root_dir();
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    acquire_in(&f, a.path(), "one");
    assert!(wait_for(PATIENCE, || {
        events_of_host(&f.events(), "host-a").len() == 1
    }));
    let host = f
        .host("host-a")
        .and_then(|h| h["hostname"].as_str().map(String::from))
        .expect("host-a's hostname");
    let root = std::fs::canonicalize(a.path()).expect("root path");
    let labels = format!(
        "host=\"{host}\",host_id=\"host-a\",root=\"{}\"",
        root.display()
    );

    let mut over = claimtop(f.home.path());
    over.env_remove("FNO_CLAIMS_STORE")
        .args(["--store", &f.url]);
    let (mut server, addr) = etcd_common::start_metrics(over);
    let series = |name: &str, extra: &str| format!("{name}{{{labels},{extra}}}");
    // A scrape reads the root's summary, written at most once a second.
    let mut m = etcd_common::scrape(&addr);
    let one = wait_for(PATIENCE, || {
        m = etcd_common::scrape(&addr);
        m.get(&series("claimtop_claims", "state=\"live\"")) == Some(&1.0)
    });
    assert!(one, "{m:?}");
    assert_eq!(
        m[&series("claimtop_events_total", "type=\"claim_acquired\"")],
        1.0,
        "the history's event: {m:?}"
    );
    assert_eq!(
        m[&format!("claimtop_host_up{{host=\"{host}\",host_id=\"host-a\"}}")],
        1.0
    );

    // A second claim: its event comes by the feed, its claim by the listing.
    acquire_in(&f, a.path(), "two");
    let acquired = series("claimtop_events_total", "type=\"claim_acquired\"");
    let live = series("claimtop_claims", "state=\"live\"");
    let mut m = etcd_common::scrape(&addr);
    // The publisher mirrors the event and the claim in separate writes, so
    // a scrape may see one before the other: wait for both.
    let counted = wait_for(PATIENCE, || {
        m = etcd_common::scrape(&addr);
        m.get(&acquired) == Some(&2.0) && m.get(&live) == Some(&2.0)
    });
    assert!(counted, "{m:?}");

    let text = etcd_common::metrics_text(&addr);
    if let Ok(mut lint) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        use std::io::Write;
        lint.stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("feed promtool");
        let out = lint.wait_with_output().expect("promtool");
        assert!(
            out.status.success(),
            "promtool: {}{}\n{text}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    } else if std::env::var_os("CI").is_some() {
        panic!("promtool is not installed, and CI installs it");
    }

    // The host dies: it is down, and its claims are not exported as zero.
    pa.signal(libc::SIGKILL);
    pa.kill();
    let up = format!("claimtop_host_up{{host=\"{host}\",host_id=\"host-a\"}}");
    let down = wait_for(Duration::from_secs(LEASE_S + 5), || {
        m = etcd_common::scrape(&addr);
        m.get(&up) == Some(&0.0)
    });
    // SAFETY: kill(2) on our own child, not yet reaped.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let _ = server.wait();
    assert!(down, "{m:?}");
    assert!(
        !m.contains_key(&series("claimtop_claims", "state=\"live\"")),
        "an offline host's claims are unknown, not 0: {m:?}"
    );
}

/// A tiny xorshift, seeded from the clock and printed: random timings that a
/// failing run can name.
struct Jitter(u64);

impl Jitter {
    fn new() -> Jitter {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1;
        eprintln!("jitter seed {seed}");
        Jitter(seed)
    }

    fn ms(&mut self, from: u64, to: u64) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Duration::from_millis(from + self.0 % (to - from))
    }
}

/// A force-release whose publisher waits on a busy recovery mutex past the
/// requester's --timeout: 20 runs, the mutex freed at a random moment, and
/// every other run the publisher frozen until a random moment around the
/// requester's deadline (so taking and withdrawing race). The requester
/// either reports the archive it caused, or says nothing was done and
/// nothing is done, not even a second after.
#[test]
fn a_force_release_is_either_carried_out_and_reported_or_withdrawn_and_never_carried_out() {
    let Some(f) = Fleet::start("/fleetwithdraw") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    let claims = a.path().join(".fno/claims");
    let mut jitter = Jitter::new();
    let (mut archived, mut withdrawn) = (0, 0);
    for run in 0..20 {
        let key = format!("k{run}");
        py_write(a.path(), &key, "agent-1", holder.pid());
        loop_until_published(&f, &key);
        // An honest holder's mutex: young, no owner token to judge dead.
        let mutex = claims.join(format!("{key}.lock.recovery.d"));
        std::fs::create_dir(&mutex).expect("hold the recovery mutex");
        let hold = jitter.ms(300, 4_000);
        let freer = std::thread::spawn(move || {
            std::thread::sleep(hold);
            std::fs::remove_dir(&mutex).expect("free the recovery mutex");
        });
        let frozen = (run % 2 == 1).then(|| {
            let (pid, thaw) = (pa.child.id() as i32, jitter.ms(1_500, 2_500));
            pa.signal(libc::SIGSTOP);
            std::thread::spawn(move || {
                std::thread::sleep(thaw);
                // SAFETY: kill(2) on the publisher this test started.
                unsafe { libc::kill(pid, libc::SIGCONT) };
            })
        });
        let o = f.over(&[
            "--timeout",
            "2s",
            "force-release",
            &key,
            "--host",
            "host-a",
            "--allow-live",
        ]);
        freer.join().expect("freer");
        if let Some(t) = frozen {
            t.join().expect("thaw");
        }
        // Long enough for a publisher that acted late to have archived.
        std::thread::sleep(Duration::from_secs(1));
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let there = claims.join(format!("{key}.lock")).is_file();
        match o.status.code() {
            Some(0) => {
                assert!(
                    !there,
                    "run {run} (mutex held {hold:?}): reported archived, still there: {said}"
                );
                archived += 1;
            }
            Some(1) if said.contains("nothing was done") => {
                assert!(
                    there,
                    "run {run} (mutex held {hold:?}): said nothing was done, but archived: {said}"
                );
                withdrawn += 1;
            }
            other => panic!("run {run} (mutex held {hold:?}): exit {other:?}: {said}"),
        }
    }
    eprintln!("archived {archived}, withdrawn {withdrawn}");
}

/// The roots `list --json` shows for `host`, by path: their states.
fn root_states(f: &Fleet, host: &str) -> Vec<(String, String)> {
    let Some(h) = f.host(host) else {
        return Vec::new();
    };
    let mut roots: Vec<(String, String)> = h["roots"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    let s = |k: &str| r[k].as_str().unwrap_or("?").to_string();
                    (s("path"), s("state"))
                })
                .collect()
        })
        .unwrap_or_default();
    roots.sort();
    roots
}

fn canonical(p: &Path) -> String {
    std::fs::canonicalize(p)
        .expect("canonical root")
        .to_string_lossy()
        .into_owned()
}

/// The publisher `second` (its stderr in `log`) exits 1 saying `root` is
/// already published by `first`, and never that it publishes it.
fn refused_naming(second: &mut Child, log: &Path, root: &Path, first: &Publisher) {
    let mut status = None;
    wait_for(PATIENCE, || {
        status = second.try_wait().expect("wait");
        status.is_some()
    });
    if status.is_none() {
        let _ = second.kill();
        let _ = second.wait();
    }
    let said = std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{said}");
    let want = format!(
        "root {} is already published by pid {}",
        canonical(root),
        first.child.id()
    );
    assert!(said.contains(&want), "{want:?} not in: {said}");
    assert!(
        !said.contains("publishing root="),
        "said it publishes what it refused: {said}"
    );
}

/// A second `publish` of a root this machine already publishes exits 1
/// naming the first one's pid, and the first goes on publishing untroubled.
#[test]
fn a_second_publisher_of_a_root_refuses_naming_the_first_and_the_first_is_untouched() {
    let Some(f) = Fleet::start("/fleetowner") else {
        return;
    };
    let a = root_dir();
    let first = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let log = a.path().join("second.log");
    let mut cmd = claimtop(f.home.path());
    let mut second = publish_args(&mut cmd, &f, a.path(), "host-a", "5s")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("start the second publisher");
    refused_naming(&mut second, &log, a.path(), &first);
    let holder = Sleeper::spawn();
    py_write(a.path(), "after", "agent-1", holder.pid());
    assert!(wait_for(PATIENCE, || {
        !published(&f.list(), "host-a", "after").is_empty()
    }));
    assert!(!first.log().contains("lost etcd"), "{}", first.log());
}

/// Two publishers on one machine, each with its own root: both roots stay
/// listed with their claims, and neither publisher loses its lease to the
/// other.
#[test]
fn two_publishers_on_one_machine_with_their_own_roots_never_displace_each_other() {
    let Some(f) = Fleet::start("/fleetshared") else {
        return;
    };
    let (a, b) = (root_dir(), root_dir());
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let pb = Publisher::spawn(&f, b.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "on-a", "agent-1", holder.pid());
    py_write(b.path(), "on-b", "agent-2", holder.pid());
    let mut both = vec![
        (canonical(a.path()), "published".to_string()),
        (canonical(b.path()), "published".to_string()),
    ];
    both.sort();
    let shown = wait_for(PATIENCE, || {
        let l = f.list();
        !published(&l, "host-a", "on-a").is_empty() && !published(&l, "host-a", "on-b").is_empty()
    });
    assert!(shown, "{}", f.list());
    // Several lease lifetimes: long enough for publishers that fight to
    // have revoked each other's lease more than once.
    let until = Instant::now() + Duration::from_secs(3 * LEASE_S);
    while Instant::now() < until {
        let l = f.list();
        assert!(
            !published(&l, "host-a", "on-a").is_empty()
                && !published(&l, "host-a", "on-b").is_empty(),
            "a root's claims went missing: {l}"
        );
        assert_eq!(root_states(&f, "host-a"), both);
        std::thread::sleep(Duration::from_millis(200));
    }
    for p in [&pa, &pb] {
        assert!(!p.log().contains("lost etcd"), "{}", p.log());
    }
}

/// A root whose claims dir its publisher may not list: the host is online,
/// the root is listed as unreadable, and none of its claims is shown or
/// counted, as free or otherwise.
#[test]
fn a_root_its_publisher_cannot_read_is_published_as_unreadable_never_as_free() {
    use std::os::unix::fs::PermissionsExt;
    let Some(f) = Fleet::start("/fleetunreadable") else {
        return;
    };
    let a = root_dir();
    let holder = Sleeper::spawn();
    py_write(a.path(), "held", "agent-1", holder.pid());
    let claims = a.path().join(".fno/claims");
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod")
    };
    // Permission is what is denied: as root, to a publisher run as nobody
    // (from a copy of the binary that user can reach); otherwise to this
    // user itself.
    let (_bin_dir, cmd) = if unsafe { libc::geteuid() } == 0 {
        use std::os::unix::process::CommandExt;
        let dir = TempDir::new().expect("bin dir");
        mode(dir.path(), 0o755);
        let bin = dir.path().join("claimtop");
        std::fs::copy(common::BIN, &bin).expect("copy claimtop");
        mode(a.path(), 0o755);
        mode(&claims, 0o700);
        let mut cmd = Command::new(&bin);
        cmd.env("HOME", dir.path())
            .env_remove("FNO_CLAIMS_ROOT")
            .uid(65534)
            .gid(65534);
        (Some(dir), cmd)
    } else {
        mode(&claims, 0o000);
        (None, claimtop(f.home.path()))
    };
    let _pa = Publisher::spawn_from(&f, cmd, a.path(), "host-a", "5s");
    let path = canonical(a.path());
    let unreadable = wait_for(PATIENCE, || {
        root_states(&f, "host-a") == [(path.clone(), "unreadable".to_string())]
    });
    // Read while the root is still unreadable: the publisher's one feed
    // notices the permission coming back at once and publishes the root.
    let l = f.list();
    let h = f.host("host-a").expect("host-a listed");
    let text = f.over(&["list"]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    mode(&claims, 0o755);
    assert!(unreadable, "{l}");
    assert_eq!(h["online"], true, "{h}");
    assert!(
        h["roots"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("denied")),
        "{h}"
    );
    assert!(published(&l, "host-a", "held").is_empty(), "{l}");
    assert!(
        text.contains(&format!("UNREADABLE root {path}"))
            && text.contains("its claims are unknown, not free"),
        "{text}"
    );
}

/// A request written straight into the store with a 10 KB key (no claim
/// can have one) is answered, and publishes no claim for that key.
#[test]
fn a_request_for_a_key_no_claim_can_have_publishes_no_phantom_claim() {
    let Some(f) = Fleet::start("/fleetphantom") else {
        return;
    };
    let a = root_dir();
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "k", "agent-1", holder.pid());
    let root_id = loop_until_published(&f, "k");
    let key = "x".repeat(10 * 1024);
    let request = serde_json::json!({
        "key": key, "expect_holder": null, "expect_acquired_at": null,
        "operator": "ops", "allow_live": true, "at_ms": 0,
    });
    let base = format!("/fleetphantom/hosts/host-a/{root_id}/");
    let (rt, mut client) = f.etcd.client();
    rt.block_on(client.put(format!("{base}requests/1"), request.to_string(), None))
        .expect("put the request");
    let answered = wait_for(PATIENCE, || {
        rt.block_on(client.get(format!("{base}answers/1"), None))
            .is_ok_and(|r| !r.kvs().is_empty())
    });
    assert!(answered, "{}", _pa.log());
    // A publish of the phantom would follow the answer within a loop round;
    // a lockfile written after the answer, once published, says such a
    // round is behind us.
    py_write(a.path(), "after", "agent-2", holder.pid());
    let l = loop_until_published_list(&f, "after");
    assert!(published(&l, "host-a", &key).is_empty(), "a phantom claim");
    assert_eq!(
        l["claims"].as_array().map(Vec::len),
        Some(2),
        "only k and after are published: {l}"
    );
}

/// A request its publisher took, and then froze before answering: the
/// requester never says nothing was done; it says the host took it, that
/// the outcome is unknown yet, and where to look.
#[test]
fn a_request_taken_but_never_answered_is_reported_as_taken_with_its_outcome_unknown() {
    let Some(f) = Fleet::start("/fleettaken") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "k", "agent-1", holder.pid());
    let root_id = loop_until_published(&f, "k");
    // Keeps the publisher inside the request once it took it.
    let mutex = a.path().join(".fno/claims/k.lock.recovery.d");
    std::fs::create_dir(&mutex).expect("hold the recovery mutex");
    let requester = claimtop(f.home.path())
        .env_remove("FNO_CLAIMS_STORE")
        .args(["--store", &f.url, "--timeout", "1s", "force-release", "k"])
        .args(["--host", "host-a", "--allow-live"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the requester");
    let requests = format!("/fleettaken/hosts/host-a/{root_id}/requests/");
    let (rt, mut client) = f.etcd.client();
    let taken = wait_for(PATIENCE, || {
        let opts = etcd_client::GetOptions::new().with_prefix();
        rt.block_on(client.get(requests.as_str(), Some(opts)))
            .is_ok_and(|r| {
                r.kvs()
                    .iter()
                    .any(|kv| String::from_utf8_lossy(kv.value()).contains("\"taken\""))
            })
    });
    assert!(taken, "the publisher never took the request: {}", pa.log());
    pa.signal(libc::SIGSTOP);
    let o = requester.wait_with_output().expect("requester");
    pa.signal(libc::SIGCONT);
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("(host-a) took the request at")
            && said.contains("its outcome is unknown yet")
            && said.contains("claim_force_released")
            && !said.contains("nothing was done"),
        "{said}"
    );
    std::fs::remove_dir(&mutex).expect("free the recovery mutex");
}

#[test]
fn a_dead_hosts_claims_stay_listed_as_last_known_and_a_shared_hostname_needs_its_suffix() {
    let Some(f) = Fleet::start("/fleetlastknown") else {
        return;
    };
    let (a, b) = (root_dir(), root_dir());
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let _pb = Publisher::spawn(&f, b.path(), "host-b", "5s");
    for key in ["a1", "a2", "a3"] {
        acquire_in(&f, a.path(), key);
    }
    for key in ["b1", "b2"] {
        acquire_in(&f, b.path(), key);
    }
    assert!(
        wait_for(PATIENCE, || f.list()["counts"]["live"] == 5),
        "{}",
        f.list()
    );
    pa.signal(libc::SIGKILL);
    assert!(wait_for(Duration::from_secs(LEASE_S) + PATIENCE, || {
        f.host("host-a").is_some_and(|h| h["online"] == false)
    }));
    // Not live (nobody vouches for them), not gone: last known.
    let list = f.list();
    assert_eq!(list["counts"]["live"], 2, "{list}");
    assert_eq!(list["counts"]["last_known"], 3, "{list}");
    let kept = list["last_known"].as_array().expect("last_known");
    assert_eq!(kept.len(), 3, "{list}");
    assert!(kept
        .iter()
        .all(|c| c["host_id"] == "host-a" && c["last_known_at_ms"].as_i64() > Some(0)));
    assert!(
        published(&list, "host-a", "a1").is_empty(),
        "never among the claims"
    );
    let text = String::from_utf8_lossy(&f.over(&["list"]).stdout).into_owned();
    assert!(
        text.contains("2 live") && text.contains("3 last known"),
        "{text}"
    );
    assert!(line_of(&text, "a2").contains("last known at "), "{text}");
    let doctor = json_of(&f.over(&["doctor", "--json"]));
    assert_eq!(doctor["last_known"], 3, "{doctor}");
    // Both publishers run on this machine: one hostname, two hosts.
    let hosts = json_of(&f.over(&["fleet", "--json"]));
    let hosts = hosts["hosts"].as_array().expect("hosts").clone();
    let name = hosts[0]["hostname"].as_str().expect("hostname").to_string();
    let label_a = hosts
        .iter()
        .find(|h| h["host_id"] == "host-a")
        .and_then(|h| h["label"].as_str())
        .expect("a label")
        .to_string();
    assert_eq!(label_a, format!("{name}·host-a"));
    let o = f.over(&["fleet", "forget", &name]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&label_a) && err.contains("host-b"), "{err}");
    assert_eq!(f.list()["counts"]["last_known"], 3, "nothing removed");
    let o = f.over(&["fleet", "forget", &label_a]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let list = f.list();
    assert_eq!(list["counts"]["last_known"], 0, "{list}");
    assert_eq!(list["counts"]["live"], 2, "{list}");
}

fn line_of<'a>(text: &'a str, word: &str) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().any(|w| w == word))
        .unwrap_or_default()
}

#[test]
fn list_as_of_over_the_store_reads_its_own_log_and_every_hosts_mirrored_one() {
    let Some(f) = Fleet::start("/fleetasof") else {
        return;
    };
    let a = root_dir();
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    acquire_in(&f, a.path(), "asof/on-host");
    let o = f.over(&["acquire", "asof/in-store", "--holder", "w", "--ttl", "1h"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        wait_for(PATIENCE, || !events_of_host(&f.events(), "host-a")
            .is_empty()),
        "the host's acquire was never mirrored"
    );
    // An instant after both acquires, in whole seconds.
    std::thread::sleep(Duration::from_millis(1100));
    let at = claimtop::time::utc_hms(claimtop::time::now_ms() / 1000 * 1000);
    let v = json_of(&f.over(&["list", "--as-of", &at, "--json"]));
    let rows: Vec<(String, String)> = v["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("key"), s("root"))
        })
        .collect();
    let dir = a
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    assert!(
        rows.iter()
            .any(|(k, r)| k == "asof/on-host" && r.ends_with(&dir) && r.contains(':')),
        "the host's claim, named by host and root: {v}"
    );
    assert!(
        rows.contains(&("asof/in-store".into(), "etcd".into())),
        "the store's own claim: {v}"
    );
}

/// How host `id` reads in `fleet`: online or not, how many claims it
/// publishes now, and how many it last published.
fn host_reads(fleet: &claimtop::store::fleet::FleetState, id: &str) -> (bool, usize, usize) {
    let online = fleet.hosts.iter().any(|h| h.host_id == id && h.online);
    let of = |items: &[claimtop::store::fleet::FleetItem]| {
        items.iter().filter(|i| i.host_id == id).count()
    };
    (online, of(&fleet.items), of(&fleet.last_known))
}

/// A publisher (lease 5 s) black-holed from etcd for 8 s loses its lease,
/// and its host reads offline with its claims last known. When the
/// partition heals it takes its root again and writes every copy back:
/// read over and over meanwhile, the host is never online with a claim
/// missing, nor offline without its last known copies. Its keys never
/// look free.
#[test]
fn a_host_back_from_a_partition_past_its_lease_never_reads_online_with_its_claims_missing() {
    use claimtop::store::Backend;
    let Some(f) = Fleet::start("/fleet-hole") else {
        return;
    };
    const CLAIMS: usize = 300;
    let a = root_dir();
    let holder = Sleeper::spawn();
    write_claims(a.path(), "hole", CLAIMS, holder.pid());
    let proxy = etcd_common::Proxy::to(&f.etcd.members[0].endpoint());
    let url = format!("etcd://{}/fleet-hole", proxy.endpoint());
    let args = ["--store", &url, "--lease-ttl", "5s", "--resweep", "1h"];
    let pa = spawn_host_a(&f, a.path(), &args);
    let store = f.etcd.store("/fleet-hole");
    let fleet = store.fleet().expect("a fleet");
    let reads = || host_reads(&fleet.state().expect("read the fleet"), "host-a");
    let synced = wait_for(PATIENCE, || reads() == (true, CLAIMS, 0));
    assert!(synced, "never published: {:?}\n{}", reads(), pa.log());

    proxy.black_hole(true);
    let cut = Instant::now();
    let gone = wait_for(PATIENCE, || reads() == (false, 0, CLAIMS));
    assert!(gone, "the lease outlived the partition: {:?}", reads());
    // The 8 s: well past the 5 s lease.
    std::thread::sleep(Duration::from_secs(8).saturating_sub(cut.elapsed()));
    proxy.black_hole(false);
    let healed = Instant::now();
    let (mut samples, mut offline, mut wrong) = (0, 0, Vec::new());
    loop {
        let (online, now, known) = reads();
        samples += 1;
        let at = healed.elapsed().as_millis();
        if online && now < CLAIMS {
            wrong.push(format!(
                "+{at} ms: online with {now} claims, {known} last known"
            ));
        }
        if !online {
            offline += 1;
            if known < CLAIMS {
                wrong.push(format!("+{at} ms: offline with {known} last known"));
            }
        }
        if online && now == CLAIMS {
            break;
        }
        assert!(
            healed.elapsed() < PATIENCE * 3,
            "not back within {:?}: {:?}\n{}",
            PATIENCE * 3,
            reads(),
            pa.log()
        );
    }
    println!(
        "back from the partition: online with all {CLAIMS} claims {} ms after it healed; \
         {samples} readings, {offline} of them offline with the claims last known",
        healed.elapsed().as_millis()
    );
    assert!(
        wrong.is_empty(),
        "the host read wrong: {wrong:?}\n{}",
        pa.log()
    );
}

/// One directory reached by a second path is one root: a second `publish`
/// of it through that path refuses, naming the first. The second path is a
/// bind mount when the test can make one (root, in a mount namespace of the
/// second publisher's own, so nothing outlives it), else a symlink.
#[test]
fn a_root_reached_through_a_bind_mount_or_a_symlink_is_the_root_its_first_publisher_holds() {
    let Some(f) = Fleet::start("/fleetbind") else {
        return;
    };
    let a = root_dir();
    let other = TempDir::new().expect("the second path's dir");
    let first = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let log = a.path().join("second.log");
    let mut cmd = claimtop(f.home.path());
    let cmd = publish_args(&mut cmd, &f, Path::new("$B"), "host-a", "5s");
    // SAFETY: geteuid(2) has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let can_unshare = root
        && Command::new("unshare")
            .args(["-m", "true"])
            .status()
            .is_ok_and(|s| s.success());
    let second_path = other.path().join("b");
    let mut second = if can_unshare {
        std::fs::create_dir(&second_path).expect("the mount point");
        // The publisher's own command line, run in a mount namespace of its
        // own where `$B` is `$A` bound again.
        let mut c = Command::new("unshare");
        c.args(["-m", "--propagation", "private", "sh", "-c"])
            .arg("mount --bind \"$A\" \"$B\" && exec \"$@\"")
            .arg("sh")
            .arg(cmd.get_program())
            .args(cmd.get_args().map(|a| {
                if a == "$B" {
                    second_path.as_os_str()
                } else {
                    a
                }
            }))
            .env("A", a.path())
            .env("B", &second_path);
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c
    } else {
        eprintln!("not root (or no mount namespace): the second path is a symlink");
        std::os::unix::fs::symlink(a.path(), &second_path).expect("symlink");
        let mut c = claimtop(f.home.path());
        publish_args(&mut c, &f, &second_path, "host-a", "5s");
        c
    }
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(&log).expect("log"))
    .spawn()
    .expect("start the second publisher");
    refused_naming(&mut second, &log, a.path(), &first);
    let roots = root_states(&f, "host-a");
    assert_eq!(roots, [(canonical(a.path()), "published".to_string())]);
}

/// The host ids among a listing's published items.
fn item_hosts(list: &Value) -> BTreeSet<String> {
    let items = list["claims"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter(|c| c["source"] == "published")
        .filter_map(|c| c["host_id"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn list_limited_to_a_host_or_a_root_keeps_only_what_it_publishes() {
    let Some(f) = Fleet::start("/fleetonly") else {
        return;
    };
    let (a, b) = (root_dir(), root_dir());
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let _pb = Publisher::spawn(&f, b.path(), "host-b", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "only/1", "agent-a", holder.pid());
    py_write(b.path(), "only/1", "agent-b", holder.pid());
    let mut all = Value::Null;
    let both = wait_for(PATIENCE, || {
        all = f.list();
        item_hosts(&all).len() == 2
    });
    assert!(both, "both hosts' claims were never listed: {all}");
    let only_a = json_of(&f.over(&["list", "--json", "--host", "host-a"]));
    assert_eq!(item_hosts(&only_a), BTreeSet::from(["host-a".to_string()]));
    let hosts = only_a["hosts"].as_array().expect("hosts");
    assert_eq!(hosts.len(), 1, "{only_a}");
    let b_root = published(&all, "host-b", "only/1")[0]["root_id"]
        .as_str()
        .expect("a root id")
        .to_string();
    let only_b = json_of(&f.over(&["list", "--json", "--root-id", &b_root]));
    assert_eq!(item_hosts(&only_b), BTreeSet::from(["host-b".to_string()]));
    // The text table is limited alike.
    let text = f.over(&["list", "--host", "host-b"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("agent-b") && !text.contains("agent-a"),
        "{text}"
    );
}
