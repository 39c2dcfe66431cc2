//! `list --json`'s copies read lane by lane (a root of a host each) while
//! the document is written: every lane's names and first page first, so
//! that the first claim goes out once each has named its lowest key; then
//! whichever lane holds the merge back, a few at once ([`Merge`] says
//! which). A lane holding [`AHEAD`] copies not written yet is left until
//! the merge takes some: what is held stays about a page a lane.

use super::HostRecord;
use crate::claims::census::count_copies;
use crate::claims::{decode_key, Counts, Hazard};
use crate::store::copy_merge::{list_copy, CopyFeed, Merge, Next, Place};
use crate::store::etcd::layout::{key_after, range_end};
use crate::store::etcd::Core;
use crate::store::fleet::{FleetItem, FleetRest, FleetState, PublishedRoot, RootState};
use crate::store::host_names::label_hosts;
use crate::store::raw_copy::{CopyRoot, ListCopy};
use crate::store::StoreError;
use etcd_client::{GetOptions, Txn, TxnOp, TxnOpResponse};
use serde_json::Value;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// Lanes read at once: etcd answers several ranges together.
const READERS: usize = 3;
/// Copies in a lane's first page: enough to start the merge, few enough
/// that every lane's is in soon.
const FIRST_PAGE: i64 = 100;
/// Copies in each later page.
const PAGE: i64 = 1000;
/// Names read at once (a tenth of a copy's bytes each).
const NAME_PAGE: i64 = 10_000;
/// Copies a lane may hold unwritten before it is left for others.
const AHEAD: usize = 2 * PAGE as usize;

/// One root of one host, and where its reading stands.
struct Lane {
    host: usize,
    host_id: String,
    hostname: String,
    root: PublishedRoot,
    prefix: String,
    /// Its place in the merge; None for last known copies, which are
    /// listed apart (read whole, written after the claims).
    merged: Option<usize>,
    hazards_key: Option<String>,
    copy_root: Arc<CopyRoot>,
    /// The revision its names were read at (0: not yet), the next name to
    /// read from and how many came before it.
    at: i64,
    from: Vec<u8>,
    came: usize,
    busy: bool,
    done: bool,
    hazards: Vec<Hazard>,
    last_known: Vec<FleetItem>,
}

#[derive(Default)]
struct St {
    merge: Merge,
    hosts: Vec<(HostRecord, bool)>,
    counts: Vec<Counts>,
    lanes: Vec<Lane>,
    /// The merge's lanes, as [`St::lanes`] indices.
    merged: Vec<usize>,
    found_all: bool,
    error: Option<StoreError>,
    stop: bool,
    readers: usize,
}

impl St {
    fn fail(&mut self, e: StoreError) {
        self.error.get_or_insert(e);
        self.stop = true;
    }

    /// The next lane to read: the merge's pick, else last known copies.
    fn pick(&self) -> Option<usize> {
        let busy: Vec<bool> = self.merged.iter().map(|&i| self.lanes[i].busy).collect();
        if let Some(m) = self.merge.to_read(&busy, AHEAD) {
            return self.merged.get(m).copied();
        }
        // Last known copies are written after the claims: read them last.
        (self.lanes.iter()).position(|l| l.merged.is_none() && !l.busy && !l.done)
    }

    fn all_read(&self) -> bool {
        self.found_all && self.lanes.iter().all(|l| l.done)
    }
}

