//! Keeping a claim's lease alive while its holder works (`claimtop run` on
//! etcd), and saying when it is lost.

use super::Core;
use crate::store::{StoreError, Tenure};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running keep-alive; dropping it stops renewing (the lease then runs
/// out after its TTL unless the claim is released first).
pub struct KeepAlive {
    lost: Arc<Mutex<Option<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl KeepAlive {
    /// Why the claim is no longer held, once it is not: the lease expired or
    /// was revoked (a force-release, a renew from elsewhere), or etcd could
    /// not be reached for longer than the lease's TTL.
    pub fn lost(&self) -> Option<String> {
        self.lost.lock().ok().and_then(|l| l.clone())
    }
}

impl crate::store::Kept for KeepAlive {
    fn lost(&self) -> Option<String> {
        KeepAlive::lost(self)
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Core {
    /// Renew `tenure`'s lease while the handle lives. Every renewal also
    /// checks that the key still belongs to this tenure, since a
    /// force-release takes the key without necessarily ending the lease first.
    pub(super) fn keep_alive(&self, key: &str, tenure: &Tenure) -> Result<KeepAlive, StoreError> {
        let lease = tenure.lease.id;
        let ttl = Duration::from_secs(tenure.lease.ttl_s.max(3) as u64);
        // A third of the TTL, as etcdctl's keep-alive, but at least every
        // 2 s: the same round also notices a force-release, and a holder's
        // CMD should hear of that in seconds, not a third of an hour.
        let every = (ttl / 3).min(Duration::from_secs(2));
        let revision = tenure.revision;
        let ck = self.layout.claim(key);
        let ended = self.after_loss(key, tenure);
        let mut client = self.conn.client();
        let lost = Arc::new(Mutex::new(None));
        let flag = Arc::clone(&lost);
        let say = move |why: String| {
            if let Ok(mut l) = flag.lock() {
                l.get_or_insert(why);
            }
        };
        let task = self.conn.runtime().spawn(async move {
            // Time of the last renewal etcd confirmed: past the TTL without
            // one, the lease may be gone even if no answer said so.
            let mut confirmed = tokio::time::Instant::now();
            loop {
                let renewed = async {
                    let (mut keeper, mut stream) = client.lease_keep_alive(lease).await?;
                    keeper.keep_alive().await?;
                    let answer = stream.message().await?;
                    let owner = client.get(ck.clone(), None).await?;
                    Ok::<_, etcd_client::Error>((answer, owner))
                };
                let outcome = tokio::time::timeout(every, renewed).await;
                match outcome {
                    Ok(Ok((Some(a), owner))) if a.ttl() > 0 => {
                        let ours = owner.kvs().first().is_some_and(|kv| {
                            kv.create_revision() == revision && kv.lease() == lease
                        });
                        if !ours {
                            ended.start();
                            say("the claim was taken away (force-released or replaced)".into());
                            return;
                        }
                        confirmed = tokio::time::Instant::now();
                    }
                    Ok(Ok(_)) | Ok(Err(etcd_client::Error::LeaseKeepAliveError(_))) => {
                        ended.start();
                        say("the claim's lease expired or was revoked".into());
                        return;
                    }
                    // Unreachable for now: fine while the lease may still run.
                    _ if confirmed.elapsed() < ttl => {}
                    _ => {
                        ended.start();
                        say(format!(
                            "etcd did not confirm the lease for longer than its TTL ({} s)",
                            ttl.as_secs()
                        ));
                        return;
                    }
                }
                tokio::time::sleep(every.saturating_sub(Duration::from_millis(10))).await;
            }
        });
        Ok(KeepAlive { lost, task })
    }
}
