//! The dashboard's fleet view in a real terminal (tmux) over a real etcd:
//! a host's claim shown, force-released in the host's root, the host seen
//! to die, and F to a silent host said not to answer.

use super::common;
use super::common::Sleeper;
use super::{
    loop_until_published, py_write, root_dir, wait_for, Fleet, Publisher, LEASE_S, PATIENCE,
};
use std::time::{Duration, Instant};

/// The fleet view in a real terminal (tmux) over a real etcd with one
/// publisher: a claim written in the publisher's root shows with its host
/// and source, F on it is carried out in that root (archived under its
/// `.expired/`) and answered in the status line, and a publisher killed
/// with -9 turns its host offline on screen within its lease's TTL + 1 s.
#[test]
fn the_fleet_view_shows_a_hosts_claim_force_releases_it_in_the_hosts_root_and_sees_the_host_die() {
    use common::tmux::Tmux;
    if let Err(why) = Tmux::available() {
        common::cannot_run(&format!("the fleet view test needs tmux: {why}"));
        return;
    }
    let Some(f) = Fleet::start("/fleetview1") else {
        return;
    };
    let patience = Duration::from_secs(15);
    let a = root_dir();
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let hostname = f
        .host("host-a")
        .and_then(|h| h["hostname"].as_str().map(String::from))
        .expect("host-a's hostname");
    // Shown as the table shows it: sanitized, and cut to the column's 16.
    let shown_host: String = hostname.chars().take(15).collect();
    let mut gone = Sleeper::spawn();
    py_write(a.path(), "stuck", "agent-9", gone.pid());
    gone.kill();

    let tmux = Tmux::start(160, 48);
    tmux.wait_for("the shell prompt", patience, |s| !s.trim().is_empty());
    tmux.type_line(&format!(
        "env -u FNO_CLAIMS_STORE -u FNO_CLAIMS_ROOT HOME='{}' '{}' --store '{}'; echo EXIT=$?",
        f.home.path().display(),
        common::BIN,
        f.url
    ));
    // A table row, not the status line (which names the holder too).
    let row = |s: &str| {
        s.lines()
            .find(|l| l.contains("stuck") && l.contains("agent-9") && l.contains("published"))
            .map(String::from)
    };
    let screen = tmux.wait_for("the published claim with its host", patience, |s| {
        row(s).is_some_and(|r| r.contains(&shown_host) && r.contains("published"))
    });
    assert!(
        screen.contains(&format!(" hosts {hostname} 1")),
        "the hosts line counts host-a's claim: {screen}"
    );

    // F asks host-a's publisher; the claim is archived in host-a's root.
    tmux.keys(&["F"]);
    let dialog = tmux.wait_for("the force-release dialog", patience, |s| {
        s.contains("force-release") && s.contains("Esc cancel")
    });
    assert!(dialog.contains("publisher"), "says who acts: {dialog}");
    if dialog.contains("y force-release") {
        tmux.keys(&["y"]);
    } else {
        tmux.type_line("stuck");
    }
    tmux.wait_for("the host's answer and the row gone", patience, |s| {
        row(s).is_none() && s.contains(&format!("host {hostname}: "))
    });
    assert!(!a.path().join(".fno/claims/stuck.lock").exists());
    let expired: Vec<_> = std::fs::read_dir(a.path().join(".fno/claims/.expired"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        expired
            .iter()
            .any(|n| n.to_string_lossy().starts_with("stuck")),
        "archived under host-a's .expired/: {expired:?}"
    );

    // A corrupted lockfile in host-a's root: host-a's hazard list changes,
    // which re-reads the fleet at once (not at the host's next record
    // refresh, a minute away), and the header counts it as `list` does.
    let planted = Instant::now();
    std::fs::write(a.path().join(".fno/claims/broken.lock"), b"{{{ not yaml").expect("plant");
    tmux.wait_for("host-a's hazard in the header", patience, |s| {
        s.contains("1 hazard") && !s.contains("1 hazards")
    });
    eprintln!(
        "corrupted lockfile in host-a's root → hazard in the header: {:?}",
        planted.elapsed()
    );
    tmux.keys(&["h"]);
    let listed = tmux.wait_for("the hazards overlay", patience, |s| {
        s.contains("hazards (1)")
    });
    assert!(
        listed.contains(&format!("host {shown_host}")) && listed.contains("corrupted_claim"),
        "the overlay names the host and the hazard: {listed}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the overlay closed", patience, |s| {
        !s.contains("hazards (1)")
    });

    // A claim on host-a again, then its publisher dies without a word.
    let holder = Sleeper::spawn();
    let written = Instant::now();
    py_write(a.path(), "held", "agent-1", holder.pid());
    tmux.wait_for("the second claim", patience, |s| {
        s.lines()
            .any(|l| l.contains("held") && l.contains("agent-1") && l.contains("published"))
    });
    // Polled every 100 ms, and the write includes starting python3.
    eprintln!(
        "write in host-a's root → row on screen: {:?}",
        written.elapsed()
    );
    pa.signal(libc::SIGKILL);
    let killed = Instant::now();
    // etcd ends the lease within its TTL of the last renewal; its watch
    // event and the redraw come on top, which on a loaded machine can take
    // more than a second.
    tmux.wait_for("host-a offline", Duration::from_secs(LEASE_S + 5), |s| {
        s.contains("offline, last seen")
    });
    eprintln!("kill -9 → offline on screen: {:?}", killed.elapsed());
    // Last seen is the host record's own word, the one the CLI prints: a
    // killed publisher was last seen when it last wrote, not when the
    // dashboard last looked.
    let seen = f
        .host("host-a")
        .and_then(|h| h["last_seen_ms"].as_i64())
        .expect("host-a's last_seen_ms");
    let said = format!(
        "last seen {}",
        claimtop::time::clock(seen, false, "%H:%M:%S")
    );
    let screen = tmux.wait_for("the record's last seen", patience, |s| s.contains(&said));
    assert!(screen.contains(&said), "{said}: {screen}");
    assert!(
        !screen
            .lines()
            .any(|l| l.contains("agent-1") && l.contains("published")),
        "an offline host's claims are not shown: {screen}"
    );
    pa.kill();
    tmux.keys(&["q"]);
    tmux.wait_for("a clean exit", patience, |s| s.contains("EXIT=0"));
}

/// F in the fleet view on a host whose publisher hangs: the op worker's
/// request is withdrawn after the wait and the status line says which host
/// did not answer, and in how long; nothing is done in the root.
#[test]
fn a_fleet_view_force_release_to_a_silent_host_says_it_did_not_answer_and_does_nothing() {
    use claimtop::dashboard::testing::{run_op_on, DEFAULT_ASK_WAIT};
    use claimtop::dashboard::testing::{ForceOptsShown, Verb};
    let Some(f) = Fleet::start("/fleetview2") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "k", "agent-1", holder.pid());
    let root_id = loop_until_published(&f, "k");
    let store = f.etcd.store("/fleetview2");
    pa.signal(libc::SIGSTOP);
    let op = Verb::AskHost {
        host_id: "host-a".into(),
        hostname: "alpha".into(),
        root_id: root_id.clone(),
        key: "k".into(),
        opts: ForceOptsShown {
            operator: "ops".into(),
            allow_live: true,
            ..ForceOptsShown::default()
        },
    };
    let asked = Instant::now();
    let result = run_op_on(&store, &op);
    pa.signal(libc::SIGCONT);
    assert!(!result.ok, "{result:?}");
    let within = claimtop::time::human_ms(DEFAULT_ASK_WAIT.as_millis() as i64);
    assert!(
        result
            .message
            .contains(&format!("(host-a) did not answer within {within}")),
        "{}",
        result.message
    );
    assert!(asked.elapsed() >= DEFAULT_ASK_WAIT);
    // Withdrawn: the publisher, back, finds nothing to do. A request asked
    // after its return, once answered, says it has served requests since
    // (whatever it was doing when stopped, it finished first).
    answered_after(&f, &root_id, &pa);
    assert!(a.path().join(".fno/claims/k.lock").is_file());
    assert!(!pa.log().contains("key=\"k\""), "{}", pa.log());
}

/// Ask host-a's root `root_id`, straight through the store, to
/// force-release a key it has no claim on, and wait for its answer: a sign
/// that the publisher has looked at its requests since.
fn answered_after(f: &Fleet, root_id: &str, pa: &Publisher) {
    let request = serde_json::json!({
        "key": "no-such-claim", "expect_holder": null, "expect_acquired_at": null,
        "operator": "probe", "allow_live": false, "at_ms": 0,
    });
    let base = format!("{}/hosts/host-a/{root_id}/", f.prefix);
    let (rt, mut client) = f.etcd.client();
    rt.block_on(client.put(format!("{base}requests/probe"), request.to_string(), None))
        .expect("put the probe request");
    let answered = wait_for(PATIENCE, || {
        rt.block_on(client.get(format!("{base}answers/probe"), None))
            .is_ok_and(|r| !r.kvs().is_empty())
    });
    assert!(
        answered,
        "the probe request was never answered\n{}",
        pa.log()
    );
}
