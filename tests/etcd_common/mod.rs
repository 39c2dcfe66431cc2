//! Real etcd servers for the etcd store's tests (`mod etcd_common;`).
//!
//! Each server runs on free loopback ports (never 2379/2380, so a developer's
//! own etcd is never touched) with a temp data dir, and dies with its handle.
//! Without an `etcd` binary the tests skip with a message; under `CI` they
//! fail, because `.ci/run` installs etcd.
#![allow(dead_code)]

use claimtop::store::etcd::{ConnOpts, EtcdStore};
use claimtop::store::url::EtcdTarget;
use claimtop::store::{Backend, Claims, StoreUrl};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod scrape;
#[allow(unused_imports)]
pub use scrape::*;

/// How long a fresh member (or cluster) may take to answer.
const HEALTHY_WITHIN: Duration = Duration::from_secs(30);

/// The etcd binary, or why the test cannot run. Under `CI` a missing binary
/// is a failure, not a skip.
pub fn etcd_binary() -> Option<PathBuf> {
    let found = std::env::var_os("ETCD_BIN").map(PathBuf::from).or_else(|| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("etcd"))
                .find(|p| p.is_file())
        })
    });
    if found.is_none() {
        let why = "no `etcd` binary on PATH (install Debian's etcd-server, or set ETCD_BIN)";
        if std::env::var_os("CI").is_some() {
            panic!("CI is set, so the etcd tests must run, but: {why}");
        }
        eprintln!("skipping: {why}");
    }
    found
}

/// A loopback port nothing listens on now, never etcd's defaults.
fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("bind an ephemeral loopback port");
        if port != 2379 && port != 2380 {
            return port;
        }
    }
}

/// One etcd member process.
pub struct Member {
    pub name: String,
    pub client_port: u16,
    pub peer_port: u16,
    child: Option<Child>,
    pub dir: tempfile::TempDir,
    /// The command line it was first started with, to start it again on
    /// the same ports and data dir after a kill.
    started_with: Option<(PathBuf, Vec<std::ffi::OsString>)>,
}

impl Member {
    fn plan(name: &str) -> Member {
        Member {
            name: name.to_string(),
            client_port: free_port(),
            peer_port: free_port(),
            child: None,
            dir: tempfile::tempdir().expect("etcd data dir"),
            started_with: None,
        }
    }

    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    fn spawn(&mut self, bin: &Path, cluster: &str, tls: Option<&Tls>) {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let client = format!("{scheme}://127.0.0.1:{}", self.client_port);
        let tls_args: Vec<std::ffi::OsString> = match tls {
            Some(t) => vec![
                "--cert-file".into(),
                t.dir.path().join("server.crt").into(),
                "--key-file".into(),
                t.dir.path().join("server.key").into(),
            ],
            None => Vec::new(),
        };
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        let mut add = |a: &[&str]| args.extend(a.iter().map(std::ffi::OsString::from));
        add(&["--name", &self.name]);
        add(&["--listen-client-urls", &client]);
        add(&["--advertise-client-urls", &client]);
        add(&["--listen-peer-urls", &self.peer_url()]);
        add(&["--initial-advertise-peer-urls", &self.peer_url()]);
        add(&["--initial-cluster", cluster]);
        add(&["--initial-cluster-state", "new"]);
        add(&["--auto-compaction-mode", "revision"]);
        add(&["--auto-compaction-retention", "10000"]);
        add(&["--logger", "zap", "--log-level", "error"]);
        args.push("--data-dir".into());
        args.push(self.dir.path().join("data").into());
        args.extend(tls_args);
        self.started_with = Some((bin.to_path_buf(), args));
        self.launch();
    }

