//! A host's roots and their publishers: a root has one publisher (a second
//! refuses, naming the first, even through a bind mount or a symlink), two
//! roots' publishers never displace each other, and a root its publisher
//! cannot read is published as unreadable, never as free.

use super::common;
use super::common::{claimtop, Sleeper};
use super::{
    publish_args, published, py_write, root_dir, wait_for, Fleet, Publisher, LEASE_S, PATIENCE,
};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The roots `list --json` shows for `host`, by path: their states.
fn root_states(f: &Fleet, host: &str) -> Vec<(String, String)> {
    let Some(h) = f.host(host) else {
        return Vec::new();
    };
    let mut roots: Vec<(String, String)> = h["roots"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    let s = |k: &str| r[k].as_str().unwrap_or("?").to_string();
                    (s("path"), s("state"))
                })
                .collect()
        })
        .unwrap_or_default();
    roots.sort();
    roots
}

fn canonical(p: &Path) -> String {
    std::fs::canonicalize(p)
        .expect("canonical root")
        .to_string_lossy()
        .into_owned()
}

/// The publisher `second` (its stderr in `log`) exits 1 saying `root` is
/// already published by `first`, and never that it publishes it.
fn refused_naming(second: &mut Child, log: &Path, root: &Path, first: &Publisher) {
    let mut status = None;
    wait_for(PATIENCE, || {
        status = second.try_wait().expect("wait");
        status.is_some()
    });
    if status.is_none() {
        let _ = second.kill();
        let _ = second.wait();
    }
    let said = std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{said}");
    let want = format!(
        "root {} is already published by pid {}",
        canonical(root),
        first.child.id()
    );
    assert!(said.contains(&want), "{want:?} not in: {said}");
    assert!(
        !said.contains("publishing root="),
        "said it publishes what it refused: {said}"
    );
}

/// A second `publish` of a root this machine already publishes exits 1
/// naming the first one's pid, and the first goes on publishing untroubled.
#[test]
fn a_second_publisher_of_a_root_refuses_naming_the_first_and_the_first_is_untouched() {
    let Some(f) = Fleet::start("/fleetowner") else {
        return;
    };
    let a = root_dir();
    let first = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let log = a.path().join("second.log");
    let mut cmd = claimtop(f.home.path());
    let mut second = publish_args(&mut cmd, &f, a.path(), "host-a", "5s")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("start the second publisher");
    refused_naming(&mut second, &log, a.path(), &first);
    let holder = Sleeper::spawn();
    py_write(a.path(), "after", "agent-1", holder.pid());
    assert!(wait_for(PATIENCE, || {
        !published(&f.list(), "host-a", "after").is_empty()
    }));
    assert!(!first.log().contains("lost etcd"), "{}", first.log());
}

/// Two publishers on one machine, each with its own root: both roots stay
/// listed with their claims, and neither publisher loses its lease to the
/// other.
#[test]
fn two_publishers_on_one_machine_with_their_own_roots_never_displace_each_other() {
    let Some(f) = Fleet::start("/fleetshared") else {
        return;
    };
    let (a, b) = (root_dir(), root_dir());
    let pa = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let pb = Publisher::spawn(&f, b.path(), "host-a", "5s");
    let holder = Sleeper::spawn();
    py_write(a.path(), "on-a", "agent-1", holder.pid());
    py_write(b.path(), "on-b", "agent-2", holder.pid());
    let mut both = vec![
        (canonical(a.path()), "published".to_string()),
        (canonical(b.path()), "published".to_string()),
    ];
    both.sort();
    let shown = wait_for(PATIENCE, || {
        let l = f.list();
        !published(&l, "host-a", "on-a").is_empty() && !published(&l, "host-a", "on-b").is_empty()
    });
    assert!(shown, "{}", f.list());
    // Several lease lifetimes: long enough for publishers that fight to
    // have revoked each other's lease more than once.
    let until = Instant::now() + Duration::from_secs(3 * LEASE_S);
    while Instant::now() < until {
        let l = f.list();
        assert!(
            !published(&l, "host-a", "on-a").is_empty()
                && !published(&l, "host-a", "on-b").is_empty(),
            "a root's claims went missing: {l}"
        );
        assert_eq!(root_states(&f, "host-a"), both);
        std::thread::sleep(Duration::from_millis(200));
    }
    for p in [&pa, &pb] {
        assert!(!p.log().contains("lost etcd"), "{}", p.log());
    }
}

