//! The eight holders: each a loop of `claimtop run` whose command writes its
//! tenure's start and end to the shared file.

use super::*;

/// One tenure's command. It records its start, works for `$F_SLEEP`
/// seconds (or, if it is the one that takes the `long` token, until the
/// test drops a `release` file), and records its end, also when it is
/// stopped by a signal: the trap runs at once because the shell waits on a
/// background sleep, not a foreground one.
pub(crate) const TENURE_SH: &str = r#"
trap 'echo "e $(date +%s%N) $F_TAG" >> "$F_LOG"; exit 143' TERM INT HUP
echo "s $(date +%s%N) $F_TAG" >> "$F_LOG"
if [ -e "$F_DIR/long" ] && mv "$F_DIR/long" "$F_DIR/long.$F_TAG" 2>/dev/null; then
  echo "l $(date +%s%N) $F_TAG" >> "$F_LOG"
  while [ ! -e "$F_DIR/release" ]; do sleep 0.1 & wait $!; done
else
  sleep "$F_SLEEP" & wait $!
fi
echo "e $(date +%s%N) $F_TAG" >> "$F_LOG"
"#;

/// The running holders of one scenario, and the shared timestamp file.
pub(crate) struct Holders {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) threads: Vec<std::thread::JoinHandle<Vec<(String, i32)>>>,
}

impl Holders {
    pub(crate) fn start(url: &str, seed: u64, timeout: &'static str) -> Holders {
        let dir = tempfile::tempdir().expect("scenario dir");
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..HOLDERS)
            .map(|w| {
                let (url, base, stop) = (url.to_string(), dir.path().to_path_buf(), stop.clone());
                std::thread::spawn(move || holder_loop(w, &url, &base, seed, timeout, &stop))
            })
            .collect();
        Holders { dir, stop, threads }
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn log(&self) -> PathBuf {
        self.dir().join("tenures")
    }

    pub(crate) fn lines(&self) -> Vec<Line> {
        parse(&std::fs::read_to_string(self.log()).unwrap_or_default())
    }

    /// Hand the `long` token to whichever holder starts next, and wait
    /// until one has it: its command then runs until [`Holders::release`].
    pub(crate) fn hold_long(&self) -> String {
        std::fs::write(self.dir().join("long"), "").expect("long token");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(l) = self.lines().into_iter().find(|l| l.kind == 'l') {
                return l.tag;
            }
            assert!(
                Instant::now() < deadline,
                "no holder took the long token within 60 s\n{}",
                self.stderr_tails()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Let the long command end (if it still runs), and wait for its end.
    pub(crate) fn release(&self, tag: &str) {
        std::fs::write(self.dir().join("release"), "").expect("release token");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.lines().iter().any(|l| l.kind == 'e' && l.tag == tag) {
            assert!(
                Instant::now() < deadline,
                "the long tenure {tag} did not end within 60 s of its release\n{}",
                self.stderr_tails()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = std::fs::remove_file(self.dir().join("release"));
    }

    /// Wait until `n` tenures have begun at or after `since_ns`: the key is
    /// being handed on again.
    pub(crate) fn await_tenures_after(&self, since_ns: i128, n: usize, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let begun = self
                .lines()
                .iter()
                .filter(|l| l.kind == 's' && l.ns >= since_ns)
                .count();
            if begun >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "only {begun} tenures began within {within:?} after the fault cleared\n{}",
                self.stderr_tails()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Stop starting new runs, let every waiting one have its turn, and
    /// collect every run's exit status by tenure tag.
    pub(crate) fn finish(self) -> (Vec<Line>, BTreeMap<String, i32>, tempfile::TempDir) {
        let Holders { dir, stop, threads } = self;
        stop.store(true, Ordering::SeqCst);
        let mut codes = BTreeMap::new();
        for t in threads {
            codes.extend(t.join().expect("holder thread"));
        }
        let text = std::fs::read_to_string(dir.path().join("tenures")).unwrap_or_default();
        (parse(&text), codes, dir)
    }

    pub(crate) fn stderr_tails(&self) -> String {
        (0..HOLDERS)
            .map(|w| {
                let text = std::fs::read_to_string(self.dir().join(format!("w{w}.err")))
                    .unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(5).collect();
                format!(
                    "w{w}: {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n    ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// One holder: `run` after `run` on the key until told to stop, each with a
/// short command of random length. Returns each run's tag and exit status.
pub(crate) fn holder_loop(
    w: usize,
    url: &str,
    base: &Path,
    seed: u64,
    timeout: &str,
    stop: &AtomicBool,
) -> Vec<(String, i32)> {
    let mut rng = Rng::new(seed ^ (w as u64 + 1));
    let holder = format!("w{w}");
    let err = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(base.join(format!("{holder}.err")))
        .expect("holder stderr");
    let mut codes = Vec::new();
    let mut seq = 0;
    while !stop.load(Ordering::SeqCst) {
        seq += 1;
        let tag = format!("{holder}.{seq}");
        let sleep_ms = 100 + rng.below(400);
        let mut c: Command = claimtop(base);
        c.env_remove("FNO_CLAIMS_STORE")
            .env_remove("ETCD_PASSWORD")
            .env("F_LOG", base.join("tenures"))
            .env("F_DIR", base)
            .env("F_TAG", &tag)
            .env(
                "F_SLEEP",
                format!("{}.{:03}", sleep_ms / 1000, sleep_ms % 1000),
            )
            .args(["--store", url, "--timeout", timeout])
            .args(["run", KEY, "--holder", &holder, "--ttl", TTL])
            .args(["--wait=240s", "--", "sh", "-c", TENURE_SH])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err.try_clone().expect("holder stderr"));
        let code = c
            .status()
            .map(|s| s.code().unwrap_or(-1))
            .expect("start claimtop run");
        codes.push((tag, code));
        // Exit 1 is etcd out of reach: try again, without spinning while
        // it is down.
        if code == 1 {
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    codes
}
