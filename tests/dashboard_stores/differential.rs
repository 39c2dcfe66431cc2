//! Differential: a random sequence of what happens to claims — acquire,
//! release, renew, force-release, a holder's death, a corrupt write, a
//! killed recoverer's mutex, a TTL running out — each done as it happens
//! in the wild (the CLI, another writer, `kill`), on a file root and on
//! etcd (the steps each has). After every step the dashboard's header
//! counts and hazard count, and its rows, must come to equal `list
//! --json`'s counts and claims and `doctor --json`'s hazards within a few
//! seconds.
//!
//! The seed is printed, and named in any failure: `CLAIMTOP_DIFF_SEED=N`
//! replays a sequence, `CLAIMTOP_DIFF_STEPS=N` makes it longer (the
//! default keeps each store's run well under a minute).

use crate::backend::{claims_of, now, Backend, Has};
use crate::common::{dead_pid, Rng, Sleeper};
use crate::screen::{settle, Dash};

/// Steps per run unless `CLAIMTOP_DIFF_STEPS` says otherwise.
const STEPS: usize = 40;
/// The keys a run plays with: few, so steps meet the same keys often.
const KEYS: [&str; 5] = ["d-alpha", "d-bravo", "d-charlie", "d-delta", "d-echo"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Acquire,
    Release,
    Renew,
    ForceRelease,
    HolderDies,
    CorruptWrite,
    MutexCorpse,
    TtlExpiry,
}

const ALL: [Step; 8] = [
    Step::Acquire,
    Step::Release,
    Step::Renew,
    Step::ForceRelease,
    Step::HolderDies,
    Step::CorruptWrite,
    Step::MutexCorpse,
    Step::TtlExpiry,
];

impl Step {
    /// Does `b` have this step? Only a file root has recovery mutexes.
    fn on(self, b: &Backend) -> bool {
        self != Step::MutexCorpse || b.has(Has::Mutexes)
    }
}

/// The live processes holding claims (killed ones are dropped, which
/// reaps them).
struct Holders(Vec<Sleeper>);

impl Holders {
    fn any(&mut self, rng: &mut Rng) -> u32 {
        if self.0.len() < 3 {
            self.0.push(Sleeper::spawn());
        }
        self.0[rng.below(self.0.len() as u64) as usize].pid()
    }
}

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn pick<'a, T>(rng: &mut Rng, from: &'a [T]) -> Option<&'a T> {
    (!from.is_empty()).then(|| &from[rng.below(from.len() as u64) as usize])
}

/// Do `step` to `b`; what was done, in words (for a failure's message).
fn apply(step: Step, b: &Backend, rng: &mut Rng, holders: &mut Holders) -> String {
    let key = *pick(rng, &KEYS).unwrap_or(&KEYS[0]);
    let listed = claims_of(&b.list());
    let held: Vec<_> = listed.iter().filter(|(_, _, h)| !h.is_empty()).collect();
    match step {
        Step::Acquire => {
            let holder = format!("pty:w{}", rng.below(3));
            let pid = holders.any(rng);
            let pid_s = pid.to_string();
            // Held by another (3) and a corrupted claim in the way (1) are
            // answers too.
            let args = [
                "acquire", key, "--holder", &holder, "--ttl", "5m", "--pid", &pid_s,
            ];
            let out = b.must(&args, &[0, 1, 3]);
            format!(
                "acquire {key} by {holder} pid {pid} (exit {:?})",
                out.status.code()
            )
        }
        Step::Release | Step::Renew => {
            let Some((k, _, holder)) = pick(rng, &held) else {
                return format!("{step:?}: nothing held");
            };
            let args: Vec<&str> = match step {
                Step::Release => vec!["release", k, "--holder", holder],
                _ => vec!["renew", k, "--holder", holder, "--ttl", "5m"],
            };
            let out = b.must(&args, &[0, 1, 3]);
            format!("{args:?} (exit {:?})", out.status.code())
        }
        Step::ForceRelease => {
            let Some((k, state, _)) = pick(rng, &listed) else {
                return "force-release: nothing listed".into();
            };
            let out = b.must(&["force-release", k, "--allow-live"], &[0, 3]);
            format!("force-release {k} ({state}, exit {:?})", out.status.code())
        }
        Step::HolderDies => {
            if holders.0.is_empty() {
                return "no holder to kill".into();
            }
            let i = rng.below(holders.0.len() as u64) as usize;
            let mut gone = holders.0.swap_remove(i);
            let pid = gone.pid();
            gone.kill();
            format!("holder pid {pid} killed")
        }
        Step::CorruptWrite => {
            if rng.chance(50) {
                b.plant_corrupted(key);
                format!("garbage written as {key}")
            } else {
                b.plant_unreadable(key);
                format!("a too-costly record written as {key}")
            }
        }
        Step::MutexCorpse => {
            b.plant_corpse(key);
            format!("a killed recoverer's mutex on {key}")
        }
        Step::TtlExpiry => {
            if b.has(Has::Stale) {
                // Runs out by itself a moment from now, under the watch.
                b.plant_expiring(key, dead_pid(), 1_500);
                format!("{key} written with a dead holder and 1.5 s of TTL")
            } else {
                let Some((k, _, _)) = pick(rng, &held) else {
                    return "TTL expiry: nothing held".into();
                };
                b.expire(k);
                format!("{k}'s lease ran out")
            }
        }
    }
}

pub fn dashboard_list_and_doctor_agree_after_every_step(b: Backend) {
    let seed = env_num("CLAIMTOP_DIFF_SEED").unwrap_or_else(|| now() as u64);
    let steps = env_num("CLAIMTOP_DIFF_STEPS").map_or(STEPS, |n| n as usize);
    eprintln!(
        "differential on {}: seed {seed}, {steps} steps (replay with CLAIMTOP_DIFF_SEED={seed})",
        b.name()
    );
    let Some(dash) = Dash::start(&b) else { return };
    let mut rng = Rng::new(seed);
    let mut holders = Holders(Vec::new());
    let steps_here: Vec<Step> = ALL.into_iter().filter(|s| s.on(&b)).collect();
    let mut done: Vec<String> = Vec::new();
    let started = std::time::Instant::now();
    for i in 0..steps {
        let step = *pick(&mut rng, &steps_here).unwrap_or(&Step::Acquire);
        done.push(apply(step, &b, &mut rng, &mut holders));
        if let Err(d) = settle(&b, &dash) {
            let (f, screen) = *d;
            panic!(
                "{}: seed {seed} (replay with CLAIMTOP_DIFF_SEED={seed}): after step {i} the \
                 faces disagree.\nsteps:\n  {}\n header {:?}\n list   {:?}\n doctor {} {:?}\n \
                 rows   {:?}\n listed {:?}\n{screen}",
                b.name(),
                done.join("\n  "),
                f.header,
                f.list_counts,
                f.doctor.len(),
                f.doctor,
                f.rows,
                f.list_rows
            );
        }
    }
    eprintln!(
        "differential on {}: {steps} steps agreed in {:.1} s",
        b.name(),
        started.elapsed().as_secs_f64()
    );
    dash.quit();
}
