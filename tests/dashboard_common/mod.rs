//! A fixed world for the dashboard tests: a frozen clock, an injected
//! machine identity and pid table, and claims in every state.
#![allow(dead_code)]

use claimtop::claims::{
    ClaimRecord, ClaimState, Classifier, Counts, Hazard, HazardKind, LocalIdentity, Root, Status,
    Sweep,
};
use claimtop::dashboard::action::Swept;
use claimtop::dashboard::collect::{Collector, Input};
use claimtop::dashboard::update::apply_sweep;
use claimtop::dashboard::{update, Action, App, Options};
use claimtop::events::tail::Line;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use serde_json::{json, Map};
use std::path::PathBuf;

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
        read_only: false,
        no_color: true,
        demo: false,
        local_time: false,
    }
}

/// A model over `root` at [`NOW`], 80×24, colourless, with a fixed operator.
pub fn app_at(root: Root) -> App {
    let mut app = App::new(opts(root), NOW, me(), OPERATOR.into());
    update(&mut app, Action::Resize(80, 24));
    app
}

/// The collector of this world: reads `root` at [`NOW`] with [`probe`].
pub fn collector(root: &Root) -> Collector {
    Collector::new(root.clone(), me(), probe, NOW)
}

/// Ask the collector for `input` and apply what it sends; true when any
/// of it asked for a redraw.
pub fn collect(app: &mut App, c: &mut Collector, input: Input) -> bool {
    c.handle(input)
        .into_iter()
        .fold(false, |dirty, a| update(app, a) | dirty)
}

/// A second of the collector's clock, applied: pid facts first, then the tick.
pub fn tick(app: &mut App, c: &mut Collector, now: i64) -> bool {
    c.tick(now)
        .into_iter()
        .fold(false, |dirty, a| update(app, a) | dirty)
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
        file: root.lockfile(&r.key),
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
        file: root.lockfile(key),
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

/// A sweep of these claims and hazards, with the pid facts this world's
/// probe gives for their holders.
pub fn sweep_of(root: &Root, claims: Vec<Status>, hazards: Vec<Hazard>) -> Swept {
    let mut counts = Counts::default();
    let mut pids = Vec::new();
    for c in &claims {
        counts.add(c.state);
        if let Some(r) = &c.record {
            pids.push((r.pid, probe(r.pid)));
        }
    }
    Swept {
        sweep: Sweep {
            root: root.root.clone(),
            claims,
            counts,
            hazards,
        },
        pids,
        problem: None,
    }
}

pub fn mutex_corpse(root: &Root) -> Hazard {
    Hazard {
        kind: HazardKind::StaleMutex,
        path: root.claims_dir().join("node%3Abeta.lock.recovery.d"),
        detail: "mutex held for 412s (> 60s): a killed holder's corpse; the next waiter steals it"
            .into(),
    }
}

pub fn line(text: &str) -> Line {
    Line {
        text: text.into(),
        offset: 0,
        truncated: false,
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
    update(&mut app, Action::EventsAppended(some_events()));
    update(&mut app, Action::Resize(w, h));
    app
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
    claimtop::dashboard::update::scroll_into_view(app);
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
    term.draw(|f| claimtop::dashboard::view::draw(f, app))
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
