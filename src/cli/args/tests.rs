use super::*;
use clap::CommandFactory;

#[test]
fn the_command_line_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn global_flags_are_accepted_before_and_after_the_subcommand() {
    let a = Cli::try_parse_from(["claimtop", "--root", "/r", "list", "--json"]).unwrap();
    assert_eq!(a.global.root, [PathBuf::from("/r")]);
    assert!(a.global.json);
    let b = Cli::try_parse_from(["claimtop", "status", "k", "--events-dir", "/e"]).unwrap();
    assert_eq!(b.global.events_dir, Some(PathBuf::from("/e")));
}

fn parse_and_check(args: &[&str]) -> Result<Cli, clap::Error> {
    let cli = Cli::try_parse_from(args)?;
    cli.check().map(|()| cli)
}

#[test]
fn dashboard_flags_do_not_mix_with_subcommands() {
    let err = parse_and_check(&["claimtop", "--read-only", "list"]).unwrap_err();
    assert!(err.to_string().contains("--read-only"), "{err}");
    assert!(parse_and_check(&["claimtop", "list", "--no-color"]).is_err());
    assert!(parse_and_check(&["claimtop", "--keep"]).is_err());
    assert!(parse_and_check(&["claimtop", "--demo", "--keep", "--no-color"]).is_ok());
}

#[test]
fn json_without_a_subcommand_is_a_usage_error() {
    let err = parse_and_check(&["claimtop", "--json"]).unwrap_err();
    assert_eq!(err.exit_code(), 2);
}

#[test]
fn an_empty_or_blank_operator_is_a_usage_error() {
    for bad in ["", "  "] {
        let err =
            parse_and_check(&["claimtop", "force-release", "k", "--operator", bad]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(usage_message(&err).contains("operator"), "{err}");
    }
}

#[test]
fn json_is_noticed_in_an_unparseable_command_line_but_not_after_a_double_dash() {
    assert!(json_requested(&[
        "claimtop", "acquire", "--json", "--ttl", "x"
    ]));
    assert!(!json_requested(&["claimtop", "acquire", "--", "--json"]));
    assert!(!json_requested(&["--json"]), "argv[0] is the program");
}

#[test]
fn usage_message_is_one_line_without_the_error_prefix() {
    let err =
        parse_and_check(&["claimtop", "renew", "k", "--holder", "h", "--ttl", "0"]).unwrap_err();
    let msg = usage_message(&err);
    assert!(!msg.contains('\n') && !msg.starts_with("error:"), "{msg}");
    assert!(msg.contains("--ttl"), "{msg}");
}

#[test]
fn usage_message_names_every_missing_argument() {
    let err = parse_and_check(&["claimtop", "acquire"]).unwrap_err();
    let msg = usage_message(&err);
    assert!(msg.contains("<KEY>") && msg.contains("--holder"), "{msg}");
}

#[test]
fn metadata_must_be_a_json_object() {
    assert!(parse_metadata("{\"a\": [1]}").is_ok());
    assert!(parse_metadata("[1]").unwrap_err().contains("JSON object"));
    assert!(parse_metadata("{").unwrap_err().contains("not valid JSON"));
}

#[test]
fn roots_on_both_sides_of_the_subcommand_are_refused_rather_than_dropped() {
    let args = ["claimtop", "--root", "/a", "list", "--root=/b"];
    let cli = Cli::try_parse_from(args).unwrap();
    let err = cli.check_roots_kept(&args).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(usage_message(&err).contains("same side"), "{err}");
    let fine = [
        "claimtop", "list", "--root", "/a", "--root", "/b", "--", "--root",
    ];
    let cli = Cli::try_parse_from(&fine[..6]).unwrap();
    assert!(cli.check_roots_kept(&fine).is_ok());
}

#[test]
fn stores_repeat_and_mix_with_roots_but_publish_mirrors_into_exactly_one() {
    let mix = parse_and_check(&[
        "claimtop",
        "--store",
        "etcd://a:1/fno",
        "--store",
        "etcd://b:2/fno",
        "--root",
        "/r",
        "list",
    ])
    .expect("several stores and a root");
    assert_eq!(mix.global.store, ["etcd://a:1/fno", "etcd://b:2/fno"]);
    let names = mix.global.names().expect("names");
    let texts: Vec<&str> = names.stores.iter().map(|n| n.text()).collect();
    assert_eq!(texts, ["etcd://a:1/fno", "etcd://b:2/fno"]);
    let roots: Vec<&std::path::Path> = names.roots.iter().map(|r| r.root.as_path()).collect();
    assert_eq!(roots, [std::path::Path::new("/r")]);
    // A file: URL is a root, named after the roots the flags name first.
    let file = parse_and_check(&["claimtop", "--store", "file:/f", "--root", "/r", "list"])
        .expect("a file store and a root");
    let names = file.global.names().expect("names");
    assert!(names.stores.is_empty());
    let roots: Vec<&std::path::Path> = names.roots.iter().map(|r| r.root.as_path()).collect();
    assert_eq!(
        roots,
        [std::path::Path::new("/f"), std::path::Path::new("/r")]
    );
    let err = parse_and_check(&[
        "claimtop",
        "publish",
        "--store",
        "etcd://a:1",
        "--store",
        "etcd://b:2",
    ])
    .unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(usage_message(&err).contains("one --store"), "{err}");
    let p = parse_and_check(&[
        "claimtop",
        "publish",
        "--root",
        "/a",
        "--root",
        "/b",
        "--store",
        "etcd://h:1",
    ])
    .expect("publish takes both");
    assert_eq!(p.global.root.len(), 2);
    match p.command {
        Some(Command::Publish(a)) => {
            assert_eq!(a.lease_ttl, 30_000, "30 s by default");
            assert_eq!(a.resweep, 60_000);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn stores_on_both_sides_of_the_subcommand_are_refused_rather_than_dropped() {
    let args = [
        "claimtop",
        "--store",
        "etcd://a:1",
        "list",
        "--store=etcd://b:2",
    ];
    let cli = Cli::try_parse_from(args).unwrap();
    let err = cli.check_roots_kept(&args).unwrap_err();
    assert!(usage_message(&err).contains("every --store"), "{err}");
}

#[test]
fn a_root_id_without_a_host_is_a_usage_error() {
    let err = parse_and_check(&["claimtop", "force-release", "k", "--root-id", "ab"]).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(parse_and_check(&["claimtop", "force-release", "k", "--host", "h"]).is_ok());
}

#[test]
fn root_may_be_given_more_than_once() {
    let both = [PathBuf::from("/a"), PathBuf::from("/b")];
    let a = Cli::try_parse_from(["claimtop", "--root", "/a", "--root", "/b", "list"]).unwrap();
    assert_eq!(a.global.root, both);
    let b = Cli::try_parse_from(["claimtop", "list", "--root", "/a", "--root", "/b"]).unwrap();
    assert_eq!(b.global.root, both);
}
