//! After a burst of writes, one commit that writes no key: etcd 3.4 then
//! lets go of the read buffer the burst grew.
//!
//! etcd 3.4 answers every lease keep-alive with the store's revision, and
//! reading it opens a read transaction that copies the backend's
//! write-back buffer at the largest size it ever grew to
//! (etcd-io/etcd#12933; 3.5 shares the buffer instead). A hundred
//! publishers syncing at once grow it to thousands of entries, and every
//! commit that writes a key keeps it that size: an idle fleet's ten
//! renewals a second then made etcd allocate 7 MB/s and spend half of its
//! idle CPU collecting it. A commit in which no key was written drops it
//! (the buffer of a bucket unused since the last commit is let go), and
//! the cheapest such commit a client can cause is a lease granted and
//! revoked. So once a publisher's burst has gone quiet it grants one with
//! no key on it, then revokes it, each in a commit of its own: the last
//! publisher of a storm to go quiet leaves etcd's buffer small. On etcd
//! 3.5 and later this costs two requests a burst and changes nothing.

use super::Core;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A burst of at least this many operations is followed by a trim:
/// etcd's buffer starts at 512 entries, and one publisher's paced sync
/// puts about that many within one of etcd's 100 ms commits; fewer
/// grow nothing.
pub const BURST_OPS: usize = 256;
/// Writes this far apart are two bursts; a trim waits this long after the
/// last write of its burst.
pub const QUIET: Duration = Duration::from_secs(2);
/// The trim's lease: revoked at once, or gone by itself this soon after.
const TTL_S: i64 = 10;
/// Between the grant and the revoke: longer than etcd's default commit
/// interval (100 ms), so each is a commit of its own and a chance to find
/// no key written in it.
const APART: Duration = Duration::from_millis(300);

/// The burst being written, and whether a trim waits for it to end.
#[derive(Debug)]
struct Burst {
    ops: usize,
    last: Instant,
    armed: bool,
}

/// Counts a publisher's writes into bursts and trims after each big one.
pub(super) struct ReadBufferTrim {
    core: Arc<Core>,
    burst: Arc<Mutex<Burst>>,
}

impl ReadBufferTrim {
    pub(super) fn new(core: Arc<Core>) -> ReadBufferTrim {
        ReadBufferTrim {
            core,
            burst: Arc::new(Mutex::new(Burst {
                ops: 0,
                last: Instant::now(),
                armed: false,
            })),
        }
    }

    /// `ops` operations were just written.
    pub(super) fn wrote(&self, ops: usize) {
        let Ok(mut b) = self.burst.lock() else {
            return;
        };
        let now = Instant::now();
        if now.duration_since(b.last) > QUIET {
            b.ops = 0;
        }
        b.ops += ops;
        b.last = now;
        if b.ops < BURST_OPS || b.armed {
            return;
        }
        b.armed = true;
        let burst = Arc::clone(&self.burst);
        let mut client = self.core.conn.client();
        self.core.conn.runtime().spawn(async move {
            loop {
                let wait = match burst.lock() {
                    Ok(b) => QUIET.saturating_sub(b.last.elapsed()),
                    Err(_) => return,
                };
                if wait.is_zero() {
                    break;
                }
                tokio::time::sleep(wait).await;
            }
            if let Ok(mut b) = burst.lock() {
                b.armed = false;
                b.ops = 0;
            }
            // Best effort: a grant that fails trims nothing and harms
            // nothing; a revoke that fails leaves a lease with no key to
            // run out by itself.
            let Ok(granted) = client.lease_grant(TTL_S, None).await else {
                return;
            };
            tokio::time::sleep(APART).await;
            let _ = client.lease_revoke(granted.id()).await;
        });
    }
}
