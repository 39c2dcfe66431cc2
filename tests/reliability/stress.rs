//! Mutual exclusion under load: many processes contend for a handful of keys,
//! some die while holding (so stale recovery runs under contention), some
//! renew, and an operator force-releases claims out from under live holders.
//!
//! Each winner writes a start marker once `acquire` returned, and an end
//! marker only after re-reading its lockfile and finding it still its own, so
//! a recorded tenure always lies inside the real one. Afterwards the tenures
//! of each key must not overlap, nothing may have failed, and every lockfile
//! left behind must parse.

mod judge;

use crate::common::*;
use claimtop::claims::{
    self, acquire, force_release, read_claim_file, release, renew, sweep, AcquireKind, AcquireOpts,
    AcquireOutcome, ForceOpts, ForceOutcome, RenewOutcome, Root,
};
use judge::{analyse, Report};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// A round that cannot win in this many tries means a key is stuck.
const MAX_TRIES: u32 = 20_000;

const ENTRY: &str =
    "stress::a_single_worker_round_records_a_whole_tenure_or_acts_as_a_child_worker";

/// One run's shape.
#[derive(Debug, Clone, Copy)]
struct Plan {
    workers: usize,
    rounds: u64,
    keys: u64,
    /// Per acquisition, the chance (percent) the worker dies holding it.
    die_pct: u64,
    /// Renew TTL claims mid-tenure.
    renew: bool,
    /// Run an operator process force-releasing live claims throughout.
    force: bool,
    seed: u64,
    /// Go through the real `claimtop` binary instead of the library.
    cli: bool,
}

impl Plan {
    /// Everything at once: deaths while holding, renewals, an operator.
    fn everything(workers: usize, rounds: u64, die_pct: u64, seed: u64, cli: bool) -> Plan {
        Plan {
            workers,
            rounds,
            keys: if workers > 8 { 4 } else { 2 },
            die_pct,
            renew: true,
            force: true,
            seed,
            cli,
        }
    }
}

#[test]
fn a_single_worker_round_records_a_whole_tenure_or_acts_as_a_child_worker() {
    match my_role().as_deref() {
        Some("stress-worker") => {
            worker();
            std::process::exit(0);
        }
        Some("stress-operator") => {
            operator();
            std::process::exit(0);
        }
        Some(_) => return,
        None => {}
    }
    // Run in-process as a plain test: the worker loop itself must record
    // whole tenures, or the big runs below would prove nothing.
    let td = tempdir();
    let markers = td.path().join("markers");
    let cfg = WorkerCfg {
        root: td.path().to_path_buf(),
        markers: markers.clone(),
        keys: 1,
        rounds: 3,
        start_round: 0,
        id: 1,
        slot: 0,
        die_pct: 0,
        renew: true,
        seed: 7,
        via_cli: false,
    };
    run_worker(&cfg);
    let text = std::fs::read_to_string(&markers).unwrap();
    let report = analyse(&text);
    assert_eq!(report.tenures, 3, "{text}");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(report.errors, 0, "{text}");
}

struct WorkerCfg {
    root: PathBuf,
    markers: PathBuf,
    keys: u64,
    rounds: u64,
    start_round: u64,
    id: u64,
    slot: u64,
    die_pct: u64,
    renew: bool,
    seed: u64,
    via_cli: bool,
}

fn worker() {
    let cfg = WorkerCfg {
        root: PathBuf::from(env_str("W_ROOT")),
        markers: PathBuf::from(env_str("W_MARKERS")),
        keys: env_u64("W_KEYS"),
        rounds: env_u64("W_ROUNDS"),
        start_round: env_u64("W_START"),
        id: env_u64("W_ID"),
        slot: env_u64("W_SLOT"),
        die_pct: env_u64("W_DIE_PCT"),
        renew: env_u64("W_RENEW") == 1,
        seed: env_u64("W_SEED"),
        via_cli: env_u64("W_CLI") == 1,
    };
    run_worker(&cfg);
}

