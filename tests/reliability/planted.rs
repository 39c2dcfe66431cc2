//! Objects planted where a verb opens a file: a FIFO, a socket, a symlink to
//! `/dev/zero` and a directory, each as a recovery mutex's `owner`, as the
//! events mutex's `owner`, as `events.jsonl` itself and as `--config`.
//!
//! Every verb runs as the real binary under a watchdog and must finish
//! within its own budget (the recovery mutex's 5 s, the events mutex's
//! 2 s); "did not hang" is asserted with a generous 30 s bound and the
//! measured time printed. What it read is measured too (`rchar` of the
//! exited process, read before it is reaped): a planted object must cost
//! a bounded number of bytes. And `doctor` must name what was planted.

use crate::common::*;
use claimtop::claims::mutex::backdate;
use claimtop::claims::verbs::recovery_mutex_path;
use claimtop::claims::{acquire, AcquireOpts, AcquireOutcome, Root};
use claimtop::events::emit::events_mutex_path;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// "Did not hang": far above any budget a verb has.
const HANG: Duration = Duration::from_secs(30);
/// Bytes a verb may read, planted object or not: the binary's own start
/// reads a few hundred KiB; an endless owner read gigabytes.
const READ_BOUND: u64 = 16 << 20;
const OLD: u64 = 600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Object {
    Fifo,
    Socket,
    ZeroLink,
    Dir,
}

const OBJECTS: [Object; 4] = [Object::Fifo, Object::Socket, Object::ZeroLink, Object::Dir];

impl Object {
    fn plant(self, at: &Path) {
        match self {
            Object::Fifo => {
                let c = std::ffi::CString::new(at.as_os_str().as_bytes()).unwrap();
                // SAFETY: c is a valid NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
            }
            // The socket file stays when its listener goes; open(2) of it
            // fails (ENXIO) whether anyone listens or not.
            Object::Socket => drop(std::os::unix::net::UnixListener::bind(at).unwrap()),
            Object::ZeroLink => std::os::unix::fs::symlink("/dev/zero", at).unwrap(),
            Object::Dir => std::fs::create_dir(at).unwrap(),
        }
    }

    /// How doctor and the errors name it (a link is refused as a link where
    /// the protocol names the file, followed where a user's file may be one).
    fn words(self, followed: bool) -> &'static str {
        match self {
            Object::Fifo => "a FIFO",
            Object::Socket => "a socket",
            Object::ZeroLink if followed => "a character device",
            Object::ZeroLink => "a symlink",
            Object::Dir => "a directory",
        }
    }
}

struct Run {
    code: Option<i32>,
    took: Duration,
    read: u64,
    out: String,
    err: String,
}

/// Run `claimtop ARGS` over `root` under the watchdog; the process's `rchar`
/// is read once it has exited and before it is reaped.
fn run(root: &Path, args: &[&str]) -> Run {
    let t = Instant::now();
    let mut child = spawn_retrying(
        Command::new(BIN)
            .arg("--root")
            .arg(root)
            .args(args)
            .env("HOME", root)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("FNO_CLAIMS_ROOT")
            .env_remove("FNO_CLAIMS_STORE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    let pid = child.id() as libc::id_t;
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    loop {
        // SAFETY: waitid(2) on our own child, into a zeroed siginfo we own;
        // WNOWAIT leaves it unreaped so that /proc/PID/io still answers.
        let exited = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid,
                &mut info,
                libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
            ) == 0
                && info.si_pid() != 0
        };
        if exited {
            break;
        }
        if t.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("claimtop {args:?} hung: killed after {:?}", t.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = t.elapsed();
    let read = std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|l| l.strip_prefix("rchar: ").and_then(|n| n.parse().ok()))
        })
        .expect("rchar of the exited process");
    let code = child.wait().unwrap().code();
    Run {
        code,
        took,
        read,
        out: out.join().unwrap(),
        err: err.join().unwrap(),
    }
}

/// One verb over a planted object: it must not hang, must read a bounded
/// number of bytes, and must exit as `want` says. Returns its output.
fn verb(what: &str, object: Object, root: &Path, args: &[&str], want: &[i32]) -> Run {
    let r = run(root, args);
    println!(
        "{what:<22} {object:<9?} {:<34} exit {:>4}  {:>7.3} s  {:>9} bytes read",
        args.join(" "),
        r.code.map_or("sig".into(), |c| c.to_string()),
        r.took.as_secs_f64(),
        r.read
    );
    assert!(
        r.read < READ_BOUND,
        "{what} {object:?} {args:?}: read {} bytes",
        r.read
    );
    assert!(
        r.code.is_some_and(|c| want.contains(&c)),
        "{what} {object:?} {args:?}: exit {:?}, want {want:?}\n{}{}",
        r.code,
        r.out,
        r.err
    );
    r
}

fn hold(root: &Root, key: &str, holder: &str, pid: Option<u32>) {
    let opts = AcquireOpts {
        ttl_ms: pid.is_none().then_some(600_000),
        pid,
        ..AcquireOpts::default()
    };
    match acquire(root, key, holder, &opts) {
        Ok(AcquireOutcome::Acquired { .. }) => {}
        other => panic!("could not plant {key}: {other:?}"),
    }
}

fn assert_named(r: &Run, object: Object, followed: bool) {
    let words = object.words(followed);
    assert!(
        r.out.contains(words),
        "doctor did not name {words}: {}",
        r.out
    );
}

