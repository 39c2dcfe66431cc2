//! Reading the whole fleet back: the hosts, and every copy they publish.

use super::brief;
use super::HostRecord;
use crate::claims::census::count_copies;
use crate::claims::Hazard;
use crate::claims::{now_ms, Counts};
use crate::store::etcd::layout::RootPlace;
use crate::store::etcd::Core;
use crate::store::fleet::{FleetItem, FleetState, PublishedRoot, RootState};
use crate::store::host_names::label_hosts;
use crate::store::raw_copy::{CopyRoot, RawCopy};
use crate::store::StoreError;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};

impl Core {
    /// Every host, what the online ones publish now and what the offline
    /// ones last published. Three threads, each on the next's heels: one
    /// finds the hosts, one reads each host's copies as soon as the host is
    /// found, and one parses each page of copies while the next is read
    /// (parsing 100 000 copies takes as long as reading them).
    pub(in crate::store::etcd) fn read_fleet(
        &self,
        copies: Copies,
    ) -> Result<FleetState, StoreError> {
        self.read_fleet_paged(copies, None)
    }

    /// [`Core::read_fleet`], each root's copies handed to `each` a page at
    /// a time as they are parsed (a host's, then the next's: no key order
    /// across hosts) rather than kept; the state returned holds the hosts
    /// and hazards alone then. `each` returning false stops the reading.
    pub(in crate::store::etcd) fn read_fleet_paged(
        &self,
        copies: Copies,
        each: Option<&mut dyn FnMut(ParsedPage) -> bool>,
    ) -> Result<FleetState, StoreError> {
        Ok(self.read_fleet_kept(copies, each)?.0)
    }

    /// [`Core::read_fleet`] for `list --json`: each online host's copy
    /// that prints as it stands kept as its bytes (beside the state, not
    /// in its items), any other parsed into the state.
    pub(in crate::store::etcd) fn read_fleet_listed(
        &self,
    ) -> Result<(FleetState, Vec<RawCopy>), StoreError> {
        self.read_fleet_kept(Copies::Listed, None)
    }

    fn read_fleet_kept(
        &self,
        copies: Copies,
        mut each: Option<&mut dyn FnMut(ParsedPage) -> bool>,
    ) -> Result<(FleetState, Vec<RawCopy>), StoreError> {
        let (found, read, parsed) = std::thread::scope(|scope| {
            let (to_read, found) = std::sync::mpsc::sync_channel(HOSTS_AHEAD);
            let finder = scope.spawn(move || self.each_host(|h| to_read.send(h).is_ok()));
            let (pages, to_parse) = std::sync::mpsc::sync_channel::<Page>(PAGES_AHEAD);
            let (out, parsed) = match each {
                Some(_) => {
                    let (tx, rx) = std::sync::mpsc::sync_channel::<ParsedPage>(PAGES_AHEAD);
                    (Some(tx), Some(rx))
                }
                None => (None, None),
            };
            let parser = scope.spawn(move || parse_pages(to_parse, copies, out));
            // Several hosts read at once, unless pages are handed on as
            // they come (a host's, then the next's).
            let readers = if each.is_some() { 1 } else { READERS };
            let read_all = move || self.read_hosts(found, pages, readers);
            let read = match (parsed, each.as_mut()) {
                // Read on a thread of its own, while this one hands each
                // parsed page on.
                (Some(parsed), Some(each)) => {
                    let reader = scope.spawn(read_all);
                    for page in parsed.iter() {
                        if !each(page) {
                            break;
                        }
                    }
                    drop(parsed);
                    joined(reader)
                }
                _ => read_all(),
            };
            (joined(finder), read, joined(parser))
        });
        let Parsed {
            items,
            last_known,
            raw,
            mut counts,
        } = parsed;
        let (mut hosts, mut hazards) = (Vec::new(), Vec::new());
        for h in read? {
            hazards.extend(h.hazards);
            hosts.push((h.rec, h.online));
        }
        found?;
        counts.resize(hosts.len(), Counts::default());
        let mut fleet = FleetState {
            items,
            last_known,
            hazards,
            ..FleetState::default()
        };
        for ((rec, online), counts) in hosts.into_iter().zip(counts) {
            fleet.hosts.push(rec.into_info(online, counts));
        }
        label_hosts(&mut fleet.hosts);
        Ok((fleet, raw))
    }