fn run_worker(cfg: &WorkerCfg) {
    let ops = Ops::new(&cfg.root, cfg.via_cli);
    let mut m = Markers::open(&cfg.markers);
    let mut rng = Rng::new(cfg.seed ^ (cfg.id << 20));
    let holder = format!("w{}", cfg.id);
    for round in cfg.start_round..cfg.rounds {
        let key = format!("k{}", rng.below(cfg.keys));
        let die = rng.chance(cfg.die_pct);
        // A dying holder's claim is PID-bound so it is reclaimable the moment
        // the pid is gone; a TTL would protect it for a minute.
        let ttl = !die && cfg.renew && rng.chance(50);
        // Every round ends in a tenure: contenders retry until they win, so
        // the run is `workers x rounds` tenures, not a handful of lucky ones.
        let mut tries = 0;
        let won = loop {
            tries += 1;
            match ops.acquire(&key, &holder, ttl, round) {
                Ok(Won::Held(_)) if tries < MAX_TRIES => {
                    m.put("H");
                    std::thread::sleep(Duration::from_micros(200 + rng.below(1500)));
                }
                other => break other,
            }
        };
        match won {
            Ok(Won::Acquired { acquired_at, kind }) => {
                m.put(&format!("S {key} {holder} {round} {} {kind}", mono_ns()));
                if die {
                    std::fs::write(
                        cfg.markers.with_file_name(format!("died.{}", cfg.slot)),
                        round.to_string(),
                    )
                    .expect("note death round");
                    m.put(&format!("D {key} {holder} {round} {}", mono_ns()));
                    // SAFETY: kill(2) on our own pid.
                    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                }
                hold(&mut rng);
                if ttl && rng.chance(50) {
                    match ops.renew(&key, &holder) {
                        Ok(true) => m.put("R"),
                        Ok(false) => {}
                        Err(e) => m.put(&format!("X renew {key} {e}")),
                    }
                    hold(&mut rng);
                }
                let t_end = mono_ns();
                let still_mine = match read_claim_file(&ops.lockfile(&key)) {
                    Ok(rec) => rec.holder == holder && rec.acquired_at == acquired_at,
                    Err(_) => false,
                };
                let tag = if still_mine { "E" } else { "L" };
                m.put(&format!("{tag} {key} {holder} {round} {t_end}"));
                if let Err(e) = ops.release(&key, &holder) {
                    m.put(&format!("X release {key} {e}"));
                }
            }
            Ok(Won::Held(other)) => m.put(&format!(
                "X starved {key} still held by {other} after {tries} tries"
            )),
            Err(e) => m.put(&format!("X acquire {key} {e}")),
        }
    }
}

/// How an acquire came out, whichever face did it.
enum Won {
    Acquired { acquired_at: i64, kind: String },
    Held(String),
}

/// The verbs, through the library or through the real binary (one
/// `claimtop` process per call, claims bound to this worker's pid).
struct Ops {
    root: Root,
    via_cli: bool,
}

impl Ops {
    fn new(dir: &Path, via_cli: bool) -> Ops {
        Ops {
            root: root_in(dir),
            via_cli,
        }
    }

    fn lockfile(&self, key: &str) -> PathBuf {
        self.root.lockfile(key)
    }

