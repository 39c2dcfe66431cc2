//! Reading the fleet back (`list`, `events` over etcd), and asking a
//! publisher to force-release one of its claims.
//!
//! Hosts are found by one read of the host index (`PREFIX/host-index/`),
//! or, while it is empty (hosts of older publishers only), by skipping
//! from one `PREFIX/hosts/<machine>/` to the next, each looked for in
//! narrow windows (`NextKey`). An online host's
//! claims are read; an offline host's claims went with its lease, so what
//! it last published (its last known copies) is read instead, never as
//! free (`read`).

use super::layout::{new_request_id, range_end};
use super::next_key::NextKey;
use super::Core;
use crate::claims::Counts;
use crate::claims::{now_ms, ClaimError, ForceOpts};
use crate::events::{parse_event, Event};
use crate::store::fleet::{mark_published, HostInfo, PublishedRoot, RootState};
use crate::store::host_names::label_hosts;
use crate::store::StoreError;
use etcd_client::{
    Compare, CompareOp, GetOptions, LeaseGrantOptions, PutOptions, SortOrder, SortTarget, Txn,
    TxnOp, TxnOpResponse,
};
use serde_json::Value;
use std::time::{Duration, Instant};

mod brief;
mod lanes;
mod read;
mod summary;

pub use crate::store::sink::{FleetRequest, HostRecord, RootOwner, Taken};
pub use lanes::EtcdFeed;
pub use read::{Copies, ParsedPage};

impl HostRecord {
    /// The host as an answer about it names it: the hostname an operator
    /// knows it by, and the machine id that tells twins apart.
    fn named(&self) -> String {
        if self.hostname.is_empty() || self.hostname == self.machine_id {
            self.machine_id.clone()
        } else {
            format!("{} ({})", self.hostname, self.machine_id)
        }
    }

    /// The host as a fleet listing shows it: an online host is seen now,
    /// an offline one when its record was last written.
    fn into_info(self, online: bool, counts: Counts) -> HostInfo {
        HostInfo {
            host_id: self.machine_id,
            label: self.hostname.clone(),
            hostname: self.hostname,
            online,
            last_seen_ms: if online { now_ms() } else { self.last_seen_ms },
            counts,
            roots: self.roots,
        }
    }
}

/// Which published claim a request is about.
#[derive(Debug, Clone, Copy)]
pub struct FleetAsk<'a> {
    /// A host id, or a hostname only one host has.
    pub host: &'a str,
    /// Which of the host's roots; optional when it publishes one.
    pub root_id: Option<&'a str>,
    pub key: &'a str,
}

/// Why a request through the fleet could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no publishing host is named {0:?} (see the \"hosts\" of list --json)")]
    UnknownHost(String),
    #[error("{0:?} names several hosts ({1}); give its host_id")]
    AmbiguousHost(String, String),
    #[error("host {host} is offline (last seen {last_seen}); its claims cannot be changed until its publisher is back")]
    Offline { host: String, last_seen: String },
    #[error("host {host} publishes {} roots ({}); name one with --root-id", .ids.len(), .ids.join(", "))]
    WhichRoot { host: String, ids: Vec<String> },
    #[error("host {host} publishes no root {root_id:?}")]
    UnknownRoot { host: String, root_id: String },
    #[error("host {host} no longer publishes root {root} (its publisher is gone); its claims cannot be changed until one serves it again")]
    RootOffline { host: String, root: String },
    #[error("host {host} publishes no claim on {key:?} under root {root}")]
    NoSuchClaim {
        host: String,
        root: String,
        key: String,
    },
    #[error("host {host} did not answer within {}; the request was withdrawn, nothing was done", crate::claims::human_ms(.after.as_millis() as i64))]
    NoAnswer { host: String, after: Duration },
    #[error("host {host} took the request{} but has not answered within {}; its outcome is unknown yet: look for a claim_force_released event of {key:?} from host {host} in `events` over this store, and for the claim in `list`", .taken_at.map(|t| format!(" at {}", crate::time::instant_words(t, false))).unwrap_or_default(), crate::claims::human_ms(.after.as_millis() as i64))]
    Taken {
        host: String,
        key: String,
        taken_at: Option<i64>,
        after: Duration,
    },
}

/// How often a requester looks for its answer.
const ANSWER_POLL: Duration = Duration::from_millis(50);
/// How long a requester waits for the answer to a request its publisher
/// took: carrying it out may wait out a busy recovery mutex (5 s) first.
const TAKEN_PATIENCE: Duration = Duration::from_secs(15);

