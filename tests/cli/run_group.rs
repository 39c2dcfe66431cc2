//! `claimtop run`'s command as one process group: every way a run ends
//! (CMD's exit, a signal to `run`, `kill -9` of `run` or of the process the
//! claim names, the claim's loss) holds the claim until no process of the
//! group is left, and never a moment longer than the group needs.

use super::run::{
    eventually, finish, finish_or, live_pid, run_sh, signal, text, with_default_signals, RunSandbox,
};
use crate::common::{
    grandchild_writer, slow_member, stamps, until_quiet, wall_ns, Grandchild, Sandbox, Sleeper,
};
use claimtop::claims::{ClaimState, Root};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `run` over `s` with stdout and stderr in files: no pipes, which a
/// member outliving `run` would hold open.
fn spawn_unpiped(s: &Sandbox, args: &[&str]) -> Child {
    let mut cmd = s.cmd(args);
    with_default_signals(&mut cmd)
        .stdout(std::fs::File::create(s.file("out")).expect("stdout file"))
        .stderr(std::fs::File::create(s.file("err")).expect("stderr file"))
        .spawn()
        .expect("spawn run")
}

fn said(s: &Sandbox) -> String {
    std::fs::read_to_string(s.file("err")).unwrap_or_default()
}

/// Wait for `run` to end (bounded: it must not hang), and the wall clock
/// in ns when it was seen ended.
fn ended(run: &mut Child, s: &Sandbox) -> (ExitStatus, i64) {
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = run.try_wait().expect("try_wait") {
            return (st, wall_ns());
        }
        assert!(Instant::now() < give_up, "run never ended: {}", said(s));
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A thread reading the key's state (through the library, as any reader
/// judges it) every few ms, each reading stamped with the wall clock in ns
/// at which it was complete.
struct States {
    seen: Arc<Mutex<Vec<(i64, ClaimState)>>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl States {
    fn watch(s: &Sandbox, key: &str) -> States {
        let root = Root::with_events_here(s.root());
        let key = key.to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (seen, stop) = (Arc::clone(&seen), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let state = claimtop::claims::status(&root, &key).state;
                    seen.lock().expect("states").push((wall_ns(), state));
                    std::thread::sleep(Duration::from_millis(3));
                }
            })
        };
        States { seen, stop, thread }
    }

    fn stop(self) -> Vec<(i64, ClaimState)> {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
        let seen = self.seen.lock().expect("states").clone();
        seen
    }
}

/// Every reading completed before `until` (ns) found the claim live: no
/// reader could have taken the key while the group still wrote.
fn held_until(states: &[(i64, ClaimState)], until: i64) {
    let before: Vec<_> = states.iter().filter(|(t, _)| *t < until).collect();
    assert!(
        !before.is_empty(),
        "no reading before the group's last write"
    );
    if let Some((t, st)) = before.iter().find(|(_, st)| *st != ClaimState::Live) {
        panic!(
            "the claim read {st:?} {} ms before the group's last write",
            (until - t) / 1_000_000
        );
    }
    eprintln!(
        "{} readings before the group's last write, all live",
        before.len()
    );
}

/// The command: a member that takes about a second to stop, and a leader
/// doing `rest`.
fn started(s: &Sandbox, flags: &[&str], rest: &str) -> (Child, std::path::PathBuf, Grandchild) {
    started_with(s, flags, rest, 40)
}

/// [`started`], the member writing `more` times after SIGTERM.
fn started_with(
    s: &Sandbox,
    flags: &[&str],
    rest: &str,
    more: u32,
) -> (Child, std::path::PathBuf, Grandchild) {
    let (log, ready) = (s.file("stamps"), s.file("ready"));
    let script = format!("{}; {rest}", slow_member(&log, &ready, more));
    let run = spawn_unpiped(s, &run_sh(flags, &script));
    assert!(
        eventually(Duration::from_secs(10), || {
            ready.exists() && !stamps(&log).is_empty() && live_pid(s, "k").is_some()
        }),
        "{}",
        said(s)
    );
    let member = Grandchild::of(&ready, &log).expect("the member's pid");
    (run, log, member)
}

