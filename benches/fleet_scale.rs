//! The fleet at scale (issue 27's table): H publishers (`claimtop publish`,
//! the real binary, told apart by the test-only machine id) × N lockfiles
//! each, through one etcd on free loopback ports, every root a temp dir.
//! Printed: the initial sync; etcd's requests/s (by its own
//! `grpc_server_started_total`, keep-alives apart) and CPU while nothing
//! changes; the publishers' CPU meanwhile; `list --json` of the store; one
//! `metrics` scrape (summaries, and `--per-claim`); `fleet --json`; and a
//! restart storm (every publisher killed and started again at once) with
//! the latency of `claimtop status` throughout; and the dashboard over the
//! store: its first screen with the hosts and counts (from the summaries),
//! every copy in, and change → screen p99 (a lockfile written in a host's
//! root, until its copy is a row).
//!
//! `cargo bench --features etcd --bench fleet_scale` runs 100 × 2 000;
//! `CLAIMTOP_FLEET=H,N` another size; `--quick` (or `cargo test
//! --benches`) 3 × 50.

mod common;
#[path = "../tests/etcd_common/mod.rs"]
mod etcd_common;
mod headless;

use claimtop::claims::{now_ms, ClaimRecord, LocalIdentity, Root};
use etcd_common::Etcd;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_claimtop");
const PREFIX: &str = "/scale";

