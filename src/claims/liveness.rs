//! Machine identity, process start times, and the verdict on a record.

use super::{now_ms, ClaimRecord, ClaimState};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

// Process facts live at the crate level, where the mkdir mutex (shared with
// the events log) reads them too; re-exported here, their old home.
pub use crate::sys::{hostname, pid_gone_since, process_create_time_ms};
// Durations and instants are worded in the crate's one home for time.
pub use crate::time::{human_ms, utc_hms};
use crate::time::{HumanMs, UtcHms};

/// This machine's stable identity, or "" when it has none.
///
/// `/etc/machine-id` (systemd) or `/var/lib/dbus/machine-id`, then `:` and the
/// inode of `/proc/self/ns/pid`. The namespace part matters: containers built
/// from one image share a machine-id but not a pid space, and without it two
/// of them sharing a root would read each other's pids as local. Never falls
/// back to the hostname: readers treat a present id as authoritative, and a
/// hostname moves (DHCP, VPN, sleep) under a live holder.
pub fn machine_id() -> String {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(platform_machine_id).to_string()
}

#[cfg(target_os = "linux")]
fn platform_machine_id() -> String {
    let base = ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|t| t.trim().to_string())
        .find(|t| !t.is_empty());
    let Some(base) = base else {
        return String::new();
    };
    use std::os::unix::fs::MetadataExt;
    let pid_ns = std::fs::metadata("/proc/self/ns/pid");
    match pid_ns {
        Ok(md) => format!("{base}:{}", md.ino()),
        Err(_) => base,
    }
}

#[cfg(not(target_os = "linux"))]
fn platform_machine_id() -> String {
    String::new()
}

/// Who "we" are, for comparing against a record. Captured once per sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalIdentity {
    pub machine_id: String,
    pub hostname: String,
}

impl LocalIdentity {
    pub fn current() -> LocalIdentity {
        LocalIdentity {
            machine_id: machine_id(),
            hostname: hostname(),
        }
    }

    /// Was a record with this `host` / `machine_id` written here?
    ///
    /// The machine id decides whenever the record has one. If the record has an
    /// id but ours is unreadable, the answer is "unknown", reported as local: a
    /// "foreign" answer would make a live local claim stale and stealable, and
    /// ambiguity must degrade to skipping, never to stealing (the pid check
    /// still runs). Records without an id fall back to the hostname compare
    /// older writers used.
    pub fn locality(&self, host: &str, machine: Option<&str>) -> Locality {
        if let Some(m) = machine.and_then(|m| (!m.is_empty()).then_some(m)) {
            if self.machine_id.is_empty() {
                return Locality::Unknown;
            }
            return if m == self.machine_id {
                Locality::Local
            } else {
                Locality::Other
            };
        }
        if !host.is_empty() && host == self.hostname {
            Locality::Local
        } else {
            Locality::Other
        }
    }
}

/// Where a record was written, relative to this reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Locality {
    Local,
    Other,
    /// The record names a machine but ours is unreadable; treated as local.
    Unknown,
}

/// The verdict on one record: its state and why, in words.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub state: ClaimState,
    pub locality: Locality,
    /// The holder pid's start time when it could be read here.
    pub pid_started_ms: Option<i64>,
    pub why: String,
}

/// Classifies records, inspecting each distinct pid at most once.
///
/// A sweep over thousands of lockfiles held by a few hundred workers would
/// otherwise read `/proc/<pid>/stat` once per file.
pub struct Classifier {
    now: i64,
    me: LocalIdentity,
    probe: fn(i32) -> Option<i64>,
    pids: HashMap<i32, Option<i64>>,
    /// While several threads judge one sweep ([`Classifier::share`]): the
    /// facts all of them go by, so that each pid is probed once and every
    /// claim naming it is judged on the same fact.
    shared: Option<Arc<Mutex<PidFacts>>>,
}

type PidFacts = HashMap<i32, Option<i64>>;

