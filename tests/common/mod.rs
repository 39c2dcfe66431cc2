//! The helpers every integration test family shares (`tests/<family>/main.rs`
//! pulls this in with `#[path = "../common/mod.rs"] mod common;`): throwaway
//! roots, dead pids, planted records, the CLI binary in a sandboxed `$HOME`,
//! re-executed child roles for the reliability suites, and a fixed world for
//! the dashboard. One copy, so the helpers cannot drift apart between
//! families; not every family uses every helper.
//!
//! Reliability workers must be separate processes, not threads: liveness is
//! decided by pid, so threads of one process would all look alive to each
//! other and stale recovery would never run.
#![allow(dead_code)]

pub mod terminal;
pub mod tmux;

use claimtop::claims::root::RootProblem;
use claimtop::claims::{
    acquire, hazard, hostname, machine_id, AcquireKind, AcquireOpts, AcquireOutcome, ClaimRecord,
    ClaimState, Classifier, Counts, Hazard, LocalIdentity, Root, Status, Sweep, EXPIRED_SUBDIR,
};
use claimtop::dashboard::testing::{update, Action, App, Options};
use claimtop::dashboard::testing::{Input, Update};
use claimtop::events::tail::Line;
use claimtop::store::drive::{DriveOpts, Driver, Want};
use claimtop::store::file::FileStore;
use claimtop::store::mirror::judge::Judge;
use claimtop::store::mirror::Mirror;
use claimtop::store::OriginIx;
use claimtop::store::{Backend, Change, Changes, Claims, Feed, Fenced, ListEnd, ListSink};
use claimtop::store::{MemberListing, StoreError, Words};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

// ---- roots, pids and the audit log -------------------------------------

/// A throwaway root whose audit log lives beside its claims. Takes a temp
/// dir or any path (a mounted tmpfs, a subdirectory).
/// Why a test cannot run here. Under `CI` that is a failure: a skip there
/// would hide a class of behaviour never tried (the tmux, interop and etcd
/// tests hold the same rule). Elsewhere it is said on stderr and the test
/// passes vacuously.
pub fn cannot_run(why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("CI is set, so this test must run, but: {why}");
    }
    eprintln!("skipped: {why} (set CI to make this a failure)");
}

pub fn root_in(dir: impl AsRef<Path>) -> Root {
    Root::with_events_here(dir.as_ref())
}

/// Every line of the root's audit log, parsed. Panics on a line that is not
/// JSON: a torn or garbled line is exactly what these tests must catch.
pub fn events(root: &Root) -> Vec<Value> {
    let text = std::fs::read_to_string(root.events_file()).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad event line {l:?}: {e}")))
        .collect()
}

/// The events of one type.
pub fn events_of(root: &Root, type_name: &str) -> Vec<Value> {
    events(root)
        .into_iter()
        .filter(|e| e["type"] == type_name)
        .collect()
}

/// A pid that belonged to a process which has exited and been reaped, so
/// nothing runs under it (short of the kernel handing it out again at once).
pub fn dead_pid() -> i32 {
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("spawn `true`");
    let pid = child.id() as i32;
    child.wait().expect("reap `true`");
    pid
}

/// Acquire and insist it succeeded; returns the record and how.
pub fn must_acquire(
    root: &Root,
    key: &str,
    holder: &str,
    opts: &AcquireOpts,
) -> (ClaimRecord, AcquireKind) {
    match acquire(root, key, holder, opts) {
        Ok(AcquireOutcome::Acquired { record, kind }) => (record, kind),
        other => panic!("acquire {key:?} by {holder:?}: {other:?}"),
    }
}

/// A record as this machine's writer would make it, with the parts a test
/// wants to control given.
pub fn record(key: &str, holder: &str, pid: i32, acquired_at: i64) -> ClaimRecord {
    let id = claimtop::claims::LocalIdentity::current();
    ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: holder.into(),
        acquired_at,
        pid,
        host: id.hostname,
        expires_at: None,
        reason: None,
        harness: None,
        machine_id: Some(id.machine_id).filter(|m| !m.is_empty()),
        metadata: Map::new(),
    }
}

/// Plant a record at `key`'s lockfile as a peer writer would (bypassing
/// acquire, which would refuse or reclaim). Returns the bytes written.
pub fn plant(root: &Root, rec: &ClaimRecord) -> Vec<u8> {
    let bytes = rec.to_yaml().expect("serialize").into_bytes();
    plant_bytes(root, &rec.key, &bytes);
    bytes
}

