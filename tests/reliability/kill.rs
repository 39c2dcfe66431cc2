//! Crashes at any instant: processes acquiring, recovering, releasing,
//! renewing, force-releasing and appending events are `kill -9`ed at random
//! moments. Afterwards no lockfile is half-written, no key is bricked, and
//! whatever litter the dead left behind is reported by `doctor` and removed
//! by `doctor --fix` once it is provably abandoned (aged past the 120 s rule,
//! simulated by backdating its mtime), or at once when its owner token names
//! a process of this host that is provably gone.

use crate::common::*;
use claimtop::claims::mutex::{self, backdate, STALE_MUTEX_STEAL};
use claimtop::claims::verbs::recovery_mutex_path;
use claimtop::claims::{
    acquire, doctor, doctor_fix, force_release, read_claim_file, release, renew, status, sweep,
    AcquireOpts, AcquireOutcome, ClaimState, ForceOpts, ForceOutcome, HazardKind, MIN_TTL_MS,
};
use claimtop::events::emit::{append_event, envelope, events_mutex_path};
use serde_json::{json, Map};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const ENTRY: &str = "kill::a_child_process_plays_its_role_and_a_plain_run_checks_the_roles_exist";

/// Far enough past the steal rule that no clock granularity matters.
const AGE_PAST_STEAL: u64 = STALE_MUTEX_STEAL.as_secs() + 60;

const ROLES: &[&str] = &[
    "acquirer",
    "recoverer",
    "releaser",
    "renewer",
    "operator",
    "events",
];

#[test]
fn a_child_process_plays_its_role_and_a_plain_run_checks_the_roles_exist() {
    if let Some(role) = my_role() {
        match role.as_str() {
            "hold-recovery-mutex" | "hold-events-mutex" => hold_mutex_until_killed(),
            r if ROLES.contains(&r) => actor(r),
            _ => {}
        }
        return;
    }
    // A plain run: each role, run briefly in a child and killed, must leave a
    // root that passes every check below, or the iterations prove nothing.
    let td = tempdir();
    let mut tally = Tally::default();
    for (i, role) in ROLES.iter().enumerate() {
        let child = spawn_actor(td.path(), role, i as u64);
        std::thread::sleep(Duration::from_millis(30));
        kill9(&child);
        wait_all(vec![child], Duration::from_secs(10));
        check_after_kills(td.path(), i % 2 == 0, &mut tally);
    }
    assert_eq!(tally.iterations, ROLES.len());
}

/// Loop on the role's verb until killed.
fn actor(role: &str) {
    let root = root_in(Path::new(&env_str("K_ROOT")));
    let keys = env_u64("K_KEYS");
    let mut rng = Rng::new(env_u64("K_SEED"));
    let me = format!("{role}-{}", std::process::id());
    let pid_bound = AcquireOpts::default();
    let with_ttl = AcquireOpts {
        ttl_ms: Some(MIN_TTL_MS),
        ..AcquireOpts::default()
    };
    let force = ForceOpts {
        allow_live: true,
        operator: Some("chaos".into()),
        ..ForceOpts::default()
    };
    let events = root.events_file();
    loop {
        let key = format!("k{}", rng.below(keys));
        // Results are ignored on purpose: the child exists to be killed in
        // the middle of these calls; the parent judges the aftermath.
        match role {
            "acquirer" => {
                let _ = acquire(&root, &key, &me, &pid_bound);
                if rng.chance(50) {
                    let _ = release(&root, &key, &me);
                }
            }
            // Its peers die holding PID-bound claims, so its acquires are
            // mostly stale recoveries.
            "recoverer" => {
                if let Ok(AcquireOutcome::Acquired { .. }) = acquire(&root, &key, &me, &pid_bound) {
                    let _ = release(&root, &key, &me);
                }
            }
            "releaser" => {
                let _ = acquire(&root, &key, &me, &pid_bound);
                let _ = release(&root, &key, &me);
            }
            "renewer" => {
                let _ = acquire(&root, &key, &me, &with_ttl);
                let _ = renew(&root, &key, &me, MIN_TTL_MS);
            }
            "operator" => {
                let _ = force_release(&root, &key, &force);
            }
            "events" => {
                let mut d = Map::new();
                d.insert("key".into(), json!(key));
                let _ = append_event(
                    &events,
                    &envelope("chaos_probe", d),
                    Duration::from_millis(50),
                );
            }
            _ => return,
        }
    }
}

