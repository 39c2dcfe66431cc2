//! The wait and the hold against an in-memory store and a movable clock.

use super::*;
use crate::claims::{
    AcquireKind, AcquireOpts, AcquireOutcome, NoRenew, ReleaseOutcome, RenewOutcome,
};
use crate::claims::{ClaimState, ForceOpts, ForceOutcome};
use crate::store::{Backend, Changes, Claims, Cursor, Feed, Fence, LeaseInfo, ListEnd, ListSink};
use crate::store::{Fenced, Kept, Leases, Words};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::Mutex;

struct FakeClock<'a>(&'a AtomicI64);

impl Clock for FakeClock<'_> {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A store of one claim, in memory: renew moves its deadline, and the
/// test can take it away.
struct FakeStore<'a> {
    clock: &'a AtomicI64,
    claim: Mutex<Option<ClaimRecord>>,
    renewals: Mutex<Vec<i64>>,
    busy_once: AtomicBool,
    /// The tenure `status` reports (a store with leases).
    tenure: Mutex<Option<Tenure>>,
    /// What the keep-alive says once the lease is gone.
    lease_lost: Arc<Mutex<Option<String>>>,
    /// The revisions fenced releases named.
    fenced: Mutex<Vec<i64>>,
    /// How many times `status` was read.
    reads: AtomicUsize,
}

/// The fake store's keep-alive: lost when the test says so.
struct FakeKept(Arc<Mutex<Option<String>>>);

impl Kept for FakeKept {
    fn lost(&self) -> Option<String> {
        self.0.lock().expect("lost").clone()
    }
}

impl FakeStore<'_> {
    fn now(&self) -> i64 {
        self.clock.load(Ordering::SeqCst)
    }

    fn claim(&self) -> std::sync::MutexGuard<'_, Option<ClaimRecord>> {
        self.claim.lock().expect("claim")
    }

    fn renewals(&self) -> Vec<i64> {
        self.renewals.lock().expect("renewals").clone()
    }
}

/// What the fake keeps no model of.
fn not_kept() -> StoreError {
    StoreError::Unsupported("the fake store keeps one claim and nothing else".into())
}

static WORDS: Words = Words {
    noun: "key",
    archive: "nowhere",
};

impl Claims for FakeStore<'_> {
    fn url(&self) -> String {
        "fake:".into()
    }
    fn words(&self) -> &'static Words {
        &WORDS
    }
    /// Its claims live on leases: the store's verdict stands.
    fn rules(&self) -> crate::claims::ItemRules {
        crate::claims::ItemRules::StoreKey
    }
    fn acquire(
        &self,
        _: &str,
        holder: &str,
        _: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        let mut c = self.claim();
        let outcome = match c.as_ref() {
            Some(r) if r.holder != holder => AcquireOutcome::HeldByOther {
                holder: r.holder.clone(),
                pid: r.pid,
                host: r.host.clone(),
            },
            _ => {
                let record = ClaimRecord {
                    holder: holder.into(),
                    ..record(self.now(), None)
                };
                *c = Some(record.clone());
                AcquireOutcome::Acquired {
                    record,
                    kind: AcquireKind::Fresh,
                }
            }
        };
        Ok(Fenced::plain(outcome))
    }
    fn status(
        &self,
        key: &str,
        _: &mut crate::claims::Classifier,
    ) -> Result<Fenced<Status>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let record = self.claim().clone();
        let status = Status {
            key: key.into(),
            file: Path::new("k.lock").into(),
            state: if record.is_some() {
                ClaimState::Live
            } else {
                ClaimState::Free
            },
            record,
            why: String::new(),
            error: None,
            locality: None,
            head: Box::default(),
        };
        Ok(Fenced {
            outcome: status,
            tenure: *self.tenure.lock().expect("tenure"),
        })
    }
    fn renew(
        &self,
        _: &str,
        holder: &str,
        ttl: i64,
        _: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        let now = self.now();
        self.renewals.lock().expect("renewals").push(now);
        if self.busy_once.swap(false, Ordering::SeqCst) {
            return Ok(Fenced::plain(RenewOutcome::NotRenewed(NoRenew::MutexBusy)));
        }
        let mut c = self.claim();
        let outcome = match c.as_mut() {
            Some(r) if r.holder == holder => {
                let previous_expires_at = r.expires_at.unwrap_or(now);
                r.expires_at = Some(now + ttl);
                RenewOutcome::Renewed {
                    record: r.clone(),
                    previous_expires_at,
                }
            }
            Some(_) => RenewOutcome::NotRenewed(NoRenew::OtherHolder),
            None => RenewOutcome::NotRenewed(NoRenew::Absent),
        };
        Ok(Fenced::plain(outcome))
    }
    /// A fenced release names the tenure it may end.
    fn release(
        &self,
        _: &str,
        _: &str,
        fence: Option<Fence>,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        if let Some(f) = fence {
            self.fenced
                .lock()
                .expect("fenced")
                .push(i64::try_from(f.get()).unwrap_or(i64::MAX));
        }
        Ok(Fenced::plain(ReleaseOutcome::Absent))
    }
    fn force_release(&self, _: &str, _: &ForceOpts) -> Result<Fenced<ForceOutcome>, StoreError> {
        Err(not_kept())
    }
    fn list(
        &self,
        _: &mut crate::claims::Classifier,
        _: &mut dyn ListSink,
    ) -> Result<ListEnd, StoreError> {
        Err(not_kept())
    }
}