/// Plant arbitrary bytes as `key`'s lockfile.
pub fn plant_bytes(root: &Root, key: &str, bytes: &[u8]) -> PathBuf {
    let path = root.lockfile(key);
    std::fs::create_dir_all(path.parent().expect("claims dir")).expect("mkdir claims");
    std::fs::write(&path, bytes).expect("write lockfile");
    path
}

/// The archive dir of a root.
pub fn expired_dir(root: &Root) -> PathBuf {
    root.claims_dir().join(EXPIRED_SUBDIR)
}

/// Archived copies of `key`: `.expired/<enc>.<ms>.lock`.
pub fn archives_of(root: &Root, key: &str) -> Vec<PathBuf> {
    let stem = claimtop::claims::encode_key(key);
    names(&expired_dir(root))
        .into_iter()
        .filter(|n| {
            n.strip_prefix(&format!("{stem}."))
                .and_then(|rest| rest.strip_suffix(".lock"))
                .is_some_and(|ms| !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|n| expired_dir(root).join(n))
        .collect()
}

/// A metadata map from a JSON object literal.
pub fn meta(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("metadata must be an object, got {other}"),
    }
}

// ---- the CLI binary ------------------------------------------------------

pub const BIN: &str = env!("CARGO_BIN_EXE_claimtop");

/// The binary with `$HOME` pointed at `home` and no `$FNO_CLAIMS_ROOT`, so a
/// test never reaches the real claims root.
pub fn claimtop(home: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("HOME", home)
        .env_remove("FNO_CLAIMS_ROOT")
        .env("USER", "tester");
    c
}

/// A PID-bound lockfile of this machine whose pid is long gone: Stale.
pub fn dead_holder_yaml(key: &str, holder: &str) -> String {
    let rec = ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: holder.into(),
        acquired_at: 1_700_000_000_000,
        pid: 999_999,
        host: hostname(),
        expires_at: None,
        reason: None,
        harness: None,
        machine_id: Some(machine_id()).filter(|m| !m.is_empty()),
        metadata: Default::default(),
    };
    rec.to_yaml().expect("yaml")
}

/// The address `claimtop metrics --listen ADDR:0` printed on its first
/// stderr line ("serving metrics at http://ADDR/metrics").
pub fn metrics_address(stderr_line: &str) -> String {
    stderr_line
        .split("http://")
        .nth(1)
        .and_then(|s| s.trim().strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no address in {stderr_line:?}"))
        .to_string()
}

/// A claims root plus a separate fake `$HOME`, so nothing ever touches the
/// real one.
pub struct Sandbox {
    pub root: TempDir,
    pub home: TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            root: TempDir::new().expect("root"),
            home: TempDir::new().expect("home"),
        }
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// A path inside the root, for the side effects of test commands.
    pub fn file(&self, name: &str) -> PathBuf {
        self.root().join(name)
    }

    /// The binary over this root, with a clean environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = claimtop(self.home.path());
        c.arg("--root").arg(self.root()).args(args);
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run claimtop")
    }
}

/// A child killed on drop, so a failing test leaves no sleeper behind.
pub struct Sleeper(Child);

impl Sleeper {
    pub fn spawn() -> Sleeper {
        Sleeper(
            Command::new("sleep")
                .arg("600")
                .spawn()
                .expect("spawn sleep"),
        )
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---- reliability: child roles, markers, litter --------------------------

/// Env var naming the role a re-executed test binary should play.
pub const ROLE_ENV: &str = "CLAIMTOP_RELIABILITY_ROLE";

/// xorshift64*: enough randomness for interleavings, reproducible from the
/// seed printed on failure, and no extra crate.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `pct`/100.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// CLOCK_MONOTONIC in ns: one clock for every process on the machine, immune
/// to wall-clock steps, so tenures of different processes compare directly.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// An append-only log of one-line markers shared by many processes. Each
/// marker is one `write(2)` on an O_APPEND descriptor, so lines from
/// different processes never interleave.
pub struct Markers {
    file: std::fs::File,
}

impl Markers {
    pub fn open(path: &Path) -> Markers {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o644)
            .open(path)
            .expect("open marker log");
        Markers { file }
    }

    pub fn put(&mut self, line: &str) {
        let mut l = String::with_capacity(line.len() + 1);
        l.push_str(line);
        l.push('\n');
        self.file.write_all(l.as_bytes()).expect("append marker");
    }
}

/// Run this test binary again as a child playing `role`: the child runs only
/// the test named `entry` (which dispatches on [`ROLE_ENV`]) and exits.
pub fn spawn_role(entry: &str, role: &str, envs: &[(&str, String)]) -> Child {
    let exe = std::env::current_exe().expect("own test binary");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", entry, "--nocapture", "--test-threads=1", "-q"])
        .env(ROLE_ENV, role)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn child process")
}

/// The role this process was started to play, if it is a child.
pub fn my_role() -> Option<String> {
    std::env::var(ROLE_ENV).ok().filter(|r| !r.is_empty())
}

pub fn env_str(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("child needs {name}"))
}

