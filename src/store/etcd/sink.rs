//! Where `claimtop publish` writes, over etcd: the publisher's lease and
//! its keep-alive, the roots it owns, each root's copies (a claim on the
//! lease and its last known twin, in transactions under etcd's limit), its
//! mirrored log lines (create-if-absent, on the retention lease), and the
//! force-release requests it takes and answers. The publisher keeps its
//! loop, its fingerprints and its words; every etcd call it makes is here.

use super::layout::RootPlace;
use super::read_buffer::ReadBufferTrim;
use super::{watch, Core, EtcdStore};
use crate::store::fleet::PublishedRoot;
use crate::store::sink::{
    CopyOp, FleetRequest, HeldCopy, HostRecord, Mirrored, PublishError, Request, RootOwner,
    RootSummary, Sink,
};
use crate::store::{StoreError, Wake};
use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

/// Operations per transaction, under etcd's default limit of 128 (each claim
/// write is two: the claim and its last known twin).
const BATCH: usize = 100;
/// Bytes of keys and values per transaction, well under etcd's default
/// request limit of 1.5 MiB (a claim's copy is written twice).
const TXN_BYTES: usize = 1 << 20;
/// The longest pause between two transactions of one re-sync.
const PACE_MAX: Duration = Duration::from_millis(500);

/// One key as etcd keeps it.
#[derive(Debug, Clone)]
struct Stored {
    key: Vec<u8>,
    value: Vec<u8>,
    /// The lease it hangs on (0: none).
    lease: i64,
    mod_revision: i64,
}

impl Stored {
    fn of(kv: &etcd_client::KeyValue) -> Stored {
        Stored {
            key: kv.key().to_vec(),
            value: kv.value().to_vec(),
            lease: kv.lease(),
            mod_revision: kv.mod_revision(),
        }
    }
}

/// The keep-alive of the publisher's lease, on the connection's runtime.
struct LeaseKeeper {
    task: tokio::task::JoinHandle<()>,
    lost: Arc<AtomicBool>,
}

impl LeaseKeeper {
    /// etcd said the lease is gone, or nothing confirmed it for longer
    /// than its TTL.
    fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The publisher's way into one etcd store: its session is a lease.
pub struct EtcdSink {
    core: Arc<Core>,
    machine: String,
    lease: Option<i64>,
    /// What keeps `lease` alive, and says when it is lost.
    keeper: Option<LeaseKeeper>,
    /// Leases the roots were taken from, ended once nothing true is on them.
    previous: Vec<i64>,
    /// Each root's watch on its requests, by root id.
    watches: HashMap<String, RequestWatch>,
    /// Called when a watch hands a request over ([`Sink::wake_on_request`]).
    wake: Option<Wake>,
    /// Told of every copy and log line written, to trim etcd's read
    /// buffer after a burst of them.
    trim: ReadBufferTrim,
}

/// How often a publisher's lease of `ttl_s` is renewed: a third of it, as
/// etcd's own clients do, so one renewal can fail and the next still
/// lands in time.
pub fn renew_every(ttl_s: i64) -> std::time::Duration {
    std::time::Duration::from_secs(ttl_s.max(3) as u64) / 3
}

impl EtcdSink {
    /// The sink of host `machine` in `store`.
    pub fn of(store: &EtcdStore, machine: &str) -> EtcdSink {
        EtcdSink {
            core: Arc::clone(store.core()),
            machine: machine.to_string(),
            lease: None,
            keeper: None,
            previous: Vec::new(),
            watches: HashMap::new(),
            wake: None,
            trim: ReadBufferTrim::new(Arc::clone(store.core())),
        }
    }

    fn place(&self, root_id: &str) -> RootPlace {
        self.core.layout.root_place(&self.machine, root_id)
    }

    fn lease(&self) -> i64 {
        self.lease.unwrap_or(0)
    }

    fn revoke(&self, lease: i64) -> Result<(), StoreError> {
        self.core
            .conn
            .call(|mut c| async move { c.lease_revoke(lease).await })?;
        Ok(())
    }

