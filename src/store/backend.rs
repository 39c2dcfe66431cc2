//! The seam a store kind fits behind: small traits, each asked of one
//! member of a composed store ([`super::compose::Store`]).
//!
//! - [`Claims`]: the verbs and the listing, which every backend has.
//! - [`Feed`]: the changes after a cursor, and a key's wake-ups.
//! - [`Backend`]: both, and the capabilities only some backends have,
//!   each reached through a method that answers `None` where it is
//!   missing: the audit log ([`Audit`]), repair ([`Repair`]), leases kept
//!   alive ([`Leases`]), a connection whose facts a header shows
//!   ([`Link`]), hosts publishing into it ([`Fleet`]).
//!
//! A face asks a capability of the member a row came from, and says in
//! words what it lacks; it never asks which kind of store it holds. How a
//! member's rows are judged is data ([`Claims::rules`]), not a type test.

use super::cursor::{Cursor, Fence, OriginIx};
use super::fleet::{FleetState, Forgot, HostInfo};
use super::log::{LogFeed, Tail};
use super::raw_copy::RawCopy;
use super::{Changes, Fenced, Kept, KeyWatch, StoreError, Tenure, Wake};
use crate::claims::root::RootProblem;
use crate::claims::{
    AcquireOpts, AcquireOutcome, Classifier, Counts, Fix, ForceOpts, ForceOutcome, Held, ItemRules,
    ReleaseOutcome, RenewOutcome, Stamp, Status, Sweep,
};
use crate::events::history::{History, Log};
use crate::events::range::RangeEnd;
use crate::events::Event;
use std::io::{self, Write};
use std::time::Duration;

/// The verbs and the listing every backend has.
pub trait Claims: Send + Sync {
    /// The store URL: for headers, `"store"` and `"origin"` in JSON.
    fn url(&self) -> String;

    /// Nouns and where things go, for dialogs and status lines.
    fn words(&self) -> &'static Words;

    /// How its rows are judged: a root's lockfiles by this machine's pids,
    /// a store's keys by its leases, a host's copies by their host.
    fn rules(&self) -> ItemRules;

    /// False for a member of read-only copies: a one-key verb never goes
    /// to it unasked.
    fn takes_claims(&self) -> bool {
        true
    }

