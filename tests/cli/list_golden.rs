//! `list` and `list --json` of one mixed root, byte for byte.
//!
//! Captured from the code before the whole-process speed work, so that no
//! change made for speed (buffer reuse, a hand-rolled writer, one YAML scan)
//! can change a byte of what scripts and people read. Only what cannot be
//! fixed in a fixture is masked: the temp root, this machine's host name and
//! identity, the live holder's pid, and durations measured against the clock.

use crate::common::{claimtop, Sleeper};
use claimtop::claims::liveness::hostname;
use claimtop::claims::{machine_id, mutex};
use std::path::Path;
use std::process::Output;
use tempfile::TempDir;

const DAY_MS: i64 = 86_400_000;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// One record in the canonical shape, with this machine's identity.
fn local(key: &str, holder: &str, pid: u32, acquired_at: i64, tail: &str) -> String {
    format!(
        "schema_version: 1\nkey: {key}\nholder: {holder}\nacquired_at: {acquired_at}\n\
         pid: {pid}\nhost: {host}\n{tail}{mid}",
        host = hostname(),
        mid = Some(machine_id())
            .filter(|m| !m.is_empty())
            .map(|m| format!("machine_id: {m}\n"))
            .unwrap_or_default(),
    )
}

/// A root holding one of every kind of entry `list` words differently.
fn mixed_root(dir: &Path, live_pid: u32) {
    let claims = dir.join(".fno/claims");
    std::fs::create_dir_all(&claims).expect("claims dir");
    let put = |name: &str, text: &[u8]| std::fs::write(claims.join(name), text).expect("write");
    let now = now_ms();
    let long_ago = 1_700_000_000_000;
    // Claimed after its holder started (the clock's seconds-rounded boot
    // time can put a fresh process's start a second late): verifiably alive.
    let live_since = now + 5_000;
    put(
        "live%3Apid.lock",
        local("live:pid", "pty:aa", live_pid, live_since, "").as_bytes(),
    );
    // TTL claims: running (live and suspect), expired (stale and hybrid live).
    // Expiries sit mid-unit so the worded durations hold for half an hour.
    let in_3h = now + 3 * 3_600_000 + 1_800_000;
    let ago_2d = now - 2 * DAY_MS - 1_800_000;
    put(
        "ttl-live.lock",
        local(
            "ttl-live",
            "codex:1",
            live_pid,
            live_since,
            &format!("expires_at: {in_3h}\nreason: rebuild shard 3\nharness: codex\n"),
        )
        .as_bytes(),
    );
    put(
        "ttl-suspect.lock",
        local(
            "ttl-suspect",
            "codex:2",
            9_999_999,
            long_ago,
            &format!("expires_at: {in_3h}\n"),
        )
        .as_bytes(),
    );
    put(
        "ttl-stale.lock",
        local(
            "ttl-stale",
            "codex:3",
            9_999_998,
            long_ago,
            &format!("expires_at: {ago_2d}\n"),
        )
        .as_bytes(),
    );
    put(
        "ttl-hybrid.lock",
        local(
            "ttl-hybrid",
            "claude:4",
            live_pid,
            live_since,
            &format!("expires_at: {ago_2d}\n"),
        )
        .as_bytes(),
    );
    put(
        "dead.lock",
        local("dead", "pty:bb", 9_999_997, long_ago, "").as_bytes(),
    );
    // A live pid that started after the claim was written: reused.
    put(
        "reused.lock",
        local("reused", "pty:cc", live_pid, long_ago, "").as_bytes(),
    );
    // Flat metadata (fast path) and nested metadata with quoting (full parse).
    put(
        "meta-flat.lock",
        format!(
            "{}metadata:\n  node: n3\n  attempt: 3\n  ok: true\n  gone: null\n",
            local("meta-flat", "pty:dd", 9_999_996, long_ago, "")
        )
        .as_bytes(),
    );
    put(
        "meta-nested.lock",
        format!(
            "{}metadata:\n  a: &id001\n  - x\n  - 'y: z'\n  b: *id001\n  c: {{d: [1, 2.5, null]}}\n",
            local(
                "meta-nested",
                "pty:ee",
                9_999_995,
                long_ago,
                "reason: \"don't [stop] \\\"quoted\\\"\"\n"
            )
        )
        .as_bytes(),
    );
    // Another machine: foreign, unverifiable.
    put(
        "foreign.lock",
        b"schema_version: 1\nkey: foreign\nholder: pty:ff\nacquired_at: 1700000000000\n\
          pid: 8888881\nhost: elsewhere-7\nmachine_id: 0f3c2d5e9a8b47c6:4026531836\n",
    );
    put(
        "foreign-ttl.lock",
        b"schema_version: 1\nkey: foreign-ttl\nholder: pty:gg\nacquired_at: 1700000000000\n\
          pid: 8888882\nhost: elsewhere-8\nexpires_at: 1700000060000\n",
    );
    // Hostile text: terminal escapes, a backslash, unicode, quotes.
    put(
        "hostile.lock",
        local(
            "hostile",
            "\"evil\\e]0;pwned\\a \\\\ caf\u{e9} \u{202e}x\"",
            9_999_994,
            long_ago,
            "reason: \"tab\\there \\\"q\\\" back\\\\slash\"\n",
        )
        .as_bytes(),
    );
    put(
        "job%5Ce%5B2J.lock",
        local("job\\e[2J", "pty:hh", 9_999_993, long_ago, "").as_bytes(),
    );
    // Key mismatches: a non-canonical name, and a record naming another key.
    put(
        "node:x.lock",
        local("node:x", "pty:ii", 9_999_992, long_ago, "").as_bytes(),
    );
    put(
        "named.lock",
        local("other-key", "pty:jj", 9_999_991, long_ago, "").as_bytes(),
    );
    // Corrupted in every way a sweep words differently.
    put("c-list.lock", b"- not\n- a mapping\n");
    put(
        "c-schema.lock",
        b"schema_version: 9\nkey: c-schema\nholder: h\nacquired_at: 1\npid: 1\nhost: x\n",
    );
    put("c-utf8.lock", b"key: \xff\xfe\n");
    put("c-empty.lock", b"");
    put(
        "c-field.lock",
        b"key: c-field\nholder: h\nacquired_at: soon\npid: 1\nhost: x\n",
    );
    std::fs::create_dir(claims.join("c-dir.lock")).expect("dir");
    std::os::unix::fs::symlink(claims.join("dead.lock"), claims.join("c-link.lock"))
        .expect("symlink");
    // Unreadable: refused for cost, not judged.
    put(
        "u-deep.lock",
        format!(
            "key: u\nholder: h\nacquired_at: 1\npid: 1\nhost: x\nmetadata: {{a: {}1\n",
            "[".repeat(200)
        )
        .as_bytes(),
    );
    put("u-big.lock", &vec![b'a'; (1 << 20) + 10]);
    // A name that is not UTF-8, and the non-claim entries doctor reports.
    use std::os::unix::ffi::OsStrExt;
    std::fs::write(
        claims.join(std::ffi::OsStr::from_bytes(b"x\xff.lock")),
        "key: x\n",
    )
    .expect("odd name");
    let corpse = claims.join("dead.lock.recovery.d");
    std::fs::create_dir(&corpse).expect("mutex");
    mutex::backdate(&corpse, 600).expect("backdate");
    let litter = claims.join(".claim-tmp-1234-5-6");
    std::fs::write(&litter, "half").expect("litter");
    mutex::backdate(&litter, 600).expect("backdate");
    std::fs::write(claims.join(".expired"), "not a dir").expect("expired");
}