    /// Start the member's process with the command line it was planned
    /// with. On a data dir that already holds a member, etcd ignores the
    /// `--initial-*` flags and comes back as that member.
    fn launch(&mut self) {
        let Some((bin, args)) = &self.started_with else {
            panic!("member {} was never started", self.name);
        };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("etcd.log"))
            .expect("etcd log");
        let child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().map(|c| c.id() as i32).unwrap_or(0)
    }

    pub fn signal(&self, sig: i32) {
        // Without a process, pid 0 would signal our own process group.
        let Some(pid) = self.child.as_ref().map(|c| c.id() as i32) else {
            return;
        };
        // SAFETY: kill(2) on a child this handle started and still owns.
        unsafe {
            libc::kill(pid, sig);
        }
    }

    /// SIGSTOP, and wait until every thread has stopped: a thread busy in
    /// the kernel stops only when it returns, and could answer one more
    /// request meanwhile.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
        let tasks = format!("/proc/{}/task", self.pid());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let all_stopped = std::fs::read_dir(&tasks)
                .map(|d| {
                    d.filter_map(Result::ok).all(|t| {
                        std::fs::read_to_string(t.path().join("stat"))
                            .ok()
                            .and_then(|st| {
                                st.rsplit_once(')')
                                    .map(|(_, rest)| rest.trim_start().starts_with('T'))
                            })
                            .unwrap_or(true)
                    })
                })
                .unwrap_or(true);
            if all_stopped {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("etcd (pid {}) did not stop", self.pid());
    }

    /// SIGKILL and reap; the member stays down until [`Member::start_again`].
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Member {
    /// Start a killed member again, on the same ports and the same data
    /// dir, as an operator restarting a crashed etcd would.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "member {} still runs", self.name);
        self.launch();
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        // A test that failed while the member was SIGSTOPped must not leave
        // it stopped: continue it, then kill it.
        self.signal(libc::SIGCONT);
        self.kill();
    }
}

/// A single-member etcd or a cluster of several, all on loopback.
pub struct Etcd {
    pub members: Vec<Member>,
    /// Set when the members speak TLS (`etcds://`).
    pub tls: Option<Tls>,
}

/// A throwaway CA and a server certificate for 127.0.0.1, made with openssl.
pub struct Tls {
    pub dir: tempfile::TempDir,
}

impl Tls {
    /// None (skip) without an openssl binary; under `CI` that fails.
    fn make() -> Option<Tls> {
        let dir = tempfile::tempdir().expect("tls dir");
        let d = dir.path();
        std::fs::write(d.join("ext"), "subjectAltName=IP:127.0.0.1\n").expect("ext");
        let steps: [&[&str]; 3] = [
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "1",
                "-subj",
                "/CN=claimtop-test-ca",
            ],
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.crt",
                "-days",
                "1",
                "-extfile",
                "ext",
            ],
        ];
        for args in steps {
            let ok = Command::new("openssl")
                .args(args)
                .current_dir(d)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                let why = format!("openssl {} failed or is missing", args[0]);
                if std::env::var_os("CI").is_some() {
                    panic!("CI is set, so the TLS test must run, but: {why}");
                }
                eprintln!("skipping: {why}");
                return None;
            }
        }
        Some(Tls { dir })
    }

    pub fn cacert(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }
}

impl Etcd {
    /// One member, or None (skip) without a binary.
    pub fn single() -> Option<Etcd> {
        Etcd::cluster(1)
    }

    /// `n` members forming one cluster.
    pub fn cluster(n: usize) -> Option<Etcd> {
        Etcd::start(n, None)
    }

    /// One member speaking TLS with a throwaway CA.
    pub fn single_tls() -> Option<Etcd> {
        etcd_binary()?;
        Etcd::start(1, Some(Tls::make()?))
    }

