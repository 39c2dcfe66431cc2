//! `list --json` over a fleet with the copies merged as they are read,
//! held byte for byte to the document written once every copy was read,
//! on fleets put into etcd by hand: keys that sort apart once encoded,
//! equal keys across hosts and roots, a host with no copies, an offline
//! host, an unreadable root, copies that are parsed and values that are
//! no JSON, lanes longer than a page.

use super::{Fleet, PATIENCE};
use claimtop::store::listing_stream::Only;
use claimtop::store::{Store, StoreName};
use serde_json::{json, Value};

/// A tiny generator: the same fleet from the same seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }

    fn key(&mut self) -> String {
        let alphabet = ["a", "b", "/", "-", " ", "é", ".", "~"];
        (0..1 + self.next(4))
            .map(|_| alphabet[self.next(alphabet.len() as u64) as usize])
            .collect()
    }
}

fn encode(key: &str) -> String {
    claimtop::claims::encode_key(key)
}

/// A copy's bytes: as its host's `list --json` printed it (kept as they
/// stand), or written otherwise (parsed), or no JSON at all.
fn copy(rng: &mut Rng, key: &str) -> String {
    let state = ["live", "suspect", "stale", "corrupted"][rng.next(4) as usize];
    let v = json!({"key": key, "file": format!("/srv/{key}.lock"), "state": state,
        "record": null, "why": "held", "error": null, "hazards": []});
    match rng.next(6) {
        0 => serde_json::to_string_pretty(&v).expect("json"),
        1 => "not json".into(),
        _ => v.to_string(),
    }
}

/// Every key of a fleet of `hosts` hosts, by hand.
fn fleet_keys(prefix: &str, seed: u64, hosts: usize) -> Vec<(String, String)> {
    let mut rng = Rng(seed);
    let mut keys = Vec::new();
    for h in 0..hosts {
        let machine = format!("m{:02}{}", (h * 7) % hosts, h);
        let dir = format!("{prefix}/hosts/{machine}");
        let roots: Vec<String> = (0..1 + rng.next(2)).map(|r| format!("{r:016x}")).collect();
        let record = json!({
            "machine_id": machine, "hostname": format!("host-{}", h % 3),
            "roots": roots.iter().map(|r| json!({"id": r, "path": format!("/srv/{r}")})).collect::<Vec<_>>(),
            "last_seen_ms": 1_000, "ttl_s": 10, "pid": 1,
        });
        keys.push((format!("{dir}/host"), record.to_string()));
        keys.push((format!("{prefix}/host-index/{machine}"), String::new()));
        // Host 1 is offline (no owner keys): its last known copies show.
        let online = h != 1;
        for (r, root) in roots.iter().enumerate() {
            let unreadable = h == 3 && r == 0;
            if online {
                let owner = json!({"pid": 1, "lease": 0, "since_ms": 1, "path": format!("/srv/{root}"),
                    "unreadable": unreadable.then_some("denied")});
                keys.push((format!("{dir}/owners/{root}"), owner.to_string()));
            }
            let hazards =
                json!([{"kind": "temp_litter", "path": format!("/srv/{root}/x"), "detail": "old"}]);
            keys.push((format!("{dir}/{root}/hazards"), hazards.to_string()));
            // Host 2 publishes nothing; most lanes run past a first page.
            let n = match h {
                2 => 0,
                0 if r == 0 => 260,
                _ if r == 1 => rng.next(30),
                _ => 110 + rng.next(60),
            };
            for i in 0..n {
                // A long lane's keys all differ (past a page of them).
                let key = match n > 100 {
                    true => format!("{}{i}", rng.key()),
                    false => rng.key(),
                };
                let value = copy(&mut rng, &key);
                for kind in ["claims", "known"] {
                    keys.push((
                        format!("{dir}/{root}/{kind}/{}", encode(&key)),
                        value.clone(),
                    ));
                }
            }
        }
    }
    // The store's own claims among them.
    for _ in 0..20 {
        let key = rng.key();
        let rec = format!(
            "schema_version: 1\nkey: '{key}'\nholder: w\nacquired_at: 1\npid: 1\nhost: elsewhere\n"
        );
        keys.push((format!("{prefix}/claims/{}", encode(&key)), rec));
    }
    keys
}

/// The document with each online host's `last_seen_ms` (the time of the
/// reading) as one.
fn steady(doc: &[u8]) -> Value {
    let mut v: Value = serde_json::from_slice(doc).expect("one document");
    for h in v["hosts"].as_array_mut().into_iter().flatten() {
        h["last_seen_ms"] = json!(0);
    }
    v
}

#[test]
fn copies_merged_as_they_are_read_give_the_document_of_every_copy_read_first() {
    let Some(f) = Fleet::start("/fleetmerge") else {
        return;
    };
    let (rt, mut client) = f.etcd.client();
    for (k, v) in fleet_keys(&f.prefix, 27, 6) {
        rt.block_on(client.put(k, v, None)).expect("put");
    }
    let name = StoreName::parse(&f.url).expect("an etcd URL");
    let store = Store::open(&[name], &[], &Default::default()).expect("open etcd");
    let (mut merged, mut first) = (Vec::new(), Vec::new());
    let everything = Only::default();
    store
        .write_list_json(&mut merged, &everything)
        .expect("merged");
    store
        .write_list_json_read_first(&mut first, &everything)
        .expect("read first");
    let (m, r) = (steady(&merged), steady(&first));
    assert_eq!(
        serde_json::to_string(&m).expect("json"),
        serde_json::to_string(&r).expect("json"),
        "the merged document differs from the one read first"
    );
    // Byte for byte too, but for the times of reading.
    let text = |b: &[u8]| {
        let s = String::from_utf8_lossy(b).into_owned();
        s.split("\"last_seen_ms\":")
            .map(|p| p.trim_start_matches(|c: char| c.is_ascii_digit()))
            .collect::<Vec<_>>()
            .join("")
    };
    assert_eq!(text(&merged), text(&first));
    let claims = m["claims"].as_array().expect("claims");
    // The long lane alone brings more than a first page.
    assert!(claims.len() > 200, "{}", claims.len());
    assert!(m["last_known"].as_array().is_some_and(|k| !k.is_empty()));
    assert!(m["hazards"].as_array().is_some_and(|h| !h.is_empty()));
    let _ = PATIENCE;
}
