//! The help and the documents generated from it: `docs/cli-reference.md`,
//! the man page and the key tables are the program's own definitions
//! rendered, and these tests fail when a document and the code differ.
//! `CLAIMTOP_BLESS=1 cargo test --test cli docs::` rewrites them.

use claimtop::cli::reference;
use claimtop::dashboard::testing::{commands_table, markdown_table, Keys};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn blessing() -> bool {
    std::env::var_os("CLAIMTOP_BLESS").is_some_and(|v| !v.is_empty())
}

/// `want` is the whole of `rel`, or rewritten into it when blessing.
fn whole_file_is(rel: &str, want: &str) {
    let path = repo(rel);
    if blessing() {
        std::fs::write(&path, want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{rel} differs from what the code generates; run \
         CLAIMTOP_BLESS=1 cargo test --test cli docs:: and commit the result"
    );
}

/// Between `<!-- NAME ... -->` and `<!-- /NAME -->` in `rel` stands `want`.
fn region_is(rel: &str, name: &str, want: &str) {
    let path = repo(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let open = format!("<!-- {name} ");
    let close = format!("<!-- /{name} -->");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("{rel} has no {open}… marker"));
    let body = start + text[start..].find('\n').unwrap() + 1;
    let end = text[body..]
        .find(&close)
        .map(|e| body + e)
        .unwrap_or_else(|| panic!("{rel} has no {close} marker"));
    if blessing() {
        std::fs::write(&path, format!("{}{want}{}", &text[..body], &text[end..])).unwrap();
        return;
    }
    assert!(
        text[body..end] == *want,
        "the {name} table in {rel} differs from the keymap; run \
         CLAIMTOP_BLESS=1 cargo test --test cli docs:: and commit the result"
    );
}

#[test]
fn the_cli_reference_is_the_programs_own_help() {
    let want = reference::markdown();
    for sub in ["claimtop acquire", "claimtop run", "claimtop force-release"] {
        assert!(want.contains(&format!("## {sub}\n")), "{sub} missing");
    }
    // The reference documents the whole surface, the etcd store included,
    // whichever build generates it.
    assert!(want.contains("--etcd-cacert"));
    whole_file_is("docs/cli-reference.md", &want);
}

#[test]
fn the_man_page_is_generated_from_the_same_definition() {
    let mut page = Vec::new();
    clap_mangen::Man::new(reference::documented_command())
        .render(&mut page)
        .unwrap();
    let page = String::from_utf8(page).unwrap();
    assert!(page.starts_with(".ie \\n(.g .ds Aq") || page.contains(".TH claimtop"));
    whole_file_is("assets/claimtop.1", &page);
}

#[test]
fn the_key_tables_in_the_docs_are_the_keymap() {
    let all = markdown_table(Keys::All);
    let essential = markdown_table(Keys::Essential);
    // The footer's keys are a strict part of the whole map.
    assert!(essential.lines().count() < all.lines().count());
    assert!(all.contains("| `F` |") && all.contains("| `t` |"));
    region_is("docs/dashboard.md", "keys:all", &all);
    region_is("README.md", "keys:essential", &essential);
    region_is("docs/dashboard.md", "commands", &commands_table());
}

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_claimtop"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_subcommands_help_lists_its_own_flags_before_the_global_ones() {
    let text = help(&["acquire", "--help"]);
    let own = text.find("\nOptions:").expect("an Options heading");
    let global = text
        .find("\nGlobal options:")
        .expect("a Global options heading");
    assert!(own < global, "{text}");
    let holder = text.find("--holder").unwrap();
    let root = text.find("--root").unwrap();
    assert!(holder < global && global < root, "{text}");
    // Said of the verbs that do take several roots, not of acquire.
    assert!(!text.contains("(list, doctor, events)"), "{text}");
}

#[test]
fn every_subcommands_help_ends_with_examples_of_itself() {
    let top = help(&["--help"]);
    let subs: Vec<&str> = top
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(subs.len() >= 12, "{subs:?}");
    for sub in subs {
        let text = help(&[sub, "--help"]);
        let examples = text
            .split("\nExamples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{sub} --help has no examples:\n{text}"));
        let lines: Vec<&str> = examples.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!((2..=3).contains(&lines.len()), "{sub}: {lines:?}");
        assert!(
            lines.iter().all(|l| l.contains(&format!(" {sub}"))),
            "{sub}'s examples run another command: {lines:?}"
        );
    }
}

#[test]
fn json_help_does_not_speak_of_events_outside_events() {
    assert!(!help(&["publish", "--help"]).contains("JSON Lines"));
    assert!(help(&["events", "--help"]).contains("JSON Lines"));
}

#[test]
fn the_etcd_flags_are_offered_only_by_a_build_that_has_the_etcd_store() {
    let text = help(&["list", "--help"]);
    assert_eq!(
        text.contains("--etcd-cacert"),
        cfg!(feature = "etcd"),
        "{text}"
    );
    assert_eq!(text.contains("etcd store options:"), cfg!(feature = "etcd"));
}
