use super::*;
use crate::store::fleet::{HostInfo, PublishedRoot};

fn collector() -> (tempfile::TempDir, Collector) {
    let td = tempfile::TempDir::new().expect("temp root");
    let store = FileStore::new(Root::with_events_here(td.path()));
    (td, Collector::new(std::sync::Arc::new(store), None, 0, 0))
}

/// What one round of `changes` turns into: (published re-reads, fleet
/// readings, listings).
fn round(c: &mut Collector, changes: Vec<Change>) -> (usize, usize, usize) {
    let actions = c.handle(Input::Feed(changes), 0).expect("a round");
    let mut n = (0, 0, 0);
    for a in actions {
        match a {
            Action::Store(m) if matches!(*m, StoreMsg::Published { .. }) => n.0 += 1,
            Action::Store(m) if matches!(*m, StoreMsg::Fleet { .. }) => n.1 += 1,
            Action::Mirror { delta, .. } if delta.whole.is_some() => n.2 += 1,
            _ => {}
        }
    }
    n
}

fn published(host: &str, key: &str) -> Change {
    Change::Published {
        host_id: host.into(),
        root_id: "00000000000000aa".into(),
        key: key.into(),
    }
}

fn alpha() -> HostInfo {
    HostInfo {
        host_id: "m1".into(),
        hostname: "alpha".into(),
        label: "alpha".into(),
        online: true,
        last_seen_ms: 0,
        roots: vec![PublishedRoot::new(
            "00000000000000aa".into(),
            "/srv/a".into(),
        )],
        counts: Default::default(),
    }
}

#[test]
fn a_published_change_re_reads_that_copy_and_a_host_change_or_resync_re_reads_the_fleet() {
    let (_td, mut c) = collector();
    // The first listing reads the fleet, and only it.
    c.list(0).expect("list");
    assert_eq!(round(&mut c, vec![]), (0, 0, 0), "no polling");
    c.fleet.know(&[alpha()]);
    assert_eq!(
        round(&mut c, vec![published("m1", "a"), published("m1", "b")]),
        (2, 0, 0)
    );
    // A copy of a host the last reading did not name: the fleet names it.
    assert_eq!(round(&mut c, vec![published("m9", "a")]), (0, 1, 0));
    c.fleet.know(&[alpha()]);
    let host = Change::Host {
        host_id: "m1".into(),
    };
    assert_eq!(round(&mut c, vec![published("m1", "a"), host]), (0, 1, 0));
    let resync = Change::Resync {
        why: "compacted".into(),
    };
    assert_eq!(round(&mut c, vec![resync]), (0, 1, 1));
}

#[test]
fn a_mirrored_event_reaches_the_pane_in_feed_order_marked_with_its_host_and_root() {
    let (_td, mut c) = collector();
    c.list(0).expect("list");
    c.fleet.know(&[alpha()]);
    let mirrored = |host: &str, root: &str, key: &str| {
        let line = format!(
            r#"{{"ts":"2026-12-01T05:00:00Z","type":"claim_acquired","source":"fno-loop","data":{{"key":"{key}"}}}}"#
        );
        Change::PublishedEvent {
            host_id: host.into(),
            root_id: root.into(),
            event: crate::events::parse_event(&line).expect("an event"),
        }
    };
    let own = Change::Event(
        crate::events::parse_event(r#"{"type":"claim_released","data":{"key":"s"}}"#)
            .expect("an event"),
    );
    let heard = |c: &mut Collector, changes| {
        let actions = c.handle(Input::Feed(changes), 0).expect("a round");
        let (mut lines, mut fleets) = (Vec::new(), 0);
        for a in actions {
            match a {
                Action::EventsAppended(got) => lines
                    .extend(got.iter().map(|l| {
                        serde_json::from_str::<serde_json::Value>(&l.text).expect("JSON")
                    })),
                Action::Store(m) if matches!(*m, StoreMsg::Fleet { .. }) => fleets += 1,
                _ => {}
            }
        }
        (lines, fleets)
    };
    let (lines, fleets) = heard(&mut c, vec![mirrored("m1", "00000000000000aa", "k"), own]);
    assert_eq!(fleets, 0, "a known place needs no fleet reading");
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["host"], "alpha");
    assert_eq!(lines[0]["root"], "/srv/a");
    assert_eq!(
        lines[0]["data"]["key"], "k",
        "the host's line as it wrote it"
    );
    assert!(
        lines[1].get("host").is_none(),
        "the store's own: {}",
        lines[1]
    );
    // A root the last reading did not name: the fleet is read (here it
    // names nobody), and the line says what the feed said, its ids.
    let (lines, fleets) = heard(&mut c, vec![mirrored("m9", "00000000000000bb", "q")]);
    assert_eq!(fleets, 1);
    assert_eq!(lines[0]["host"], "m9");
    assert_eq!(lines[0]["root"], "00000000000000bb");
}

#[test]
fn the_clock_ticks_on_whole_multiples_of_its_period() {
    assert_eq!(next_tick_after(1_500, 1_000), 2_000);
    assert_eq!(
        next_tick_after(2_000, 1_000),
        3_000,
        "never the instant itself"
    );
    assert_eq!(next_tick_after(2_001, 2_000), 4_000);
    assert_eq!(next_tick_after(3_999, 5_000), 5_000);
}