impl Classifier {
    /// A classifier for this machine at `now` (epoch ms).
    pub fn new(now: i64) -> Classifier {
        Classifier::with(now, LocalIdentity::current(), process_create_time_ms)
    }

    /// A classifier with injected identity and process probe (tests, replays).
    pub fn with(now: i64, me: LocalIdentity, probe: fn(i32) -> Option<i64>) -> Classifier {
        Classifier {
            now,
            me,
            probe,
            pids: HashMap::new(),
            shared: None,
        }
    }

    /// Start sharing pid facts with [`Classifier::fork`]s (for other
    /// threads) until [`Classifier::unshare`].
    pub(crate) fn share(&mut self) {
        let known = std::mem::take(&mut self.pids);
        self.shared = Some(Arc::new(Mutex::new(known)));
    }

    /// A classifier for another thread of the same sweep: same clock and
    /// identity, and the shared facts (see [`Classifier::share`]).
    pub(crate) fn fork(&self) -> Classifier {
        Classifier {
            now: self.now,
            me: self.me.clone(),
            probe: self.probe,
            pids: HashMap::new(),
            shared: self.shared.clone(),
        }
    }

    /// Stop sharing: every fact any fork learned becomes this one's own.
    pub(crate) fn unshare(&mut self) {
        if let Some(shared) = self.shared.take() {
            let facts = match Arc::try_unwrap(shared) {
                Ok(m) => m.into_inner().unwrap_or_else(|e| e.into_inner()),
                // A fork still alive (never, once the sweep's threads are
                // joined): copy rather than take.
                Err(arc) => arc.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            };
            self.pids.extend(facts);
        }
    }

    pub fn now(&self) -> i64 {
        self.now
    }

    pub fn identity(&self) -> &LocalIdentity {
        &self.me
    }

    /// Move the clock and forget pid facts (a new sweep or tick).
    pub fn reset(&mut self, now: i64) {
        self.now = now;
        self.pids.clear();
    }

    /// Seed the pid cache with a fact learned earlier, so it is not probed.
    pub fn know(&mut self, pid: i32, started: Option<i64>) {
        self.pids.insert(pid, started);
    }

    /// Every pid fact gathered so far: (pid, start time if alive).
    pub fn known_pids(&self) -> impl Iterator<Item = (i32, Option<i64>)> + '_ {
        self.pids.iter().map(|(p, s)| (*p, *s))
    }

    fn start_time(&mut self, pid: i32) -> Option<i64> {
        if let Some(&known) = self.pids.get(&pid) {
            return known;
        }
        let fact = match &self.shared {
            None => (self.probe)(pid),
            // Probed under the lock: a /proc read is microseconds, and so
            // no pid is ever probed twice or judged on two facts.
            Some(shared) => {
                let probe = self.probe;
                *shared
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(pid)
                    .or_insert_with(|| probe(pid))
            }
        };
        self.pids.insert(pid, fact);
        fact
    }

    /// Classify `rec`, with the reason.
    ///
    /// The arms mirror Python's `staleness.classify`: expired TTL → Live only if
    /// the pid is verifiably alive (the hybrid arm: a suspended-but-alive
    /// session keeps its claim), else Stale; no TTL → Live or Stale by the pid;
    /// TTL running → Live, or Suspect when the pid is not provably alive.
    pub fn verdict(&mut self, rec: &ClaimRecord) -> Verdict {
        let now = self.now;
        let (locality, started) = self.pid_facts(rec);
        let pid = rec.pid;
        // Why the holder is, or is not, verifiably alive.
        let fact = match (locality, started) {
            (Locality::Other, _) => PidFact::Foreign(pid, &rec.host),
            (_, None) => PidFact::Gone(pid),
            (_, Some(s)) if s > rec.acquired_at => PidFact::Reused(pid, s - rec.acquired_at),
            (_, Some(_)) => PidFact::Alive(pid),
        };
        let alive = matches!(fact, PidFact::Alive(_));
        // One buffer per verdict: the dashboard re-classifies every claim
        // each second, and nested format! calls were most of that tick.
        let mut why = String::with_capacity(96);
        let state = match rec.expires_at {
            Some(exp) if now >= exp => {
                let (state, joint) = if alive {
                    (ClaimState::Live, "but")
                } else {
                    (ClaimState::Stale, "and")
                };
                why.push_str("TTL expired ");
                let _ = HumanMs(now - exp).write_to(&mut why);
                why.push_str(" ago ");
                why.push_str(joint);
                why.push(' ');
                fact.write_to(&mut why);
                state
            }
            None => {
                fact.write_to(&mut why);
                why.push_str(" (PID-bound claim, no TTL)");
                if alive {
                    ClaimState::Live
                } else {
                    ClaimState::Stale
                }
            }
            Some(exp) => {
                let left = HumanMs(exp - now);
                if alive {
                    fact.write_to(&mut why);
                    why.push_str("; TTL expires in ");
                    let _ = left.write_to(&mut why);
                    ClaimState::Live
                } else {
                    let _ = write!(why, "TTL protects a dead holder until {} (in ", UtcHms(exp));
                    let _ = left.write_to(&mut why);
                    why.push_str("): ");
                    fact.write_to(&mut why);
                    ClaimState::Suspect
                }
            }
        };
        Verdict {
            state,
            locality,
            pid_started_ms: started,
            why,
        }
    }
}

