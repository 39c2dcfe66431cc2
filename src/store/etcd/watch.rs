//! The change feed over etcd: one watch on the whole prefix, resumed from
//! the last revision seen after a disconnect (etcd stopped, killed and
//! restarted, a member lost), restarted from the oldest revision still kept
//! (with a resync notice) after a compaction, and from now (with a resync
//! notice) when etcd comes back behind what was seen.

use super::events::event_of;
use super::layout::Published;
use super::Core;
use crate::store::{Change, Changes, StoreError};
use etcd_client::{Client, EventType, GetOptions, KeyValue, WatchOptions, WatchResponse};
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

    /// Aborting the watch task drops its sender, which ends a `next`
    /// blocked on the other end at once.
    fn closer(&self) -> Option<Box<dyn FnOnce() + Send>> {
        let task = self.task.abort_handle();
        Some(Box::new(move || task.abort()))
    }
}

/// How long to wait before re-opening a failed watch, doubling to a cap.
/// The cap is how late, at worst, a feed notices that etcd is back (a
/// dashboard's recovery): a refused connect a second costs nothing.
const RETRY_FIRST: Duration = Duration::from_millis(200);
const RETRY_MAX: Duration = Duration::from_secs(1);

async fn run(mut client: Client, layout: super::Layout, next: i64, tx: Sender<Raw>) {
    let mut at = Resume {
        next,
        connected: true,
    };
    let mut backoff = RETRY_FIRST;
    loop {
        let opts = WatchOptions::new()
            .with_prefix()
            .with_prev_key()
            .with_progress_notify()
            .with_start_revision(at.next);
        let why = match client.watch(layout.all(), Some(opts)).await {
            Err(e) => e.to_string(),
            Ok(mut stream) => {
                let mut first = true;
                loop {
                    let resp = match stream.message().await {
                        Ok(Some(r)) => r,
                        Ok(None) => break "the watch stream ended".to_string(),
                        Err(e) => break e.to_string(),
                    };
                    match absorb(&resp, std::mem::take(&mut first), &mut at, &layout, &tx) {
                        Step::More => backoff = RETRY_FIRST,
                        Step::Reopen(why) => break why,
                        Step::Closed => return,
                    }
                }
            }
        };
        if !why.is_empty() {
            if at.connected {
                at.connected = false;
                if tx.send(Raw::Change(Change::Disconnected { why })).is_err() {
                    return;
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(RETRY_MAX);
        }
    }
}

/// Where the feed stands, across the watch streams it opens.
struct Resume {
    /// The first revision not yet passed on.
    next: i64,
    /// False from a `Disconnected` until a stream answers again.
    connected: bool,
}

/// What to do after one watch response.
enum Step {
    /// Go on reading this stream.
    More,
    /// Open a new stream from `Resume::next`: at once when the text is
    /// empty, else after a pause, as an outage this text explains.
    Reopen(String),
    /// Nobody listens to the feed any more.
    Closed,
}

/// Pass one watch response on. `first`: the stream's first answer.
fn absorb(
    resp: &WatchResponse,
    first: bool,
    at: &mut Resume,
    layout: &super::Layout,
    tx: &Sender<Raw>,
) -> Step {
    let send = |r: Raw| tx.send(r).is_ok();
    if resp.canceled() && resp.compact_revision() <= 0 {
        // No further events come on a canceled watch, yet the stream stays
        // open: waiting on it would be a silent, endless outage.
        return Step::Reopen(match resp.cancel_reason() {
            "" => "etcd canceled the watch".to_string(),
            why => format!("etcd canceled the watch: {why}"),
        });
    }
    let revision = resp.header().map(|h| h.revision());
    if !at.connected {
        at.connected = true;
        if !send(Raw::Change(Change::Connected { revision })) {
            return Step::Closed;
        }
    }
    let now = revision.unwrap_or(0);
    if first && now > 0 && now < at.next - 1 {
        // The store is behind what this feed has already passed on:
        // restored from an older backup, or a new cluster on the same
        // endpoints. Its revisions from here on name other changes, so
        // nothing can be resumed: go on from now, and re-read everything.
        let why = format!(
            "etcd is at revision {now}, behind the {} already seen \
             (restored or replaced); re-reading everything",
            at.next - 1
        );
        at.next = now + 1;
        return resync(tx, why);
    }
    if resp.compact_revision() > 0 {
        // What we missed is gone from history: resume from the oldest
        // revision kept, and have the face re-read all.
        let why = format!(
            "revision {} was compacted (history now starts at {}); re-reading everything",
            at.next,
            resp.compact_revision()
        );
        at.next = resp.compact_revision();
        return resync(tx, why);
    }
    for ev in resp.events() {
        let Some(kv) = ev.kv() else { continue };
        at.next = at.next.max(kv.mod_revision() + 1);
        let raw = match (layout.key_of_claim(kv.key()), ev.event_type()) {
            (Some(_), EventType::Delete) => match ev.prev_kv() {
                Some(prev) => Raw::ClaimGone(prev.clone()),
                None => Raw::ClaimGone(kv.clone()),
            },
            (Some(key), EventType::Put) => Raw::Change(Change::Claim { key }),
            (None, EventType::Put) if kv.key().starts_with(layout.events().as_bytes()) => {
                match event_of(kv) {
                    Some(e) => Raw::Change(Change::Event(e)),
                    None => continue,
                }
            }
            (None, _) => match layout.published_of(kv.key()) {
                Some(Published::Host { host_id }) => Raw::Change(Change::Host { host_id }),
                Some(Published::Claim {
                    host_id,
                    root_id,
                    key,
                }) => Raw::Change(Change::Published {
                    host_id,
                    root_id,
                    key,
                }),
                // A mirrored line is written once (create-if-absent) and
                // deleted only when the events retention lease ends.
                Some(Published::Event { host_id, root_id })
                    if ev.event_type() == EventType::Put =>
                {
                    match event_of(kv) {
                        Some(event) => Raw::Change(Change::PublishedEvent {
                            host_id,
                            root_id,
                            event,
                        }),
                        None => continue,
                    }
                }
                Some(Published::Event { .. }) | None => continue,
            },
        };
        if !send(raw) {
            return Step::Closed;
        }
    }
    Step::More
}

/// Ask the face to re-read everything, then reopen the watch at once.
fn resync(tx: &Sender<Raw>, why: String) -> Step {
    match tx.send(Raw::Change(Change::Resync { why })) {
        Ok(()) => Step::Reopen(String::new()),
        Err(_) => Step::Closed,
    }
}