fn spawn_actor(dir: &Path, role: &str, seed: u64) -> std::process::Child {
    spawn_role(
        ENTRY,
        role,
        &[
            ("K_ROOT", dir.display().to_string()),
            ("K_KEYS", KEYS.to_string()),
            ("K_SEED", seed.to_string()),
        ],
    )
}

const KEYS: u64 = 3;

/// Take a mutex, say so, and wait to be killed inside it.
fn hold_mutex_until_killed() {
    let dir = PathBuf::from(env_str("K_MUTEX"));
    let _held = mutex::try_lock(&dir)
        .expect("mkdir the mutex")
        .expect("mutex was free");
    std::fs::write(env_str("K_READY"), b"").expect("signal readiness");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[derive(Debug, Default)]
struct Tally {
    iterations: usize,
    killed: usize,
    lockfiles_checked: usize,
    litter: BTreeMap<&'static str, usize>,
    corpses_stolen_by_protocol: usize,
    cleaned_by_doctor: usize,
    suspect_keys_force_released: usize,
    events_lines: usize,
}

fn litter_kind(name: &str) -> &'static str {
    if name.contains(".reap.") {
        "reaped mutex"
    } else if name.ends_with(".recovery.d") {
        "recovery mutex corpse"
    } else if name.starts_with(".claim-tmp-") {
        "create temp file"
    } else if name.contains(".lock.tmp.") {
        "replace temp file"
    } else {
        "other"
    }
}

/// Everything the issue promises after a crash, checked on the root at
/// `dir` whose processes are all dead and reaped. With `use_doctor`, the
/// aged litter is cleaned by `doctor --fix` first; without, the next
/// acquirers and writers must get past the corpses on their own.
fn check_after_kills(dir: &Path, use_doctor: bool, t: &mut Tally) {
    let root = root_in(dir);
    let cdir = root.claims_dir();
    t.iterations += 1;

    // No half-written lockfile, ever: each one is a whole record.
    for name in names(&cdir).iter().filter(|n| n.ends_with(".lock")) {
        let p = cdir.join(name);
        if let Err(e) = read_claim_file(&p) {
            panic!("{name} does not parse after a kill: {e:?}");
        }
        t.lockfiles_checked += 1;
    }
    assert_eq!(sweep(&root).counts.corrupted, 0);

    // Age every piece of litter past the steal rule, as time would.
    let left = litter(&cdir);
    for n in &left {
        *t.litter.entry(litter_kind(n)).or_default() += 1;
        backdate(&cdir.join(n), AGE_PAST_STEAL).unwrap();
    }
    let ev_mutex = events_mutex_path(&root.events_file());
    let ev_corpse = std::fs::symlink_metadata(&ev_mutex).is_ok();
    if ev_corpse {
        *t.litter.entry("events mutex corpse").or_default() += 1;
        backdate(&ev_mutex, AGE_PAST_STEAL).unwrap();
    }

    if use_doctor {
        let reported: Vec<PathBuf> = doctor(&root).into_iter().map(|h| h.path).collect();
        for n in &left {
            assert!(
                reported.contains(&cdir.join(n)),
                "doctor did not report {n}: {reported:?}"
            );
        }
        assert_eq!(ev_corpse, reported.contains(&ev_mutex));
        let fixes = doctor_fix(&root);
        for f in &fixes {
            let cleanable = matches!(
                f.hazard.kind,
                HazardKind::StaleMutex | HazardKind::TempLitter
            );
            assert!(
                !cleanable || f.fixed,
                "doctor --fix left {:?}: {}",
                f.hazard,
                f.action
            );
        }
        t.cleaned_by_doctor += fixes.iter().filter(|f| f.fixed).count();
        assert!(litter(&cdir).is_empty(), "{:?}", litter(&cdir));
        assert!(std::fs::symlink_metadata(&ev_mutex).is_err());
    }

    // No key is bricked: every holder is dead, so a newcomer gets each key,
    // stealing any recovery-mutex corpse on the way. A TTL claim of a dead
    // renewer is Suspect (its TTL protects it, by design); an operator can
    // still force-release it.
    let opts = AcquireOpts::default();
    for k in 0..KEYS {
        let key = format!("k{k}");
        let had_corpse = recovery_mutex_path(&root.lockfile(&key)).exists();
        if status(&root, &key).state == ClaimState::Suspect {
            let r = force_release(&root, &key, &ForceOpts::default()).unwrap();
            assert!(matches!(r, ForceOutcome::Archived { .. }), "{key}: {r:?}");
            t.suspect_keys_force_released += 1;
        }
        match acquire(&root, &key, "newcomer", &opts) {
            Ok(AcquireOutcome::Acquired { .. }) => {}
            other => panic!("{key} is bricked after a kill: {other:?}"),
        }
        if had_corpse {
            t.corpses_stolen_by_protocol += 1;
        }
        release(&root, &key, "newcomer").unwrap();
    }
    // The next events writer gets through too.
    let probe = envelope("claim_probe", Map::new());
    append_event(&root.events_file(), &probe, Duration::from_secs(2))
        .expect("an events writer is blocked after a kill");
    if !use_doctor {
        // Only temp files can remain (nobody steps on them); doctor reports
        // and removes them.
        doctor_fix(&root);
        assert!(litter(&cdir).is_empty(), "{:?}", litter(&cdir));
    }
    assert!(doctor(&root).is_empty(), "{:?}", doctor(&root));

    // The audit log holds whole lines only.
    let text = std::fs::read_to_string(root.events_file()).unwrap_or_default();
    for l in text.lines() {
        claimtop::events::parse_event(l)
            .unwrap_or_else(|e| panic!("events line cut by a kill ({e}): {l:?}"));
    }
    t.events_lines = text.lines().count();
}

