//! What time alone changes in the mirror, judged once a second: a TTL
//! crossing the clock, a lease that should have run out, a local holder's
//! pid gone, a mutex or temp file coming of age, the slow safety re-list.

use super::judge::rejudge;
use super::{Mirror, RELIST_COST_FACTOR, RELIST_EVERY_MS};
use crate::claims::{ClaimState, Loc, Status};
use crate::store::Tenure;
use std::cmp::Reverse;
use std::sync::Arc;

/// A lease's grace past its end before its key is read again: etcd ends a
/// lease on its own clock.
const LEASE_GRACE_MS: i64 = 1000;

impl Mirror {
    /// Note when time alone changes `s`: its TTL crossing the clock (judged
    /// here), or its lease's end (a leased store, re-read then).
    pub(super) fn expect_edge(&mut self, path: &Loc, s: &Status, tenure: Option<&Tenure>) {
        let edge = match (&self.judge, tenure) {
            (Some(_), _) => s.record.as_ref().and_then(|r| r.expires_at),
            (None, Some(t)) if t.lease.remaining_s > 0 => {
                Some(self.now + t.lease.remaining_s * 1000 + LEASE_GRACE_MS)
            }
            (None, _) => None,
        };
        if let Some(at) = edge.filter(|at| *at > self.now) {
            self.edges.push(Reverse((at, path.clone())));
        }
    }

    /// Keep [`Mirror::local_live`] as the rows come and go: only where
    /// the store judges (no judge of our own) and the claim is live and
    /// held on this machine. A row is counted out with the status it was
    /// counted in with.
    pub(super) fn note_local_live(&mut self, s: &Status, add: bool) {
        let local = s.locality == Some(crate::claims::Locality::Local);
        let Some(r) = &s.record else { return };
        if self.judge.is_some() || s.state != ClaimState::Live || !local {
            return;
        }
        if add {
            *self.local_live.entry(r.pid).or_default() += 1;
        } else if let Some(n) = self.local_live.get_mut(&r.pid) {
            *n -= 1;
            if *n == 0 {
                self.local_live.remove(&r.pid);
            }
        }
    }

    /// A second passed: judge again what time changes.
    pub fn tick(&mut self, now: i64) {
        self.now = now;
        let moved = self.judge.as_mut().map(|j| j.tick(now)).unwrap_or_default();
        let due = self.pop_due(now);
        if self.judge.is_none() {
            // A lease that should have ended: its key, read again, says
            // whether a holder kept it alive (which changes no key).
            let mut keys: Vec<String> = due
                .iter()
                .filter_map(|p| self.rows.get(p).map(|s| s.key.clone()))
                .collect();
            // A live claim whose holder is a process of this machine that
            // has exited: nothing in the store changes, yet the store's own
            // verdict is suspect now, so its key is read again.
            // Each pid is asked once a tick, however many claims it holds;
            // the rows are walked only when one has gone.
            let gone: Vec<i32> = self
                .local_live
                .keys()
                .copied()
                .filter(|pid| !crate::sys::pid_alive(*pid))
                .collect();
            if !gone.is_empty() {
                let local = Some(crate::claims::Locality::Local);
                keys.extend(
                    self.rows
                        .values()
                        .filter(|s| s.state == ClaimState::Live && s.locality == local)
                        .filter(|s| s.record.as_ref().is_some_and(|r| gone.contains(&r.pid)))
                        .map(|s| s.key.clone()),
                );
            }
            self.dirty.extend(keys);
        } else if !moved.is_empty() {
            self.owed.pids.extend(moved);
            let all: Vec<Loc> = self.rows.keys().cloned().collect();
            self.rejudge(all, now);
        } else if !due.is_empty() {
            self.rejudge(due, now);
        }
        while let Some(Reverse((at, _))) = self.aging.peek() {
            if *at > now {
                break;
            }
            if let Some(Reverse((_, path))) = self.aging.pop() {
                if let Some((e, h)) = self.entries.get_mut(&path) {
                    let judged = e.hazard_at(&path, now);
                    if *h != judged {
                        *h = judged;
                        self.tally_dirty = true;
                    }
                }
            }
        }
        let every = RELIST_EVERY_MS.max(self.list_cost_ms * RELIST_COST_FACTOR);
        if self.safety_net && now - self.listed_at >= every {
            self.safety_net(now);
        }
    }

    /// The rows whose TTL edge (or lease end) `now` has reached, taken
    /// off the edges.
    pub(super) fn pop_due(&mut self, now: i64) -> Vec<Loc> {
        let mut due = Vec::new();
        while let Some(Reverse((at, _))) = self.edges.peek() {
            if *at > now {
                break;
            }
            if let Some(Reverse((_, path))) = self.edges.pop() {
                due.push(path);
            }
        }
        due
    }

    /// Judge the rows at `paths` again, state first, as of `now`.
    pub(super) fn rejudge(&mut self, paths: Vec<Loc>, now: i64) {
        let Some(j) = self.judge.as_ref() else { return };
        let mut c = j.classifier(now);
        for path in paths {
            let Some(s) = self.rows.get(&path) else {
                continue;
            };
            let Some(rec) = &s.record else { continue };
            let (state, locality) = c.state(rec);
            if state == s.state && Some(locality) == s.locality {
                continue;
            }
            let mut next = (**s).clone();
            rejudge(&mut c, &mut next);
            self.keep(&mut next);
            if let Some(old) = self.rows.remove(&path) {
                self.count(&path, &old, false);
            }
            let tenure = self.tenures.remove(&path);
            self.insert(path, Arc::new(next), tenure, false);
        }
    }
}
