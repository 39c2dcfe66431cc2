//! etcd behind the seam's small traits. One URL opens two members sharing
//! one connection: the site itself (its claims, feed, events, leases, the
//! cluster's facts, the hosts publishing into it) and what those hosts
//! publish ([`super::published::Published`]).

use super::log::Logs;
use super::published::Published;
use super::ConnOpts;
use super::{history, watch, EtcdStore};
use crate::claims::{
    AcquireOpts, AcquireOutcome, Classifier, ForceOpts, ForceOutcome, ItemRules, ReleaseOutcome,
    RenewOutcome, Status,
};
use crate::events::history::{History, Log};
use crate::events::Event;
use crate::store::backend::{
    Audit, Backend, Claims, Feed, Fleet, Flow, Leases, Link, LinkFacts, ListEnd, ListSink, Words,
};
use crate::store::cursor::{Cursor, Fence};
use crate::store::fleet::{FleetState, Forgot, HostInfo, SOURCE_STORE};
use crate::store::registry::{OpenCtx, Opened, Opener, Role};
use crate::store::url::check_etcd;
use crate::store::{Changes, Fenced, Kept, LogFeed, StoreError, Tail, Tenure};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// `etcd://` and `etcds://`.
pub const OPENER: Opener = Opener {
    schemes: &["etcd", "etcds"],
    check: |text| check_etcd(text).map(|_| ()),
    open,
    hazards: super::doctor::HAZARDS,
};

/// The site and its published copies, on one connection.
fn open(text: &str, ctx: &OpenCtx) -> Result<Opened, StoreError> {
    let target = check_etcd(text)?;
    let site = EtcdStore::connect(&target, &conn_opts(ctx))?;
    let published = Published::of(&site);
    Ok(vec![
        (Role::Site, Arc::new(site)),
        (Role::Published, Arc::new(published)),
    ])
}

/// The connection settings etcd reads from the context, by its own names.
pub fn conn_opts(ctx: &OpenCtx) -> ConnOpts {
    let s = &ctx.settings;
    let path = |name: &str| s.get(name).map(PathBuf::from);
    ConnOpts {
        cacert: path("etcd-cacert"),
        cert: path("etcd-cert"),
        key: path("etcd-key"),
        user: s.get("etcd-user").map(String::from),
        password: s.get("etcd-password").map(String::from),
        timeout: ctx.timeout,
        events_retention: s
            .get("events-retention-ms")
            .and_then(|ms| ms.parse::<u64>().ok())
            .map(Duration::from_millis),
        heartbeat: None,
    }
}

static WORDS: Words = Words {
    noun: "key",
    archive: "archived under the store's expired/ prefix",
};

impl Claims for EtcdStore {
    fn url(&self) -> String {
        self.core.url.clone()
    }

    fn words(&self) -> &'static Words {
        &WORDS
    }

    /// Named by the layout and kept alive by leases on every machine alike.
    fn rules(&self) -> ItemRules {
        ItemRules::StoreKey
    }

    fn ttl_required(&self) -> Option<&'static str> {
        Some(super::verbs::TTL_REQUIRED)
    }

    fn acquire(
        &self,
        key: &str,
        holder: &str,
        opts: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        self.core.acquire_claim(key, holder, opts)
    }

    /// Fenced: only the tenure the create revision names.
    fn release(
        &self,
        key: &str,
        holder: &str,
        fence: Option<Fence>,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        let revision = fence.map(|f| i64::try_from(f.get()).unwrap_or(i64::MAX));
        self.core.release_fenced(key, holder, revision)
    }

    fn renew(
        &self,
        key: &str,
        holder: &str,
        ttl_ms: i64,
        operator: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        self.core.renew_fenced(key, holder, ttl_ms, None, operator)
    }

    fn force_release(
        &self,
        key: &str,
        opts: &ForceOpts,
    ) -> Result<Fenced<ForceOutcome>, StoreError> {
        self.core.force_release_claim(key, opts)
    }

    /// The lease is the verdict here; only a local holder's pid, gone, makes
    /// a live key suspect.
    fn status(&self, key: &str, _c: &mut Classifier) -> Result<Fenced<Status>, StoreError> {
        self.core.status_of(key)
    }

    /// Read in pages at one revision; the feed resumes right after it. A
    /// sink that streams gets the claims a page at a time, in key order
    /// (the keys read first, see `list_pages.rs`); any other the listing
    /// whole, in one read.
    fn list(&self, _c: &mut Classifier, sink: &mut dyn ListSink) -> Result<ListEnd, StoreError> {
        let wants = sink.wants();
        if wants.is_none() && sink.streams() {
            return self.core.list_claims_paged(sink);
        }
        let page = self.core.list_claims_upto(wants)?;
        let listed = page.sweep.claims.len();
        let at = page.end.at.clone();
        let flow = sink.page(page);
        let complete = match wants {
            None => flow == Flow::Go,
            Some(n) => listed < n,
        };
        Ok(ListEnd { at, complete })
    }

    fn deep_hazards(&self) -> Result<Vec<crate::claims::Hazard>, StoreError> {
        self.core.hazards()
    }
}