    fn start(n: usize, tls: Option<Tls>) -> Option<Etcd> {
        let bin = etcd_binary()?;
        let mut members: Vec<Member> = (0..n).map(|i| Member::plan(&format!("m{i}"))).collect();
        let cluster = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        for m in &mut members {
            m.spawn(&bin, &cluster, tls.as_ref());
        }
        let etcd = Etcd { members, tls };
        etcd.wait_healthy();
        Some(etcd)
    }

    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(Member::endpoint).collect()
    }

    /// `etcd://...` for `prefix`, naming every member.
    pub fn url(&self, prefix: &str) -> String {
        let scheme = if self.tls.is_some() { "etcds" } else { "etcd" };
        format!("{scheme}://{}{prefix}", self.endpoints().join(","))
    }

    pub fn target(&self, prefix: &str) -> EtcdTarget {
        match StoreUrl::parse(&self.url(prefix)) {
            Ok(StoreUrl::Etcd(t)) => t,
            other => panic!("not an etcd URL: {other:?}"),
        }
    }

    pub fn store(&self, prefix: &str) -> EtcdStore {
        self.store_with(prefix, &self.opts())
    }

    /// What a client needs to connect: the CA when the members speak TLS.
    pub fn opts(&self) -> ConnOpts {
        ConnOpts {
            cacert: self.tls.as_ref().map(Tls::cacert),
            ..Default::default()
        }
    }

    pub fn store_with(&self, prefix: &str, opts: &ConnOpts) -> EtcdStore {
        EtcdStore::connect(&self.target(prefix), opts).expect("connect to the test etcd")
    }

    /// A raw client, for what the store never does (revoking a lease to
    /// expire a claim now, enabling auth, finding the leader).
    pub fn client(&self) -> (tokio::runtime::Runtime, etcd_client::Client) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let eps: Vec<String> = self
            .endpoints()
            .iter()
            .map(|e| format!("http://{e}"))
            .collect();
        let client = rt
            .block_on(etcd_client::Client::connect(eps, None))
            .expect("raw client");
        (rt, client)
    }

    fn wait_healthy(&self) {
        let deadline = Instant::now() + HEALTHY_WITHIN;
        let opts = ConnOpts {
            timeout: Some(Duration::from_secs(2)),
            ..self.opts()
        };
        let last = loop {
            let err = match EtcdStore::connect(&self.target("/health"), &opts) {
                Ok(s) => match s.status("probe", &mut claimtop::claims::Classifier::new(0)) {
                    Ok(_) => return,
                    Err(e) => e.to_string(),
                },
                Err(e) => e.to_string(),
            };
            if Instant::now() > deadline {
                break err;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let logs: Vec<String> = self
            .members
            .iter()
            .map(|m| std::fs::read_to_string(m.dir.path().join("etcd.log")).unwrap_or_default())
            .collect();
        panic!(
            "etcd did not become healthy: {last}\n{}",
            logs.join("\n---\n")
        );
    }

    /// Kill member `i` with SIGKILL (no chance to flush or say goodbye),
    /// then start it again on the same ports and data dir, and wait until
    /// the cluster answers.
    pub fn restart(&mut self, i: usize) {
        self.members[i].signal(libc::SIGCONT);
        self.members[i].kill();
        self.members[i].start_again();
        self.wait_healthy();
    }

    /// Start killed member `i` again (same ports, same data dir) and wait
    /// until the cluster answers.
    pub fn start_again(&mut self, i: usize) {
        self.members[i].start_again();
        self.wait_healthy();
    }

    /// The index of the current leader.
    pub fn leader(&self) -> usize {
        let (rt, _) = self.client();
        for (i, m) in self.members.iter().enumerate() {
            let ep = format!("http://{}", m.endpoint());
            let status = rt.block_on(async {
                let mut c = etcd_client::Client::connect([ep], None).await?;
                c.status().await
            });
            if let Ok(s) = status {
                if s.header().map(|h| h.member_id()) == Some(s.leader()) {
                    return i;
                }
            }
        }
        panic!("no member says it is the leader");
    }
}

/// The types of the last events, oldest first.
pub fn kinds(store: &dyn Backend) -> Vec<String> {
    store
        .audit()
        .expect("an events log")
        .events(50)
        .expect("events")
        .iter()
        .map(|e| e.kind().to_string())
        .collect()
}

/// N claims (`task/000000`...), each on its own lease as the store writes
/// them, put in transactions of 100 (under etcd's default 128 ops per
/// transaction), 16 transactions in flight: the benches' big stores.
pub fn load_claims(etcd: &Etcd, prefix: &str, n: usize) {
    let layout = claimtop::store::etcd::Layout::new(prefix);
    let (rt, c) = etcd.client();
    rt.block_on(async {
        let mut batches = tokio::task::JoinSet::new();
        for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
            let mut c = c.clone();
            let ops: Vec<(String, String)> = chunk
                .iter()
                .map(|i| {
                    let key = format!("task/{i:06}");
                    let rec = claimtop::claims::ClaimRecord {
                        schema_version: 1,
                        key: key.clone(),
                        holder: format!("worker-{}", i % 64),
                        acquired_at: claimtop::claims::now_ms(),
                        pid: std::process::id() as i32,
                        host: claimtop::claims::liveness::hostname(),
                        expires_at: Some(claimtop::claims::now_ms() + 3_600_000),
                        reason: None,
                        harness: None,
                        machine_id: None,
                        metadata: Default::default(),
                    };
                    (layout.claim(&key), rec.to_yaml().expect("yaml"))
                })
                .collect();
            batches.spawn(async move {
                let mut puts = Vec::with_capacity(ops.len());
                for (k, v) in ops {
                    let lease = c.lease_grant(3600, None).await.expect("grant").id();
                    puts.push(etcd_client::TxnOp::put(
                        k,
                        v,
                        Some(etcd_client::PutOptions::new().with_lease(lease)),
                    ));
                }
                c.txn(etcd_client::Txn::new().and_then(puts))
                    .await
                    .expect("txn");
            });
            if batches.len() >= 16 {
                batches.join_next().await;
            }
        }
        while batches.join_next().await.is_some() {}
    });
}

