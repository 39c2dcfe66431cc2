//! Does a followed store ever miss a change? Writers hammer every member
//! of a store (acquire, release, renew, force-release, a claim handed
//! from one holder to another, over many keys) while its faces follow it
//! with the mirror's safety re-list turned off; then the writers stop and
//! each face must equal a fresh listing within a few seconds. What the
//! feed lost would stay lost: only the safety net would have repaired it.
//!
//! Two faces follow at once: the dashboard's (every member on a lane of
//! its own, [`spawn_all`], its updates applied as a face applies them)
//! and the publisher's (one driver per member, each waited on in turn,
//! [`Driver::wait`]).
#![allow(dead_code)]

use claimtop::claims::{now_ms, AcquireOpts, ClaimRecord, ClaimState, Classifier, ForceOpts};
use claimtop::store::backend::list_whole;
use claimtop::store::drive::{spawn_all, DriveOpts, Driver, Input, Update, Want};
use claimtop::store::file::feed::DEBOUNCE;
use claimtop::store::{Backend, Store};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One run's shape.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Writer threads per member that takes claims.
    pub writers: usize,
    /// Keys each member's writers share.
    pub keys: usize,
    /// How long they write each round.
    pub write_for: Duration,
    /// Rounds, each with faces of its own.
    pub rounds: u64,
    /// How long the faces have, once the writers stopped, to show what a
    /// fresh listing shows.
    pub settle_within: Duration,
    /// The writers' generator's seed.
    pub seed: u64,
    /// Have every lane list again this often while the writers write
    /// (as `doctor --fix` does): a listing that skips what its stamps
    /// say is unchanged races the writes too.
    pub relist_every: Option<Duration>,
}

impl Plan {
    /// The loss tests' hammer: 300 keys each member's writers share, and
    /// every face to match a fresh listing within 5 s of the writers'
    /// stop; no extra listing.
    pub fn hammer(writers: usize, write_for: Duration, rounds: u64, seed: u64) -> Plan {
        Plan {
            writers,
            keys: 300,
            write_for,
            rounds,
            settle_within: Duration::from_secs(5),
            seed,
            relist_every: None,
        }
    }
}

/// What a face shows of one claim: its state and its record.
type Seen = (ClaimState, Option<ClaimRecord>);
/// A face's every row: (member, key) → what it shows.
type Rows = BTreeMap<(u16, String), Seen>;

/// What each face missed, in words; empty when both matched a fresh
/// listing in time. With how many ops the writers made.
#[derive(Debug, Default)]
pub struct Outcome {
    pub ops: u64,
    pub op_errors: u64,
    pub missed: Vec<String>,
}

impl Outcome {
    /// Say what the writers did, and fail on any change a face lost.
    pub fn nothing_lost(&self, what: &str) {
        eprintln!("{} ops ({} failed) in {what}", self.ops, self.op_errors);
        assert!(
            self.missed.is_empty(),
            "a change was lost: {:#?}",
            self.missed
        );
    }
}

/// [`run`] `plan` over `store`, and fail on a change lost or on writers
/// that hardly wrote.
pub fn hammered(store: &Arc<Store>, plan: Plan) {
    let out = run(store, plan);
    out.nothing_lost(&format!("{} rounds of {:?}", plan.rounds, plan.write_for));
    assert!(out.ops > 100, "the writers hardly wrote: {out:?}");
}

/// A heavy variant's rounds, round length and seed: from
/// `CLAIMTOP_STRESS_ROUNDS`, `CLAIMTOP_STRESS_MS` and `CLAIMTOP_STRESS_SEED`
/// when set, else these rounds and ms and a seed from the clock.
pub fn from_env(rounds: u64, ms: u64) -> (u64, Duration, u64) {
    fn var(name: &str) -> Option<u64> {
        std::env::var(name).ok().and_then(|s| s.parse().ok())
    }
    (
        var("CLAIMTOP_STRESS_ROUNDS").unwrap_or(rounds),
        Duration::from_millis(var("CLAIMTOP_STRESS_MS").unwrap_or(ms)),
        var("CLAIMTOP_STRESS_SEED").unwrap_or_else(|| claimtop::claims::now_ms() as u64),
    )
}

