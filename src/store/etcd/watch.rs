//! The change feed over etcd: one watch on the whole prefix, resumed from
//! the last revision seen after a disconnect, restarted from the oldest
//! revision still kept (with a resync notice) after a compaction.

use super::events::event_of;
use super::Core;
use crate::store::{Change, Changes, StoreError};
use etcd_client::{Client, EventType, GetOptions, KeyValue, WatchOptions};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

/// What the watch task hands the feed's thread.
enum Raw {
    Change(Change),
    /// A claim key was deleted; if no verb recorded its end, its lease ran
    /// out and this observer may be the one to record `claim_expired`.
    ClaimGone(KeyValue),
}

/// A running watch; dropping it stops the watch.
pub struct EtcdChanges {
    core: Arc<Core>,
    rx: Receiver<Raw>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for EtcdChanges {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl EtcdChanges {
    /// Watch from `start` (None: from now on).
    pub(super) fn start(core: &Arc<Core>, start: Option<i64>) -> Result<EtcdChanges, StoreError> {
        let start = match start {
            Some(r) => r,
            None => {
                let probe = core.layout.all();
                let opts = GetOptions::new().with_count_only();
                let resp = core.conn.call(|mut c| {
                    let (probe, opts) = (probe.clone(), opts.clone());
                    async move { c.get(probe, Some(opts)).await }
                })?;
                resp.header().map(|h| h.revision()).unwrap_or(0) + 1
            }
        };
        let (tx, rx) = channel();
        let task =
            core.conn
                .runtime()
                .spawn(run(core.conn.client(), core.layout.clone(), start, tx));
        Ok(EtcdChanges {
            core: Arc::clone(core),
            rx,
            task,
        })
    }
}

impl Changes for EtcdChanges {
    fn next(&mut self, timeout: Duration) -> Result<Option<Change>, StoreError> {
        match self.rx.recv_timeout(timeout) {
            Ok(Raw::Change(c)) => Ok(Some(c)),
            Ok(Raw::ClaimGone(kv)) => {
                // Best effort: if etcd cannot be reached now, another
                // observer (or this one's next deletion) records it.
                let _ = self.core.record_expiry(&kv);
                let key = self.core.layout.key_of_claim(kv.key()).unwrap_or_default();
                Ok(Some(Change::Claim { key }))
            }
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(StoreError::FeedClosed),
        }
    }
}

/// How long to wait before re-opening a failed watch, doubling to a cap.
const RETRY_FIRST: Duration = Duration::from_millis(200);
const RETRY_MAX: Duration = Duration::from_secs(5);

async fn run(mut client: Client, layout: super::Layout, mut next: i64, tx: Sender<Raw>) {
    let mut connected = true;
    let mut backoff = RETRY_FIRST;
    let send = |r: Raw| tx.send(r).is_ok();
    loop {
        let opts = WatchOptions::new()
            .with_prefix()
            .with_prev_key()
            .with_progress_notify()
            .with_start_revision(next);
        let why = match client.watch(layout.all(), Some(opts)).await {
            Err(e) => e.to_string(),
            Ok(mut stream) => loop {
                let resp = match stream.message().await {
                    Ok(Some(r)) => r,
                    Ok(None) => break "the watch stream ended".to_string(),
                    Err(e) => break e.to_string(),
                };
                backoff = RETRY_FIRST;
                if !connected {
                    connected = true;
                    let revision = resp.header().map(|h| h.revision());
                    if !send(Raw::Change(Change::Connected { revision })) {
                        return;
                    }
                }
                if resp.compact_revision() > 0 {
                    // What we missed is gone from history: resume from the
                    // oldest revision kept, and have the face re-read all.
                    let why = format!(
                        "revision {next} was compacted (history now starts at {}); re-reading everything",
                        resp.compact_revision()
                    );
                    next = resp.compact_revision();
                    if !send(Raw::Change(Change::Resync { why })) {
                        return;
                    }
                    break String::new();
                }
                for ev in resp.events() {
                    let Some(kv) = ev.kv() else { continue };
                    next = next.max(kv.mod_revision() + 1);
                    let raw = match (layout.key_of_claim(kv.key()), ev.event_type()) {
                        (Some(_), EventType::Delete) => match ev.prev_kv() {
                            Some(prev) => Raw::ClaimGone(prev.clone()),
                            None => Raw::ClaimGone(kv.clone()),
                        },
                        (Some(key), EventType::Put) => Raw::Change(Change::Claim { key }),
                        (None, EventType::Put)
                            if kv.key().starts_with(layout.events().as_bytes()) =>
                        {
                            match event_of(kv) {
                                Some(e) => Raw::Change(Change::Event(e)),
                                None => continue,
                            }
                        }
                        _ => continue,
                    };
                    if !send(raw) {
                        return;
                    }
                }
            },
        };
        if !why.is_empty() {
            if connected {
                connected = false;
                if !send(Raw::Change(Change::Disconnected { why })) {
                    return;
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(RETRY_MAX);
        }
    }
}