/// `n` rounds of: start 2-4 processes with `spawn`, `kill -9` each at its
/// own random instant in `window_us`, reap them, run `between`, check.
fn kill_iterations(
    label: &str,
    n: usize,
    seed: u64,
    window_us: (u64, u64),
    spawn: &mut dyn FnMut(&Path, &mut Rng) -> std::process::Child,
    between: &mut dyn FnMut(),
) -> Tally {
    use std::os::unix::process::ExitStatusExt;
    let td = tempdir();
    let mut rng = Rng::new(seed);
    let mut t = Tally::default();
    let mut died_by_kill = 0;
    let start = Instant::now();
    for i in 0..n {
        let count = 2 + rng.below(3) as usize;
        // All alive at once, each killed at its own instant after its start.
        let mut procs: Vec<(std::process::Child, Instant, Duration)> = Vec::new();
        for _ in 0..count {
            let c = spawn(td.path(), &mut rng);
            let d = Duration::from_micros(window_us.0 + rng.below(window_us.1));
            procs.push((c, Instant::now(), d));
        }
        procs.sort_by_key(|(_, at, d)| *at + *d);
        for (c, at, d) in &procs {
            if let Some(wait) = (*at + *d).checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            kill9(c);
        }
        let procs: Vec<_> = procs.into_iter().map(|(c, _, _)| c).collect();
        t.killed += procs.len();
        died_by_kill += wait_all(procs, Duration::from_secs(30))
            .iter()
            .filter(|(_, status, _)| status.signal() == Some(libc::SIGKILL))
            .count();
        between();
        check_after_kills(td.path(), i % 2 == 0, &mut t);
    }
    eprintln!(
        "{label}: {} iterations, {} processes sent kill -9 ({died_by_kill} still running when it \
         landed), {} lockfiles checked (all parse), litter aged and handled: {:?}, {} \
         recovery-mutex corpses stolen by the next acquirer, {} items removed by doctor --fix, \
         {} suspect keys force-released, {} whole events lines, wall {:.1}s",
        t.iterations,
        t.killed,
        t.lockfiles_checked,
        t.litter,
        t.corpses_stolen_by_protocol,
        t.cleaned_by_doctor,
        t.suspect_keys_force_released,
        t.events_lines,
        start.elapsed().as_secs_f64()
    );
    t
}

/// Library actors, each looping on its verb until killed. Child start-up
/// takes a few ms, so kills land across the window where they work.
fn library_kills(n: usize, seed: u64) -> Tally {
    let mut spawn = |dir: &Path, rng: &mut Rng| {
        let role = ROLES[rng.below(ROLES.len() as u64) as usize];
        spawn_actor(dir, role, rng.next_u64())
    };
    kill_iterations(
        "kill -9 at any instant (library actors)",
        n,
        seed,
        (3_000, 40_000),
        &mut spawn,
        &mut || {},
    )
}