    /// Why a claim here must be taken with a TTL, in words (a claim on a
    /// lease: nothing else ends a dead holder's claim); None where one may
    /// be held without. `run` refuses before it starts its command.
    fn ttl_required(&self) -> Option<&'static str> {
        None
    }

    fn acquire(
        &self,
        key: &str,
        holder: &str,
        opts: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError>;

    /// With `fence`, release only that tenure: a holder whose claim ran out
    /// and was taken again (even by itself) never ends the newer one. A
    /// store without fences has one tenure per lockfile and ignores it.
    fn release(
        &self,
        key: &str,
        holder: &str,
        fence: Option<Fence>,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError>;

    /// `operator`, when renewing on the holder's behalf, is recorded in the
    /// `claim_renewed` event.
    fn renew(
        &self,
        key: &str,
        holder: &str,
        ttl_ms: i64,
        operator: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError>;

    fn force_release(
        &self,
        key: &str,
        opts: &ForceOpts,
    ) -> Result<Fenced<ForceOutcome>, StoreError>;

    /// One key, judged with the caller's classifier (a mirror's, which
    /// knows its pids already; a fresh one from the CLI).
    fn status(&self, key: &str, c: &mut Classifier) -> Result<Fenced<Status>, StoreError>;

    /// Every claim in key order, in pages handed to `sink`, each judged
    /// with `c`; stops early when the sink says so.
    fn list(&self, c: &mut Classifier, sink: &mut dyn ListSink) -> Result<ListEnd, StoreError>;

    /// Hazards that cost more than a listing to find (`doctor`): a store's
    /// orphan leases, its events without retention.
    fn deep_hazards(&self) -> Result<Vec<crate::claims::Hazard>, StoreError> {
        Ok(Vec::new())
    }

    /// A look at the store far cheaper than its listing that changes
    /// whenever the listing would name other claims (a file root: its
    /// claims dir's stamp). The mirror's safety net, finding it as it was
    /// at its last listing, lists only every so often. None: no such look,
    /// or none to trust right now; the net lists each time.
    fn mark(&self) -> Option<Stamp> {
        None
    }

    /// What keeps it from being read as a normal store right now (a root
    /// whose claims dir is no directory), for a face to say instead of an
    /// empty table.
    fn problem(&self) -> Option<RootProblem> {
        None
    }

    /// `list --json` of a listing of this member alone, written by a fast
    /// writer of its own (the file root's, byte for byte what the sweep
    /// serializes to). None: the generic document.
    fn write_list_json(&self, l: &MemberListing, w: &mut dyn Write) -> Option<io::Result<()>> {
        let _ = (l, w);
        None
    }
}

/// Changes after a cursor, and one key's wake-ups.
pub trait Feed: Send + Sync {
    /// From `after` (a listing's [`ListEnd::at`]), or from now. A cursor the
    /// backend no longer has starts with [`super::Change::Relist`] with why.
    fn changes(&self, after: Option<&Cursor>) -> Result<Box<dyn Changes>, StoreError>;

    /// Call `wake` whenever `key` may have changed, until the handle is
    /// dropped (`acquire --wait`, `run`). By default the feed filtered to
    /// the key, on a thread of its own.
    fn watch_key(&self, key: &str, wake: Wake) -> Result<Box<dyn KeyWatch>, StoreError> {
        Ok(Box::new(super::wake::FeedWatch::start(
            self.changes(None)?,
            key.to_string(),
            wake,
        )))
    }
}

/// One member's store: the verbs, the feed, and what else it can do.
pub trait Backend: Claims + Feed {
    /// The events log(s) it keeps.
    fn audit(&self) -> Option<&dyn Audit> {
        None
    }
    /// `doctor --fix`: what it can remove when provably abandoned.
    fn repair(&self) -> Option<&dyn Repair> {
        None
    }
    /// Claims that live on leases, kept alive while a holder works.
    fn leases(&self) -> Option<&dyn Leases> {
        None
    }
    /// Reached over a connection: facts for a header, up or down.
    fn link(&self) -> Option<&dyn Link> {
        None
    }
    /// Hosts publish their roots here.
    fn fleet(&self) -> Option<&dyn Fleet> {
        None
    }
}

/// The events log(s) a member keeps.
pub trait Audit: Send + Sync {
    /// Every log it keeps, each with the name a face tells it by where
    /// there are several (None: its one log).
    fn logs(&self) -> Result<Vec<(Option<String>, Log)>, StoreError>;

    /// One log's whole history, read in bounded steps.
    fn history(&self, log: &Log) -> Result<Box<dyn History>, StoreError>;

    /// The last `n` events of its logs, oldest first (lines that do not
    /// parse are skipped).
    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError>;

    /// The last `n` entries of its logs, oldest first, each with its log,
    /// and the cursor right after them: [`Audit::follow`] from it brings
    /// none of them again.
    fn tail(&self, n: usize) -> Result<Tail, StoreError>;

    /// What its logs say after `after` (a [`Audit::tail`]'s cursor, or one
    /// a [`super::LogNews::Lines`] carried), from now without one. The empty
    /// cursor ([`Cursor::start`]) is every entry the logs keep, from their
    /// first. A cursor the member no longer has (its log replaced, its
    /// history compacted) starts with a [`super::LogNews::Reset`] or
    /// [`super::LogNews::Trouble`] that says so.
    fn follow(&self, after: Option<&Cursor>) -> Result<Box<dyn LogFeed>, StoreError>;

    /// Where [`Audit::follow`] resumes after a range read of `log` that
    /// ended at `end` ([`History::read_range`]), so that it brings none of
    /// what was read again and misses nothing written since. None: the
    /// member cannot tell (follow from now).
    fn resume_after(&self, log: &Log, end: &RangeEnd) -> Option<Cursor> {
        let _ = (log, end);
        None
    }
}

/// `doctor --fix`.
pub trait Repair: Send + Sync {
    /// Remove what is provably abandoned; say what was left and why.
    fn repair(&self) -> Result<Vec<Fix>, StoreError>;
}

/// Claims that live on leases.
pub trait Leases: Send + Sync {
    /// Keep the claim `tenure` names alive until the handle is dropped
    /// (`claimtop run`).
    fn keep_alive(&self, key: &str, tenure: &Tenure) -> Result<Box<dyn Kept>, StoreError>;
}

/// A member reached over a connection.
pub trait Link: Send + Sync {
    /// What a header says of it beyond its URL; an error when it cannot be
    /// reached within `timeout` (how a face learns it is down even while
    /// its feed waits on a silent connection).
    fn probe(&self, timeout: Duration) -> Result<LinkFacts, StoreError>;
}

/// A store hosts publish their roots into (`claimtop publish`).
pub trait Fleet: Send + Sync {
    /// The publishing hosts and their roots, without their claims.
    fn hosts(&self) -> Result<Vec<HostInfo>, StoreError>;

    /// The hosts and what they published (`fleet`, and `list`'s `"hosts"`
    /// and `"last_known"`).
    fn state(&self) -> Result<FleetState, StoreError>;

    /// [`Fleet::state`] with each copy cut down to what counting and ageing
    /// it needs (`metrics`, which reads the whole fleet at every scrape).
    fn brief_state(&self) -> Result<FleetState, StoreError> {
        self.state()
    }

    /// Whether any host may publish here, cheaply (a host found may
    /// have no record yet: [`Fleet::state`] says for sure).
    fn may_have_hosts(&self) -> Result<bool, StoreError> {
        Ok(!self.hosts()?.is_empty())
    }

    /// [`Fleet::state`] for `list --json`: copies that print as they stand
    /// kept as their bytes, beside the state rather than in its items.
    fn listed_state(&self) -> Result<(FleetState, Vec<RawCopy>), StoreError> {
        Ok((self.state()?, Vec::new()))
    }

    /// The copies of [`Fleet::listed_state`] in `list --json`'s order,
    /// handed over while they are read. None: this store reads them whole
    /// ([`Fleet::listed_state`]).
    fn listed_feed(&self) -> Result<Option<Box<dyn super::copy_merge::CopyFeed>>, StoreError> {
        Ok(None)
    }

    /// The hosts with their counts and each root's summary, read from the
    /// summaries the publishers keep: O(hosts), whatever the claims. None
    /// where a root has none yet (read [`Fleet::state`] then).
    fn summaries(&self) -> Result<Option<super::sink::FleetSummary>, StoreError> {
        Ok(None)
    }

    /// Remove an offline host's record, copies and mirrored events, decided
    /// in the deleting transaction (a host back meanwhile keeps all).
    fn forget(&self, host_id: &str) -> Result<Forgot, StoreError>;

    /// One published claim as its host's `list --json` prints it.
    /// (The dashboard's copies read through this until they are rows of
    /// the published member.)
    fn item(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
    ) -> Result<Option<serde_json::Value>, StoreError>;

    /// Ask a publishing host to force-release `key` in its root `root_id`,
    /// waiting up to `wait` for its `force-release --json` answer.
    fn ask_force_release(
        &self,
        host_id: &str,
        root_id: &str,
        key: &str,
        opts: &ForceOpts,
        wait: Duration,
    ) -> Result<serde_json::Value, StoreError>;

    /// The last `n` events the hosts mirrored, each with `"host"`,
    /// `"host_id"` and `"root"` added, oldest first.
    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError>;
}

/// Nouns and where things go, for a dialog that must not say "lockfile"
/// of an etcd key.
#[derive(Debug, PartialEq, Eq)]
pub struct Words {
    /// What one claim is: "lockfile", "key", "copy".
    pub noun: &'static str,
    /// Where a force-released claim goes.
    pub archive: &'static str,
}

/// What a header says of a member reached over a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkFacts {
    /// Who was reached (`a:1,b:2`).
    pub reached: String,
    /// Who leads, when it can be asked.
    pub leader: Option<String>,
    /// How far the store has come (etcd: its revision), for a header that
    /// shows the newest it has seen.
    pub at: Option<i64>,
}

/// Where a listing's pages go.
pub trait ListSink {
    /// One page, in key order after the pages before it.
    fn page(&mut self, page: MemberListing) -> Flow;

    /// At most this many claims are wanted, the first in key order (a
    /// first screen): a backend that can read fewer reads only those.
    fn wants(&self) -> Option<usize> {
        None
    }

    /// Each page goes out as it comes (`list --json`): a backend that must
    /// hold pages back to hand them on in key order may read more to hand
    /// them on sooner. A sink that keeps the whole listing gains nothing
    /// from that.
    fn streams(&self) -> bool {
        false
    }

    /// What the sink holds already, each claim by its place with the stamp
    /// it was read at: a backend that can tell a claim unchanged since
    /// (a file root, by its lockfile's `lstat`) names it in
    /// [`MemberListing::kept`] instead of reading it again. None: read all.
    fn held(&self) -> Option<Held<'_>> {
        None
    }
}