/// A host (if it has a record) and whether it is online, and the keys read
/// beside it.
type HostAnd = (Option<(HostRecord, bool)>, Vec<etcd_client::KeyValue>);

/// How a request ended, for its requester.
enum Answer {
    Given(Value),
    /// Withdrawn before any publisher took it: nothing was done.
    Withdrawn,
    /// Taken (at this time, if the request still said so) but not answered
    /// yet: it may have been carried out.
    Pending(Option<i64>),
}

impl Core {
    /// Every host that ever published here, by machine id, in the key
    /// order of their `hosts/` dirs, to `each` until it answers false.
    ///
    /// The rule: the host index first, one keys-only range read over
    /// `PREFIX/host-index/` (a publisher puts its entry with its record).
    /// Only while the index is empty — every host was written by an older
    /// publisher, or there is none — are the hosts found by walking
    /// `hosts/`, each the first key after the one before, found in narrow
    /// windows (see [`NextKey`]), so that the walk does not read every
    /// host's claims and last known copies once per host. A host of an
    /// older publisher beside indexed ones is listed again once a
    /// publisher of this version writes its record.
    fn each_machine(
        &self,
        mut each: impl FnMut(String) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let indexed = self.indexed_machines()?;
        if !indexed.is_empty() {
            for machine in indexed {
                if !each(machine)? {
                    break;
                }
            }
            return Ok(());
        }
        let hosts = self.layout.hosts();
        let mut next = NextKey::new(hosts.len());
        let mut from = hosts.into_bytes();
        while let Some(key) = next.find(&from, |lo, hi| self.first_key(lo, hi))? {
            let Some(machine) = self.layout.machine_of(&key) else {
                break;
            };
            from = range_end(&self.layout.host_dir(&machine));
            if !each(machine)? {
                break;
            }
        }
        Ok(())
    }

    /// Whether any host has published here: one read, mostly (a host
    /// found may have no record, and then no copies).
    pub(super) fn any_machine(&self) -> Result<bool, StoreError> {
        let mut any = false;
        self.each_machine(|_| {
            any = true;
            Ok(false)
        })?;
        Ok(any)
    }

    /// Every machine the host index names: one keys-only range read.
    fn indexed_machines(&self) -> Result<Vec<String>, StoreError> {
        let index = self.layout.host_index();
        let opts = GetOptions::new()
            .with_range(range_end(&index))
            .with_keys_only();
        let resp = self.conn.call(|mut c| {
            let (start, opts) = (index.clone(), opts.clone());
            async move { c.get(start, Some(opts)).await }
        })?;
        Ok(machines_of_index(
            &self.layout,
            resp.kvs().iter().map(|kv| kv.key()),
        ))
    }

    /// The first key in `[from, to)`, if any.
    fn first_key(&self, from: &[u8], to: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let opts = GetOptions::new()
            .with_range(to.to_vec())
            .with_limit(1)
            .with_keys_only();
        let resp = self.conn.call(|mut c| {
            let (start, opts) = (from.to_vec(), opts.clone());
            async move { c.get(start, Some(opts)).await }
        })?;
        Ok(resp.kvs().first().map(|kv| kv.key().to_vec()))
    }

    /// The host record and whether any of its publishers still runs, with
    /// each root's state: published or unreadable while its owner key lives
    /// (a root the record does not name yet is added from that key), offline
    /// once it is gone or while its publisher writes its copies back.
    fn host(&self, machine: &str) -> Result<Option<(HostRecord, bool)>, StoreError> {
        Ok(self.host_and(machine, None)?.0)
    }

    /// [`Core::host`], and in the same transaction every key under
    /// `also` (a prefix of the host's), when given.
    fn host_and(&self, machine: &str, also: Option<&str>) -> Result<HostAnd, StoreError> {
        let ops = self.host_ops(machine, also);
        let resp = self.conn.call(|mut c| {
            let txn = Txn::new().and_then(ops.clone());
            async move { c.txn(txn).await }
        })?;
        let mut got = resp.op_responses().into_iter().filter_map(|r| match r {
            TxnOpResponse::Get(g) => Some(g),
            _ => None,
        });
        let (rec, owners) = (got.next(), got.next());
        let also = match also {
            Some(_) => got.next().map(|g| g.kvs().to_vec()).unwrap_or_default(),
            None => Vec::new(),
        };
        Ok((self.host_of(machine, rec.as_ref(), owners.as_ref()), also))
    }