/// A TCP forwarder from a free loopback port to one etcd member, which a
/// test can cut: the listener closes and every connection through it is
/// shut down, so a client that reaches etcd only through it is cut off
/// while everyone else still reaches etcd directly. Or it can black-hole
/// the traffic for a while: nothing is forwarded and nothing is refused or
/// reset, as in a partition that heals.
pub struct Proxy {
    pub port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    hole: std::sync::Arc<std::sync::atomic::AtomicBool>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// Forward to `target` (`127.0.0.1:PORT`).
    pub fn to(target: &str) -> Proxy {
        Proxy::at(0, target)
    }

    /// Forward from loopback `port` (0: a free one) to `target`: a proxy
    /// cut, then started again on its port, is a connection that broke and
    /// came back.
    pub fn at(port: u16, target: &str) -> Proxy {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::{Arc, Mutex};
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let stop = Arc::new(AtomicBool::new(false));
        let hole = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<std::net::TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let (stop2, conns2, target) = (Arc::clone(&stop), Arc::clone(&conns), target.to_string());
        let hole2 = Arc::clone(&hole);
        let accept = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                // A black hole accepts nothing new: the kernel's backlog
                // holds the connection, unanswered.
                if hole2.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                let Ok((inbound, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let Ok(outbound) = std::net::TcpStream::connect(&target) else {
                    continue;
                };
                let _ = inbound.set_nonblocking(false);
                let pair = (inbound.try_clone(), outbound.try_clone());
                let (Ok(in2), Ok(out2)) = pair else { continue };
                if let Ok(mut all) = conns2.lock() {
                    all.extend(inbound.try_clone().ok());
                    all.extend(outbound.try_clone().ok());
                }
                let flow = Flow {
                    stop: Arc::clone(&stop2),
                    hole: Arc::clone(&hole2),
                };
                pump(inbound, out2, flow.clone());
                pump(outbound, in2, flow);
            }
        });
        Proxy {
            port,
            stop,
            hole,
            conns,
            accept: Some(accept),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Forward nothing (`true`) until told to forward again (`false`):
    /// what was sent meanwhile is held, then delivered late.
    pub fn black_hole(&self, on: bool) {
        self.hole.store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// Refuse new connections and end every open one, for good.
    pub fn cut(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        if let Ok(all) = self.conns.lock() {
            for c in all.iter() {
                let _ = c.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
    }
}

/// What a forwarding thread obeys: the proxy cut, or black-holed.
#[derive(Clone)]
struct Flow {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    hole: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// Copy `from` to `to` on a thread until either side ends; while the flow
/// is black-holed, what was read is held back.
fn pump(mut from: std::net::TcpStream, mut to: std::net::TcpStream, flow: Flow) {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            while flow.hole.load(Ordering::SeqCst) && !flow.stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Both);
        let _ = from.shutdown(std::net::Shutdown::Both);
    });
}

/// One events.jsonl line as claimtop writes it: the envelope at `at_ms`.
pub fn event_line(at_ms: i64, kind: &str, data: serde_json::Value) -> String {
    serde_json::json!({
        "ts": claimtop::time::utc_hms(at_ms),
        "type": kind,
        "source": "fno-loop",
        "data": data,
    })
    .to_string()
}

/// Put `lines` (each `(time, line)`) under `PREFIX/events/` as claimtop
/// names and writes its events, one put each (so each has a revision of
/// its own), 256 in flight at once, so a test or a bench can plant a long
/// history in seconds.
pub fn put_events(etcd: &Etcd, prefix: &str, lines: &[(i64, String)]) {
    let layout = claimtop::store::etcd::Layout::new(prefix);
    let (rt, client) = etcd.client();
    for chunk in lines.chunks(256) {
        rt.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            for (at, line) in chunk {
                let mut c = client.clone();
                let (key, line) = (layout.new_event(*at), line.clone());
                set.spawn(async move { c.put(key, line, None).await });
            }
            while let Some(done) = set.join_next().await {
                done.expect("a put task").expect("put an event");
            }
        });
    }
}
