//! The watches over etcd: one loop, resumed from the last revision seen
//! after a disconnect (etcd stopped, killed and restarted, a member lost),
//! restarted from the oldest revision still kept (saying so) after a
//! compaction, and from now (saying so) when etcd comes back behind what
//! was seen. What a response means is the reader's ([`Reading`]): the
//! claims feed ([`EtcdChanges`]) and the log feeds (`super::log`).

use super::layout::copy_key;
use super::layout::Published;
use super::Core;
use crate::store::{Change, Changes, Cursor, StoreError};
use etcd_client::{Client, Event, EventType, GetOptions, KeyValue, WatchOptions, WatchResponse};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

/// What one watch's responses mean to its feed.
pub(super) trait Reading: Send + 'static {
    type Out: Send + 'static;
    /// A response's events not passed on yet, in order, as the feed says
    /// them.
    fn events(&mut self, events: &[&Event], out: &mut Vec<Self::Out>);
    /// The watch lost etcd (said once until it answers again).
    fn down(&mut self, why: String) -> Self::Out;
    /// etcd answers again, at this revision.
    fn up(&mut self, revision: Option<i64>) -> Option<Self::Out>;
    /// Changes were lost (compacted, or etcd behind what was seen): why.
    fn lost(&mut self, why: String) -> Self::Out;
    /// What `events` or `lost` made has been sent: a reader that wakes a
    /// waiter does it here, so the waiter finds it in the receiver.
    fn sent(&mut self) {}
}

/// Watch `prefix` from `start` (None: from now on), what `reading` makes
/// of it sent to the receiver, on the connection's runtime.
pub(super) fn spawn<R: Reading>(
    core: &Arc<Core>,
    prefix: String,
    start: Option<i64>,
    reading: R,
) -> Result<(Receiver<R::Out>, tokio::task::JoinHandle<()>), StoreError> {
    let start = match start {
        Some(r) => r,
        None => now(core)? + 1,
    };
    let (tx, rx) = channel();
    let task = core
        .conn
        .runtime()
        .spawn(run(core.conn.client(), prefix, start, reading, tx));
    Ok((rx, task))
}

/// The store's revision now.
pub(super) fn now(core: &Core) -> Result<i64, StoreError> {
    let probe = core.layout.all();
    let opts = GetOptions::new().with_count_only();
    let resp = core.conn.call(|mut c| {
        let (probe, opts) = (probe.clone(), opts.clone());
        async move { c.get(probe, Some(opts)).await }
    })?;
    Ok(resp.header().map(|h| h.revision()).unwrap_or(0))
}

/// What the claims watch hands the feed's thread.
enum Raw {
    Change(Change),
    /// A claim key was deleted; if no verb recorded its end, its lease ran
    /// out and this observer may be the one to record `claim_expired`.
    ClaimGone(KeyValue),
}