/// The member's stamps once it has stopped writing, and the last.
fn last_write(log: &Path) -> i64 {
    *until_quiet(log, Duration::from_millis(500), Duration::from_secs(15))
        .last()
        .expect("stamps")
}

fn events(s: &Sandbox) -> String {
    std::fs::read_to_string(s.root().join(".fno/events.jsonl")).unwrap_or_default()
}

#[test]
fn a_signal_to_run_holds_the_claim_until_the_last_process_of_the_group_has_ended() {
    let s = Sandbox::new();
    let (mut run, log, _member) = started(&s, &[], "exec sleep 30");
    let states = States::watch(&s, "k");
    signal(run.id(), libc::SIGTERM);
    let sent = wall_ns();
    let (status, exited) = ended(&mut run, &s);
    let states = states.stop();
    let last = last_write(&log);
    eprintln!(
        "the member wrote until {} ms after the signal; run exited {} ms after that",
        (last - sent) / 1_000_000,
        (exited - last) / 1_000_000
    );
    // The leader died of the signal at once; the member outlived it.
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{}", said(&s));
    assert!(
        last > sent + 300_000_000,
        "the member stopped with its leader"
    );
    assert!(last <= exited, "the member wrote after run exited");
    held_until(&states, last);
    assert_eq!(s.status("k")["state"], "free");
    assert_eq!(events(&s).matches("\"claim_released\"").count(), 1);
}

#[test]
fn when_the_command_exits_what_it_left_in_its_group_is_stopped_before_the_release() {
    let s = Sandbox::new();
    let left = s.file("leader-left");
    let rest = format!("sleep 0.3; touch {}; exit 3", left.display());
    let (mut run, log, _member) = started(&s, &[], &rest);
    let states = States::watch(&s, "k");
    let (status, exited) = ended(&mut run, &s);
    let states = states.stop();
    let last = last_write(&log);
    assert!(left.exists(), "the leader never got to its exit");
    assert_eq!(status.code(), Some(3), "CMD's own status: {}", said(&s));
    assert!(
        said(&s).contains("leaving processes in its group"),
        "{}",
        said(&s)
    );
    assert!(last <= exited, "the member wrote after run exited");
    held_until(&states, last);
    assert_eq!(s.status("k")["state"], "free");
}

#[test]
fn killing_run_with_sigkill_holds_the_claim_until_the_last_process_of_the_group_has_ended() {
    let s = Sandbox::new();
    // A clean-up of about 3 s: longer than any reaper takes to collect the
    // leader's zombie (a zombie still reads alive), so a claim bound to
    // anything that ends with the leader would read stale while it runs.
    let (mut run, log, _member) = started_with(&s, &[], "exec sleep 30", 120);
    let states = States::watch(&s, "k");
    signal(run.id(), libc::SIGKILL);
    let killed = wall_ns();
    let _ = run.wait();
    let last = last_write(&log);
    // The guard the claim names lives on until the group is gone, then
    // leaves the claim to read stale.
    assert!(
        eventually(Duration::from_secs(10), || s.status("k")["state"]
            == "stale"),
        "{}",
        s.status("k")
    );
    let states = states.stop();
    eprintln!(
        "the member wrote until {} ms after run was killed",
        (last - killed) / 1_000_000
    );
    assert!(last > killed + 300_000_000, "the member stopped with run");
    held_until(&states, last);
}

