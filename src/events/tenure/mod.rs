//! Who held which key, when: tenures rebuilt from the claim events of the
//! log, in memory bounded by limits rather than by the log's size.
//!
//! A tenure starts with `claim_acquired` (or the new holder of
//! `claim_stale_reclaimed`) and ends with `claim_released`,
//! `claim_stale_reclaimed` (the previous holder's end), `claim_force_released`
//! or an etcd `claim_expired`; `claim_renewed` and
//! `claim_idempotent_reacquired` continue it. The log may start mid-story
//! (rotated, or only its tail read) and may have gaps (an append that was
//! logged-and-skipped), so every event is read for what it can prove on its
//! own: a release carries `acquired_at` and `duration_held_ms`, enough for a
//! whole tenure even when its acquire was never seen.
//!
//! Nor is the log's order the order of the lockfile changes: every writer
//! changes the lockfile first and appends second, so a handover's two lines
//! come either way round, and an end event names the tenure it ends (holder
//! and `acquired_at`) rather than "whatever is open now".

mod intern;

use super::claim_event::{
    with_claim_event, with_claim_event_bytes, with_claim_event_read, ClaimEvent,
};
use super::kind::EventKind as Kind;
use intern::Interner;

/// How a tenure ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ending {
    /// No end in the log yet: the holder still has it, as far as the log says.
    Held,
    /// `claim_released` by its holder.
    Released,
    /// Taken over by another worker as stale (`claim_stale_reclaimed`).
    Reclaimed,
    /// Archived by an operator (`claim_force_released`).
    ForceReleased,
    /// Its etcd lease ran out (`claim_expired`).
    Expired,
    /// Someone else acquired the key with no end event for this tenure in
    /// the log (a lost append, or a writer that does not log).
    Unseen,
}

impl Ending {
    /// One word, for a legend.
    pub fn short(self) -> &'static str {
        match self {
            Ending::Held => "held",
            Ending::Released => "released",
            Ending::Reclaimed => "stale",
            Ending::ForceReleased => "forced",
            Ending::Expired => "expired",
            Ending::Unseen => "unseen",
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Ending::Held => "still held",
            Ending::Released => "released",
            Ending::Reclaimed => "reclaimed as stale",
            Ending::ForceReleased => "force-released",
            Ending::Expired => "expired",
            Ending::Unseen => "end not in the log",
        }
    }
}

/// An interned string's number.
pub type Sym = u32;

/// One holder's time on one key. 32 bytes, so a million of them is 32 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tenure {
    /// Epoch ms.
    pub start: i64,
    /// Epoch ms; `i64::MAX` while held.
    pub end: i64,
    pub holder: Sym,
    /// Who ended it: the reclaiming holder, or the force-releasing operator.
    pub by: Option<Sym>,
    pub ending: Ending,
    /// False when the start is only the first time the log mentions it.
    pub start_seen: bool,
}

impl Tenure {
    pub fn is_held(&self) -> bool {
        self.ending == Ending::Held
    }

    /// Does it overlap `[from, to)`?
    pub fn overlaps(&self, from: i64, to: i64) -> bool {
        self.start < to && self.end >= from
    }
}

/// How many tenures before a late end event's `acquired_at` are looked at
/// for the tenure it ends.
const LATE_LOOKBACK: usize = 16;

/// Caps on what the index keeps, so a log of any size (or a hostile one,
/// every line a new key) costs bounded memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Tenures kept; past it, the oldest ended half is dropped.
    pub max_tenures: usize,
    /// Distinct keys (and, separately, holders) kept.
    pub max_names: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        // 512 Ki tenures of 32 bytes: 16 MiB (twice that with the lists'
        // spare capacity), whatever the log's size.
        Limits {
            max_tenures: 1 << 19,
            max_names: 200_000,
        }
    }
}

/// Every key's tenures, oldest first, rebuilt event by event.
#[derive(Debug, Clone, Default)]
pub struct TenureIndex {
    keys: Interner,
    holders: Interner,
    /// By key id; each sorted by start as the log goes.
    tenures: Vec<Vec<Tenure>>,
    count: usize,
    limits: Limits,
    /// Tenures that ended before this were dropped to stay within limits.
    horizon: Option<i64>,
    /// Events whose key or holder did not fit in the name limit.
    skipped: u64,
    /// Claim events applied.
    applied: u64,
    earliest: Option<i64>,
    latest: Option<i64>,
}

