//! What a classified listing adds up to: its counts by state and every
//! hazard in it. Worked out here, once, for every face — `list` (text and
//! JSON), `doctor`, the metrics gauges, and the dashboard's header, its `h`
//! list and `x`'s offer — so no two of them can count differently.
//!
//! A listing is its claims (each already classified) and the hazards of the
//! entries beside them that are no claim: mutex corpses, temp litter, a
//! broken archive dir or events log, a lockfile name no encoder writes. A
//! claim's own hazards (a key mismatch; a corrupted, unreadable or foreign
//! file) are judged from the claim itself by [`OwnHazards::of`], never kept
//! apart from it: a claim that is re-read or goes takes its hazards with it.

use super::hazard::{self, HazardSpec};
use super::{encode_key, ClaimState, Counts, Hazard, Locality, Status};
use std::borrow::Cow;
use std::path::Path;

/// How a claim's own hazards are judged, by what holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemRules {
    /// A lockfile: its name must be its key's canonical encoding (else a
    /// writer with another encoder made it, and acquire never looks there),
    /// and a record from another machine cannot have its liveness checked.
    Lockfile,
    /// A store key (etcd): the layout encodes the key, so the name is
    /// right by construction, and the lease is the liveness on every
    /// machine alike; a value that does not parse or cannot be read, and a
    /// record naming another key, remain.
    StoreKey,
    /// A read-only copy of a claim a host publishes: its hazards come in
    /// its host's own hazard list, so counting them here would count twice.
    Copy,
}

/// The hazards one claim is by itself, not yet worded: at most a key
/// mismatch and one of corrupted, unreadable or foreign machine, in the
/// order they are reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OwnHazards {
    misnamed: bool,
    unverifiable: Option<&'static HazardSpec>,
}

impl OwnHazards {
    pub fn of(item: &Status, rules: ItemRules) -> OwnHazards {
        if item.state == ClaimState::Free || rules == ItemRules::Copy {
            return OwnHazards::default();
        }
        let names_another = item.record.as_ref().is_some_and(|r| r.key != item.key);
        let misnamed = names_another || (rules == ItemRules::Lockfile && !is_canonical(item));
        let unverifiable = match item.state {
            ClaimState::Corrupted => Some(hazard::CORRUPTED_CLAIM),
            ClaimState::Unreadable => Some(hazard::UNREADABLE),
            // On a store the lease decides on every machine alike.
            _ if rules == ItemRules::Lockfile
                && item.locality == Some(Locality::Other)
                && item.record.is_some() =>
            {
                Some(hazard::FOREIGN_MACHINE)
            }
            _ => None,
        };
        OwnHazards {
            misnamed,
            unverifiable,
        }
    }

    pub fn len(self) -> usize {
        usize::from(self.misnamed) + usize::from(self.unverifiable.is_some())
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn kinds(self) -> impl Iterator<Item = &'static HazardSpec> {
        self.misnamed
            .then_some(hazard::KEY_MISMATCH)
            .into_iter()
            .chain(self.unverifiable)
    }

    /// The kinds its state and its verdict's words do not already say:
    /// shown beside them (a mark on its row, a note after its why). A
    /// corrupted or unreadable claim says so in its state, and a foreign
    /// one in its why ("written on another machine"); that the record
    /// names another key shows nowhere else.
    pub fn unsaid(self) -> impl Iterator<Item = &'static HazardSpec> {
        self.misnamed.then_some(hazard::KEY_MISMATCH).into_iter()
    }
}

fn is_canonical(item: &Status) -> bool {
    item.file.file_name().is_some_and(|name| {
        super::key::is_canonical_lockfile_name(name.as_encoded_bytes(), &item.key)
    })
}

