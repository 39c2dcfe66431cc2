//! A force-release asked over the store: carried out in the host's root
//! and audited in both places, refused when the key changed hands or the
//! host is offline, either carried out and reported or withdrawn and
//! never carried out, reported as taken when never answered, and no
//! phantom claim for a key no claim can have.

use super::common::{claimtop, Sleeper};
use super::{
    events_of_host, json_of, loop_until_published, loop_until_published_list, published, py_write,
    root_dir, wait_for, Fleet, Publisher, PATIENCE,
};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

#[test]
fn a_force_release_asked_over_the_store_is_carried_out_on_the_hosts_root_and_audited_in_both_places(
) {
    let Some(f) = Fleet::start("/fleet2") else {
        return;
    };
    let a = root_dir();
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let mut gone = Sleeper::spawn();
    py_write(a.path(), "stuck", "agent-9", gone.pid());
    gone.kill();
    assert!(wait_for(PATIENCE, || {
        !published(&f.list(), "host-a", "stuck").is_empty()
    }));
    let o = f.over(&[
        "force-release",
        "stuck",
        "--host",
        "host-a",
        "--operator",
        "ops",
        "--json",
    ]);
    let answer = json_of(&o);
    assert_eq!(o.status.code(), Some(0), "{answer}");
    assert_eq!(answer["outcome"], "archived");
    assert_eq!(answer["previous"]["holder"], "agent-9");
    let archived = PathBuf::from(answer["archived_to"].as_str().expect("archived_to"));
    assert!(
        archived.starts_with(a.path().join(".fno/claims/.expired")) && archived.is_file(),
        "{archived:?}"
    );
    assert!(!a.path().join(".fno/claims/stuck.lock").exists());
    let log = std::fs::read_to_string(a.path().join(".fno/events.jsonl")).expect("A's log");
    assert!(
        log.lines()
            .any(|l| l.contains("claim_force_released") && l.contains("\"operator\":\"ops\"")),
        "{log}"
    );
    let mirrored = wait_for(PATIENCE, || {
        events_of_host(&f.events(), "host-a")
            .iter()
            .any(|e| e["type"] == "claim_force_released" && e["data"]["key"] == "stuck")
    });
    assert!(mirrored, "the audit event was not mirrored");
    assert!(wait_for(PATIENCE, || {
        published(&f.list(), "host-a", "stuck").is_empty()
    }));
}

