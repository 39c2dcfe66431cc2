//! The help and the documents generated from it: `docs/cli-reference.md`,
//! the man pages and the key tables are the program's own definitions
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
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
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
    // whichever build generates it, and says which parts need that build.
    assert!(want.contains("--etcd-cacert"));
    assert!(want.contains("as the build with the etcd store"));
    for flag in ["--etcd-cacert", "--timeout", "--host"] {
        let at = want
            .find(&format!("      {flag} "))
            .unwrap_or_else(|| panic!("{flag} missing"));
        let entry = want[at..].split("\n\n").next().unwrap_or_default();
        assert!(entry.ends_with(reference::ETCD_ONLY), "{entry}");
    }
    assert!(!help(&["list", "--help"]).contains(reference::ETCD_ONLY));
    whole_file_is("docs/cli-reference.md", &want);
}

/// Every man page, as (file name, roff text): `claimtop.1` and one per
/// subcommand.
fn man_pages() -> Vec<(String, String)> {
    reference::man_commands()
        .into_iter()
        .map(|cmd| {
            let man = clap_mangen::Man::new(cmd);
            let mut page = Vec::new();
            man.render(&mut page).unwrap();
            (man.get_filename(), String::from_utf8(page).unwrap())
        })
        .collect()
}

#[test]
fn every_man_page_a_page_names_is_generated_and_shipped() {
    let pages = man_pages();
    let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[0], "claimtop.1");
    for want in [
        "claimtop-run.1",
        "claimtop-list.1",
        "claimtop-fleet-forget.1",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
    // A page names another as `claimtop\-run(1)`: each must be one of ours.
    for (name, page) in &pages {
        for mention in page.split("claimtop\\-").skip(1) {
            let Some((sub, _)) = mention.split_once("(1)") else {
                continue;
            };
            if sub.contains(char::is_whitespace) {
                continue;
            }
            let file = format!("claimtop-{}.1", sub.replace("\\-", "-"));
            assert!(
                names.contains(&file.as_str()),
                "{name} names {file}, not shipped"
            );
        }
    }
    let main = &pages[0].1;
    assert!(main.contains(".SH \"ETCD STORE OPTIONS\""));
    assert!(main.contains("This page shows the build with the etcd store"));
    assert!(main.contains("(etcd build only)"));
    assert!(
        main.contains("4 the claim was lost"),
        "exit status 4 is not in claimtop(1)"
    );
    let run = &pages.iter().find(|(n, _)| n == "claimtop-run.1").unwrap().1;
    assert!(
        run.contains("\\-\\-holder") && run.contains("60s–24h"),
        "{run}"
    );

    let dir = repo("assets/man");
    for (name, page) in &pages {
        whole_file_is(&format!("assets/man/{name}"), page);
    }
    // No page is left behind for a subcommand that is gone.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        if names.contains(&file.as_str()) {
            continue;
        }
        if blessing() {
            std::fs::remove_file(dir.join(&file)).unwrap();
        } else {
            panic!("assets/man/{file} is not generated from the command line; bless to remove it");
        }
    }
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

#[test]
fn the_help_states_exit_status_4_and_the_ttl_range() {
    for flag in ["-h", "--help"] {
        let top = help(&[flag]);
        assert!(top.contains("4 the claim was lost"), "{top}");
        assert!(top.contains("60s–24h"), "{top}");
    }
    for sub in ["acquire", "renew", "run"] {
        let text = help(&[sub, "--help"]);
        let ttl = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("--ttl"))
            .take(2)
            .collect::<String>();
        assert!(ttl.contains("60s to 24h"), "{sub}: {ttl}");
        assert!(text.contains("Exit status:"), "{sub}: {text}");
    }
    assert!(help(&["run", "--help"]).contains("4 the claim was lost while CMD ran"));
}

#[test]
fn the_metrics_table_names_every_metric_the_exporter_serves() {
    use claimtop::metrics::{EventCounts, Exporter, HostLabel, HostUp, Snapshot};
    // A family shows in a page only once it has a series: one root, one
    // event, one publishing host give every family one.
    let exporter = Exporter::new();
    let host = HostLabel {
        hostname: "alpha".into(),
        host_id: "m1".into(),
    };
    let root = Snapshot {
        root: None,
        host: None,
        counts: Default::default(),
        oldest_s: Default::default(),
        hazards: Default::default(),
        store_up: true,
    };
    let mut events = EventCounts::default();
    events.add(Some("claim_acquired"));
    exporter.update(&[root], &[&events]);
    exporter.update_hosts(&[HostUp {
        host,
        online: true,
        roots: vec![("/srv/a".into(), true)],
    }]);
    let page = exporter.render().unwrap();
    let table = std::fs::read_to_string(repo("docs/cli.md")).unwrap();
    let mut names = Vec::new();
    for line in page.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(name), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        // A counter's samples, and so its name in a query, end in _total.
        let shown = match kind {
            "counter" => format!("{name}_total"),
            _ => name.to_string(),
        };
        assert!(
            table.contains(&format!("| `{shown}` | {kind} |")),
            "docs/cli.md's metrics table has no row for {shown} ({kind})"
        );
        names.push(shown);
    }
    assert!(names.len() >= 9, "{names:?}");
}