    /// Keep `lease` alive from the connection's runtime, whatever the
    /// publisher's loop is busy with (a first sync of thousands of keys can
    /// take longer than the TTL).
    fn keep_alive(&self, lease: i64, ttl_s: i64) -> LeaseKeeper {
        let ttl = Duration::from_secs(ttl_s.max(3) as u64);
        let every = renew_every(ttl_s);
        let lost = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&lost);
        let mut client = self.core.conn.client();
        let task = self.core.conn.runtime().spawn(async move {
            let mut confirmed = tokio::time::Instant::now();
            // One stream for as long as it works: a renewal is then one
            // message on it, not a new call (etcd's cost of an idle fleet
            // is mostly its keep-alives).
            let mut open: Option<(etcd_client::LeaseKeeper, etcd_client::LeaseKeepAliveStream)> =
                None;
            loop {
                let renewed = tokio::time::timeout(every, async {
                    if open.is_none() {
                        open = Some(client.lease_keep_alive(lease).await?);
                    }
                    let Some((keeper, stream)) = open.as_mut() else {
                        return Ok(None);
                    };
                    keeper.keep_alive().await?;
                    Ok::<_, etcd_client::Error>(stream.message().await?.map(|m| m.ttl()))
                })
                .await;
                match renewed {
                    Ok(Ok(Some(left))) if left > 0 => confirmed = tokio::time::Instant::now(),
                    Ok(Ok(Some(_))) => break,
                    // The stream ended or failed: open another next time.
                    _ if confirmed.elapsed() < ttl => open = None,
                    _ => break,
                }
                tokio::time::sleep(every).await;
            }
            flag.store(true, Ordering::SeqCst);
        });
        LeaseKeeper { task, lost }
    }

    /// Every key under `prefix`, read at one revision.
    fn read_all(&self, prefix: &str) -> Result<Vec<Stored>, StoreError> {
        let (kvs, _) = self.core.range_all(prefix)?;
        Ok(kvs.iter().map(Stored::of).collect())
    }

    /// The last key under `prefix`, by key or by when it was created.
    fn last(&self, prefix: &str, by_key: bool) -> Result<Option<Stored>, StoreError> {
        let target = match by_key {
            true => SortTarget::Key,
            false => SortTarget::Create,
        };
        let opts = GetOptions::new()
            .with_range(super::layout::range_end(prefix))
            .with_sort(target, SortOrder::Descend)
            .with_limit(1);
        let resp = self.core.conn.call(move |mut c| {
            let (prefix, opts) = (prefix.to_string(), opts.clone());
            async move { c.get(prefix, Some(opts)).await }
        })?;
        Ok(resp.kvs().first().map(Stored::of))
    }

    /// Put `value` at `key` on the session.
    fn put_on_lease(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let lease = self.lease();
        self.core.conn.call(|mut c| {
            let (key, value) = (key.to_string(), value.to_string());
            async move {
                c.put(key, value, Some(PutOptions::new().with_lease(lease)))
                    .await
            }
        })?;
        Ok(())
    }
}

impl Sink for EtcdSink {
    fn describe(&self) -> String {
        self.core.conn.endpoints().to_string()
    }

    /// A lease that outlived the outage (a partition shorter than its
    /// TTL) is kept: the copies on it still hold, so the re-sync that
    /// follows writes only what changed meanwhile.
    fn begin(&mut self, ttl_s: i64) -> Result<i64, StoreError> {
        if let Some(lease) = self.lease.filter(|_| self.alive().is_ok()) {
            let left = self
                .core
                .conn
                .call(|mut c| async move { c.lease_time_to_live(lease, None).await })?;
            if left.ttl() > 0 {
                return Ok(lease);
            }
        }
        self.keeper = None;
        let granted = self
            .core
            .conn
            .call(|mut c| async move { c.lease_grant(ttl_s, None).await })?;
        let lease = granted.id();
        // An earlier lease of ours is on the owner keys it held: taking
        // them back names it, and `settle` ends it.
        self.lease = Some(lease);
        self.keeper = Some(self.keep_alive(lease, ttl_s));
        // Requests handed over while the store was away may have been
        // dropped half served: every one waiting is handed over again.
        for w in self.watches.values_mut() {
            w.relist = true;
        }
        Ok(lease)
    }

    fn alive(&self) -> Result<(), StoreError> {
        if self.lease.is_some() && !self.keeper.as_ref().is_some_and(LeaseKeeper::lost) {
            return Ok(());
        }
        Err(StoreError::Backend {
            store: format!("etcd at {}", self.core.conn.endpoints()),
            detail: format!(
                "the publisher's lease {} expired or could not be renewed",
                self.lease()
            ),
        })
    }