    /// The reads of [`Core::host_and`], for a transaction of its own or
    /// one of several hosts at once: the record, the owner keys, and every
    /// key under `also` when given.
    fn host_ops(&self, machine: &str, also: Option<&str>) -> Vec<TxnOp> {
        let (record, owners) = (
            self.layout.host_record(machine),
            self.layout.host_owners(machine),
        );
        let range = GetOptions::new().with_range(range_end(&owners));
        let mut ops = vec![TxnOp::get(record, None), TxnOp::get(owners, Some(range))];
        if let Some(also) = also {
            let range = GetOptions::new().with_range(range_end(also));
            ops.push(TxnOp::get(also, Some(range)));
        }
        ops
    }

    /// The host as its record and owner keys (the first two reads of
    /// [`Core::host_ops`]) say: each root published or unreadable while its
    /// owner key lives, offline once it is gone or while its publisher
    /// writes its copies back. None without a record.
    fn host_of(
        &self,
        machine: &str,
        record: Option<&etcd_client::GetResponse>,
        owners: Option<&etcd_client::GetResponse>,
    ) -> Option<(HostRecord, bool)> {
        let prefix = self.layout.host_owners(machine);
        let mut rec = record
            .and_then(|g| g.kvs().first().map(|kv| kv.value().to_vec()))
            .and_then(|v| serde_json::from_slice::<HostRecord>(&v).ok())?;
        let owned: Vec<(String, RootOwner)> = owners
            .map(|g| {
                g.kvs()
                    .iter()
                    .filter_map(|kv| {
                        let id = std::str::from_utf8(kv.key()).ok()?.strip_prefix(&prefix)?;
                        Some((id.to_string(), serde_json::from_slice(kv.value()).ok()?))
                    })
                    .collect()
            })
            .unwrap_or_default();
        for r in &mut rec.roots {
            r.state = RootState::Offline;
            r.error = None;
        }
        // A root whose publisher is still writing its copies back is shown
        // as an offline one (its last known copies), and keeps no host
        // online by itself.
        let online = owned.iter().any(|(_, o)| !o.resyncing);
        for (id, owner) in &owned {
            let at = match rec.roots.iter().position(|r| r.id == *id) {
                Some(at) => at,
                None => {
                    rec.roots
                        .push(PublishedRoot::new(id.clone(), owner.path.clone()));
                    rec.roots.len() - 1
                }
            };
            let r = &mut rec.roots[at];
            if owner.resyncing {
                continue;
            }
            r.error = owner.unreadable.clone();
            r.state = match owner.unreadable {
                Some(_) => RootState::Unreadable,
                None => RootState::Published,
            };
        }
        Some((rec, online))
    }

    fn hosts(&self) -> Result<Vec<(HostRecord, bool)>, StoreError> {
        let mut out = Vec::new();
        self.each_host(|h| {
            out.push(h);
            true
        })?;
        Ok(out)
    }

    /// Each host with a record, in key order, to `each` as soon as it is
    /// found, until `each` answers false.
    fn each_host(
        &self,
        mut each: impl FnMut((HostRecord, bool)) -> bool,
    ) -> Result<(), StoreError> {
        self.each_machine(|m| match self.host(&m) {
            Ok(Some(h)) => Ok(each(h)),
            Ok(None) => Ok(true),
            Err(e) => Err(e),
        })
    }

    /// Every host and its roots, none of their claims.
    pub(super) fn read_fleet_hosts(&self) -> Result<Vec<HostInfo>, StoreError> {
        Ok(self
            .hosts()?
            .into_iter()
            .map(|(rec, online)| rec.into_info(online, Counts::default()))
            .collect::<Vec<_>>())
        .map(|mut hosts| {
            label_hosts(&mut hosts);
            hosts
        })
    }

