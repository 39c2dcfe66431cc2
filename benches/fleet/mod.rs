//! Figure 4: a fleet through one etcd. H simulated hosts (one root and one
//! `claimtop publish` each, told apart by the test-only machine id), N
//! lockfiles per root. Measured: the initial sync, each publisher's CPU
//! while nothing changes, one publisher's CPU while its root takes 100
//! lockfile changes a second, etcd writes per change (target 1, counted by
//! a watch on that host's keys and by the store revision), change → etcd
//! latency, the publishers' RSS, `list --json` of the whole fleet, one
//! `claimtop metrics` scrape of it, and the fleet view's change -> screen
//! (the dashboard's wiring in this process).

use crate::etcd_common::Etcd;
use crate::headless::Headless;
use claimtop::claims::{now_ms, ClaimRecord, LocalIdentity, Root};
use claimtop::dashboard::testing::RowId;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct FleetPlan {
    pub hosts: usize,
    pub claims: usize,
    pub idle_for: Duration,
    pub load_for: Duration,
    pub rate: u32,
    /// New lockfiles timed from their rename to the fleet view's frame.
    pub view_changes: usize,
}

const BIN: &str = env!("CARGO_BIN_EXE_claimtop");

struct Host {
    root: Root,
    child: Child,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child killed and reaped on drop.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn record(key: &str, pid: i32, acquired_at: i64) -> ClaimRecord {
    let id = LocalIdentity::current();
    ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: "bench-agent".into(),
        acquired_at,
        pid,
        host: id.hostname,
        expires_at: Some(acquired_at + 3_600_000),
        reason: None,
        harness: None,
        machine_id: Some(id.machine_id).filter(|m| !m.is_empty()),
        metadata: Default::default(),
    }
}

/// Write a lockfile as a seed-protocol writer replaces one: temp + rename.
fn put_lockfile(root: &Root, rec: &ClaimRecord) {
    let path = root.lockfile(&rec.key);
    let tmp = path.with_file_name(".bench-write.tmp");
    std::fs::write(&tmp, rec.to_yaml().expect("yaml")).expect("write");
    std::fs::rename(&tmp, &path).expect("rename");
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    // Fields 14 and 15 of stat; `rest` starts at field 3.
    n(11) + n(12)
}

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