/// A root whose claims dir its publisher may not list: the host is online,
/// the root is listed as unreadable, and none of its claims is shown or
/// counted, as free or otherwise.
#[test]
fn a_root_its_publisher_cannot_read_is_published_as_unreadable_never_as_free() {
    use std::os::unix::fs::PermissionsExt;
    let Some(f) = Fleet::start("/fleetunreadable") else {
        return;
    };
    let a = root_dir();
    let holder = Sleeper::spawn();
    py_write(a.path(), "held", "agent-1", holder.pid());
    let claims = a.path().join(".fno/claims");
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod")
    };
    // Permission is what is denied: as root, to a publisher run as nobody
    // (from a copy of the binary that user can reach); otherwise to this
    // user itself.
    let (_bin_dir, cmd) = if unsafe { libc::geteuid() } == 0 {
        use std::os::unix::process::CommandExt;
        let dir = TempDir::new().expect("bin dir");
        mode(dir.path(), 0o755);
        let bin = dir.path().join("claimtop");
        std::fs::copy(common::BIN, &bin).expect("copy claimtop");
        mode(a.path(), 0o755);
        mode(&claims, 0o700);
        let mut cmd = Command::new(&bin);
        cmd.env("HOME", dir.path())
            .env_remove("FNO_CLAIMS_ROOT")
            .uid(65534)
            .gid(65534);
        (Some(dir), cmd)
    } else {
        mode(&claims, 0o000);
        (None, claimtop(f.home.path()))
    };
    let _pa = Publisher::spawn_from(&f, cmd, a.path(), "host-a", "5s");
    let path = canonical(a.path());
    let unreadable = wait_for(PATIENCE, || {
        root_states(&f, "host-a") == [(path.clone(), "unreadable".to_string())]
    });
    // Read while the root is still unreadable: the publisher's one feed
    // notices the permission coming back at once and publishes the root.
    let l = f.list();
    let h = f.host("host-a").expect("host-a listed");
    let text = f.over(&["list"]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    mode(&claims, 0o755);
    assert!(unreadable, "{l}");
    assert_eq!(h["online"], true, "{h}");
    assert!(
        h["roots"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("denied")),
        "{h}"
    );
    assert!(published(&l, "host-a", "held").is_empty(), "{l}");
    assert!(
        text.contains(&format!("UNREADABLE root {path}"))
            && text.contains("its claims are unknown, not free"),
        "{text}"
    );
}

/// One directory reached by a second path is one root: a second `publish`
/// of it through that path refuses, naming the first. The second path is a
/// bind mount when the test can make one (root, in a mount namespace of the
/// second publisher's own, so nothing outlives it), else a symlink.
#[test]
fn a_root_reached_through_a_bind_mount_or_a_symlink_is_the_root_its_first_publisher_holds() {
    let Some(f) = Fleet::start("/fleetbind") else {
        return;
    };
    let a = root_dir();
    let other = TempDir::new().expect("the second path's dir");
    let first = Publisher::spawn(&f, a.path(), "host-a", "5s");
    let log = a.path().join("second.log");
    let mut cmd = claimtop(f.home.path());
    let cmd = publish_args(&mut cmd, &f, Path::new("$B"), "host-a", "5s");
    // SAFETY: geteuid(2) has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let can_unshare = root
        && Command::new("unshare")
            .args(["-m", "true"])
            .status()
            .is_ok_and(|s| s.success());
    let second_path = other.path().join("b");
    let mut second = if can_unshare {
        std::fs::create_dir(&second_path).expect("the mount point");
        // The publisher's own command line, run in a mount namespace of its
        // own where `$B` is `$A` bound again.
        let mut c = Command::new("unshare");
        c.args(["-m", "--propagation", "private", "sh", "-c"])
            .arg("mount --bind \"$A\" \"$B\" && exec \"$@\"")
            .arg("sh")
            .arg(cmd.get_program())
            .args(cmd.get_args().map(|a| {
                if a == "$B" {
                    second_path.as_os_str()
                } else {
                    a
                }
            }))
            .env("A", a.path())
            .env("B", &second_path);
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        c
    } else {
        eprintln!("not root (or no mount namespace): the second path is a symlink");
        std::os::unix::fs::symlink(a.path(), &second_path).expect("symlink");
        let mut c = claimtop(f.home.path());
        publish_args(&mut c, &f, &second_path, "host-a", "5s");
        c
    }
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(&log).expect("log"))
    .spawn()
    .expect("start the second publisher");
    refused_naming(&mut second, &log, a.path(), &first);
    let roots = root_states(&f, "host-a");
    assert_eq!(roots, [(canonical(a.path()), "published".to_string())]);
}
