//! `claimtop run` against a waiting successor, with the first run's command
//! attacked every way it can end: a signal to its `run`, `kill -9` of its
//! `run`, a suspended `run` (SIGSTOP) under a TTL, the claim's loss, and
//! the command's own exit. The first command is a process group with a
//! member deaf to SIGTERM (`sh -c 'W ign & exec W main'`); the successor
//! (`run --wait`) starts as soon as the key is free. For each attack: how
//! long the first group ran on, when the successor started, and their
//! overlap, which must be 0 wherever the key was not taken from the first
//! holder by force.
//!
//! The judge is the test's own: a thread samples the first group through
//! /proc every 2 ms (any process of that process group that is not a
//! zombie), and the successor's command, the instant it starts, reads
//! /proc for the group and says so if any of it is left.

use crate::common::{cannot_run, wall_ns, Sandbox, BIN};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the first run is attacked once the successor waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attack {
    /// SIGTERM to the first `run`.
    Term,
    /// SIGTERM to the first `run`, whose whole command ignores it.
    TermDeaf,
    /// `kill -9` of the first `run`.
    Kill,
    /// `force-release --allow-live` of the first claim.
    ForceRelease,
    /// None: the command's leader exits by itself, its deaf member left.
    Exit,
    /// SIGSTOP of the first `run` alone (with `--ttl 60`), the successor
    /// another machine (another pid namespace), so it takes the key once
    /// the TTL has run out.
    Stop,
}

impl Attack {
    fn name(self) -> &'static str {
        match self {
            Attack::Term => "SIGTERM to run",
            Attack::TermDeaf => "SIGTERM to run, whole command deaf to it",
            Attack::Kill => "kill -9 of run",
            Attack::ForceRelease => "force-release --allow-live",
            Attack::Exit => "CMD's leader exits, a deaf member left",
            Attack::Stop => "SIGSTOP of run (--ttl 60), successor on another machine",
        }
    }
}

/// What one handover measured, in ms from the attack.
#[derive(Debug)]
struct Figures {
    attack: Attack,
    /// The last instant any process of the first group was seen running.
    group_gone_ms: i64,
    /// The successor's command's first instant (None: it never ran within
    /// the test's patience).
    successor_ms: Option<i64>,
    /// The first `run`'s exit status.
    first_exit: Option<ExitStatus>,
    /// Whether the successor's command found any of the first group.
    probed_overlap: bool,
    /// The first `run`'s stderr.
    said: String,
}

impl Figures {
    fn overlap_ms(&self) -> i64 {
        self.successor_ms
            .map_or(0, |b| (self.group_gone_ms - b).max(0))
    }

    fn line(&self) -> String {
        format!(
            "| {} | {} | {} | {} | {} | {} |",
            self.attack.name(),
            self.group_gone_ms,
            self.successor_ms
                .map_or("never".to_string(), |b| b.to_string()),
            self.overlap_ms(),
            if self.probed_overlap { "yes" } else { "no" },
            self.first_exit
                .and_then(|s| s.code())
                .map_or("killed".to_string(), |c| c.to_string()),
        )
    }
}

/// A writer loop appending `tag` and the wall clock in ns to `log` every
/// 50 ms; `deaf` ignores SIGTERM (and so do the `sleep`s it starts).
fn writer(tag: &str, log: &Path, deaf: bool) -> String {
    format!(
        "{}while :; do echo \"{tag} $(date +%s%N)\" >> {log}; sleep 0.05; done",
        if deaf { "trap '' TERM; " } else { "" },
        log = log.display()
    )
}

/// Whether a process of group `pgid` runs (a zombie does not).
fn group_runs(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(Result::ok).any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut f = rest.split_whitespace();
        let state = f.next().unwrap_or("Z");
        f.nth(1).and_then(|p| p.parse::<i32>().ok()) == Some(pgid) && !matches!(state, "Z" | "X")
    })
}

/// Sample group `pgid` every 2 ms until it is gone; the latest instant
/// (wall ns) by which it was seen running.
fn watch_group(pgid: i32) -> (Arc<AtomicI64>, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let last = Arc::new(AtomicI64::new(wall_ns()));
    let done = Arc::new(AtomicBool::new(false));
    let thread = {
        let (last, done) = (Arc::clone(&last), Arc::clone(&done));
        std::thread::spawn(move || loop {
            if !group_runs(pgid) {
                done.store(true, Ordering::SeqCst);
                return;
            }
            // The scan's end: the group ran at some instant of the scan, so
            // this never places its end too early.
            let seen = wall_ns();
            last.store(seen.max(last.load(Ordering::SeqCst)), Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(2));
        })
    };
    (last, done, thread)
}