/// The claims feed: one watch on the whole prefix, read as the site's
/// claims or as the copies hosts publish into it. The events logs' keys
/// are neither: their lines come by the audit's own watch (`super::log`).
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
    /// The site's own claims, watched from `start` (None: from now on).
    pub(super) fn start(core: &Arc<Core>, start: Option<i64>) -> Result<EtcdChanges, StoreError> {
        EtcdChanges::of(core, start, false)
    }

    /// The copies hosts publish into the site, each named by its copy key
    /// (`<host_id>/<root_id>/<key>`, the published member's place).
    pub(super) fn copies(core: &Arc<Core>, start: Option<i64>) -> Result<EtcdChanges, StoreError> {
        EtcdChanges::of(core, start, true)
    }

    fn of(core: &Arc<Core>, start: Option<i64>, copies: bool) -> Result<EtcdChanges, StoreError> {
        let reading = Claims {
            layout: core.layout.clone(),
            copies,
        };
        let (rx, task) = spawn(core, core.layout.all(), start, reading)?;
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

/// What the claims feed makes of the whole prefix.
struct Claims {
    layout: super::Layout,
    /// Name the published copies (the published member's feed), not the
    /// site's own claims.
    copies: bool,
}

impl Reading for Claims {
    type Out = Raw;

    fn events(&mut self, events: &[&Event], out: &mut Vec<Raw>) {
        let layout = &self.layout;
        for ev in events {
            let Some(kv) = ev.kv() else { continue };
            let raw = match (layout.key_of_claim(kv.key()), ev.event_type()) {
                // The site's lockfile-like keys are the site feed's alone,
                // so an expiry is recorded by one observer per face.
                (Some(_), _) if self.copies => continue,
                (Some(_), EventType::Delete) => match ev.prev_kv() {
                    Some(prev) => Raw::ClaimGone(prev.clone()),
                    None => Raw::ClaimGone(kv.clone()),
                },
                (Some(key), EventType::Put) => Raw::Change(Change::Claim { key }),
                (None, _) => match layout.published_of(kv.key()) {
                    // Both members hear of the hosts: the site reads them
                    // (`Fleet::hosts`), the copies' listing judges by them.
                    Some(Published::Host { .. }) => Raw::Change(Change::Members),
                    // A host's hazards are its copies' listing's: the copies'
                    // member lists them again (and so reads the hosts); the
                    // site reads its hosts again.
                    Some(Published::Hazards { .. }) if self.copies => {
                        Raw::Change(Change::Relist { why: None })
                    }
                    Some(Published::Hazards { .. }) => Raw::Change(Change::Members),
                    Some(Published::Claim {
                        host_id,
                        root_id,
                        key,
                    }) if self.copies => Raw::Change(Change::Claim {
                        key: copy_key(&host_id, &root_id, &key),
                    }),
                    // A copy is no claim of the site's; a mirrored line and
                    // the site's own log are the audit's (`Audit::follow`).
                    Some(Published::Claim { .. } | Published::Event { .. }) | None => continue,
                },
            };
            out.push(raw);
        }
    }

    fn down(&mut self, why: String) -> Raw {
        Raw::Change(Change::Down { why })
    }

    fn up(&mut self, revision: Option<i64>) -> Option<Raw> {
        let at = revision
            .and_then(|r| u64::try_from(r).ok())
            .map(Cursor::of_u64);
        Some(Raw::Change(Change::Up { at }))
    }

    fn lost(&mut self, why: String) -> Raw {
        Raw::Change(Change::Relist { why: Some(why) })
    }
}

/// How long to wait before re-opening a failed watch, doubling to a cap.
/// The cap is how late, at worst, a feed notices that etcd is back (a
/// dashboard's recovery): a refused connect a second costs nothing.
const RETRY_FIRST: Duration = Duration::from_millis(200);
const RETRY_MAX: Duration = Duration::from_secs(1);

async fn run<R: Reading>(
    mut client: Client,
    prefix: String,
    next: i64,
    mut reading: R,
    tx: Sender<R::Out>,
) {
    let mut at = Resume {
        next,
        compacted: 0,
        connected: true,
    };
    let mut backoff = RETRY_FIRST;
    loop {
        let opts = WatchOptions::new()
            .with_prefix()
            .with_prev_key()
            .with_progress_notify()
            .with_start_revision(at.open_at());
        let why = match client.watch(prefix.clone(), Some(opts)).await {
            Err(e) => e.to_string(),
            Ok(mut stream) => {
                let mut first = true;
                loop {
                    let resp = match stream.message().await {
                        Ok(Some(r)) => r,
                        Ok(None) => break "the watch stream ended".to_string(),
                        Err(e) => break e.to_string(),
                    };
                    let first = std::mem::take(&mut first);
                    match absorb(&resp, first, &mut at, &mut reading, &tx) {
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
                if tx.send(reading.down(why)).is_err() {
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
    /// The newest compaction etcd has said this feed ran into.
    compacted: i64,
    /// False from a `down` until a stream answers again.
    connected: bool,
}

impl Resume {
    /// Where a stream opens: one revision before `next`, whose events were
    /// passed on already and are dropped again. etcd before 3.4.34 / 3.5.15
    /// (etcd-io/etcd#18089) drops a deletion made at the very revision it
    /// was compacted to, and a watch opened at that revision is not told
    /// of the compaction: opened at `next` after such a compaction, the
    /// feed never heard that deletion. Opened one earlier, it is told the
    /// revision was compacted, and everything is listed again. Right after
    /// a compaction it says itself, it opens at that revision: the listing
    /// that follows covers it.
    fn open_at(&self) -> i64 {
        (self.next - 1).max(self.compacted).max(1)
    }
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
fn absorb<R: Reading>(
    resp: &WatchResponse,
    first: bool,
    at: &mut Resume,
    reading: &mut R,
    tx: &Sender<R::Out>,
) -> Step {
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
        if let Some(up) = reading.up(revision) {
            if tx.send(up).is_err() {
                return Step::Closed;
            }
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
        return lost(reading, tx, why);
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
        at.compacted = at.compacted.max(at.next);
        return lost(reading, tx, why);
    }
    // A stream opened one revision early says that revision again.
    let fresh: Vec<&Event> = resp
        .events()
        .iter()
        .filter(|ev| ev.kv().is_none_or(|kv| kv.mod_revision() >= at.next))
        .collect();
    for kv in fresh.iter().filter_map(|ev| ev.kv()) {
        at.next = at.next.max(kv.mod_revision() + 1);
    }
    let mut out = Vec::new();
    reading.events(&fresh, &mut out);
    let any = !out.is_empty();
    for o in out {
        if tx.send(o).is_err() {
            return Step::Closed;
        }
    }
    if any {
        reading.sent();
    }
    Step::More
}

/// Say changes were lost, then reopen the watch at once.
fn lost<R: Reading>(reading: &mut R, tx: &Sender<R::Out>, why: String) -> Step {
    match tx.send(reading.lost(why)) {
        Ok(()) => {
            reading.sent();
            Step::Reopen(String::new())
        }
        Err(_) => Step::Closed,
    }
}