/// Run `plan` over `store`: round after round, writers start, faces start
/// a moment later (their first listings race the writes), the writers
/// stop, and the faces must match a fresh listing. A change lost matters
/// only when it is its key's last, so each round is short and its keys
/// many: most keys change a few times, and a face started anew each round
/// races the writers again. Stops at the first round that missed.
pub fn run(store: &Arc<Store>, plan: Plan) -> Outcome {
    run_apart(store, store, plan, &mut |_| {})
}

/// [`run`] with the faces following `faces` and the writers writing (and
/// the fresh listings read) through `writes`: the same members, in the
/// same order, reached another way (through a connection a test can cut).
/// `midway` is called halfway through each round's writing, with the
/// round's number: what it does to the faces' way to the store (a cut, a
/// compaction) must not lose a change.
pub fn run_apart(
    faces: &Arc<Store>,
    writes: &Arc<Store>,
    plan: Plan,
    midway: &mut dyn FnMut(u64),
) -> Outcome {
    let mut out = Outcome::default();
    let mut rng = Rng(plan.seed | 1);
    for round in 0..plan.rounds {
        let lead = Duration::from_millis(rng.below(150));
        let stores = (faces, writes);
        let missed = one_round(stores, plan, round, lead, midway, &mut out);
        if !missed.is_empty() {
            let at = format!("round {round} (faces started {lead:?} into it)");
            out.missed
                .extend(missed.into_iter().map(|m| format!("{at}: {m}")));
            break;
        }
    }
    out
}

fn one_round(
    (faces, writes): (&Arc<Store>, &Arc<Store>),
    plan: Plan,
    round: u64,
    lead: Duration,
    midway: &mut dyn FnMut(u64),
    out: &mut Outcome,
) -> Vec<String> {
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let seed = plan
        .seed
        .wrapping_add(round.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    // The writers start first: the faces' first listings race them.
    let writers = start_writers(writes, plan, seed, &stop, &ops, &errors);
    std::thread::sleep(lead);
    let (tx, rx) = channel();
    let opts = DriveOpts {
        tick_ms: 100,
        words: false,
        debounce: Some(DEBOUNCE),
        safety_net: false,
    };
    let lanes = spawn_all(faces, opts, tx).expect("the lanes");
    let waiter = start_waiter((faces, writes), plan, &stop);
    let mut face = Rows::new();
    let mut heard = Heard::default();
    let half = Instant::now() + plan.write_for / 2;
    let mut relisted = Instant::now();
    let mut write = |face: &mut Rows, heard: &mut Heard, until: Instant| {
        while Instant::now() < until {
            pump(&rx, face, heard, Duration::from_millis(20));
            if plan.relist_every.is_some_and(|e| relisted.elapsed() >= e) {
                relisted = Instant::now();
                for inbox in &lanes.inboxes {
                    let _ = inbox.send(Input::Relist);
                }
            }
        }
    };
    write(&mut face, &mut heard, half);
    midway(round);
    write(&mut face, &mut heard, half + plan.write_for / 2);
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().expect("a writer");
    }
    let settled = Instant::now() + plan.settle_within;
    let mut missed = Vec::new();
    loop {
        pump(&rx, &mut face, &mut heard, Duration::from_millis(250));
        let truth = listed(writes);
        if face == truth {
            break;
        }
        if Instant::now() >= settled {
            let (d, h) = (diff(&face, &truth), heard.words());
            let late = caught_up_late(&rx, &mut face, &mut heard, writes);
            missed.push(format!("the lanes' face: {d} (it heard: {h}); {late}"));
            break;
        }
    }
    drop(lanes);
    if let Err(why) = waiter.join().expect("the waiting face") {
        missed.push(format!("the waited drivers: {why}"));
    }
    out.ops += ops.load(Ordering::SeqCst);
    out.op_errors += errors.load(Ordering::SeqCst);
    missed
}

/// What a face heard of each member beside its rows (its listings, its
/// link's last word), for a failure to tell.
#[derive(Default)]
struct Heard {
    wholes: BTreeMap<u16, u32>,
    link: BTreeMap<u16, Vec<String>>,
}

