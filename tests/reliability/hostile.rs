//! Hostile text: holders, reasons, keys, metadata, file names and event
//! fields written to attack the operator's terminal. The tests run the real
//! `claimtop` binary in text mode over a root full of them and judge every
//! byte of stdout and stderr with an independent list of what a terminal
//! must never receive raw (`common::terminal`). Files planted to make
//! claimtop act outside the claims dir, or hang, are in `files`.

mod files;

use crate::common::terminal::{forbidden, raw_on_terminal};
use crate::common::*;
use claimtop::claims::mutex::backdate;
use claimtop::claims::{acquire, AcquireOpts, AcquireOutcome, ClaimRecord, Root};
use claimtop::events::emit::{append_event, envelope};
use serde_json::{json, Map};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_claimtop");

/// Every way a string can attack a terminal or a reader's eyes.
const NASTY: &[&str] = &[
    "\u{1b}[2J\u{1b}[H",               // clear screen, home
    "\u{1b}]0;pwned\u{7}",             // OSC: retitle the terminal
    "\u{1b}]52;c;ZXZpbA==\u{7}",       // OSC 52: write the clipboard
    "\u{1b}[31mred\u{1b}[0m",          // SGR
    "\u{9b}31m",                       // C1 CSI
    "\u{85}next-line",                 // C1 NEL
    "fake\rreleased",                  // carriage return overwrites
    "tab\there",                       // tab breaks columns
    "new\nline",                       // newline breaks rows
    "\u{8}\u{8}\u{8}backspace",        // BS
    "\u{7f}del",                       // DEL
    "gpj.\u{202e}exe",                 // RLO bidi override
    "\u{2066}isolate\u{2069}",         // bidi isolate
    "zero\u{200b}width\u{200d}joiner", // zero-width
    "bom\u{feff}",                     // BOM / ZWNBSP
    "\u{0}nul",                        // NUL
    // One of each of the rest of the forbidden set.
    "c0\u{1}\u{2}\u{3}\u{4}\u{5}\u{6}\u{b}\u{c}\u{e}\u{f}\u{10}\u{1a}\u{1c}\u{1f}",
    "c1\u{80}\u{84}\u{86}\u{8d}\u{90}\u{9c}\u{9d}\u{9e}\u{9f}",
    "bidi\u{61c}\u{200e}\u{200f}\u{202a}\u{202b}\u{202c}\u{202d}\u{2067}\u{2068}",
    "invisible\u{200c}\u{2060}\u{2061}\u{2062}\u{2063}\u{2064}\u{2065}\u{180e}\u{206a}\u{206f}",
    "annotation\u{fff9}\u{fffa}\u{fffb}",
    "line\u{2028}separator\u{2029}paragraph",
    "tag\u{e0001}\u{e0041}\u{e007f}",
];

fn nasty(i: usize) -> String {
    format!("h{i}-{}", NASTY[i % NASTY.len()])
}