impl Feed for FakeStore<'_> {
    fn changes(&self, _: Option<&Cursor>) -> Result<Box<dyn Changes>, StoreError> {
        Err(not_kept())
    }
}

impl Backend for FakeStore<'_> {
    fn leases(&self) -> Option<&dyn Leases> {
        Some(self)
    }
}

/// The fake keeps leases: a hold with a tenure keeps it alive here.
impl Leases for FakeStore<'_> {
    fn keep_alive(&self, _: &str, _: &Tenure) -> Result<Box<dyn Kept>, StoreError> {
        Ok(Box::new(FakeKept(Arc::clone(&self.lease_lost))))
    }
}

fn record(acquired_at: i64, ttl: Option<i64>) -> ClaimRecord {
    ClaimRecord {
        schema_version: 1,
        key: "k".into(),
        holder: "h".into(),
        acquired_at,
        pid: 42,
        host: "box".into(),
        expires_at: ttl.map(|t| acquired_at + t),
        reason: None,
        harness: None,
        machine_id: None,
        metadata: Default::default(),
    }
}

fn store<'a>(clock: &'a AtomicI64, rec: &ClaimRecord) -> FakeStore<'a> {
    FakeStore {
        clock,
        claim: Mutex::new(Some(rec.clone())),
        renewals: Mutex::new(Vec::new()),
        busy_once: AtomicBool::new(false),
        tenure: Mutex::new(None),
        lease_lost: Arc::new(Mutex::new(None)),
        fenced: Mutex::new(Vec::new()),
        reads: AtomicUsize::new(0),
    }
}

fn leased(revision: i64) -> Tenure {
    Tenure {
        revision,
        lease: LeaseInfo {
            id: 7,
            ttl_s: 60,
            remaining_s: 60,
        },
    }
}

#[test]
fn a_leased_hold_leaves_renewal_and_rechecks_to_the_keep_alive_and_is_lost_when_it_ends() {
    let clock = AtomicI64::new(0);
    let rec = record(0, Some(60_000));
    let s = store(&clock, &rec);
    *s.tenure.lock().expect("tenure") = Some(leased(5));
    let mut hold =
        Hold::new(&s, FakeClock(&clock), rec, Some(leased(5)), Some(60_000)).expect("hold");
    assert_eq!(hold.renew_at(), None);
    assert!(hold.due_in() <= LEASE_CHECK, "{:?}", hold.due_in());
    assert_eq!(run_until(&mut hold, &clock, 200_000), None);
    assert!(s.renewals().is_empty(), "the record is never rewritten");
    assert_eq!(
        s.reads.load(Ordering::SeqCst),
        0,
        "the keep-alive is the re-check: no store reads on a schedule"
    );
    *s.lease_lost.lock().expect("lost") = Some("the lease was revoked".into());
    assert_eq!(
        run_until(&mut hold, &clock, 200_500),
        Some(Lost::LeaseEnded("the lease was revoked".into()))
    );
}