    fn own(&mut self, root: &PublishedRoot, me: &RootOwner) -> Result<(), PublishError> {
        match self.core.own_root(&self.machine, root, me) {
            Ok(old) => {
                self.previous.extend(old);
                Ok(())
            }
            Err(e) => {
                // The roots taken so far go with the lease.
                if let Some(lease) = self.lease.take() {
                    self.keeper = None;
                    let _ = self.revoke(lease);
                }
                Err(e)
            }
        }
    }

    fn say_owner(&mut self, root_id: &str, me: &RootOwner) -> Result<(), StoreError> {
        self.core.put_root_owner(&self.machine, root_id, me)
    }

    fn settle(&mut self) {
        let mut previous = std::mem::take(&mut self.previous);
        previous.sort_unstable();
        previous.dedup();
        for old in previous.into_iter().filter(|old| Some(*old) != self.lease) {
            let _ = self.revoke(old);
        }
    }

    fn host(&mut self, rec: &HostRecord) -> Result<(), StoreError> {
        self.core.merge_host_record(rec)
    }

    /// Keys on another lease count as not held: that lease is about to
    /// end. A last known twin with no claim beside it (the claim went with
    /// an old lease) is held the same way, so it is re-put or deleted.
    fn held(&mut self, root_id: &str) -> Result<Vec<HeldCopy>, StoreError> {
        let place = self.place(root_id);
        let lease = self.lease();
        let mut held = std::collections::BTreeMap::new();
        for kv in self.read_all(&place.claims())? {
            let Some(key) = place.key_of_claim(&kv.key) else {
                continue;
            };
            let item = serde_json::from_slice::<serde_json::Value>(&kv.value)
                .ok()
                .filter(|_| kv.lease == lease);
            held.insert(key, item);
        }
        for kv in self.read_all(&place.known())? {
            if let Some(key) = place.key_of_known(&kv.key) {
                held.entry(key).or_insert(None);
            }
        }
        Ok(held
            .into_iter()
            .map(|(key, item)| HeldCopy { key, item })
            .collect())
    }

    /// Transactions under etcd's limits: [`BATCH`] operations and
    /// [`TXN_BYTES`] of keys and values each. One change is one transaction
    /// (one store revision); a re-sync of thousands of keys takes tens, and
    /// after each of those the publisher waits as long as it took, so a
    /// hundred publishers starting at once leave etcd half its time for
    /// everyone else (the busier etcd is, the slower they go).
    fn write(
        &mut self,
        root_id: &str,
        ops: &[CopyOp],
        written: &mut dyn FnMut(usize),
    ) -> Result<(), StoreError> {
        let (place, lease) = (self.place(root_id), self.lease());
        let batches = batches(ops, &place);
        let paced = batches.len() > 1;
        for batch in batches {
            let ops: Vec<TxnOp> = batch
                .iter()
                .flat_map(|w| ops_of(&place, w, lease))
                .collect();
            let n = ops.len();
            let txn = Txn::new().and_then(ops);
            let began = std::time::Instant::now();
            self.core.conn.call(|mut c| {
                let txn = txn.clone();
                async move { c.txn(txn).await }
            })?;
            written(batch.len());
            self.trim.wrote(n);
            if paced {
                std::thread::sleep(began.elapsed().min(PACE_MAX));
            }
        }
        Ok(())
    }

    fn hazards(&mut self, root_id: &str, text: &str) -> Result<(), StoreError> {
        self.put_on_lease(&self.place(root_id).hazards(), text)
    }

    fn summary(&mut self, root_id: &str, summary: &RootSummary) -> Result<(), StoreError> {
        let key = self.core.layout.root_summary(&self.machine, root_id);
        let body = serde_json::to_string(summary).unwrap_or_default();
        self.core.conn.call(|mut c| {
            let (key, body) = (key.clone(), body.clone());
            async move { c.put(key, body, None).await }
        })?;
        Ok(())
    }