/// Replace the run of `allowed` characters right after each `from` with
/// `<T>`: the durations, instants and epoch numbers the clock moves.
fn mask_after(text: &str, from: &str, allowed: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(from) {
        let (head, tail) = rest.split_at(i + from.len());
        out.push_str(head);
        let run = tail
            .find(|c: char| !allowed.contains(c))
            .unwrap_or(tail.len());
        if run > 0 {
            out.push_str("<T>");
        }
        rest = &tail[run..];
    }
    out.push_str(rest);
    out
}

/// Replace the number `n` wherever it stands alone (not inside a longer one).
fn mask_number(text: &str, n: u32, with: &str) -> String {
    let needle = n.to_string();
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, _) in text.match_indices(&needle) {
        let end = i + needle.len();
        let alone =
            (i == 0 || !b[i - 1].is_ascii_digit()) && (end == b.len() || !b[end].is_ascii_digit());
        if alone && i >= last {
            out.push_str(&text[last..i]);
            out.push_str(with);
            last = end;
        }
    }
    out.push_str(&text[last..]);
    out
}

fn masked(out: &Output, root: &Path, live_pid: u32) -> String {
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mid = machine_id();
    if !mid.is_empty() {
        text = text.replace(&mid, "<MACHINE_ID>");
    }
    text = text.replace(&root.display().to_string(), "<ROOT>");
    text = text.replace(&format!("host {}", hostname()), "host <HOST>");
    text = text.replace(
        &format!("\"host\":\"{}\"", hostname()),
        "\"host\":\"<HOST>\"",
    );
    const DURATION: &str = "0123456789dhms";
    for (from, allowed) in [
        ("expired ", DURATION),
        ("expires in ", DURATION),
        ("(in ", DURATION),
        ("started ", DURATION),
        ("left behind ", DURATION),
        ("held for ", DURATION),
        ("until ", "0123456789-:TZ"),
        ("\"acquired_at\":", "0123456789"),
        ("\"expires_at\":", "0123456789"),
    ] {
        text = mask_after(&text, from, allowed);
    }
    let text = mask_number(&text, live_pid, "<LIVE_PID>");
    // Pids wrap at pid_max, so the live holder's may have 3 to 7 digits,
    // and the table pads its PID cell to the widest (the fixture's 7-digit
    // dead pids) plus two. Its padding is put back to what a 5-digit pid
    // had when the snapshot was taken.
    const PID_COLUMN: usize = 7;
    let digits = live_pid.to_string().len();
    text.replace(
        &format!("<LIVE_PID>{}", " ".repeat(PID_COLUMN + 2 - digits)),
        &format!("<LIVE_PID>{}", " ".repeat(PID_COLUMN + 2 - 5)),
    )
}

#[test]
fn list_text_and_json_of_a_mixed_root_are_unchanged_byte_for_byte() {
    let root = TempDir::new().expect("root");
    let home = TempDir::new().expect("home");
    let sleeper = Sleeper::spawn();
    mixed_root(root.path(), sleeper.pid());
    let run = |json: bool| {
        let mut c = claimtop(home.path());
        c.args(["list", "--root"]).arg(root.path());
        if json {
            c.arg("--json");
        }
        c.output().expect("run claimtop")
    };
    insta::assert_snapshot!("list_text", masked(&run(false), root.path(), sleeper.pid()));
    insta::assert_snapshot!("list_json", masked(&run(true), root.path(), sleeper.pid()));
}
