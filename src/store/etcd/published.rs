//! What hosts publish into an etcd site (`claimtop publish`), as a member
//! of its own: read-only copies, one row per claim a host publishes, each
//! placed at `<host_id>/<root_id>/<key>` and judged by its host. It takes
//! no claims; a force-release of a copy is the request to its host's
//! publisher, which acts on its own root. It shares the site's connection.

use super::fleet::ParsedPage;
use super::layout::{copy_key, split_copy_key};
use super::log::Logs;
use super::{watch, Core, EtcdStore};
use crate::claims::census::copy_state;
use crate::claims::{
    AcquireOpts, AcquireOutcome, ClaimRecord, ClaimState, Classifier, Counts, ForceOpts,
    ForceOutcome, ItemRules, Loc, ReleaseOutcome, RenewOutcome, Status, Sweep,
};
use crate::events::history::{History, Log};
use crate::events::Event;
use crate::store::backend::{
    Audit, Backend, Claims, Feed, Flow, ListEnd, ListSink, MemberListing, Words,
};
use crate::store::cursor::{Cursor, Fence};
use crate::store::fleet::{copy_status, logs_of, FleetItem};
use crate::store::{Changes, Fenced, LogFeed, StoreError, Tail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The copies hosts publish into one site.
pub struct Published {
    core: Arc<Core>,
}

impl Published {
    pub(super) fn of(site: &EtcdStore) -> Published {
        Published {
            core: Arc::clone(&site.core),
        }
    }
}

fn place(host_id: &str, root_id: &str, key: &str) -> Loc {
    Loc::new(
        0,
        ItemRules::Copy,
        Path::new(&copy_key(host_id, root_id, key)),
    )
}

static WORDS: Words = Words {
    noun: "copy",
    archive: "archived on its host by its publisher",
};

/// What every verb but force-release says of a copy.
fn read_only(verb: &str) -> StoreError {
    StoreError::Unsupported(format!(
        "a published copy is read-only: {verb} it on its host, whose root is the claim"
    ))
}

/// A copy offline hosts last published: listed, never counted as what a
/// host vouches for now.
fn last_known(item: &FleetItem, last_seen_ms: i64) -> Option<Status> {
    let mut s = copy_status(place(&item.host_id, &item.root.id, item.key()), &item.item)?;
    let was = s.state;
    s.state = copy_state(was, false);
    s.why = format!(
        "last known at {}, host offline; it was {was} then: {}",
        crate::time::utc_hms(last_seen_ms),
        s.why
    );
    Some(s)
}

impl Claims for Published {
    fn url(&self) -> String {
        format!("{} (published)", self.core.url)
    }

    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn rules(&self) -> ItemRules {
        ItemRules::Copy
    }

    fn takes_claims(&self) -> bool {
        false
    }

    fn acquire(
        &self,
        _: &str,
        _: &str,
        _: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        Err(read_only("acquire"))
    }

    fn release(
        &self,
        _: &str,
        _: &str,
        _: Option<Fence>,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        Err(read_only("release"))
    }

    fn renew(
        &self,
        _: &str,
        _: &str,
        _: i64,
        _: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        Err(read_only("renew"))
    }

    /// The request to the copy's host: its publisher force-releases the
    /// claim in its own root, with the same guards, and answers within the
    /// connection's timeout.
    fn force_release(
        &self,
        copy: &str,
        opts: &ForceOpts,
    ) -> Result<Fenced<ForceOutcome>, StoreError> {
        let (host_id, root_id, key) = split_copy_key(copy)
            .ok_or_else(|| StoreError::Host(format!("{copy:?} names no published copy")))?;
        let answer = self
            .core
            .ask_host(host_id, root_id, key, opts, self.core.conn.timeout())?;
        outcome_of(&answer).map(Fenced::plain)
    }

    fn status(&self, copy: &str, _c: &mut Classifier) -> Result<Fenced<Status>, StoreError> {
        let gone = || {
            Status::free(
                copy.to_string(),
                Loc::new(0, ItemRules::Copy, Path::new(copy)),
                "not published".into(),
            )
        };
        let Some((host_id, root_id, key)) = split_copy_key(copy) else {
            return Ok(Fenced::plain(gone()));
        };
        let item = self
            .core
            .get_value(&self.core.layout.root_place(host_id, root_id).claim(key))?;
        let s = item
            .and_then(|v| copy_status(place(host_id, root_id, key), &v))
            .unwrap_or_else(gone);
        Ok(Fenced::plain(s))
    }

    /// Every copy online hosts publish and what offline hosts last
    /// published (as last known), a page for each root's copies as they are
    /// read (by key within it, host after host: a first screen fills in
    /// while the rest is read), then what the online hosts found in the
    /// roots they read, each saying where (host, root, path): the copies'
    /// hazards, as a root's are its own listing's. (`list` names no copies
    /// member: it takes them from the fleet, so none is counted twice.)
    fn list(&self, _c: &mut Classifier, sink: &mut dyn ListSink) -> Result<ListEnd, StoreError> {
        let root = PathBuf::from(self.url());
        let page_of = |claims: Vec<Status>, hazards| {
            let mut counts = Counts::default();
            for s in &claims {
                counts.add(s.state);
            }
            let sweep = Sweep {
                root: root.clone(),
                claims,
                counts,
                hazards,
            };
            MemberListing::of_sweep(sweep, ItemRules::Copy)
        };
        let mut stopped = false;
        let mut each = |p: ParsedPage| {
            let mut claims: Vec<Status> = if p.known {
                p.items
                    .iter()
                    .filter_map(|i| last_known(i, p.last_seen_ms))
                    .collect()
            } else {
                p.items
                    .iter()
                    .filter_map(|i| copy_status(place(&i.host_id, &i.root.id, i.key()), &i.item))
                    .collect()
            };
            claims.sort_by(|a, b| (&a.key, &a.file).cmp(&(&b.key, &b.file)));
            stopped = sink.page(page_of(claims, Vec::new())) == Flow::Stop;
            !stopped
        };
        let fleet = self
            .core
            .read_fleet_paged(super::fleet::Copies::Whole, Some(&mut each))?;
        if !stopped {
            sink.page(page_of(Vec::new(), fleet.hazards));
        }
        Ok(ListEnd {
            at: None,
            complete: !stopped,
        })
    }
}

/// A host's `force-release --json` answer as the outcome it reports.
fn outcome_of(answer: &Value) -> Result<ForceOutcome, StoreError> {
    let text = |k: &str| answer.get(k).and_then(Value::as_str);
    match text("outcome") {
        Some("archived") => Ok(ForceOutcome::Archived {
            archived_to: PathBuf::from(text("archived_to").unwrap_or_default()),
            previous: answer
                .get("previous")
                .filter(|r| !r.is_null())
                .and_then(|r| serde_json::from_value::<ClaimRecord>(r.clone()).ok()),
            previous_state: text("previous_state")
                .and_then(ClaimState::parse)
                .unwrap_or(ClaimState::Live),
        }),
        Some("refused") => Ok(ForceOutcome::Refused(
            text("reason").unwrap_or("refused").to_string(),
        )),
        _ => Err(StoreError::Host(
            text("error")
                .or_else(|| text("text"))
                .unwrap_or("the host did not say")
                .to_string(),
        )),
    }
}

impl Feed for Published {
    /// The site's watch, keeping what hosts publish: a copy changed names
    /// its place (its copy key); a host came, went or rewrote its record.
    fn changes(&self, after: Option<&Cursor>) -> Result<Box<dyn Changes>, StoreError> {
        let start = after
            .and_then(Cursor::as_u64)
            .map(|r| i64::try_from(r).unwrap_or(i64::MAX).saturating_add(1));
        Ok(Box::new(watch::EtcdChanges::copies(&self.core, start)?))
    }
}

impl Audit for Published {
    /// One mirrored log per published root, named by host and root.
    fn logs(&self) -> Result<Vec<(Option<String>, Log)>, StoreError> {
        let hosts = self.core.read_fleet_hosts()?;
        Ok(logs_of(&hosts)
            .into_iter()
            .filter(|(_, l)| *l != Log::Own)
            .collect())
    }

    fn history(&self, log: &Log) -> Result<Box<dyn History>, StoreError> {
        let Log::Mirrored { host_id, root_id } = log else {
            return Err(StoreError::Unsupported(format!(
                "{} keeps the logs hosts mirror, not {log:?}",
                self.url()
            )));
        };
        let prefix = self.core.layout.root_place(host_id, root_id).events();
        Ok(Box::new(super::history::EtcdHistory::new(
            Arc::clone(&self.core),
            prefix,
        )))
    }

    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        self.core.read_fleet_events(n)
    }

    /// The lines every host mirrored, by time, each with its log.
    fn tail(&self, n: usize) -> Result<Tail, StoreError> {
        self.core.log_tail(Logs::Mirrored, n)
    }

    fn follow(&self, after: Option<&Cursor>) -> Result<Box<dyn LogFeed>, StoreError> {
        self.core.log_follow(Logs::Mirrored, after)
    }
}

impl Backend for Published {
    fn audit(&self) -> Option<&dyn Audit> {
        Some(self)
    }
}
