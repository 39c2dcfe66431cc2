//! `list --json` of 100 000 etcd claims streams its first claim early.

use super::*;

/// The first byte and the whole of `list --json` by `bin` over `url`, and
/// the document.
fn timed_list(bin: &Path, home: &Path, url: &str) -> (Duration, Duration, Vec<u8>) {
    use std::io::Read;
    let t = Instant::now();
    let mut child = Command::new(bin)
        .env("HOME", home)
        .env_remove("FNO_CLAIMS_STORE")
        .env_remove("FNO_CLAIMS_ROOT")
        .args(["--store", url, "--json", "list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run claimtop");
    let mut out = child.stdout.take().expect("stdout");
    let mut doc = vec![0u8; 1];
    out.read_exact(&mut doc).expect("a first byte");
    let first = t.elapsed();
    out.read_to_end(&mut doc).expect("the document");
    child.wait().expect("claimtop ends");
    (first, t.elapsed(), doc)
}

/// Figure (docs/performance.md): `list --json` of 100 000 etcd claims, one
/// lease each, the time to its first byte and to its end, three runs each,
/// by this build's binary (or `$CLAIMTOP_BIN`), and by `$CLAIMTOP_VS`
/// (another build) when set,
/// whose document must be the same but for the time claims have left.
/// Run with `cargo test --features etcd --test etcd_cli -- --ignored
/// list_json_of_100_000 --nocapture`.
#[test]
#[ignore = "a figure: loads 100 000 claims into etcd (about a minute)"]
fn list_json_of_100_000_claims_streams_its_first_claim_long_before_its_end() {
    let Some(etcd) = Etcd::single() else {
        return;
    };
    let n = 100_000;
    let t = Instant::now();
    etcd_common::load_claims(&etcd, "/big-list", n);
    eprintln!("loaded {n} claims in {:.1} s", t.elapsed().as_secs_f64());
    let url = etcd.url("/big-list");
    let home = tempfile::tempdir().expect("tempdir");
    // A release binary measures what users run; this build's by default.
    let ours = std::env::var_os("CLAIMTOP_BIN")
        .map_or_else(|| env!("CARGO_BIN_EXE_claimtop").into(), Into::into);
    let mut bins: Vec<(&str, std::path::PathBuf)> = vec![("ours", ours)];
    if let Some(vs) = std::env::var_os("CLAIMTOP_VS") {
        bins.push(("CLAIMTOP_VS", vs.into()));
    }
    let mut docs = Vec::new();
    for round in 0..3 {
        for (name, bin) in &bins {
            let (first, whole, doc) = timed_list(bin, home.path(), &url);
            eprintln!(
                "round {round}, {name}: first byte {:.0} ms, whole {:.0} ms, {} bytes",
                first.as_secs_f64() * 1000.0,
                whole.as_secs_f64() * 1000.0,
                doc.len()
            );
            // Does not hang: the bound is generous on purpose.
            assert!(whole < Duration::from_secs(120), "{name} took {whole:?}");
            docs.push(doc);
        }
    }
    let v: Value = serde_json::from_slice(&docs[0]).expect("one JSON document");
    assert_eq!(v["claims"].as_array().map(Vec::len), Some(n));
    if bins.len() == 2 {
        // What differs between two reads a moment apart: the time left.
        let masked = |d: &[u8]| {
            let mut out = Vec::with_capacity(d.len());
            for (i, b) in d.iter().enumerate() {
                match (b.is_ascii_digit(), i > 0 && d[i - 1].is_ascii_digit()) {
                    (true, true) => {}
                    (true, false) => out.push(b'0'),
                    _ => out.push(*b),
                }
            }
            out
        };
        assert!(
            masked(&docs[0]) == masked(&docs[1]),
            "the two builds' documents differ"
        );
    }
}