    /// Run `claimtop --json` with `args`: exit code and parsed stdout.
    fn cli(&self, args: &[&str]) -> Result<(i32, Value), String> {
        let out = spawn_retrying(
            std::process::Command::new(env!("CARGO_BIN_EXE_claimtop"))
                .arg("--root")
                .arg(&self.root.root)
                .args(args)
                .arg("--json")
                .env_remove("FNO_CLAIMS_ROOT")
                .env("HOME", &self.root.root)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped()),
        )
        .and_then(|c| c.wait_with_output())
        .map_err(|e| format!("spawn claimtop: {e}"))?;
        let code = out.status.code().unwrap_or(-1);
        let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if code == 1 || code == 2 || code == -1 || code == 101 {
            return Err(format!(
                "claimtop {args:?} exited {code}: {}{}",
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok((code, v))
    }

    fn acquire(&self, key: &str, holder: &str, ttl: bool, round: u64) -> Result<Won, String> {
        let mut meta = Map::new();
        meta.insert("round".into(), json!(round));
        if self.via_cli {
            let pid = std::process::id().to_string();
            let meta = Value::Object(meta).to_string();
            let mut args = vec!["acquire", key, "--holder", holder, "--pid", &pid];
            args.extend(["--metadata", &meta]);
            if ttl {
                args.extend(["--ttl", "60s"]);
            }
            let (_, v) = self.cli(&args)?;
            return match v["outcome"].as_str() {
                Some("acquired") => Ok(Won::Acquired {
                    acquired_at: v["record"]["acquired_at"].as_i64().unwrap_or(-1),
                    // "fresh", or {"reclaimed": {...}} for a struct variant.
                    kind: v["kind"]
                        .as_str()
                        .map(str::to_string)
                        .or_else(|| v["kind"].as_object()?.keys().next().cloned())
                        .unwrap_or_else(|| "unknown".into()),
                }),
                Some("held_by_other") => Ok(Won::Held(v["holder"].to_string())),
                _ => Err(format!("acquire answered {v}")),
            };
        }
        let opts = AcquireOpts {
            ttl_ms: ttl.then_some(claims::MIN_TTL_MS),
            metadata: Some(meta),
            ..AcquireOpts::default()
        };
        match acquire(&self.root, key, holder, &opts) {
            Ok(AcquireOutcome::Acquired { record, kind }) => Ok(Won::Acquired {
                acquired_at: record.acquired_at,
                kind: match kind {
                    AcquireKind::Fresh => "fresh",
                    AcquireKind::Reacquired => "reacquired",
                    AcquireKind::Reclaimed { .. } => "reclaimed",
                }
                .to_string(),
            }),
            Ok(AcquireOutcome::HeldByOther { holder, .. }) => Ok(Won::Held(holder)),
            Err(e) => Err(e.to_string()),
        }
    }

    fn renew(&self, key: &str, holder: &str) -> Result<bool, String> {
        if self.via_cli {
            let (_, v) = self.cli(&["renew", key, "--holder", holder, "--ttl", "60s"])?;
            return Ok(v["renewed"].as_bool() == Some(true));
        }
        match renew(&self.root, key, holder, claims::MIN_TTL_MS) {
            Ok(r) => Ok(matches!(r, RenewOutcome::Renewed { .. })),
            Err(e) => Err(e.to_string()),
        }
    }

    fn release(&self, key: &str, holder: &str) -> Result<(), String> {
        if self.via_cli {
            return self.cli(&["release", key, "--holder", holder]).map(|_| ());
        }
        release(&self.root, key, holder)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Force-release `key` even if live: the archived record's holder and
    /// round, if something was archived.
    fn force(&self, key: &str) -> Result<Option<(String, Option<u64>)>, String> {
        let previous = if self.via_cli {
            let (code, v) =
                self.cli(&["force-release", key, "--allow-live", "--operator", "chaos"])?;
            if code != 0 {
                return Ok(None);
            }
            match v["previous"].as_object() {
                Some(p) => Some((
                    p["holder"].as_str().unwrap_or_default().to_string(),
                    p.get("metadata")
                        .and_then(|m| m.get("round"))
                        .and_then(Value::as_u64),
                )),
                None => return Err(format!("force-release archived a corrupted claim: {v}")),
            }
        } else {
            let opts = ForceOpts {
                operator: Some("chaos".into()),
                allow_live: true,
                ..ForceOpts::default()
            };
            match force_release(&self.root, key, &opts) {
                Ok(ForceOutcome::Archived {
                    previous: Some(rec),
                    ..
                }) => Some((
                    rec.holder,
                    rec.metadata.get("round").and_then(Value::as_u64),
                )),
                Ok(ForceOutcome::Archived { previous: None, .. }) => {
                    return Err("force-release archived a corrupted claim".into())
                }
                Ok(ForceOutcome::Refused(_)) => None,
                Err(e) => return Err(e.to_string()),
            }
        };
        Ok(previous)
    }
}

fn hold(rng: &mut Rng) {
    std::thread::sleep(Duration::from_micros(rng.below(2000)));
}

/// Force-release random keys (live or not) until told to stop.
fn operator() {
    let ops = Ops::new(Path::new(&env_str("W_ROOT")), env_u64("W_CLI") == 1);
    let markers = PathBuf::from(env_str("W_MARKERS"));
    let stop = markers.with_file_name("stop");
    let keys = env_u64("W_KEYS");
    let mut rng = Rng::new(env_u64("W_SEED") ^ 0xF0F0);
    let mut m = Markers::open(&markers);
    while !stop.exists() {
        let key = format!("k{}", rng.below(keys));
        let t0 = mono_ns();
        match ops.force(&key) {
            Ok(Some((holder, Some(r)))) => m.put(&format!("F {key} {holder} {r} {t0}")),
            Ok(Some((_, None))) => {
                m.put(&format!("X force {key} archived a record without a round"))
            }
            Ok(None) => {}
            Err(e) => m.put(&format!("X force {key} {e}")),
        }
        std::thread::sleep(Duration::from_micros(2000 + rng.below(6000)));
    }
}

fn spawn_worker(plan: &Plan, dir: &Path, slot: u64, gen: u64, start: u64) -> Child {
    let id = slot * 1000 + gen;
    spawn_role(
        ENTRY,
        "stress-worker",
        &[
            common_env(plan, dir),
            vec![
                ("W_ROUNDS", plan.rounds.to_string()),
                ("W_START", start.to_string()),
                ("W_ID", id.to_string()),
                ("W_SLOT", slot.to_string()),
                ("W_DIE_PCT", plan.die_pct.to_string()),
                ("W_RENEW", u8::from(plan.renew).to_string()),
            ],
        ]
        .concat(),
    )
}

/// What both the workers and the operator need to know.
fn common_env(plan: &Plan, dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("W_ROOT", dir.display().to_string()),
        ("W_MARKERS", dir.join("markers").display().to_string()),
        ("W_KEYS", plan.keys.to_string()),
        ("W_SEED", plan.seed.to_string()),
        ("W_CLI", u8::from(plan.cli).to_string()),
    ]
}

/// Run `plan` to completion; a slot whose worker died is refilled by a new
/// process (new holder, new pid) that carries on with the next round, so the
/// total work is always `workers x rounds`.
fn run(plan: Plan) -> Report {
    use std::os::unix::process::ExitStatusExt;
    let td = tempdir();
    let dir = td.path();
    let t = Instant::now();
    let mut slots: Vec<Option<(Child, u64)>> = (0..plan.workers as u64)
        .map(|s| Some((spawn_worker(&plan, dir, s, 0, 0), 0)))
        .collect();
    let op = plan
        .force
        .then(|| spawn_role(ENTRY, "stress-operator", &common_env(&plan, dir)));
    let mut failures = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(1800);
    while slots.iter().any(Option::is_some) {
        for (s, slot) in slots.iter_mut().enumerate() {
            let Some((child, gen)) = slot else { continue };
            let Ok(Some(status)) = child.try_wait() else {
                continue;
            };
            let died = dir.join(format!("died.{s}"));
            if status.signal() == Some(libc::SIGKILL) && died.exists() {
                let round: u64 = std::fs::read_to_string(&died).unwrap().parse().unwrap();
                std::fs::remove_file(&died).unwrap();
                let gen = *gen + 1;
                *slot = (round + 1 < plan.rounds)
                    .then(|| (spawn_worker(&plan, dir, s as u64, gen, round + 1), gen));
            } else {
                if !status.success() {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    }
                    failures.push(format!("worker slot {s} exited {status}: {err}"));
                }
                *slot = None;
            }
        }
        assert!(Instant::now() < deadline, "stress run did not finish");
        std::thread::sleep(Duration::from_millis(2));
    }
    if let Some(op) = op {
        std::fs::write(dir.join("stop"), b"").unwrap();
        for (_, status, err) in wait_all(vec![op], Duration::from_secs(30)) {
            if !status.success() {
                failures.push(format!("operator exited {status}: {err}"));
            }
        }
    }
    let wall = t.elapsed();
    let text = std::fs::read_to_string(dir.join("markers")).unwrap_or_default();
    let mut report = analyse(&text);
    report.violations.extend(failures);
    if !report.violations.is_empty() {
        // Keep the evidence: the temp dir is about to be removed.
        let keep = std::env::temp_dir().join(format!("claimtop-stress-markers-{}", plan.seed));
        let _ = std::fs::write(&keep, &text);
        eprintln!("markers kept at {}", keep.display());
    }

    // Whatever is left must be whole claims, and no key may be bricked: every
    // holder is dead now, so a newcomer gets each one.
    let root = root_in(dir);
    let s = sweep(&root);
    assert_eq!(s.counts.corrupted, 0, "corrupted lockfiles: {:?}", s.claims);
    assert!(
        s.hazards.is_empty(),
        "hazards after the run: {:?}",
        s.hazards
    );
    for k in 0..plan.keys {
        let key = format!("k{k}");
        match acquire(&root, &key, "newcomer", &AcquireOpts::default()) {
            Ok(AcquireOutcome::Acquired { .. }) => {}
            other => panic!("{key} is bricked after the run: {other:?}"),
        }
    }
    let events = std::fs::read_to_string(root.events_file()).unwrap_or_default();
    for l in events.lines() {
        if let Err(e) = claimtop::events::parse_event(l) {
            report
                .violations
                .push(format!("events line does not parse ({e}): {l}"));
        }
    }
    assert!(
        litter(&root.claims_dir()).is_empty(),
        "{:?}",
        litter(&root.claims_dir())
    );
    eprintln!(
        "stress {}x{} on {} keys (die {}%, renew {}, force {}): {} tenures, {} stale reclaims, \
         {} deaths while holding, {} renewals, {} force-releases ({} live holders lost their \
         claim to them), {} held-by-other answers, {} events, {} errors, {} violations, wall {:.1}s",
        plan.workers,
        plan.rounds,
        plan.keys,
        plan.die_pct,
        plan.renew,
        plan.force,
        report.tenures,
        report.reclaimed,
        report.deaths,
        report.renewals,
        report.force_released,
        report.lost_to_operator,
        report.held_by_other,
        events.lines().count(),
        report.errors,
        report.violations.len(),
        wall.as_secs_f64()
    );
    report
}

fn assert_clean(r: &Report, plan: &Plan) {
    assert!(
        r.violations.is_empty(),
        "seed {}: {} violation(s):\n{}",
        plan.seed,
        r.violations.len(),
        r.violations.join("\n")
    );
    assert_eq!(r.errors, 0);
    assert!(r.tenures > 0, "nobody ever won a claim");
}

fn seed() -> u64 {
    std::env::var("CLAIMTOP_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED)
}

#[test]
fn contending_processes_never_overlap_even_when_holders_die_mid_tenure() {
    let plan = Plan {
        workers: 6,
        rounds: 20,
        keys: 3,
        die_pct: 8,
        renew: false,
        force: false,
        seed: seed(),
        cli: false,
    };
    let r = run(plan);
    assert_clean(&r, &plan);
    assert!(
        r.deaths > 0 && r.reclaimed > 0,
        "no death was recovered from"
    );
}

#[test]
fn renewals_and_operator_force_releases_never_let_two_live_holders_overlap() {
    let plan = Plan::everything(6, 20, 5, seed() + 1, false);
    let r = run(plan);
    assert_clean(&r, &plan);
    assert!(
        r.force_released > 0,
        "the operator never force-released anything"
    );
}

#[test]
#[ignore = "heavy: run with --ignored for the README figures (16 processes x 200 rounds)"]
fn sixteen_processes_by_two_hundred_rounds_keep_mutual_exclusion() {
    let plan = Plan {
        workers: 16,
        rounds: 200,
        keys: 4,
        die_pct: 3,
        renew: false,
        force: false,
        seed: seed(),
        cli: false,
    };
    assert_clean(&run(plan), &plan);
}

#[test]
#[ignore = "heavy: run with --ignored for the README figures (16 x 200 with renewals and force-release)"]
fn sixteen_processes_by_two_hundred_rounds_with_renewals_and_force_release() {
    let plan = Plan::everything(16, 200, 3, seed() + 1, false);
    assert_clean(&run(plan), &plan);
}

/// The window this guards is between release's read (still mine) and its
/// unlink: an operator archives the claim there and a newcomer creates the
/// key, so an unguarded unlink would delete the newcomer's claim.
#[test]
fn a_release_racing_a_force_release_never_deletes_the_next_holders_claim() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let td = tempdir();
    // No audit log: its mutex would pace both threads to a few hundred
    // rounds, and the race needs tens of thousands. An events dir under a
    // regular file fails at once, and the warning it raises is silenced.
    std::fs::write(td.path().join("not-a-dir"), b"").unwrap();
    claimtop::diag::set_warning_sink(Some(Box::new(|_| {})));
    let root = Arc::new(claims::Root {
        root: td.path().to_path_buf(),
        events_dir: Some(td.path().join("not-a-dir")),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let releaser = {
        let (root, stop) = (root.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if let Ok(AcquireOutcome::Acquired { .. }) =
                    acquire(&root, "k", "releaser", &AcquireOpts::default())
                {
                    release(&root, "k", "releaser").expect("release");
                    n += 1;
                }
            }
            n
        })
    };
    let opts = ForceOpts {
        allow_live: true,
        ..ForceOpts::default()
    };
    let mut stolen = 0;
    let mut held = 0;
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(4) {
        let _ = force_release(&root, "k", &opts);
        if let Ok(AcquireOutcome::Acquired { record, .. }) =
            acquire(&root, "k", "newcomer", &AcquireOpts::default())
        {
            held += 1;
            std::thread::sleep(Duration::from_micros(300));
            match read_claim_file(&root.lockfile("k")) {
                Ok(r) if r.acquired_at == record.acquired_at && r.holder == "newcomer" => {}
                other => {
                    stolen += 1;
                    eprintln!("newcomer's claim vanished: now {other:?}");
                }
            }
            let _ = release(&root, "k", "newcomer");
        }
    }
    stop.store(true, Ordering::Relaxed);
    let releases = releaser.join().unwrap();
    eprintln!("{held} newcomer tenures against {releases} racing releases, {stolen} stolen");
    assert_eq!(stolen, 0, "a release deleted a claim it did not hold");
    assert!(held > 0 && releases > 0);
}

#[test]
fn the_real_binary_keeps_mutual_exclusion_with_deaths_renewals_and_force_release() {
    let plan = Plan::everything(6, 20, 5, seed() + 2, true);
    let r = run(plan);
    assert_clean(&r, &plan);
}

#[test]
#[ignore = "heavy: run with --ignored for the README figures (16 claimtop-driving processes x 200 rounds)"]
fn sixteen_processes_driving_the_binary_by_two_hundred_rounds_keep_mutual_exclusion() {
    let plan = Plan::everything(16, 200, 3, seed() + 3, true);
    assert_clean(&run(plan), &plan);
}