/// A recovery mutex whose owner is `object`: young, it is honoured (renew
/// backs off, release waits its budget out, doctor names it); past 120 s it
/// is a corpse a recovery, a force-release and `doctor --fix` each take.
fn recovery_mutex_owner(object: Object) {
    let td = tempdir();
    let root = root_in(td.path());
    let dir = td.path();
    hold(&root, "k", "me", None);
    let m = recovery_mutex_path(&root.lockfile("k"));
    std::fs::create_dir(&m).unwrap();
    object.plant(&m.join("owner"));
    let w = "recovery mutex owner";
    verb(
        w,
        object,
        dir,
        &["renew", "k", "--holder", "me", "--ttl", "10m"],
        &[3],
    );
    assert_named(&verb(w, object, dir, &["doctor"], &[3]), object, false);
    let r = verb(w, object, dir, &["release", "k", "--holder", "me"], &[0]);
    assert!(
        r.took >= Duration::from_secs(5),
        "did not wait: {:?}",
        r.took
    );

    backdate(&m, OLD).unwrap();
    for key in ["stale", "forced", "fixed"] {
        hold(&root, key, "gone", Some(dead_pid() as u32));
        let m = recovery_mutex_path(&root.lockfile(key));
        std::fs::create_dir(&m).unwrap();
        object.plant(&m.join("owner"));
        backdate(&m, OLD).unwrap();
    }
    assert_named(&verb(w, object, dir, &["doctor"], &[3]), object, false);
    verb(
        w,
        object,
        dir,
        &["acquire", "stale", "--holder", "new"],
        &[0],
    );
    verb(w, object, dir, &["force-release", "forced"], &[0]);
    verb(w, object, dir, &["doctor", "--fix"], &[0, 3]);
    verb(w, object, dir, &["doctor"], &[0]);
    assert!(litter(&root.claims_dir()).is_empty());
}

/// The events mutex's owner: a young one costs each event its 2 s budget
/// (the verb warns and carries on); a corpse is stolen and the event lands.
fn events_mutex_owner(object: Object) {
    let td = tempdir();
    let root = root_in(td.path());
    let dir = td.path();
    hold(&root, "first", "me", None);
    let m = events_mutex_path(&root.events_file());
    std::fs::create_dir(&m).unwrap();
    object.plant(&m.join("owner"));
    let w = "events mutex owner";
    let r = verb(
        w,
        object,
        dir,
        &["acquire", "young", "--holder", "me", "--ttl", "10m"],
        &[0],
    );
    assert!(r.err.contains("failed to emit"), "{}", r.err);
    assert_named(&verb(w, object, dir, &["doctor"], &[3]), object, false);
    backdate(&m, OLD).unwrap();
    let r = verb(
        w,
        object,
        dir,
        &["acquire", "old", "--holder", "me", "--ttl", "10m"],
        &[0],
    );
    assert!(!r.err.contains("failed to emit"), "{}", r.err);
    assert!(!m.exists());
    verb(w, object, dir, &["doctor"], &[0]);
}

/// The log itself: every verb warns and carries on, `events` answers, and
/// doctor names it.
fn events_log(object: Object) {
    let td = tempdir();
    let root = root_in(td.path());
    let dir = td.path();
    std::fs::create_dir_all(root.events_file().parent().unwrap()).unwrap();
    object.plant(&root.events_file());
    let w = "events.jsonl";
    let r = verb(
        w,
        object,
        dir,
        &["acquire", "k", "--holder", "me", "--ttl", "10m"],
        &[0],
    );
    assert!(r.err.contains("failed to emit"), "{}", r.err);
    verb(w, object, dir, &["release", "k", "--holder", "me"], &[0]);
    verb(w, object, dir, &["events"], &[0, 1]);
    let r = verb(w, object, dir, &["doctor"], &[3]);
    assert!(r.out.contains("events_log_broken"), "{}", r.out);
    assert_named(&r, object, false);
}

/// `--config` naming it: refused at once by each command that reads it,
/// naming what it is (a link is followed there, so the link to /dev/zero
/// shows as the device).
fn config(object: Object) {
    let td = tempdir();
    let dir = td.path();
    let file = dir.join("config.toml");
    object.plant(&file);
    let file = file.to_str().unwrap();
    // Every command that reads the settings: their printer, `events` and
    // `list` when a time of day must be read in the zone they name.
    for args in [
        &["--config", file, "config", "--print"][..],
        &["--config", file, "events", "--since", "10:00"],
        &["--config", file, "list", "--as-of", "10:00"],
    ] {
        let r = verb("--config", object, dir, args, &[1, 2]);
        let words = object.words(true);
        assert!(
            r.out.contains(words) || r.err.contains(words),
            "{args:?} does not say {words}: {}{}",
            r.out,
            r.err
        );
    }
}

#[test]
fn objects_planted_where_verbs_open_files_never_hang_them_or_run_their_reads_on() {
    // One thread per object: the budgets they wait out are sleeps.
    let threads: Vec<_> = OBJECTS
        .into_iter()
        .map(|o| {
            std::thread::spawn(move || {
                recovery_mutex_owner(o);
                events_mutex_owner(o);
                events_log(o);
                config(o);
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a planted object failed a verb");
    }
}
