//! Keeping a claim's lease alive while its holder works (`claimtop run` on
//! etcd), saying until when it is surely still held, and when it is lost.
//!
//! The one instant that matters to a holder cut off from etcd: etcd ends a
//! lease at the moment it handled the last renewal plus the TTL. That moment
//! is unknown here, but it came after the request was SENT, so "sent + the
//! TTL etcd answered with" is a bound the lease cannot end before (clock
//! rates apart). Taking the moment the answer ARRIVED instead would move the
//! bound past the real end by the answer's whole delay.

use super::expiry::AfterLoss;
use super::leases::renew;
use super::Core;
use crate::store::{StoreError, Tenure};
use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running keep-alive; dropping it stops renewing (the lease then runs
/// out after its TTL unless the claim is released first).
pub struct KeepAlive {
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
    /// The record of this tenure's end, started once: by the task when it
    /// concludes the claim is lost, or by the holder when it gives the
    /// claim up first (see [`KeepAlive::give_up`]).
    ended: Ended,
    runtime: tokio::runtime::Handle,
}

type Ended = Arc<Mutex<Option<AfterLoss>>>;

/// What the keep-alive task has learnt, read by the holder.
struct State {
    lost: Option<String>,
    /// The lease cannot have ended before this instant.
    safe_until: Instant,
}

impl State {
    fn say(&mut self, why: String) {
        self.lost.get_or_insert(why);
    }

    /// A renewal sent at `sent` was answered with `ttl` left.
    fn confirm(&mut self, sent: Instant, ttl: Duration) {
        self.safe_until = self.safe_until.max(sent + ttl);
    }
}

impl KeepAlive {
    /// Why the claim is no longer held, once it is not: the lease expired or
    /// was revoked (a force-release, or a revoke outside claimtop), or etcd
    /// did not confirm it before it could have run out.
    pub fn lost(&self) -> Option<String> {
        self.state.lock().ok().and_then(|s| s.lost.clone())
    }

    /// Until when the lease is surely still running, from the last renewal
    /// etcd answered: a holder that cannot reach etcd must have stopped its
    /// work before this instant (less a margin for the clocks' rates).
    pub fn safe_until(&self) -> Option<Instant> {
        self.state.lock().ok().map(|s| s.safe_until)
    }

    /// The holder stops treating the claim as its own without releasing it
    /// (it stopped its command ahead of a lease etcd no longer confirms):
    /// the tenure's end is recorded once the key goes, as if the keep-alive
    /// had concluded the loss itself, which it no longer will.
    pub fn give_up(&self) {
        let Some(ended) = self.ended.lock().ok().and_then(|mut e| e.take()) else {
            return;
        };
        let not_before = self.safe_until().unwrap_or_else(Instant::now);
        // Registered with the store before this returns, so the store's
        // drop (the holder's exit) waits for it.
        let _in_runtime = self.runtime.enter();
        ended.not_before(not_before).start();
    }
}

impl crate::store::Kept for KeepAlive {
    fn lost(&self) -> Option<String> {
        KeepAlive::lost(self)
    }

    fn safe_until(&self) -> Option<Instant> {
        KeepAlive::safe_until(self)
    }

    fn give_up(&self) {
        KeepAlive::give_up(self)
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn secs(ttl: i64) -> Duration {
    Duration::from_secs(ttl.max(0) as u64)
}

impl Core {
    /// Renew `tenure`'s lease while the handle lives. Every renewal also
    /// checks that the key still belongs to this tenure, since a
    /// force-release takes the key without necessarily ending the lease first.
    ///
    /// The first renewal is made before this returns, so the holder knows
    /// from its first instant until when the lease is safe (an acquire says
    /// nothing of when its lease was last renewed).
    pub(super) fn keep_alive(&self, key: &str, tenure: &Tenure) -> Result<KeepAlive, StoreError> {
        let lease = tenure.lease.id;
        let ttl = Duration::from_secs(tenure.lease.ttl_s.max(3) as u64);
        // A third of the TTL, as etcdctl's keep-alive, but at least every
        // 2 s: the same round also notices a force-release, and a holder's
        // CMD should hear of that in seconds, not a third of an hour.
        let every = (ttl / 3).min(Duration::from_secs(2));
        let (sent, left) = self.conn.call(|mut c| async move {
            let sent = Instant::now();
            renew(&mut c, lease).await.map(|left| (sent, left))
        })?;
        if left <= 0 {
            return Err(super::conn::answered(
                self.conn.endpoints(),
                format!("the claim's lease {lease:x} expired before it could be kept"),
            ));
        }
        self.mark_kept(key, tenure)?;
        let state = Arc::new(Mutex::new(State {
            lost: None,
            safe_until: sent + secs(left),
        }));
        let ended: Ended = Arc::new(Mutex::new(Some(self.after_loss(key, tenure))));
        let round = Round {
            client: self.conn.client(),
            lease,
            revision: tenure.revision,
            ck: self.layout.claim(key),
            every,
            state: Arc::clone(&state),
            ended: Arc::clone(&ended),
        };
        let task = self.conn.runtime().spawn(round.forever());
        Ok(KeepAlive {
            state,
            task,
            ended,
            runtime: self.conn.runtime().handle().clone(),
        })
    }
}

impl Core {
    /// Say on the claim's lease that its holder keeps it alive (the key's
    /// `kept/` mark, on that lease), so that another process's renew keeps
    /// the claim there rather than moving it to a lease nobody keeps, and a
    /// release revokes the lease only with the mark gone. Only while the
    /// claim still carries this tenure on this lease: a claim moved or
    /// taken meanwhile is not kept at all.
    fn mark_kept(&self, key: &str, tenure: &Tenure) -> Result<(), StoreError> {
        let (ck, kept, lease) = (
            self.layout.claim(key),
            self.layout.kept(key),
            tenure.lease.id,
        );
        let mark = serde_json::json!({"revision": tenure.revision, "pid": std::process::id()});
        let txn = Txn::new()
            .when([
                Compare::create_revision(ck.clone(), CompareOp::Equal, tenure.revision),
                Compare::lease(ck, CompareOp::Equal, lease),
            ])
            .and_then([TxnOp::put(
                kept,
                mark.to_string(),
                Some(PutOptions::new().with_lease(lease)),
            )]);
        let resp = self.conn.call(|mut c| {
            let txn = txn.clone();
            async move { c.txn(txn).await }
        })?;
        if resp.succeeded() {
            return Ok(());
        }
        Err(super::conn::answered(self.conn.endpoints(), format!(
                "the claim on {key:?} changed (released, taken or moved to another lease) before it could be kept"
            )))
    }
}

/// The keep-alive task's own side.
struct Round {
    client: Client,
    lease: i64,
    revision: i64,
    ck: String,
    every: Duration,
    state: Arc<Mutex<State>>,
    /// Records the tenure's end once it is no longer held, whoever else
    /// is watching or not (unless the holder gave the claim up first).
    ended: Ended,
}

impl Round {
    async fn forever(mut self) {
        loop {
            tokio::time::sleep(self.every.saturating_sub(Duration::from_millis(10))).await;
            if let Some(why) = self.once().await {
                // Started before the loss is seen, so whoever reacts to it
                // (the holder's exit, the store's drop) waits for the record.
                if let Some(ended) = self.ended.lock().ok().and_then(|mut e| e.take()) {
                    ended.start();
                }
                if let Ok(mut s) = self.state.lock() {
                    s.say(why);
                }
                return;
            }
        }
    }

    /// One renewal and one ownership check; why the claim is lost, if it is.
    async fn once(&mut self) -> Option<String> {
        let sent = Instant::now();
        let renewed = tokio::time::timeout(self.every, renew(&mut self.client, self.lease)).await;
        match renewed {
            Ok(Ok(left)) if left > 0 => {
                if let Ok(mut s) = self.state.lock() {
                    s.confirm(sent, secs(left));
                }
            }
            Ok(Ok(_)) | Ok(Err(etcd_client::Error::LeaseKeepAliveError(_))) => {
                return Some("the claim's lease expired or was revoked".into());
            }
            // Unreachable for now: fine while the lease may still run, and
            // the holder is bound by `safe_until` meanwhile.
            _ => return self.unconfirmed(),
        }
        let owner = tokio::time::timeout(self.every, self.client.get(self.ck.clone(), None)).await;
        let Ok(Ok(owner)) = owner else {
            return self.unconfirmed();
        };
        let ours = owner
            .kvs()
            .first()
            .is_some_and(|kv| kv.create_revision() == self.revision && kv.lease() == self.lease);
        (!ours).then(|| "the claim was taken away (force-released or replaced)".into())
    }

    /// etcd did not answer this round: lost once the lease may have run out.
    fn unconfirmed(&self) -> Option<String> {
        let safe_until = self.state.lock().ok()?.safe_until;
        (Instant::now() >= safe_until)
            .then(|| "etcd did not confirm the claim's lease before it could run out".to_string())
    }
}