fn clk_tck() -> f64 {
    // SAFETY: sysconf reads a constant of the running system.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

fn percentile(xs: &mut [f64], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[((xs.len() - 1) as f64 * p).round() as usize]
}

/// Every put or delete under `prefix` from now on, with when it arrived.
struct Counter {
    seen: Arc<Mutex<Vec<(Instant, String)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Counter {
    fn start(etcd: &Etcd, prefix: String) -> Counter {
        let (rt, mut c) = etcd.client();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (Arc::clone(&seen), Arc::clone(&stop));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            rt.block_on(async move {
                let opts = etcd_client::WatchOptions::new().with_prefix();
                let mut stream = c.watch(prefix, Some(opts)).await.expect("watch");
                let _ = ready_tx.send(());
                while !st.load(Ordering::SeqCst) {
                    let next =
                        tokio::time::timeout(Duration::from_millis(100), stream.message()).await;
                    if let Ok(Ok(Some(resp))) = next {
                        let now = Instant::now();
                        let mut seen = s.lock().expect("counter");
                        for ev in resp.events() {
                            if let Some(kv) = ev.kv() {
                                seen.push((now, String::from_utf8_lossy(kv.key()).into_owned()));
                            }
                        }
                    }
                }
            });
        });
        let _ = ready_rx.recv_timeout(Duration::from_secs(10));
        Counter {
            seen,
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> Vec<(Instant, String)> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        std::mem::take(&mut *self.seen.lock().expect("counter"))
    }
}

fn revision(etcd: &Etcd) -> i64 {
    let (rt, mut c) = etcd.client();
    rt.block_on(c.get("/", None))
        .ok()
        .and_then(|r| r.header().map(|h| h.revision()))
        .unwrap_or(0)
}

fn count_keys(etcd: &Etcd, prefix: &str) -> i64 {
    let (rt, mut c) = etcd.client();
    let opts = etcd_client::GetOptions::new()
        .with_prefix()
        .with_count_only();
    rt.block_on(c.get(prefix, Some(opts)))
        .map(|r| r.count())
        .unwrap_or(0)
}

/// Median time of `n` scrapes of `claimtop metrics` over the fleet, and
/// how many `claimtop_claims` series carry a host.
fn metrics_scrapes(url: &str, home: &Path, n: usize) -> (Duration, usize) {
    let mut cmd = Command::new(BIN);
    cmd.env("HOME", home)
        .env_remove("FNO_CLAIMS_ROOT")
        .env_remove("FNO_CLAIMS_STORE")
        .args(["--store", url]);
    let (mut server, addr) = crate::etcd_common::start_metrics(cmd);
    let mut took = Vec::with_capacity(n);
    let mut series = 0;
    for _ in 0..n {
        let t0 = Instant::now();
        let text = crate::etcd_common::metrics_text(&addr);
        took.push(t0.elapsed());
        series = text
            .lines()
            .filter(|l| l.starts_with("claimtop_claims{host="))
            .count();
    }
    let _ = server.kill();
    let _ = server.wait();
    took.sort();
    (took[took.len() / 2], series)
}

fn fleet_items(url: &str, home: &Path) -> (usize, usize, Duration) {
    let t0 = Instant::now();
    let o = Command::new(BIN)
        .env("HOME", home)
        .env_remove("FNO_CLAIMS_ROOT")
        .env_remove("FNO_CLAIMS_STORE")
        .args(["--store", url, "list", "--json"])
        .output()
        .expect("list");
    let took = t0.elapsed();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    let items = v["claims"].as_array().map_or(0, Vec::len);
    let online = v["hosts"]
        .as_array()
        .map_or(0, |h| h.iter().filter(|h| h["online"] == true).count());
    (items, online, took)
}

pub fn fleet(etcd: &Etcd, plan: &FleetPlan) {
    let prefix = "/bench-fleet";
    let url = etcd.url(prefix);
    let dir = tempfile::tempdir().expect("fleet dir");
    let holder = Reaped(
        Command::new("sleep")
            .arg("3600")
            .spawn()
            .expect("a live holder"),
    );
    let pid = holder.0.id() as i32;
    let start_ms = now_ms();
    let roots: Vec<Root> = (0..plan.hosts)
        .map(|h| {
            let root = Root::with_events_here(dir.path().join(format!("host-{h:02}")));
            std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
            for i in 0..plan.claims {
                let key = format!("task/{i:05}");
                let path: PathBuf = root.lockfile(&key);
                std::fs::write(path, record(&key, pid, start_ms).to_yaml().expect("yaml"))
                    .expect("lockfile");
            }
            root
        })
        .collect();
    let t0 = Instant::now();
    let hosts: Vec<Host> = roots
        .into_iter()
        .enumerate()
        .map(|(h, root)| {
            let log =
                std::fs::File::create(dir.path().join(format!("publish-{h:02}.log"))).expect("log");
            let child = Command::new(BIN)
                .env("HOME", dir.path())
                .env("CLAIMTOP_TEST_MACHINE_ID", format!("host-{h:02}"))
                .args(["publish", "--root"])
                .arg(&root.root)
                .args(["--store", &url])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("publish");
            Host { root, child }
        })
        .collect();
    let total = plan.hosts * plan.claims;
    let home = dir.path();
    // Counted in etcd itself (a listing of the whole fleet in a loop would
    // load the machine it measures): per host, its claims and their last
    // known copies (one transaction writes both), its hazards key, its host
    // record and its root's owner key. Counting the claims alone called the
    // sync done halfway, and its second half was then measured as idle
    // writes.
    let expected = (plan.hosts * (2 * plan.claims + 3)) as i64;
    let synced = loop {
        let keys = count_keys(etcd, &format!("{prefix}/hosts/"));
        if keys >= expected {
            break t0.elapsed();
        }
        if t0.elapsed() > Duration::from_secs(600) {
            println!("4. fleet: only {keys} of {expected} keys after 10 min; giving up");
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    println!(
        "4. fleet of {} hosts x {} claims through one etcd ({} claims):",
        plan.hosts, plan.claims, total
    );
    println!(
        "   initial sync, all hosts      {:>9.1} s",
        synced.as_secs_f64()
    );
    // Let the slowest publisher finish its first rounds.
    std::thread::sleep(Duration::from_secs(2));

    let pids: Vec<u32> = hosts.iter().map(|h| h.child.id()).collect();
    let before: Vec<u64> = pids.iter().map(|p| cpu_ticks(*p)).collect();
    let rev0 = revision(etcd);
    std::thread::sleep(plan.idle_for);
    let secs = plan.idle_for.as_secs_f64();
    let mut idle: Vec<f64> = pids
        .iter()
        .zip(&before)
        .map(|(p, b)| (cpu_ticks(*p) - b) as f64 / clk_tck() / secs * 100.0)
        .collect();
    let idle_writes = revision(etcd) - rev0;
    let mean = idle.iter().sum::<f64>() / idle.len().max(1) as f64;
    println!(
        "   publisher CPU, idle          {:>9.2} % of a core (mean of {}; max {:.2} %; {} etcd writes in {:.0} s)",
        mean,
        idle.len(),
        percentile(&mut idle, 1.0),
        idle_writes,
        secs
    );

    // 100 changes a second into host 0's root: a lockfile rewritten with a
    // new acquired_at, as a renewing writer would.
    let busy = &hosts[0];
    let watched = format!("{prefix}/hosts/host-00/");
    let counter = Counter::start(etcd, watched);
    let cpu0 = cpu_ticks(busy.child.id());
    let rev0 = revision(etcd);
    let every = Duration::from_secs(1) / plan.rate;
    let n = (plan.load_for.as_secs_f64() * f64::from(plan.rate)) as usize;
    let mut sent: Vec<(Instant, String)> = Vec::with_capacity(n);
    let l0 = Instant::now();
    for i in 0..n {
        let due = l0 + every * i as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let key = format!("task/{:05}", i % plan.claims);
        put_lockfile(&busy.root, &record(&key, pid, start_ms + 1 + i as i64));
        sent.push((Instant::now(), key));
    }
    let load_secs = l0.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_secs(1));
    let busy_cpu =
        (cpu_ticks(busy.child.id()) - cpu0) as f64 / clk_tck() / (load_secs + 1.0) * 100.0;
    let writes = counter.finish();
    let all_writes = revision(etcd) - rev0;
    let claim_writes: Vec<&(Instant, String)> = writes
        .iter()
        .filter(|(_, k)| k.contains("/claims/"))
        .collect();
    // Change → etcd: each change against the first write of its key after it.
    let mut lat: Vec<f64> = sent
        .iter()
        .filter_map(|(at, key)| {
            let enc = claimtop::claims::encode_key(key);
            claim_writes
                .iter()
                .find(|(w, k)| w >= at && k.ends_with(&enc))
                .map(|(w, _)| w.duration_since(*at).as_secs_f64() * 1e3)
        })
        .collect();
    println!(
        "   publisher CPU, 100 changes/s {:>9.2} % of a core ({} changes in {:.1} s)",
        busy_cpu, n, load_secs
    );
    println!(
        "   etcd writes per change       {:>9.3}   (host's keys: {} writes for {} changes; \
         whole store: {} writes; target 1)",
        writes.len() as f64 / n.max(1) as f64,
        writes.len(),
        n,
        all_writes
    );
    let (p50, p99) = (percentile(&mut lat, 0.5), percentile(&mut lat, 0.99));
    println!(
        "   change -> etcd               {:>9.1} ms p50, {:.1} ms p99 ({} matched)",
        p50,
        p99,
        lat.len()
    );
    let mut rss: Vec<f64> = pids.iter().map(|p| rss_mib(*p)).collect();
    println!(
        "   publisher RSS                {:>9.1} MiB max ({:.1} MiB median)",
        percentile(&mut rss, 1.0),
        percentile(&mut rss, 0.5)
    );
    let (items, online, took) = fleet_items(&url, home);
    println!(
        "   list --json of the fleet     {:>9.0} ms ({} items, {} hosts online)",
        took.as_secs_f64() * 1e3,
        items,
        online
    );
    let (scrape, series) = metrics_scrapes(&url, home, 5);
    println!(
        "   metrics scrape of the fleet  {:>9.0} ms median of 5 ({} host-labelled claims series)",
        scrape.as_secs_f64() * 1e3,
        series
    );
    fleet_view(&url, &hosts[0].root, total, plan.view_changes, pid);
    drop(hosts);
    drop(holder);
}

/// Fleet view change -> screen: the dashboard's own wiring over the store
/// (collector, watch, `update`, 160x48 frames into a `TestBackend`), in this
/// process. A new lockfile in host 00's root, timed from its rename to the
/// first frame drawn after the copy reached the model: the publisher's
/// inotify and write, etcd, the watch, the collector's re-read and a frame.
fn fleet_view(url: &str, root: &Root, total: usize, changes: usize, pid: i32) {
    let t0 = Instant::now();
    let mut h = Headless::start(url);
    let give_up = Instant::now() + Duration::from_secs(300);
    while h.app.claims.live.len() < total && Instant::now() < give_up {
        h.pump(Duration::from_secs(1));
    }
    let (whole, rows) = (t0.elapsed(), h.app.claims.live.len());
    let canonical = std::fs::canonicalize(&root.root).unwrap_or_else(|_| root.root.clone());
    let root_id = claimtop::store::etcd::layout::root_id(&canonical);
    let mut lat = Vec::with_capacity(changes);
    for i in 0..changes {
        let key = format!("view/{i:04}");
        let row = RowId::copy("host-00", &root_id, &key);
        put_lockfile(root, &record(&key, pid, now_ms()));
        let t = Instant::now();
        while h.app.claims.live.get(&row).is_none() && t.elapsed() < Duration::from_secs(10) {
            h.pump(Duration::from_millis(200));
        }
        if h.app.claims.live.get(&row).is_some() {
            lat.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let shown = lat.len();
    let (p50, p99) = (percentile(&mut lat, 0.5), percentile(&mut lat, 0.99));
    println!(
        "   fleet view: every row shown  {:>9.1} s ({} of {} rows)",
        whole.as_secs_f64(),
        rows,
        total
    );
    println!(
        "   fleet view change -> screen  {p50:>9.1} ms p50, {p99:.1} ms p99 ({shown} of {changes} shown)"
    );
}
