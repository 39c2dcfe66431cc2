//! Simulated agents: each holds one anchor claim for its whole life and
//! churns through work keys on a 1–4 s schedule, so the dashboard always has
//! live rows, moving countdowns and a steady events stream. A crasher keeps
//! dying while holding a key that a healthy worker then reclaims.

use super::fixtures::{dead_pid, metadata};
use crate::claims::{acquire, release, renew, AcquireOpts, AcquireOutcome, ClaimError, Root};
use crate::diag::warn;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const MINUTE_MS: i64 = 60_000;

/// Sleep slice while waiting: how long a dropped Demo waits for its workers.
const SLICE: Duration = Duration::from_millis(50);

/// A work key a worker may take, with what it would write down about it.
struct Job {
    key: &'static str,
    reason: &'static str,
    meta: fn(u64) -> Value,
}

struct Spec {
    holder: &'static str,
    harness: &'static str,
    anchor: &'static str,
    anchor_reason: &'static str,
    /// None = PID-bound anchor (lives as long as this process).
    anchor_ttl_ms: Option<i64>,
    job_ttl_ms: Option<i64>,
    jobs: &'static [Job],
}

/// Keys are shared between some workers on purpose: a worker that finds its
/// job taken gets "held by another", as a real fleet does.
const CAST: &[Spec] = &[
    Spec {
        holder: "codex:worker-3",
        harness: "codex",
        anchor: "node:build-cache",
        anchor_reason: "warm the build cache for the release branch",
        anchor_ttl_ms: Some(10 * MINUTE_MS),
        job_ttl_ms: Some(15 * MINUTE_MS),
        jobs: &[
            Job {
                key: "dispatch:pr-4821",
                reason: "fix failing integration test",
                meta: |n| json!({"pr": 4821, "attempt": n}),
            },
            Job {
                key: "dispatch:pr-4830",
                reason: "address review comments",
                meta: |n| json!({"pr": 4830, "attempt": n}),
            },
        ],
    },
    Spec {
        holder: "claude:session-ab12",
        harness: "claude",
        anchor: "session:ab12",
        anchor_reason: "interactive session",
        anchor_ttl_ms: None,
        job_ttl_ms: Some(5 * MINUTE_MS),
        jobs: &[
            Job {
                key: "reconcile:billing",
                reason: "reconcile invoices against the ledger",
                meta: |n| json!({"batch": n, "rows": 1200 + n * 37}),
            },
            Job {
                key: "dispatch:pr-4821",
                reason: "pair on the flaky test",
                meta: |n| json!({"pr": 4821, "attempt": n}),
            },
        ],
    },
    Spec {
        holder: "gemini:cli-3e90",
        harness: "gemini",
        anchor: "node:lint-runner",
        anchor_reason: "lint and format every open PR",
        anchor_ttl_ms: Some(3 * MINUTE_MS),
        job_ttl_ms: None,
        jobs: &[
            Job {
                key: "dispatch:pr-4833",
                reason: "bump dependencies",
                meta: |n| json!({"pr": 4833, "crates": n % 7 + 1}),
            },
            Job {
                key: "reconcile:index-shards",
                reason: "rebuild search index shards",
                meta: |n| json!({"shard": n % 16}),
            },
        ],
    },
    Spec {
        holder: "opencode:run-5b7d",
        harness: "opencode",
        anchor: "session:5b7d",
        anchor_reason: "long-running refactor",
        anchor_ttl_ms: Some(20 * MINUTE_MS),
        job_ttl_ms: Some(2 * MINUTE_MS),
        jobs: &[
            Job {
                key: "reconcile:index-shards",
                reason: "verify index shards",
                meta: |n| json!({"shard": n % 16, "verify": true}),
            },
            Job {
                key: "dispatch:pr-4830",
                reason: "split the PR in two",
                meta: |n| json!({"pr": 4830, "part": n % 2 + 1}),
            },
        ],
    },
    Spec {
        holder: "claude:session-9d0e",
        harness: "claude",
        anchor: "dispatch:pr-4842",
        anchor_reason: "write the migration guide",
        anchor_ttl_ms: Some(30 * MINUTE_MS),
        job_ttl_ms: None,
        jobs: &[Job {
            key: "reconcile:billing",
            reason: "double-check the billing totals",
            meta: |n| json!({"batch": n}),
        }],
    },
];

/// Small deterministic generator: schedules need variety, not quality.
struct Rng(u64);

impl Rng {
    fn seeded(salt: u64) -> Rng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Rng((nanos ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// A pause of 1–4 s.
    fn pause(&mut self) -> Duration {
        Duration::from_millis(1000 + self.below(3000))
    }
}

/// Sleep `d` in slices; false when the demo is stopping.
fn nap(stop: &AtomicBool, d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(SLICE.min(until.saturating_duration_since(Instant::now())));
    }
    !stop.load(Ordering::Relaxed)
}

fn swallow<T>(who: &str, what: &str, res: Result<T, ClaimError>) -> Option<T> {
    res.map_err(|e| warn(&format!("demo {who}: {what}: {e}")))
        .ok()
}

pub(super) struct Worker {
    root: Root,
    spec: &'static Spec,
    rng: Rng,
    /// The job key currently held, if any.
    job: Option<&'static Job>,
    tick: u64,
}

/// One worker per cast entry.
pub(super) fn cast(root: &Root) -> Vec<Worker> {
    CAST.iter()
        .enumerate()
        .map(|(i, spec)| Worker {
            root: root.clone(),
            spec,
            rng: Rng::seeded(i as u64 + 1),
            job: None,
            tick: 0,
        })
        .collect()
}

impl Worker {
    pub(super) fn name(&self) -> &'static str {
        self.spec.holder
    }