    /// The last `n` mirrored events of every host, oldest first (by `ts`,
    /// then by the order etcd recorded them).
    pub(super) fn read_fleet_events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        let mut all: Vec<(String, i64, Event)> = Vec::new();
        for (rec, _) in self.hosts()? {
            for root in &rec.roots {
                let place = self.layout.root_place(&rec.machine_id, &root.id);
                let prefix = place.events();
                let opts = GetOptions::new()
                    .with_range(range_end(&prefix))
                    .with_sort(SortTarget::Create, SortOrder::Descend)
                    .with_limit(n.min(i64::MAX as usize) as i64);
                let resp = self.conn.call(|mut c| {
                    let (prefix, opts) = (prefix.clone(), opts.clone());
                    async move { c.get(prefix, Some(opts)).await }
                })?;
                for kv in resp.kvs() {
                    let Ok(text) = std::str::from_utf8(kv.value()) else {
                        continue;
                    };
                    if let Ok(ev) = parse_event(text) {
                        let ev = ev.at_revision(kv.mod_revision());
                        let ev = mark_published(ev, &rec.hostname, &rec.machine_id, &root.path);
                        let ts = ev.ts().unwrap_or_default().to_string();
                        all.push((ts, kv.create_revision(), ev));
                    }
                }
            }
        }
        all.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let from = all.len().saturating_sub(n);
        Ok(all.drain(from..).map(|(_, _, e)| e).collect())
    }

    /// Ask `host`'s publisher to force-release `key` in one of its roots and
    /// wait up to `wait` for its answer (the `force-release --json` object it
    /// wrote, plus `"host_id"` and `"root_id"`). Guards the caller did not
    /// give are filled from the published claim, so the publisher refuses
    /// if the key changed hands since it was published. A request no
    /// publisher took in time is withdrawn, so it is never carried out late;
    /// one taken is waited for, since it may be carried out.
    pub(super) fn request_force_release(
        &self,
        ask: &FleetAsk<'_>,
        opts: &ForceOpts,
        wait: Duration,
    ) -> Result<Value, FleetError> {
        let FleetAsk { host, root_id, key } = *ask;
        if key.is_empty() {
            return Err(StoreError::Claim(ClaimError::EmptyKey).into());
        }
        let (rec, online) = self.find_host(host)?;
        if !online {
            return Err(FleetError::Offline {
                host: rec.named(),
                last_seen: crate::time::instant_words(rec.last_seen_ms, false),
            });
        }
        let root = match (root_id, rec.roots.as_slice()) {
            (Some(id), roots) => {
                roots
                    .iter()
                    .find(|r| r.id == id)
                    .ok_or_else(|| FleetError::UnknownRoot {
                        host: rec.named(),
                        root_id: id.to_string(),
                    })?
            }
            (None, [only]) => only,
            (None, roots) => {
                return Err(FleetError::WhichRoot {
                    host: rec.named(),
                    ids: roots.iter().map(|r| r.id.clone()).collect(),
                })
            }
        };
        if root.state == RootState::Offline {
            return Err(FleetError::RootOffline {
                host: rec.named(),
                root: root.path.clone(),
            });
        }
        let place = self.layout.root_place(&rec.machine_id, &root.id);
        let published =
            self.get_value(&place.claim(key))?
                .ok_or_else(|| FleetError::NoSuchClaim {
                    host: rec.named(),
                    root: root.path.clone(),
                    key: key.to_string(),
                })?;
        let seen = |field: &str| published.pointer(&format!("/record/{field}")).cloned();
        let request = FleetRequest {
            key: key.to_string(),
            expect_holder: opts
                .expect_holder
                .clone()
                .or_else(|| seen("holder").and_then(|v| v.as_str().map(String::from))),
            expect_acquired_at: opts
                .expect_acquired_at
                .or_else(|| seen("acquired_at").and_then(|v| v.as_i64())),
            operator: opts.operator.clone(),
            allow_live: opts.allow_live,
            at_ms: now_ms(),
            taken: None,
        };
        let id = new_request_id(request.at_ms);
        let (rk, ak) = (place.request(&id), place.answer(&id));
        // The request dies on its own shortly after the requester stops
        // waiting, even if the requester itself dies first.
        let ttl = (wait + TAKEN_PATIENCE).as_secs() as i64 + 5;
        let lease = self
            .conn
            .call(|mut c| async move { c.lease_grant(ttl, None::<LeaseGrantOptions>).await })?
            .id();
        let body = serde_json::to_string(&request).unwrap_or_default();
        let put = self.conn.call(|mut c| {
            let (rk, body) = (rk.clone(), body.clone());
            async move {
                c.put(rk, body, Some(PutOptions::new().with_lease(lease)))
                    .await
            }
        })?;
        let put_rev = put.header().map(|h| h.revision()).unwrap_or(0);
        let answer = self.await_answer(&rk, &ak, put_rev, wait);
        let _ = self.conn.call(|mut c| {
            let ak = ak.clone();
            async move {
                c.delete(ak, None).await?;
                c.lease_revoke(lease).await.map(|_| ())
            }
        });
        let mut answer = match answer? {
            Answer::Given(a) => a,
            Answer::Withdrawn => {
                return Err(FleetError::NoAnswer {
                    host: rec.named(),
                    after: wait,
                })
            }
            Answer::Pending(taken_at) => {
                return Err(FleetError::Taken {
                    host: rec.named(),
                    key: key.to_string(),
                    taken_at,
                    after: wait + TAKEN_PATIENCE,
                })
            }
        };
        if let Some(o) = answer.as_object_mut() {
            o.insert("host_id".into(), Value::from(rec.machine_id.as_str()));
            o.insert("root_id".into(), Value::from(root.id.as_str()));
        }
        Ok(answer)
    }

    /// Wait `wait` for the answer to the request at `rk` (put at revision
    /// `put_rev`), then withdraw it: a transaction that succeeds only while
    /// the request is as it was put, so never once a publisher took it. A
    /// taken request is being carried out: its answer is waited for.
    fn await_answer(
        &self,
        rk: &str,
        ak: &str,
        put_rev: i64,
        wait: Duration,
    ) -> Result<Answer, StoreError> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(a) = self.get_value(ak)? {
                return Ok(Answer::Given(a));
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(ANSWER_POLL);
        }
        let resp = self.conn.call(|mut c| {
            let txn = Txn::new()
                .when([Compare::mod_revision(rk, CompareOp::Equal, put_rev)])
                .and_then([TxnOp::delete(rk, None)]);
            async move { c.txn(txn).await }
        })?;
        if resp.succeeded() {
            return Ok(Answer::Withdrawn);
        }
        let taken_at = self
            .get_value(rk)?
            .and_then(|v| serde_json::from_value::<FleetRequest>(v).ok())
            .and_then(|r| r.taken)
            .map(|t| t.at_ms);
        let patience = Instant::now() + TAKEN_PATIENCE;
        while Instant::now() < patience {
            if let Some(a) = self.get_value(ak)? {
                return Ok(Answer::Given(a));
            }
            std::thread::sleep(ANSWER_POLL);
        }
        Ok(Answer::Pending(taken_at))
    }

    fn find_host(&self, name: &str) -> Result<(HostRecord, bool), FleetError> {
        // A label (`vm·3d12`, a hostname two hosts share) names one host.
        let labelled = self
            .read_fleet_hosts()?
            .into_iter()
            .find(|h| h.label == name);
        let name = labelled.as_ref().map_or(name, |h| h.host_id.as_str());
        let hosts = self.hosts()?;
        if let Some(h) = hosts.iter().find(|(r, _)| r.machine_id == name) {
            return Ok(h.clone());
        }
        let named: Vec<_> = hosts.iter().filter(|(r, _)| r.hostname == name).collect();
        match named.as_slice() {
            [] => Err(FleetError::UnknownHost(name.to_string())),
            [one] => Ok((*one).clone()),
            many => Err(FleetError::AmbiguousHost(
                name.to_string(),
                many.iter()
                    .map(|(r, _)| r.machine_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            )),
        }
    }

    /// The JSON value at `key`, if the key exists and holds JSON.
    pub(super) fn get_value(&self, key: &str) -> Result<Option<Value>, StoreError> {
        let resp = self.conn.call(|mut c| {
            let key = key.to_string();
            async move { c.get(key, None).await }
        })?;
        Ok(resp
            .kvs()
            .first()
            .and_then(|kv| serde_json::from_slice(kv.value()).ok()))
    }
}