/// A publisher of one root, killed and reaped on drop.
struct Host {
    machine: String,
    child: Child,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn size() -> (usize, usize) {
    if let Ok(v) = std::env::var("CLAIMTOP_FLEET") {
        if let Some((h, n)) = v.split_once(',') {
            if let (Ok(h), Ok(n)) = (h.trim().parse(), n.trim().parse()) {
                return (h, n);
            }
        }
    }
    match common::quick_mode() {
        true => (3, 50),
        false => (100, 2_000),
    }
}

/// The publishers' `--lease-ttl` when `CLAIMTOP_FLEET_TTL` names one (else
/// `publish`'s default): renewals per second are 3 × hosts / TTL.
fn lease_ttl() -> Option<String> {
    std::env::var("CLAIMTOP_FLEET_TTL").ok()
}

fn main() {
    let (hosts, claims) = size();
    let Some(etcd) = Etcd::single() else {
        eprintln!("no etcd: nothing to measure");
        return;
    };
    let url = etcd.url(PREFIX);
    let endpoint = etcd.members[0].endpoint();
    let etcd_pid = etcd.members[0].pid() as u32;
    let home_dir = tempfile::tempdir().expect("home");
    let home = home_dir.path();
    println!(
        "fleet at scale: {hosts} hosts × {claims} claims, lease {}, etcd at {endpoint}",
        lease_ttl().unwrap_or_else(|| "publish's default".into())
    );
    let roots: Vec<(tempfile::TempDir, Root)> = (0..hosts)
        .map(|i| {
            let dir = tempfile::tempdir().expect("root");
            let root = Root::with_events_here(dir.path().to_path_buf());
            write_claims(&root, i, claims);
            (dir, root)
        })
        .collect();
    let expected = (hosts * (2 * claims + 4)) as i64;

    // 1. The initial sync: every publisher started at once.
    let began = Instant::now();
    let mut fleet: Vec<Host> = roots
        .iter()
        .enumerate()
        .map(|(i, (_, root))| start(&url, home, &root.root, i))
        .collect();
    let synced = wait_keys(&etcd, expected, Duration::from_secs(600));
    println!(
        "initial sync (every claim, twin, summary and owner key in etcd): {:.1} s{}",
        began.elapsed().as_secs_f64(),
        if synced {
            ""
        } else {
            " (NOT complete after 10 min)"
        }
    );

    // 2. Idle: nothing changes. The first 30 s still hold etcd's own
    // aftermath of the sync (its snapshot past 100 000 writes, the
    // backend's commits); the next two minutes are the fleet at rest, over
    // a span that takes in what comes once a minute or two (each root's
    // safety net, etcd's forced garbage collection), which a shorter
    // window catches or misses by chance.
    std::thread::sleep(Duration::from_secs(3));
    for (window, secs) in [("first 30 s", 30), ("next 2 min", 120)] {
        let idle = idle_cost(&endpoint, etcd_pid, &fleet, Duration::from_secs(secs));
        println!(
            "etcd while nothing changes ({window}): {:.2} requests/s besides keep-alives \
             ({:.1} keep-alive renewals/s), {:.2} % of a core",
            idle.requests_per_s, idle.keepalives_per_s, idle.etcd_cpu
        );
        println!(
            "all publishers while nothing changes ({window}): {:.2} % of a core",
            idle.publishers_cpu
        );
    }

    // 3. Readers.
    let list: Vec<[Duration; 3]> = (0..3).map(|_| list_json(home, &url)).collect();
    let at = |i: usize| list.iter().map(|l| l[i]).collect::<Vec<_>>();
    println!(
        "list --json of the store: first byte {}; first claim {}; whole {}",
        secs(&at(0)),
        secs(&at(1)),
        secs(&at(2))
    );
    let fleet_json = timed(3, || run(home, &["--store", &url, "fleet", "--json"]));
    println!("fleet --json (summaries): {}", secs(&fleet_json));
    let scrape = scrapes(home, &url, &[], 3);
    println!("one metrics scrape (summaries): {}", secs(&scrape));
    let per_claim = scrapes(home, &url, &["--per-claim"], 3);
    println!("one metrics scrape (--per-claim): {}", secs(&per_claim));
    dashboard_figures(&url, &roots[0].1, hosts, claims);

    // 4. A restart storm: every publisher killed, then all started at
    // once; `claimtop status` asked over and over meanwhile.
    for h in &mut fleet {
        let _ = h.child.kill();
        let _ = h.child.wait();
    }
    let machines: Vec<String> = fleet.iter().map(|h| h.machine.clone()).collect();
    drop(fleet);
    let storm = Instant::now();
    let fleet: Vec<Host> = roots
        .iter()
        .enumerate()
        .map(|(i, (_, root))| start(&url, home, &root.root, i))
        .collect();
    let mut latencies = Vec::new();
    let online = loop {
        let t = Instant::now();
        run(home, &["--store", &url, "status", "no-such-key"]);
        latencies.push(t.elapsed());
        // Each new publisher says once it has taken its root and written
        // every copy on its lease.
        let synced = roots
            .iter()
            .filter(|(_, r)| log_of(&r.root).contains("level=info connected"))
            .count();
        if synced == machines.len() {
            break true;
        }
        if storm.elapsed() > Duration::from_secs(600) {
            break false;
        }
    };
    latencies.sort();
    println!(
        "restart storm: every host online and synced again in {:.1} s{}; \
         `claimtop status` during it: {} asked, p50 {:.2} s, max {:.2} s",
        storm.elapsed().as_secs_f64(),
        if online { "" } else { " (NOT after 10 min)" },
        latencies.len(),
        latencies[latencies.len() / 2].as_secs_f64(),
        latencies.last().map_or(0.0, Duration::as_secs_f64)
    );
    drop(fleet);
}

/// `n` live claims of this process (alive all along) in `root`.
fn write_claims(root: &Root, host: usize, n: usize) {
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    let id = LocalIdentity::current();
    let now = now_ms();
    for i in 0..n {
        let rec = ClaimRecord {
            schema_version: 1,
            key: format!("h{host:03}/claim-{i:05}"),
            holder: "bench-agent".into(),
            acquired_at: now,
            pid: std::process::id() as i32,
            host: id.hostname.clone(),
            expires_at: Some(now + 3_600_000),
            reason: None,
            harness: None,
            machine_id: Some(id.machine_id.clone()).filter(|m| !m.is_empty()),
            metadata: Default::default(),
        };
        let path = root.lockfile(&rec.key);
        std::fs::write(path, rec.to_yaml().expect("yaml")).expect("lockfile");
    }
}

fn start(url: &str, home: &Path, root: &Path, i: usize) -> Host {
    let machine = format!("bench-host-{i:03}");
    let child = Command::new(BIN)
        .env("HOME", home)
        .env_remove("FNO_CLAIMS_STORE")
        .env(claimtop::cli::publish::TEST_MACHINE_ID_ENV, &machine)
        .args(["publish", "--root"])
        .arg(root)
        .args(["--store", url])
        .args(
            lease_ttl()
                .map(|t| ["--lease-ttl".to_string(), t])
                .into_iter()
                .flatten(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(root.join("publish.log")).expect("log"))
        .spawn()
        .expect("start a publisher");
    Host { machine, child }
}

fn run(home: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .env("HOME", home)
        .env_remove("FNO_CLAIMS_STORE")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run claimtop")
}

/// `list --json` of the store as a reader sees it: when its first byte
/// came, its first claim, and its end.
fn list_json(home: &Path, url: &str) -> [Duration; 3] {
    use std::io::Read;
    let t = Instant::now();
    let mut child = Command::new(BIN)
        .env("HOME", home)
        .env_remove("FNO_CLAIMS_STORE")
        .args(["--store", url, "list", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run claimtop");
    let mut out = child.stdout.take().expect("stdout");
    let (mut first, mut claim) = (None, None);
    let mut head = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = out.read(&mut buf).expect("read list --json");
        if n == 0 {
            break;
        }
        first.get_or_insert_with(|| t.elapsed());
        if claim.is_none() {
            head.extend_from_slice(&buf[..n]);
            if head.windows(11).any(|w| w == b"\"claims\":[{") {
                claim = Some(t.elapsed());
            }
        }
    }
    let _ = child.wait();
    let whole = t.elapsed();
    [first.unwrap_or(whole), claim.unwrap_or(whole), whole]
}

/// Until the fleet's keys number `want`, at most `within`.
fn wait_keys(etcd: &Etcd, want: i64, within: Duration) -> bool {
    let (rt, mut client) = etcd.client();
    let opts = etcd_client::GetOptions::new()
        .with_prefix()
        .with_count_only();
    let deadline = Instant::now() + within;
    loop {
        let got = rt
            .block_on(client.get(format!("{PREFIX}/hosts/"), Some(opts.clone())))
            .map(|r| r.count())
            .unwrap_or(0);
        if got >= want {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The publisher's log in `root` (a fresh one each start).
fn log_of(root: &Path) -> String {
    std::fs::read_to_string(root.join("publish.log")).unwrap_or_default()
}

struct Idle {
    requests_per_s: f64,
    keepalives_per_s: f64,
    etcd_cpu: f64,
    publishers_cpu: f64,
}

fn idle_cost(endpoint: &str, etcd_pid: u32, fleet: &[Host], over: Duration) -> Idle {
    let calls = || etcd_common::grpc_started(endpoint);
    // A renewal is a message on the lease's one stream.
    let renewals = || {
        etcd_common::grpc_by_method(endpoint, "grpc_server_msg_received_total")
            .get("LeaseKeepAlive")
            .copied()
            .unwrap_or(0.0)
    };
    let publishers = || fleet.iter().map(|h| cpu_ticks(h.child.id())).sum::<u64>();
    let (calls0, renew0) = (calls(), renewals());
    let (etcd0, pubs0, t0) = (cpu_ticks(etcd_pid), publishers(), Instant::now());
    std::thread::sleep(over);
    // The CPU first: the scrapes that follow are the bench's, not the
    // fleet's (each renders every one of etcd's series).
    let (etcd1, pubs1) = (cpu_ticks(etcd_pid), publishers());
    let (calls1, renew1) = (calls(), renewals());
    let secs = t0.elapsed().as_secs_f64();
    let delta = |m: &str| calls1.get(m).unwrap_or(&0.0) - calls0.get(m).unwrap_or(&0.0);
    let keepalives = delta("LeaseKeepAlive");
    let all: f64 = calls1.keys().map(|m| delta(m)).sum();
    let pct = |ticks: u64| ticks as f64 / clk_tck() / secs * 100.0;
    Idle {
        requests_per_s: (all - keepalives) / secs,
        keepalives_per_s: (renew1 - renew0) / secs,
        etcd_cpu: pct(etcd1.saturating_sub(etcd0)),
        publishers_cpu: pct(pubs1.saturating_sub(pubs0)),
    }
}

/// `n` scrapes of one `metrics` server over the store, each timed.
fn scrapes(home: &Path, url: &str, flags: &[&str], n: usize) -> Vec<Duration> {
    let mut cmd = Command::new(BIN);
    cmd.env("HOME", home)
        .env_remove("FNO_CLAIMS_STORE")
        .args(["--store", url]);
    let (mut server, addr) = etcd_common::start_metrics_with(cmd, flags);
    let took = timed(n, || etcd_common::metrics_text(&addr));
    let _ = server.kill();
    let _ = server.wait();
    took
}

fn timed<T>(n: usize, mut f: impl FnMut() -> T) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .collect()
}

fn secs(xs: &[Duration]) -> String {
    let mut v = xs.to_vec();
    v.sort();
    let s: Vec<String> = v
        .iter()
        .map(|d| format!("{:.2}", d.as_secs_f64()))
        .collect();
    format!("{} s (of {})", s.join(" / "), v.len())
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

fn clk_tck() -> f64 {
    // SAFETY: sysconf reads a constant of the running system.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

/// Changes timed for the dashboard's change → screen p99.
const DASHBOARD_CHANGES: usize = 50;

/// The dashboard over the fleet, its live wiring with no terminal (as
/// benches/mixed measures a mix): the first screen with every host and
/// the counts of every claim, every copy a row, and change → screen p99
/// over lockfiles written in `root` (host 0's), each until its copy is a
/// row.
fn dashboard_figures(url: &str, root: &Root, hosts: usize, claims: usize) {
    let total = hosts * claims;
    let t0 = Instant::now();
    let mut h = headless::Headless::start(url);
    let hosts_in = |app: &claimtop::dashboard::testing::App| {
        app.store.as_ref().map_or(0, |v| v.fleet.hosts.len())
    };
    while hosts_in(&h.app) < hosts || h.app.counted().total() < total {
        h.pump(Duration::from_secs(30));
    }
    h.draw();
    let first = t0.elapsed();
    while h.app.claims.live.len() < total {
        h.pump(Duration::from_secs(30));
    }
    h.draw();
    let whole = t0.elapsed();
    let opts = claimtop::claims::AcquireOpts {
        ttl_ms: Some(600_000),
        ..Default::default()
    };
    let mut lat = Vec::with_capacity(DASHBOARD_CHANGES);
    for i in 0..DASHBOARD_CHANGES {
        let before = h.app.claims.live.len();
        let t = Instant::now();
        claimtop::claims::acquire(root, &format!("bench-change/{i:04}"), "bench", &opts)
            .expect("a lockfile in host 0's root");
        while h.app.claims.live.len() <= before {
            h.pump(Duration::from_secs(5));
        }
        lat.push(t.elapsed());
    }
    lat.sort();
    let p99 = lat[((lat.len() as f64 - 1.0) * 0.99).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let verdict = |ok: bool| if ok { "ok" } else { "MISSED" };
    println!("dashboard --store over the fleet ({total} copies):");
    println!(
        "   first screen with hosts and counts {:>8.0} ms   (target <= 1000 ms) {}",
        ms(first),
        verdict(ms(first) <= 1000.0)
    );
    println!(
        "   every row in                       {:>8.0} ms   (target <= 5000 ms) {}",
        ms(whole),
        verdict(ms(whole) <= 5000.0)
    );
    println!(
        "   change -> screen p99               {:>8.1} ms over {DASHBOARD_CHANGES} lockfiles   (target <= 250 ms) {}",
        ms(p99),
        verdict(ms(p99) <= 250.0)
    );
}