/// Append the hazards `item` is by itself, worded, to `out`.
pub fn own_hazards(item: &Status, rules: ItemRules, out: &mut Vec<Hazard>) {
    let own = OwnHazards::of(item, rules);
    if own.misnamed {
        out.push(Hazard::at_path(
            hazard::KEY_MISMATCH,
            item.file.to_path_buf(),
            mismatch_detail(item, rules),
        ));
    }
    let Some(kind) = own.unverifiable else {
        return;
    };
    let detail = match &item.record {
        Some(rec) if kind == hazard::FOREIGN_MACHINE => format!(
            "written on host {:?} (machine {}); liveness cannot be checked here",
            rec.host,
            rec.machine_id.as_deref().unwrap_or("unrecorded")
        ),
        _ => item.error.clone().unwrap_or_default(),
    };
    out.push(Hazard::at_path(kind, item.file.to_path_buf(), detail));
}

/// Why a claim is a key mismatch. It always names the key the record
/// itself claims: that is the one its writer will release or renew,
/// whatever the file is called.
fn mismatch_detail(item: &Status, rules: ItemRules) -> String {
    let recorded = item.record.as_ref().map(|r| r.key.as_str());
    let mut detail = if rules != ItemRules::Lockfile {
        format!("the store key is named for key {:?}", item.key)
    } else if is_canonical(item) {
        format!("the file is named for key {:?}", item.key)
    } else {
        format!(
            "not the canonical name for key {:?} (that is {}.lock): a writer with \
             another encoder made it, and acquire never looks here",
            item.key,
            encode_key(&item.key)
        )
    };
    match recorded {
        Some(k) if k != item.key => detail.push_str(&format!("; its record claims key {k:?}")),
        Some(k) => detail.push_str(&format!("; its record claims key {k:?} too")),
        None => {}
    }
    detail
}

/// The claim's why, and after it, in words, each hazard it is that its
/// verdict does not already say (see [`OwnHazards::unsaid`]): a claim whose
/// record names another key reads as anything but healthy.
pub fn why_with_hazards(item: &Status, rules: ItemRules) -> Cow<'_, str> {
    let own = OwnHazards::of(item, rules);
    if own.unsaid().next().is_none() {
        return Cow::Borrowed(&item.why);
    }
    let mut worded = Vec::new();
    own_hazards(item, rules, &mut worded);
    let mut why = item.why.clone();
    for h in worded.iter().filter(|h| own.unsaid().any(|k| h.kind == k)) {
        why.push_str(&format!("; ⚠ {}: {}", h.kind.name(), h.detail));
    }
    Cow::Owned(why)
}

/// How a claim a host published counts: as its host judged it while the
/// host is online; once it is offline, as last known — what it said before
/// it went, which nobody can vouch for now, so neither live (the holder may
/// be long gone) nor free (it may still hold the key). Every face counts a
/// copy through here: `list`, `doctor`, the metrics and the dashboard.
pub fn copy_state(published: ClaimState, host_online: bool) -> ClaimState {
    match published {
        ClaimState::Free => ClaimState::Free,
        _ if !host_online => ClaimState::LastKnown,
        s => s,
    }
}

/// Counts of copies by the state words their hosts published, each
/// counted as [`copy_state`] says (a word this build does not know is not
/// counted).
pub fn count_copies<'a>(states: impl Iterator<Item = &'a str>, host_online: bool) -> Counts {
    let mut c = Counts::default();
    for s in states.filter_map(ClaimState::parse) {
        c.add(copy_state(s, host_online));
    }
    c
}

/// Running sums over a set of claims, kept as claims come and go: exactly
/// what [`census`] adds up for the same claims, without walking them all
/// again (a dashboard over 100 000 claims cannot, per change).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub counts: Counts,
    /// How many hazards the claims are by themselves.
    pub own_hazards: usize,
}

impl Tally {
    pub fn add(&mut self, item: &Status, rules: ItemRules) {
        self.counts.add(item.state);
        self.own_hazards += OwnHazards::of(item, rules).len();
    }

    pub fn remove(&mut self, item: &Status, rules: ItemRules) {
        self.counts.remove(item.state);
        let n = OwnHazards::of(item, rules).len();
        self.own_hazards = self.own_hazards.saturating_sub(n);
    }

    /// The sums over `claims`.
    pub fn of<'a>(
        claims: impl IntoIterator<Item = &'a Status>,
        rules: impl Fn(&Status) -> ItemRules,
    ) -> Tally {
        let mut t = Tally::default();
        for s in claims {
            t.add(s, rules(s));
        }
        t
    }
}

