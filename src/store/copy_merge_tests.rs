//! The merge against the whole sort it replaces, on generated fleets:
//! keys that sort apart once encoded, equal keys across hosts and roots,
//! one key under two names, copies that are parsed and copies that are
//! not JSON, hosts with no copies; pages handed over in any order.

use super::*;
use crate::claims::encode_key;
use crate::store::fleet::FleetState;
use proptest::prelude::*;
use serde_json::json;

/// One stored copy: its name (as etcd sorts it) and its bytes.
#[derive(Debug, Clone)]
struct Stored {
    name: String,
    bytes: Vec<u8>,
}

/// What a lane stores, by name.
fn lane_copies(keys: &[(String, u8)]) -> Vec<Stored> {
    let mut out: Vec<Stored> = Vec::new();
    for (i, (key, how)) in keys.iter().enumerate() {
        let state = ["live", "suspect", "stale"][i % 3];
        let v = json!({"key": key, "state": state, "n": i});
        let bytes = match how % 4 {
            // Not as serde_json writes it: parsed.
            1 => serde_json::to_vec_pretty(&v).expect("json"),
            2 if i % 2 == 0 => b"not json".to_vec(),
            _ => serde_json::to_vec(&v).expect("json"),
        };
        let name = encode_key(key);
        if how % 4 == 3 && name.contains('%') {
            // The same key under a second name no encoder of ours writes.
            out.push(Stored {
                name: name.to_lowercase(),
                bytes: serde_json::to_vec(&json!({"key": key, "state": "live", "twin": true}))
                    .expect("json"),
            });
        }
        out.push(Stored { name, bytes });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    out
}

/// A fleet: hosts, each with roots, each with its stored copies.
type Gen = Vec<Vec<Vec<(String, u8)>>>;

fn fleet() -> impl Strategy<Value = (Gen, Vec<String>, Vec<u8>)> {
    let key = "[ab/ -]{0,3}";
    let lane = proptest::collection::vec((key, 0u8..8), 0..6).prop_map(|mut v| {
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.dedup_by(|a, b| a.0 == b.0);
        v
    });
    let host = proptest::collection::vec(lane, 0..3);
    (
        proptest::collection::vec(host, 0..4),
        proptest::collection::vec(key, 0..5),
        proptest::collection::vec(any::<u8>(), 64),
    )
}

/// Host ids that sort against the order the hosts are found in.
fn host_id(h: usize) -> String {
    format!("m{}", 9 - h)
}

fn root(r: usize) -> PublishedRoot {
    PublishedRoot::new(format!("r{r}"), format!("/srv/{r}"))
}

/// How the whole listing writes it: every copy read, sorted, the store's
/// own claims (`native`) among them.
fn whole(gen: &Gen, native: &[String]) -> Vec<String> {
    let mut state = FleetState::default();
    let mut raw = Vec::new();
    for (h, roots) in gen.iter().enumerate() {
        let host_id = host_id(h);
        for (r, keys) in roots.iter().enumerate() {
            let cr = Arc::new(CopyRoot::new(&host_id, "alpha", &root(r)));
            for s in lane_copies(keys) {
                let bytes = s.bytes.clone();
                match list_copy(&cr, "alpha", &root(r), s.bytes) {
                    Some(ListCopy::Raw(c)) => raw.push(c),
                    Some(ListCopy::Json(..)) => {
                        let item = serde_json::from_slice(&bytes).expect("json");
                        state.items.push(FleetItem {
                            host_id: host_id.clone(),
                            hostname: "alpha".into(),
                            root: root(r),
                            item,
                        });
                    }
                    None => {}
                }
            }
        }
    }
    let (copies, _) = state.into_listed(raw);
    let mut out = Vec::new();
    let mut copies = copies.into_iter().peekable();
    for n in sorted(native) {
        while let Some(c) = copies.next_if(|c| c.order_bytes() < (n.as_bytes(), &b""[..], &b""[..]))
        {
            out.push(written(&c));
        }
        out.push(format!("native {n}"));
    }
    out.extend(copies.map(|c| written(&c)));
    out
}

fn sorted(native: &[String]) -> Vec<String> {
    let mut n = native.to_vec();
    n.sort();
    n
}

fn written(c: &ListCopy) -> String {
    let mut b = Vec::new();
    c.write(&mut b).expect("write");
    String::from_utf8(b).expect("utf-8")
}

/// A lane as the test reads it: where its copies go, what it stores, how
/// many were handed over, whether it has named its keys.
type TestLane = (Arc<CopyRoot>, PublishedRoot, Vec<Stored>, usize, bool);

/// The merge, fed a page of one or two copies at a time, of the lane
/// [`Merge::to_read`] picks or, as `choice` says, of any lane not read
/// to its end (so copies come in every order the readers may bring).
fn merged(gen: &Gen, native: &[String], choice: &[u8]) -> Vec<String> {
    let mut m = Merge::default();
    let mut lanes: Vec<TestLane> = Vec::new();
    for (h, roots) in gen.iter().enumerate() {
        let host_id = host_id(h);
        for (r, keys) in roots.iter().enumerate() {
            m.add_lane(&host_id, &root(r).id, h, r);
            let cr = Arc::new(CopyRoot::new(&host_id, "alpha", &root(r)));
            lanes.push((cr, root(r), lane_copies(keys), 0, false));
        }
    }
    m.all_lanes();
    let mut turn = 0usize;
    let mut feed = |m: &mut Merge| {
        let busy = vec![false; lanes.len()];
        let open: Vec<usize> = (0..lanes.len())
            .filter(|&i| !lanes[i].4 || lanes[i].3 < lanes[i].2.len())
            .collect();
        let pick = match choice.get(turn % choice.len().max(1)) {
            Some(c) if c % 3 == 0 && !open.is_empty() => Some(open[usize::from(*c) % open.len()]),
            _ => m.to_read(&busy, 2),
        };
        turn += 1;
        let Some(i) = pick else {
            panic!("the merge waits with no lane to read");
        };
        let (cr, pr, stored, next, named) = &mut lanes[i];
        if !*named {
            *named = true;
            let keys = stored
                .iter()
                .map(|s| crate::claims::decode_key(&s.name))
                .collect();
            m.name(i, keys);
        }
        let page = 1 + usize::from(choice[turn % choice.len()] % 2);
        for _ in 0..page {
            let Some(s) = stored.get(*next) else {
                break;
            };
            m.arrive(i, *next, list_copy(cr, "alpha", pr, s.bytes.clone()));
            *next += 1;
        }
        if *next >= stored.len() {
            m.lane_done(i);
        }
    };
    let mut out = Vec::new();
    let native = sorted(native);
    for n in native.iter().map(Some).chain([None]) {
        let at = n.map(|n| (n.as_bytes(), &b""[..], &b""[..]));
        loop {
            match m.next_before(at) {
                Next::Copy(c) => out.push(written(&c)),
                Next::Passed => break,
                Next::Wait => feed(&mut m),
            }
        }
        if let Some(n) = n {
            out.push(format!("native {n}"));
        }
    }
    assert!(m.read_all() || m.lanes() == 0);
    out
}

proptest! {
    #[test]
    fn copies_merged_as_they_are_read_are_the_whole_sorts_document(
        (gen, native, choice) in fleet(),
    ) {
        prop_assert_eq!(merged(&gen, &native, &choice), whole(&gen, &native));
    }
}

#[test]
fn a_key_whose_name_sorts_later_still_goes_out_first() {
    // `a-b` is named after `a/1` (`a%2F1`) but goes before it.
    let gen: Gen = vec![vec![vec![("a-b".into(), 0), ("a/1".into(), 0)]]];
    let got = merged(&gen, &["a".into(), "a.".into()], &[1, 1, 1]);
    let keys: Vec<String> = got
        .iter()
        .map(|l| match l.strip_prefix("native ") {
            Some(n) => n.to_string(),
            None => serde_json::from_str::<serde_json::Value>(l).expect("json")["key"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        })
        .collect();
    assert_eq!(keys, ["a", "a-b", "a.", "a/1"]);
    assert_eq!(got, whole(&gen, &["a".into(), "a.".into()]));
}

#[test]
fn nothing_goes_out_until_every_lane_has_named_its_keys() {
    let mut m = Merge::default();
    let root = CopyRoot::new("m1", "alpha", &root(0));
    m.add_lane("m1", "r0", 0, 0);
    m.add_lane("m2", "r0", 1, 0);
    m.all_lanes();
    m.name(0, vec!["a".into()]);
    let bytes = serde_json::to_vec(&json!({"key": "a", "state": "live"})).expect("json");
    m.arrive(
        0,
        0,
        RawCopy::of(&Arc::new(root), bytes).ok().map(ListCopy::Raw),
    );
    m.lane_done(0);
    assert!(
        matches!(m.next_before(None), Next::Wait),
        "lane 1 may hold a lower key"
    );
    assert_eq!(m.to_read(&[false, false], 2), Some(1));
    m.name(1, vec!["b".into()]);
    assert!(
        matches!(m.next_before(None), Next::Copy(_)),
        "b cannot go first"
    );
    assert!(matches!(m.next_before(None), Next::Wait));
}

#[test]
fn hosts_are_read_breadth_first_and_a_full_lane_waits_unless_it_holds_the_merge_back() {
    let mut m = Merge::default();
    m.add_lane("m1", "r0", 0, 0);
    m.add_lane("m2", "r0", 1, 0);
    m.all_lanes();
    assert_eq!(m.to_read(&[false, false], 1), Some(0));
    assert_eq!(m.to_read(&[true, false], 1), Some(1), "one reader on each");
    m.name(0, vec!["a".into(), "c".into()]);
    assert_eq!(
        m.to_read(&[false, false], 1),
        Some(1),
        "a lane not named goes first"
    );
}
