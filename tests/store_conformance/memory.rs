//! A store kept in memory, in this one file: what a new kind of store
//! writes to fit behind the seam. Its claims live by their TTL (or until
//! their holder is ended, as a lease would be), each tenure is fenced by the
//! revision that created it, and a feed resumes after any revision it still
//! remembers (`compact` makes it forget, as etcd's compaction does).
//!
//! Nothing in the crate names it: it is opened as any backend is, by being
//! handed to [`Store::of`], and the same cases run over it as over a file
//! root and etcd.

use crate::under_test::{Cap, StoreUnderTest};
use claimtop::claims::census::census;
use claimtop::claims::{
    hostname, machine_id, now_ms, validate_inputs, AcquireKind, AcquireOpts, AcquireOutcome,
    ClaimRecord, ClaimState, Classifier, ForceOpts, ForceOutcome, ItemRules, Loc, NoRenew,
    ParseError, ReleaseOutcome, RenewOutcome, Status, Sweep,
};
use claimtop::events::history::{History, Log};
use claimtop::events::lines_history::LinesHistory;
use claimtop::events::tail::Line;
use claimtop::events::Event;
use claimtop::store::{
    Audit, Backend, Change, Changes, Claims, Cursor, Feed, Fence, Fenced, LeaseInfo, ListEnd,
    ListSink, LogFeed, LogNews, MemberListing, OriginIx, Store, StoreError, Tail, Tenure, Words,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One world of claims, shared by every handle on it (another handle is
/// another process's view).
#[derive(Default)]
struct World {
    state: Mutex<State>,
    moved: Condvar,
}

impl World {
    /// What `look` finds in the world, waiting for a write until `timeout`
    /// passes (then None).
    fn wait_for<T>(
        &self,
        timeout: Duration,
        mut look: impl FnMut(&State) -> Option<T>,
    ) -> Option<T> {
        let until = Instant::now() + timeout;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(found) = look(&st) {
                return Some(found);
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            st = match self.moved.wait_timeout(st, left) {
                Ok((st, _)) => st,
                Err(e) => e.into_inner().0,
            };
        }
    }
}

#[derive(Default)]
struct State {
    /// Bumped by every write.
    rev: u64,
    claims: BTreeMap<String, Held>,
    /// Which key each revision changed, oldest first.
    changes: Vec<(u64, String)>,
    /// Changes at or before this revision are forgotten.
    forgotten: u64,
    /// The audit log, one JSON object a line.
    events: Vec<String>,
}

/// A value as it is kept: its bytes (what a peer, or a bug, wrote), and the
/// revision that created it (its tenure's fence).
struct Held {
    bytes: Vec<u8>,
    fence: u64,
}

impl State {
    fn write(&mut self, key: &str, held: Option<Held>) {
        self.rev += 1;
        match held {
            Some(h) => self.claims.insert(key.to_string(), h),
            None => self.claims.remove(key),
        };
        self.changes.push((self.rev, key.to_string()));
    }

    fn event(&mut self, kind: &str, data: Value) {
        let ts = claimtop::time::clock(now_ms(), false, "%Y-%m-%dT%H:%M:%S");
        let line = json!({"ts": ts, "type": kind, "source": "memory", "data": data});
        self.events.push(line.to_string());
    }

    fn record(&self, key: &str) -> Option<Result<ClaimRecord, ParseError>> {
        let h = self.claims.get(key)?;
        Some(ClaimRecord::from_bytes(&h.bytes))
    }
}

/// The backend: a handle on one world.
pub struct MemoryStore {
    world: Arc<World>,
}

impl MemoryStore {
    fn state(&self) -> MutexGuard<'_, State> {
        // A test thread that panicked while holding it leaves the world as
        // it was: go on with it.
        self.world.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn changed(&self) {
        self.world.moved.notify_all();
    }
}

/// Where a key's claim is placed: one name per key.
fn place(key: &str) -> Loc {
    Loc::new(
        0,
        ItemRules::StoreKey,
        Path::new(&format!("mem/claims/{key}")),
    )
}

static WORDS: Words = Words {
    noun: "key",
    archive: "forgotten (a memory store keeps no archive)",
};

/// A claim is live while its TTL runs (or, without one, until its holder
/// is ended); past its TTL it is stale, and anyone may take it over.
/// A value that does not parse is corrupted; one too costly to parse may be
/// a live claim, so it is unreadable, and held.
fn judged(key: &str, got: Option<Result<ClaimRecord, ParseError>>, now: i64) -> Status {
    let mut s = Status::free(key.to_string(), place(key), "no claim".into());
    match got {
        None => {}
        Some(Ok(rec)) => {
            let (state, why) = match rec.expires_at {
                Some(at) if at <= now => (ClaimState::Stale, "its TTL has run out"),
                Some(_) => (ClaimState::Live, "its TTL is running"),
                None => (ClaimState::Live, "held until its holder ends"),
            };
            s.state = state;
            s.why = why.into();
            s.record = Some(rec);
        }
        Some(Err(ParseError::TooCostly(reason))) => {
            s.state = ClaimState::Unreadable;
            s.why = "the value cannot be read here, so it may be a live claim".into();
            s.error = Some(reason);
        }
        Some(Err(ParseError::Invalid(reason))) => {
            s.state = ClaimState::Corrupted;
            s.why = "the value cannot be parsed as a claim; force-release removes it".into();
            s.error = Some(reason);
        }
    }
    s
}

fn tenure(fence: u64, rec: &ClaimRecord, now: i64) -> Tenure {
    let ttl_s = rec.expires_at.map_or(0, |e| (e - rec.acquired_at) / 1000);
    Tenure {
        revision: fence as i64,
        lease: LeaseInfo {
            id: fence as i64,
            ttl_s,
            remaining_s: rec.expires_at.map_or(0, |e| ((e - now) / 1000).max(0)),
        },
    }
}

impl Claims for MemoryStore {
    fn url(&self) -> String {
        "memory:".into()
    }

    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn rules(&self) -> ItemRules {
        ItemRules::StoreKey
    }

    fn acquire(
        &self,
        key: &str,
        holder: &str,
        opts: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        validate_inputs(key, holder, opts.ttl_ms)?;
        let now = now_ms();
        let mut st = self.state();
        let mut kind = AcquireKind::Fresh;
        match st.record(key) {
            None => {}
            Some(Err(_)) => {
                return Ok(Fenced::plain(AcquireOutcome::HeldByOther {
                    holder: "(unreadable)".into(),
                    pid: 0,
                    host: String::new(),
                }))
            }
            Some(Ok(rec)) if rec.expires_at.is_some_and(|at| at <= now) => {
                kind = AcquireKind::Reclaimed {
                    previous_holder: rec.holder,
                    previous_pid: rec.pid,
                };
            }
            Some(Ok(rec)) if rec.holder == holder => {
                let fence = st.claims.get(key).map_or(0, |h| h.fence);
                let t = tenure(fence, &rec, now);
                return Ok(Fenced {
                    outcome: AcquireOutcome::Acquired {
                        record: rec,
                        kind: AcquireKind::Reacquired,
                    },
                    tenure: Some(t),
                });
            }
            Some(Ok(rec)) => {
                return Ok(Fenced::plain(AcquireOutcome::HeldByOther {
                    holder: rec.holder,
                    pid: rec.pid,
                    host: rec.host,
                }))
            }
        }
        let record = ClaimRecord {
            schema_version: 1,
            key: key.into(),
            holder: holder.into(),
            acquired_at: now,
            pid: opts.pid.map_or(std::process::id() as i32, |p| p as i32),
            host: hostname(),
            expires_at: opts.ttl_ms.map(|t| now + t),
            reason: opts.reason.clone(),
            harness: opts.harness.clone(),
            machine_id: Some(machine_id()).filter(|m| !m.is_empty()),
            metadata: opts.metadata.clone().unwrap_or_default().into(),
        };
        let bytes = record.to_yaml()?.into_bytes();
        let fence = st.rev + 1;
        st.write(key, Some(Held { bytes, fence }));
        st.event("claim_acquired", json!({"key": key, "holder": holder}));
        let t = tenure(fence, &record, now);
        drop(st);
        self.changed();
        Ok(Fenced {
            outcome: AcquireOutcome::Acquired { record, kind },
            tenure: Some(t),
        })
    }

    fn release(
        &self,
        key: &str,
        holder: &str,
        fence: Option<Fence>,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        validate_inputs(key, holder, None)?;
        let now = now_ms();
        let mut st = self.state();
        let held_fence = st.claims.get(key).map(|h| h.fence);
        let outcome = match st.record(key) {
            None => ReleaseOutcome::Absent,
            Some(Err(e)) => ReleaseOutcome::CorruptedLeft {
                reason: e.reason().to_string(),
            },
            Some(Ok(rec)) if rec.holder != holder => ReleaseOutcome::NotHeld { holder: rec.holder },
            // Another tenure of the same holder: never ended by this one.
            Some(Ok(rec)) if fence.is_some_and(|f| Some(f.get()) != held_fence) => {
                ReleaseOutcome::NotHeld { holder: rec.holder }
            }
            Some(Ok(rec)) => {
                st.write(key, None);
                st.event("claim_released", json!({"key": key, "holder": holder}));
                ReleaseOutcome::Released {
                    held_ms: now - rec.acquired_at,
                    record: rec,
                }
            }
        };
        drop(st);
        self.changed();
        Ok(Fenced::plain(outcome))
    }

    fn renew(
        &self,
        key: &str,
        holder: &str,
        ttl_ms: i64,
        _operator: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        validate_inputs(key, holder, Some(ttl_ms))?;
        let now = now_ms();
        let mut st = self.state();
        let no = |n| Ok(Fenced::plain(RenewOutcome::NotRenewed(n)));
        let mut rec = match st.record(key) {
            None => return no(NoRenew::Absent),
            Some(Err(_)) => return no(NoRenew::Corrupted),
            Some(Ok(rec)) if rec.holder != holder => return no(NoRenew::OtherHolder),
            Some(Ok(rec)) => rec,
        };
        let Some(previous_expires_at) = rec.expires_at else {
            return no(NoRenew::PidBound);
        };
        if previous_expires_at <= now {
            return no(NoRenew::Expired);
        }
        rec.expires_at = Some(now + ttl_ms);
        let fence = st.claims.get(key).map_or(0, |h| h.fence);
        let bytes = rec.to_yaml()?.into_bytes();
        st.write(key, Some(Held { bytes, fence }));
        st.event("claim_renewed", json!({"key": key, "holder": holder}));
        drop(st);
        self.changed();
        Ok(Fenced {
            tenure: Some(tenure(fence, &rec, now)),
            outcome: RenewOutcome::Renewed {
                record: rec,
                previous_expires_at,
            },
        })
    }

    fn force_release(
        &self,
        key: &str,
        opts: &ForceOpts,
    ) -> Result<Fenced<ForceOutcome>, StoreError> {
        validate_inputs(key, "-", None)?;
        let now = now_ms();
        let mut st = self.state();
        let refused = |why: String| Ok(Fenced::plain(ForceOutcome::Refused(why)));
        let status = judged(key, st.record(key), now);
        if status.state == ClaimState::Free {
            return refused(format!("no claim for {key:?}"));
        }
        let rec = status.record.as_ref();
        if let (Some(want), Some(rec)) = (&opts.expect_holder, rec) {
            if *want != rec.holder {
                return refused(format!("held by {} now, not {want}", rec.holder));
            }
        }
        if let (Some(want), Some(rec)) = (opts.expect_acquired_at, rec) {
            if want != rec.acquired_at {
                return refused(format!("acquired at {} now, not {want}", rec.acquired_at));
            }
        }
        if status.state == ClaimState::Live && !opts.allow_live {
            return refused("the claim is live; --allow-live archives it anyway".into());
        }
        st.write(key, None);
        st.event("claim_force_released", json!({"key": key}));
        drop(st);
        self.changed();
        Ok(Fenced::plain(ForceOutcome::Archived {
            archived_to: PathBuf::from(format!("mem/forgotten/{key}")),
            previous: status.record,
            previous_state: status.state,
        }))
    }

    fn status(&self, key: &str, _c: &mut Classifier) -> Result<Fenced<Status>, StoreError> {
        let st = self.state();
        let s = judged(key, st.record(key), now_ms());
        let t = match (&s.record, st.claims.get(key)) {
            (Some(rec), Some(h)) => Some(tenure(h.fence, rec, now_ms())),
            _ => None,
        };
        Ok(Fenced {
            outcome: s,
            tenure: t,
        })
    }

    /// Every claim in key order, in one page (the first `wants` of them
    /// when the sink wants a head), at the revision it was read at.
    fn list(&self, _c: &mut Classifier, sink: &mut dyn ListSink) -> Result<ListEnd, StoreError> {
        let now = now_ms();
        let st = self.state();
        let take = sink.wants().unwrap_or(usize::MAX);
        let mut claims = Vec::new();
        let mut tenures = Vec::new();
        for key in st.claims.keys().take(take) {
            let s = judged(key, st.record(key), now);
            let t = match (&s.record, st.claims.get(key)) {
                (Some(rec), Some(h)) => Some(tenure(h.fence, rec, now)),
                _ => None,
            };
            claims.push(s);
            tenures.push(t);
        }
        let complete = claims.len() == st.claims.len();
        let at = Some(Cursor::of_u64(st.rev));
        drop(st);
        let all = census(&claims, Vec::new(), |_| ItemRules::StoreKey);
        sink.page(MemberListing {
            at: OriginIx(0),
            rules: ItemRules::StoreKey,
            sweep: Sweep {
                root: PathBuf::from("memory:"),
                claims,
                counts: all.counts,
                hazards: all.hazards,
            },
            tenures,
            store_hazards: Vec::new(),
            stamps: Vec::new(),
            kept: Vec::new(),
            end: ListEnd::default(),
        });
        Ok(ListEnd { at, complete })
    }
}

impl Feed for MemoryStore {
    /// After `after`'s revision, or from now. A revision already forgotten
    /// starts with a resync that says so.
    fn changes(&self, after: Option<&Cursor>) -> Result<Box<dyn Changes>, StoreError> {
        let st = self.state();
        let from = after.and_then(Cursor::as_u64).unwrap_or(st.rev);
        let lost = (from < st.forgotten).then(|| {
            format!(
                "revision {from} was forgotten (the store keeps changes after {} only); \
                 re-reading everything",
                st.forgotten
            )
        });
        Ok(Box::new(MemoryFeed {
            world: Arc::clone(&self.world),
            after: from.max(st.forgotten),
            lost,
        }))
    }
}

/// A feed of one world's changes after a revision.
struct MemoryFeed {
    world: Arc<World>,
    after: u64,
    lost: Option<String>,
}

impl Changes for MemoryFeed {
    fn next(&mut self, timeout: Duration) -> Result<Option<Change>, StoreError> {
        if let Some(why) = self.lost.take() {
            return Ok(Some(Change::Relist { why: Some(why) }));
        }
        let after = &mut self.after;
        Ok(self.world.wait_for(timeout, |st| {
            if *after < st.forgotten {
                let why = format!("changes after revision {after} were forgotten");
                *after = st.rev;
                return Some(Change::Relist { why: Some(why) });
            }
            let (rev, key) = st.changes.iter().find(|(rev, _)| *rev > *after)?;
            *after = *rev;
            Some(Change::Claim { key: key.clone() })
        }))
    }
}

impl Audit for MemoryStore {
    fn logs(&self) -> Result<Vec<(Option<String>, Log)>, StoreError> {
        Ok(vec![(None, Log::Own)])
    }

    /// Its log read whole at each look: a small store's history.
    fn history(&self, _log: &Log) -> Result<Box<dyn History>, StoreError> {
        let world = Arc::clone(&self.world);
        let read = move || {
            let st = world.state.lock().unwrap_or_else(|e| e.into_inner());
            Ok((0..st.events.len()).map(|i| line_at(&st, i)).collect())
        };
        Ok(Box::new(LinesHistory::new(Box::new(read))))
    }

    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        let st = self.state();
        let from = st.events.len().saturating_sub(n);
        Ok(st.events[from..]
            .iter()
            .filter_map(|l| claimtop::events::parse_event(l).ok())
            .collect())
    }

    /// The cursor is how many lines the log held.
    fn tail(&self, n: usize) -> Result<Tail, StoreError> {
        let st = self.state();
        let from = st.events.len().saturating_sub(n);
        let lines = (from..st.events.len()).map(|i| (Log::Own, line_at(&st, i)));
        Ok((lines.collect(), Cursor::of_u64(st.events.len() as u64)))
    }

    fn follow(&self, after: Option<&Cursor>) -> Result<Box<dyn LogFeed>, StoreError> {
        let len = self.state().events.len();
        let from = match after {
            Some(c) if c.is_start() => 0,
            Some(c) => c.as_u64().map_or(len, |n| n as usize),
            None => len,
        };
        Ok(Box::new(MemoryLog {
            world: Arc::clone(&self.world),
            read: from,
        }))
    }
}

/// The log's line `i`, marked with its place.
fn line_at(st: &State, i: usize) -> Line {
    Line::of_bytes(st.events[i].as_bytes(), i as u64)
}

/// The log followed from a line on.
struct MemoryLog {
    world: Arc<World>,
    /// Lines already handed out.
    read: usize,
}

impl LogFeed for MemoryLog {
    fn next(&mut self, timeout: Duration) -> Result<Option<LogNews>, StoreError> {
        let read = &mut self.read;
        Ok(self.world.wait_for(timeout, |st| {
            if st.events.len() <= *read {
                return None;
            }
            let lines = (*read..st.events.len()).map(|i| line_at(st, i)).collect();
            *read = st.events.len();
            Some(LogNews::Lines {
                log: Log::Own,
                lines,
                next: Cursor::of_u64(*read as u64),
                file_id: None,
            })
        }))
    }
}

impl Backend for MemoryStore {
    fn audit(&self) -> Option<&dyn Audit> {
        Some(self)
    }
}

/// The memory store under test: one world, handles on it.
pub struct Memory {
    world: Arc<World>,
}

impl Memory {
    pub fn new() -> Memory {
        Memory {
            world: Arc::default(),
        }
    }

    fn handle(&self) -> MemoryStore {
        MemoryStore {
            world: Arc::clone(&self.world),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let out = f(&mut self.world.state.lock().unwrap_or_else(|e| e.into_inner()));
        self.world.moved.notify_all();
        out
    }
}

impl StoreUnderTest for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn store(&self) -> Arc<Store> {
        Arc::new(Store::of(vec![Arc::new(self.handle())]))
    }

    fn peer(&self) -> Arc<Store> {
        self.store()
    }

    fn target(&self) -> OriginIx {
        OriginIx(0)
    }

    fn has(&self, c: Cap) -> bool {
        matches!(c, Cap::Fences | Cap::Compaction)
    }

    fn plant(&self, key: &str, bytes: &[u8]) {
        self.with(|st| {
            let fence = st.rev + 1;
            st.write(
                key,
                Some(Held {
                    bytes: bytes.to_vec(),
                    fence,
                }),
            );
        });
    }

    /// As a lease revoked: the key goes, and its end is recorded.
    fn end_holder(&self, key: &str) {
        self.with(|st| {
            st.write(key, None);
            st.event("claim_expired", json!({"key": key}));
        });
    }

    fn lose_changes(&self) {
        self.with(|st| st.forgotten = st.rev);
    }

    fn place_of(&self, key: &str) -> String {
        format!("mem/claims/{key}")
    }
}