fn hostile_root() -> (tempfile::TempDir, Root, Vec<String>) {
    let td = tempdir();
    let root = root_in(td.path());
    let mut keys = Vec::new();
    for (i, n) in NASTY.iter().enumerate() {
        let key = format!("key{i}-{n}");
        let mut meta = Map::new();
        meta.insert(nasty(i + 1), json!(nasty(i + 2)));
        meta.insert("nested".into(), json!({"x": [nasty(i + 3)]}));
        let opts = AcquireOpts {
            reason: Some(nasty(i + 4)),
            metadata: Some(meta),
            harness: Some(nasty(i + 5)),
            // Half of them stale (a dead pid), half live.
            pid: (i % 2 == 0).then(|| dead_pid() as u32),
            ..AcquireOpts::default()
        };
        match acquire(&root, &key, &nasty(i), &opts) {
            Ok(AcquireOutcome::Acquired { .. }) => keys.push(key),
            other => panic!("could not plant {key:?}: {other:?}"),
        }
    }
    let cdir = root.claims_dir();
    // A hostile host and machine id, as another writer might leave.
    let mut rec = ClaimRecord {
        schema_version: 1,
        key: "foreign\u{1b}[5m".into(),
        holder: "\u{1b}]8;;http://evil\u{7}link\u{1b}]8;;\u{7}".into(),
        acquired_at: 1_700_000_000_000,
        pid: 1,
        host: "host\u{1b}[8m\u{202e}".into(),
        expires_at: None,
        reason: None,
        harness: None,
        machine_id: Some("m\r\u{9b}".into()),
        metadata: Default::default(),
    };
    std::fs::write(cdir.join("foreign%1B%5B5m.lock"), rec.to_yaml().unwrap()).unwrap();
    keys.push(rec.key.clone());
    // A corrupted lockfile whose bytes are escape sequences.
    std::fs::write(
        cdir.join("corrupt.lock"),
        b"\x1b[2J\x1b]0;owned\x07\x9b\xff\xfe not yaml: [",
    )
    .unwrap();
    keys.push("corrupt".into());
    // A lockfile whose NAME is an escape sequence and not UTF-8.
    let weird = std::ffi::OsStr::from_bytes(b"\x1b[31m\xff\x9b.lock");
    rec.key = "weird".into();
    std::fs::write(cdir.join(weird), rec.to_yaml().unwrap()).unwrap();
    // Litter with hostile names, aged so doctor reports it.
    let tmp = cdir.join(std::ffi::OsStr::from_bytes(b".claim-tmp-\x1b[2J\r"));
    std::fs::write(&tmp, b"").unwrap();
    backdate(&tmp, 600).unwrap();
    let m = cdir.join("evil\u{1b}]0;x\u{7}.lock.recovery.d");
    std::fs::create_dir(&m).unwrap();
    backdate(&m, 600).unwrap();
    // Events: hostile fields in well-formed events, and raw garbage lines.
    let log = root.events_file();
    for i in 0..NASTY.len() {
        let mut d = Map::new();
        d.insert("key".into(), json!(keys[i]));
        d.insert("holder".into(), json!(nasty(i)));
        d.insert(nasty(i + 1), json!(nasty(i + 2)));
        let mut ev = envelope(&format!("claim_{}", NASTY[i]), d);
        ev["ts"] = json!(nasty(i + 3));
        ev["source"] = json!(nasty(i + 4));
        append_event(&log, &ev, Duration::from_secs(5)).unwrap();
    }
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(
        &mut f,
        b"\x1b[2J\x1b]0;garbage\x07 not json\n{\"type\": \"\x1b[31m\x9b\", \"data\": 5}\n\xff\xfe\x1b\n",
    )
    .unwrap();
    (td, root, keys)
}

fn spawn_cli(root: &Path, args: &[&str]) -> Child {
    spawn_retrying(
        Command::new(BIN)
            .arg("--root")
            .arg(root)
            .args(args)
            .env("HOME", root)
            .env_remove("FNO_CLAIMS_ROOT")
            .env("TERM", "xterm-256color")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .unwrap()
}

/// Wait for a spawned `claimtop` and take what it wrote.
fn finish_cli(child: Child, args: &[&str]) -> (Vec<u8>, Vec<u8>, Option<i32>) {
    // Drain the pipes while waiting (a big output would otherwise block the
    // child on a full pipe), under a watchdog: a hang is the failure here.
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out: Output = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: kill(2) on the child we spawned.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("claimtop {args:?} hung");
        }
    };
    (out.stdout, out.stderr, out.status.code())
}

pub(super) fn run_cli(root: &Path, args: &[&str]) -> (Vec<u8>, Vec<u8>, Option<i32>) {
    finish_cli(spawn_cli(root, args), args)
}

