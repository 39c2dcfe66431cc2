//! Hostile input: text that attacks the operator's terminal, and files
//! planted to make claimtop write, rename or delete outside the claims dir,
//! or hang.
//!
//! The terminal tests run the real `claimtop` binary in text mode over a
//! root full of hostile holders, reasons, keys, metadata, file names and
//! event fields, and assert that no control or invisible character reaches
//! stdout or stderr raw.

use crate::common::*;
use claimtop::claims::mutex::backdate;
use claimtop::claims::verbs::recovery_mutex_path;
use claimtop::claims::{
    acquire, doctor, doctor_fix, force_release, release, sweep, AcquireOpts, AcquireOutcome,
    ClaimError, ClaimRecord, ClaimState, ForceOpts, ForceOutcome, ReleaseOutcome, Root,
};
use claimtop::events::emit::{append_event, envelope, events_mutex_path};
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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
];

fn nasty(i: usize) -> String {
    format!("h{i}-{}", NASTY[i % NASTY.len()])
}

/// What a terminal must never receive raw. `\n` ends lines of our own
/// output; everything else in the unsafe set must come out escaped.
fn raw_controls(out: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(out);
    let mut bad = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        for c in line.chars() {
            if claimtop::sanitize::is_unsafe(c) {
                bad.push(format!("line {n}: U+{:04X} in {:?}", c as u32, line));
            }
        }
    }
    bad
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
        metadata: Map::new(),
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

fn run_cli(root: &Path, args: &[&str]) -> (Vec<u8>, Vec<u8>, Option<i32>) {
    let child = spawn_retrying(
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
    .unwrap();
    // Drain the pipes while waiting (a big output would otherwise block the
    // child on a full pipe), under a watchdog: a hang is the failure here.
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: kill(2) on the child we spawned.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("claimtop {args:?} hung");
        }
    };
    (out.stdout, out.stderr, out.status.code())
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
            for b in raw_controls(bytes) {
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

/// Everything under `dir`: path → (kind, length, mtime, contents).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (String, u64, i64, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let md = std::fs::symlink_metadata(&d).unwrap();
        let kind = format!("{:?}", md.file_type());
        let body = if md.is_file() {
            std::fs::read(&d).unwrap()
        } else {
            Vec::new()
        };
        out.insert(
            d.clone(),
            (
                kind,
                md.len(),
                md.mtime_nsec() + md.mtime() * 1_000_000_000,
                body,
            ),
        );
        if md.is_dir() {
            for e in std::fs::read_dir(&d).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    out
}

/// A directory outside the claims root, full of things worth protecting.
fn outside() -> tempfile::TempDir {
    let o = tempdir();
    std::fs::write(o.path().join("owner"), b"precious").unwrap();
    std::fs::write(o.path().join("k.lock"), dead_claim("k")).unwrap();
    std::fs::create_dir(o.path().join("sub")).unwrap();
    std::fs::write(o.path().join("sub/data"), b"more").unwrap();
    o
}

fn dead_claim(key: &str) -> String {
    ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: "gone".into(),
        acquired_at: 1_700_000_000_000,
        pid: dead_pid(),
        host: claimtop::claims::liveness::hostname(),
        expires_at: None,
        reason: None,
        harness: None,
        machine_id: Some(claimtop::claims::liveness::machine_id()).filter(|m| !m.is_empty()),
        metadata: Map::new(),
    }
    .to_yaml()
    .unwrap()
}

/// The stage of a filesystem-trick test: an outside dir and its snapshot,
/// and a root whose claims dir exists.
struct Stage {
    outside: tempfile::TempDir,
    before: BTreeMap<PathBuf, (String, u64, i64, Vec<u8>)>,
    _td: tempfile::TempDir,
    root: Root,
}

impl Stage {
    fn new() -> Stage {
        let outside = outside();
        let before = snapshot(outside.path());
        let td = tempdir();
        let root = root_in(td.path());
        std::fs::create_dir_all(root.claims_dir()).unwrap();
        Stage {
            outside,
            before,
            _td: td,
            root,
        }
    }

    fn out(&self) -> &Path {
        self.outside.path()
    }

    fn assert_outside_untouched(&self) {
        assert_eq!(
            snapshot(self.outside.path()),
            self.before,
            "something outside the root changed"
        );
    }
}

/// Every verb that writes, renames or deletes, against `key`, plus the
/// CLI's doctor --fix.
fn hammer(root: &Root, key: &str) {
    let _ = acquire(root, key, "attacker-target", &AcquireOpts::default());
    let _ = release(root, key, "gone");
    let _ = release(root, key, "attacker-target");
    let _ = force_release(
        root,
        key,
        &ForceOpts {
            allow_live: true,
            ..ForceOpts::default()
        },
    );
    let _ = doctor_fix(root);
    let (_, err, code) = run_cli(&root.root, &["doctor", "--fix"]);
    assert_ne!(
        code,
        Some(101),
        "doctor --fix panicked: {}",
        String::from_utf8_lossy(&err)
    );
}

