//! A private tmux server for driving the real dashboard: started at a fixed
//! size, driven with `send-keys`, read with `capture-pane`, and killed on
//! drop so a failing assertion never leaves one behind. Its socket lives in
//! a temp dir of its own: unique per run, and removed with the dir (tmux
//! does not always unlink it on kill-server). One copy for the file
//! dashboard's end-to-end tests and the etcd dashboard's.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Tmux {
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// Is tmux here? The reason it is not, otherwise.
    pub fn available() -> Result<(), String> {
        match Command::new("tmux").arg("-V").output() {
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => Err(format!("`tmux -V` failed: {}", o.status)),
            Err(e) => Err(format!("tmux is not installed ({e})")),
        }
    }

    /// A session running a plain shell at `cols`×`rows`.
    pub fn start(cols: u16, rows: u16) -> Tmux {
        let dir = tempfile::Builder::new()
            .prefix("claimtop-tmux-")
            .tempdir()
            .expect("temp dir for the tmux socket");
        let t = Tmux {
            socket: dir.path().join("sock"),
            _dir: dir,
        };
        let (c, r) = (cols.to_string(), rows.to_string());
        t.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            &c,
            "-y",
            &r,
            "sh",
        ]);
        t
    }

    /// Any tmux command against this server (resize-window, literal keys...).
    pub fn run(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("tmux runs");
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Type a line into the shell.
    pub fn type_line(&self, line: &str) {
        self.run(&["send-keys", "-t", "e2e", "-l", line]);
        self.keys(&["Enter"]);
    }

    /// Press keys by tmux name (`q`, `Enter`, `Escape`, ...).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "e2e"]).stdout).into_owned()
    }

    /// A format variable of the pane (`alternate_on`, `cursor_flag`, ...).
    pub fn pane_var(&self, var: &str) -> String {
        let fmt = format!("#{{{var}}}");
        let out = self.run(&["display-message", "-p", "-t", "e2e", &fmt]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Poll the screen until `pred` holds, for up to `within`; on timeout
    /// fail with the screen.
    pub fn wait_for(&self, what: &str, within: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            if Instant::now() >= deadline {
                panic!("timed out waiting for {what}; the screen was:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