pub fn env_u64(name: &str) -> u64 {
    env_str(name)
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number"))
}

/// SIGKILL a child: no destructors, no release, exactly like a crash.
pub fn kill9(child: &Child) {
    // SAFETY: plain kill(2) on a pid we spawned and have not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
}

/// Reap children as they exit. A killed child left unreaped is a zombie,
/// and a zombie still has a `/proc/<pid>/stat`, so its claims would look
/// alive to every other process; reaping promptly is what a real parent does.
pub fn wait_all(
    mut children: Vec<Child>,
    limit: Duration,
) -> Vec<(u32, std::process::ExitStatus, String)> {
    let deadline = Instant::now() + limit;
    let mut done = Vec::new();
    while !children.is_empty() {
        let mut i = 0;
        while i < children.len() {
            match children[i].try_wait() {
                Ok(Some(status)) => {
                    let mut err = String::new();
                    if let Some(mut e) = children[i].stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    }
                    done.push((children[i].id(), status, err));
                    // Already reaped by try_wait; wait() returns the cached status.
                    let _ = children.swap_remove(i).wait();
                }
                _ => i += 1,
            }
        }
        if Instant::now() > deadline {
            for c in &children {
                kill9(c);
            }
            panic!(
                "{} child process(es) still running after {limit:?}",
                children.len()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    done
}

/// Every name in `dir`, sorted; empty when it does not exist.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Names in the claims dir that are neither lockfiles nor the archive dir:
/// temp files, mutex dirs, reap dirs.
pub fn litter(claims_dir: &Path) -> Vec<String> {
    names(claims_dir)
        .into_iter()
        .filter(|n| !n.ends_with(".lock") && n != ".expired")
        .collect()
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("claimtop-rel-")
        .tempdir()
        .expect("tempdir")
}

/// Spawn `cmd`, riding out the moment a concurrent `cargo build` replaces
/// the binary (the path briefly does not exist, or is busy being written).
pub fn spawn_retrying(cmd: &mut Command) -> std::io::Result<Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e)
                if tries < 100
                    && (e.kind() == std::io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(libc::ETXTBSY)) =>
            {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

// ---- the dashboard's fixed world -----------------------------------------

/// 2027-01-15T08:00:00Z, on a minute boundary.
pub const NOW: i64 = 1_800_000_000_000;
pub const MIN: i64 = 60_000;
/// A pid that is alive and started long before every claim.
pub const ALIVE: i32 = 100;
/// A pid that does not exist.
pub const DEAD: i32 = 999;
pub const OPERATOR: &str = "operator:op@here";

pub fn me() -> LocalIdentity {
    LocalIdentity {
        machine_id: "m-here:1".into(),
        hostname: "here".into(),
    }
}

pub fn probe(pid: i32) -> Option<i64> {
    match pid {
        ALIVE => Some(NOW - 24 * 60 * MIN),
        _ => None,
    }
}

pub fn opts(root: Root) -> Options {
    Options {
        root,
        more_roots: Vec::new(),
        read_only: false,
        no_color: true,
        demo: false,
        local_time: false,
        opening: Default::default(),
    }
}

/// A model over `root` at [`NOW`], 80×24, colourless, with a fixed operator.
pub fn app_at(root: Root) -> App {
    let mut app = App::new(opts(root), NOW, me(), OPERATOR.into());
    update(&mut app, Action::Resize(80, 24));
    app
}

/// This world's judge: [`me`], and [`probe`]'s processes.
pub fn judge() -> Judge {
    Judge::with(me(), probe)
}

/// What reads a root for the model in these tests: a driver of its
/// mirror, driven by hand (no thread, no clock of its own).
pub type Collector = Driver<'static>;

/// The collector of this world: reads `root` at [`NOW`] with [`probe`].
pub fn collector(root: &Root) -> Collector {
    collector_with(root, probe)
}

/// [`collector`] with another process table.
pub fn collector_with(root: &Root, probe: fn(i32) -> Option<i64>) -> Collector {
    driver_of(root, 0, Judge::with(me(), probe))
}

/// [`collector`] of root `i` of several.
pub fn collector_in(root: &Root, i: usize) -> Collector {
    driver_of(root, i, judge())
}

fn driver_of(root: &Root, i: usize, judge: Judge) -> Collector {
    collector_judged(root, i, judge, NOW)
}

/// A collector of root `i` judging with `judge`, its clock at `now`.
pub fn collector_judged(root: &Root, i: usize, judge: Judge, now: i64) -> Collector {
    let store = FileStore::new(root.clone());
    let opts = DriveOpts {
        words: false,
        ..DriveOpts::default()
    };
    Driver::shared(
        std::sync::Arc::new(store),
        OriginIx(i as u16),
        Some(judge),
        Want::Whole { head: 0 },
        opts,
        now,
    )
}

/// What one member's lane says, as the model hears it.
pub fn heard(u: Update) -> Action {
    Action::Update(Box::new(u))
}

/// New lines of origin `at`'s events log, as the model hears them.
pub fn log_lines_in(at: usize, lines: Vec<Line>) -> Action {
    let news = claimtop::store::LogNews::Lines {
        log: claimtop::events::history::Log::Own,
        lines,
        next: claimtop::store::Cursor::start(),
        file_id: None,
    };
    Action::News(OriginIx(at as u16), news)
}

/// New lines of the first origin's events log.
pub fn log_lines(lines: Vec<Line>) -> Action {
    log_lines_in(0, lines)
}

/// Origin `at`'s events log was truncated or replaced.
pub fn log_reset_in(at: usize) -> Action {
    let log = claimtop::events::history::Log::Own;
    Action::News(OriginIx(at as u16), claimtop::store::LogNews::Reset { log })
}

/// A delta of member `at`'s mirror, as the model hears it.
pub fn mirrored(at: usize, delta: claimtop::store::mirror::Delta) -> Action {
    heard(Update {
        at: OriginIx(at as u16),
        delta: Some(delta),
        facts: None,
        tick: None,
    })
}

/// Ask the collector for `input` and apply what it sends; true when any
/// of it asked for a redraw.
pub fn collect(app: &mut App, c: &mut Collector, input: Input) -> bool {
    c.handle(input, NOW)
        .expect("the collector's reads")
        .into_iter()
        .fold(false, |dirty, u| update(app, heard(u)).redraw | dirty)
}

/// A second of the collector's clock, applied: what time changed, then
/// the tick.
pub fn tick(app: &mut App, c: &mut Collector, now: i64) -> bool {
    let dirty = c
        .handle(Input::Tick(now), now)
        .expect("the collector's reads")
        .into_iter()
        .fold(false, |dirty, u| update(app, heard(u)).redraw | dirty);
    // The clock says each tick, moved or not.
    update(app, Action::Tick(now)).redraw | dirty
}

/// What the root's feed would say of these paths changing: a lockfile of
/// its claims dir names its key, any other entry there is looked at, and
/// what is outside the claims dir names nothing.
pub fn changed(root: &Root, paths: Vec<PathBuf>) -> Input {
    use claimtop::claims::entry::{Entry, Role};
    let dir = root.claims_dir();
    let changes = paths
        .into_iter()
        .filter(|p| p.parent() == Some(dir.as_path()))
        .filter_map(|p| {
            let name = p.file_name()?.to_os_string();
            if let Some(key) = claimtop::claims::key_of_lockfile(&name) {
                return Some(Change::Claim { key });
            }
            let role = Role::in_claims_dir(&name)?;
            Some(Change::Entry {
                entry: Entry::look(role, &p),
                path: p,
            })
        })
        .collect();
    Input::Feed(changes)
}

/// A store that answers with one fixed listing: what a mirror is fed when
/// a test hands the model a world rather than files.
pub struct FixedStore(pub MemberListing);

static FIXED_WORDS: Words = Words {
    noun: "claim",
    archive: "nowhere",
};

/// What a fixed world refuses.
fn fixed() -> StoreError {
    StoreError::Unsupported("a fixed world".into())
}

impl Claims for FixedStore {
    fn url(&self) -> String {
        "fixed:".into()
    }
    fn words(&self) -> &'static Words {
        &FIXED_WORDS
    }
    fn rules(&self) -> claimtop::claims::ItemRules {
        self.0.rules
    }
    fn acquire(
        &self,
        _: &str,
        _: &str,
        _: &claimtop::claims::AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        Err(fixed())
    }
    fn release(
        &self,
        _: &str,
        _: &str,
        _: Option<claimtop::store::Fence>,
    ) -> Result<Fenced<claimtop::claims::ReleaseOutcome>, StoreError> {
        Err(fixed())
    }
    fn status(&self, key: &str, _: &mut Classifier) -> Result<Fenced<Status>, StoreError> {
        let s = self.0.sweep.claims.iter().find(|s| s.key == key).cloned();
        Ok(Fenced::plain(s.unwrap_or_else(|| {
            Status::free(key.into(), PathBuf::from(key), String::new())
        })))
    }
    fn renew(
        &self,
        _: &str,
        _: &str,
        _: i64,
        _: Option<&str>,
    ) -> Result<Fenced<claimtop::claims::RenewOutcome>, StoreError> {
        Err(fixed())
    }
    fn force_release(
        &self,
        _: &str,
        _: &claimtop::claims::ForceOpts,
    ) -> Result<Fenced<claimtop::claims::ForceOutcome>, StoreError> {
        Err(fixed())
    }
    fn list(&self, c: &mut Classifier, sink: &mut dyn ListSink) -> Result<ListEnd, StoreError> {
        // Judged with the classifier handed in, as a root's listing is:
        // what it learns of the holders' pids is what the mirror keeps.
        for r in self.0.sweep.claims.iter().filter_map(|s| s.record.as_ref()) {
            c.state(r);
        }
        sink.page(self.0.clone());
        Ok(ListEnd {
            complete: true,
            ..self.0.end.clone()
        })
    }
}

impl Feed for FixedStore {
    fn changes(&self, _: Option<&claimtop::store::Cursor>) -> Result<Box<dyn Changes>, StoreError> {
        Err(StoreError::FeedClosed)
    }
}

impl Backend for FixedStore {}

/// A world the model is shown: its claims and hazards listed by a mirror
/// judging as this world does, at [`NOW`].
pub struct World {
    pub store: FixedStore,
    pub mirror: Mirror,
    pub root: usize,
    pub problem: Option<RootProblem>,
}

impl World {
    /// The model shown this world's listing; true when it redrew.
    pub fn show(&mut self, app: &mut App) -> bool {
        self.mirror
            .list(&self.store, NOW, None)
            .expect("a fixed listing");
        let mut d = self.mirror.take_delta().expect("a listing");
        d.problem = Some(self.problem.clone());
        update(app, mirrored(self.root, d)).redraw
    }

    /// A second of the mirror's clock, applied: what time changed, then
    /// the tick.
    pub fn tick(&mut self, app: &mut App, now: i64) -> bool {
        self.mirror.tick(now);
        let mut dirty = false;
        if let Some(d) = self.mirror.take_delta() {
            dirty |= update(app, mirrored(self.root, d)).redraw;
        }
        update(app, Action::Tick(now)).redraw | dirty
    }
}

/// A world of these claims and hazards under `root`.
pub fn sweep_of(root: &Root, claims: Vec<Status>, hazards: Vec<Hazard>) -> World {
    let mut counts = Counts::default();
    for c in &claims {
        counts.add(c.state);
    }
    let listing = MemberListing::of_sweep(
        Sweep {
            root: root.root.clone(),
            claims,
            counts,
            hazards,
        },
        claimtop::claims::ItemRules::Lockfile,
    );
    let store = FixedStore(listing);
    World {
        // As the live collector keeps it: no reasons in words.
        mirror: Mirror::new(
            claimtop::store::OriginIx(0),
            claimtop::store::Claims::rules(&store),
            Some(judge()),
            NOW,
        )
        .wordless(),
        store,
        root: 0,
        problem: None,
    }
}

/// Show `app` the world: root `i`'s of several when its root is one of
/// them. True when it redrew.
pub fn apply_sweep(app: &mut App, mut w: World) -> bool {
    if let Some(i) = app.origins.position(&w.store.0.sweep.root) {
        // Its rows are that origin's: the mirror stamps it in their place.
        w.root = i;
        w.mirror = Mirror::new(
            OriginIx(i as u16),
            claimtop::store::Claims::rules(&w.store),
            Some(judge()),
            NOW,
        )
        .wordless();
    }
    w.show(app)
}

/// A record acquired `age` ago, expiring `ttl_left` from now (None = PID-bound).
pub fn rec(key: &str, holder: &str, pid: i32, age: i64, ttl_left: Option<i64>) -> ClaimRecord {
    ClaimRecord {
        schema_version: 1,
        key: key.into(),
        holder: holder.into(),
        acquired_at: NOW - age,
        pid,
        host: "here".into(),
        expires_at: ttl_left.map(|t| NOW + t),
        reason: None,
        harness: None,
        machine_id: Some("m-here:1".into()),
        metadata: Map::new(),
    }
}

pub const FIXED_ROOT: &str = "/srv/work";

pub fn fixed_root() -> Root {
    Root::with_events_here(FIXED_ROOT)
}

/// The status the core would give `r` in this world, at a fixed path.
pub fn status_of(root: &Root, r: ClaimRecord) -> Status {
    let v = Classifier::with(NOW, me(), probe).verdict(&r);
    Status {
        key: r.key.clone(),
        file: root.lockfile(&r.key).into(),
        state: v.state,
        why: v.why,
        error: None,
        locality: Some(v.locality),
        head: Vec::new(),
        record: Some(r),
    }
}

pub fn corrupted(root: &Root, key: &str, bytes: &[u8]) -> Status {
    Status {
        key: key.into(),
        file: root.lockfile(key).into(),
        state: ClaimState::Corrupted,
        record: None,
        why: "the file cannot be parsed as a claim; force-release archives it".into(),
        error: Some("claim parse/schema failed: invalid type: string \"garbage\"".into()),
        locality: None,
        head: bytes.to_vec(),
    }
}

/// One claim in every state, plus a corrupted file and a foreign one.
pub fn every_state(root: &Root) -> Vec<Status> {
    let mut live_ttl = rec("build:web", "pty:worker-1", ALIVE, 3 * MIN, Some(12 * MIN));
    live_ttl.harness = Some("codex".into());
    live_ttl.reason = Some("release 4.2".into());
    live_ttl.metadata.insert("ticket".into(), json!("OPS-17"));
    live_ttl
        .metadata
        .insert("steps".into(), json!({"done": 3, "of": 5}));
    let live_pid = rec("db:migrate", OPERATOR, ALIVE, 65 * MIN, None);
    let mut suspect = rec("node:alpha", "pty:worker-2", DEAD, 20 * MIN, Some(40 * MIN));
    suspect.harness = Some("claude".into());
    let stale_ttl = rec("node:beta", "pty:worker-3", DEAD, 90 * MIN, Some(-3 * MIN));
    let stale_pid = rec("queue/jobs 7", "pty:worker-4", DEAD, 26 * 60 * MIN, None);
    let mut foreign = rec("gpu:0", "ssh:far-away", 4242, 5 * MIN, Some(25 * MIN));
    foreign.host = "elsewhere".into();
    foreign.machine_id = Some("m-there:9".into());
    vec![
        status_of(root, live_ttl),
        status_of(root, live_pid),
        status_of(root, suspect),
        status_of(root, stale_ttl),
        status_of(root, stale_pid),
        status_of(root, foreign),
        corrupted(root, "broken", b"key: [unterminated\n\x1b[31mred\xff\xfe"),
    ]
}

pub fn mutex_corpse(root: &Root) -> Hazard {
    Hazard::at_path(
        hazard::STALE_MUTEX,
        root.claims_dir().join("node%3Abeta.lock.recovery.d"),
        "mutex held for 412s (> 60s): a killed holder's corpse; the next waiter steals it".into(),
    )
}

pub fn line(text: &str) -> Line {
    Line {
        text: text.into(),
        offset: 0,
        truncated: false,
        claim: None,
    }
}

pub fn event(ts: &str, kind: &str, data: serde_json::Value) -> Line {
    line(&json!({"ts": ts, "type": kind, "source": "fno-loop", "data": data}).to_string())
}

/// A short history touching several keys, and one line that is not JSON.
pub fn some_events() -> Vec<Line> {
    vec![
        event(
            "2027-01-15T06:30:00Z",
            "claim_acquired",
            json!({"key": "node:beta", "holder": "pty:worker-3", "pid": DEAD, "host": "here",
                   "acquired_at": NOW - 90 * MIN, "expires_at": NOW - 3 * MIN, "reason": "nightly"}),
        ),
        event(
            "2027-01-15T07:57:00Z",
            "claim_acquired",
            json!({"key": "build:web", "holder": "pty:worker-1", "pid": ALIVE, "host": "here",
                   "acquired_at": NOW - 3 * MIN, "expires_at": NOW + 12 * MIN}),
        ),
        line("{\"ts\": \"2027-01-15T07:58:00Z\", \"type\": truncated garbage"),
        event(
            "2027-01-15T07:59:00Z",
            "claim_released",
            json!({"key": "lint", "holder": "pty:worker-5", "pid": 77, "host": "here",
                   "acquired_at": NOW - 9 * MIN, "expires_at": null, "duration_held_ms": 480000}),
        ),
        event(
            "2027-01-15T07:59:30Z",
            "claim_renewed",
            json!({"key": "build:web", "holder": "pty:worker-1", "pid": ALIVE, "host": "here",
                   "acquired_at": NOW - 3 * MIN, "expires_at": NOW + 12 * MIN, "ttl_ms": 900000}),
        ),
    ]
}

/// The fixed model the snapshots draw: every state, one hazard, a few events.
pub fn fixed_app(w: u16, h: u16) -> App {
    let root = fixed_root();
    let mut app = app_at(root.clone());
    let sweep = sweep_of(&root, every_state(&root), vec![mutex_corpse(&root)]);
    apply_sweep(&mut app, sweep);
    update(&mut app, log_lines(some_events()));
    update(&mut app, Action::Resize(w, h));
    app
}

/// A claim event of the envelope, at `ms` (epoch ms).
pub fn claim_line(kind: &str, ms: i64, key: &str, holder: &str, acquired_at: i64) -> String {
    let ts = chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    serde_json::json!({"ts": ts, "type": kind, "source": "t",
        "data": {"key": key, "holder": holder, "acquired_at": acquired_at}})
    .to_string()
}

pub fn key(c: char) -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

pub fn code(c: KeyCode) -> Action {
    Action::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

pub fn ctrl(c: char) -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

pub fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        update(app, key(c));
    }
}

