//! Reading the fleet back (`list`, `events` over etcd), and asking a
//! publisher to force-release one of its claims.
//!
//! Hosts are found by skipping from one `PREFIX/hosts/<machine>/` to the
//! next (one small read per host, however much each one publishes); only
//! online hosts' claims are read, since an offline host's mirror is gone
//! with its lease and its claims are unknown, never free.

use super::layout::{new_request_id, range_end, RootPlace};
use super::Core;
use crate::claims::Counts;
use crate::claims::{now_ms, ClaimError, ForceOpts};
use crate::events::tail::{parse_event, Event};
use crate::store::fleet::{
    count_states, mark_published, Fleet, FleetHazard, FleetItem, HostInfo, PublishedRoot,
};
use crate::store::StoreError;
use etcd_client::{
    Compare, CompareOp, GetOptions, LeaseGrantOptions, PutOptions, SortOrder, SortTarget, Txn,
    TxnOp, TxnOpResponse,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The host record, `PREFIX/hosts/<machine>/host` (no lease).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    pub machine_id: String,
    pub hostname: String,
    pub roots: Vec<PublishedRoot>,
    pub last_seen_ms: i64,
    pub ttl_s: i64,
    pub pid: u32,
}

/// A force-release asked of a publisher, `.../<root-id>/requests/<id>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetRequest {
    pub key: String,
    pub expect_holder: Option<String>,
    pub expect_acquired_at: Option<i64>,
    pub operator: Option<String>,
    #[serde(default)]
    pub allow_live: bool,
    pub at_ms: i64,
}