    fn opts(&self, ttl_ms: Option<i64>, reason: &str, meta: Value) -> AcquireOpts {
        AcquireOpts {
            pid: None,
            ttl_ms,
            reason: Some(reason.into()),
            metadata: metadata(meta),
            harness: Some(self.spec.harness.into()),
            ..AcquireOpts::default()
        }
    }

    /// Take the anchor claim (synchronously, before the thread starts).
    pub(super) fn begin(&mut self) {
        let s = self.spec;
        let opts = self.opts(
            s.anchor_ttl_ms,
            s.anchor_reason,
            json!({"started_by": "demo"}),
        );
        swallow(
            s.holder,
            "acquire",
            acquire(&self.root, s.anchor, s.holder, &opts),
        );
    }

    pub(super) fn run(&mut self, stop: &AtomicBool) {
        loop {
            let pause = self.rng.pause();
            if !nap(stop, pause) {
                return;
            }
            self.step();
        }
    }

    fn step(&mut self) {
        self.tick += 1;
        let s = self.spec;
        let roll = self.rng.below(10);
        match self.job {
            // Keep the anchor's TTL running well ahead of its expiry.
            _ if roll == 0 => {
                if let Some(ttl) = s.anchor_ttl_ms {
                    self.renew(s.anchor, ttl);
                }
            }
            Some(job) if roll < 6 => {
                swallow(s.holder, "release", release(&self.root, job.key, s.holder));
                self.job = None;
            }
            Some(job) if roll < 8 => match s.job_ttl_ms {
                Some(ttl) => self.renew(job.key, ttl),
                // A PID-bound job has nothing to renew: report progress by
                // re-acquiring with fresh metadata instead.
                None => self.take(job),
            },
            Some(job) => self.take(job),
            None => {
                let job = &s.jobs[self.rng.below(s.jobs.len() as u64) as usize];
                self.take(job);
            }
        }
    }

    fn take(&mut self, job: &'static Job) {
        let s = self.spec;
        let opts = self.opts(s.job_ttl_ms, job.reason, (job.meta)(self.tick));
        if let Some(AcquireOutcome::Acquired { .. }) = swallow(
            s.holder,
            "acquire",
            acquire(&self.root, job.key, s.holder, &opts),
        ) {
            self.job = Some(job);
        }
    }

    fn renew(&self, key: &str, ttl_ms: i64) {
        // A NotRenewed outcome is benign in a fleet (a peer mid-reclaim, a
        // job taken meanwhile): nothing to report.
        let s = self.spec;
        swallow(s.holder, "renew", renew(&self.root, key, s.holder, ttl_ms));
    }
}

/// Dies holding `reconcile:nightly-rollup`, again and again; a healthy worker
/// notices the Stale claim and reclaims it (a `claim_stale_reclaimed` event),
/// finishes, and releases.
pub(super) struct Crasher {
    root: Root,
    rng: Rng,
    round: u64,
}

const CRASH_KEY: &str = "reconcile:nightly-rollup";
const RESCUER: &str = "codex:worker-5";

impl Crasher {
    pub(super) fn new(root: &Root) -> Crasher {
        Crasher {
            root: root.clone(),
            rng: Rng::seeded(0xC0A5),
            round: 0,
        }
    }

    pub(super) fn run(&mut self, stop: &AtomicBool) {
        loop {
            if !nap(stop, self.rng.pause()) {
                return;
            }
            self.round += 1;
            self.die_holding();
            // Long enough for the Stale row to be seen.
            if !nap(stop, self.rng.pause() * 2) {
                return;
            }
            self.rescue();
            if !nap(stop, self.rng.pause()) {
                return;
            }
            swallow(RESCUER, "release", release(&self.root, CRASH_KEY, RESCUER));
        }
    }

    fn die_holding(&mut self) {
        let Some(pid) = dead_pid() else { return };
        let holder = format!("gemini:batch-{:02x}", self.round % 256);
        let opts = AcquireOpts {
            pid: Some(pid),
            ttl_ms: None,
            reason: Some("roll up the nightly metrics".into()),
            metadata: metadata(json!({"round": self.round})),
            harness: Some("gemini".into()),
            ..AcquireOpts::default()
        };
        swallow(
            &holder,
            "acquire",
            acquire(&self.root, CRASH_KEY, &holder, &opts),
        );
    }

    fn rescue(&mut self) {
        let opts = AcquireOpts {
            pid: None,
            ttl_ms: Some(5 * MINUTE_MS),
            reason: Some("take over the abandoned rollup".into()),
            metadata: metadata(json!({"round": self.round, "rescued": true})),
            harness: Some("codex".into()),
            ..AcquireOpts::default()
        };
        swallow(
            RESCUER,
            "acquire",
            acquire(&self.root, CRASH_KEY, RESCUER, &opts),
        );
    }
}