impl Heard {
    fn words(&self) -> String {
        let mut out = Vec::new();
        for (m, n) in &self.wholes {
            let link = self.link.get(m).map(|l| l.join(", ")).unwrap_or_default();
            out.push(format!("member {m}: {n} listings, its link said [{link}]"));
        }
        out.join("; ")
    }
}

/// Take what the lanes say for `wait` (then whatever else is there) into
/// `face`, as the dashboard does: a whole listing replaces its member's
/// rows, a row that went is dropped.
fn pump(
    rx: &std::sync::mpsc::Receiver<Update>,
    face: &mut Rows,
    heard: &mut Heard,
    wait: Duration,
) {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let u = match rx.recv_timeout(left) {
            Ok(u) => u,
            Err(RecvTimeoutError::Timeout) => return,
            Err(RecvTimeoutError::Disconnected) => panic!("the lanes stopped"),
        };
        let at = u.at.0;
        if let Some(link) = u.facts.and_then(|f| f.link) {
            // What the probe says is said every second: its changes only.
            let words: String = format!("{link:?}").chars().take(60).collect();
            let said = heard.link.entry(at).or_default();
            if said.last() != Some(&words) {
                said.push(words);
            }
        }
        let Some(d) = u.delta else { continue };
        if d.whole.is_some() {
            *heard.wholes.entry(at).or_default() += 1;
            face.retain(|(m, _), _| *m != at);
        }
        for row in d.rows {
            let key = (at, row.status.key.clone());
            match row.status.state {
                ClaimState::Free => face.remove(&key),
                state => face.insert(key, (state, row.status.record.clone())),
            };
        }
    }
}

/// Whether a face that missed its time catches up later (slow) or never
/// (lost), in words: it is given [`LATE`] more.
fn caught_up_late(
    rx: &std::sync::mpsc::Receiver<Update>,
    face: &mut Rows,
    heard: &mut Heard,
    writes: &Store,
) -> String {
    let began = Instant::now();
    while began.elapsed() < LATE {
        pump(rx, face, heard, Duration::from_millis(500));
        if *face == listed(writes) {
            return format!("it caught up {:?} later", began.elapsed());
        }
    }
    format!(
        "still behind {LATE:?} later: {}",
        diff(face, &listed(writes))
    )
}

/// How much longer a face that missed its time is watched.
const LATE: Duration = Duration::from_secs(20);

/// Every member listed afresh, as the faces should show it.
fn listed(store: &Store) -> Rows {
    let mut rows = Rows::new();
    for m in store.members() {
        let mut c = Classifier::new(now_ms());
        let l = list_whole(m.backend(), &mut c).expect("a fresh listing");
        for s in l.sweep.claims {
            rows.insert((m.ix.0, s.key.clone()), (s.state, s.record));
        }
    }
    rows
}

/// Where `face` and `truth` differ, in words (the first few).
fn diff(face: &Rows, truth: &Rows) -> String {
    let mut out = Vec::new();
    for (k, t) in truth {
        match face.get(k) {
            None => out.push(format!("{k:?} missing (is {:?})", t.0)),
            Some(f) if f != t => out.push(format!(
                "{k:?} shows {:?} held by {:?} at {:?}, is {:?} by {:?} at {:?}",
                f.0,
                f.1.as_ref().map(|r| &r.holder),
                f.1.as_ref().map(|r| r.acquired_at),
                t.0,
                t.1.as_ref().map(|r| &r.holder),
                t.1.as_ref().map(|r| r.acquired_at),
            )),
            Some(_) => {}
        }
    }
    for k in face.keys().filter(|k| !truth.contains_key(*k)) {
        out.push(format!("{k:?} shown, but free"));
    }
    let mut by_member: BTreeMap<u16, usize> = BTreeMap::new();
    for (m, _) in truth.keys().chain(face.keys()) {
        by_member.entry(*m).or_default();
    }
    for k in truth.keys().chain(face.keys()) {
        if face.get(k) != truth.get(k) {
            *by_member.entry(k.0).or_default() += 1;
        }
    }
    by_member.retain(|_, n| *n > 0);
    let n = out.len();
    out.truncate(8);
    format!(
        "{n} rows differ (by member {by_member:?}): {}",
        out.join("; ")
    )
}