impl TenureIndex {
    pub fn new(limits: Limits) -> TenureIndex {
        TenureIndex {
            limits,
            ..TenureIndex::default()
        }
    }

    /// Apply one log line; false when it is not a claim event.
    pub fn apply_line(&mut self, line: &str) -> bool {
        self.apply_line_at(line).is_some()
    }

    /// Apply one log line; the time of the claim event it records, if any.
    pub fn apply_line_at(&mut self, line: &str) -> Option<i64> {
        with_claim_event(line, |ev| {
            self.apply(ev);
            ev.at
        })
    }

    /// [`Self::apply_line_at`] for a line as bytes.
    pub fn apply_bytes_at(&mut self, line: &[u8]) -> Option<i64> {
        with_claim_event_bytes(line, |ev| {
            self.apply(ev);
            ev.at
        })
    }

    /// [`Self::apply_line_at`] for a line too long to hold, read piece by
    /// piece: only its claim fields are kept.
    pub fn apply_read_at(&mut self, line: impl std::io::Read) -> Option<i64> {
        with_claim_event_read(line, |ev| {
            self.apply(ev);
            ev.at
        })
    }

    /// Apply one claim event, in log order.
    pub fn apply(&mut self, ev: &ClaimEvent<'_>) {
        let cap = self.limits.max_names;
        let Some(key) = self.keys.intern(ev.key, cap) else {
            self.skipped += 1;
            return;
        };
        let holder = match ev.holder {
            Some(h) => match self.holders.intern(h, cap) {
                Some(id) => Some(id),
                None => {
                    self.skipped += 1;
                    return;
                }
            },
            None => None,
        };
        self.applied += 1;
        self.earliest = Some(self.earliest.map_or(ev.at, |e| e.min(ev.at)));
        self.latest = Some(self.latest.map_or(ev.at, |l| l.max(ev.at)));
        if self.tenures.len() <= key as usize {
            self.tenures.resize_with(key as usize + 1, Vec::new);
        }
        match ev.kind {
            Kind::Acquired => {
                self.end_open(key, ev.at, Ending::Unseen, None);
                if let Some(h) = holder {
                    self.open(key, h, ev.at, true);
                }
            }
            Kind::Reacquired | Kind::Renewed => {
                // Continues the holder's tenure; opens one if the log did
                // not have its start (its `acquired_at` says when it was).
                let Some(h) = holder else { return };
                if self.open_holder(key) == Some(h) {
                    return;
                }
                let since = match ev.kind {
                    Kind::Reacquired => ev.previous_acquired_at,
                    _ => ev.acquired_at,
                };
                // A renewal logged after a newer tenure began continues a
                // tenure that is over: it says nothing new.
                if since.is_some_and(|s| self.known(key, h, s)) {
                    return;
                }
                self.end_open(key, ev.at, Ending::Unseen, None);
                match since {
                    Some(s) if s <= ev.at => self.open(key, h, s, true),
                    _ => self.open(key, h, ev.at, false),
                }
            }
            Kind::Reclaimed => {
                let prev = ev.previous_holder.and_then(|p| self.holders.intern(p, cap));
                if self.open_holder(key).is_some() {
                    self.end_open(key, ev.at, Ending::Reclaimed, holder);
                } else if let Some(p) = prev {
                    // The stale tenure's start is not in the log; show what
                    // is known: that it ended here.
                    self.push(
                        key,
                        Tenure {
                            start: ev.at,
                            end: ev.at,
                            holder: p,
                            by: holder,
                            ending: Ending::Reclaimed,
                            start_seen: false,
                        },
                    );
                }
                if let Some(h) = holder {
                    self.open(key, h, ev.at, true);
                }
            }
            Kind::Released | Kind::ForceReleased | Kind::Expired => {
                let ending = match ev.kind {
                    Kind::Released => Ending::Released,
                    Kind::ForceReleased => Ending::ForceReleased,
                    _ => Ending::Expired,
                };
                let by = ev.operator.and_then(|o| self.holders.intern(o, cap));
                self.end(key, holder, ev, ending, by);
            }
        }
    }