/// Whether a listing goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Go,
    Stop,
}

/// How a listing ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListEnd {
    /// Where a feed resumes so that nothing written after the listing was
    /// read is missed (None: from now, what a root's feed does).
    pub at: Option<Cursor>,
    /// Every claim was listed (false: the sink stopped it, or it wanted a
    /// head only).
    pub complete: bool,
}

/// One member's listing, or a page of it: the file sweep's shape, plus what
/// a fencing store adds per claim and the hazards only a store has.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberListing {
    /// Which member it is (set by the composed store; 0 from a backend).
    pub at: OriginIx,
    /// How its claims are judged.
    pub rules: ItemRules,
    /// `root` is the root's directory, or the store's URL.
    pub sweep: Sweep,
    /// Parallel to `sweep.claims`; empty where no claim has a tenure.
    pub tenures: Vec<Option<Tenure>>,
    pub store_hazards: Vec<crate::claims::Hazard>,
    pub end: ListEnd,
    /// Parallel to `sweep.claims`, the stamp each was read at, where the
    /// sink holds claims ([`ListSink::held`]); empty otherwise.
    pub stamps: Vec<Option<Stamp>>,
    /// Claims the sink holds that are as they were when it read them, by
    /// place: not read, so neither among the claims nor in the counts or
    /// hazards. Empty unless the sink said what it holds.
    pub kept: Vec<std::path::PathBuf>,
}