/// A listing's counts and every hazard in it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Census {
    pub counts: Counts,
    /// The entries' hazards and the claims' own, sorted by path (stably:
    /// one claim's hazards stay in the order [`OwnHazards`] gives them).
    pub hazards: Vec<Hazard>,
}

/// The counts and the hazards of a classified listing: `claims`, judged by
/// `rules`, beside the hazards of its `entries` that are no claim (see
/// [`entry_hazards`]). Every face counts through here.
pub fn census<'a>(
    claims: impl IntoIterator<Item = &'a Status>,
    entries: impl IntoIterator<Item = Hazard>,
    rules: impl Fn(&Status) -> ItemRules,
) -> Census {
    let mut hazards: Vec<Hazard> = entries.into_iter().collect();
    let mut counts = Counts::default();
    for s in claims {
        counts.add(s.state);
        own_hazards(s, rules(s), &mut hazards);
    }
    hazards.sort_by(|a, b| a.path().cmp(b.path()));
    Census { counts, hazards }
}

/// The hazards in `hazards` that belong to no claim: those at a path no
/// claim of the listing has. Every hazard at a claim's own path is that
/// claim's (a mutex, a temp file or the archive dir has a path of its own),
/// and comes back from the claim itself through [`census`] — keeping it
/// here too would count it twice.
pub fn entry_hazards(hazards: Vec<Hazard>, is_claim: impl Fn(&Path) -> bool) -> Vec<Hazard> {
    hazards
        .into_iter()
        .filter(|h| !is_claim(h.path()))
        .collect()
}

/// A claim as its JSON shows it: the status object, and `"hazards"`, the
/// kinds of hazard it is by itself (empty when none), so a script sees
/// that a live claim's record names another key without reading `doctor`.
pub struct Judged<'a> {
    pub item: &'a Status,
    pub rules: ItemRules,
}

impl Judged<'_> {
    /// A lockfile's claim, judged by a lockfile's rules.
    pub fn lockfile(item: &Status) -> Judged<'_> {
        Judged {
            item,
            rules: ItemRules::Lockfile,
        }
    }
}

impl serde::Serialize for Judged<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Flat<'a> {
            #[serde(flatten)]
            item: &'a Status,
            hazards: Vec<&'static str>,
        }
        Flat {
            item: self.item,
            hazards: own_kind_names(self.item, self.rules),
        }
        .serialize(s)
    }
}

/// The kinds of hazard `item` is by itself, as JSON names them.
pub fn own_kind_names(item: &Status, rules: ItemRules) -> Vec<&'static str> {
    OwnHazards::of(item, rules)
        .kinds()
        .map(|k| k.name)
        .collect()
}

