//! The collector's share of the fleet: when to read again what hosts
//! publish into the store (`claimtop publish`), which copies to re-read,
//! where a mirrored event comes from, and when each host was last seen.
//!
//! A host's record says when it was last seen only as often as its
//! publisher refreshes it (a minute), so a publisher killed in its first
//! minute would read "last seen (its start)". The reader knows better: it
//! saw the host online at every tick until the host went, and says so.

use super::action::Action;
use super::heard::{line_of, Heard};
use super::model::store::StoreMsg;
use crate::events::tail::Line;
use crate::store::fleet::{FleetState, Places};
use crate::store::Backend;
use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Default)]
pub struct FleetReader {
    /// The fleet must be read again (a host came, went or rewrote its
    /// record, the store was re-listed, or the last reading failed).
    due: bool,
    /// The hosts of the last reading: a copy of any other host calls for a
    /// reading, which names it.
    hosts: BTreeSet<String>,
    /// Each host's roots, from the last reading: what a mirrored event says
    /// of where it comes from.
    places: Places,
    /// Copies the feed named, each (host, root, key).
    named: BTreeSet<(String, String, String)>,
    /// The hosts online at the last reading.
    online: BTreeSet<String>,
    /// When each host was last seen online here, epoch ms.
    seen: HashMap<String, i64>,
}

impl FleetReader {
    /// Read the fleet again at the next round.
    pub fn due(&mut self) {
        self.due = true;
    }

    /// A mirrored event from `host_id`'s root `root_id`: a place the last
    /// reading did not name calls for one.
    pub fn place(&mut self, host_id: &str, root_id: &str) {
        if !self.places.knows(host_id, root_id) {
            self.due = true;
        }
    }

    /// The feed named one copy.
    pub fn named(&mut self, host_id: String, root_id: String, key: String) {
        if !self.hosts.contains(&host_id) {
            self.due = true;
        }
        self.named.insert((host_id, root_id, key));
    }

    /// A second passed: every host online is seen now.
    pub fn tick(&mut self, now: i64) {
        for h in &self.online {
            self.seen.insert(h.clone(), now);
        }
    }

    /// A mirrored event as the events pane shows it, marked with its host
    /// and root.
    pub fn line(&self, heard: Heard) -> Line {
        match heard {
            Heard::Own(e) => line_of(&e),
            Heard::Published {
                host_id,
                root_id,
                event,
            } => line_of(&self.places.mark(&host_id, &root_id, event)),
        }
    }

    /// What is due: a fleet reading (which covers every copy named), else
    /// the copies named. What cannot be read now stays due.
    pub fn read(&mut self, store: &dyn Backend, now: i64) -> Vec<Action> {
        if std::mem::take(&mut self.due) {
            return match store.fleet().map(|f| f.state()).transpose() {
                Ok(fleet) => {
                    self.named.clear();
                    vec![self.took(fleet.unwrap_or_default(), now)]
                }
                Err(_) => {
                    self.due = true;
                    Vec::new()
                }
            };
        }
        let mut out = Vec::with_capacity(self.named.len());
        while let Some((host_id, root_id, key)) = self.named.pop_first() {
            let read = store.fleet().map(|f| f.item(&host_id, &root_id, &key));
            match read.unwrap_or(Ok(None)) {
                Ok(item) => out.push(Action::Store(Box::new(StoreMsg::Published {
                    host_id,
                    root_id,
                    key,
                    item,
                    at: now,
                }))),
                Err(_) => {
                    // The next reading covers it.
                    self.due = true;
                    break;
                }
            }
        }
        out
    }

    /// Know these hosts as a reading would name them (tests).
    #[cfg(test)]
    pub(super) fn know(&mut self, hosts: &[crate::store::fleet::HostInfo]) {
        self.hosts = hosts.iter().map(|h| h.host_id.clone()).collect();
        self.places = Places::of(hosts);
    }

    /// Take a reading in: who is online now, and for each host that is
    /// not, the last time it was seen (here or by its own record).
    fn took(&mut self, mut fleet: FleetState, now: i64) -> Action {
        self.hosts = fleet.hosts.iter().map(|h| h.host_id.clone()).collect();
        self.places = Places::of(&fleet.hosts);
        self.online.clear();
        for h in &mut fleet.hosts {
            if h.online {
                self.online.insert(h.host_id.clone());
                self.seen.insert(h.host_id.clone(), now);
            } else if let Some(seen) = self.seen.get(&h.host_id) {
                h.last_seen_ms = h.last_seen_ms.max(*seen);
            }
        }
        Action::Store(Box::new(StoreMsg::Fleet {
            fleet: Box::new(fleet),
            at: now,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fleet::HostInfo;

    fn host(online: bool, last_seen_ms: i64) -> HostInfo {
        HostInfo {
            host_id: "m1".into(),
            hostname: "alpha".into(),
            label: "alpha".into(),
            online,
            last_seen_ms,
            roots: Vec::new(),
            counts: Default::default(),
        }
    }

    fn last_seen(a: Action) -> i64 {
        match a {
            Action::Store(m) => match *m {
                StoreMsg::Fleet { fleet, .. } => fleet.hosts[0].last_seen_ms,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_host_that_went_offline_was_last_seen_at_the_last_tick_it_was_online() {
        let mut r = FleetReader::default();
        let started = 1_000_000;
        let fleet = |online| FleetState {
            hosts: vec![host(online, started)],
            ..FleetState::default()
        };
        r.took(fleet(true), started + 500);
        r.tick(started + 20_000);
        r.tick(started + 21_000);
        // Its record still says when it started; the ticks saw it since.
        assert_eq!(
            last_seen(r.took(fleet(false), started + 30_000)),
            started + 21_000
        );
        // Offline from the first reading on: its record is all there is.
        let mut fresh = FleetReader::default();
        assert_eq!(
            last_seen(fresh.took(fleet(false), started + 30_000)),
            started
        );
    }
}
