//! Every JSON shape over etcd keeps the file store's fields and adds only
//! the contract's; a lease id as etcdctl lists it; the usage errors etcd
//! adds; the store named by the root's config; the text listing's hazards.

use super::*;

/// The member names of an object (empty for anything else).
fn names(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// `etcd` has every member `file` has, and what it has beyond is `extra`.
fn adds_only(what: &str, file: &Value, etcd: &Value, extra: &[&str]) {
    let (f, e) = (names(file), names(etcd));
    let missing: Vec<_> = f.difference(&e).collect();
    assert!(
        missing.is_empty(),
        "{what}: etcd JSON lacks {missing:?}\nfile: {file}\netcd: {etcd}"
    );
    let added: BTreeSet<String> = e.difference(&f).cloned().collect();
    let want: BTreeSet<String> = extra.iter().map(|s| s.to_string()).collect();
    assert_eq!(added, want, "{what}: fields added over etcd\netcd: {etcd}");
}

/// A claim RECORD over etcd: the file record's fields, plus the fencing
/// revision and the lease with its three numbers.
fn check_record(what: &str, file: &Value, etcd: &Value) {
    adds_only(what, file, etcd, &["revision", "lease"]);
    assert!(
        etcd["revision"].as_i64().is_some_and(|r| r > 0),
        "{what}: {etcd}"
    );
    let lease = &etcd["lease"];
    for n in ["id", "ttl_s", "remaining_s"] {
        assert!(lease[n].as_i64().is_some(), "{what}: lease.{n} in {lease}");
    }
    // The id as etcdctl prints it, for readers that parse numbers as
    // doubles: ids run past 2^53.
    let id = lease["id"].as_i64().unwrap_or_default();
    assert_eq!(
        lease["id_hex"],
        Value::from(format!("{id:016x}")),
        "{what}: lease.id_hex in {lease}"
    );
    assert_eq!(
        lease["ttl_s"], 120,
        "{what}: the lease's TTL is the claim's"
    );
}

#[test]
fn every_cli_json_shape_over_etcd_keeps_the_file_fields_and_adds_only_the_contracts() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/shapes");
    let sb = Sandbox::new();
    let home = sb.home.path();
    let file = |args: &[&str]| sb.run(&[&["--json"], args].concat());
    let on_etcd = |args: &[&str]| run(over(home, &url), &[&["--json"], args].concat());
    let both = |args: &[&str]| {
        let (f, e) = (file(args), on_etcd(args));
        assert_eq!(
            code(&f),
            code(&e),
            "{args:?}: exit statuses differ\nfile: {f:?}\netcd: {e:?}"
        );
        (json_of(&f), json_of(&e))
    };

    let (f, e) = both(&[
        "acquire", "k", "--holder", "alice", "--ttl", "2m", "--reason", "r",
    ]);
    adds_only("acquire", &f, &e, &[]);
    check_record("acquire.record", &f["record"], &e["record"]);
    let revision = e["record"]["revision"].clone();

    let (f, e) = both(&["status", "k"]);
    adds_only("status", &f, &e, &[]);
    assert_eq!(e["state"], "live", "{e}");
    check_record("status.record", &f["record"], &e["record"]);
    assert_eq!(
        e["record"]["revision"], revision,
        "one tenure, one revision"
    );

    let (f, e) = both(&["list"]);
    adds_only("list", &f, &e, &["store"]);
    assert_eq!(e["store"], Value::from(url.clone()), "{e}");
    let (fi, ei) = (&f["claims"][0], &e["claims"][0]);
    adds_only("list item", fi, ei, &[]);
    check_record("list.record", &fi["record"], &ei["record"]);

    let (f, e) = both(&["acquire", "k", "--holder", "bob", "--ttl", "2m"]);
    adds_only("held_by_other", &f, &e, &[]);
    assert_eq!(e["outcome"], "held_by_other");

    let (f, e) = both(&["renew", "k", "--holder", "alice", "--ttl", "2m"]);
    adds_only("renew", &f, &e, &[]);
    assert_eq!(e["renewed"], true, "{e}");
    let (f, e) = both(&["renew", "k", "--holder", "bob", "--ttl", "2m"]);
    adds_only("renew refused", &f, &e, &[]);
    assert_eq!(
        e["why_code"], f["why_code"],
        "the same refusal in the same words"
    );

    let (f, e) = both(&["release", "k", "--holder", "alice"]);
    adds_only("release", &f, &e, &[]);
    assert_eq!(e["outcome"], "released");
    let (f, e) = both(&["release", "k", "--holder", "alice"]);
    adds_only("release of nothing", &f, &e, &[]);

    both(&["acquire", "gone", "--holder", "carol", "--ttl", "2m"]);
    let (f, e) = both(&["force-release", "gone", "--operator", "op"]);
    adds_only("force-release refused", &f, &e, &[]);
    assert_eq!(
        e["outcome"], "refused",
        "a live claim needs --allow-live: {e}"
    );
    let (f, e) = both(&["force-release", "gone", "--operator", "op", "--allow-live"]);
    adds_only("force-release", &f, &e, &[]);
    assert_eq!(e["outcome"], "archived");
    assert!(
        e["archived_to"]
            .as_str()
            .is_some_and(|p| p.starts_with("/shapes/expired/")),
        "the archive is under PREFIX/expired/: {e}"
    );
    check_record("force-release.previous", &f["previous"], &e["previous"]);

    // Events: JSON Lines, each one an events.jsonl line, the same types in
    // the same order as the file store wrote them.
    let (f, e) = (file(&["events"]), on_etcd(&["events"]));
    assert_eq!(code(&e), 0, "{e:?}");
    let lines = |o: &Output| -> Vec<Value> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect()
    };
    let (fl, el) = (lines(&f), lines(&e));
    let types = |v: &[Value]| -> Vec<String> {
        v.iter()
            .map(|e| e["type"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(types(&fl), types(&el), "the same events in the same order");
    for (fe, ee) in fl.iter().zip(&el) {
        adds_only("event envelope", fe, ee, &[]);
    }
    let (f, e) = (
        file(&["events", "-n", "1"]),
        on_etcd(&["events", "-n", "1"]),
    );
    assert_eq!(
        types(&lines(&f)),
        types(&lines(&e)),
        "-n counts the same way"
    );

    // doctor: a clean store has no hazards, and says where it looked.
    let e = on_etcd(&["doctor"]);
    let d = json_of(&e);
    assert!(d["hazards"].is_array(), "{d}");
    assert_eq!(d["store"], Value::from(url.clone()), "{d}");
}

/// The lease id a script reads from JSON, and the one text shows, are the
/// id etcdctl lists: `id_hex` is exactly its spelling, and text shows no
/// decimal form a reader could take for another id.
#[test]
fn a_claims_lease_id_reads_in_json_and_text_exactly_as_etcdctl_lists_it() {
    let Some(etcd) = Etcd::single() else { return };
    let Ok(probe) = Command::new("etcdctl").arg("version").output() else {
        common::cannot_run("etcdctl is not installed");
        return;
    };
    assert!(probe.status.success(), "etcdctl version");
    let url = etcd.url("/leasehex");
    let home = tempfile::TempDir::new().expect("home");
    let o = run(
        over(home.path(), &url),
        &["--json", "acquire", "k", "--holder", "h", "--ttl", "2m"],
    );
    assert_eq!(code(&o), 0, "{o:?}");
    let lease = json_of(&o)["record"]["lease"].clone();
    let id = lease["id"].as_i64().expect("lease.id");
    let hex = lease["id_hex"].as_str().expect("lease.id_hex").to_string();
    let listed = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .arg(format!("--endpoints={}", etcd.endpoints().join(",")))
        .args(["lease", "list"])
        .output()
        .expect("etcdctl lease list");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.lines().any(|l| l.trim() == hex),
        "etcdctl lists {hex}: {listed}"
    );

    let status = run(over(home.path(), &url), &["status", "k"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains(&format!("lease={hex}")), "{text}");
    assert!(!text.contains(&id.to_string()), "no decimal id: {text}");
}

#[test]
fn acquire_over_etcd_without_a_ttl_is_a_usage_error_and_takes_nothing() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/nottl");
    let home = tempfile::tempdir().expect("tempdir");
    let o = run(over(home.path(), &url), &["acquire", "k", "--holder", "h"]);
    assert_eq!(code(&o), 2, "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--ttl"),
        "{o:?}"
    );
    let s = json_of(&run(over(home.path(), &url), &["--json", "status", "k"]));
    assert_eq!(s["state"], "free", "{s}");
}