    fn mirrored(&mut self, root_id: &str, log: &str) -> Result<Mirrored, StoreError> {
        let place = self.place(root_id);
        let mine = format!("{}{log}.", place.events());
        if let Some(kv) = self.last(&mine, true)? {
            if let Some(at) = place.offset_of_event(&kv.key, log) {
                return Ok(Mirrored::Upto(at + kv.value.len() as u64 + 1));
            }
        }
        match self.last(&place.events(), false)? {
            Some(_) => Ok(Mirrored::OtherLogs),
            None => Ok(Mirrored::Nothing),
        }
    }

    /// Create-if-absent, on the events retention lease.
    fn append_event(
        &mut self,
        root_id: &str,
        log: &str,
        offset: u64,
        text: &str,
    ) -> Result<(), StoreError> {
        let key = self.place(root_id).event(log, offset);
        self.core.txn_with_events(|lease| {
            Txn::new()
                .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(
                    key.as_str(),
                    text,
                    Some(PutOptions::new().with_lease(lease)),
                )])
        })?;
        self.trim.wrote(1);
        Ok(())
    }

    /// Listed once, then watched: an idle publisher asks nothing of etcd
    /// for its requests. The watch resumes from its revision by itself
    /// after a disconnect; a compaction that passed it (what came meanwhile
    /// is gone from history) or a new session lists them all again. A
    /// request handed over twice is harmless: taking it succeeds only at
    /// the version it was read at, and a taken one is passed over.
    fn wake_on_request(&mut self, wake: Wake) {
        self.wake = Some(wake);
    }

    fn requests(&mut self, root_id: &str) -> Result<Vec<Request>, StoreError> {
        let prefix = self.place(root_id).requests();
        if !self.watches.contains_key(root_id) {
            let (kvs, at) = self.core.range_all(&prefix)?;
            let reading = Heard(self.wake.clone());
            let (rx, task) = watch::spawn(&self.core, prefix, Some(at + 1), reading)?;
            let w = RequestWatch {
                rx,
                task,
                relist: false,
            };
            self.watches.insert(root_id.to_string(), w);
            let found = kvs.iter().map(|kv| request_of(root_id, Stored::of(kv)));
            return Ok(found.collect());
        }
        let Some(w) = self.watches.get_mut(root_id) else {
            return Ok(Vec::new());
        };
        let mut found = Vec::new();
        loop {
            match w.rx.try_recv() {
                Ok(News::Put(kv)) => found.push(request_of(root_id, kv)),
                Ok(News::Lost) => w.relist = true,
                Ok(News::Quiet) => {}
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.watches.remove(root_id);
                    return Err(StoreError::FeedClosed);
                }
            }
        }
        if std::mem::take(&mut w.relist) {
            let kvs = match self.core.range_all(&prefix) {
                Ok((kvs, _)) => kvs,
                Err(e) => {
                    w.relist = true;
                    return Err(e);
                }
            };
            found = kvs
                .iter()
                .map(|kv| request_of(root_id, Stored::of(kv)))
                .collect();
        }
        Ok(found)
    }

    /// The requester's lease stays on a taken request: a requester that
    /// dies still leaves nothing behind.
    fn take(&mut self, req: &Request, taken: &FleetRequest) -> Result<bool, StoreError> {
        let body = serde_json::to_string(taken).unwrap_or_default();
        let (key, revision) = (req.token.as_slice(), req.version);
        let took = self.core.conn.call(|mut c| {
            let txn = Txn::new()
                .when([Compare::mod_revision(key, CompareOp::Equal, revision)])
                .and_then([TxnOp::put(
                    key,
                    body.as_str(),
                    Some(PutOptions::new().with_ignore_lease()),
                )]);
            async move { c.txn(txn).await }
        })?;
        Ok(took.succeeded())
    }

    fn answer(&mut self, req: &Request, body: &str) -> Result<(), StoreError> {
        let place = self.place(&req.root_id);
        let Some(answer) = place.answer_of(&req.token) else {
            return Ok(());
        };
        let (request, lease) = (req.token.as_slice(), self.lease());
        self.core.conn.call(|mut c| {
            let txn = Txn::new().and_then([
                TxnOp::delete(request, None),
                TxnOp::put(
                    answer.as_str(),
                    body,
                    Some(PutOptions::new().with_lease(lease)),
                ),
            ]);
            async move { c.txn(txn).await }
        })?;
        Ok(())
    }

    fn end(&mut self) -> Result<(), StoreError> {
        self.keeper = None;
        match self.lease.take() {
            Some(lease) => self.revoke(lease),
            None => Ok(()),
        }
    }
}