#[test]
fn a_force_release_of_a_key_that_changed_hands_since_it_was_seen_is_refused_by_the_host() {
    let Some(f) = Fleet::start("/fleet3") else {
        return;
    };
    let a = root_dir();
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "k", "agent-1", holder.pid());
    assert!(wait_for(PATIENCE, || {
        !published(&f.list(), "host-a", "k").is_empty()
    }));
    let o = f.over(&[
        "force-release",
        "k",
        "--host",
        "host-a",
        "--expect-holder",
        "someone-else",
        "--allow-live",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", json_of(&o));
    assert_eq!(json_of(&o)["outcome"], "refused");
    assert!(a.path().join(".fno/claims/k.lock").is_file());
}

#[test]
fn a_force_release_to_an_offline_host_is_declined_naming_the_host() {
    let Some(f) = Fleet::start("/fleet6b") else {
        return;
    };
    let a = root_dir();
    let mut pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let hostname = f.host("host-a").expect("listed")["hostname"]
        .as_str()
        .expect("a hostname")
        .to_string();
    pa.signal(libc::SIGTERM);
    assert_eq!(pa.child.wait().expect("wait").code(), Some(0));
    let o = f.over(&["force-release", "k", "--host", "host-a", "--json"]);
    let v = json_of(&o);
    assert_eq!(o.status.code(), Some(3), "declined: {v}");
    assert_eq!(v["outcome"], "refused", "{v}");
    let reason = v["reason"].as_str().expect("a reason");
    assert!(
        reason.contains(&format!("host {hostname} (host-a) is offline")),
        "{reason}"
    );
    let o = f.over(&["force-release", "k", "--host", &hostname]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(
        text.contains(&format!("host {hostname} (host-a) is offline")),
        "{text}"
    );
}

/// A tiny xorshift, seeded from the clock and printed: random timings that a
/// failing run can name.
struct Jitter(u64);

impl Jitter {
    fn new() -> Jitter {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1;
        eprintln!("jitter seed {seed}");
        Jitter(seed)
    }

    fn ms(&mut self, from: u64, to: u64) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Duration::from_millis(from + self.0 % (to - from))
    }
}

/// A force-release whose publisher waits on a busy recovery mutex past the
/// requester's --timeout: 20 runs, the mutex freed at a random moment, and
/// every other run the publisher frozen until a random moment around the
/// requester's deadline (so taking and withdrawing race). The requester
/// either reports the archive it caused, or says nothing was done and
/// nothing is done, not even a second after.
#[test]
fn a_force_release_is_either_carried_out_and_reported_or_withdrawn_and_never_carried_out() {
    let Some(f) = Fleet::start("/fleetwithdraw") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    let claims = a.path().join(".fno/claims");
    let mut jitter = Jitter::new();
    let (mut archived, mut withdrawn) = (0, 0);
    for run in 0..20 {
        let key = format!("k{run}");
        py_write(a.path(), &key, "agent-1", holder.pid());
        loop_until_published(&f, &key);
        // An honest holder's mutex: young, no owner token to judge dead.
        let mutex = claims.join(format!("{key}.lock.recovery.d"));
        std::fs::create_dir(&mutex).expect("hold the recovery mutex");
        let hold = jitter.ms(300, 4_000);
        let freer = std::thread::spawn(move || {
            std::thread::sleep(hold);
            std::fs::remove_dir(&mutex).expect("free the recovery mutex");
        });
        let frozen = (run % 2 == 1).then(|| {
            let (pid, thaw) = (pa.child.id() as i32, jitter.ms(1_500, 2_500));
            pa.signal(libc::SIGSTOP);
            std::thread::spawn(move || {
                std::thread::sleep(thaw);
                // SAFETY: kill(2) on the publisher this test started.
                unsafe { libc::kill(pid, libc::SIGCONT) };
            })
        });
        let o = f.over(&[
            "--timeout",
            "2s",
            "force-release",
            &key,
            "--host",
            "host-a",
            "--allow-live",
        ]);
        freer.join().expect("freer");
        if let Some(t) = frozen {
            t.join().expect("thaw");
        }
        // Long enough for a publisher that acted late to have archived.
        std::thread::sleep(Duration::from_secs(1));
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let there = claims.join(format!("{key}.lock")).is_file();
        match o.status.code() {
            Some(0) => {
                assert!(
                    !there,
                    "run {run} (mutex held {hold:?}): reported archived, still there: {said}"
                );
                archived += 1;
            }
            Some(1) if said.contains("nothing was done") => {
                assert!(
                    there,
                    "run {run} (mutex held {hold:?}): said nothing was done, but archived: {said}"
                );
                withdrawn += 1;
            }
            other => panic!("run {run} (mutex held {hold:?}): exit {other:?}: {said}"),
        }
    }
    eprintln!("archived {archived}, withdrawn {withdrawn}");
}

/// A request written straight into the store with a 10 KB key (no claim
/// can have one) is answered, and publishes no claim for that key.
#[test]
fn a_request_for_a_key_no_claim_can_have_publishes_no_phantom_claim() {
    let Some(f) = Fleet::start("/fleetphantom") else {
        return;
    };
    let a = root_dir();
    let _pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "k", "agent-1", holder.pid());
    let root_id = loop_until_published(&f, "k");
    let key = "x".repeat(10 * 1024);
    let request = serde_json::json!({
        "key": key, "expect_holder": null, "expect_acquired_at": null,
        "operator": "ops", "allow_live": true, "at_ms": 0,
    });
    let base = format!("/fleetphantom/hosts/host-a/{root_id}/");
    let (rt, mut client) = f.etcd.client();
    rt.block_on(client.put(format!("{base}requests/1"), request.to_string(), None))
        .expect("put the request");
    let answered = wait_for(PATIENCE, || {
        rt.block_on(client.get(format!("{base}answers/1"), None))
            .is_ok_and(|r| !r.kvs().is_empty())
    });
    assert!(answered, "{}", _pa.log());
    // A publish of the phantom would follow the answer within a loop round;
    // a lockfile written after the answer, once published, says such a
    // round is behind us.
    py_write(a.path(), "after", "agent-2", holder.pid());
    let l = loop_until_published_list(&f, "after");
    assert!(published(&l, "host-a", &key).is_empty(), "a phantom claim");
    assert_eq!(
        l["claims"].as_array().map(Vec::len),
        Some(2),
        "only k and after are published: {l}"
    );
}

/// A request its publisher took, and then froze before answering: the
/// requester never says nothing was done; it says the host took it, that
/// the outcome is unknown yet, and where to look.
#[test]
fn a_request_taken_but_never_answered_is_reported_as_taken_with_its_outcome_unknown() {
    let Some(f) = Fleet::start("/fleettaken") else {
        return;
    };
    let a = root_dir();
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "k", "agent-1", holder.pid());
    let root_id = loop_until_published(&f, "k");
    // Keeps the publisher inside the request once it took it.
    let mutex = a.path().join(".fno/claims/k.lock.recovery.d");
    std::fs::create_dir(&mutex).expect("hold the recovery mutex");
    let requester = claimtop(f.home.path())
        .env_remove("FNO_CLAIMS_STORE")
        .args(["--store", &f.url, "--timeout", "1s", "force-release", "k"])
        .args(["--host", "host-a", "--allow-live"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the requester");
    let requests = format!("/fleettaken/hosts/host-a/{root_id}/requests/");
    let (rt, mut client) = f.etcd.client();
    let taken = wait_for(PATIENCE, || {
        let opts = etcd_client::GetOptions::new().with_prefix();
        rt.block_on(client.get(requests.as_str(), Some(opts)))
            .is_ok_and(|r| {
                r.kvs()
                    .iter()
                    .any(|kv| String::from_utf8_lossy(kv.value()).contains("\"taken\""))
            })
    });
    assert!(taken, "the publisher never took the request: {}", pa.log());
    pa.signal(libc::SIGSTOP);
    let o = requester.wait_with_output().expect("requester");
    pa.signal(libc::SIGCONT);
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("(host-a) took the request at")
            && said.contains("its outcome is unknown yet")
            && said.contains("claim_force_released")
            && !said.contains("nothing was done"),
        "{said}"
    );
    std::fs::remove_dir(&mutex).expect("free the recovery mutex");
}
