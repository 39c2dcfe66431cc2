//! Lanes: every member's driver on its own thread, its rows and ticks
//! reaching the face.

use super::*;

/// Updates from `rx` until `done` says enough (or [`NEVER`]).
fn until(rx: &Receiver<Update>, mut done: impl FnMut(&[Update]) -> bool) -> Vec<Update> {
    let end = Instant::now() + NEVER;
    let mut got = Vec::new();
    while Instant::now() < end {
        if let Ok(u) = rx.recv_timeout(Duration::from_millis(50)) {
            got.push(u);
            if done(&got) {
                return got;
            }
        }
    }
    panic!("never came; got {got:?}");
}

fn store_of(members: Vec<Arc<dyn Backend>>) -> Arc<Store> {
    let parts = members
        .into_iter()
        .map(|b| (Origin::Site { url: b.url() }, true, b))
        .collect();
    Arc::new(Store::of_parts(parts))
}

#[test]
fn every_member_has_a_lane_whose_rows_and_ticks_reach_the_face() {
    let (a, b) = (Arc::new(Scripted::default()), Arc::new(Scripted::default()));
    a.put("x", rec("x", None));
    b.put("y", rec("y", None));
    b.linked.store(true, Ordering::SeqCst);
    let store = store_of(vec![a.clone(), b.clone()]);
    let (tx, rx) = channel();
    let opts = DriveOpts {
        tick_ms: 100,
        ..DriveOpts::default()
    };
    let lanes = spawn_all(&store, opts, tx).expect("lanes");
    assert_eq!(lanes.inboxes.len(), 2);
    let whole_of = |us: &[Update], at: u16| {
        us.iter()
            .any(|u| u.at == OriginIx(at) && u.delta.as_ref().is_some_and(|d| d.whole.is_some()))
    };
    let ticked =
        |us: &[Update], at: u16| us.iter().any(|u| u.at == OriginIx(at) && u.tick.is_some());
    let reached = |us: &[Update]| {
        us.iter().any(|u| {
            u.at == OriginIx(1)
                && matches!(
                    u.facts.as_ref().and_then(|f| f.link.as_ref()),
                    Some(LinkState::Reached(_))
                )
        })
    };
    until(&rx, |us| {
        whole_of(us, 0) && whole_of(us, 1) && ticked(us, 0) && ticked(us, 1) && reached(us)
    });
    // A change on one member re-reads its key in its lane alone.
    a.put("z", rec("z", None));
    a.say(Change::Claim { key: "z".into() });
    let got = until(&rx, |us| {
        us.iter()
            .any(|u| u.at == OriginIx(0) && !delta_keys(std::slice::from_ref(u)).is_empty())
    });
    let z = got
        .iter()
        .rev()
        .find(|u| u.at == OriginIx(0) && u.delta.is_some())
        .expect("z");
    assert_eq!(
        delta_keys(std::slice::from_ref(z)),
        vec![("z".to_string(), ClaimState::Live)]
    );
    assert_eq!(
        lanes.counters[1].reads(),
        0,
        "the other member read nothing"
    );
    // An op's own write, said through the inbox.
    b.put("w", rec("w", None));
    lanes.inboxes[1]
        .send(Input::Reread("w".into()))
        .expect("inbox");
    until(&rx, |us| {
        us.iter().any(|u| {
            u.at == OriginIx(1)
                && delta_keys(std::slice::from_ref(u)) == vec![("w".to_string(), ClaimState::Live)]
        })
    });
}

#[test]
fn a_lane_blocked_on_a_read_still_has_its_ticks_said_by_the_clock() {
    let slow = Arc::new(Scripted::default());
    *slow.blocked.lock().expect("blocked") = true;
    let quick = Arc::new(Scripted::default());
    let store = store_of(vec![slow.clone(), quick.clone()]);
    let (tx, rx) = channel();
    let opts = DriveOpts {
        tick_ms: 100,
        ..DriveOpts::default()
    };
    let _lanes = spawn_all(&store, opts, tx).expect("lanes");
    // Its listing blocks; ticks still come for it, two of them.
    let got = until(&rx, |us| {
        us.iter()
            .filter(|u| u.at == OriginIx(0) && u.tick.is_some())
            .count()
            >= 2
    });
    assert!(
        !got.iter().any(|u| u.at == OriginIx(0) && u.delta.is_some()),
        "nothing listed yet: {got:?}"
    );
    assert!(
        got.iter().any(|u| u.at == OriginIx(1) && u.delta.is_some()),
        "the other lane went on"
    );
    *slow.blocked.lock().expect("blocked") = false;
    slow.released.notify_all();
    until(&rx, |us| {
        us.iter()
            .any(|u| u.at == OriginIx(0) && u.delta.as_ref().is_some_and(|d| d.whole.is_some()))
    });
    let ticks: Vec<i64> = rx
        .try_iter()
        .filter(|u| u.at == OriginIx(0))
        .filter_map(|u| u.tick)
        .collect();
    assert!(
        ticks.windows(2).all(|w| w[0] < w[1]),
        "a member's clock never goes back: {ticks:?}"
    );
}

#[test]
fn a_lane_ends_when_the_face_is_gone() {
    let s = Arc::new(Scripted::default());
    let store = store_of(vec![s.clone()]);
    let (tx, rx) = channel();
    let opts = DriveOpts {
        tick_ms: 50,
        ..DriveOpts::default()
    };
    let lanes = spawn_all(&store, opts, tx).expect("lanes");
    until(&rx, |us| us.iter().any(|u| u.tick.is_some()));
    drop(rx);
    let end = Instant::now() + NEVER;
    // The lane's inbox closes once the lane and the clock are gone.
    while lanes.inboxes[0].send(Input::Tick(0)).is_ok() {
        assert!(Instant::now() < end, "the lane outlived its face");
        std::thread::sleep(Duration::from_millis(20));
    }
}