struct Shared {
    st: Mutex<St>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, St> {
        self.st.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, st: MutexGuard<'a, St>) -> MutexGuard<'a, St> {
        self.changed
            .wait(st)
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The copies of every host of `core`'s store, read on threads of their
/// own until the feed is dropped.
pub struct EtcdFeed {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl EtcdFeed {
    pub(in crate::store::etcd) fn start(core: Arc<Core>) -> EtcdFeed {
        let shared = Arc::new(Shared {
            st: Mutex::new(St {
                readers: READERS,
                ..St::default()
            }),
            changed: Condvar::new(),
        });
        let mut threads = Vec::new();
        let (c, s) = (Arc::clone(&core), Arc::clone(&shared));
        threads.push(std::thread::spawn(move || find(&c, &s)));
        for _ in 0..READERS {
            let (c, s) = (Arc::clone(&core), Arc::clone(&shared));
            threads.push(std::thread::spawn(move || read(&c, &s)));
        }
        EtcdFeed { shared, threads }
    }
}

impl Drop for EtcdFeed {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl CopyFeed for EtcdFeed {
    fn any_hosts(&mut self) -> Result<bool, StoreError> {
        let mut st = self.shared.lock();
        loop {
            if let Some(e) = st.error.take() {
                return Err(e);
            }
            if st.found_all {
                return Ok(!st.hosts.is_empty());
            }
            st = self.shared.wait(st);
        }
    }

    fn next_before(&mut self, before: Option<Place<'_>>) -> Result<Option<ListCopy>, StoreError> {
        let mut st = self.shared.lock();
        loop {
            if let Some(e) = st.error.take() {
                return Err(e);
            }
            match st.merge.next_before(before) {
                Next::Copy(c) => {
                    // A reader may be waiting for this lane to hold less.
                    self.shared.changed.notify_all();
                    return Ok(Some(c));
                }
                Next::Passed => return Ok(None),
                Next::Wait if st.readers == 0 => {
                    return Err(StoreError::Unsupported(
                        "the fleet's copies stopped coming before the last was read".into(),
                    ))
                }
                Next::Wait => {
                    self.shared.changed.notify_all();
                    st = self.shared.wait(st);
                }
            }
        }
    }

    fn finish(&mut self) -> Result<FleetRest, StoreError> {
        let mut st = self.shared.lock();
        while !st.all_read() {
            if let Some(e) = st.error.take() {
                return Err(e);
            }
            if st.readers == 0 {
                return Err(StoreError::Unsupported(
                    "the fleet's copies stopped coming before the last was read".into(),
                ));
            }
            st = self.shared.wait(st);
        }
        let st = &mut *st;
        let mut fleet = FleetState::default();
        for l in &mut st.lanes {
            fleet.hazards.append(&mut l.hazards);
            fleet.last_known.append(&mut l.last_known);
        }
        for (i, (rec, online)) in std::mem::take(&mut st.hosts).into_iter().enumerate() {
            let counts = st.counts.get(i).copied().unwrap_or_default();
            fleet.hosts.push(rec.into_info(online, counts));
        }
        label_hosts(&mut fleet.hosts);
        let (_, mut rest) = fleet.into_copies();
        rest.published += st.merge.counts();
        Ok(rest)
    }
}

/// Find every host, and make a lane of each root whose copies are known:
/// an online host's published roots' claims, the last known copies of an
/// offline host's roots and of a root no publisher serves now.
fn find(core: &Core, shared: &Shared) {
    let found = core.each_host(|(rec, online)| {
        let mut st = shared.lock();
        if st.stop {
            return false;
        }
        let host = st.hosts.len();
        for (root_ix, root) in rec.roots.iter().enumerate() {
            let place = core.layout.root_place(&rec.machine_id, &root.id);
            let (prefix, known) = match (online, root.state) {
                (false, _) | (true, RootState::Offline) => (place.known(), true),
                (true, RootState::Published) => (place.claims(), false),
                (true, RootState::Unreadable) => continue,
            };
            let merged = (!known).then(|| {
                let m = st.merge.add_lane(&rec.machine_id, &root.id, host, root_ix);
                let at = st.lanes.len();
                st.merged.push(at);
                m
            });
            st.lanes.push(Lane {
                host,
                host_id: rec.machine_id.clone(),
                hostname: rec.hostname.clone(),
                root: root.clone(),
                prefix,
                merged,
                hazards_key: (!known).then(|| place.hazards()),
                copy_root: Arc::new(CopyRoot::new(&rec.machine_id, &rec.hostname, root)),
                at: 0,
                from: Vec::new(),
                came: 0,
                busy: false,
                done: false,
                hazards: Vec::new(),
                last_known: Vec::new(),
            });
        }
        st.hosts.push((rec, online));
        st.counts.push(Counts::default());
        drop(st);
        shared.changed.notify_all();
        true
    });
    let mut st = shared.lock();
    match found {
        Ok(()) => {
            st.found_all = true;
            st.merge.all_lanes();
        }
        Err(e) => st.fail(e),
    }
    drop(st);
    shared.changed.notify_all();
}

/// What one read of a lane brought.
struct Step {
    at: i64,
    names: Option<Vec<String>>,
    copies: Vec<Option<ListCopy>>,
    next: Option<Vec<u8>>,
    hazards: Vec<Hazard>,
    last_known: Vec<FleetItem>,
}

/// Read lanes as the merge needs them, until every one is read (or the
/// feed is dropped, or a read fails).
fn read(core: &Core, shared: &Shared) {
    loop {
        let mut st = shared.lock();
        let i = loop {
            if st.stop {
                break None;
            }
            if let Some(i) = st.pick() {
                break Some(i);
            }
            if st.all_read() {
                break None;
            }
            st = shared.wait(st);
        };
        let Some(i) = i else {
            st.readers -= 1;
            drop(st);
            shared.changed.notify_all();
            return;
        };
        st.lanes[i].busy = true;
        let ask = Ask::of(&st.lanes[i]);
        drop(st);
        let step = ask.read(core);
        let mut st = shared.lock();
        match step {
            Ok(step) => take(&mut st, i, step),
            Err(e) => st.fail(e),
        }
        st.lanes[i].busy = false;
        drop(st);
        shared.changed.notify_all();
    }
}

/// What a lane's next read asks for.
struct Ask {
    prefix: String,
    at: i64,
    from: Vec<u8>,
    known: bool,
    hazards_key: Option<String>,
    host_id: String,
    hostname: String,
    root: PublishedRoot,
    copy_root: Arc<CopyRoot>,
}

impl Ask {
    fn of(l: &Lane) -> Ask {
        Ask {
            prefix: l.prefix.clone(),
            at: l.at,
            from: l.from.clone(),
            known: l.merged.is_none(),
            hazards_key: l.hazards_key.clone(),
            host_id: l.host_id.clone(),
            hostname: l.hostname.clone(),
            root: l.root.clone(),
            copy_root: Arc::clone(&l.copy_root),
        }
    }

    fn read(&self, core: &Core) -> Result<Step, StoreError> {
        let mut step = Step {
            at: self.at,
            names: None,
            copies: Vec::new(),
            next: None,
            hazards: Vec::new(),
            last_known: Vec::new(),
        };
        if self.known {
            // Last known copies: parsed, counted as a host gone, and
            // written after the claims, so read whole.
            core.page_through(&self.prefix, 0, false, |kvs| {
                for kv in kvs {
                    let (_, value) = kv.into_key_value();
                    if let Ok(item) = serde_json::from_slice::<Value>(&value) {
                        step.last_known.push(FleetItem {
                            host_id: self.host_id.clone(),
                            hostname: self.hostname.clone(),
                            root: self.root.clone(),
                            item,
                        });
                    }
                }
                true
            })?;
            return Ok(step);
        }
        let end = range_end(&self.prefix);
        let kvs = if self.at == 0 {
            self.first(core, &end, &mut step)?
        } else {
            let opts = GetOptions::new()
                .with_range(end.clone())
                .with_limit(PAGE)
                .with_revision(self.at);
            let mut resp = core.conn.call(|mut c| {
                let (from, opts) = (self.from.clone(), opts.clone());
                async move { c.get(from, Some(opts)).await }
            })?;
            let more = resp.more();
            let kvs = resp.take_kvs();
            step.next = next_from(&kvs, more);
            kvs
        };
        step.copies = kvs
            .into_iter()
            .map(|kv| {
                let (_, value) = kv.into_key_value();
                list_copy(&self.copy_root, &self.hostname, &self.root, value)
            })
            .collect();
        Ok(step)
    }

    /// The lane's names, its first page and its hazards, at one revision.
    fn first(
        &self,
        core: &Core,
        end: &[u8],
        step: &mut Step,
    ) -> Result<Vec<etcd_client::KeyValue>, StoreError> {
        let names = GetOptions::new()
            .with_range(end.to_vec())
            .with_keys_only()
            .with_limit(NAME_PAGE);
        let page = GetOptions::new()
            .with_range(end.to_vec())
            .with_limit(FIRST_PAGE);
        let mut ops = vec![
            TxnOp::get(self.prefix.as_str(), Some(names)),
            TxnOp::get(self.prefix.as_str(), Some(page)),
        ];
        if let Some(h) = &self.hazards_key {
            ops.push(TxnOp::get(h.as_str(), None));
        }
        let resp = core.conn.call(|mut c| {
            let txn = Txn::new().and_then(ops.clone());
            async move { c.txn(txn).await }
        })?;
        step.at = resp.header().map(|h| h.revision()).unwrap_or(0);
        let mut got = resp.op_responses().into_iter().filter_map(|r| match r {
            TxnOpResponse::Get(g) => Some(g),
            _ => None,
        });
        let (Some(mut names), Some(mut page)) = (got.next(), got.next()) else {
            return Err(StoreError::Backend {
                store: core.url.clone(),
                detail: "a transaction of reads answered without them".into(),
            });
        };
        let name = |kv: &etcd_client::KeyValue| {
            let text = String::from_utf8_lossy(kv.key());
            decode_key(text.strip_prefix(&self.prefix).unwrap_or(&text))
        };
        let mut keys: Vec<String> = Vec::new();
        if names.more() {
            // More names than one read carries: all of them, paged.
            core.page_through(&self.prefix, step.at, true, |kvs| {
                keys.extend(kvs.iter().map(name));
                true
            })?;
        } else {
            keys.extend(names.take_kvs().iter().map(name));
        }
        step.names = Some(keys);
        if let Some(h) = got.next() {
            let list: Vec<Value> = h
                .kvs()
                .first()
                .and_then(|kv| serde_json::from_slice(kv.value()).ok())
                .unwrap_or_default();
            step.hazards = list
                .iter()
                .map(|h| Hazard::published(h, &self.host_id, &self.root.id, &self.root.path))
                .collect();
        }
        let more = page.more();
        let kvs = page.take_kvs();
        step.next = next_from(&kvs, more);
        Ok(kvs)
    }
}

/// Where the next page starts, if there is one.
fn next_from(kvs: &[etcd_client::KeyValue], more: bool) -> Option<Vec<u8>> {
    kvs.last()
        .filter(|_| more)
        .map(|last| key_after(last.key()))
}

/// A lane's read, taken in.
fn take(st: &mut St, i: usize, step: Step) {
    let St {
        merge,
        counts,
        lanes,
        ..
    } = st;
    let l = &mut lanes[i];
    let host = &mut counts[l.host];
    for item in &step.last_known {
        *host += count_copies(std::iter::once(item.state()), false);
    }
    l.last_known.extend(step.last_known);
    l.hazards.extend(step.hazards);
    l.at = step.at;
    let Some(m) = l.merged else {
        l.done = true;
        return;
    };
    if let Some(names) = step.names {
        merge.name(m, names);
    }
    for copy in step.copies {
        if let Some(c) = &copy {
            *host += count_copies(std::iter::once(c.state()), true);
        }
        merge.arrive(m, l.came, copy);
        l.came += 1;
    }
    match step.next {
        Some(from) => l.from = from,
        None => {
            l.done = true;
            merge.lane_done(m);
        }
    }
}