/// The machines index entries name, in the key order of their `hosts/`
/// dirs (the order the walk finds them in: an encoded id's `/` sorts
/// after a `-` or `.` that the bare index key sorts before).
fn machines_of_index<'a>(
    layout: &super::layout::Layout,
    keys: impl Iterator<Item = &'a [u8]>,
) -> Vec<String> {
    let mut machines: Vec<String> = keys.filter_map(|k| layout.machine_of_index(k)).collect();
    machines.sort_by_cached_key(|m| layout.host_dir(m));
    machines.dedup();
    machines
}

#[cfg(test)]
mod tests {
    use super::super::layout::Layout;
    use super::machines_of_index;

    #[test]
    fn the_index_names_every_machine_in_the_order_of_their_host_dirs() {
        let l = Layout::new("/fno");
        let ids = ["a", "a-b", "m/1", "z"];
        let keys: Vec<String> = ids.iter().map(|m| l.host_index_entry(m)).collect();
        let mut stray = keys.clone();
        stray.push(l.host_index());
        stray.push(format!("{}x/y", l.host_index()));
        let got = machines_of_index(&l, stray.iter().map(|k| k.as_bytes()));
        let mut want: Vec<&str> = ids.to_vec();
        want.sort_by_key(|m| l.host_dir(m));
        assert_eq!(got, want);
        assert_eq!(got.len(), ids.len());
    }
}