impl Classifier {
    fn pid_facts(&mut self, rec: &ClaimRecord) -> (Locality, Option<i64>) {
        let locality = self.me.locality(&rec.host, rec.machine_id.as_deref());
        let started = if locality == Locality::Other {
            None
        } else {
            self.start_time(rec.pid)
        };
        (locality, started)
    }

    /// The state and locality [`Classifier::verdict`] would give, without
    /// wording the reason. The dashboard re-judges every claim each second
    /// and words the reason only for the claim on screen.
    pub fn state(&mut self, rec: &ClaimRecord) -> (ClaimState, Locality) {
        let (locality, started) = self.pid_facts(rec);
        let alive = locality != Locality::Other && started.is_some_and(|s| s <= rec.acquired_at);
        let state = match rec.expires_at {
            None => {
                if alive {
                    ClaimState::Live
                } else {
                    ClaimState::Stale
                }
            }
            Some(exp) if self.now >= exp => {
                if alive {
                    ClaimState::Live
                } else {
                    ClaimState::Stale
                }
            }
            Some(_) => {
                if alive {
                    ClaimState::Live
                } else {
                    ClaimState::Suspect
                }
            }
        };
        (state, locality)
    }
}

/// Classify one record now (or at `now`), without the reason.
pub fn classify(rec: &ClaimRecord, now: Option<i64>) -> ClaimState {
    Classifier::new(now.unwrap_or_else(now_ms)).state(rec).0
}

/// What is known about a record's pid, worded for the verdict's "why".
enum PidFact<'a> {
    Foreign(i32, &'a str),
    Gone(i32),
    /// The running process started this many ms after the claim.
    Reused(i32, i64),
    Alive(i32),
}