#[test]
fn killing_the_process_the_claim_names_stops_the_whole_group_at_once_and_run_exits_4() {
    let s = Sandbox::new();
    let (log, ready) = (s.file("stamps"), s.file("ready"));
    // A grandchild deaf to SIGTERM: only SIGKILL ends it, and a stop
    // with the usual grace would let it write for 10 s more.
    let script = format!("trap '' TERM; {}", grandchild_writer(&log, &ready));
    let mut run = spawn_unpiped(&s, &run_sh(&[], &script));
    assert!(eventually(Duration::from_secs(10), || {
        ready.exists() && !stamps(&log).is_empty() && live_pid(&s, "k").is_some()
    }));
    let _grandchild = Grandchild::of(&ready, &log).expect("the grandchild's pid");
    let bound = live_pid(&s, "k").expect("live");
    signal(bound as u32, libc::SIGKILL);
    let killed = wall_ns();
    let (status, _) = ended(&mut run, &s);
    assert_eq!(status.code(), Some(4), "{}", said(&s));
    assert!(said(&s).contains("has ended"), "{}", said(&s));
    let last = last_write(&log);
    let after = (last - killed) / 1_000_000;
    eprintln!("the grandchild's last write {after} ms after the claim's process was killed");
    // Bound for a loaded machine (the property is "at once, not after the
    // grace"): the grace alone would be 10 000 ms.
    assert!(after < 5_000, "the grandchild wrote {after} ms after");
}