#[test]
fn the_store_comes_from_fno_claims_store_when_no_flag_names_one() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/env");
    let home = tempfile::tempdir().expect("tempdir");
    let took = claimtop(home.path())
        .env("FNO_CLAIMS_STORE", &url)
        .args(["--json", "acquire", "k", "--holder", "h", "--ttl", "2m"])
        .output()
        .expect("run claimtop");
    assert_eq!(code(&took), 0, "{took:?}");
    assert!(json_of(&took)["record"]["revision"].is_i64(), "{took:?}");
    // The flag wins over the environment: the file root has no such claim.
    let file = claimtop(home.path())
        .env("FNO_CLAIMS_STORE", &url)
        .args(["--json", "status", "k", "--root"])
        .arg(home.path())
        .output()
        .expect("run claimtop");
    assert_eq!(json_of(&file)["state"], "free", "{file:?}");
}

#[test]
fn list_text_over_etcd_counts_the_stores_own_hazards_under_its_hazards_line() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/haz");
    let home = tempfile::tempdir().expect("tempdir");
    let ok = run(
        over(home.path(), &url),
        &["acquire", "fine", "--holder", "h", "--ttl", "2m"],
    );
    assert_eq!(code(&ok), 0, "{ok:?}");
    // A claim put by hand, with no lease: the one store hazard `list` sees.
    let (rt, mut raw) = etcd.client();
    let rec = "schema_version: 1\nkey: bare\nholder: h\nacquired_at: 1\npid: 1\nhost: x\n";
    rt.block_on(raw.put("/haz/claims/bare", rec, None))
        .expect("plant a leaseless claim");
    let json = json_of(&run(over(home.path(), &url), &["--json", "list"]));
    let in_json = json["hazards"].as_array().map_or(0, Vec::len);
    assert_eq!(in_json, 1, "{json}");
    let o = run(over(home.path(), &url), &["list"]);
    assert_eq!(code(&o), 0, "{o:?}");
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.ends_with("hazard:") || l.ends_with("hazards:"))
        .unwrap_or_else(|| panic!("no hazards line: {text}"));
    assert_eq!(lines[at], "1 hazard:", "{text}");
    assert!(
        lines[at + 1]
            .trim_start()
            .starts_with("etcd_claim_without_lease"),
        "the hazard is listed under its count: {text}"
    );
    assert_eq!(lines.len(), at + 2, "nothing after the hazards: {text}");
}

#[test]
fn doctor_fix_over_etcd_is_a_usage_error_rather_than_a_silent_no_op() {
    let Some(etcd) = Etcd::single() else { return };
    let url = etcd.url("/faces");
    let home = tempfile::tempdir().expect("tempdir");
    let o = run(over(home.path(), &url), &["doctor", "--fix"]);
    assert_eq!(code(&o), 2, "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--fix"),
        "{o:?}"
    );
}
