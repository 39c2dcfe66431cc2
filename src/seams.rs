//! The module seams, checked: each concept is defined in one home, and the
//! protocol's layers import only downward. A move that puts a second copy
//! somewhere, or an import that runs back up, fails here rather than in the
//! next person's merge.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Every `src/**/*.rs` file, relative to the crate root, with its text.
fn tree() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let rel = p
                .strip_prefix(root)
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned();
            (rel, text)
        })
        .collect()
}

/// (what defines the concept, the one file it lives in)
const HOMES: &[(&str, &str)] = &[
    ("pub struct Root {", "src/claims/root.rs"),
    ("pub struct Status {", "src/claims/status.rs"),
    ("fn recovery_mutex_path(", "src/mutex.rs"),
    ("fn events_mutex_path(", "src/mutex.rs"),
    ("pub const RECOVERY_SUFFIX", "src/mutex.rs"),
    ("fn event_fields(", "src/claims/audit.rs"),
    ("fn hostname(", "src/sys.rs"),
    ("fn rename_noreplace(", "src/sys.rs"),
    ("pub fn now_ms() -> i64", "src/time.rs"),
    ("fn parse_ttl_ms(", "src/time.rs"),
    ("fn ttl_text(", "src/time.rs"),
    ("fn human_ms(", "src/time.rs"),
    ("fn utc_hms(", "src/time.rs"),
    ("fn clock(", "src/time.rs"),
    ("from_timestamp_millis(", "src/time.rs"),
    ("has no claim; nothing to release", "src/claims/words.rs"),
    ("reclaimed from stale holder", "src/claims/words.rs"),
    ("not renewed: {why}", "src/claims/words.rs"),
    ("force-release of {key} refused", "src/claims/words.rs"),
    ("fn temp_path(", "src/claims/key.rs"),
    ("fn archive_name(", "src/claims/key.rs"),
    ("fn claim_path(", "src/claims/key.rs"),
];

#[test]
fn each_protocol_concept_is_defined_in_exactly_its_one_home() {
    let tree = tree();
    for (needle, home) in HOMES {
        let found: Vec<&str> = tree
            .iter()
            .filter(|(path, text)| path != "src/seams.rs" && text.contains(needle))
            .map(|(path, _)| path.as_str())
            .collect();
        assert_eq!(found, vec![*home], "{needle:?} defined in {found:?}");
    }
}

/// Files that sit below the claims protocol and must never reach up into it.
const BELOW_CLAIMS: &[&str] = &["src/events/", "src/mutex.rs", "src/sys.rs"];

#[test]
fn the_events_log_and_the_shared_mutex_import_nothing_from_claims() {
    for (path, text) in tree() {
        if !BELOW_CLAIMS.iter().any(|b| path.starts_with(b)) {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            assert!(
                !code.contains("crate::claims") && !code.contains("super::claims"),
                "{path}:{}: {line}",
                n + 1
            );
        }
    }
}

#[test]
fn the_faces_reach_the_protocol_only_through_claims_mod() {
    // The demo's fixtures write raw lockfiles on purpose (atomic::); every
    // other face goes through what claims/mod.rs re-exports.
    let inner = [
        "claims::sweep::",
        "claims::verbs::",
        "claims::liveness::",
        "claims::record::",
    ];
    for (path, text) in tree() {
        if path.starts_with("src/claims/") || path == "src/seams.rs" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            assert!(
                !inner.iter().any(|i| line.contains(i)),
                "{path}:{}: {line}",
                n + 1
            );
        }
    }
}

/// The only files that may write to the terminal, and what each is: every
/// other file reaches it through them, so no store or lockfile value can
/// reach stdout or stderr past the escaping they do.
const TERMINAL_DOORS: &[&str] = &[
    // stdout: text mode through the TerminalText guard.
    "src/cli/output.rs",
    // stderr: every line through sanitize::guard.
    "src/diag.rs",
    // The dashboard's screen: ratatui's frames, scrubbed by view::draw,
    // and the OSC 52 copy, whose text goes base64-encoded.
    "src/dashboard/terminal.rs",
];

#[test]
fn terminal_output_leaves_only_through_the_guarded_doors() {
    let raw = [
        "println!",
        "print!(",
        "eprint!(",
        "eprintln!",
        "stdout()",
        "stderr()",
        "libc::write(",
        "dbg!(",
    ];
    for (path, text) in tree() {
        if TERMINAL_DOORS.contains(&path.as_str()) || path == "src/seams.rs" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            assert!(
                !raw.iter().any(|r| code.contains(r)),
                "{path}:{}: writes to the terminal past the guards: {line}",
                n + 1
            );
        }
    }
}