#[test]
fn a_signal_run_only_passes_on_such_as_usr1_ends_the_command_and_run_releases_the_key() {
    let s = Sandbox::new();
    let run = s.spawn(&["run", "k", "--holder", "h", "--", "sleep", "30"]);
    assert!(eventually(Duration::from_secs(10), || live_pid(&s, "k").is_some()));
    signal(run.id(), libc::SIGUSR1);
    let out = finish(run, Duration::from_secs(10));
    // CMD died of it, as a shell says; `run` itself did not.
    assert_eq!(
        out.status.code(),
        Some(128 + libc::SIGUSR1),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(s.status("k")["state"], "free");
    assert_eq!(events(&s).matches("\"claim_released\"").count(), 1);
}

#[test]
fn a_renew_from_another_process_that_brings_the_deadline_closer_is_renewed_again_by_run() {
    let s = Sandbox::new();
    let run = s.spawn(&[
        "run", "k", "--holder", "h", "--ttl", "10m", "--", "sleep", "30",
    ]);
    assert!(eventually(Duration::from_secs(10), || live_pid(&s, "k").is_some()));
    let out = s.run(&["renew", "k", "--holder", "h", "--ttl", "60"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let renewed = || {
        events(&s)
            .lines()
            .filter(|l| l.contains("\"claim_renewed\""))
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|e| e["data"]["ttl_ms"].as_i64().unwrap_or(0))
            .collect::<Vec<_>>()
    };
    // The other process's renewal left 60 s; `run` renews by its own TTL's
    // rule (a third of 10 min left) as soon as it sees that. Two processes
    // append their events each after its own write, so the lines may come
    // in either order; which write came last is the record's to say (below).
    let both = || {
        let mut r = renewed();
        r.sort_unstable();
        r == [60_000, 600_000]
    };
    assert!(
        eventually(Duration::from_secs(10), both),
        "renewals {:?}; {}",
        renewed(),
        s.status("k")
    );
    let left = s.status("k")["record"]["expires_at"].as_i64().unwrap() - now_ms();
    assert!(left > 500_000, "{left} ms left");
    let mut run = run;
    signal(run.id(), libc::SIGTERM);
    let _ = run.wait();
}

fn now_ms() -> i64 {
    wall_ns() / 1_000_000
}

#[test]
fn force_release_during_run_sends_the_command_sigterm_and_exits_4() {
    let s = Sandbox::new();
    let got = s.file("got-term");
    let ready = s.file("trap-set");
    // The claim is live before the shell has run a line: wait for its trap,
    // or a loaded machine delivers SIGTERM to a shell that cannot catch it.
    let script = format!(
        "trap 'echo term > {}; exit 0' TERM; : > {}; while :; do sleep 0.05; done",
        got.display(),
        ready.display()
    );
    let run = s.spawn(&run_sh(&["--json"], &script));
    assert!(eventually(Duration::from_secs(10), || live_pid(&s, "k")
        .is_some()
        && ready.exists()));
    let out = s.run(&["force-release", "k", "--allow-live"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = finish(run, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("lost the claim on k"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), "term");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["outcome"], "lost");
    assert_eq!(doc["status"], 4);
    assert_eq!(doc["release"], Value::Null, "a lost claim is not released");
}

#[test]
fn a_newcomer_after_a_force_release_keeps_the_key_when_the_run_ends() {
    let s = Sandbox::new();
    let run = s.spawn(&["run", "k", "--holder", "h", "--", "sleep", "30"]);
    assert!(eventually(Duration::from_secs(10), || live_pid(&s, "k").is_some()));
    let newcomer = Sleeper::spawn();
    assert_eq!(
        s.run(&["force-release", "k", "--allow-live"]).status.code(),
        Some(0)
    );
    // The newcomer uses the same holder name: only the pid tells them apart.
    s.hold_for("k", "h", newcomer.pid());
    let out = finish(run, Duration::from_secs(15));
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(live_pid(&s, "k"), Some(newcomer.pid() as i64));
}

#[test]
fn every_ending_signal_sent_to_run_is_forwarded_and_the_run_ends_with_the_command() {
    // Written out, not read from the code: every catchable signal whose
    // default ends a process and that one process sends another.
    let every = [
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGIO,
        libc::SIGPWR,
    ];
    for sig in every {
        // A number: dash names some of these differently (IO, POLL).
        let name = sig.to_string();
        let s = Sandbox::new();
        let got = s.file("got");
        let ready = s.file("ready");
        let script = format!(
            "trap 'echo {name} > {g}; exit 0' {name}; touch {r}; while :; do sleep 0.05; done",
            g = got.display(),
            r = ready.display()
        );
        let run = s.spawn(&run_sh(&[], &script));
        assert!(eventually(Duration::from_secs(10), || ready.exists()));
        signal(run.id(), sig);
        // Said when it hangs: did CMD's trap run (then `run` missed its
        // end), or did the signal never reach it?
        let trapped = || std::fs::read_to_string(&got).unwrap_or_default();
        let out = finish_or(run, Duration::from_secs(10), || {
            format!("{name}: CMD's trap wrote {:?}", trapped())
        });
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        assert_eq!(std::fs::read_to_string(&got).unwrap().trim(), name);
        assert_eq!(s.status("k")["state"], "free", "{name}");
    }
}

/// Under `nohup` a hang-up must not end the job: CMD inherits HUP
/// ignored, and `run`, started ignoring it too, neither passes it on nor
/// starts stopping the group (which it begins with HUP and a SIGCONT, and
/// ends with SIGKILL after the grace). USR1 then USR2, sent after it, are
/// forwarded in turn: once CMD has trapped USR2, any CONT that came before
/// has been trapped too, and none was.
#[test]
fn a_signal_run_was_started_ignoring_neither_ends_it_nor_reaches_the_command() {
    use std::os::unix::process::CommandExt;
    let s = Sandbox::new();
    let (log, ready) = (s.file("trapped"), s.file("ready"));
    let script = format!(
        "for s in USR1 USR2 CONT; do trap \"echo $s >> {l}\" $s; done; \
         touch {r}; while :; do sleep 0.05; done",
        l = log.display(),
        r = ready.display()
    );
    let trapped = || std::fs::read_to_string(&log).unwrap_or_default();
    let mut cmd = s.cmd(&run_sh(&[], &script));
    with_default_signals(&mut cmd);
    // SAFETY: signal(2) is async-signal-safe, fit for a pre_exec hook.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut run = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn run");
    assert!(eventually(Duration::from_secs(10), || ready.exists()));
    signal(run.id(), libc::SIGHUP);
    signal(run.id(), libc::SIGUSR1);
    assert!(
        eventually(Duration::from_secs(10), || trapped().contains("USR1")),
        "USR1 after the hang-up never reached CMD: {:?}",
        trapped()
    );
    signal(run.id(), libc::SIGUSR2);
    assert!(eventually(Duration::from_secs(10), || trapped().contains("USR2")));
    assert!(
        !trapped().contains("CONT"),
        "run began stopping the group on HUP"
    );
    assert!(
        run.try_wait().expect("try_wait").is_none(),
        "run ended on HUP"
    );
    assert_eq!(s.status("k")["state"], "live");
    signal(run.id(), libc::SIGTERM);
    let out = finish(run, Duration::from_secs(30));
    assert_eq!(s.status("k")["state"], "free", "{}", text(&out.stderr));
}

#[test]
fn killing_run_stops_the_command_so_its_claim_goes_stale_not_orphaned() {
    let s = Sandbox::new();
    let run = s.spawn(&["run", "k", "--holder", "h", "--", "sleep", "30"]);
    assert!(eventually(Duration::from_secs(10), || live_pid(&s, "k").is_some()));
    let child = live_pid(&s, "k").unwrap();
    signal(run.id(), libc::SIGKILL);
    let _ = finish(run, Duration::from_secs(5));
    // Nobody renews or releases any more: the command is told to stop
    // rather than hold the key unguarded under init.
    assert!(eventually(Duration::from_secs(5), || {
        // SAFETY: kill with signal 0 only probes.
        let probe = unsafe { libc::kill(child as i32, 0) };
        probe != 0
    }));
    assert_eq!(s.status("k")["state"], "stale");
}

#[test]
fn a_command_that_ignores_sigterm_gets_sigkill_after_the_grace_period() {
    let s = Sandbox::new();
    let ready = s.file("ready");
    let script = format!(
        "trap '' TERM; touch {}; while :; do sleep 0.05; done",
        ready.display()
    );
    let run = s.spawn(&run_sh(&[], &script));
    assert!(eventually(Duration::from_secs(10), || ready.exists()));
    let lost_at = Instant::now();
    assert_eq!(
        s.run(&["force-release", "k", "--allow-live"]).status.code(),
        Some(0)
    );
    let out = finish(run, Duration::from_secs(30));
    let took = lost_at.elapsed();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(took >= Duration::from_secs(10), "killed early: {took:?}");
    assert!(took < Duration::from_secs(20), "killed late: {took:?}");
}

/// The loss line is said first (it names the stop it begins); the report
/// (exit status 4, and under `--json` the one document) comes only once the
/// whole group has stopped, a member's slow clean-up included.
#[test]
fn a_force_release_stops_the_commands_grandchildren_before_run_exits_with_its_report_of_the_loss() {
    let s = Sandbox::new();
    let (mut run, log, _member) = started(&s, &["--json"], "exec sleep 30");
    let out = s.run(&["force-release", "k", "--allow-live"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (mut lost_at, give_up) = (None, Instant::now() + Duration::from_secs(30));
    let status = loop {
        if lost_at.is_none() && said(&s).contains("lost the claim") {
            lost_at = Some(wall_ns());
        }
        if let Some(st) = run.try_wait().expect("try_wait") {
            break st;
        }
        assert!(Instant::now() < give_up, "run never ended: {}", said(&s));
        std::thread::sleep(Duration::from_millis(5));
    };
    let exited = wall_ns();
    assert_eq!(status.code(), Some(4), "{}", said(&s));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(s.file("out")).unwrap())
        .expect("one document");
    assert_eq!(doc["outcome"], "lost");
    let last = last_write(&log);
    let lost_at = lost_at.expect("the loss line came before the exit");
    eprintln!(
        "the member wrote until {} ms after the loss line; run reported {} ms after that",
        (last - lost_at) / 1_000_000,
        (exited - last) / 1_000_000
    );
    // The stop was under way when the loss was said: the member's clean-up
    // went on after the line, and ended before the report.
    assert!(
        last > lost_at,
        "the member had stopped before the loss line"
    );
    assert!(
        last <= exited,
        "the member wrote {} ms after run exited",
        (last - exited) / 1_000_000
    );
}

#[test]
fn killing_run_with_sigkill_stops_the_commands_whole_process_group() {
    let s = Sandbox::new();
    let (log, ready) = (s.file("stamps"), s.file("ready"));
    // No pipes: an orphaned grandchild would hold them open for ever.
    let mut run = s
        .cmd(&run_sh(&[], &grandchild_writer(&log, &ready)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn run");
    assert!(eventually(Duration::from_secs(10), || {
        ready.exists() && !stamps(&log).is_empty()
    }));
    let _grandchild = Grandchild::of(&ready, &log).expect("the grandchild's pid");
    signal(run.id(), libc::SIGKILL);
    let killed = wall_ns();
    let _ = run.wait();
    let all = until_quiet(&log, Duration::from_secs(1), Duration::from_secs(15));
    let after = (all.last().copied().unwrap_or(killed) - killed) / 1_000_000;
    eprintln!("last grandchild write {after} ms after run was killed");
    // The guard's SIGTERM goes out as soon as run is gone; the bound is
    // for a loaded machine, far below the 15 s an orphan would write for.
    assert!(
        after < 5_000,
        "the grandchild wrote {after} ms after run was killed"
    );
}

/// The one way out of the group: a process that starts a session of its
/// own (`setsid`, as a daemon does) is no longer CMD's group, and `run`
/// neither stops it nor waits for it. Run CMD as the first process of a
/// pid namespace and it cannot get out: when that process ends, the
/// kernel kills the rest of the namespace before its parent sees it end.
#[test]
fn a_command_that_leaves_its_group_with_setsid_escapes_unless_run_in_a_pid_namespace() {
    let probe = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        crate::common::cannot_run("unshare --pid (root, or CAP_SYS_ADMIN) is needed");
        return;
    }
    let daemon = |log: &Path| {
        format!(
            "setsid sh -c 'while :; do date +%s%N >> {}; sleep 0.02; done' & sleep 0.3; exit 0",
            log.display()
        )
    };
    let s = Sandbox::new();
    let (open, closed) = (s.file("open"), s.file("closed"));
    let escaped = daemon(&open);
    // No pipes: the daemon would hold them open.
    let quiet = |args: &[&str]| {
        let st = s
            .cmd(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run");
        (st, wall_ns())
    };
    let (status, exited) = quiet(&["run", "k", "--holder", "h", "--", "sh", "-c", &escaped]);
    assert_eq!(status.code(), Some(0));
    // The escape is real (and stopped here by the test, by its own pid).
    assert!(
        eventually(Duration::from_secs(5), || stamps(&open)
            .last()
            .is_some_and(|t| *t > exited + 100_000_000)),
        "the daemon did not outlive run"
    );
    stop_writer(&open);
    let fenced = daemon(&closed);
    let (status, exited) = quiet(&[
        "run",
        "k",
        "--holder",
        "h",
        "--",
        "unshare",
        "--pid",
        "--fork",
        "--kill-child",
        "sh",
        "-c",
        &fenced,
    ]);
    assert_eq!(status.code(), Some(0));
    let last = *until_quiet(&closed, Duration::from_millis(300), Duration::from_secs(5))
        .last()
        .expect("the contained daemon wrote");
    eprintln!(
        "the contained daemon's last write {} ms before run exited",
        (exited - last) / 1_000_000
    );
    assert!(last < exited, "the contained daemon outlived run");
}

/// Kill the process whose command line names `log` (a daemon the test
/// let escape), by its pid.
fn stop_writer(log: &Path) {
    let needle = log.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}
