//! The dashboard's fixed world: a store that only lists, a sweep's world,
//! records at fixed ages, every state, a mutex corpse, events to show.

use super::*;

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
        metadata: Default::default(),
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
        head: Box::default(),
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
        head: bytes.into(),
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