/// The publisher's way of following: one driver per member, each waited
/// on in turn, until the writers stop; then it has `settle_within` to
/// match a fresh listing.
fn start_waiter(
    (faces, writes): (&Arc<Store>, &Arc<Store>),
    plan: Plan,
    stop: &Arc<AtomicBool>,
) -> JoinHandle<Result<(), String>> {
    let (store, writes, stop) = (Arc::clone(faces), Arc::clone(writes), Arc::clone(stop));
    std::thread::spawn(move || {
        let opts = DriveOpts {
            words: false,
            safety_net: false,
            ..DriveOpts::default()
        };
        let mut drivers: Vec<Driver<'static>> = store
            .members()
            .iter()
            .map(|m| Driver::new(m, None, Want::Whole { head: 0 }, opts, now_ms()))
            .collect();
        let mut settled = None;
        loop {
            for d in &mut drivers {
                // A failed read is retried at the next round, as the
                // publisher's is.
                let _ = d.wait(Duration::from_millis(20), now_ms());
            }
            if !stop.load(Ordering::SeqCst) {
                continue;
            }
            let by = *settled.get_or_insert_with(|| Instant::now() + plan.settle_within);
            let shown: Rows = drivers
                .iter()
                .flat_map(|d| {
                    let at = d.at().0;
                    d.rows()
                        .map(move |s| ((at, s.key.clone()), (s.state, s.record.clone())))
                })
                .collect();
            let truth = listed(&writes);
            if shown == truth {
                return Ok(());
            }
            if Instant::now() >= by {
                return Err(diff(&shown, &truth));
            }
        }
    })
}

/// `plan.writers` threads on each member that takes claims, each making
/// random ops on the member's `plan.keys` keys until `stop`.
fn start_writers(
    store: &Arc<Store>,
    plan: Plan,
    seed: u64,
    stop: &Arc<AtomicBool>,
    ops: &Arc<AtomicU64>,
    errors: &Arc<AtomicU64>,
) -> Vec<JoinHandle<()>> {
    let mut out = Vec::new();
    for m in store
        .members()
        .iter()
        .filter(|m| m.backend().takes_claims())
    {
        for w in 0..plan.writers {
            let member = m.shared();
            let seed = seed ^ ((u64::from(m.ix.0) << 32) | w as u64);
            let (stop, ops, errors) = (Arc::clone(stop), Arc::clone(ops), Arc::clone(errors));
            out.push(std::thread::spawn(move || {
                let mut rng = Rng(seed | 1);
                while !stop.load(Ordering::SeqCst) {
                    let failed = one_op(&*member, &mut rng, w, plan.keys).is_err();
                    ops.fetch_add(1, Ordering::Relaxed);
                    if failed {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
    }
    out
}

/// One random op on one random key, as holder `w` (or another writer's
/// holder, for a hand-over). Refusals (held, not yours) are ops too.
fn one_op(
    b: &dyn Backend,
    rng: &mut Rng,
    w: usize,
    keys: usize,
) -> Result<(), claimtop::store::StoreError> {
    let key = format!("stress/{:03}", rng.below(keys as u64));
    let me = format!("writer-{w}");
    let ttl = AcquireOpts {
        ttl_ms: Some(600_000),
        ..AcquireOpts::default()
    };
    match rng.below(100) {
        0..=34 => b.acquire(&key, &me, &ttl).map(drop),
        35..=59 => b.release(&key, &me, None).map(drop),
        60..=74 => b
            .renew(&key, &me, 300_000 + rng.below(300_000) as i64, None)
            .map(drop),
        75..=84 => {
            let opts = ForceOpts {
                allow_live: true,
                operator: Some("stress".into()),
                ..ForceOpts::default()
            };
            b.force_release(&key, &opts).map(drop)
        }
        _ => {
            // Handed over: released by whoever holds it, taken at once by
            // another holder (a new tenure right after the last one).
            let other = format!("writer-{}", rng.below(8));
            let _ = b.force_release(
                &key,
                &ForceOpts {
                    allow_live: true,
                    ..ForceOpts::default()
                },
            )?;
            b.acquire(&key, &other, &ttl).map(drop)
        }
    }
}

/// xorshift64*: the writers' dice, reproducible from the plan's seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}
