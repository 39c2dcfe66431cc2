//! `acquire --wait` and `claimtop run`, as scripts see them: the real
//! binary over a temp root, real child processes and real signals.

use crate::common::{Sandbox, Sleeper};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// What these tests add to the shared sandbox.
pub(crate) trait RunSandbox {
    fn spawn(&self, args: &[&str]) -> Child;
    fn status(&self, key: &str) -> Value;
    fn hold_for(&self, key: &str, holder: &str, pid: u32);
}

impl RunSandbox for Sandbox {
    fn spawn(&self, args: &[&str]) -> Child {
        let mut cmd = self.cmd(args);
        with_default_signals(&mut cmd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn claimtop")
    }

    fn status(&self, key: &str) -> Value {
        let out = self.run(&["status", key, "--json"]);
        serde_json::from_slice(&out.stdout).expect("status JSON")
    }

    /// Take `key` for `holder`, bound to `pid`.
    fn hold_for(&self, key: &str, holder: &str, pid: u32) {
        let out = self.run(&[
            "acquire",
            key,
            "--holder",
            holder,
            "--pid",
            &pid.to_string(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
}

/// A signal the test runner was started ignoring (nohup ignores HUP, and a
/// non-interactive shell's background job INT and QUIT) stays ignored in
/// every process it starts, and a shell cannot trap a
/// signal ignored at its start: `run` and its command begin with the
/// default dispositions a terminal's session gives them.
pub(crate) fn with_default_signals(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2) is async-signal-safe, fit for a pre_exec hook.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}

/// `run k --holder h FLAGS -- sh -c SCRIPT`.
pub(crate) fn run_sh<'a>(flags: &[&'a str], script: &'a str) -> Vec<&'a str> {
    let mut v = vec!["run", "k", "--holder", "h"];
    v.extend_from_slice(flags);
    v.extend_from_slice(&["--", "sh", "-c", script]);
    v
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Poll `cond` (test-side only) until it holds or `within` passes.
pub(crate) fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Wait for a child with a bound; kill it and fail if it overruns.
pub(crate) fn finish(child: Child, within: Duration) -> Output {
    finish_or(child, within, String::new)
}

/// [`finish`], saying `what()` too when the child overruns.
pub(crate) fn finish_or(mut child: Child, within: Duration, what: impl Fn() -> String) -> Output {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    panic!(
        "still running after {within:?} ({}); stderr: {}",
        what(),
        text(&out.stderr)
    );
}

/// The one line a waiter writes on stderr, once it has looked and found the
/// key held (reading it is how a test knows the wait has begun).
pub(crate) fn await_waiting(child: &mut Child) -> String {
    let mut line = String::new();
    let stderr = child.stderr.as_mut().expect("piped stderr");
    BufReader::new(stderr).read_line(&mut line).expect("stderr");
    assert!(line.contains("waiting for"), "not waiting: {line:?}");
    line
}

pub(crate) fn signal(pid: u32, sig: i32) {
    // SAFETY: kill has no memory preconditions.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

pub(crate) fn live_pid(s: &Sandbox, key: &str) -> Option<i64> {
    let st = s.status(key);
    (st["state"] == "live")
        .then(|| st["record"]["pid"].as_i64())
        .flatten()
}

#[test]
fn acquire_wait_returns_as_soon_as_the_holder_releases() {
    let s = Sandbox::new();
    let holder = Sleeper::spawn();
    s.hold_for("k", "first", holder.pid());
    let mut waiter = s.spawn(&["acquire", "k", "--holder", "second", "--wait=60", "--json"]);
    // Released just after its first look: the next safety re-check is 2 s
    // away, so only the release's file event can wake it sooner.
    let said = await_waiting(&mut waiter);
    let out = s.run(&["release", "k", "--holder", "first"]);
    assert_eq!(out.status.code(), Some(0));
    let released = Instant::now();
    let out = finish(waiter, Duration::from_secs(10));
    let took = released.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one document");
    assert_eq!(doc["outcome"], "acquired");
    assert_eq!(doc["record"]["holder"], "second");
    assert!(took < Duration::from_millis(1000), "took {took:?}");
    let err = said + &text(&out.stderr);
    assert_eq!(err.matches("waiting for k").count(), 1, "{err}");
    assert!(err.contains("held by first"), "{err}");
}

#[test]
fn acquire_wait_gives_up_after_dur_with_exit_3_as_held_by_another() {
    let s = Sandbox::new();
    let holder = Sleeper::spawn();
    s.hold_for("k", "first", holder.pid());
    let start = Instant::now();
    let out = s.run(&["acquire", "k", "--holder", "second", "--wait=1", "--json"]);
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one document");
    assert_eq!(doc["outcome"], "held_by_other");
    assert_eq!(doc["holder"], "first");
    assert!(took >= Duration::from_secs(1), "gave up early: {took:?}");
    assert!(took < Duration::from_secs(5), "overran: {took:?}");
    assert_eq!(text(&out.stderr).matches("waiting for").count(), 1);
}

#[test]
fn acquire_wait_over_a_holder_that_is_killed_reclaims_the_stale_claim() {
    let s = Sandbox::new();
    let mut holder = Sleeper::spawn();
    s.hold_for("k", "first", holder.pid());
    let mut waiter = s.spawn(&["acquire", "k", "--holder", "second", "--wait", "--json"]);
    await_waiting(&mut waiter);
    // A death makes no file event: the waiter watches the holder's pid.
    holder.kill();
    let died = Instant::now();
    let out = finish(waiter, Duration::from_secs(10));
    let took = died.elapsed();
    assert!(took < Duration::from_millis(1000), "took {took:?}");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one document");
    assert_eq!(doc["kind"], "reclaimed");
    assert_eq!(doc["previous_holder"], "first");
}

#[test]
fn acquire_wait_without_pid_binds_the_claim_to_the_caller_as_plain_acquire_does() {
    let s = Sandbox::new();
    let (code, doc) = {
        let out = s.run(&["acquire", "k", "--holder", "me", "--wait=5", "--json"]);
        (
            out.status.code(),
            serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        )
    };
    assert_eq!(code, Some(0));
    assert_eq!(doc["record"]["pid"], std::process::id() as i64);
}

#[test]
fn acquire_wait_stops_when_the_caller_it_would_bind_to_exits_while_it_waits() {
    let s = Sandbox::new();
    let holder = Sleeper::spawn();
    s.hold_for("k", "other", holder.pid());
    let (out, err) = (s.file("out.json"), s.file("err.txt"));
    // The shell starts the waiter in the background and exits under it.
    let script = format!(
        "{bin} --root {root} acquire k --holder h --wait --json > {out} 2> {err} & \
         while ! grep -q waiting {err} 2>/dev/null; do sleep 0.02; done",
        bin = crate::common::BIN,
        root = s.root().display(),
        out = out.display(),
        err = err.display()
    );
    let shell = Command::new("sh")
        .args(["-c", &script])
        .status()
        .expect("sh");
    assert!(shell.success());
    let done = || std::fs::read_to_string(&out).is_ok_and(|t| t.ends_with('\n'));
    assert!(eventually(Duration::from_secs(10), done), "still waiting");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc["outcome"], "error");
    let why = doc["error"].as_str().unwrap();
    assert!(why.contains("exited while it waited"), "{why}");
    assert_eq!(live_pid(&s, "k"), Some(holder.pid() as i64));
}

#[test]
fn wait_is_a_usage_error_without_equals_or_with_a_bad_duration() {
    let s = Sandbox::new();
    let out = s.run(&["acquire", "k", "--holder", "h", "--wait=soon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--wait"),
        "{}",
        text(&out.stderr)
    );
    // `--wait 5` is not a duration: the 5 is a stray positional.
    let out = s.run(&["acquire", "k", "--holder", "h", "--wait", "5"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn run_exits_with_the_commands_own_status_and_releases_the_key() {
    let s = Sandbox::new();
    let out = s.run(&run_sh(&[], "exit 7"));
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    assert_eq!(s.status("k")["state"], "free");
    // Died of a signal: 128 + the signal, as shells say it.
    let out = s.run(&run_sh(&[], "kill -KILL $$"));
    assert_eq!(out.status.code(), Some(128 + 9));
    assert_eq!(s.status("k")["state"], "free");
}

/// The pid in `/proc/PID/stat`'s parent field.
pub(crate) fn parent_of(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[test]
fn run_binds_the_key_to_its_guard_a_process_apart_from_the_command_and_from_run() {
    let s = Sandbox::new();
    let marker = s.file("pid");
    let script = format!(
        "echo $$ > {m}.tmp && mv {m}.tmp {m} && exec sleep 30",
        m = marker.display()
    );
    let run = s.spawn(&run_sh(&[], &script));
    assert!(eventually(Duration::from_secs(10), || marker.exists()));
    let child_pid: i64 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let st = s.status("k");
    assert_eq!(st["state"], "live", "{st}");
    let bound = st["record"]["pid"].as_i64().expect("a pid");
    // Neither CMD (whose leader may end before the rest of its group) nor
    // `run` (which a kill -9 ends first): run's guard, its own child.
    assert_ne!(bound, child_pid, "bound to CMD's leader");
    assert_ne!(bound, run.id() as i64, "bound to run itself");
    assert_eq!(parent_of(bound), Some(run.id() as i64), "{st}");
    signal(child_pid as u32, libc::SIGKILL);
    let out = finish(run, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(128 + 9));
    assert_eq!(s.status("k")["state"], "free");
    assert!(parent_of(bound).is_none(), "the guard outlived its run");
}

#[test]
fn run_when_the_key_is_held_exits_3_and_the_command_never_ran() {
    let s = Sandbox::new();
    let holder = Sleeper::spawn();
    s.hold_for("k", "other", holder.pid());
    let side_effect = s.file("ran");
    let touch = format!("touch {}", side_effect.display());
    let out = s.run(&run_sh(&[], &touch));
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("held by other"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "stdout belongs to the command");
    std::thread::sleep(Duration::from_millis(200));
    assert!(!side_effect.exists(), "the command ran without the claim");
    assert_eq!(live_pid(&s, "k"), Some(holder.pid() as i64));
    // Within a bounded wait too, and the JSON says who holds it.
    let out = s.run(&run_sh(&["--wait=1", "--json"], &touch));
    assert_eq!(out.status.code(), Some(3));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["outcome"], "held_by_other");
    assert_eq!(doc["holder"], "other");
    assert!(!side_effect.exists());
}

#[test]
fn run_and_acquire_wait_meet_a_live_claim_of_their_own_holder_name_as_held_not_continued() {
    let s = Sandbox::new();
    let holder = Sleeper::spawn();
    s.hold_for("k", "h", holder.pid());
    let side_effect = s.file("ran");
    let touch = format!("touch {}", side_effect.display());
    let out = s.run(&run_sh(&[], &touch));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("held by h"),
        "{}",
        text(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(!side_effect.exists(), "two commands under one claim");
    let out = s.run(&["acquire", "k", "--holder", "h", "--wait=1", "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(live_pid(&s, "k"), Some(holder.pid() as i64));
    // The seed's idempotent re-acquire is the plain acquire's.
    let out = s.run(&["acquire", "k", "--holder", "h", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kind"], "reacquired");
}

#[test]
fn run_of_a_command_that_does_not_exist_is_an_error_that_takes_nothing() {
    let s = Sandbox::new();
    let out = s.run(&[
        "run",
        "k",
        "--holder",
        "h",
        "--",
        "no-such-command-anywhere",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("not found"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(s.status("k")["state"], "free");
    assert!(
        !s.root().join(".fno/events.jsonl").exists() || {
            let ev = std::fs::read_to_string(s.root().join(".fno/events.jsonl")).unwrap();
            !ev.contains("claim_acquired")
        }
    );
}

#[test]
fn run_waits_for_the_key_then_runs_the_command() {
    let s = Sandbox::new();
    let holder = Sleeper::spawn();
    s.hold_for("k", "other", holder.pid());
    let mut run = s.spawn(&run_sh(&["--wait"], "exit 5"));
    let said = await_waiting(&mut run);
    assert_eq!(
        s.run(&["release", "k", "--holder", "other"]).status.code(),
        Some(0)
    );
    let out = finish(run, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(said.contains("waiting for k"), "{said}");
}

#[test]
fn run_json_is_one_document_and_the_commands_stdout_goes_to_stderr() {
    let s = Sandbox::new();
    let out = s.run(&run_sh(&["--json"], "echo from-cmd; exit 2"));
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("exactly one document");
    assert_eq!(doc["outcome"], "exited");
    assert_eq!(doc["exit_code"], 2);
    assert_eq!(doc["signal"], Value::Null);
    assert_eq!(doc["status"], 2);
    assert_eq!(doc["release"], "released");
    assert_eq!(doc["record"]["holder"], "h");
    assert!(text(&out.stderr).contains("from-cmd"));
}

#[test]
fn run_json_names_the_signal_that_ended_the_command_and_releases() {
    let s = Sandbox::new();
    let out = s.run(&run_sh(&["--json"], "kill -USR2 $$"));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("exactly one document");
    assert_eq!(doc["outcome"], "exited", "{doc}");
    assert_eq!(doc["exit_code"], Value::Null);
    assert_eq!(doc["signal"], libc::SIGUSR2);
    assert_eq!(doc["release"], "released");
    assert_eq!(s.status("k")["state"], "free");
}

#[test]
fn a_signal_while_run_waits_ends_it_and_the_command_never_runs() {
    let s = Sandbox::new();
    let holder = Sleeper::spawn();
    s.hold_for("k", "other", holder.pid());
    let side_effect = s.file("ran");
    let touch = format!("touch {}", side_effect.display());
    let mut run = s.spawn(&run_sh(&["--wait"], &touch));
    await_waiting(&mut run);
    signal(run.id(), libc::SIGTERM);
    let out = finish(run, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM));
    assert!(!side_effect.exists());
    assert_eq!(live_pid(&s, "k"), Some(holder.pid() as i64));
}

#[test]
fn run_with_a_ttl_writes_a_ttl_claim_for_the_command() {
    let s = Sandbox::new();
    let ready = s.file("ready");
    let script = format!(
        "echo $$ > {r}.tmp && mv {r}.tmp {r}; exec sleep 30",
        r = ready.display()
    );
    let run = s.spawn(&run_sh(&["--ttl", "2m"], &script));
    assert!(eventually(Duration::from_secs(10), || ready.exists()));
    let st = s.status("k");
    let rec = &st["record"];
    let window = rec["expires_at"].as_i64().unwrap() - rec["acquired_at"].as_i64().unwrap();
    assert!((119_000..=121_000).contains(&window), "{st}");
    let cmd: u32 = std::fs::read_to_string(&ready)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    signal(cmd, libc::SIGTERM);
    let out = finish(run, Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM));
    assert_eq!(s.status("k")["state"], "free");
}

/// The renewal schedule is unit-tested with an injected clock
/// (`wait::tests`), and `supervise` driving it on a file store runs in
/// seconds with the hold's clock moved ahead (`cli::run::tests`); this is
/// the same through the real binary at the protocol's minimum TTL.
#[test]
#[ignore = "takes 45 s: the minimum TTL is 60 s and the first renewal is due at 40 s"]
fn run_renews_a_60s_ttl_claim_before_a_third_of_it_is_left() {
    let s = Sandbox::new();
    let run = s.spawn(&[
        "run", "k", "--holder", "h", "--ttl", "60", "--", "sleep", "50",
    ]);
    assert!(eventually(Duration::from_secs(10), || live_pid(&s, "k").is_some()));
    let first = s.status("k")["record"]["expires_at"].as_i64().unwrap();
    std::thread::sleep(Duration::from_secs(45));
    let st = s.status("k");
    let later = st["record"]["expires_at"].as_i64().unwrap();
    assert!(later >= first + 35_000, "not renewed: {st}");
    let events = std::fs::read_to_string(s.root().join(".fno/events.jsonl")).unwrap();
    assert_eq!(events.matches("claim_renewed").count(), 1);
    let mut run = run;
    let _ = run.kill();
    let _ = run.wait();
}

#[test]
fn runs_waiting_on_one_key_never_overlap() {
    let s = Sandbox::new();
    let marker = s.file("inside");
    // mkdir is atomic: a second command inside at once fails it, and says so.
    let script = format!(
        "mkdir {m} || exit 99; sleep 0.03; rmdir {m}",
        m = marker.display()
    );
    let workers: Vec<Child> = (0..6)
        .map(|_| {
            let sh = format!(
                "for i in 1 2 3 4; do {bin} --root {root} run k --holder w$$ --wait \
                 -- sh -c '{script}' || exit $?; done",
                bin = crate::common::BIN,
                root = s.root().display(),
            );
            Command::new("sh")
                .args(["-c", &sh])
                .stderr(Stdio::piped())
                .spawn()
                .expect("worker")
        })
        .collect();
    for w in workers {
        let out = finish(w, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    assert!(!marker.exists());
    assert_eq!(s.status("k")["state"], "free");
    let events = std::fs::read_to_string(s.root().join(".fno/events.jsonl")).unwrap();
    assert_eq!(events.matches("\"claim_released\"").count(), 24);
}

/// The command leads a process group of its own; in a terminal that group
/// must still be the foreground, or a command reading the terminal stops on
/// SIGTTIN and ^C reaches only `run`.
#[test]
fn run_in_a_terminal_leaves_the_command_the_terminal_to_read_and_its_ctrl_c() {
    use crate::common::tmux::Tmux;
    if let Err(why) = Tmux::available() {
        crate::common::cannot_run(&why);
        return;
    }
    let s = Sandbox::new();
    let tmux = Tmux::start(120, 20);
    let run = |cmd: &str| {
        format!(
            "env -u FNO_CLAIMS_STORE -u FNO_CLAIMS_ROOT {bin} --root {root} run k --holder h -- {cmd}; echo status-$?",
            bin = crate::common::BIN,
            root = s.root().display()
        )
    };
    tmux.type_line(&run("sh -c 'read x; echo got-$x'"));
    assert!(eventually(Duration::from_secs(10), || live_pid(&s, "k").is_some()));
    tmux.type_line("hello");
    tmux.wait_for("the command's answer", Duration::from_secs(10), |sc| {
        sc.contains("got-hello") && sc.contains("status-0")
    });
    // The terminal is the shell's again: it reads the next line.
    tmux.type_line(&run("sleep 30"));
    assert!(eventually(Duration::from_secs(10), || live_pid(&s, "k").is_some()));
    tmux.keys(&["C-c"]);
    tmux.wait_for("^C to end the command", Duration::from_secs(10), |sc| {
        sc.contains(&format!("status-{}", 128 + libc::SIGINT))
    });
    assert_eq!(s.status("k")["state"], "free");
    // ^Z stops the job as the shell knows it (run and the command's group
    // together), and `fg` brings both back with the terminal.
    tmux.type_line("clear");
    tmux.type_line(&run("sleep 30"));
    assert!(eventually(Duration::from_secs(10), || live_pid(&s, "k").is_some()));
    tmux.keys(&["C-z"]);
    tmux.wait_for("the job to stop", Duration::from_secs(10), |sc| {
        sc.contains("Stopped")
    });
    tmux.type_line("fg");
    std::thread::sleep(Duration::from_millis(500));
    tmux.keys(&["C-c"]);
    assert!(
        eventually(Duration::from_secs(10), || s.status("k")["state"] == "free"),
        "{}",
        tmux.screen()
    );
}