/// A sweep's claims, each with its hazards (a sweep lists lockfiles).
pub(crate) fn judged_lockfiles<S: serde::Serializer>(
    claims: &[Status],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(claims.iter().map(Judged::lockfile))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::ClaimRecord;
    use std::path::PathBuf;

    fn item(key: &str, file: &str, state: ClaimState, record_key: Option<&str>) -> Status {
        Status {
            key: key.into(),
            file: Path::new(file).into(),
            state,
            record: record_key.map(|k| ClaimRecord {
                schema_version: 1,
                key: k.into(),
                holder: "h".into(),
                acquired_at: 1,
                pid: 1,
                host: "there".into(),
                expires_at: None,
                reason: None,
                harness: None,
                machine_id: None,
                metadata: Default::default(),
            }),
            why: "holder pid 1 is alive".into(),
            error: matches!(state, ClaimState::Corrupted | ClaimState::Unreadable)
                .then(|| "cannot read".into()),
            locality: Some(Locality::Local),
            head: Box::default(),
        }
    }

    #[test]
    fn an_offline_hosts_copies_count_as_last_known_never_as_live_nor_free() {
        let words = ["live", "live", "suspect", "corrupted", "free", "nonsense"];
        let online = count_copies(words.iter().copied(), true);
        assert_eq!((online.live, online.suspect, online.corrupted), (2, 1, 1));
        assert_eq!(online.last_known, 0);
        let offline = count_copies(words.iter().copied(), false);
        assert_eq!(offline.live + offline.suspect + offline.corrupted, 0);
        assert_eq!(offline.last_known, 4);
        assert_eq!(offline.total(), online.total());
        assert_eq!(copy_state(ClaimState::Free, false), ClaimState::Free);
    }

    #[test]
    fn an_unreadable_claim_is_one_hazard_however_the_sweep_reported_it() {
        let big = item("big", "/r/c/big.lock", ClaimState::Unreadable, None);
        let swept = vec![
            Hazard::at_path(
                hazard::UNREADABLE,
                big.file.to_path_buf(),
                "cannot read".into(),
            ),
            Hazard::at_path(
                hazard::STALE_MUTEX,
                PathBuf::from("/r/c/big.lock.recovery.d"),
                "corpse".into(),
            ),
        ];
        let claims = [big];
        let entries = entry_hazards(swept, |p| claims.iter().any(|c| *c.file == *p));
        let c = census(&claims, entries, |_| ItemRules::Lockfile);
        let kinds: Vec<_> = c.hazards.iter().map(|h| h.kind.clone()).collect();
        assert_eq!(kinds, [hazard::UNREADABLE, hazard::STALE_MUTEX]);
        assert_eq!(c.counts.unreadable, 1);
        assert_eq!(c.counts.total(), 1);
        let t = Tally::of(&claims, |_| ItemRules::Lockfile);
        assert_eq!((t.counts, t.own_hazards), (c.counts, 1));
    }

    #[test]
    fn a_record_naming_another_key_is_a_hazard_on_every_store_and_said_after_the_why() {
        let mism = item("mism", "/r/c/mism.lock", ClaimState::Live, Some("other"));
        for rules in [ItemRules::Lockfile, ItemRules::StoreKey] {
            let own = OwnHazards::of(&mism, rules);
            assert_eq!(own.kinds().collect::<Vec<_>>(), [hazard::KEY_MISMATCH]);
            let why = why_with_hazards(&mism, rules);
            assert!(
                why.starts_with("holder pid 1 is alive; ⚠ key_mismatch: "),
                "{why}"
            );
            assert!(why.contains("its record claims key \"other\""), "{why}");
        }
        assert!(OwnHazards::of(&mism, ItemRules::Copy).is_empty());
    }

    #[test]
    fn a_store_key_is_never_misnamed_nor_foreign_but_a_lockfile_is() {
        let mut far = item("k", "/fno/claims/k", ClaimState::Live, Some("k"));
        far.locality = Some(Locality::Other);
        assert!(OwnHazards::of(&far, ItemRules::StoreKey).is_empty());
        assert_eq!(far.why, why_with_hazards(&far, ItemRules::StoreKey));
        let kinds: Vec<_> = OwnHazards::of(&far, ItemRules::Lockfile).kinds().collect();
        assert_eq!(
            kinds,
            [hazard::KEY_MISMATCH, hazard::FOREIGN_MACHINE],
            "a lockfile without .lock is no canonical name"
        );
        let unreadable = item("u", "/fno/claims/u", ClaimState::Unreadable, None);
        let kinds: Vec<_> = OwnHazards::of(&unreadable, ItemRules::StoreKey)
            .kinds()
            .collect();
        assert_eq!(kinds, [hazard::UNREADABLE], "never called corrupted");
    }

    #[test]
    fn a_tally_kept_by_adding_and_removing_equals_the_census_of_what_is_left() {
        let a = item("a", "/r/c/a.lock", ClaimState::Corrupted, None);
        let b = item("b", "/r/c/b.lock", ClaimState::Live, Some("x"));
        let c = item("c", "/r/c/c.lock", ClaimState::Suspect, Some("c"));
        let mut t = Tally::default();
        for s in [&a, &b, &c] {
            t.add(s, ItemRules::Lockfile);
        }
        t.remove(&b, ItemRules::Lockfile);
        let left = [a, c];
        let whole = census(&left, Vec::new(), |_| ItemRules::Lockfile);
        assert_eq!(t.counts, whole.counts);
        assert_eq!(t.own_hazards, whole.hazards.len());
    }
}
