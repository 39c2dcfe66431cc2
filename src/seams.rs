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
    ("fn pid_alive(", "src/sys.rs"),
    ("pub struct Mirror {", "src/store/mirror/mod.rs"),
    ("pub struct FileFeed {", "src/store/file/feed.rs"),
    ("pub struct Driver<", "src/store/drive/mod.rs"),
    ("pub struct Follower {", "src/store/file/follow.rs"),
    ("pub trait LogFeed", "src/store/log.rs"),
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
    ("pub struct HazardSpec {", "src/claims/hazard.rs"),
    ("pub static COLUMNS", "src/columns/specs.rs"),
    ("pub enum EventKind {", "src/events/kind.rs"),
    ("pub struct Modes {", "src/dashboard/model/mode.rs"),
    ("pub enum Layer {", "src/dashboard/model/mode.rs"),
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
        "claims::lockfile_read::",
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

/// Lines of code (comments cut off) under `dir` that contain any of `needles`,
/// outside the files `allowed`.
fn offenders(dir: &str, needles: &[&str], allowed: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in tree() {
        if !path.starts_with(dir) || path == "src/seams.rs" {
            continue;
        }
        if allowed.iter().any(|a| path.starts_with(a)) {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if needles.iter().any(|w| code.contains(w)) {
                found.push(format!("{path}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn a_root_has_one_filesystem_watcher_its_feed() {
    // A second watcher of a root is how three of them came to disagree on
    // what a notification names: every face takes the file store's feed.
    let found = offenders(
        "src/",
        &[
            "recommended_watcher(",
            "new_debouncer(",
            "new_debouncer_opt(",
            "Inotify::init(",
        ],
        // The feed, and the inotify watcher it is made of.
        &["src/store/file/feed.rs", "src/store/file/inotify.rs"],
    );
    assert!(found.is_empty(), "a second watcher: {found:#?}");
}

#[test]
fn claims_are_judged_by_the_protocol_and_kept_judged_by_the_mirror_alone() {
    // A classifier outside the protocol and the mirror is a second answer
    // to "what state is this claim in now": faces that counted differently.
    // A backend is handed the caller's classifier; only the protocol, the
    // mirror and the seam's own helpers for a command make one.
    let found = offenders(
        "src/",
        &[
            "Classifier::new(",
            "Classifier::with(",
            ".verdict(",
            "known_pids(",
        ],
        &[
            "src/claims/",
            "src/store/mirror/",
            "src/store/backend.rs",
            "src/store/compose.rs",
        ],
    );
    assert!(found.is_empty(), "a second classifier: {found:#?}");
}

#[test]
fn a_waiter_and_a_holder_read_their_key_through_a_mirror() {
    // `acquire --wait` and `run` see the key they wait on or hold as every
    // face sees a claim: a row of the mirror (one of that key alone), not
    // a status of their own.
    let found: Vec<String> = ["src/wait/", "src/cli/run/", "src/cli/wait.rs"]
        .iter()
        .flat_map(|dir| offenders(dir, &[".status("], &["src/wait/tests.rs"]))
        .collect();
    assert!(found.is_empty(), "a key read around the mirror: {found:#?}");
    let tree = tree();
    for file in ["src/wait/mod.rs", "src/wait/hold.rs"] {
        let text = &tree.iter().find(|(p, _)| p == file).expect(file).1;
        assert!(text.contains("Want::Keys("), "{file} reads no mirror");
    }
}

#[test]
fn one_follower_of_an_events_log() {
    // Four readers of events.jsonl once noticed truncation, partial lines
    // and rotation each their own way. A face reads a member's log through
    // its log feed (`Audit::follow`); the file store's is the follower.
    let found = offenders("src/", &["Follower"], &["src/store/file/"]);
    assert!(found.is_empty(), "a second follower: {found:#?}");
}

#[test]
fn one_driver_of_a_mirror() {
    // A face that drove its own mirror (feed, listing, clock, retry) was a
    // loop written again, each with its own gaps: metrics, publish, wait
    // and run follow a store through the one driver.
    let found = offenders(
        "src/",
        &["Mirror::new(", "Mirror::of_keys("],
        &["src/store/drive/", "src/store/mirror/"],
    );
    assert!(found.is_empty(), "a mirror driven by hand: {found:#?}");
}

#[test]
fn one_dashboard_entry_point() {
    // Two dashboards (file roots, a store with a connection) each wired
    // their readers, op worker and log by hand; several roots, a site and
    // a mix of them are one store now, and one `run` shows it.
    let runs: Vec<String> = tree()
        .into_iter()
        .filter(|(path, _)| path.starts_with("src/dashboard/") && !path.contains("/update/"))
        .flat_map(|(path, text)| {
            let n = text.matches("pub fn run(").count();
            std::iter::repeat_n(path, n)
        })
        .collect();
    assert_eq!(runs, ["src/dashboard/mod.rs"], "dashboard entry points");
    let found = offenders(
        "src/dashboard/",
        &[
            "run_store",
            "worker_over",
            "store_worker",
            "spawn_store_readers",
            "spawn_root_readers",
            "fn tagged(",
            "ShownRoots",
            "InRoot",
            "Op::In",
        ],
        &[],
    );
    assert!(found.is_empty(), "a second dashboard wiring: {found:#?}");
}

#[test]
fn etcd_client_only_in_the_etcd_backend() {
    // The publisher once wrote etcd transactions itself: a second store
    // would have needed a second publisher. It writes through the sink.
    let found = offenders("src/", &["etcd_client"], &["src/store/etcd/"]);
    assert!(
        found.is_empty(),
        "etcd named outside its backend: {found:#?}"
    );
}

#[test]
fn one_answer_to_whether_a_pid_is_alive() {
    // kill(pid, 0) once meant three things (EPERM alive, or gone, or only
    // ESRCH gone); `sys::pid_alive` is the one meaning.
    let found = offenders("src/", &["libc::kill(", "kill(pid, 0)"], &["src/sys.rs"]);
    let found: Vec<_> = found
        .into_iter()
        // Signals actually sent (stopping a command's group) are not
        // probes, and `kill(-pgid, 0)` asks whether any process of a
        // command's own group is left, not whether a holder lives.
        .filter(|l| l.contains(", 0)") && !l.contains("kill(-"))
        .collect();
    assert!(found.is_empty(), "a second pid probe: {found:#?}");
}

#[test]
fn the_dashboard_reads_no_lockfile_no_pid_and_no_file_itself() {
    // Every read of the outside world reaches the model as data from the
    // collector's mirror, which reads through the store's verbs.
    let found = offenders(
        "src/dashboard/",
        &[
            "std::fs",
            "File::open",
            "read_dir(",
            "libc::kill",
            "pid_alive",
            "process_create_time_ms",
            "read_claim_file",
            "Status::of_file",
            "claims::status(",
            "claims::sweep(",
            "sweep_with(",
            "Follower",
        ],
        // `:write` writes the operator's own file, and reads nothing.
        &["src/dashboard/save_file.rs"],
    );
    assert!(found.is_empty(), "the dashboard reads itself: {found:#?}");
}

/// A file past this many lines no longer fits in a reader's head; split it
/// along a seam. The dashboard's model and update are the known exceptions
/// still waiting for theirs.
const MAX_LINES: usize = 700;

#[test]
fn the_dashboard_words_every_instant_through_the_one_clock() {
    // `crate::time` formats instants in the zone chosen (`--local-time`)
    // with its mark: a view that formats an epoch itself shows UTC beside
    // local times, unmarked.
    for (path, text) in tree() {
        if !path.starts_with("src/dashboard/") {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            assert!(
                !["chrono::", "utc_hms(", ".format(\"%", "strftime"]
                    .iter()
                    .any(|x| code.contains(x)),
                "{path}:{}: {line}",
                n + 1
            );
        }
    }
}

#[test]
fn no_file_outside_the_dashboard_is_over_seven_hundred_lines() {
    let long: Vec<String> = tree()
        .into_iter()
        .filter(|(path, _)| !path.starts_with("src/dashboard/"))
        .map(|(path, text)| (path, text.lines().count()))
        .filter(|(_, lines)| *lines > MAX_LINES)
        .map(|(path, lines)| format!("{path}: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines, split along a seam: {long:#?}"
    );
}

/// The dashboard's files are split by feature (model, update, view):
/// none grows back into the 1 500-line file every feature touched.
const MAX_DASHBOARD_LINES: usize = 600;

#[test]
fn no_dashboard_file_is_over_six_hundred_lines() {
    let long: Vec<String> = tree()
        .into_iter()
        .filter(|(path, _)| path.starts_with("src/dashboard/"))
        .map(|(path, text)| (path, text.lines().count()))
        .filter(|(_, lines)| *lines > MAX_DASHBOARD_LINES)
        .map(|(path, lines)| format!("{path}: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_DASHBOARD_LINES} lines, split along a feature: {long:#?}"
    );
}

#[test]
fn what_is_open_over_the_dashboard_is_one_stack_of_layers() {
    // Nine Options once each stood for a mode, and a seven-step chain of
    // `if`s ranked them; a request kept in the model waited there for the
    // loop to find it. A field of these types in the model is a mode (or
    // a queue) outside the stack: open it as a `Layer`, and let requests
    // leave in the update's `Effects`. (That `on_key` reaches every layer,
    // and Esc leaves it, is `tests/dashboard/modes.rs`.)
    let found = offenders(
        "src/dashboard/model/",
        &[
            ": Option<Dialog>",
            ": Option<Overlay>",
            ": Option<Prompt>",
            ": Option<AsOf>",
            ": Option<asof::AsOf>",
            ": Option<Input>",
            ": Option<TextInput>",
            "pub active: bool",
            ": Vec<Request>",
        ],
        &["src/dashboard/model/mode.rs"],
    );
    assert!(
        found.is_empty(),
        "a mode outside the layer stack: {found:#?}"
    );
}

#[test]
fn the_dashboards_model_knows_nothing_of_its_update_or_view() {
    // Elm-shaped: the view reads the model, the update changes it; a model
    // that reached into either would tie the three back into one.
    let found = offenders(
        "src/dashboard/model/",
        &[
            "dashboard::update",
            "dashboard::view",
            "super::update",
            "super::view",
        ],
        &[],
    );
    assert!(found.is_empty(), "the model reaches up: {found:#?}");
}

#[test]
fn the_store_knows_nothing_of_the_publisher_above_it() {
    // The publisher is a client of the etcd store; a store that reached
    // back up to it would make the daemon part of every store.
    let found = offenders("src/store/", &["crate::publish", "publish::"], &[]);
    assert!(found.is_empty(), "the store reaches up: {found:#?}");
}

#[test]
fn every_command_reaches_its_store_through_the_one_dispatch() {
    // Events and metrics once had file twins that took the roots around
    // the seam: a feature then had to be written twice, and was not. Only
    // what starts the faces (the dashboard, the publisher) and the command
    // line itself name the roots; every command takes the one `Store`.
    let found = offenders(
        "src/cli/",
        &[
            "Roots,",
            "Roots}",
            "&Roots",
            "FileStore",
            "store::file::",
            "claims::Root,",
            "claims::Root}",
        ],
        &[
            "src/cli/args/",
            "src/cli/tui.rs",
            "src/cli/publish.rs",
            // Only the error variant for several roots given to one key.
            "src/cli/claim_cmds.rs",
        ],
    );
    assert!(found.is_empty(), "a command around the seam: {found:#?}");
    let tree = tree();
    let text = |file: &str| {
        tree.iter()
            .find(|(p, _)| p == file)
            .map(|(_, t)| t.clone())
            .unwrap_or_default()
    };
    let dispatch = text("src/cli/dispatch.rs");
    for call in ["events::events(", "metrics::serve("] {
        assert_eq!(
            dispatch.matches(call).count(),
            1,
            "{call} is called once, from the dispatch"
        );
    }
    assert!(
        text("src/main.rs").contains("dispatch(&store,"),
        "main dispatches"
    );
}

/// A file's text up to its inline test module (`#[cfg(test)]` then
/// `mod … {`); a `#[cfg(test)] mod tests;` naming a file of its own cuts
/// nothing, or the code after it would go unread.
fn before_inline_tests(text: &str) -> &str {
    let mut at = 0;
    while let Some(i) = text[at..].find("#[cfg(test)]") {
        let start = at + i;
        let rest = text[start + "#[cfg(test)]".len()..].trim_start();
        let item = rest.lines().next().unwrap_or_default();
        if item.contains("mod ") && item.trim_end().ends_with('{') {
            return &text[..start];
        }
        at = start + 1;
    }
    text
}

/// Like [`offenders`], over the code a build without tests compiles: a
/// file's text up to its inline test module, and no test-only file.
fn code_offenders(dir: &str, needles: &[&str], allowed: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in tree() {
        let test_file = path.ends_with("tests.rs") || path.contains("/tests/");
        if !path.starts_with(dir) || path == "src/seams.rs" || test_file {
            continue;
        }
        if allowed.iter().any(|a| path.starts_with(a)) {
            continue;
        }
        let code = before_inline_tests(&text);
        for (n, line) in code.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if needles.iter().any(|w| code.contains(w)) {
                found.push(format!("{path}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn event_types_are_spelled_only_in_their_table() {
    // A type spelled at each writer, reader and colour drifted: the pane
    // coloured what the writer no longer wrote. `EventKind` names them.
    let found = code_offenders("src/", &["\"claim_"], &["src/events/kind.rs"]);
    assert!(found.is_empty(), "an event type spelled out: {found:#?}");
}

#[test]
fn a_hazard_kind_is_named_and_matched_only_in_its_spec() {
    // A kind once lived in five matches (its name, rank, cleanability,
    // metric, fix words), one of them a copy that would go silently wrong
    // when a kind was added. Its spec says each; faces ask the spec.
    let specs = crate::claims::hazard::PROTOCOL_HAZARDS.iter();
    #[cfg(feature = "etcd")]
    let specs = specs.chain(crate::store::etcd::HAZARDS);
    let mut needles: Vec<String> = specs
        // "unreadable" is a claim state's name too.
        .filter(|s| crate::claims::ClaimState::parse(s.name).is_none())
        .map(|s| format!("\"{}\"", s.name))
        .collect();
    needles.extend(["HazardKind::Known(".into(), "HazardKind::Other(".into()]);
    let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
    let homes = ["src/claims/hazard.rs", "src/store/etcd/doctor.rs"];
    let found = code_offenders("src/", &needles, &homes);
    assert!(
        found.is_empty(),
        "a hazard kind outside its spec: {found:#?}"
    );
}

#[test]
fn the_columns_are_listed_once_in_their_specs() {
    // Fifteen hand-written lists of columns (per width, per view, for
    // the sort cycle, the settings, the completion) and nine matches went
    // out of step: a column shown was one the filter could not find. A
    // view's columns come from the specs, asked by width and by what the
    // view has.
    let found = code_offenders(
        "src/",
        &["[ColumnId::", "ColumnId::*", "Column::*", "vec![ColumnId::"],
        &["src/columns/"],
    );
    assert!(
        found.is_empty(),
        "a list of columns outside the specs: {found:#?}"
    );
}

#[test]
fn no_face_matches_on_a_store_kind() {
    // `leases().is_some()` once stood for "this is etcd" in four faces,
    // each a place a third store would have been wrong in silence. A face
    // asks a capability (`ttl_required`, `audit()`, `fleet()`), never which
    // store it holds.
    let needles = [
        "leases().is_none()",
        "leases().is_some()",
        "FileStore",
        "EtcdStore",
        "StoreUrl::",
        "is_several()",
        "store.is_some()",
        "RowKind",
    ];
    let allowed = [
        // What a command line names: a URL's scheme is read there.
        "src/cli/args/",
        // Each member's capabilities, asked once at start: the one place
        // the dashboard asks a backend what it has.
        "src/dashboard/model/origins.rs",
        // `publish` and `force-release --host` connect to etcd themselves
        // until the sink is opened through the registry (being moved).
        "src/cli/publish.rs",
    ];
    let found: Vec<String> = [
        "src/dashboard/",
        "src/cli/",
        "src/metrics/",
        "src/publish/",
        "src/wait/",
    ]
    .iter()
    .flat_map(|dir| code_offenders(dir, &needles, &allowed))
    .collect();
    assert!(found.is_empty(), "a face asks a store's kind: {found:#?}");
}