/// `ops` cut into transactions under [`BATCH`] operations and
/// [`TXN_BYTES`] bytes (a copy bigger than that alone goes alone, and etcd
/// says whether it takes it).
fn batches<'a>(ops: &'a [CopyOp], place: &RootPlace) -> Vec<&'a [CopyOp]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, op) in ops.iter().enumerate() {
        let size = match op {
            CopyOp::Put { key, item } => 2 * (place.claim(key).len() + item.len()),
            CopyOp::Delete { key } => 2 * place.claim(key).len(),
        };
        let full = i - start >= BATCH / 2 || bytes + size > TXN_BYTES;
        if full && i > start {
            out.push(&ops[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < ops.len() {
        out.push(&ops[start..]);
    }
    out
}

/// One root's requests, watched.
struct RequestWatch {
    rx: Receiver<News>,
    task: tokio::task::JoinHandle<()>,
    /// List them all at the next look.
    relist: bool,
}

impl Drop for RequestWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the requests watch hears.
enum News {
    /// A request written (a new one, or one taken).
    Put(Stored),
    /// Requests may have come that the watch cannot say: list them.
    Lost,
    /// Down or up again: the watch resumes by itself.
    Quiet,
}

/// What the requests watch makes of etcd's answers; it wakes the
/// publisher's wait (if it was given one) once a request is handed over.
struct Heard(Option<Wake>);

impl watch::Reading for Heard {
    type Out = News;

    fn events(&mut self, events: &[&etcd_client::Event], out: &mut Vec<News>) {
        for ev in events {
            if ev.event_type() == etcd_client::EventType::Put {
                out.extend(ev.kv().map(|kv| News::Put(Stored::of(kv))));
            }
        }
    }

    fn down(&mut self, _why: String) -> News {
        News::Quiet
    }

    fn up(&mut self, _revision: Option<i64>) -> Option<News> {
        None
    }

    fn lost(&mut self, _why: String) -> News {
        News::Lost
    }

    fn sent(&mut self) {
        if let Some(wake) = &self.0 {
            wake();
        }
    }
}

/// A request as the sink hands it on.
fn request_of(root_id: &str, kv: Stored) -> Request {
    Request {
        root_id: root_id.to_string(),
        body: serde_json::from_slice::<FleetRequest>(&kv.value).map_err(|e| e.to_string()),
        token: kv.key,
        version: kv.mod_revision,
    }
}

fn ops_of(place: &RootPlace, w: &CopyOp, lease: i64) -> [TxnOp; 2] {
    match w {
        CopyOp::Put { key, item } => [
            TxnOp::put(
                place.claim(key),
                item.as_str(),
                Some(PutOptions::new().with_lease(lease)),
            ),
            TxnOp::put(place.known_claim(key), item.as_str(), None),
        ],
        CopyOp::Delete { key } => [
            TxnOp::delete(place.claim(key), None),
            TxnOp::delete(place.known_claim(key), None),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &str, len: usize) -> CopyOp {
        CopyOp::Put {
            key: key.to_string(),
            item: "x".repeat(len),
        }
    }

    #[test]
    fn a_resync_is_cut_into_transactions_under_etcds_operation_and_byte_limits() {
        let place = super::super::Layout::new("/p").root_place("m", "r");
        let small: Vec<CopyOp> = (0..120).map(|i| put(&format!("k{i}"), 10)).collect();
        let cut = batches(&small, &place);
        assert_eq!(
            cut.iter().map(|b| b.len()).collect::<Vec<_>>(),
            [50, 50, 20]
        );
        // Big copies: each transaction stays under the byte limit.
        let big: Vec<CopyOp> = (0..8).map(|i| put(&format!("k{i}"), 200_000)).collect();
        let cut = batches(&big, &place);
        assert!(cut.len() > 1, "{}", cut.len());
        for b in &cut {
            let bytes: usize = b
                .iter()
                .map(|op| match op {
                    CopyOp::Put { item, .. } => 2 * item.len(),
                    CopyOp::Delete { .. } => 0,
                })
                .sum();
            assert!(bytes <= TXN_BYTES, "{bytes}");
        }
        assert_eq!(cut.iter().map(|b| b.len()).sum::<usize>(), 8);
        assert!(batches(&[], &place).is_empty());
    }
}