fn spawn(mut cmd: Command, err: &Path) -> Child {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2) is async-signal-safe, fit for a pre_exec hook.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    cmd.stdout(Stdio::null())
        .stderr(std::fs::File::create(err).expect("stderr file"))
        .spawn()
        .expect("spawn claimtop")
}

fn poll_until(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < end, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(pid as i32, sig) };
}

/// The stamps `tag` wrote (a torn last line is left out).
fn stamps_of(log: &Path, tag: &str) -> Vec<i64> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' ').filter(|(t, _)| *t == tag))
        .filter_map(|(_, ns)| ns.trim().parse().ok())
        .collect()
}

/// One handover under `attack`; the figures.
fn handover(attack: Attack) -> Figures {
    let s = Sandbox::new();
    let (log, pgid_file) = (s.file("log"), s.file("pgid"));
    let err_a = s.file("a.err");
    let main = match attack {
        // The leader ends by itself after a few writes.
        Attack::Exit => format!(
            "for i in 1 2 3 4 5 6; do echo \"A-main $(date +%s%N)\" >> {}; sleep 0.05; done",
            log.display()
        ),
        _ => writer("A-main", &log, attack == Attack::TermDeaf),
    };
    let script = format!(
        "echo $$ > {p}.tmp && mv {p}.tmp {p}; ( {ign} ) & exec sh -c '{main}'",
        p = pgid_file.display(),
        ign = writer("A-ign", &log, true),
        main = main.replace('\'', "'\\''"),
    );
    let mut first_args = vec!["run", "g", "--holder", "A"];
    if attack == Attack::Stop {
        first_args.extend(["--ttl", "60"]);
    }
    first_args.extend(["--", "sh", "-c", &script]);
    let mut first = spawn(s.cmd(&first_args), &err_a);
    poll_until(
        Duration::from_secs(10),
        "the first command never started",
        || pgid_file.exists() && !stamps_of(&log, "A-ign").is_empty(),
    );
    let pgid: i32 = std::fs::read_to_string(&pgid_file)
        .expect("pgid")
        .trim()
        .parse()
        .expect("a pid");
    // The successor: a probe of the first group the instant it starts (any
    // of its processes in /proc, zombies aside: their code has ended), and
    // one stamp.
    let overlap_file = s.file("overlap");
    let second_script = format!(
        "cat /proc/[0-9]*/stat 2>/dev/null | awk -v g={pgid} \
         '{{ sub(/.*\\) /, \"\"); if ($3 == g && $1 != \"Z\") f = 1 }} END {{ exit !f }}' \
         && touch {o}; echo \"B $(date +%s%N)\" >> {log}",
        o = overlap_file.display(),
        log = log.display()
    );
    let second_args = [
        "run",
        "g",
        "--holder",
        "B",
        "--wait",
        "--",
        "sh",
        "-c",
        &second_script,
    ];
    let err_b = s.file("b.err");
    let mut second = match attack {
        Attack::Stop => {
            // Another pid namespace: another machine by the protocol's
            // identity, which cannot see the first holder's pid and so
            // waits for its TTL alone. Its probe of the group sees nothing
            // there; the test's own watch is the judge.
            let mut c = Command::new("unshare");
            c.args(["--pid", "--fork", "--mount-proc", BIN])
                .env("HOME", s.home.path())
                .env_remove("FNO_CLAIMS_ROOT")
                .arg("--root")
                .arg(s.root())
                .args(second_args);
            spawn(c, &err_b)
        }
        _ => spawn(s.cmd(&second_args), &err_b),
    };
    poll_until(
        Duration::from_secs(10),
        "the successor never waited",
        || std::fs::read_to_string(&err_b).is_ok_and(|e| e.contains("waiting for")),
    );
    let (last_seen, gone, watcher) = watch_group(pgid);
    let t0 = wall_ns();
    match attack {
        Attack::Term | Attack::TermDeaf => signal(first.id(), libc::SIGTERM),
        Attack::Kill => signal(first.id(), libc::SIGKILL),
        Attack::Stop => signal(first.id(), libc::SIGSTOP),
        Attack::ForceRelease => {
            let out = s.run(&["force-release", "g", "--allow-live"]);
            assert_eq!(out.status.code(), Some(0), "{out:?}");
        }
        Attack::Exit => {}
    }
    let within = match attack {
        Attack::Stop => Duration::from_secs(120),
        _ => Duration::from_secs(40),
    };
    let give_up = Instant::now() + within;
    let second_status = loop {
        if let Some(st) = second.try_wait().expect("try_wait") {
            break Some(st);
        }
        if Instant::now() >= give_up {
            // Never let in: said in the figures, and nothing left behind.
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            let _ = second.kill();
            let _ = second.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if attack == Attack::Stop {
        signal(first.id(), libc::SIGCONT);
    }
    let first_exit = match attack {
        Attack::Kill => {
            let _ = first.wait();
            None
        }
        _ => Some(first.wait().expect("the first run ends")),
    };
    // A group left running by its holder (the fault this test is for) is
    // ended here, once it has shown it outlives everything, so that a red
    // run leaves nothing behind; its figure then counts to the kill.
    let give_up = Instant::now() + Duration::from_secs(30);
    while !gone.load(Ordering::SeqCst) && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(10));
    }
    if !gone.load(Ordering::SeqCst) {
        // SAFETY: kill has no memory preconditions; the group is alive, so
        // its id is still its own.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    let _ = watcher.join();
    if let Some(st) = second_status {
        assert!(
            st.success(),
            "{}: the successor: {}",
            attack.name(),
            std::fs::read_to_string(&err_b).unwrap_or_default()
        );
    }
    let successor = stamps_of(&log, "B").first().copied();
    let last_a = stamps_of(&log, "A-main")
        .into_iter()
        .chain(stamps_of(&log, "A-ign"))
        .max()
        .unwrap_or(0);
    let group_gone = last_seen.load(Ordering::SeqCst).max(last_a);
    Figures {
        attack,
        group_gone_ms: (group_gone - t0) / 1_000_000,
        successor_ms: successor.map(|b| (b - t0) / 1_000_000),
        first_exit,
        probed_overlap: overlap_file.exists(),
        said: std::fs::read_to_string(&err_a).unwrap_or_default(),
    }
}

/// Every fast attack at once (each waits out a 10 s grace, so together
/// they cost about one).
#[test]
fn no_attack_on_a_run_lets_a_waiting_successor_start_while_its_group_runs() {
    let attacks = [
        Attack::Term,
        Attack::TermDeaf,
        Attack::Kill,
        Attack::Exit,
        Attack::ForceRelease,
    ];
    let all: Vec<Figures> = attacks
        .map(|a| std::thread::spawn(move || handover(a)))
        .into_iter()
        .map(|t| t.join().expect("a handover"))
        .collect();
    eprintln!(
        "| attack | first group gone (ms) | successor started (ms) | overlap (ms) | \
         successor saw the group | first run's exit |"
    );
    for f in &all {
        eprintln!("{}", f.line());
    }
    for f in &all {
        let name = f.attack.name();
        // The first run's own report is always after its group is gone.
        match f.attack {
            Attack::ForceRelease => {
                // The operator freed the key while the holder ran: the
                // successor starts at once, and the old group stops
                // within its grace. Measured, not judged.
                assert_eq!(
                    f.first_exit.and_then(|s| s.code()),
                    Some(4),
                    "{name}: {}",
                    f.said
                );
            }
            _ => {
                assert!(
                    f.successor_ms.is_some(),
                    "{name}: the successor never ran: {f:?}"
                );
                assert_eq!(f.overlap_ms(), 0, "{name}: {f:?}");
                assert!(
                    !f.probed_overlap,
                    "{name}: the successor found the first group"
                );
            }
        }
        let expected = match f.attack {
            Attack::Term => Some(128 + libc::SIGTERM),
            Attack::TermDeaf => Some(128 + libc::SIGKILL),
            Attack::Exit => Some(0),
            Attack::ForceRelease => Some(4),
            Attack::Kill | Attack::Stop => None,
        };
        if let Some(code) = expected {
            assert_eq!(
                f.first_exit.and_then(|s| s.code()),
                Some(code),
                "{name}: {}",
                f.said
            );
        }
    }
}

/// The suspended holder: its guard must kill the group before the TTL can
/// run out, since a successor on another machine takes the key then.
#[test]
#[ignore = "about 65 s: the TTL is at least 60 s, and the successor takes the key once it has run out"]
fn a_suspended_runs_group_is_killed_before_its_ttl_lets_another_machine_in() {
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        cannot_run("unshare --pid --fork --mount-proc (root, or CAP_SYS_ADMIN) is needed to play another machine");
        return;
    }
    let f = handover(Attack::Stop);
    eprintln!("{}", f.line());
    assert_eq!(f.overlap_ms(), 0, "{f:?}");
    assert_eq!(f.first_exit.and_then(|s| s.code()), Some(4), "{}", f.said);
}
