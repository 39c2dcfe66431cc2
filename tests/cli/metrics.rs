//! `claimtop metrics`: the real binary on a free port, scraped over HTTP,
//! its numbers checked against what `list --json` reports for the same roots.

use crate::common::{cannot_run, claimtop, dead_holder_yaml};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use tempfile::TempDir;

/// A running `claimtop metrics` and the address it reported.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    /// Start on port 0 (the kernel picks a free one) and read the address
    /// from the line the server prints on stderr.
    fn start(home: &Path, roots: &[&Path]) -> Server {
        let mut cmd = claimtop(home);
        for r in roots {
            cmd.arg("--root").arg(r);
        }
        let mut child = cmd
            .args(["metrics", "--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut err = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        err.read_line(&mut line).expect("stderr line");
        let addr = crate::common::metrics_address(&line);
        Server { child, addr }
    }

    /// One GET as Prometheus sends it (asking for OpenMetrics); the status
    /// line and the body.
    fn get(&self, path: &str) -> (String, String) {
        self.get_accepting(path, OPENMETRICS_ACCEPT)
    }

    /// One GET with the given `Accept` header (none when empty).
    fn get_accepting(&self, path: &str, accept: &str) -> (String, String) {
        let mut s = TcpStream::connect(&self.addr).expect("connect");
        let accept = match accept {
            "" => String::new(),
            a => format!("Accept: {a}\r\n"),
        };
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {}\r\n{accept}Connection: close\r\n\r\n",
            self.addr
        )
        .expect("request");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("response");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        (
            head.lines().next().unwrap_or("").to_string(),
            body.to_string(),
        )
    }

    /// `name{labels}` → value, for every sample of a scrape.
    fn scrape(&self) -> BTreeMap<String, f64> {
        let (status, body) = self.get("/metrics");
        assert!(status.contains("200"), "{status}");
        assert!(body.ends_with("# EOF\n"), "{body}");
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let (series, value) = l.rsplit_once(' ').expect("sample");
                (series.to_string(), value.parse().expect("number"))
            })
            .collect()
    }

    fn stop(mut self) -> i32 {
        // SAFETY: kill(2) on our own child's pid, which has not been reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().expect("wait");
        status.code().expect("exited, not signalled")
    }
}

fn acquire(home: &Path, root: &Path, key: &str) {
    let out = claimtop(home)
        .arg("--root")
        .arg(root)
        .args(["acquire", key, "--holder", "w", "--ttl", "1h"])
        .output()
        .expect("acquire");
    assert_eq!(out.status.code(), Some(0));
}

fn list_json(home: &Path, roots: &[&Path]) -> Value {
    let mut c = claimtop(home);
    for r in roots {
        c.arg("--root").arg(r);
    }
    let out = c.args(["list", "--json"]).output().expect("list");
    serde_json::from_slice(&out.stdout).expect("one document")
}

fn write_lock(root: &Path, name: &str, text: &str) {
    let dir = root.join(".fno/claims");
    std::fs::create_dir_all(&dir).expect("claims dir");
    std::fs::write(dir.join(format!("{name}.lock")), text).expect("lockfile");
}

