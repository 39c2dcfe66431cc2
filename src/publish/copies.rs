//! A root's copy in etcd: its claims and hazards written only where what a
//! reader would see differs, re-synced whole after a (re)connect, in
//! transactions under the store's limit ([`crate::store::sink::Sink::write`]).

use super::Publisher;
use crate::claims::census::Judged;
use crate::claims::hazard::UNREADABLE;
use crate::claims::{ClaimRecord, ClaimState, Status};
use crate::store::drive::Input;
use crate::store::mirror::Delta;
use crate::store::sink::CopyOp;
use crate::store::StoreError;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

impl Publisher {
    /// Re-sync root `i` after a (re)connect: what etcd holds for it is read
    /// (keys on another lease count as absent, since that lease is about to
    /// end), then everything the mirror holds is written where it differs.
    pub(super) fn sync_root(&mut self, i: usize, now: i64) -> Result<(), StoreError> {
        let held = self.sink.held(&self.roots[i].info.id)?;
        let held: HashMap<String, String> = held
            .into_iter()
            .map(|h| {
                // Copies of an old session, or unreadable, are re-put or
                // deleted below.
                let fp = h
                    .item
                    .as_ref()
                    .map_or_else(|| String::from("?"), fingerprint);
                (h.key, fp)
            })
            .collect();
        let r = &mut self.roots[i];
        r.claims = held;
        // What etcd holds is compared as JSON until each is planned again.
        r.shown.clear();
        // Written again on this lease whatever it was.
        r.hazards = None;
        self.start_events(i)?;
        // A mirror that never listed lists now; one that did is current.
        let r = &mut self.roots[i];
        if r.driver.is_empty() {
            r.drive(Input::Relist, now);
        }
        self.publish_changes(i, now)?;
        self.publish_all(i)
    }

    /// Bring root `i`'s mirror up to date and write what a reader would see
    /// differently: the claims that changed, and the hazards when they did.
    pub(super) fn publish_changes(&mut self, i: usize, now: i64) -> Result<(), StoreError> {
        let r = &mut self.roots[i];
        // A store that cannot be read now: its keys wait for the next round.
        r.drive(Input::Feed(Vec::new()), now);
        match self.roots[i].pending.take() {
            // A failed write: everything is written again at the re-sync
            // that follows.
            Some(delta) => self.publish_delta(i, delta),
            None => Ok(()),
        }
    }

    /// Write what one delta changed.
    fn publish_delta(&mut self, i: usize, delta: Delta) -> Result<(), StoreError> {
        self.stats.changes += delta.rows.len() as u64;
        self.roots[i].said.due = true;
        if delta.tally.is_some() {
            self.publish_unreadable(i)?;
            self.publish_hazards(i)?;
        }
        if self.roots[i].unreadable.is_some() {
            // Its claims are unknown: what was published stays as it was
            // (readers do not show it), and nothing is published as gone.
            return Ok(());
        }
        if delta.whole.is_some() {
            return self.publish_all(i);
        }
        let mut ops = Vec::new();
        for row in delta.rows {
            let s = &*row.status;
            let item = (s.state != ClaimState::Free).then(|| s.clone());
            ops.extend(self.plan_claim(i, &s.key, item));
        }
        self.apply(i, ops)
    }

    /// Write every claim of root `i`'s mirror that differs from etcd, and
    /// delete what etcd holds that the mirror does not.
    pub(super) fn publish_all(&mut self, i: usize) -> Result<(), StoreError> {
        self.roots[i].said.due = true;
        if self.roots[i].unreadable.is_some() {
            return Ok(());
        }
        // Only the rows that differ from what was last put are cloned and
        // made JSON: a re-list of an idle root compares, and writes nothing.
        let r = &self.roots[i];
        let mut listed: HashSet<&str> = HashSet::with_capacity(r.claims.len());
        let mut changed: Vec<Status> = Vec::new();
        for s in r.driver.rows() {
            listed.insert(s.key.as_str());
            if !r.shown.get(&s.key).is_some_and(|c| c.shows(s)) {
                changed.push(s.clone());
            }
        }
        let gone: Vec<String> = r
            .claims
            .keys()
            .filter(|k| !listed.contains(k.as_str()))
            .cloned()
            .collect();
        let mut ops = Vec::new();
        for s in changed {
            let key = s.key.clone();
            ops.extend(self.plan_claim(i, &key, Some(s)));
        }
        for key in gone {
            ops.extend(self.plan_claim(i, &key, None));
        }
        self.publish_hazards(i)?;
        self.apply(i, ops)
    }

    /// Say in root `i`'s owner key whether its claims dir can be listed,
    /// when that changed.
    pub(super) fn publish_unreadable(&mut self, i: usize) -> Result<(), StoreError> {
        let dir = self.roots[i].root.claims_dir();
        let unreadable = self.roots[i]
            .driver
            .tally()
            .hazards
            .iter()
            .find(|h| h.kind == UNREADABLE && h.path() == dir)
            .map(|h| h.detail.clone());
        if unreadable != self.roots[i].unreadable {
            let me = self.owner(self.lease.unwrap_or(0), unreadable.clone(), i);
            let id = self.roots[i].info.id.clone();
            self.sink.say_owner(&id, &me)?;
            self.roots[i].unreadable = unreadable;
        }
        Ok(())
    }

