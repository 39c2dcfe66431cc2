//! Eight holders contend for one etcd key through `claimtop run` while etcd
//! is stopped, killed or loses its leader: the scenarios behind the README's
//! fault table. Every tenure's command writes its own start and end times to
//! one shared file, so exclusion is judged from what the commands did, not
//! from what claimtop says: two tenures whose intervals intersect are an
//! overlap.
//!
//! The TTL is 60 s (the minimum), and in the stop and down scenarios one
//! holder's command is kept running through the fault, so its lease runs
//! out while etcd cannot be reached: that holder must stop its command
//! before anyone else can start one.
//!
//! Each scenario of the table takes one to three minutes of wall time and
//! measures margins, so they are ignored in the ordinary run; a quicker
//! pace of the leader kills (about 30 s) runs in CI, so that eight holders
//! meet an etcd fault there too. One scenario:
//! `cargo test --features etcd --test etcd_faults stopped_61 -- --ignored --nocapture`;
//! the whole table, each scenario in turn (`CLAIMTOP_FAULT_RUNS=N` repeats it):
//! `cargo test --features etcd --test etcd_faults the_readme_fault_table -- --ignored --nocapture`.
#![cfg(feature = "etcd")]

#[path = "../common/mod.rs"]
mod common;
#[path = "../etcd_common/mod.rs"]
mod etcd_common;

use common::{claimtop, Rng};
use etcd_common::Etcd;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod holders;
mod judge;

use holders::Holders;
use judge::{judge, Cut, Figures};

const HOLDERS: usize = 8;
const KEY: &str = "k";
const TTL: &str = "60s";

/// Contention before the fault, so the fault meets hand-offs in flight.
const WARM: Duration = Duration::from_secs(15);

/// Tenures that must begin after the fault has cleared: the key was handed
/// on again, not left stuck.
const TENURES_AFTER: usize = 10;

/// Fewer tenures than this and a scenario did not exercise exclusion.
const MIN_TENURES: usize = 30;

/// How a scenario is run around its fault.
#[derive(Debug, Clone, Copy)]
struct Pace {
    /// Contention before the fault.
    warm: Duration,
    /// Each `run`'s `--timeout` for a store call.
    timeout: &'static str,
}

/// The table's pace: the default timeout, and [`WARM`].
const TABLE: Pace = Pace {
    warm: WARM,
    timeout: "5s",
};

/// The scenarios measure margins: two at once would share two cores and
/// skew each other, whatever `--test-threads` says.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// One line of the shared file: `s` start, `e` end, `l` took the long
/// token; the time in ns; the tenure's tag (`w3.17`).
#[derive(Debug, Clone)]
struct Line {
    kind: char,
    ns: i128,
    tag: String,
}

fn parse(text: &str) -> Vec<Line> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let kind = f.next()?.chars().next()?;
            let ns = f.next()?.parse().ok()?;
            let tag = f.next()?.to_string();
            Some(Line { kind, ns, tag })
        })
        .collect()
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as i128
}

/// What a scenario does to etcd while the holders contend.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// SIGSTOP the only member for this long, with one command running
    /// through it.
    Stop(Duration),
    /// SIGKILL the only member, restart it on the same ports and data after
    /// this long, with hand-offs in flight.
    KillRestart(Duration),
    /// SIGKILL the only member and keep it down this long, with one
    /// command running through it.
    Down(Duration),
    /// Three members: SIGKILL the leader, restart it after `down`, let
    /// the holders run for `up`; twice.
    LeaderKills { down: Duration, up: Duration },
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Stop(d) if d.as_secs() == 61 => "etcd SIGSTOPped 61 s",
            Fault::Stop(_) => "etcd SIGSTOPped 75 s",
            Fault::KillRestart(_) => "etcd kill -9 + restart",
            Fault::Down(_) => "etcd down 70 s",
            Fault::LeaderKills { .. } => "3 members, 2 leader kills",
        }
    }

    /// A held-through command outlives its lease here, so its `run` must
    /// have stopped it and said the claim was lost.
    fn outlives_the_lease(self) -> bool {
        matches!(self, Fault::Stop(_) | Fault::Down(_))
    }
}

/// Run one scenario and check it: no two tenures intersect, enough
/// tenures happened, and the key was handed on after the fault.
fn scenario(fault: Fault, seed: u64, pace: Pace) -> Option<Figures> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let members = if matches!(fault, Fault::LeaderKills { .. }) {
        3
    } else {
        1
    };
    let mut etcd = Etcd::cluster(members)?;
    let holders = Holders::start(&etcd.url("/faults"), seed, pace.timeout);
    std::thread::sleep(pace.warm);
    let long = match fault {
        Fault::Stop(_) | Fault::Down(_) => Some(holders.hold_long()),
        _ => None,
    };
    let fault_at = now_ns();
    match fault {
        Fault::Stop(d) => {
            etcd.members[0].pause();
            std::thread::sleep(d);
            etcd.members[0].signal(libc::SIGCONT);
        }
        Fault::KillRestart(d) | Fault::Down(d) => {
            etcd.members[0].kill();
            std::thread::sleep(d);
            etcd.start_again(0);
        }
        Fault::LeaderKills { down, up } => {
            for _ in 0..2 {
                let leader = etcd.leader();
                etcd.members[leader].kill();
                std::thread::sleep(down);
                etcd.start_again(leader);
                std::thread::sleep(up);
            }
        }
    }
    let cleared = now_ns();
    eprintln!("[{}] fault cleared; long tenure: {long:?}", fault.name());
    if let Some(tag) = &long {
        holders.release(tag);
    }
    // A lease that etcd refreshed on restart keeps the key for up to a
    // TTL more; give it that, and the hand-offs after it.
    holders.await_tenures_after(cleared, TENURES_AFTER, Duration::from_secs(150));
    let (lines, codes, dir) = holders.finish();

    let figures = judge(fault.name(), &lines, &codes, long.as_deref(), fault_at);
    println!("{}", figures.line());
    let keep = |why: &str| -> String {
        // The evidence outlives the failed test.
        let kept = dir.keep();
        format!(
            "{why}; the timestamps and each holder's stderr are in {}",
            kept.display()
        )
    };
    if !figures.overlaps.is_empty() {
        panic!("{}: {:?}", keep("two holders at once"), figures.overlaps);
    }
    if figures.tenures < MIN_TENURES {
        panic!("{}", keep(&format!("only {} tenures", figures.tenures)));
    }
    if let (true, Some(Cut { code, .. })) = (fault.outlives_the_lease(), &figures.cut) {
        if *code != 4 {
            panic!(
                "{}",
                keep(&format!(
                    "the held-through command outlived its lease, yet run exited {code}, not 4 (lost)"
                ))
            );
        }
    }
    Some(figures)
}