#[test]
fn a_scrape_reports_what_list_reports_for_the_same_root() {
    let (home, root) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    acquire(home.path(), root.path(), "a");
    acquire(home.path(), root.path(), "b");
    write_lock(root.path(), "gone", &dead_holder_yaml("gone", "w"));
    write_lock(root.path(), "bad", ": not yaml [");
    let server = Server::start(home.path(), &[root.path()]);
    let m = server.scrape();
    let list = list_json(home.path(), &[root.path()]);

    for state in ["live", "suspect", "stale", "corrupted", "unreadable"] {
        assert_eq!(
            m[&format!("claimtop_claims{{state=\"{state}\"}}")],
            list["counts"][state].as_f64().expect("count"),
            "{state}"
        );
    }
    let mut kinds: BTreeMap<String, f64> = BTreeMap::new();
    for h in list["hazards"].as_array().expect("hazards") {
        *kinds
            .entry(h["kind"].as_str().expect("kind").into())
            .or_default() += 1.0;
    }
    assert!(!kinds.is_empty());
    for (kind, n) in &kinds {
        assert_eq!(
            m[&format!("claimtop_hazards{{kind=\"{kind}\"}}")],
            *n,
            "{kind}"
        );
    }
    let hazard_total: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("claimtop_hazards{"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(
        hazard_total,
        kinds.values().sum::<f64>(),
        "no kind beyond list's"
    );
    // The oldest live claim: its age by list's own record, give or take the
    // moments between the two reads.
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let oldest_live = list["claims"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["state"] == "live")
        .filter_map(|c| c["record"]["acquired_at"].as_f64())
        .map(|ms| now_s - ms / 1000.0)
        .fold(0.0, f64::max);
    let age = m["claimtop_claim_age_seconds{state=\"live\"}"];
    assert!((age - oldest_live).abs() < 5.0, "{age} vs {oldest_live}");
    assert_eq!(m["claimtop_claim_age_seconds{state=\"unreadable\"}"], 0.0);
    assert_eq!(m["claimtop_up"], 1.0);
    assert_eq!(m["claimtop_store_up"], 1.0);
    assert_eq!(m["claimtop_events_total{type=\"claim_acquired\"}"], 2.0);
    assert_eq!(server.stop(), 0, "SIGTERM is a clean exit");
}

#[test]
fn event_counters_only_count_what_was_appended_since_the_last_scrape() {
    let (home, root) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let server = Server::start(home.path(), &[root.path()]);
    let first = server.scrape();
    assert_eq!(first["claimtop_events_total{type=\"claim_acquired\"}"], 0.0);
    acquire(home.path(), root.path(), "k");
    let out = claimtop(home.path())
        .arg("--root")
        .arg(root.path())
        .args(["release", "k", "--holder", "w"])
        .output()
        .expect("release");
    assert_eq!(out.status.code(), Some(0));
    for _ in 0..2 {
        let m = server.scrape();
        assert_eq!(m["claimtop_events_total{type=\"claim_acquired\"}"], 1.0);
        assert_eq!(m["claimtop_events_total{type=\"claim_released\"}"], 1.0);
        assert_eq!(m["claimtop_claims{state=\"live\"}"], 0.0);
    }
    server.stop();
}

/// Scrapes until `f` holds of one (a change reaches the mirror through the
/// root's feed within moments), or gives the last after 5 s.
fn scrape_until(
    server: &Server,
    f: impl Fn(&BTreeMap<String, f64>) -> bool,
) -> BTreeMap<String, f64> {
    let mut m = server.scrape();
    for _ in 0..50 {
        if f(&m) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        m = server.scrape();
    }
    m
}

#[test]
fn a_claim_released_or_taken_between_scrapes_moves_the_gauges() {
    let (home, root) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    acquire(home.path(), root.path(), "held");
    let server = Server::start(home.path(), &[root.path()]);
    let live = |m: &BTreeMap<String, f64>| m["claimtop_claims{state=\"live\"}"];
    assert_eq!(live(&server.scrape()), 1.0);
    let out = claimtop(home.path())
        .arg("--root")
        .arg(root.path())
        .args(["release", "held", "--holder", "w"])
        .output()
        .expect("release");
    assert_eq!(out.status.code(), Some(0));
    let m = scrape_until(&server, |m| live(m) == 0.0);
    assert_eq!(live(&m), 0.0, "the release is seen");
    acquire(home.path(), root.path(), "p");
    acquire(home.path(), root.path(), "q");
    let m = scrape_until(&server, |m| live(m) == 2.0);
    assert_eq!(live(&m), 2.0, "the two acquires are seen");
    server.stop();
}

#[test]
fn several_roots_are_labelled_by_root() {
    let home = TempDir::new().unwrap();
    let (a, b) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    acquire(home.path(), a.path(), "x");
    acquire(home.path(), b.path(), "x");
    acquire(home.path(), b.path(), "y");
    let server = Server::start(home.path(), &[a.path(), b.path()]);
    let m = server.scrape();
    let list = list_json(home.path(), &[a.path(), b.path()]);
    for dir in [a.path(), b.path()] {
        let name = dir.to_string_lossy();
        let in_list = list["claims"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["root"] == *name && c["state"] == "live")
            .count();
        let series = format!("claimtop_claims{{root=\"{name}\",state=\"live\"}}");
        assert_eq!(m[&series], in_list as f64, "{series}");
        assert_eq!(m[&format!("claimtop_store_up{{root=\"{name}\"}}")], 1.0);
    }
    server.stop();
}

#[test]
fn anything_but_metrics_is_not_found() {
    let (home, root) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let server = Server::start(home.path(), &[root.path()]);
    let (status, _) = server.get("/");
    assert!(status.contains("404"), "{status}");
    server.stop();
}

#[test]
fn an_address_in_use_is_an_error_under_json() {
    let (home, root) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let out = claimtop(home.path())
        .arg("--root")
        .arg(root.path())
        .args(["metrics", "--listen", &addr, "--json"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one document");
    assert_eq!(v["outcome"], "error");
    assert!(v["error"].as_str().unwrap_or("").contains(&addr), "{v}");
}

/// What Prometheus 2.x sends when it can read OpenMetrics.
const OPENMETRICS_ACCEPT: &str =
    "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// `promtool check metrics` lints the exposition when Prometheus's tool is
/// installed (`.ci/run` installs it); it is not a build dependency, so
/// elsewhere without it this says so.
#[test]
fn promtool_accepts_the_exposition_when_it_is_installed() {
    let Ok(probe) = Command::new("promtool").arg("--version").output() else {
        cannot_run("promtool is not installed (Debian's prometheus package has it)");
        return;
    };
    assert!(probe.status.success());
    let (home, root) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    acquire(home.path(), root.path(), "k");
    let server = Server::start(home.path(), &[root.path()]);
    // Without an Accept header (curl, promtool) the classic text format.
    let (_, body) = server.get_accepting("/metrics", "");
    server.stop();
    assert!(!body.contains("# EOF"), "{body}");
    assert!(
        body.contains("# TYPE claimtop_events_total counter"),
        "{body}"
    );
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    lint.stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("feed");
    let out = lint.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
