//! A mirror of named keys only: what a waiter or a holder of one key
//! reads its key through (`acquire --wait`, `run`).
//!
//! Such a mirror never lists the store: waiting on one key must not cost
//! a read of 100 000. It takes the same changes as a whole mirror and
//! keeps those that name its keys; a change that says others were missed
//! (a resync, a misnamed lockfile) reads its keys again instead of the
//! whole store, and so does its safety net. Its rows are judged by the
//! same judge, counted by the same tally, as a whole mirror's.

use super::{Change, ItemRules, Mirror, OriginIx, Status, Tenure};
use crate::store::mirror::judge::Judge;
use std::collections::BTreeSet;

impl Mirror {
    /// A mirror of `keys` alone in the member `origin`, read at the first
    /// [`Mirror::settle`].
    pub fn of_keys(
        origin: OriginIx,
        rules: ItemRules,
        judge: Option<Judge>,
        keys: impl IntoIterator<Item = String>,
        now: i64,
    ) -> Mirror {
        let followed: BTreeSet<String> = keys.into_iter().collect();
        let mut m = Mirror::new(origin, rules, judge, now);
        m.dirty = followed.clone();
        m.followed = Some(followed);
        m
    }

    /// Read `key` again at the next [`Mirror::settle`], whatever the feed
    /// said (a waiter's safety re-check, a holder's look before it gives
    /// its claim back).
    pub fn look_again(&mut self, key: &str) {
        if self.follows(key) {
            self.dirty.insert(key.to_string());
        }
    }

    /// Whether this mirror keeps `key`'s row.
    pub fn follows(&self, key: &str) -> bool {
        self.followed.as_ref().is_none_or(|f| f.contains(key))
    }

    /// The row of `key` and its tenure, None while the key is free. A walk
    /// of every row: meant for a mirror of named keys, which has few.
    pub fn row_of_key(&self, key: &str) -> Option<(&Status, Option<&Tenure>)> {
        let (path, s) = self.rows.iter().find(|(_, s)| s.key == key)?;
        Some((s, self.tenures.get(path)))
    }

    /// [`Mirror::apply`] for a mirror of named keys.
    pub(super) fn apply_followed(&mut self, change: Change) -> Option<Change> {
        match change {
            Change::Claim { key } => {
                self.look_again(&key);
                None
            }
            // Changes may have been missed, maybe to a followed key: read
            // them all again, never the whole store.
            Change::Relist { .. } => {
                self.reread_followed();
                None
            }
            // Not a claim: a mirror of claims keeps no entry.
            Change::Entry { .. } => None,
            other => Some(other),
        }
    }

    pub(super) fn reread_followed(&mut self) {
        if let Some(f) = &self.followed {
            self.dirty.extend(f.iter().cloned());
        }
    }

    /// The slow safety net for lost notifications: a whole mirror lists the
    /// store again, one of named keys reads them again.
    pub(super) fn safety_net(&mut self, now: i64) {
        match self.followed {
            Some(_) => {
                self.reread_followed();
                self.listed_at = now;
            }
            None => self.net_soon(),
        }
    }
}