#[test]
fn no_control_or_invisible_character_reaches_the_terminal_from_any_text_command() {
    let (td, _root, keys) = hostile_root();
    let mut runs: Vec<Vec<String>> = vec![
        vec!["list".into()],
        vec!["doctor".into()],
        vec!["events".into(), "-n".into(), "1000".into()],
    ];
    // A NUL cannot travel in argv; that key is still listed by `list`.
    for k in keys.iter().filter(|k| !k.contains('\0')) {
        runs.push(vec!["status".into(), k.clone()]);
        runs.push(vec!["events".into(), "--key".into(), k.clone()]);
    }
    // Verbs that echo the key and holder back.
    runs.push(vec![
        "acquire".into(),
        keys[1].clone(),
        "--holder".into(),
        nasty(7),
    ]);
    runs.push(vec![
        "release".into(),
        keys[3].clone(),
        "--holder".into(),
        nasty(9),
    ]);
    runs.push(vec!["force-release".into(), keys[5].clone()]);
    runs.push(vec!["force-release".into(), keys[4].clone()]);
    runs.push(vec![
        "renew".into(),
        keys[2].clone(),
        "--holder".into(),
        nasty(2),
        "--ttl".into(),
        "1h".into(),
    ]);
    let mut failures = Vec::new();
    let mut bytes_checked = 0;
    for args in &runs {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, err, code) = run_cli(td.path(), &a);
        assert!(code.is_some(), "claimtop {a:?} died of a signal");
        assert_ne!(
            code,
            Some(101),
            "claimtop {a:?} panicked: {}",
            String::from_utf8_lossy(&err)
        );
        bytes_checked += out.len() + err.len();
        for (stream, bytes) in [("stdout", &out), ("stderr", &err)] {
            for b in raw_on_terminal(bytes) {
                failures.push(format!("claimtop {a:?} {stream}: {b}"));
            }
        }
    }
    eprintln!(
        "{} text-mode runs over {} hostile keys: {bytes_checked} bytes of output checked, {} raw control characters",
        runs.len(),
        keys.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // And the hostile text is there, escaped, not silently dropped.
    let (out, _, _) = run_cli(td.path(), &["list"]);
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("\\e[2J") || text.contains("\\x1b[2J"),
        "{text}"
    );
}

#[test]
fn a_hostile_events_log_never_hangs_or_panics_the_events_command() {
    let td = tempdir();
    let root = root_in(td.path());
    let log = root.events_file();
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    // One endless line, deep JSON, NULs, and invalid UTF-8.
    let mut bytes = Vec::new();
    bytes.extend(std::iter::repeat_n(b'[', 3_000_000));
    bytes.push(b'\n');
    bytes.extend(b"{\"type\":\"x\",\"data\":");
    bytes.extend(std::iter::repeat_n(b'{', 100_000));
    bytes.push(b'\n');
    bytes.extend(std::iter::repeat_n(0u8, 100_000));
    bytes.extend(b"\n\xff\xfe\xfd\n");
    bytes.extend(serde_json::to_vec(&envelope("claim_acquired", Map::new())).unwrap());
    bytes.push(b'\n');
    std::fs::write(&log, &bytes).unwrap();
    for args in [
        &["events"][..],
        &["events", "-n", "100000"],
        &["events", "--json"],
    ] {
        let (out, err, code) = run_cli(td.path(), args);
        assert_eq!(code, Some(0), "{args:?}: {}", String::from_utf8_lossy(&err));
        assert!(raw_on_terminal(&out).is_empty() || args.contains(&"--json"));
        assert!(
            String::from_utf8_lossy(&out).contains("claim_acquired"),
            "{args:?}"
        );
    }
}

/// Every hostile string but the NUL (argv cannot carry one), end to end.
fn all_nasty() -> String {
    NASTY
        .iter()
        .filter(|n| !n.contains('\0'))
        .copied()
        .collect::<Vec<_>>()
        .join("|")
}

/// A short key with one character of each kind a key's file name can take
/// (the encoded name must fit in 240 bytes).
fn nasty_key(prefix: &str) -> String {
    format!("{prefix}\u{1b}]0;t\u{7}\u{85}\u{9b}\u{202e}\u{2028}\u{200d}\u{feff}\u{e0041}\t")
}

/// Judge one command's streams; the findings, each naming the command.
fn judged(args: &[&str], out: &[u8], err: &[u8]) -> Vec<String> {
    let mut bad = Vec::new();
    for (stream, bytes) in [("stdout", out), ("stderr", err)] {
        for b in raw_on_terminal(bytes) {
            bad.push(format!("claimtop {args:?} {stream}: {b}"));
        }
    }
    bad
}

