//! The mirror's judge: this machine's identity and the crate's one answer
//! to "is this pid alive" ([`crate::sys::pid_alive`]), cached, so that a
//! tick over 100 000 claims costs one `kill(pid, 0)` per distinct live
//! holder, not one per claim.

use crate::claims::{
    process_create_time_ms, ClaimRecord, ClaimState, Classifier, LocalIdentity, Status,
};
use std::collections::HashMap;

/// How often a still-existing pid's start time is re-read, to catch a pid
/// that died and was reused between two ticks.
pub const PID_RECHECK_MS: i64 = 30_000;

/// Holder pids and their start times (None: no such process), as probed.
pub type PidFacts = Vec<(i32, Option<i64>)>;

/// One pid as last seen.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Fact {
    /// Start time when alive; None once gone.
    started: Option<i64>,
    /// When the start time was last read.
    checked: i64,
}

/// Judges records the way the protocol does, with pid facts it keeps.
pub struct Judge {
    identity: LocalIdentity,
    /// A process's start time (epoch ms), None when there is none.
    probe: fn(i32) -> Option<i64>,
    /// The cheap existence check; None asks `probe` (an injected world).
    alive: Option<fn(i32) -> bool>,
    facts: HashMap<i32, Fact>,
}

impl Judge {
    /// This machine: its identity, `/proc` start times, `kill(pid, 0)`.
    pub fn local() -> Judge {
        Judge {
            identity: LocalIdentity::current(),
            probe: process_create_time_ms,
            alive: Some(crate::sys::pid_alive),
            facts: HashMap::new(),
        }
    }

    /// An injected identity and process table (tests, replays): a pid is
    /// alive exactly when `probe` gives it a start time.
    pub fn with(identity: LocalIdentity, probe: fn(i32) -> Option<i64>) -> Judge {
        Judge {
            identity,
            probe,
            alive: None,
            facts: HashMap::new(),
        }
    }

    pub fn identity(&self) -> &LocalIdentity {
        &self.identity
    }

    /// A classifier at `now` that knows every fact and probes what it
    /// does not (see [`Judge::learn`]).
    pub fn classifier(&self, now: i64) -> Classifier {
        let mut c = Classifier::with(now, self.identity.clone(), self.probe);
        for (pid, f) in &self.facts {
            c.know(*pid, f.started);
        }
        c
    }

    /// Keep what `c` probed; the facts that are new here.
    pub fn learn(&mut self, c: &Classifier, now: i64) -> PidFacts {
        let mut new = Vec::new();
        for (pid, started) in c.known_pids() {
            let fresh = Fact {
                started,
                checked: now,
            };
            match self.facts.insert(pid, fresh) {
                Some(old) if old.started == started => {
                    // Same fact: keep when it was last read.
                    self.facts.insert(pid, old);
                }
                _ => new.push((pid, started)),
            }
        }
        new
    }

    /// Keep only what `c` (a listing's classifier) knows of the pids
    /// `named` says its rows name: a listing names the pids that matter
    /// now. The facts that are new here.
    pub fn relearn(&mut self, c: &Classifier, named: impl Fn(i32) -> bool, now: i64) -> PidFacts {
        let old = std::mem::take(&mut self.facts);
        let mut new = Vec::new();
        for (pid, started) in c.known_pids().filter(|(pid, _)| named(*pid)) {
            let fact = match old.get(&pid) {
                // Same fact: keep when it was last read.
                Some(f) if f.started == started => *f,
                _ => {
                    new.push((pid, started));
                    Fact {
                        started,
                        checked: now,
                    }
                }
            };
            self.facts.insert(pid, fact);
        }
        new
    }

    /// A second passed: the facts that moved. One existence check per
    /// live pid, and every [`PID_RECHECK_MS`] one start-time read (a pid
    /// that died and was reused between two checks). A gone pid stays
    /// gone for every claim naming it: a reused one started after them.
    pub fn tick(&mut self, now: i64) -> PidFacts {
        let (probe, alive) = (self.probe, self.alive);
        let mut moved = Vec::new();
        for (pid, f) in self.facts.iter_mut() {
            if f.started.is_none() {
                continue;
            }
            let exists = alive.map_or_else(|| probe(*pid).is_some(), |a| a(*pid));
            if !exists {
                f.started = None;
                moved.push((*pid, None));
            } else if now - f.checked >= PID_RECHECK_MS {
                let started = probe(*pid);
                f.checked = now;
                if started != f.started {
                    f.started = started;
                    moved.push((*pid, started));
                }
            }
        }
        moved
    }
}