#[test]
fn a_leased_hold_is_lost_to_another_tenure_under_the_same_record_and_releases_only_its_own() {
    let clock = AtomicI64::new(0);
    let rec = record(0, Some(60_000));
    let s = store(&clock, &rec);
    *s.tenure.lock().expect("tenure") = Some(leased(5));
    let mut hold =
        Hold::new(&s, FakeClock(&clock), rec, Some(leased(5)), Some(60_000)).expect("hold");
    assert_eq!(hold.changed().ok().flatten(), None);
    hold.release().expect("release");
    assert_eq!(*s.fenced.lock().expect("fenced"), vec![5]);
    // Byte for byte the same record, but a later tenure of the key.
    let rec = record(0, Some(60_000));
    let mut hold =
        Hold::new(&s, FakeClock(&clock), rec, Some(leased(5)), Some(60_000)).expect("hold");
    *s.tenure.lock().expect("tenure") = Some(leased(9));
    assert_eq!(
        hold.changed().ok().flatten(),
        Some(Lost::Replaced {
            holder: "h".into(),
            pid: 42
        })
    );
}

/// Run the hold's own schedule for `until_ms`, as a face would: sleep
/// `due_in`, then tick.
fn run_until(hold: &mut Hold<'_, FakeClock<'_>>, clock: &AtomicI64, until_ms: i64) -> Option<Lost> {
    while clock.load(Ordering::SeqCst) < until_ms {
        let step = hold.due_in().as_millis().max(1) as i64;
        clock.store(
            (clock.load(Ordering::SeqCst) + step).min(until_ms),
            Ordering::SeqCst,
        );
        if let Ok(Some(lost)) = hold.tick() {
            return Some(lost);
        }
    }
    None
}

#[test]
fn a_ttl_claim_is_renewed_each_time_a_third_of_its_ttl_is_left() {
    let clock = AtomicI64::new(1_000_000);
    let rec = record(1_000_000, Some(60_000));
    let s = store(&clock, &rec);
    let mut hold = Hold::new(&s, FakeClock(&clock), rec, None, Some(60_000)).expect("hold");
    assert_eq!(hold.renew_at(), Some(1_040_000));
    assert_eq!(run_until(&mut hold, &clock, 1_000_000 + 200_000), None);
    // First at 40 s (20 s left), then every 40 s after each renewal.
    assert_eq!(
        s.renewals(),
        vec![1_040_000, 1_080_000, 1_120_000, 1_160_000, 1_200_000]
    );
    let exp = s.claim().as_ref().and_then(|r| r.expires_at);
    assert_eq!(exp, Some(1_260_000), "never let it come within 20 s");
}

#[test]
fn a_renewal_the_mutex_refused_is_retried_a_second_later() {
    let clock = AtomicI64::new(0);
    let rec = record(0, Some(60_000));
    let s = store(&clock, &rec);
    s.busy_once.store(true, Ordering::SeqCst);
    let mut hold = Hold::new(&s, FakeClock(&clock), rec, None, Some(60_000)).expect("hold");
    assert_eq!(run_until(&mut hold, &clock, 45_000), None);
    assert_eq!(s.renewals(), vec![40_000, 41_000]);
    assert_eq!(hold.record().expires_at, Some(101_000));
}

#[test]
fn a_pid_bound_hold_never_renews_and_only_rechecks_slowly() {
    let clock = AtomicI64::new(0);
    let rec = record(0, None);
    let s = store(&clock, &rec);
    let mut hold = Hold::new(&s, FakeClock(&clock), rec, None, None).expect("hold");
    assert_eq!(hold.due_in(), HOLD_RECHECK);
    assert_eq!(run_until(&mut hold, &clock, 60_000), None);
    assert!(s.renewals().is_empty());
}

#[test]
fn a_refused_renewal_is_a_lost_claim() {
    let clock = AtomicI64::new(0);
    let rec = record(0, Some(60_000));
    let s = store(&clock, &rec);
    let mut hold = Hold::new(&s, FakeClock(&clock), rec, None, Some(60_000)).expect("hold");
    // Another holder took the key over meanwhile; the safety re-check
    // is pushed past the renewal so the renewal is what notices.
    *s.claim() = Some(ClaimRecord {
        holder: "other".into(),
        ..record(1, Some(60_000))
    });
    clock.store(39_999, Ordering::SeqCst);
    hold.check_at = i64::MAX;
    assert_eq!(
        run_until(&mut hold, &clock, 50_000),
        Some(Lost::RenewRefused(NoRenew::OtherHolder))
    );
}