    /// Every host `found`, `readers` at a time, its copies' pages sent to
    /// `pages`; each host with the hazards its roots had, in the order
    /// found. An error, or a parser that takes no more pages, stops every
    /// reader (the host it was reading is kept).
    fn read_hosts(
        &self,
        found: Receiver<(HostRecord, bool)>,
        pages: SyncSender<Page>,
        readers: usize,
    ) -> Result<Vec<HostRead>, StoreError> {
        let next = Mutex::new((found, 0usize));
        let stop = AtomicBool::new(false);
        let one = || -> Result<Vec<HostRead>, StoreError> {
            let mut done = Vec::new();
            let pages = pages.clone();
            while !stop.load(Ordering::Relaxed) {
                let (at, (rec, online)) = {
                    let mut next = next.lock().unwrap_or_else(PoisonError::into_inner);
                    let Ok(host) = next.0.recv() else {
                        break;
                    };
                    next.1 += 1;
                    (next.1 - 1, host)
                };
                let mut hazards = Vec::new();
                let wanted = self.read_pages(at, &rec, online, &pages, &mut hazards);
                done.push(HostRead {
                    at,
                    rec,
                    online,
                    hazards,
                });
                match wanted {
                    Ok(true) => {}
                    // Nobody takes more pages: no more hosts are read.
                    Ok(false) => stop.store(true, Ordering::Relaxed),
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
            Ok(done)
        };
        let all = std::thread::scope(|scope| {
            let others: Vec<_> = (1..readers).map(|_| scope.spawn(one)).collect();
            let mut all = vec![one()];
            all.extend(others.into_iter().map(joined));
            all
        });
        // Either ends the other's work early: no more pages to parse, no
        // more hosts to read.
        drop((pages, next));
        let mut read = Vec::new();
        for r in all {
            read.extend(r?);
        }
        read.sort_by_key(|h| h.at);
        Ok(read)
    }

    /// Read one host's copies, in order, and hand them to the parser a
    /// page at a time: an offline host's last known ones (its claims went
    /// with its lease: what it last said is all there is, and it is said as
    /// that), an online host's claims and hazards of each root it can read,
    /// and the last known ones of each root no publisher serves now (gone,
    /// or writing its copies back after a reconnect).
    fn read_pages(
        &self,
        host: usize,
        rec: &HostRecord,
        online: bool,
        pages: &SyncSender<Page>,
        hazards: &mut Vec<Hazard>,
    ) -> Result<bool, StoreError> {
        let mut wanted = true;
        for root in &rec.roots {
            let place = self.layout.root_place(&rec.machine_id, &root.id);
            let (prefix, known) = match (online, root.state) {
                (false, _) | (true, RootState::Offline) => (place.known(), true),
                (true, RootState::Published) => (place.claims(), false),
                (true, RootState::Unreadable) => continue,
            };
            self.page_through(&prefix, 0, false, |kvs| {
                let page = Page {
                    host,
                    // As the host's record says it (an online one's: now).
                    last_seen_ms: if online { now_ms() } else { rec.last_seen_ms },
                    host_id: rec.machine_id.clone(),
                    hostname: rec.hostname.clone(),
                    root: root.clone(),
                    // Last known copies count as the copies of a host gone.
                    online: online && !known,
                    known,
                    kvs,
                };
                // A parser that stopped takes no more.
                wanted = pages.send(page).is_ok();
                wanted
            })?;
            if !wanted {
                return Ok(false);
            }
            if !known {
                hazards.extend(self.read_hazards(rec, root, &place)?);
            }
        }
        Ok(true)
    }

    /// The hazards one root's host found in it.
    fn read_hazards(
        &self,
        rec: &HostRecord,
        root: &PublishedRoot,
        place: &RootPlace,
    ) -> Result<Vec<Hazard>, StoreError> {
        let hazards = place.hazards();
        let resp = self.conn.call(|mut c| {
            let k = hazards.clone();
            async move { c.get(k, None).await }
        })?;
        let list: Vec<Value> = resp
            .kvs()
            .first()
            .and_then(|kv| serde_json::from_slice(kv.value()).ok())
            .unwrap_or_default();
        Ok(list
            .into_iter()
            .map(|hazard| Hazard::published(&hazard, &rec.machine_id, &root.id, &root.path))
            .collect())
    }
}

/// How much of each copy a reading keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copies {
    /// All of it, as its host printed it.
    Whole,
    /// Its `"state"` and its record's `"acquired_at"` (`brief::Brief`).
    Brief,
    /// All of it; an online host's kept as its bytes where they print as
    /// they stand ([`RawCopy`]), parsed otherwise.
    Listed,
}

/// A thread's result, or its panic carried on.
fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Hosts read at once: etcd answers several ranges at a time, and one
/// reader waits on each answer in turn.
const READERS: usize = 3;

/// One host read, the `at`th found.
struct HostRead {
    at: usize,
    rec: HostRecord,
    online: bool,
    hazards: Vec<Hazard>,
}

/// Hosts found ahead of the reader, at most.
const HOSTS_AHEAD: usize = 4;

/// Pages read ahead of the parser, at most: a few MiB of values.
const PAGES_AHEAD: usize = 4;

/// One page of copies of one root of the `host`th host found, its last
/// known ones when `known`.
struct Page {
    host: usize,
    last_seen_ms: i64,
    host_id: String,
    hostname: String,
    root: PublishedRoot,
    online: bool,
    known: bool,
    kvs: Vec<etcd_client::KeyValue>,
}

/// One root's page of copies, parsed: its last known ones when `known`,
/// with the time its host was last seen (their words say it).
pub struct ParsedPage {
    pub items: Vec<FleetItem>,
    pub known: bool,
    pub last_seen_ms: i64,
}

/// What the parser made of the pages, in the order they were read.
struct Parsed {
    items: Vec<FleetItem>,
    last_known: Vec<FleetItem>,
    /// [`Copies::Listed`]'s copies kept as their bytes.
    raw: Vec<RawCopy>,
    /// Each host's, by its place among the hosts found (up to the last
    /// one any copy came from).
    counts: Vec<Counts>,
}

/// One host's items, last known items and copies kept as bytes.
type Kept = (Vec<FleetItem>, Vec<FleetItem>, Vec<RawCopy>);

/// Each copy as its host printed it (a value that is not JSON is left
/// out), counted on its host as [`count_copies`] counts it; handed to
/// `out` a page at a time when there is one (until it is gone), kept
/// otherwise.
fn parse_pages(
    pages: Receiver<Page>,
    copies: Copies,
    out_pages: Option<SyncSender<ParsedPage>>,
) -> Parsed {
    let mut out = Parsed {
        items: Vec::new(),
        last_known: Vec::new(),
        raw: Vec::new(),
        counts: Vec::new(),
    };
    let mut kept: Vec<Kept> = Vec::new();
    for page in pages {
        if out.counts.len() <= page.host {
            out.counts.resize(page.host + 1, Counts::default());
            kept.resize_with(page.host + 1, Default::default);
        }
        let mut parsed = Vec::with_capacity(page.kvs.len());
        // Kept as bytes: an online host's copies, when nobody takes pages.
        let keep = (copies == Copies::Listed && !page.known && out_pages.is_none())
            .then(|| Arc::new(CopyRoot::new(&page.host_id, &page.hostname, &page.root)));
        for kv in page.kvs {
            let (_, value) = kv.into_key_value();
            let value = match &keep {
                Some(root) => match RawCopy::of(root, value) {
                    Ok(raw) => {
                        let state = std::iter::once(raw.state());
                        out.counts[page.host] += count_copies(state, page.online);
                        kept[page.host].2.push(raw);
                        continue;
                    }
                    Err(value) => value,
                },
                None => value,
            };
            let item = match copies {
                Copies::Whole | Copies::Listed => serde_json::from_slice(&value),
                Copies::Brief => serde_json::from_slice(&value).map(|b: brief::Brief| b.0),
            };
            let Ok(item) = item else {
                continue;
            };
            let copy = FleetItem {
                host_id: page.host_id.clone(),
                hostname: page.hostname.clone(),
                root: page.root.clone(),
                item,
            };
            out.counts[page.host] += count_copies(std::iter::once(copy.state()), page.online);
            parsed.push(copy);
        }
        match &out_pages {
            Some(to) => {
                let p = ParsedPage {
                    items: parsed,
                    known: page.known,
                    last_seen_ms: page.last_seen_ms,
                };
                if to.send(p).is_err() {
                    break;
                }
            }
            None if page.known => kept[page.host].1.append(&mut parsed),
            None => kept[page.host].0.append(&mut parsed),
        }
    }
    // Host after host, as they were found, whichever was read first.
    for (items, last_known, raw) in kept {
        out.items.extend(items);
        out.last_known.extend(last_known);
        out.raw.extend(raw);
    }
    out
}