    /// Apply an end (release, force-release, expiry) to the tenure it names.
    ///
    /// The log's order is not the order of the ends: a release unlinks the
    /// lockfile first and appends second, so a waiter woken by the unlink
    /// can log its `claim_acquired` before the old holder's
    /// `claim_released` (2 handovers in 10 under `acquire --wait`), and a
    /// stalled writer can log later still. The end event names its tenure
    /// by holder and `acquired_at`, so it ends that tenure wherever the
    /// log's order put it, and never the newer tenure that is open now.
    fn end(
        &mut self,
        key: Sym,
        holder: Option<Sym>,
        ev: &ClaimEvent<'_>,
        ending: Ending,
        by: Option<Sym>,
    ) {
        let open = self.open_at(key).map(|i| self.tenures[key as usize][i]);
        if let Some(o) = open {
            // The open tenure's own end (an event without a holder is a
            // force-release of a corrupted file: whatever was open).
            let same = holder.is_none_or(|h| h == o.holder);
            if same && ev.acquired_at.is_none_or(|a| a >= o.start) {
                self.end_open(key, ev.at, ending, by);
                return;
            }
        }
        // An earlier tenure, logged late: it was ended as unseen by the
        // acquire that followed it; now its end is known.
        if let (Some(h), Some(a)) = (holder, ev.acquired_at) {
            if let Some(i) = self.unseen_end_of(key, h, a) {
                let t = &mut self.tenures[key as usize][i];
                t.end = ev.at.max(t.start);
                t.ending = ending;
                t.by = by;
                return;
            }
        }
        if let Some(o) = open {
            // The holder's own, whose start was moved up to keep the log's
            // order (a writer's clock behind the previous holder's).
            if holder == Some(o.holder) {
                self.end_open(key, ev.at, ending, by);
                return;
            }
        }
        // A tenure whose start the log does not have: the event itself says
        // when it began.
        let Some(h) = holder else { return };
        let (start, seen) = match ev.acquired_at {
            Some(a) if a <= ev.at => (a, true),
            _ => (ev.at, false),
        };
        // Begun after the open one: that one ended, unseen, by then. Begun
        // before it: an earlier tenure ended late in the log, and the open
        // one stands.
        if open.is_some_and(|o| start >= o.start) {
            self.end_open(key, start, Ending::Unseen, None);
        }
        self.push(
            key,
            Tenure {
                start,
                end: ev.at,
                holder: h,
                by,
                ending,
                start_seen: seen,
            },
        );
    }

    /// The tenure of `holder` that an acquire after it ended as unseen and
    /// that was running at `acquired_at`: the one a late end event names.
    /// Only the few tenures begun just before `acquired_at` are looked at
    /// (a late line is late by a handover or two, not by a day).
    fn unseen_end_of(&self, key: Sym, holder: Sym, acquired_at: i64) -> Option<usize> {
        let list = self.tenures.get(key as usize)?;
        let upto = list.partition_point(|t| t.start <= acquired_at);
        (upto.saturating_sub(LATE_LOOKBACK)..upto).rev().find(|&i| {
            let t = &list[i];
            t.holder == holder && t.ending == Ending::Unseen && acquired_at <= t.end
        })
    }

    /// Is a tenure of `holder` that was running at `since` already known
    /// (a renewal of it logged after its successor's acquire)?
    fn known(&self, key: Sym, holder: Sym, since: i64) -> bool {
        let Some(list) = self.tenures.get(key as usize) else {
            return false;
        };
        let upto = list.partition_point(|t| t.start <= since);
        list[upto.saturating_sub(LATE_LOOKBACK)..upto]
            .iter()
            .any(|t| t.holder == holder && !t.is_held() && since <= t.end)
    }

    /// Where the key's open tenure sits: always last (see [`Self::open`]).
    fn open_at(&self, key: Sym) -> Option<usize> {
        let list = self.tenures.get(key as usize)?;
        list.last().filter(|t| t.is_held()).map(|_| list.len() - 1)
    }

    fn open_holder(&self, key: Sym) -> Option<Sym> {
        let i = self.open_at(key)?;
        Some(self.tenures[key as usize][i].holder)
    }

    /// Open a tenure. It starts no earlier than the key's last one: with
    /// writers' clocks apart, the log's order is the truth, and it keeps the
    /// open tenure last (every closed one is pushed only when none is open).
    fn open(&mut self, key: Sym, holder: Sym, start: i64, seen: bool) {
        let last = self.tenures[key as usize].last().map(|t| t.start);
        let start = last.map_or(start, |l| start.max(l));
        self.push(
            key,
            Tenure {
                start,
                end: i64::MAX,
                holder,
                by: None,
                ending: Ending::Held,
                start_seen: seen,
            },
        );
    }