#[test]
fn a_changed_lockfile_is_judged_by_holder_pid_and_acquired_at() {
    let clock = AtomicI64::new(0);
    let rec = record(0, Some(60_000));
    let s = store(&clock, &rec);
    let mut hold = Hold::new(&s, FakeClock(&clock), rec.clone(), None, Some(60_000)).expect("hold");
    // Our own renewal moved only the deadline: still ours.
    if let Some(r) = s.claim().as_mut() {
        r.expires_at = Some(99_999);
    }
    assert_eq!(hold.changed().ok().flatten(), None);
    // The same holder name from another process: not our tenure.
    *s.claim() = Some(ClaimRecord {
        pid: 7,
        ..rec.clone()
    });
    assert_eq!(
        hold.changed().ok().flatten(),
        Some(Lost::Replaced {
            holder: "h".into(),
            pid: 7
        })
    );
    *s.claim() = None;
    assert_eq!(hold.changed().ok().flatten(), Some(Lost::Gone));
}

#[test]
fn a_renewal_under_our_name_that_brings_the_deadline_closer_is_adopted_and_renewed_at_once() {
    let clock = AtomicI64::new(0);
    let rec = record(0, Some(600_000));
    let s = store(&clock, &rec);
    let mut hold = Hold::new(&s, FakeClock(&clock), rec, None, Some(600_000)).expect("hold");
    assert_eq!(hold.renew_at(), Some(400_000));
    // Another process renewed it for 60 s under our holder name: by our
    // own 10 min rule a third is long gone, so it is renewed now.
    clock.store(5_000, Ordering::SeqCst);
    if let Some(r) = s.claim().as_mut() {
        r.expires_at = Some(65_000);
    }
    assert_eq!(hold.changed().ok().flatten(), None);
    assert_eq!(s.renewals(), vec![5_000]);
    assert_eq!(hold.record().expires_at, Some(605_000));
    assert_eq!(hold.renew_at(), Some(405_000));
}

#[test]
fn a_ttl_claims_deadline_is_its_expires_at_and_moves_with_each_renewal() {
    let clock = AtomicI64::new(0);
    let rec = record(0, Some(60_000));
    let s = store(&clock, &rec);
    let mut hold = Hold::new(&s, FakeClock(&clock), rec, None, Some(60_000)).expect("hold");
    let ahead = |hold: &Hold<'_, FakeClock<'_>>| {
        let (until, window) = hold.deadline().expect("a TTL claim has a deadline");
        (until.saturating_duration_since(Instant::now()), window)
    };
    let (left, window) = ahead(&hold);
    assert_eq!(window, Duration::from_secs(60));
    assert!(
        left > Duration::from_secs(59) && left <= Duration::from_secs(60),
        "{left:?}"
    );
    // The deadline is an instant of the monotonic clock, set from the
    // record when it was learnt: the hold's clock moving on (the monotonic
    // one stands still here) leaves it where it is, until a renewal.
    clock.store(30_000, Ordering::SeqCst);
    assert_eq!(hold.tick().ok().flatten(), None);
    assert!(
        ahead(&hold).0 > Duration::from_secs(59),
        "no renewal, no move"
    );
    clock.store(40_000, Ordering::SeqCst);
    assert_eq!(hold.tick().ok().flatten(), None);
    assert_eq!(s.renewals(), vec![40_000]);
    let (left, window) = ahead(&hold);
    assert_eq!(window, Duration::from_secs(60));
    assert!(
        left > Duration::from_secs(59),
        "renewed: a whole TTL ahead again: {left:?}"
    );
    // A claim bound to its pid alone has none.
    let rec = record(0, None);
    let s = store(&clock, &rec);
    let hold = Hold::new(&s, FakeClock(&clock), rec, None, None).expect("hold");
    assert_eq!(hold.deadline(), None);
}

/// A feed that plays a script: each wait runs the next step against
/// the store and answers its wake.
struct Script<'a> {
    steps: Vec<(Woke, Box<dyn Fn() + 'a>)>,
    waits: usize,
}

