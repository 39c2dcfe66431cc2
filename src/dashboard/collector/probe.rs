//! The probe: a thread of its own asking a store with a connection for
//! the header's facts (members, leader, revision) once a second, so the
//! header says "disconnected" within a second of the store going quiet.

use crate::claims::now_ms;
use crate::dashboard::action::Action;
use crate::dashboard::model::store::StoreInfo;
use crate::dashboard::model::store::StoreMsg;
use crate::store::{Backend, OpenCtx, Store, StoreError, StoreName};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

/// The probe's own timeout: a stopped store must show as disconnected
/// well before a command's `--timeout` would give up on it.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Between two probes.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How to open a store again (the probe and the op worker each have their
/// own connection).
#[derive(Debug, Clone)]
pub struct Source {
    pub name: StoreName,
    pub ctx: OpenCtx,
}

impl Source {
    /// The store the name opens (its site: the member that takes claims),
    /// on a connection of its own.
    pub fn open(&self) -> Result<Arc<dyn Backend>, StoreError> {
        let store = Store::open(std::slice::from_ref(&self.name), &[], &self.ctx)?;
        Ok(store.one("the dashboard")?.shared())
    }
}

/// Ask the store for its header facts once a second; a failure (or a store
/// that cannot be opened) is the store being unreachable.
pub fn probe(source: Source, out: Sender<Action>) {
    /// The header's facts of a store with a connection; `None` for one
    /// without (nothing to probe).
    fn info_of(store: &dyn Backend) -> Result<Option<StoreInfo>, StoreError> {
        store
            .link()
            .map(|l| l.probe(PROBE_TIMEOUT).map(StoreInfo::from))
            .transpose()
    }
    let mut ctx = source.ctx.clone();
    ctx.timeout = Some(ctx.timeout.map_or(PROBE_TIMEOUT, |t| t.min(PROBE_TIMEOUT)));
    let source = Source { ctx, ..source };
    let mut store: Option<Arc<dyn Backend>> = None;
    loop {
        let answer = match &store {
            Some(s) => info_of(&**s),
            None => source.open().and_then(|s| {
                let info = info_of(&*s);
                store = Some(s);
                info
            }),
        };
        let msg = match answer {
            Ok(Some(info)) => StoreMsg::Info { info, at: now_ms() },
            // A store with nothing to say in a header has no connection to
            // lose: the probe has no more to do.
            Ok(None) => return,
            Err(e) => StoreMsg::Unreachable {
                why: e.to_string(),
                at: now_ms(),
            },
        };
        if out.send(Action::Store(Box::new(msg))).is_err() {
            return;
        }
        std::thread::sleep(PROBE_EVERY);
    }
}