impl MemberListing {
    /// A page of `sweep`, judged by `rules`, nothing added.
    pub fn of_sweep(sweep: Sweep, rules: ItemRules) -> MemberListing {
        MemberListing {
            at: OriginIx(0),
            rules,
            sweep,
            tenures: Vec::new(),
            store_hazards: Vec::new(),
            end: ListEnd::default(),
            stamps: Vec::new(),
            kept: Vec::new(),
        }
    }

    /// Take the next page in: its claims after these, counts and hazards
    /// added, its end the listing's.
    pub fn extend(&mut self, page: MemberListing) {
        let had = self.sweep.claims.len();
        if !page.tenures.is_empty() || !self.tenures.is_empty() {
            self.tenures.resize(had, None);
            let mut t = page.tenures;
            t.resize(page.sweep.claims.len(), None);
            self.tenures.extend(t);
        }
        if !page.stamps.is_empty() || !self.stamps.is_empty() {
            self.stamps.resize(had, None);
            let mut t = page.stamps;
            t.resize(page.sweep.claims.len(), None);
            self.stamps.extend(t);
        }
        self.kept.extend(page.kept);
        self.sweep.claims.extend(page.sweep.claims);
        self.sweep.counts += page.sweep.counts;
        self.sweep.hazards.extend(page.sweep.hazards);
        self.store_hazards.extend(page.store_hazards);
        self.end = page.end;
    }

    pub fn counts(&self) -> Counts {
        self.sweep.counts
    }
}

/// A sink that keeps every page as one listing (up to `wants` claims).
#[derive(Default)]
pub struct Collect {
    pub got: Option<MemberListing>,
    pub wants: Option<usize>,
}