#[test]
fn a_symlink_planted_as_a_lockfile_is_never_written_through_or_followed() {
    let st = Stage::new();
    let (root, o) = (&st.root, st.out());
    std::os::unix::fs::symlink(o.join("k.lock"), root.lockfile("k")).unwrap();
    // The link points at a stale-looking claim: following it would make
    // acquire "recover" it by renaming and writing.
    match acquire(root, "k", "me", &AcquireOpts::default()) {
        Err(ClaimError::Corrupted { reason, .. }) => {
            assert!(reason.contains("symlink"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        release(root, "k", "gone").unwrap(),
        ReleaseOutcome::CorruptedLeft { .. }
    ));
    assert_eq!(sweep(root).counts.corrupted, 1);
    hammer(root, "k");
    st.assert_outside_untouched();
}

#[test]
fn a_symlink_planted_as_the_archive_dir_never_moves_a_claim_outside() {
    let st = Stage::new();
    let (root, o) = (&st.root, st.out());
    std::os::unix::fs::symlink(o, root.claims_dir().join(".expired")).unwrap();
    std::fs::write(root.lockfile("k"), dead_claim("k")).unwrap();
    // Stale recovery and force-release both archive: both must refuse.
    match acquire(root, "k", "me", &AcquireOpts::default()) {
        Err(e) => assert!(e.to_string().contains("not a real directory"), "{e}"),
        other => panic!("{other:?}"),
    }
    match force_release(root, "k", &ForceOpts::default()) {
        Err(e) => assert!(e.to_string().contains("not a real directory"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(root.lockfile("k").exists(), "the claim was moved away");
    hammer(root, "k");
    st.assert_outside_untouched();
}

#[test]
fn a_symlink_planted_as_a_mutex_dir_never_leads_outside_even_once_stolen() {
    let st = Stage::new();
    let (root, o) = (&st.root, st.out());
    std::fs::write(root.lockfile("k"), dead_claim("k")).unwrap();
    let m = recovery_mutex_path(&root.lockfile("k"));
    std::os::unix::fs::symlink(o, &m).unwrap();
    let log = root.events_file();
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let em = events_mutex_path(&log);
    std::os::unix::fs::symlink(o.join("sub"), &em).unwrap();
    // Aged past the steal rule, they are stolen as corpses: the links are
    // renamed and unlinked, their targets never entered.
    backdate(&m, 600).unwrap();
    backdate(&em, 600).unwrap();
    let kinds: Vec<_> = doctor(root).into_iter().map(|h| h.path).collect();
    assert!(kinds.contains(&m) && kinds.contains(&em), "{kinds:?}");
    match acquire(root, "k", "me", &AcquireOpts::default()) {
        Ok(AcquireOutcome::Acquired { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(std::fs::symlink_metadata(&m).is_err());
    hammer(root, "k");
    // Planted again, for doctor --fix alone.
    std::os::unix::fs::symlink(o, &m).unwrap();
    backdate(&m, 600).unwrap();
    let (_, _, code) = run_cli(&root.root, &["doctor", "--fix"]);
    assert!(code.is_some());
    assert!(std::fs::symlink_metadata(&m).is_err());
    st.assert_outside_untouched();
}

#[test]
fn litter_planted_as_symlinks_is_unlinked_by_doctor_fix_never_followed() {
    let st = Stage::new();
    let (root, o) = (&st.root, st.out());
    let cdir = root.claims_dir();
    for (name, target) in [
        (".claim-tmp-1-2-3", o.join("owner")),
        ("k.lock.tmp.1.2", o.join("k.lock")),
        ("k.lock.recovery.d.reap.1.2", o.to_path_buf()),
    ] {
        std::os::unix::fs::symlink(target, cdir.join(name)).unwrap();
        backdate(&cdir.join(name), 600).unwrap();
    }
    let fixes = doctor_fix(root);
    assert!(fixes.iter().all(|f| f.fixed), "{fixes:?}");
    assert!(litter(&cdir).is_empty(), "{:?}", litter(&cdir));
    st.assert_outside_untouched();
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn a_lockfile_that_is_a_directory_a_fifo_or_a_link_to_a_fifo_never_hangs_anything() {
    let td = tempdir();
    let root = root_in(td.path());
    let cdir = root.claims_dir();
    std::fs::create_dir_all(&cdir).unwrap();
    std::fs::create_dir(root.lockfile("dir")).unwrap();
    std::fs::write(root.lockfile("dir").join("inner"), b"x").unwrap();
    mkfifo(&root.lockfile("fifo"));
    mkfifo(&td.path().join("elsewhere-fifo"));
    std::os::unix::fs::symlink(td.path().join("elsewhere-fifo"), root.lockfile("linkfifo"))
        .unwrap();
    let s = sweep(&root);
    assert_eq!(s.counts.corrupted, 3, "{:?}", s.claims);
    assert!(s.claims.iter().all(|c| c.state == ClaimState::Corrupted));
    for key in ["dir", "fifo", "linkfifo"] {
        assert!(matches!(
            acquire(&root, key, "me", &AcquireOpts::default()),
            Err(ClaimError::Corrupted { .. })
        ));
        assert!(matches!(
            release(&root, key, "me"),
            Ok(ReleaseOutcome::CorruptedLeft { .. })
        ));
    }
    // The CLI too, every reading command, bounded by run_cli's watchdog.
    for args in [
        &["list"][..],
        &["doctor"],
        &["status", "fifo"],
        &["status", "dir"],
    ] {
        let (_, err, code) = run_cli(td.path(), args);
        assert_ne!(
            code,
            Some(101),
            "{args:?}: {}",
            String::from_utf8_lossy(&err)
        );
    }
    // An operator can clear each of them: archived, never deleted.
    for key in ["dir", "fifo", "linkfifo"] {
        assert!(matches!(
            force_release(&root, key, &ForceOpts::default()),
            Ok(ForceOutcome::Archived { .. })
        ));
    }
    assert!(td.path().join("elsewhere-fifo").exists());
    assert_eq!(sweep(&root).claims.len(), 0);
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
        assert!(raw_controls(&out).is_empty() || args.contains(&"--json"));
        assert!(
            String::from_utf8_lossy(&out).contains("claim_acquired"),
            "{args:?}"
        );
    }
}