/// Select the row whose key is `k`.
pub fn select(app: &mut App, k: &str) {
    let i = app
        .table
        .rows
        .iter()
        .position(|p| app.claims.live.get(p).is_some_and(|s| s.key == k))
        .unwrap_or_else(|| panic!("no row for {k}"));
    app.table.selected = i;
    claimtop::dashboard::testing::scroll_into_view(app);
    // As a key moving the selection does: the shown claim is worded.
    app.refresh_selected_why();
}

/// What the status line says now.
pub fn said(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

pub fn selected_key(app: &App) -> String {
    app.selected_status()
        .map(|s| s.key.clone())
        .unwrap_or_default()
}

pub fn row_keys(app: &App) -> Vec<String> {
    app.table
        .rows
        .iter()
        .filter_map(|p| app.shown().get(p))
        .map(|s| s.key.clone())
        .collect()
}

/// Draw `app` headless and return the buffer as text, one line per row.
/// The first line of `screen` holding `text` ("" when none does, so the
/// assertion that follows names what it looked for).
pub fn line_with<'a>(screen: &'a str, text: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(text))
        .unwrap_or_default()
}

pub fn render(app: &App) -> String {
    let buf = render_buffer(app);
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        for x in 0..area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub fn render_buffer(app: &App) -> ratatui::buffer::Buffer {
    let (w, h) = app.size;
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    term.draw(|f| claimtop::dashboard::testing::draw(f, app))
        .expect("draw");
    term.backend().buffer().clone()
}

pub fn temp_root() -> (tempfile::TempDir, Root) {
    let td = tempfile::tempdir().expect("tempdir");
    let root = Root::with_events_here(td.path());
    (td, root)
}

/// Write `r` as the lockfile of its key under `root`.
pub fn write_claim(root: &Root, r: &ClaimRecord) -> PathBuf {
    let path = root.lockfile(&r.key);
    std::fs::create_dir_all(root.claims_dir()).expect("claims dir");
    std::fs::write(&path, r.to_yaml().expect("yaml")).expect("write lockfile");
    path
}

// ---- a command's own process group, seen through its timestamps ----------

/// A `sh -c` script for `run`: it starts a grandchild (a subshell in the
/// background) that appends the wall clock in ns to `log` every 20 ms, says
/// it has started by writing the grandchild's pid to `ready`, and waits.
/// Stopping only the shell leaves the grandchild writing; stopping the
/// group ends both.
pub fn grandchild_writer(log: &Path, ready: &Path) -> String {
    format!(
        "( while :; do date +%s%N >> {log}; sleep 0.02; done ) & \
         echo $! > {ready}.tmp && mv {ready}.tmp {ready}; wait",
        log = log.display(),
        ready = ready.display()
    )
}

/// A `sh -c` fragment: a member of the command's group that appends the
/// wall clock in ns to `log` every 20 ms and, told SIGTERM, writes `more`
/// times again (about 25 ms each) before it exits: a slow clean-up that
/// outlives its leader. Its pid goes to `ready`.
pub fn slow_member(log: &Path, ready: &Path, more: u32) -> String {
    format!(
        "( n=-1; trap 'n={more}' TERM; while [ $n -ne 0 ]; do date +%s%N >> {log}; sleep 0.02; \
         [ $n -gt 0 ] && n=$((n-1)); done ) & echo $! > {ready}.tmp && mv {ready}.tmp {ready}",
        log = log.display(),
        ready = ready.display()
    )
}

/// The grandchild a [`grandchild_writer`] started, killed on drop: a test
/// that fails because it outlived its group must not leave it writing.
pub struct Grandchild {
    pub pid: i32,
    log: PathBuf,
}

impl Grandchild {
    /// Once `ready` names it.
    pub fn of(ready: &Path, log: &Path) -> Option<Grandchild> {
        let pid = std::fs::read_to_string(ready).ok()?.trim().parse().ok()?;
        Some(Grandchild {
            pid,
            log: log.to_path_buf(),
        })
    }
}

impl Drop for Grandchild {
    fn drop(&mut self) {
        // Only while the pid is still the writer (its command line names
        // the log): a pid reused since by another process is left alone.
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", self.pid)).unwrap_or_default();
        let log = self.log.to_string_lossy();
        if String::from_utf8_lossy(&cmdline).contains(log.as_ref()) {
            // SAFETY: kill(2) has no memory preconditions.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
    }
}

/// The wall clock in ns, as `date +%s%N` writes it.
pub fn wall_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The timestamps a [`grandchild_writer`] wrote (a torn last line is left
/// out).
pub fn stamps(log: &Path) -> Vec<i64> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Wait until `log` has stopped growing for `quiet` (at most `within`):
/// then its last stamp is the last write of whatever wrote it.
pub fn until_quiet(log: &Path, quiet: Duration, within: Duration) -> Vec<i64> {
    let end = Instant::now() + within;
    let mut seen = stamps(log).len();
    let mut since = Instant::now();
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
        let n = stamps(log).len();
        if n != seen {
            seen = n;
            since = Instant::now();
        } else if since.elapsed() >= quiet {
            break;
        }
    }
    stamps(log)
}

// ---- a store's collector, as the model hears it ---------------------------

/// A store's listing as its collector's mirror hands it to the model: the
/// store's own verdicts stand (no pids judged here).
pub fn listed(listing: MemberListing, at: i64, resync: Option<String>) -> Action {
    let store = FixedStore(listing);
    let mut m = Mirror::new(
        claimtop::store::OriginIx(0),
        claimtop::store::Claims::rules(&store),
        None,
        at,
    );
    m.list(&store, at, resync).expect("a fixed listing");
    let delta = m.take_delta().expect("a listing");
    mirrored(0, delta)
}

/// A big store's first page, shown while the rest is listed.
pub fn head(listing: MemberListing, at: i64) -> Action {
    let mut a = listed(listing, at, None);
    if let Action::Update(u) = &mut a {
        if let Some(w) = u.delta.as_mut().and_then(|d| d.whole.as_mut()) {
            w.partial = true;
        }
    }
    a
}

/// Claims the collector read again (state Free: gone), with the counts its
/// mirror tallies once they are in `app`'s rows.
pub fn reread(app: &App, items: Vec<(Status, Option<claimtop::store::Tenure>)>, at: i64) -> Action {
    use claimtop::dashboard::testing::RowId;
    use claimtop::store::mirror::{Delta, Row, Tally};
    use std::collections::HashMap;
    let rows: Vec<Row> = items
        .into_iter()
        .map(|(s, tenure)| Row {
            path: s.file.clone(),
            status: std::sync::Arc::new(s),
            tenure,
        })
        .collect();
    let mut states: HashMap<RowId, ClaimState> = app
        .claims
        .live
        .by_row
        .iter()
        .filter(|(id, _)| !id.is_copy())
        .map(|(id, s)| (id.clone(), s.state))
        .collect();
    for row in &rows {
        let id = RowId::of(row.path.clone());
        match row.status.state {
            ClaimState::Free => states.remove(&id),
            st => states.insert(id, st),
        };
    }
    let mut counts = Counts::default();
    states.values().for_each(|st| counts.add(*st));
    let hazards = app.origins.origin(0).map(|o| o.tally.hazards.clone());
    mirrored(
        0,
        Delta {
            rows,
            tally: Some(Tally {
                counts,
                hazards: hazards.unwrap_or_default(),
            }),
            at,
            ..Delta::default()
        },
    )
}