impl ListSink for Collect {
    fn page(&mut self, page: MemberListing) -> Flow {
        match self.got.as_mut() {
            Some(l) => l.extend(page),
            None => self.got = Some(page),
        }
        let have = self.got.as_ref().map_or(0, |l| l.sweep.claims.len());
        match self.wants {
            Some(n) if have >= n => Flow::Stop,
            _ => Flow::Go,
        }
    }

    fn wants(&self) -> Option<usize> {
        self.wants
    }
}

/// The whole listing of `b`, judged with `c`, as one.
pub fn list_whole(b: &dyn Claims, c: &mut Classifier) -> Result<MemberListing, StoreError> {
    list_whole_paged(b, c, &mut |_| {})
}

/// [`list_whole`], each page shown to `on_page` as it comes, before it
/// joins the listing (a first screen that fills in page by page).
pub fn list_whole_paged(
    b: &dyn Claims,
    c: &mut Classifier,
    on_page: &mut dyn FnMut(&MemberListing),
) -> Result<MemberListing, StoreError> {
    list_whole_held(b, c, None, on_page)
}

/// [`list_whole_paged`] for a caller that holds claims already (`held`,
/// see [`ListSink::held`]): those found unchanged come as
/// [`MemberListing::kept`], not read.
pub fn list_whole_held(
    b: &dyn Claims,
    c: &mut Classifier,
    held: Option<Held>,
    on_page: &mut dyn FnMut(&MemberListing),
) -> Result<MemberListing, StoreError> {
    struct Paged<'a> {
        got: Collect,
        held: Option<Held<'a>>,
        on_page: &'a mut dyn FnMut(&MemberListing),
    }
    impl ListSink for Paged<'_> {
        fn page(&mut self, page: MemberListing) -> Flow {
            (self.on_page)(&page);
            self.got.page(page)
        }
        fn held(&self) -> Option<Held<'_>> {
            self.held
        }
    }
    let mut sink = Paged {
        got: Collect::default(),
        held,
        on_page,
    };
    let end = b.list(c, &mut sink)?;
    let mut l = sink.got.got.unwrap_or_else(|| empty(b));
    l.end = end;
    Ok(l)
}

/// The whole listing of `b`, judged as a command judges: with a fresh
/// classifier, at now.
pub fn list_now(b: &dyn Claims) -> Result<MemberListing, StoreError> {
    list_whole(b, &mut Classifier::new(crate::claims::now_ms()))
}

/// The listing of `b` into `sink`, judged as a command judges: with a
/// fresh classifier, at now.
pub fn list_now_into(b: &dyn Claims, sink: &mut dyn ListSink) -> Result<ListEnd, StoreError> {
    b.list(&mut Classifier::new(crate::claims::now_ms()), sink)
}

/// [`list_head`] judged as a command judges.
pub fn head_now(b: &dyn Claims, n: usize) -> Result<Option<MemberListing>, StoreError> {
    list_head(b, n, &mut Classifier::new(crate::claims::now_ms()))
}

/// One key of `b`, judged as a command judges: with a fresh classifier.
pub fn status_now(b: &dyn Claims, key: &str) -> Result<Fenced<Status>, StoreError> {
    b.status(key, &mut Classifier::new(crate::claims::now_ms()))
}

/// The first `n` claims of `b` in key order (a big store's first screen),
/// or None when that would be the whole listing anyway.
pub fn list_head(
    b: &dyn Claims,
    n: usize,
    c: &mut Classifier,
) -> Result<Option<MemberListing>, StoreError> {
    let mut sink = Collect {
        got: None,
        wants: Some(n),
    };
    let end = b.list(c, &mut sink)?;
    if end.complete {
        return Ok(None);
    }
    Ok(sink.got.map(|mut l| {
        l.end = end;
        l
    }))
}

/// A listing of nothing, for a backend that sent no page.
fn empty(b: &dyn Claims) -> MemberListing {
    MemberListing::of_sweep(
        Sweep {
            root: std::path::PathBuf::from(b.url()),
            claims: Vec::new(),
            counts: Counts::default(),
            hazards: Vec::new(),
        },
        b.rules(),
    )
}
