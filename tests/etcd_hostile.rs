//! A store is written by every host that can publish into it, so its text is
//! hostile text. These tests plant terminal controls (OSC 52 and OSC 0, CSI,
//! C1, DEL, backspace, CR, TAB, newline, bidi overrides) in every string
//! field of the published layout, straight through an etcd client, then run
//! every text-mode command and the dashboard over that store, and check
//! that no such byte ever reaches the terminal: only `\n` ends lines.
//! Run with `cargo test --features etcd --test etcd_hostile`.
#![cfg(feature = "etcd")]

#[path = "common/mod.rs"]
mod common;
mod etcd_common;

use claimtop::claims::ClaimRecord;
use claimtop::store::etcd::Layout;
use common::claimtop;
use common::tmux::Tmux;
use etcd_client::{Client, PutOptions};
use etcd_common::Etcd;
use serde_json::{json, Value};
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Everything a terminal obeys rather than shows: set the clipboard (OSC
/// 52), retitle the window (OSC 0), clear the scrollback, set a mode, a C1
/// CSI asking for a report, DEL, backspace, CR, TAB, a newline, and bidi
/// overrides that make text read backwards.
const HOSTILE: &str = "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;PWNED\u{7}\u{1b}[3J\u{1b}[20h\
                       \u{9b}6n\u{7f}\u{8}\r\t\n\u{202e}\u{2066}\u{200f}";

/// A visible label, the payload, and a visible end: the label finds the
/// value on screen, and the payload shows (escaped) between them.
fn hostile(label: &str) -> String {
    format!("{label}{HOSTILE}z")
}

const PATIENCE: Duration = Duration::from_secs(15);

/// What must never reach a terminal from a store's text.
fn forbidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{9}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{200e}' | '\u{200f}' | '\u{061c}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Fail naming the first forbidden character of `what`'s output.
fn assert_clean(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Some((at, c)) = text.char_indices().find(|(_, c)| forbidden(*c)) {
        let from = text[..at]
            .char_indices()
            .rev()
            .nth(60)
            .map_or(0, |(i, _)| i);
        panic!(
            "{what}: {c:?} reached the terminal at byte {at}, after {:?}",
            &text[from..at]
        );
    }
}

/// The store's hostile contents, planted, and the names to ask for them by.
struct Planted {
    /// A host with two roots, every string of it hostile.
    evil: String,
    /// Its first root's id.
    root_a: String,
    /// A key it publishes in that root.
    published_key: String,
    /// A second online host with the same (hostile) hostname.
    hostname: String,
    /// A host that is offline (no owner keys).
    ghost: String,
    /// A claim of the store's own, with a hostile holder, host and reason.
    native_key: String,
    /// A claim of the store's own whose value does not parse.
    corrupted_key: String,
}

struct Hostile {
    etcd: Etcd,
    home: TempDir,
    url: String,
    layout: Layout,
    planted: Planted,
}

fn block<T>(rt: &tokio::runtime::Runtime, f: impl std::future::Future<Output = T>) -> T {
    rt.block_on(f)
}

impl Hostile {
    fn start(prefix: &str) -> Option<Hostile> {
        let etcd = Etcd::single()?;
        let url = etcd.url(prefix);
        let layout = Layout::new(prefix);
        let planted = plant(&etcd, &layout);
        Some(Hostile {
            etcd,
            home: TempDir::new().expect("home"),
            url,
            layout,
            planted,
        })
    }

    fn over(&self, args: &[&str]) -> Output {
        claimtop(self.home.path())
            .env_remove("FNO_CLAIMS_STORE")
            .args(["--store", &self.url, "--timeout", "3s"])
            .args(args)
            .output()
            .expect("run claimtop")
    }

    /// Run `args` over the store and check both of its streams.
    fn clean(&self, args: &[&str]) -> Output {
        let o = self.over(args);
        let what = format!("claimtop {args:?}");
        assert_clean(&format!("{what} stdout"), &o.stdout);
        assert_clean(&format!("{what} stderr"), &o.stderr);
        o
    }
}

fn plant(etcd: &Etcd, layout: &Layout) -> Planted {
    let (rt, mut c) = etcd.client();
    let lease = block(&rt, c.lease_grant(300, None)).expect("lease").id();
    let on_lease = || Some(PutOptions::new().with_lease(lease));
    let now = claimtop::time::now_ms();

    let evil = hostile("evil-id");
    let hostname = hostile("evil-name");
    let root_a = hostile("ra");
    let root_b = hostile("rb");
    let published_key = hostile("pk");
    let host_record = |machine: &str, roots: Value| {
        json!({
            "machine_id": machine,
            "hostname": hostname,
            "roots": roots,
            "last_seen_ms": now,
            "ttl_s": 60,
            "pid": 4242,
        })
        .to_string()
    };
    let roots = json!([
        {"id": root_a, "path": hostile("/srv/a")},
        {"id": root_b, "path": hostile("/srv/b")},
    ]);
    let mut puts: Vec<(String, String, Option<PutOptions>)> = vec![
        (layout.host_record(&evil), host_record(&evil, roots), None),
        // A host is online while a publisher owns one of its roots: the
        // owner keys carry text of their own (the path, why a root is
        // unreadable).
        (
            layout.root_owner(&evil, &root_a),
            json!({"lease": lease, "pid": 4242, "since_ms": now, "path": hostile("/srv/a"),
                   "unreadable": null})
            .to_string(),
            on_lease(),
        ),
        (
            layout.root_owner(&evil, &root_b),
            json!({"lease": lease, "pid": 4242, "since_ms": now, "path": hostile("/srv/b"),
                   "unreadable": hostile("permission denied")})
            .to_string(),
            on_lease(),
        ),
    ];
    // A second online host under the same hostname: `--host NAME` is then
    // ambiguous, and the error lists both ids.
    let twin = hostile("twin-id");
    let twin_root = hostile("rt");
    puts.push((
        layout.host_record(&twin),
        host_record(&twin, json!([{"id": twin_root, "path": hostile("/srv/t")}])),
        None,
    ));
    puts.push((
        layout.root_owner(&twin, &twin_root),
        json!({"lease": lease, "pid": 1, "since_ms": now, "path": hostile("/srv/t")}).to_string(),
        on_lease(),
    ));
    // An offline host: its record, no owner keys.
    let ghost = hostile("ghost-id");
    puts.push((
        layout.host_record(&ghost),
        json!({
            "machine_id": ghost,
            "hostname": hostile("ghost-name"),
            "roots": [{"id": hostile("rg"), "path": hostile("/srv/g")}],
            "last_seen_ms": now - 3_600_000,
            "ttl_s": 60,
            "pid": 1,
        })
        .to_string(),
        None,
    ));

    for (root_id, key) in [(&root_a, &published_key), (&root_b, &hostile("pk-b"))] {
        let place = layout.root_place(&evil, root_id);
        let item = |key: &str, state: &str| {
            json!({
                "key": key,
                "file": hostile("/srv/a/.fno/claims/file"),
                "state": state,
                "record": {
                    "schema_version": 1,
                    "key": key,
                    "holder": hostile("holder"),
                    "acquired_at": now - 5_000,
                    "pid": 77,
                    "host": hostile("rec-host"),
                    "expires_at": now + 3_600_000,
                    "reason": hostile("reason"),
                    "harness": hostile("harness"),
                    "machine_id": hostile("rec-machine"),
                    "metadata": {hostile("meta-k"): hostile("meta-v")},
                },
                "why": hostile("why"),
                "error": hostile("error"),
            })
            .to_string()
        };
        puts.push((place.claim(key), item(key, "live"), on_lease()));
        let odd = hostile("odd-state");
        puts.push((place.claim(&odd), item(&odd, &hostile("state")), on_lease()));
        puts.push((
            place.hazards(),
            json!([
                {"kind": "stale_mutex", "path": hostile("/srv/a/mutex"), "detail": hostile("detail")},
                {"kind": hostile("kind"), "path": hostile("path"), "detail": hostile("detail")},
            ])
            .to_string(),
            on_lease(),
        ));
        let event = json!({
            "ts": hostile("ts"),
            "type": "claim_acquired",
            "source": hostile("source"),
            "data": {
                "key": key,
                "holder": hostile("ev-holder"),
                "pid": 77,
                "host": hostile("ev-host"),
                "reason": hostile("ev-reason"),
                hostile("field"): hostile("value"),
            },
        });
        puts.push((place.event("log", 0), event.to_string(), None));
        puts.push((
            place.event("log", 1),
            json!({"ts": "2026-12-01T00:00:00Z", "type": hostile("type"), "data": {"key": key}})
                .to_string(),
            None,
        ));
        puts.push((place.event("log", 2), hostile("not json"), None));
        puts.push((
            place.request(&hostile("old-request")),
            json!({
                "key": key,
                "expect_holder": hostile("expect"),
                "expect_acquired_at": 1,
                "operator": hostile("operator"),
                "allow_live": true,
                "at_ms": now,
            })
            .to_string(),
            None,
        ));
        puts.push((
            place.answer(&hostile("old-request")),
            json!({"outcome": "error", "error": hostile("answer"), "text": hostile("answer")})
                .to_string(),
            on_lease(),
        ));
    }

    // The store's own claims: one on a lease, one with no lease (a hazard),
    // one whose value does not parse, an archived one.
    let native_key = hostile("native");
    let mut rec: ClaimRecord = common::record(&native_key, &hostile("holder"), 999_999, now);
    rec.host = hostile("host");
    rec.reason = Some(hostile("reason"));
    rec.expires_at = Some(now + 3_600_000);
    rec.harness = Some(hostile("harness"));
    rec.machine_id = Some(hostile("machine"));
    rec.metadata
        .insert(hostile("meta-k"), Value::String(hostile("meta-v")));
    let yaml = rec.to_yaml().expect("yaml");
    puts.push((layout.claim(&native_key), yaml.clone(), on_lease()));
    let unleased = hostile("unleased");
    let mut rec2 = rec.clone();
    rec2.key = unleased.clone();
    puts.push((layout.claim(&unleased), rec2.to_yaml().expect("yaml"), None));
    let corrupted_key = hostile("corrupted");
    puts.push((
        layout.claim(&corrupted_key),
        hostile("{{{ not yaml"),
        on_lease(),
    ));
    puts.push((layout.expired(&native_key, now), yaml, None));
    // The store's own events: every field hostile, a lease id to show in
    // hex, and a line that is not JSON.
    puts.push((
        layout.new_event(now - 2),
        json!({
            "ts": hostile("ts"),
            "type": "claim_expired",
            "source": hostile("source"),
            "data": {
                "key": native_key,
                "holder": hostile("ev-holder"),
                "pid": 999_999,
                "host": hostile("ev-host"),
                "lease": lease,
                "revision": 3,
                hostile("field"): hostile("value"),
            },
        })
        .to_string(),
        None,
    ));
    puts.push((layout.new_event(now - 1), hostile("not json"), None));

    for (key, value, opts) in puts {
        block(&rt, c.put(key, value, opts)).expect("plant");
    }
    Planted {
        evil,
        root_a,
        published_key,
        hostname,
        ghost,
        native_key,
        corrupted_key,
    }
}

/// A stand-in publisher for `evil`'s first root: answers each request with
/// hostile words, alternately a refusal and an error, until dropped.
struct Answerer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Answerer {
    fn start(h: &Hostile) -> Answerer {
        let stop = Arc::new(AtomicBool::new(false));
        let (rt, mut c): (tokio::runtime::Runtime, Client) = h.etcd.client();
        let place = h.layout.root_place(&h.planted.evil, &h.planted.root_a);
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut answered = std::collections::HashSet::new();
            while !flag.load(Ordering::Relaxed) {
                let opts = etcd_client::GetOptions::new().with_prefix();
                if let Ok(resp) = block(&rt, c.get(place.requests(), Some(opts))) {
                    for kv in resp.kvs() {
                        let Some(answer) = place.answer_of(kv.key()) else {
                            continue;
                        };
                        // The planted request already has its answer.
                        if answer.contains("old-request") || !answered.insert(answer.clone()) {
                            continue;
                        }
                        let body = if answered.len() % 2 == 1 {
                            json!({"outcome": "refused", "reason": hostile("refused"),
                                   "text": hostile("refused")})
                        } else {
                            json!({"outcome": "error", "error": hostile("failed")})
                        };
                        let _ = block(&rt, c.put(answer, body.to_string(), None));
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Answerer {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Answerer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn every_text_command_over_a_hostile_store_shows_its_controls_escaped_never_raw() {
    let Some(h) = Hostile::start("/hostile-cli") else {
        return;
    };
    let p = &h.planted;
    let list = h.clean(&["list"]);
    let shown = text(&list);
    // The hosts line: the root ids the repro printed raw.
    assert!(
        shown.contains("ra\\e]52;c;cHduZWQ=\\x07\\e]0;PWNED\\x07"),
        "the root id is shown, escaped: {shown}"
    );
    assert!(
        shown.contains("OFFLINE"),
        "the ghost host is listed: {shown}"
    );
    for args in [
        vec!["status", &p.native_key],
        vec!["status", &p.corrupted_key],
        vec!["events"],
        vec!["events", "-n", "50"],
        vec!["doctor"],
        vec!["acquire", &p.native_key, "--holder", "me", "--ttl", "30s"],
    ] {
        h.clean(&args);
    }
    let events = text(&h.clean(&["events"]));
    assert!(
        events.contains(&format!("lease={:016x}", lease_of(&h))),
        "an expired claim's lease is shown in hex: {events}"
    );

    // Every way `force-release --host` can answer, each quoting store text.
    let _answerer = Answerer::start(&h);
    let fr = |host: &str, root: Option<&str>, key: &str| {
        let mut args = vec!["force-release", key, "--host", host, "--allow-live"];
        if let Some(r) = root {
            args.extend(["--root-id", r]);
        }
        text(&h.clean(&args))
    };
    let which = fr(&p.evil, None, &p.published_key);
    assert!(which.contains("--root-id"), "which root: {which}");
    fr(&p.hostname, None, &p.published_key);
    fr(&hostile("nobody"), None, "k");
    fr(&p.ghost, None, "k");
    fr(&p.evil, Some(&hostile("no-root")), "k");
    fr(&p.evil, Some(&p.root_a), &hostile("no-key"));
    let refused = fr(&p.evil, Some(&p.root_a), &p.published_key);
    let failed = fr(&p.evil, Some(&p.root_a), &p.published_key);
    let answers = format!("{refused}{failed}");
    assert!(
        answers.contains("refused\\e]52") && answers.contains("failed\\e]52"),
        "the host's answers are shown, escaped: {answers}"
    );

    // One scrape: label values from the hosts' records.
    let mut over = claimtop(h.home.path());
    over.env_remove("FNO_CLAIMS_STORE")
        .args(["--store", &h.url]);
    let (mut server, addr) = etcd_common::start_metrics(over);
    let exposition = dechunk(&etcd_common::metrics_text(&addr));
    let _ = server.kill();
    let _ = server.wait();
    assert_clean("metrics", exposition.as_bytes());
    assert!(
        exposition.contains("claimtop_host_up{host=\"evil-name\\\\e]52"),
        "the hosts are exported: {exposition}"
    );
}

/// An HTTP/1.1 body without its chunked framing (sizes and CRLFs).
fn dechunk(body: &str) -> String {
    // A body with no CRLF at all was sent whole (Content-Length), not in chunks.
    if !body.contains("\r\n") {
        return body.to_string();
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            return body.to_string();
        };
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].strip_prefix("\r\n").unwrap_or(&tail[n..]);
    }
    out
}

/// The lease the planted owner keys and claims ride on.
fn lease_of(h: &Hostile) -> i64 {
    let (rt, mut c) = h.etcd.client();
    let owner = h.layout.root_owner(&h.planted.evil, &h.planted.root_a);
    let resp = block(&rt, c.get(owner, None)).expect("get");
    resp.kvs().first().expect("owner key").lease()
}

/// Every escape sequence in what the dashboard wrote to its terminal (as
/// tmux's pipe-pane saw the bytes): only CSI sequences are allowed, and
/// none of the ones the planted text carries. Returns the bytes with
/// those sequences removed, for [`assert_clean`].
fn strip_csi(what: &str, raw: &[u8], banned: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != 0x1b {
            // The terminal's own line discipline: CR before LF.
            if raw[i] != b'\r' {
                out.push(raw[i]);
            }
            i += 1;
            continue;
        }
        let start = i;
        assert_eq!(
            raw.get(i + 1),
            Some(&b'['),
            "{what}: an escape that is not CSI at byte {i}: {:?}",
            String::from_utf8_lossy(&raw[i..(i + 24).min(raw.len())])
        );
        i += 2;
        while i < raw.len() && (0x20..0x40).contains(&raw[i]) {
            i += 1;
        }
        assert!(
            i < raw.len() && (0x40..0x7f).contains(&raw[i]),
            "{what}: cut CSI"
        );
        i += 1;
        let seq = &raw[start..i];
        assert!(
            !banned.contains(&seq),
            "{what}: the planted {:?} reached the terminal",
            String::from_utf8_lossy(seq)
        );
    }
    out
}

/// The detail pane's text (right of the last `│` on each line), its lines
/// joined and spaces dropped, so a value wrapped across lines reads whole.
fn detail_text(screen: &str) -> String {
    screen
        .lines()
        .filter_map(|l| l.rsplit_once('│').map(|(_, r)| r))
        .collect::<String>()
        .replace(' ', "")
}

#[test]
fn the_dashboard_over_a_hostile_store_never_sends_its_controls_to_the_terminal() {
    if let Err(why) = Tmux::available() {
        common::cannot_run(&format!("the dashboard test needs tmux: {why}"));
        return;
    }
    let Some(h) = Hostile::start("/hostile-tui") else {
        return;
    };
    let tmux = Tmux::start(200, 100);
    tmux.wait_for("the shell prompt", PATIENCE, |s| !s.trim().is_empty());
    let raw = h.home.path().join("pane.raw");
    tmux.run(&[
        "pipe-pane",
        "-t",
        "e2e",
        "-o",
        &format!("cat >> '{}'", raw.display()),
    ]);
    tmux.type_line(&format!(
        "env -u FNO_CLAIMS_STORE -u FNO_CLAIMS_ROOT HOME='{}' '{}' --store '{}'; echo EXIT=$?",
        h.home.path().display(),
        common::BIN,
        h.url
    ));
    tmux.wait_for("the hostile rows", PATIENCE, |s| {
        s.contains("native\\e]52") && s.contains("pk\\e]52")
    });
    // Each key on its own, with a pause: an Escape followed at once by a
    // key reads as Alt+key.
    let press = |key: &str| {
        tmux.keys(&[key]);
        std::thread::sleep(Duration::from_millis(250));
    };
    // Every row in the detail pane, each overlay, and the force-release
    // dialog of every row (a published one names its host).
    let mut root_line_seen = false;
    for _ in 0..6 {
        press("F");
        press("Escape");
        root_line_seen |= detail_text(&tmux.screen()).contains("(idra\\e]52;c;cHduZWQ=\\x07");
        press("j");
    }
    // Dropping the controls would be safe too, but would make two ids
    // that differ only in them look the same.
    assert!(
        root_line_seen,
        "a published claim's detail shows its root id with the controls escaped"
    );
    for overlay in ["h", "t", "?"] {
        press(overlay);
        press("Escape");
    }
    let captured = tmux.run(&["capture-pane", "-p", "-e", "-t", "e2e"]).stdout;
    let title = tmux.pane_var("pane_title");
    tmux.keys(&["q"]);
    tmux.wait_for("a clean exit", PATIENCE, |s| s.contains("EXIT=0"));

    assert!(!title.contains("PWNED"), "the window was retitled: {title}");
    // capture-pane -e draws the screen with SGR colours only.
    let banned: [&[u8]; 2] = [b"\x1b[3J", b"\x1b[20h"];
    let screen = strip_csi("capture-pane -e", &captured, &banned);
    assert_clean("the dashboard's screen", &screen);
    let deadline = Instant::now() + PATIENCE;
    let bytes = loop {
        let bytes = std::fs::read(&raw).unwrap_or_default();
        if bytes.windows(6).any(|w| w == b"EXIT=0") || Instant::now() > deadline {
            break bytes;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!bytes.is_empty(), "pipe-pane recorded nothing");
    let sent = strip_csi("the bytes sent to the terminal", &bytes, &banned);
    assert_clean("the bytes sent to the terminal", &sent);
    assert!(
        String::from_utf8_lossy(&sent).contains("PWNED"),
        "the hostile text was drawn at all"
    );
}