impl Feed for EtcdStore {
    fn changes(&self, after: Option<&Cursor>) -> Result<Box<dyn Changes>, StoreError> {
        let start = after
            .and_then(Cursor::as_u64)
            .map(|r| i64::try_from(r).unwrap_or(i64::MAX).saturating_add(1));
        Ok(Box::new(watch::EtcdChanges::start(&self.core, start)?))
    }
}

impl Audit for EtcdStore {
    /// The store's own log; what hosts mirror is its published member's.
    fn logs(&self) -> Result<Vec<(Option<String>, Log)>, StoreError> {
        Ok(vec![(Some(SOURCE_STORE.to_string()), Log::Own)])
    }

    fn history(&self, log: &Log) -> Result<Box<dyn History>, StoreError> {
        let prefix = match log {
            Log::Own => self.core.layout.events(),
            Log::Mirrored { host_id, root_id } => {
                self.core.layout.root_place(host_id, root_id).events()
            }
            Log::Root(dir) => {
                return Err(StoreError::Unsupported(format!(
                    "{} keeps no file root's log ({}): its events are under {}",
                    self.core.url,
                    dir.display(),
                    self.core.layout.events()
                )))
            }
        };
        Ok(Box::new(history::EtcdHistory::new(
            Arc::clone(&self.core),
            prefix,
        )))
    }

    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        self.core.read_events(n)
    }

    fn tail(&self, n: usize) -> Result<Tail, StoreError> {
        self.core.log_tail(Logs::Own, n)
    }

    fn follow(&self, after: Option<&Cursor>) -> Result<Box<dyn LogFeed>, StoreError> {
        self.core.log_follow(Logs::Own, after)
    }
}

impl Leases for EtcdStore {
    fn keep_alive(&self, key: &str, tenure: &Tenure) -> Result<Box<dyn Kept>, StoreError> {
        Ok(Box::new(self.core.keep_alive(key, tenure)?))
    }
}

impl Link for EtcdStore {
    /// The members answering, the leader and the revision, on this
    /// connection (bounded by its own `--timeout`; a face that must know
    /// sooner opens one with a shorter timeout).
    fn probe(&self, _timeout: Duration) -> Result<LinkFacts, StoreError> {
        self.core.info()
    }
}

impl Fleet for EtcdStore {
    fn hosts(&self) -> Result<Vec<HostInfo>, StoreError> {
        self.core.read_fleet_hosts()
    }

    fn state(&self) -> Result<FleetState, StoreError> {
        self.core.read_fleet(super::fleet::Copies::Whole)
    }

    fn brief_state(&self) -> Result<FleetState, StoreError> {
        self.core.read_fleet(super::fleet::Copies::Brief)
    }

    fn may_have_hosts(&self) -> Result<bool, StoreError> {
        self.core.any_machine()
    }

    fn listed_state(
        &self,
    ) -> Result<(FleetState, Vec<crate::store::raw_copy::RawCopy>), StoreError> {
        self.core.read_fleet_listed()
    }

    fn listed_feed(
        &self,
    ) -> Result<Option<Box<dyn crate::store::copy_merge::CopyFeed>>, StoreError> {
        let feed = super::fleet::EtcdFeed::start(std::sync::Arc::clone(&self.core));
        Ok(Some(Box::new(feed)))
    }

    fn summaries(&self) -> Result<Option<crate::store::sink::FleetSummary>, StoreError> {
        self.core.read_fleet_summaries()
    }

    fn forget(&self, host_id: &str) -> Result<Forgot, StoreError> {
        self.core.forget_host(host_id)
    }

    fn item(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        let place = self.core.layout.root_place(host_id, root_id);
        self.core.get_value(&place.claim(key))
    }

    fn ask_force_release(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
        opts: &ForceOpts,
        wait: Duration,
    ) -> Result<serde_json::Value, StoreError> {
        self.core.ask_host(host_id, root_id, key, opts, wait)
    }

    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        self.core.read_fleet_events(n)
    }
}

impl Backend for EtcdStore {
    fn audit(&self) -> Option<&dyn Audit> {
        Some(self)
    }

    fn leases(&self) -> Option<&dyn Leases> {
        Some(self)
    }

    fn link(&self) -> Option<&dyn Link> {
        Some(self)
    }

    fn fleet(&self) -> Option<&dyn Fleet> {
        Some(self)
    }
}