impl FleetRequest {
    pub fn force_opts(&self) -> ForceOpts {
        ForceOpts {
            expect_holder: self.expect_holder.clone(),
            expect_acquired_at: self.expect_acquired_at,
            operator: self.operator.clone(),
            allow_live: self.allow_live,
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
    #[error("host {host} publishes no claim on {key:?} under root {root}")]
    NoSuchClaim {
        host: String,
        root: String,
        key: String,
    },
    #[error("host {host} did not answer within {}; the request was withdrawn, nothing was done", crate::claims::human_ms(.after.as_millis() as i64))]
    NoAnswer { host: String, after: Duration },
}

/// How often a requester looks for its answer.
const ANSWER_POLL: Duration = Duration::from_millis(50);

impl Core {
    /// Every host that ever published here, by machine id.
    fn machines(&self) -> Result<Vec<String>, StoreError> {
        let end = range_end(&self.layout.hosts());
        let mut from = self.layout.hosts().into_bytes();
        let mut out = Vec::new();
        loop {
            let opts = GetOptions::new()
                .with_range(end.clone())
                .with_limit(1)
                .with_keys_only();
            let start = from.clone();
            let resp = self.conn.call(|mut c| {
                let (start, opts) = (start.clone(), opts.clone());
                async move { c.get(start, Some(opts)).await }
            })?;
            let Some(kv) = resp.kvs().first() else {
                return Ok(out);
            };
            let Some(machine) = self.layout.machine_of(kv.key()) else {
                return Ok(out);
            };
            from = range_end(&self.layout.host_dir(&machine));
            out.push(machine);
        }
    }

    /// The host record and whether its publisher's lease still runs.
    fn host(&self, machine: &str) -> Result<Option<(HostRecord, bool)>, StoreError> {
        let (record, alive) = (
            self.layout.host_record(machine),
            self.layout.host_alive(machine),
        );
        let resp = self.conn.call(|mut c| {
            let txn = Txn::new().and_then([
                TxnOp::get(record.clone(), None),
                TxnOp::get(alive.clone(), Some(GetOptions::new().with_count_only())),
            ]);
            async move { c.txn(txn).await }
        })?;
        let mut got = resp.op_responses().into_iter().filter_map(|r| match r {
            TxnOpResponse::Get(g) => Some(g),
            _ => None,
        });
        let rec = got
            .next()
            .and_then(|g| g.kvs().first().map(|kv| kv.value().to_vec()))
            .and_then(|v| serde_json::from_slice::<HostRecord>(&v).ok());
        let online = got.next().is_some_and(|g| g.count() > 0);
        Ok(rec.map(|r| (r, online)))
    }

    fn hosts(&self) -> Result<Vec<(HostRecord, bool)>, StoreError> {
        let mut out = Vec::new();
        for m in self.machines()? {
            if let Some(h) = self.host(&m)? {
                out.push(h);
            }
        }
        Ok(out)
    }

    /// Every host and its roots, none of their claims.
    pub(super) fn read_fleet_hosts(&self) -> Result<Vec<HostInfo>, StoreError> {
        Ok(self
            .hosts()?
            .into_iter()
            .map(|(rec, online)| HostInfo {
                host_id: rec.machine_id,
                hostname: rec.hostname,
                online,
                last_seen_ms: if online { now_ms() } else { rec.last_seen_ms },
                counts: Counts::default(),
                roots: rec.roots,
            })
            .collect())
    }

    pub(super) fn read_fleet(&self) -> Result<Option<crate::store::fleet::Fleet>, StoreError> {
        let mut fleet = Fleet::default();
        for (rec, online) in self.hosts()? {
            let first = fleet.items.len();
            if online {
                for root in &rec.roots {
                    let place = self.layout.root_place(&rec.machine_id, &root.id);
                    self.read_root(&rec, root, &place, &mut fleet)?;
                }
            }
            fleet.hosts.push(HostInfo {
                host_id: rec.machine_id.clone(),
                hostname: rec.hostname.clone(),
                online,
                last_seen_ms: if online { now_ms() } else { rec.last_seen_ms },
                counts: count_states(fleet.items[first..].iter().map(FleetItem::state)),
                roots: rec.roots,
            });
        }
        Ok((!fleet.is_empty()).then_some(fleet))
    }

    fn read_root(
        &self,
        rec: &HostRecord,
        root: &PublishedRoot,
        place: &RootPlace,
        fleet: &mut Fleet,
    ) -> Result<(), StoreError> {
        let (kvs, _) = self.range_all(&place.claims())?;
        fleet.items.extend(kvs.iter().filter_map(|kv| {
            Some(FleetItem {
                host_id: rec.machine_id.clone(),
                hostname: rec.hostname.clone(),
                root: root.clone(),
                item: serde_json::from_slice(kv.value()).ok()?,
            })
        }));
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
        fleet
            .hazards
            .extend(list.into_iter().map(|hazard| FleetHazard {
                host_id: rec.machine_id.clone(),
                root: root.clone(),
                hazard,
            }));
        Ok(())
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
    /// if the key changed hands since it was published. A request nobody
    /// answered in time is withdrawn, so it is never carried out late.
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
                host: rec.machine_id,
                last_seen: crate::time::utc_hms(rec.last_seen_ms),
            });
        }
        let root = match (root_id, rec.roots.as_slice()) {
            (Some(id), roots) => {
                roots
                    .iter()
                    .find(|r| r.id == id)
                    .ok_or_else(|| FleetError::UnknownRoot {
                        host: rec.machine_id.clone(),
                        root_id: id.to_string(),
                    })?
            }
            (None, [only]) => only,
            (None, roots) => {
                return Err(FleetError::WhichRoot {
                    host: rec.machine_id.clone(),
                    ids: roots.iter().map(|r| r.id.clone()).collect(),
                })
            }
        };
        let place = self.layout.root_place(&rec.machine_id, &root.id);
        let published =
            self.get_value(&place.claim(key))?
                .ok_or_else(|| FleetError::NoSuchClaim {
                    host: rec.machine_id.clone(),
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
        };
        let id = new_request_id(request.at_ms);
        let (rk, ak) = (place.request(&id), place.answer(&id));
        // The request dies on its own shortly after the requester stops
        // waiting, even if the requester itself dies first.
        let ttl = wait.as_secs() as i64 + 5;
        let lease = self
            .conn
            .call(|mut c| async move { c.lease_grant(ttl, None::<LeaseGrantOptions>).await })?
            .id();
        let body = serde_json::to_string(&request).unwrap_or_default();
        self.conn.call(|mut c| {
            let (rk, body) = (rk.clone(), body.clone());
            async move {
                c.put(rk, body, Some(PutOptions::new().with_lease(lease)))
                    .await
            }
        })?;
        let deadline = Instant::now() + wait;
        let answer = loop {
            if let Some(a) = self.get_value(&ak)? {
                break Some(a);
            }
            if Instant::now() >= deadline {
                break self.withdraw(&rk, &ak)?;
            }
            std::thread::sleep(ANSWER_POLL);
        };
        let _ = self.conn.call(|mut c| {
            let ak = ak.clone();
            async move {
                c.delete(ak, None).await?;
                c.lease_revoke(lease).await.map(|_| ())
            }
        });
        let Some(mut answer) = answer else {
            return Err(FleetError::NoAnswer {
                host: rec.machine_id,
                after: wait,
            });
        };
        if let Some(o) = answer.as_object_mut() {
            o.insert("host_id".into(), Value::from(rec.machine_id.as_str()));
            o.insert("root_id".into(), Value::from(root.id.as_str()));
        }
        Ok(answer)
    }

    /// Take an unanswered request back. If the publisher took it first (the
    /// request is gone), its answer is on the way: wait for it a little.
    fn withdraw(&self, rk: &str, ak: &str) -> Result<Option<Value>, StoreError> {
        let resp = self.conn.call(|mut c| {
            let txn = Txn::new()
                .when([Compare::create_revision(rk, CompareOp::Greater, 0)])
                .and_then([TxnOp::delete(rk, None)]);
            async move { c.txn(txn).await }
        })?;
        if resp.succeeded() {
            return Ok(None);
        }
        let grace = Instant::now() + Duration::from_secs(2);
        while Instant::now() < grace {
            if let Some(a) = self.get_value(ak)? {
                return Ok(Some(a));
            }
            std::thread::sleep(ANSWER_POLL);
        }
        Ok(None)
    }

    fn find_host(&self, name: &str) -> Result<(HostRecord, bool), FleetError> {
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