impl Wakeups for Script<'_> {
    fn wait(&mut self, _: Duration) -> Woke {
        let (wake, step) = self.steps.remove(0);
        step();
        self.waits += 1;
        wake
    }
}

fn held_by_other(clock: &AtomicI64) -> FakeStore<'_> {
    let other = ClaimRecord {
        holder: "other".into(),
        ..record(0, Some(60_000))
    };
    store(clock, &other)
}

/// What a wait by `h` did: its end, whom it named, how often it slept.
struct Run {
    waited: Waited,
    told: Vec<Blocker>,
    waits: usize,
}

fn wait_as_h<'a>(
    s: &FakeStore<'_>,
    steps: Vec<(Woke, Box<dyn Fn() + 'a>)>,
    deadline: Option<Instant>,
) -> Run {
    let mut feed = Script { steps, waits: 0 };
    let mut told = Vec::new();
    let opts = AcquireOpts::default();
    let waited = acquire_waiting(s, &mut feed, "k", "h", &opts, deadline, |b| {
        told.push(b.clone())
    })
    .expect("the fake store cannot fail");
    Run {
        waited,
        told,
        waits: feed.waits,
    }
}

/// A wait by `h`, woken by a change, a timeout, then the key's release.
fn freed_at_the_third_wake(s: &FakeStore<'_>) -> Run {
    let free = || *s.claim() = None;
    wait_as_h(
        s,
        vec![
            (Woke::Changed, Box::new(|| {})),
            (Woke::TimedOut, Box::new(|| {})),
            (Woke::Changed, Box::new(free)),
        ],
        None,
    )
}

#[test]
fn a_waiter_says_whom_it_waits_for_once_and_acquires_once_the_key_is_freed() {
    let clock = AtomicI64::new(0);
    let s = held_by_other(&clock);
    let run = freed_at_the_third_wake(&s);
    assert!(matches!(run.waited, Waited::Acquired { ref record, .. } if record.holder == "h"));
    assert_eq!(run.waits, 3);
    assert_eq!(run.told.len(), 1, "one line, not one per wake-up");
    assert_eq!(run.told[0].holder, "other");
    assert_eq!(
        run.told[0].expires_at,
        Some(60_000),
        "the deadline comes from the record"
    );
}

#[test]
fn a_waiter_reads_a_leased_holders_deadline_once_and_a_lockfiles_at_every_look() {
    for (on_lease, reads) in [(true, 1), (false, 3)] {
        let clock = AtomicI64::new(0);
        let s = held_by_other(&clock);
        if on_lease {
            *s.tenure.lock().expect("tenure") = Some(leased(3));
        }
        let run = freed_at_the_third_wake(&s);
        assert!(matches!(run.waited, Waited::Acquired { .. }));
        assert_eq!(
            s.reads.load(Ordering::SeqCst),
            reads,
            "on a lease: {on_lease}"
        );
    }
}

#[test]
fn a_waiter_past_its_deadline_answers_who_still_holds_the_key() {
    let clock = AtomicI64::new(0);
    let s = held_by_other(&clock);
    let run = wait_as_h(&s, Vec::new(), Some(Instant::now()));
    assert!(matches!(run.waited, Waited::TimedOut(ref b) if b.holder == "other"));
    assert_eq!(run.waits, 0);
}

#[test]
fn a_waiter_whose_feed_is_interrupted_stops_without_taking_anything() {
    let clock = AtomicI64::new(0);
    let s = held_by_other(&clock);
    let run = wait_as_h(&s, vec![(Woke::Interrupted, Box::new(|| {}))], None);
    assert_eq!(run.waited, Waited::Interrupted);
    let holder = s.claim().as_ref().map(|r| r.holder.clone());
    assert_eq!(holder, Some("other".into()));
}

#[test]
fn a_waiter_looks_again_at_the_holders_deadline_or_the_safety_recheck() {
    let now = Instant::now();
    let far = next_look(now, 0, Some(60_000), None);
    assert_eq!(far, now + WAIT_RECHECK);
    let soon = next_look(now, 0, Some(500), None);
    assert_eq!(soon, now + Duration::from_millis(501));
    // An expiry already past is no time event; the deadline caps all.
    let past = next_look(now, 10_000, Some(500), Some(now + Duration::from_millis(3)));
    assert_eq!(past, now + Duration::from_millis(3));
}