#[test]
fn the_waiting_line_of_acquire_and_of_run_shows_a_hostile_holder_escaped() {
    let td = tempdir();
    let root = root_in(td.path());
    let now = claimtop::claims::now_ms();
    let key = nasty_key("wait");
    // Held under a TTL by a holder on another host: certainly held, so
    // both commands wait, and say for whom.
    plant(
        &root,
        &ClaimRecord {
            schema_version: 1,
            key: key.clone(),
            holder: all_nasty(),
            acquired_at: now,
            pid: 1,
            host: format!("host{}", all_nasty()),
            expires_at: Some(now + 3_600_000),
            reason: Some(all_nasty()),
            harness: Some(all_nasty()),
            machine_id: Some(all_nasty()),
            metadata: Default::default(),
        },
    );
    let holder = nasty(7);
    let mut failures = Vec::new();
    for args in [
        vec!["acquire", &key, "--holder", &holder, "--wait=1"],
        vec![
            "run", &key, "--holder", &holder, "--reason", &holder, "--wait=1", "--", "true",
        ],
    ] {
        let (out, err, code) = run_cli(td.path(), &args);
        let text = String::from_utf8_lossy(&err);
        assert_eq!(code, Some(3), "{args:?}: {text}");
        assert!(text.contains("waiting for wait\\e]0;t"), "{args:?}: {text}");
        assert!(text.contains("held by \\e[2J"), "{args:?}: {text}");
        failures.extend(judged(&args, &out, &err));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `run` holding `key` over a command that marks its start and sleeps;
/// once it has started, `replace` rewrites the lockfile under it. The loss
/// line, judged, and `run`'s exit status.
fn lose_a_run(td: &Path, key: &str, replace: impl FnOnce(&Path)) -> (Vec<String>, String) {
    let root = root_in(td);
    let started = td.join("started");
    let holder = nasty(3);
    let mark = started.to_str().unwrap();
    let args = [
        "run",
        key,
        "--holder",
        &holder,
        "--reason",
        NASTY[1],
        "--",
        "sh",
        "-c",
        "touch \"$0\"; exec sleep 30",
        mark,
    ];
    let child = spawn_cli(td, &args);
    let t = Instant::now();
    while !started.exists() {
        assert!(t.elapsed() < Duration::from_secs(20), "CMD never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    replace(&root.lockfile(key));
    let (out, err, code) = finish_cli(child, &args);
    let text = String::from_utf8_lossy(&err).into_owned();
    assert_eq!(code, Some(4), "{text}");
    assert!(text.contains("lost the claim on lose"), "{text}");
    (judged(&args, &out, &err), text)
}

/// Put `bytes` in place of `lockfile` in one rename, as a writer would.
fn swap_in(lockfile: &Path, bytes: &[u8]) {
    let tmp = lockfile.with_extension("swap");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, lockfile).unwrap();
}

#[test]
fn the_loss_line_of_run_shows_a_hostile_new_holder_and_hostile_bytes_escaped() {
    let mut failures = Vec::new();
    // Replaced by another holder's claim.
    let td = tempdir();
    let key = nasty_key("lose");
    let (bad, text) = lose_a_run(td.path(), &key, |lockfile| {
        let rec = ClaimRecord {
            schema_version: 1,
            key: key.clone(),
            holder: all_nasty(),
            acquired_at: claimtop::claims::now_ms(),
            pid: std::process::id() as i32,
            host: claimtop::claims::hostname(),
            expires_at: None,
            reason: None,
            harness: None,
            machine_id: None,
            metadata: Default::default(),
        };
        swap_in(lockfile, rec.to_yaml().unwrap().as_bytes());
    });
    assert!(text.contains("now held by \\e[2J"), "{text}");
    failures.extend(bad);
    // Overwritten with bytes that are no claim at all.
    let td = tempdir();
    let (bad, text) = lose_a_run(td.path(), &key, |lockfile| {
        swap_in(
            lockfile,
            b"holder: \x1b]0;owned\x07\x9b2J\xe2\x80\xae [\x1b[31m\n\x85: {",
        );
    });
    assert!(text.contains("overwritten"), "{text}");
    failures.extend(bad);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_oracle_forbids_each_promised_kind_of_character_and_allows_ordinary_text() {
    for c in [
        '\u{0}',
        '\u{7}',
        '\u{8}',
        '\t',
        '\r',
        '\u{1b}',
        '\u{1f}',
        '\u{7f}',
        '\u{80}',
        '\u{85}',
        '\u{9b}',
        '\u{9c}',
        '\u{9d}',
        '\u{9f}',
        '\u{61c}',
        '\u{180e}',
        '\u{200b}',
        '\u{200c}',
        '\u{200d}',
        '\u{200e}',
        '\u{200f}',
        '\u{2028}',
        '\u{2029}',
        '\u{202a}',
        '\u{202e}',
        '\u{2060}',
        '\u{2064}',
        '\u{2065}',
        '\u{2066}',
        '\u{2069}',
        '\u{206a}',
        '\u{206f}',
        '\u{feff}',
        '\u{fff9}',
        '\u{fffa}',
        '\u{fffb}',
        '\u{e0001}',
        '\u{e0020}',
        '\u{e0041}',
        '\u{e007f}',
    ] {
        assert!(forbidden(c), "U+{:04X} allowed", c as u32);
    }
    for c in [
        '\n',
        ' ',
        '~',
        'a',
        '\\',
        '\u{a0}',
        '\u{e9}',
        '\u{5f}',
        '\u{8d70}',
        '\u{1f600}',
        '\u{200a}',
        '\u{2010}',
        '\u{2027}',
        '\u{202f}',
        '\u{205f}',
        '\u{2070}',
        '\u{fff8}',
        '\u{fffc}',
        '\u{fffd}',
        '\u{e0000}',
        '\u{e0002}',
        '\u{e0080}',
    ] {
        assert!(!forbidden(c), "U+{:04X} forbidden", c as u32);
    }
    // Its size, counted by hand from its ranges: 31 C0 (all but LF), DEL,
    // 32 C1, U+061C, U+180E, 5 at U+200B, 2 separators, 5 bidi at U+202A,
    // 16 at U+2060, the BOM, 3 annotation controls, 97 tags.
    let n = (0..=0x10FFFF)
        .filter_map(char::from_u32)
        .filter(|c| forbidden(*c))
        .count();
    assert_eq!(n, 31 + 1 + 32 + 1 + 1 + 5 + 2 + 5 + 16 + 1 + 3 + 97);
}

#[test]
fn the_oracle_finds_raw_characters_and_bytes_that_are_not_utf8_on_their_line() {
    assert!(raw_on_terminal(b"plain \\e[2J escaped\n\xe2\x9c\x93 ok\n").is_empty());
    let found = raw_on_terminal(b"ok\nfine \xff\n\x1b[2J \xc2\x85\n\x9b");
    assert_eq!(found.len(), 4, "{found:?}");
    assert!(found[0].starts_with("line 1: byte 0xff"), "{found:?}");
    assert!(found[1].starts_with("line 2: U+001B"), "{found:?}");
    assert!(found[2].starts_with("line 2: U+0085"), "{found:?}");
    assert!(found[3].starts_with("line 3: byte 0x9b"), "{found:?}");
}

#[test]
fn every_character_the_oracle_forbids_comes_out_of_every_sanitizer_escaped() {
    use claimtop::sanitize::{guard, guard_lines, sanitize, sanitize_bytes, TerminalText};
    use std::io::Write as _;
    let mut missed = Vec::new();
    for c in (0..=0x10FFFF)
        .filter_map(char::from_u32)
        .filter(|c| forbidden(*c))
    {
        let s = format!("a{c}b");
        let mut tt = TerminalText::new(Vec::new(), true);
        tt.write_all(s.as_bytes()).unwrap();
        tt.flush().unwrap();
        let through: [(&str, Vec<u8>); 5] = [
            ("sanitize", sanitize(&s).as_bytes().to_vec()),
            ("sanitize_bytes", sanitize_bytes(s.as_bytes()).into_bytes()),
            ("guard", guard(&s).as_bytes().to_vec()),
            ("guard_lines", guard_lines(&s).as_bytes().to_vec()),
            ("TerminalText", tt.raw().clone()),
        ];
        for (name, out) in through {
            if !raw_on_terminal(&out).is_empty() || out == s.as_bytes() {
                missed.push(format!("{name} let U+{:04X} through", c as u32));
            }
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}