fn seed() -> u64 {
    std::env::var("CLAIMTOP_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| now_ns() as u64)
}

fn one(fault: Fault) {
    let seed = seed();
    eprintln!("seed {seed} (CLAIMTOP_FAULT_SEED repeats the holders' timings)");
    scenario(fault, seed, TABLE);
}

const FAULTS: [Fault; 5] = [
    Fault::Stop(Duration::from_secs(61)),
    Fault::Stop(Duration::from_secs(75)),
    Fault::KillRestart(Duration::from_secs(5)),
    Fault::Down(Duration::from_secs(70)),
    Fault::LeaderKills {
        down: Duration::from_secs(5),
        up: Duration::from_secs(10),
    },
];

#[test]
#[ignore = "figure: 8 holders while etcd is SIGSTOPped 61 s, 1 s past the lease (about 2 min); run with --ignored"]
fn eight_holders_never_overlap_while_etcd_is_stopped_61_s() {
    one(FAULTS[0]);
}

#[test]
#[ignore = "figure: 8 holders while etcd is SIGSTOPped 75 s, well past the lease (about 2 min); run with --ignored"]
fn eight_holders_never_overlap_while_etcd_is_stopped_75_s() {
    one(FAULTS[1]);
}

#[test]
#[ignore = "figure: 8 holders while etcd is killed -9 and restarted on its data (up to 2 min); run with --ignored"]
fn eight_holders_never_overlap_when_etcd_is_killed_and_restarted() {
    one(FAULTS[2]);
}

#[test]
#[ignore = "figure: 8 holders while etcd is down 70 s, past the lease (about 3 min); run with --ignored"]
fn eight_holders_never_overlap_while_etcd_is_down_70_s() {
    one(FAULTS[3]);
}

#[test]
#[ignore = "figure: 8 holders on 3 members while the leader is killed twice (about 1 min); run with --ignored"]
fn eight_holders_never_overlap_while_the_leader_of_three_is_killed_twice() {
    one(FAULTS[4]);
}

/// The one scenario CI runs: eight `run` holders on three members while
/// the leader is killed twice, at a quicker pace than the table's (5 s of
/// contention first, each leader down 3 s, then 4 s before the next), and
/// judged from what the commands wrote: no two tenures intersect, at least
/// 30 happened, and 10 began after the fault cleared.
#[test]
fn eight_holders_never_overlap_on_three_members_while_the_leader_is_killed_twice() {
    let seed = seed();
    eprintln!("seed {seed} (CLAIMTOP_FAULT_SEED repeats the holders' timings)");
    let fault = Fault::LeaderKills {
        down: Duration::from_secs(3),
        up: Duration::from_secs(4),
    };
    let started = Instant::now();
    let pace = Pace {
        warm: Duration::from_secs(5),
        timeout: "15s",
    };
    if scenario(fault, seed, pace).is_some() {
        println!("in {:.1} s", started.elapsed().as_secs_f64());
    }
}

/// Every scenario in turn (`CLAIMTOP_FAULT_RUNS` times each), then the
/// README's rows.
#[test]
#[ignore = "figure: the README's etcd fault table, every scenario in turn (about 10 min per round); run with --ignored"]
fn the_readme_fault_table_every_scenario_in_turn() {
    let runs: usize = std::env::var("CLAIMTOP_FAULT_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let seed = seed();
    eprintln!("seed {seed} (CLAIMTOP_FAULT_SEED repeats the holders' timings)");
    let mut rows = Vec::new();
    for round in 0..runs {
        for (i, f) in FAULTS.iter().enumerate() {
            let seed = seed.wrapping_add((round * FAULTS.len() + i) as u64);
            let Some(fig) = scenario(*f, seed, TABLE) else {
                return;
            };
            rows.push(fig);
        }
    }
    println!("| scenario | tenures | overlaps | min gap | the command held through the fault |");
    println!("|---|---|---|---|---|");
    for f in &rows {
        let cut = f.cut.as_ref().map_or("—".into(), Cut::said);
        println!(
            "| {} | {} | {} | {:.1} ms | {cut} |",
            f.name,
            f.tenures,
            f.overlaps.len(),
            f.min_gap_ms
        );
    }
}