impl PidFact<'_> {
    /// The fact in words, onto the verdict's reason (piece by piece, as
    /// [`HumanMs::write_to`] says why).
    fn write_to(&self, why: &mut String) {
        let pid = |why: &mut String, pid: &i32| {
            let _ = crate::time::push_decimal(why, (*pid).into());
        };
        match self {
            PidFact::Foreign(p, host) => {
                why.push_str("written on another machine (host ");
                why.push_str(host);
                why.push_str("); pid ");
                pid(why, p);
                why.push_str(" cannot be checked here");
            }
            PidFact::Gone(p) => {
                why.push_str("pid ");
                pid(why, p);
                why.push_str(" is gone");
            }
            PidFact::Reused(p, after) => {
                why.push_str("pid ");
                pid(why, p);
                why.push_str(" was reused: the running process started ");
                let _ = HumanMs(*after).write_to(why);
                why.push_str(" after the claim");
            }
            PidFact::Alive(p) => {
                why.push_str("holder pid ");
                pid(why, p);
                why.push_str(" is alive");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    fn me() -> LocalIdentity {
        LocalIdentity {
            machine_id: "m-here:1".into(),
            hostname: "here".into(),
        }
    }

    /// pid 100 started long before NOW; pid 200 started just after NOW - 10s;
    /// everything else is gone.
    fn probe(pid: i32) -> Option<i64> {
        match pid {
            100 => Some(NOW - 3_600_000),
            200 => Some(NOW - 10_000),
            _ => None,
        }
    }

    fn rec(
        pid: i32,
        acquired_at: i64,
        expires_at: Option<i64>,
        machine: Option<&str>,
    ) -> ClaimRecord {
        ClaimRecord {
            schema_version: 1,
            key: "k".into(),
            holder: "h".into(),
            acquired_at,
            pid,
            host: "here".into(),
            expires_at,
            reason: None,
            harness: None,
            machine_id: machine.map(str::to_string),
            metadata: Default::default(),
        }
    }

    fn state(r: &ClaimRecord) -> (ClaimState, String) {
        let v = Classifier::with(NOW, me(), probe).verdict(r);
        (v.state, v.why)
    }

    #[test]
    fn liveness_table_matches_python_classify_including_hybrid_and_suspect_arms() {
        let here = Some("m-here:1");
        let there = Some("m-there:1");
        let a = NOW - 60_000; // acquired a minute ago
        let table = [
            (rec(100, a, None, here), ClaimState::Live),
            (rec(999, a, None, here), ClaimState::Stale),
            // started 10 s ago, claim a minute old: the pid was reused
            (rec(200, a, None, here), ClaimState::Stale),
            (rec(100, a, None, there), ClaimState::Stale),
            (rec(100, a, Some(NOW + 60_000), here), ClaimState::Live),
            (rec(999, a, Some(NOW + 60_000), here), ClaimState::Suspect),
            (rec(100, a, Some(NOW + 60_000), there), ClaimState::Suspect),
            // hybrid arm: expired TTL, live pid
            (rec(100, a, Some(NOW - 1), here), ClaimState::Live),
            (rec(999, a, Some(NOW - 1), here), ClaimState::Stale),
            // expiry is inclusive: now == expires_at is expired
            (rec(999, a, Some(NOW), here), ClaimState::Stale),
            (rec(100, a, Some(NOW - 1), there), ClaimState::Stale),
        ];
        for (r, want) in table {
            assert_eq!(state(&r).0, want, "{r:?}");
        }
    }

    #[test]
    fn the_state_only_path_agrees_with_the_worded_verdict() {
        let mut c = Classifier::with(NOW, me(), probe);
        for pid in [100, 200, 999] {
            for machine in [Some("m-here:1"), Some("m-there:1"), None] {
                for exp in [None, Some(NOW - 1), Some(NOW), Some(NOW + 60_000)] {
                    let r = rec(pid, NOW - 60_000, exp, machine);
                    let v = c.verdict(&r);
                    assert_eq!(c.state(&r), (v.state, v.locality), "{r:?}");
                }
            }
        }
    }

    #[test]
    fn each_verdict_says_why_in_words() {
        let a = NOW - 60_000;
        let here = Some("m-here:1");
        assert!(state(&rec(999, a, None, here))
            .1
            .contains("pid 999 is gone"));
        assert!(state(&rec(200, a, None, here)).1.contains("reused"));
        assert!(state(&rec(100, a, None, Some("x")))
            .1
            .contains("another machine"));
        let hybrid = state(&rec(100, a, Some(NOW - 180_000), here)).1;
        assert!(
            hybrid.contains("TTL expired 3m00s ago but holder pid 100 is alive"),
            "{hybrid}"
        );
        let suspect = state(&rec(999, a, Some(NOW + 90_000), here)).1;
        assert!(
            suspect.starts_with("TTL protects a dead holder until"),
            "{suspect}"
        );
    }

    #[test]
    fn hostname_decides_only_when_the_record_has_no_machine_id() {
        let id = me();
        assert_eq!(id.locality("here", None), Locality::Local);
        assert_eq!(id.locality("", None), Locality::Other);
        assert_eq!(id.locality("elsewhere", None), Locality::Other);
        assert_eq!(id.locality("elsewhere", Some("m-here:1")), Locality::Local);
        assert_eq!(id.locality("here", Some("m-there:1")), Locality::Other);
        assert_eq!(id.locality("here", Some("")), Locality::Local);
    }

    #[test]
    fn an_unreadable_own_machine_id_is_unknown_never_foreign() {
        let blind = LocalIdentity {
            machine_id: String::new(),
            hostname: "renamed".into(),
        };
        assert_eq!(
            blind.locality("old-name", Some("whatever")),
            Locality::Unknown
        );
        let v = Classifier::with(NOW, blind, probe).verdict(&rec(
            100,
            NOW - 1000,
            None,
            Some("whatever"),
        ));
        assert_eq!(v.state, ClaimState::Live);
    }

    #[test]
    fn each_distinct_pid_is_probed_once_per_sweep() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        fn counting(pid: i32) -> Option<i64> {
            CALLS.fetch_add(1, Ordering::SeqCst);
            probe(pid)
        }
        let mut c = Classifier::with(NOW, me(), counting);
        for _ in 0..50 {
            c.verdict(&rec(100, NOW, None, Some("m-here:1")));
            c.verdict(&rec(999, NOW, None, Some("m-here:1")));
        }
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
        c.reset(NOW + 1);
        c.verdict(&rec(100, NOW, None, Some("m-here:1")));
        assert_eq!(CALLS.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn own_process_start_time_is_sane_and_bogus_pids_are_dead() {
        let create = process_create_time_ms(std::process::id() as i32).expect("own pid");
        let now = now_ms();
        assert!(create <= now && now - create < 86_400_000);
        assert!(process_create_time_ms(-1).is_none());
        assert_eq!(process_create_time_ms(0), None);
    }

    #[test]
    fn own_live_claim_classifies_live_on_the_real_machine() {
        let me = LocalIdentity::current();
        let now = now_ms();
        let mut r = rec(std::process::id() as i32, now, None, None);
        r.host = me.hostname.clone();
        r.machine_id = Some(me.machine_id.clone()).filter(|m| !m.is_empty());
        assert_eq!(classify(&r, Some(now)), ClaimState::Live);
        r.acquired_at = 1; // before this process existed: pid reuse
        assert_eq!(classify(&r, Some(now)), ClaimState::Stale);
    }

    #[test]
    fn every_verdict_arm_words_its_reason_exactly() {
        let a = NOW - 60_000;
        let (here, there) = (Some("m-here:1"), Some("m-there:1"));
        for (r, want) in [
            (rec(999, a, None, here), "pid 999 is gone (PID-bound claim, no TTL)"),
            (
                rec(200, a, None, here),
                "pid 200 was reused: the running process started 50s after the claim (PID-bound claim, no TTL)",
            ),
            (
                rec(100, a, None, there),
                "written on another machine (host here); pid 100 cannot be checked here (PID-bound claim, no TTL)",
            ),
            (rec(100, a, None, here), "holder pid 100 is alive (PID-bound claim, no TTL)"),
            (
                rec(100, a, Some(NOW + 60_000), here),
                "holder pid 100 is alive; TTL expires in 1m00s",
            ),
            (
                rec(999, a, Some(NOW + 90_000), here),
                "TTL protects a dead holder until 2027-01-15T08:01:30Z (in 1m30s): pid 999 is gone",
            ),
            (
                rec(100, a, Some(NOW - 180_000), here),
                "TTL expired 3m00s ago but holder pid 100 is alive",
            ),
            (rec(999, a, Some(NOW), here), "TTL expired 0s ago and pid 999 is gone"),
        ] {
            assert_eq!(state(&r).1, want);
        }
    }
}