/// Judge `s` again with `c`; true when its state or locality moved.
///
/// State first: wording every reason each second was most of an idle
/// dashboard's CPU. A claim whose state moved is re-worded at once (its
/// old reason now contradicts it).
pub fn rejudge(c: &mut Classifier, s: &mut Status) -> bool {
    let Some(rec) = &s.record else { return false };
    let (state, locality) = c.state(rec);
    if state == s.state && Some(locality) == s.locality {
        return false;
    }
    let v = c.verdict(rec);
    s.state = v.state;
    s.why = v.why;
    s.locality = Some(v.locality);
    true
}

/// The reason for `rec` at `now`, in words, by what is known of its pid
/// (`facts`; an unknown pid is one no process was found for). A face words
/// the one claim it shows in full with this, each second.
pub fn words_at(
    rec: &ClaimRecord,
    now: i64,
    identity: &LocalIdentity,
    facts: &HashMap<i32, Option<i64>>,
) -> String {
    let mut c = Classifier::with(now, identity.clone(), |_| None);
    if let Some(started) = facts.get(&rec.pid) {
        c.know(rec.pid, *started);
    }
    c.verdict(rec).why
}

/// A published copy's reason at `now`: its host judged it (its pid is the
/// host's to check), so its state is taken as published and only what
/// time changes (the TTL's countdown) is worded again, at the instant the
/// table shows it.
pub fn copy_words_at(s: &Status, now: i64) -> Option<String> {
    let rec = s.record.as_ref()?;
    let own = LocalIdentity {
        machine_id: rec.machine_id.clone().unwrap_or_default(),
        hostname: rec.host.clone(),
    };
    let mut c = Classifier::with(now, own, |_| None);
    // Alive exactly when the host said Live: a start time at the claim.
    let alive = s.state == ClaimState::Live;
    c.know(rec.pid, alive.then_some(rec.acquired_at));
    let v = c.verdict(rec);
    // Past a TTL edge the host has not re-published yet: its own words
    // stand rather than ours contradicting its state.
    (v.state == s.state).then_some(v.why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Locality;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};

    const NOW: i64 = 1_800_000_000_000;

    fn me() -> LocalIdentity {
        LocalIdentity {
            machine_id: "m:1".into(),
            hostname: "here".into(),
        }
    }

    fn rec(pid: i32, expires_at: Option<i64>) -> ClaimRecord {
        ClaimRecord {
            schema_version: 1,
            key: "k".into(),
            holder: "h".into(),
            acquired_at: NOW - 60_000,
            pid,
            host: "here".into(),
            expires_at,
            reason: None,
            harness: None,
            machine_id: Some("m:1".into()),
            metadata: Default::default(),
        }
    }

    static GONE: AtomicBool = AtomicBool::new(false);

    fn probe(pid: i32) -> Option<i64> {
        (pid == 7 && !GONE.load(Ordering::SeqCst)).then_some(NOW - 3_600_000)
    }

    #[test]
    fn a_tick_checks_each_live_pid_once_and_says_which_died() {
        let mut j = Judge::with(me(), probe);
        let mut c = j.classifier(NOW);
        for _ in 0..1000 {
            c.verdict(&rec(7, None));
        }
        assert_eq!(j.learn(&c, NOW), vec![(7, Some(NOW - 3_600_000))]);
        assert!(j.tick(NOW + 1000).is_empty(), "still alive: nothing moved");
        GONE.store(true, Ordering::SeqCst);
        assert_eq!(j.tick(NOW + 2000), vec![(7, None)]);
        assert!(j.tick(NOW + 3000).is_empty(), "gone stays gone, unprobed");
        let mut s = Status::free("k".into(), Path::new("/f"), String::new());
        s.record = Some(rec(7, None));
        s.state = ClaimState::Live;
        s.locality = Some(Locality::Local);
        assert!(rejudge(&mut j.classifier(NOW + 3000), &mut s));
        assert_eq!(s.state, ClaimState::Stale);
        assert!(s.why.contains("pid 7 is gone"), "{}", s.why);
    }

    #[test]
    fn a_copy_counts_down_at_the_instant_asked_and_keeps_its_hosts_state() {
        let mut s = Status::free("k".into(), Path::new("/f"), "stale words".into());
        s.record = Some(rec(7, Some(NOW + 27 * 60_000 + 11_000)));
        s.state = ClaimState::Live;
        assert_eq!(
            copy_words_at(&s, NOW).as_deref(),
            Some("holder pid 7 is alive; TTL expires in 27m11s")
        );
        assert_eq!(
            copy_words_at(&s, NOW + 60_000).as_deref(),
            Some("holder pid 7 is alive; TTL expires in 26m11s")
        );
        s.state = ClaimState::Suspect;
        let w = copy_words_at(&s, NOW).unwrap_or_default();
        assert!(w.starts_with("TTL protects a dead holder"), "{w}");
    }
}