    /// Write root `i`'s hazards if they differ from what etcd holds.
    pub(super) fn publish_hazards(&mut self, i: usize) -> Result<(), StoreError> {
        let tally = self.roots[i].driver.tally();
        let hazards = serde_json::to_string(&*tally.hazards).unwrap_or_default();
        if self.roots[i].hazards.as_deref() != Some(hazards.as_str()) {
            self.sink.hazards(&self.roots[i].info.id, &hazards)?;
            self.stats.hazard_writes += 1;
            self.roots[i].hazards = Some(hazards);
        }
        Ok(())
    }

    /// The writes that make etcd hold `item` for `key`, if any are needed:
    /// the claim on the lease, and its last known twin without one (what
    /// readers show once this host is gone), together. What etcd holds is
    /// noted as if it were done (a failed write ends in a reconnect, whose
    /// re-sync reads etcd again).
    pub(super) fn plan_claim(
        &mut self,
        i: usize,
        key: &str,
        item: Option<Status>,
    ) -> Option<CopyOp> {
        let r = &mut self.roots[i];
        match item {
            Some(s) => {
                if r.shown.get(key).is_some_and(|c| c.shows(&s)) && r.claims.contains_key(key) {
                    return None;
                }
                // As the host's own `list --json` prints it, hazards included.
                let v = serde_json::to_value(Judged::lockfile(&s)).unwrap_or(Value::Null);
                let fp = fingerprint(&v);
                r.shown.insert(key.to_string(), Shown::of(&s));
                if r.claims.get(key) == Some(&fp) {
                    return None;
                }
                r.claims.insert(key.to_string(), fp);
                let item = v.to_string();
                let key = key.to_string();
                Some(CopyOp::Put { key, item })
            }
            None => {
                r.shown.remove(key);
                r.claims.remove(key)?;
                let key = key.to_string();
                Some(CopyOp::Delete { key })
            }
        }
    }

    /// Run claim writes, a transaction for each batch the store takes at
    /// once: one change is one transaction (one store revision).
    pub(super) fn apply(&mut self, i: usize, writes: Vec<CopyOp>) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        let (sink, stats) = (&mut self.sink, &mut self.stats);
        let id = &self.roots[i].info.id;
        sink.write(id, &writes, &mut |n| stats.claim_writes += n as u64)
    }
}

/// What a reader sees of one copy as last put (the fingerprint's parts,
/// unserialised): a row is compared with it before any JSON is made.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Shown {
    state: ClaimState,
    record: Option<ClaimRecord>,
    error: Option<String>,
}

impl Shown {
    fn of(s: &Status) -> Shown {
        Shown {
            state: s.state,
            record: s.record.clone(),
            error: s.error.clone(),
        }
    }

    /// `s` reads the same as this copy (its `why` words aside).
    fn shows(&self, s: &Status) -> bool {
        self.state == s.state && self.record == s.record && self.error == s.error
    }
}

/// What a reader of the mirror sees of one item, without the `why` words
/// (they age with the clock: "TTL expired 3m ago").
fn fingerprint(item: &Value) -> String {
    json!([item.get("state"), item.get("record"), item.get("error")]).to_string()
}

/// Two deltas of one mirror as one: a whole listing stands for every row
/// before it; a row said again is said as it is now; the counts, hazards
/// and problem are read from the mirror when either moved them.
pub(super) fn fold(mut before: Delta, after: Delta) -> Delta {
    if after.whole.is_some() {
        return after;
    }
    let again: std::collections::HashSet<&str> =
        after.rows.iter().map(|r| r.status.key.as_str()).collect();
    before
        .rows
        .retain(|r| !again.contains(r.status.key.as_str()));
    before.rows.extend(after.rows);
    before.tally = after.tally.or(before.tally);
    before.problem = after.problem.or(before.problem);
    before.at = after.at;
    before
}

#[cfg(test)]
mod tests {
    use super::fold;
    use crate::claims::Status;
    use crate::store::mirror::{Delta, Row};
    use std::sync::Arc;

    fn delta_of(keys: &[&str]) -> Delta {
        let row = |k: &&str| Row {
            path: std::path::Path::new(k).into(),
            status: Arc::new(Status::free(
                k.to_string(),
                std::path::Path::new(k),
                String::new(),
            )),
            tenure: None,
        };
        Delta {
            rows: keys.iter().map(row).collect(),
            ..Delta::default()
        }
    }

    #[test]
    fn two_deltas_folded_keep_every_key_either_changed_once() {
        let both = fold(delta_of(&["a", "b"]), delta_of(&["b", "c"]));
        let mut keys: Vec<&str> = both.rows.iter().map(|r| r.status.key.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["a", "b", "c"]);
    }

    use super::*;

    #[test]
    fn the_fingerprint_ignores_the_ageing_why_words_but_not_the_state_or_record() {
        let a = json!({"key": "k", "state": "live", "record": {"pid": 1}, "why": "TTL expires in 5m", "error": null});
        let mut b = a.clone();
        b["why"] = json!("TTL expires in 4m");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        b["state"] = json!("suspect");
        assert_ne!(fingerprint(&a), fingerprint(&b));
        let mut c = a.clone();
        c["record"]["pid"] = json!(2);
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }
}