    fn end_open(&mut self, key: Sym, at: i64, ending: Ending, by: Option<Sym>) {
        if let Some(i) = self.open_at(key) {
            let t = &mut self.tenures[key as usize][i];
            t.end = at.max(t.start);
            t.ending = ending;
            t.by = by;
        }
    }

    fn push(&mut self, key: Sym, t: Tenure) {
        let list = &mut self.tenures[key as usize];
        // Appends come in log order, which is time order but for clock
        // skew between writers; keep each list sorted by start anyway, so
        // lookups can bisect.
        if list.last().is_none_or(|x| x.start <= t.start) {
            list.push(t);
        } else {
            let at = list.partition_point(|x| x.start <= t.start);
            list.insert(at, t);
        }
        self.count += 1;
        if self.count > self.limits.max_tenures {
            self.drop_oldest_half();
        }
    }

    /// Drop the ended tenures that ended by the median end, so memory stays
    /// under the limit (plus one open tenure per key) while the recent past
    /// stays whole.
    fn drop_oldest_half(&mut self) {
        let mut ends: Vec<i64> = self
            .tenures
            .iter()
            .flatten()
            .filter(|t| !t.is_held())
            .map(|t| t.end)
            .collect();
        if ends.is_empty() {
            return;
        }
        let mid = ends.len() / 2;
        let (_, cut, _) = ends.select_nth_unstable(mid);
        let cut = *cut;
        let mut count = 0;
        for list in &mut self.tenures {
            // `>`: at least the median goes, even when many ends are equal.
            list.retain(|t| t.is_held() || t.end > cut);
            count += list.len();
        }
        self.count = count;
        self.horizon = Some(self.horizon.map_or(cut, |h| h.max(cut)));
    }

    /// Take in every tenure of `other` (another log's), key by key and
    /// holder by holder, as if its events had been applied here: the
    /// tenures of several logs in one index, each key's kept sorted by
    /// start. What either dropped to stay within its limits stays dropped.
    pub fn absorb(&mut self, other: &TenureIndex) {
        let cap = self.limits.max_names;
        for (name, list) in other.keys() {
            let Some(key) = self.keys.intern(name, cap) else {
                self.skipped += list.len() as u64;
                continue;
            };
            if self.tenures.len() <= key as usize {
                self.tenures.resize_with(key as usize + 1, Vec::new);
            }
            for t in list {
                let holder = self.holders.intern(other.holder_name(t.holder), cap);
                let by =
                    t.by.and_then(|b| self.holders.intern(other.holder_name(b), cap));
                let Some(holder) = holder else {
                    self.skipped += 1;
                    continue;
                };
                self.push(key, Tenure { holder, by, ..*t });
            }
        }
        self.skipped += other.skipped;
        self.applied += other.applied;
        self.earliest = match (self.earliest, other.earliest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.latest = match (self.latest, other.latest) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.horizon = match (self.horizon, other.horizon) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }

    /// Tenures kept.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn key_count(&self) -> usize {
        self.keys.names.len()
    }

    /// Every key with at least one tenure, as (name, tenures oldest first).
    pub fn keys(&self) -> impl Iterator<Item = (&str, &[Tenure])> + '_ {
        self.keys
            .names
            .iter()
            .zip(&self.tenures)
            .filter(|(_, t)| !t.is_empty())
            .map(|(k, t)| (&**k, t.as_slice()))
    }

    pub fn tenures_of(&self, key: &str) -> &[Tenure] {
        self.keys
            .get(key)
            .and_then(|k| self.tenures.get(k as usize))
            .map_or(&[], Vec::as_slice)
    }

    pub fn holder_name(&self, id: Sym) -> &str {
        self.holders.name(id)
    }

    /// Tenures that ended before this were dropped (limits).
    pub fn horizon(&self) -> Option<i64> {
        self.horizon
    }

    /// Events skipped because the name limit was reached.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// Earliest and latest event time applied.
    pub fn span(&self) -> Option<(i64, i64)> {
        Some((self.earliest?, self.latest?))
    }
}

#[cfg(test)]
mod order_tests;
#[cfg(test)]
mod tests;