/// The real binary: one command per process (the verbs, `doctor --fix`,
/// `list`), killed at a random instant of its short life. Claims are bound to a stand-in process that dies with
/// each round, so what the commands leave is stale, as after a crash.
fn cli_kills(n: usize, seed: u64) -> Tally {
    use std::cell::RefCell;
    let sleeper = || {
        std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .unwrap()
    };
    let owner = RefCell::new(sleeper());
    let mut spawn = |dir: &Path, rng: &mut Rng| {
        let key = format!("k{}", rng.below(KEYS));
        let pid = owner.borrow().id().to_string();
        let holder = format!("cli-{}", rng.below(3));
        let args: Vec<&str> = match rng.below(8) {
            6 => vec!["doctor", "--fix"],
            7 => vec!["list"],
            0 | 1 => vec!["acquire", &key, "--holder", &holder, "--pid", &pid],
            2 => vec![
                "acquire", &key, "--holder", &holder, "--ttl", "1h", "--pid", &pid,
            ],
            3 => vec!["release", &key, "--holder", &holder],
            4 => vec!["force-release", &key, "--allow-live"],
            _ => vec!["renew", &key, "--holder", &holder, "--ttl", "1h"],
        };
        spawn_retrying(
            std::process::Command::new(env!("CARGO_BIN_EXE_claimtop"))
                .arg("--root")
                .arg(dir)
                .args(&args)
                .env_remove("FNO_CLAIMS_ROOT")
                .env("HOME", dir)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        )
        .unwrap()
    };
    let mut between = || {
        let mut old = owner.replace(sleeper());
        let _ = old.kill();
        let _ = old.wait();
    };
    let t = kill_iterations(
        "kill -9 at any instant (claimtop binary)",
        n,
        seed,
        (300, 4_000),
        &mut spawn,
        &mut between,
    );
    let mut last = owner.into_inner();
    let _ = last.kill();
    let _ = last.wait();
    t
}

#[test]
fn processes_killed_at_random_instants_leave_no_torn_lockfile_no_bricked_key_and_only_litter_doctor_cleans(
) {
    let t = library_kills(40, 0xC0FFEE);
    assert_eq!(t.iterations, 40);
}

#[test]
#[ignore = "heavy: run with --ignored for the README figures (500 kill iterations)"]
fn five_hundred_kill_iterations_leave_no_torn_lockfile_and_no_bricked_key() {
    let t = library_kills(500, 0xC0FFEE + 1);
    assert_eq!(t.iterations, 500);
}

#[test]
fn the_real_binary_killed_mid_command_leaves_whole_claims_and_no_bricked_key() {
    let t = cli_kills(30, 0xB1A5);
    assert_eq!(t.iterations, 30);
}

#[test]
#[ignore = "heavy: run with --ignored for the README figures (300 rounds of killed claimtop commands)"]
fn three_hundred_rounds_of_killed_claimtop_commands_leave_no_torn_claim() {
    let t = cli_kills(300, 0xB1A5 + 1);
    assert_eq!(t.iterations, 300);
}

/// Start a child that takes `mutex_dir`, wait until it holds it, kill it.
fn corpse_of_a_killed_holder(dir: &Path, role: &str, mutex_dir: &Path) {
    let ready = dir.join("ready");
    let child = spawn_role(
        ENTRY,
        role,
        &[
            ("K_MUTEX", mutex_dir.display().to_string()),
            ("K_READY", ready.display().to_string()),
        ],
    );
    let t = Instant::now();
    while !ready.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "child never took the mutex"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    kill9(&child);
    wait_all(vec![child], Duration::from_secs(10));
    assert!(
        mutex_dir.is_dir(),
        "the killed holder's mutex should remain"
    );
}

#[test]
fn a_recoverer_killed_inside_the_recovery_mutex_lets_the_next_acquire_through_at_once() {
    let td = tempdir();
    let root = root_in(td.path());
    // A stale claim whose holder is gone, as the recoverer found it.
    let dead = AcquireOpts {
        pid: Some(dead_pid() as u32),
        ..AcquireOpts::default()
    };
    assert!(matches!(
        acquire(&root, "k", "gone", &dead),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    let m = recovery_mutex_path(&root.lockfile("k"));
    corpse_of_a_killed_holder(td.path(), "hold-recovery-mutex", &m);
    // Young, but its owner token names this host and a pid that is gone:
    // nobody can be relying on it, so the next acquirer takes it by the
    // same rename as an aged corpse, without waiting on it at all.
    let waited = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = waited.clone();
    let hook = claimtop::claims::WaitHook::new(move |_| {
        flag.store(true, std::sync::atomic::Ordering::SeqCst)
    });
    let t = Instant::now();
    match claimtop::claims::acquire_watched(
        &root,
        "k",
        "next",
        &AcquireOpts::default(),
        Some(&hook),
    ) {
        Ok(AcquireOutcome::Acquired { record, .. }) => assert_eq!(record.holder, "next"),
        other => panic!("the corpse stalled the key: {other:?}"),
    }
    eprintln!(
        "figure: acquire after kill -9 of a recoverer took {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert!(
        !waited.load(std::sync::atomic::Ordering::SeqCst),
        "acquire waited on a dead owner's mutex"
    );
    assert!(!m.exists(), "the corpse was not removed by its stealer");
    assert!(litter(&root.claims_dir()).is_empty());
}

#[test]
fn the_cli_acquires_at_once_after_a_recoverer_is_killed_and_says_whom_it_waits_for_otherwise() {
    let td = tempdir();
    let root = root_in(td.path());
    let dead = AcquireOpts {
        pid: Some(dead_pid() as u32),
        ..AcquireOpts::default()
    };
    assert!(matches!(
        acquire(&root, "k", "gone", &dead),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    let m = recovery_mutex_path(&root.lockfile("k"));
    corpse_of_a_killed_holder(td.path(), "hold-recovery-mutex", &m);
    let run = |key: &str, holder: &str| {
        let t = Instant::now();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_claimtop"))
            .args(["acquire", key, "--holder", holder, "--root"])
            .arg(td.path())
            .args(["--pid", &std::process::id().to_string(), "--json"])
            .output()
            .expect("run claimtop");
        (out, t.elapsed())
    };
    let (out, took) = run("k", "next");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("waiting for"), "{stderr}");
    eprintln!(
        "figure: `claimtop acquire` after kill -9 of a recoverer took {:.1} ms",
        took.as_secs_f64() * 1e3
    );
    // A mutex held by a live process (here: this one, by another token) is
    // waited on, and the wait is said on stderr with the owner and its age.
    let dead = AcquireOpts {
        pid: Some(dead_pid() as u32),
        ..AcquireOpts::default()
    };
    assert!(matches!(
        acquire(&root, "k2", "gone", &dead),
        Ok(AcquireOutcome::Acquired { .. })
    ));
    let m2 = recovery_mutex_path(&root.lockfile("k2"));
    let held = mutex::try_lock(&m2).unwrap().expect("mutex was free");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_claimtop"))
        .args(["acquire", "k2", "--holder", "next", "--root"])
        .arg(td.path())
        .args(["--pid", &std::process::id().to_string(), "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run claimtop");
    // Kept open until the child exits: a closed pipe would fail its writes.
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut first).expect("read stderr");
    assert!(
        first.starts_with(&format!("waiting for {} (held ", held.token())),
        "{first}"
    );
    // Once the holder lets go, the waiter takes the key.
    drop(held);
    assert_eq!(child.wait().expect("wait claimtop").code(), Some(0));
    drop(stderr);
}

#[test]
fn a_corpse_whose_owner_cannot_be_judged_here_still_waits_for_the_age_rule() {
    let td = tempdir();
    let root = root_in(td.path());
    let m = recovery_mutex_path(&root.lockfile("k"));
    std::fs::create_dir_all(&m).unwrap();
    // Another host's pid, and a token that is not `host:pid:nanos`.
    for owner in ["elsewhere.example:1:1", "garbage", ""] {
        std::fs::write(m.join("owner"), owner).unwrap();
        assert!(!mutex::steal_if_stale(&m), "stole a young {owner:?} mutex");
    }
    backdate(&m, AGE_PAST_STEAL).unwrap();
    assert!(mutex::steal_if_stale(&m));
}

#[test]
fn an_events_writer_killed_inside_the_events_mutex_lets_the_next_writer_through_at_once() {
    let td = tempdir();
    let root = root_in(td.path());
    let log = root.events_file();
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, b"").unwrap();
    let m = events_mutex_path(&log);
    corpse_of_a_killed_holder(td.path(), "hold-events-mutex", &m);
    let line = envelope("claim_probe", Map::new());
    // Young, but its owner is provably dead: taken within the writer's
    // shortest budget rather than after 120 s.
    append_event(&log, &line, Duration::from_millis(200)).expect("next writer got through");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(claimtop::events::parse_event(text.trim_end()).is_ok());
    assert!(!m.exists());
}
