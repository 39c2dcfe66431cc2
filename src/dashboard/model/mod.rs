//! The model: every fact the screen shows, and nothing about how it is drawn.
//!
//! Claims are keyed by their place (which names their origin) so a change
//! touches exactly the entries it names; each is shared with its lane's
//! mirror. `rows` is the filtered, sorted view the table scrolls over; it
//! is rebuilt only when the claims, the filter or the sort change.

pub(crate) mod asof;
pub(crate) mod browse;
pub(crate) mod claims;
pub(crate) mod dialogs;
pub(crate) mod event_filter;
pub mod events;
pub(crate) mod filter;
pub(crate) mod fleet;
pub(crate) mod hazards;
pub(crate) mod marks;
pub(crate) mod mode;
pub(crate) mod origins;
pub(crate) mod prompt;
pub(crate) mod row_id;
pub(crate) mod search;
pub mod store;
pub(crate) mod table;

pub use super::input::TextInput as Input;
pub use browse::{raw_lines, Browse, SetLog, PAGE};
pub use claims::{ClaimSet, Claims, Frozen};
pub use dialogs::{
    AcquireForm, BulkConfirm, BulkItem, BulkVerb, CleanConfirm, Dialog, ForceConfirm,
    ForgetConfirm, Level, MarksConfirm, Overlay, QuitConfirm, RenewForm, StatusMsg,
};
pub use events::{EventRing, EventRow, EventsView, DETAIL_HISTORY, EVENTS_RING};
pub use filter::{contains_ci, find_ci, Filter, Term};
pub use marks::Marks;
pub use mode::{Layer, Modes};
pub use prompt::Prompt;
pub use row_id::{CopyId, RowId};
pub use table::{row_view, screen_ctx, Sort, Widest};

use super::action::{Op, Verb};
use super::keys::Pane;
use super::options::Options;
use super::timeline::Timeline;
use crate::claims::hazard::EVENTS_LOG_BROKEN;
use crate::claims::{Counts, LocalIdentity, Root, Status};
use crate::columns::{ColumnId, RowView};
use crate::store::mirror::judge::{copy_words_at, words_at};
use crate::store::mirror::Tally;
use crate::store::Store;
use filter::term_matches;
pub use origins::Origins;

/// Messages `m` keeps (the oldest go first).
pub const MESSAGES_KEPT: usize = 500;
/// A second Ctrl-C this soon after the first quits without asking.
pub const INTERRUPT_AGAIN_MS: i64 = 1_000;
use std::collections::HashMap;
use std::sync::Arc;

/// The table part: which claims are rows, in what order, and where the
/// selection and the window are.
#[derive(Debug, Clone, Default)]
pub struct TableView {
    /// The filtered, sorted paths of the shown claims.
    pub rows: Vec<RowId>,
    pub selected: usize,
    pub offset: usize,
    pub sort: Sort,
    pub filter: Filter,
    /// Filters applied before, oldest first (↑/↓ in the input recall them).
    pub filter_history: Vec<String>,
    /// Where ↑/↓ is in the history while typing.
    pub history_pos: Option<usize>,
    /// The detail pane shows the selected row; its scroll resets with it.
    pub detail_scroll: u16,
    /// A claim just acquired here, by root and key: selected as soon as
    /// it arrives.
    pub select_on_arrival: Option<(usize, String)>,
    /// The widest text of each free-text column among the rows.
    pub widest: Widest,
    /// Rows marked with space, each with the tenure it was marked in:
    /// F, r and n act on all of them, and a mark ends with its tenure.
    pub marked: Marks,
    /// The columns the operator chose (`:columns`, settings), in display
    /// order; none: as many as the width fits.
    pub chosen: Option<Vec<ColumnId>>,
}

/// The events part: the tail of the log and how the pane looks at it.
#[derive(Debug, Clone, Default)]
pub struct Events {
    pub ring: EventRing,
    pub view: EventsView,
    pub error: Option<String>,
    /// Browsing the whole log (instead of following its tail).
    pub browse: Browse,
}

/// How the panes are arranged: which has the focus, and whether it is
/// zoomed to the whole body (`z`, as tmux and k9s zoom a pane).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    pub focus: Pane,
    pub zoomed: bool,
}

impl From<Pane> for Look {
    fn from(focus: Pane) -> Look {
        Look {
            focus,
            zoomed: false,
        }
    }
}

/// The whole model.
pub struct App {
    /// The first root named: the one-root views (the timeline, the whole
    /// log) read its events log.
    pub root: Root,
    /// Every root watched, the first included.
    pub origins: Origins,
    /// The root whose events log the whole-log views (the timeline, the
    /// events search) read: the first, until `t` opens on another root's row.
    pub log_root: usize,
    pub read_only: bool,
    pub color: bool,
    pub demo: bool,
    /// Times in the local zone (with its offset) instead of UTC.
    pub local_time: bool,
    /// `T`: the events pane says its instants as spans from now ("3m
    /// ago"), and the table its spans (age, ttl) as the instants they end
    /// or start at; again: back.
    pub flip_times: bool,
    /// The clock of the last tick (epoch ms).
    pub now: i64,
    /// `operator:<user>@<host>`: the holder id the dashboard acquires as,
    /// and the only one it releases without force.
    pub operator: String,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    pub focus: Pane,
    /// The focused pane fills the body (`z`); Tab still moves the focus,
    /// and the zoom follows it.
    pub zoomed: bool,
    pub claims: Claims,
    pub table: TableView,
    pub events: Events,
    /// What is open over the panes, and owns the keys: dialogs, text
    /// inputs, overlays, the whole-log browse, the table as of an instant.
    pub modes: Modes,
    pub timeline: Timeline,
    pub status: Option<StatusMsg>,
    /// Every message said this session, oldest first (`m` shows them in
    /// full): a status line that went by too soon is still here.
    pub messages: std::collections::VecDeque<StatusMsg>,
    /// How often the clock ticks (ms): the operator's `refresh`.
    pub refresh_ms: i64,
    /// The operator's own keys (settings), over the keymap's.
    pub key_overrides: crate::dashboard::keys::Overrides,
    /// Command lines run before, oldest first.
    pub prompt_history: Vec<String>,
    /// Releases still to finish before quitting (the quit dialog's "release").
    pub quit_after: Option<usize>,
    /// When Ctrl-C was last pressed (epoch ms): a second one within
    /// [`INTERRUPT_AGAIN_MS`] quits without asking.
    pub interrupted_at: Option<i64>,
    /// The selected entry of the `h` list (its index in
    /// [`App::hazard_entries`]).
    pub hazard_cursor: usize,
    /// The help was opened once: the status line's legend hint has done
    /// its job.
    pub seen_help: bool,
    /// Set when the claims come from a store with a connection (etcd):
    /// its header, its link and the lease behind each claim.
    pub store: Option<store::StoreView>,
}

/// Where a row lives, as far as a verb's way to its store goes.
#[derive(Debug, Clone, Copy, Default)]
pub struct RowAt<'a> {
    /// Its root, by index (0 over one root or a store).
    pub root: usize,
    /// A host's published copy: the host that publishes it.
    pub host: Option<&'a fleet::Origin>,
}

impl App {
    /// The op the worker runs for `verb` on a row at `at`, or why it
    /// cannot go there. A copy changes only in its host's own root, so a
    /// force-release of one is a request to that host, and nothing else is.
    pub fn route(&self, at: RowAt<'_>, verb: Verb) -> Result<Op, String> {
        match (verb, at.host) {
            (Verb::ForceRelease { key, opts }, Some(o)) => {
                let ask = Verb::AskHost {
                    host_id: o.host_id.clone(),
                    hostname: o.hostname.clone(),
                    root_id: o.root_id.clone(),
                    key,
                    opts,
                };
                Ok(self.origins.route(at.root, ask))
            }
            (op, Some(o)) => Err(format!(
                "{} {}: a read-only copy published by {} (F asks its host)",
                op.verb(),
                op.key(),
                o.hostname
            )),
            (op, None) => Ok(self.origins.route(at.root, op)),
        }
    }

    /// A model for `identity`, acting as `operator`. Both are read by the
    /// caller (the readers' side): the model reads nothing.
    pub fn new(opts: Options, now: i64, identity: LocalIdentity, operator: String) -> App {
        let table = TableView {
            sort: opts.opening.sort,
            filter: Filter::parse(&opts.opening.filter),
            filter_history: [opts.opening.filter.clone()]
                .into_iter()
                .filter(|f| !f.trim().is_empty())
                .collect(),
            chosen: (!opts.opening.columns.is_empty())
                .then(|| crate::columns::choose(&opts.opening.columns)),
            ..TableView::default()
        };
        App {
            origins: Origins::new(opts.root.clone(), &opts.more_roots),
            log_root: 0,
            root: opts.root,
            read_only: opts.read_only,
            color: !opts.no_color,
            demo: opts.demo,
            local_time: opts.local_time,
            flip_times: false,
            now,
            operator,
            size: (80, 24),
            focus: Pane::Table,
            zoomed: false,
            claims: Claims::new(identity),
            table,
            events: Events::default(),
            modes: Modes::default(),
            timeline: Timeline::new(now),
            status: None,
            messages: std::collections::VecDeque::new(),
            key_overrides: opts.opening.keys.clone(),
            refresh_ms: opts.opening.refresh_ms,
            prompt_history: Vec::new(),
            quit_after: None,
            interrupted_at: None,
            hazard_cursor: 0,
            seen_help: false,
            store: None,
        }
    }

    /// How the panes are arranged now.
    pub fn look(&self) -> Look {
        Look {
            focus: self.focus,
            zoomed: self.zoomed,
        }
    }

    /// Re-word the selected claim's reason at the shown clock.
    ///
    /// The tick judges every claim's state but words the reason (with its
    /// countdown) only for the claim the detail pane shows; whichever claim
    /// becomes selected is re-worded here first.
    pub fn refresh_selected_why(&mut self) {
        let Some(path) = self.table.rows.get(self.table.selected).cloned() else {
            return;
        };
        let now = self.shown_now();
        let copy = path.is_copy();
        // A store's own claims are judged by the store (their lease is
        // their liveness): there is no pid here to re-word them by.
        let pids_here = match &path {
            RowId::Claim(loc) => self.origins.caps(usize::from(loc.origin())).pids_here,
            RowId::Copy(_) => false,
        };
        if !pids_here && !copy {
            return;
        }
        let claims = &mut self.claims;
        let set = match claims.frozen.as_mut() {
            Some(f) => &mut f.claims,
            None => &mut claims.live,
        };
        let Some(s) = set.by_row.get_mut(&path) else {
            return;
        };
        let why = match &s.record {
            None => return,
            Some(_) if copy => match copy_words_at(s, now) {
                Some(w) => w,
                None => return,
            },
            Some(rec) => words_at(rec, now, &claims.identity, &claims.pids),
        };
        if s.why != why {
            // The mirror's copy stays as it was: only the shown one moves.
            Arc::make_mut(s).why = why;
        }
    }

    /// The claims the view shows: the frozen ones while paused.
    pub fn shown(&self) -> &ClaimSet {
        self.claims.shown()
    }

    /// The header's hazard count: this root's (or store's) own, plus what
    /// publishing hosts found in theirs — the count `list` prints.
    pub fn hazard_count(&self) -> usize {
        let own: usize = self.shown_tallies().iter().map(|t| t.hazards.len()).sum();
        own + self.fleet_hazards().len()
    }

    /// Each origin's counts and hazards as the view shows them: the frozen
    /// ones while paused.
    pub fn shown_tallies(&self) -> Vec<&Tally> {
        match &self.claims.frozen {
            Some(f) => f.tallies.iter().collect(),
            None => self.origins.iter().map(|o| &o.tally).collect(),
        }
    }

    /// Every claim the shown tallies count, by state: the sum of each
    /// member's own count (counted once, by its mirror), the one `list`
    /// prints.
    pub fn counted(&self) -> Counts {
        let mut c = Counts::default();
        for t in self.shown_tallies() {
            c += t.counts;
        }
        c
    }

    /// Whether an events log is unappendable.
    pub fn events_log_broken(&self) -> bool {
        self.origins
            .iter()
            .flat_map(|o| o.tally.hazards.iter())
            .any(|h| h.kind == EVENTS_LOG_BROKEN)
    }

    /// The full hazard list, built on demand by the census `list` and
    /// `doctor` count through (the `h` list, `x`'s offer), most urgent
    /// kind first.
    pub fn hazards(&self) -> Vec<crate::claims::Hazard> {
        let mut out: Vec<crate::claims::Hazard> = self
            .shown_tallies()
            .iter()
            .flat_map(|t| t.hazards.iter().cloned())
            .collect();
        out.sort_by(|a, b| {
            (a.kind.rank().cmp(&b.kind.rank())).then_with(|| a.path().cmp(b.path()))
        });
        out
    }

    /// The hazards publishing hosts reported (none without a store).
    pub fn fleet_hazards(&self) -> &[crate::claims::Hazard] {
        self.store.as_ref().map_or(&[], |v| &v.fleet.hazards)
    }

    /// The clock the view shows.
    pub fn shown_now(&self) -> i64 {
        self.claims.frozen.as_ref().map_or(self.now, |f| f.now)
    }

    /// Which keys the timeline shows: the table's filter, applied to keys.
    /// Key and bare words match the key's name (bare words also the claim's
    /// holder and reason, as in the table), holder any holder the log has
    /// for the key, and state, harness and reason the key's claim as the
    /// table shows it now.
    pub fn timeline_keeps(&self) -> impl Fn(&str) -> bool + '_ {
        let f = &self.table.filter;
        let shown = self.shown();
        let claims: HashMap<&str, RowView<'_>> = if f.is_empty() {
            HashMap::new()
        } else {
            shown
                .by_row
                .iter()
                .map(|(id, s)| (s.key.as_str(), row_view(shown, id, s)))
                .collect()
        };
        let tenures = self.timeline.shown();
        let places = self.places();
        move |key: &str| {
            let ctx = screen_ctx(self.shown_now(), self.local_time, &places);
            let claim = |t: &Term| claims.get(key).is_some_and(|r| term_matches(t, &ctx, r));
            f.is_empty()
                || f.matches_by(|t| match t {
                    Term::Field(ColumnId::Key, v) => contains_ci(key, v),
                    Term::Any(v) => contains_ci(key, v) || claim(t),
                    Term::Field(ColumnId::Holder, v) => tenures.is_some_and(|ix| {
                        ix.tenures_of(key)
                            .iter()
                            .any(|x| contains_ci(ix.holder_name(x.holder), v))
                    }),
                    _ => claim(t),
                })
        }
    }

    /// The selected row and its claim, if any row is selected.
    pub fn selected_row(&self) -> Option<(&RowId, &Status)> {
        let id = self.table.rows.get(self.table.selected)?;
        Some((id, self.shown().get(id)?))
    }

    /// Where the selected row comes from, when it is a host's copy.
    pub fn selected_origin(&self) -> Option<fleet::Origin> {
        let id = self.table.rows.get(self.table.selected)?;
        self.store.as_ref()?.fleet.origin(id)
    }

    /// The selected claim, if any row is selected.
    pub fn selected_status(&self) -> Option<&Status> {
        self.table
            .rows
            .get(self.table.selected)
            .and_then(|p| self.shown().get(p))
    }

    pub fn clamp_selection(&mut self) {
        let t = &mut self.table;
        t.selected = t.selected.min(t.rows.len().saturating_sub(1));
    }

    /// Events the pane shows (frozen while paused, this key's only when
    /// filtered), oldest first.
    pub fn shown_events(&self) -> impl DoubleEndedIterator<Item = &EventRow> + '_ {
        let upto = self
            .claims
            .frozen
            .as_ref()
            .map_or(u64::MAX, |f| f.events_seq);
        let view = &self.events.view;
        self.events
            .ring
            .rows
            .iter()
            .filter(move |r| r.seq < upto)
            .filter(move |r| view.shows(r))
    }

    /// Events the pane would show that arrived since `p` froze it: what a
    /// paused operator is missing.
    pub fn events_since_pause(&self) -> usize {
        let Some(from) = self.claims.frozen.as_ref().map(|f| f.events_seq) else {
            return 0;
        };
        let view = &self.events.view;
        self.events
            .ring
            .rows
            .iter()
            .rev()
            .take_while(|r| r.seq >= from)
            .filter(|r| view.shows(r))
            .count()
    }

    /// The last `DETAIL_HISTORY` events of `key`, oldest first.
    pub fn history_of(&self, key: &str) -> Vec<&EventRow> {
        self.history_where(key, None)
    }

    /// The history of the claim `s`: its key's events in its own root's log
    /// (the same key in another root is another claim).
    pub fn history_of_claim(&self, s: &Status) -> Vec<&EventRow> {
        let root = self.origins.several().then(|| self.origins.of(s));
        self.history_where(&s.key, root)
    }

    fn history_where(&self, key: &str, root: Option<usize>) -> Vec<&EventRow> {
        let mut v: Vec<&EventRow> = self
            .events
            .ring
            .rows
            .iter()
            .rev()
            .filter(|r| r.key.as_deref() == Some(key))
            .filter(|r| root.is_none_or(|i| r.root == i))
            .take(DETAIL_HISTORY)
            .collect();
        v.reverse();
        v
    }

    /// The TTL last asked for this tenure of `key` (a renewal's, else the
    /// acquire's), as the events tail tells it.
    pub fn asked_ttl(&self, key: &str, acquired_at: i64) -> Option<i64> {
        self.events
            .ring
            .rows
            .iter()
            .rev()
            .filter(|r| r.key.as_deref() == Some(key) && r.acquired_at == Some(acquired_at))
            .find_map(|r| r.ttl_ms)
    }

    /// The live claims held as this dashboard's operator, by key.
    pub fn own_claims(&self) -> Vec<String> {
        self.own_claims_by_root()
            .into_iter()
            .map(|(_, k)| k)
            .collect()
    }

    /// The live claims held as this dashboard's operator, with the root
    /// each lives in, by key then root.
    pub fn own_claims_by_root(&self) -> Vec<(usize, String)> {
        let mut keys: Vec<(usize, String)> = self
            .claims
            .live
            .by_row
            .values()
            .filter(|s| s.record.as_ref().is_some_and(|r| r.holder == self.operator))
            .map(|s| (self.origins.of(s), s.key.clone()))
            .collect();
        keys.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        keys
    }

    /// Show what `store` composes: each member's label, a root's places
    /// (`roots`, by directory), and a site's link, leases and hosts.
    pub fn over(&mut self, store: &Store, roots: &[Root], now: i64) {
        self.origins = Origins::of_store(store, roots);
        let members = store.members();
        self.log_root = members
            .iter()
            .position(|m| m.root_dir().is_some())
            .unwrap_or(0);
        if let Some(r) = self.origins.get(self.log_root) {
            self.root = r.clone();
        }
        // Every log the store keeps, read as one by the whole-log views
        // when there are several (a log that cannot be listed leaves the
        // views on one, as with one root).
        self.events.browse.set = store
            .logs()
            .map(|logs| {
                logs.into_iter()
                    .map(|r| SetLog {
                        origin: usize::from(r.origin.0),
                        name: r.name.unwrap_or_else(|| r.origin.0.to_string()),
                        log: r.log,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let Some(site) = members.iter().find(|m| m.backend().link().is_some()) else {
            return;
        };
        let mut view = store::StoreView::new(site.name(), now);
        view.site = usize::from(site.ix.0);
        view.copies = members
            .iter()
            .find(|m| m.origin == crate::store::Origin::Published { site: site.ix })
            .map(|m| usize::from(m.ix.0));
        self.store = Some(view);
        // A store's keys are no lockfiles: their own hazards are the
        // store's kinds (a mirror's rows say so in their place too).
        self.claims.live.store_keys = members.iter().all(|m| m.root_dir().is_none());
    }

    /// Show one site's claims (etcd) rather than a root's, as a model fed
    /// by hand does: its header, its lease column, and hazards as the store
    /// judges them; its own rows are origin 0's, what hosts publish into it
    /// origin 1's (as a store of one `--store` opens).
    pub fn over_store(&mut self, mut view: store::StoreView) {
        view.copies = view.copies.or(Some(1));
        self.origins = Origins::of_site(&view.url);
        self.store = Some(view);
        // A store's keys are no lockfiles: their own hazards are the
        // store's kinds (the census's rules for a store).
        self.claims.live.store_keys = true;
    }

    pub fn say(&mut self, level: Level, text: impl Into<String>) {
        let msg = StatusMsg {
            text: text.into(),
            level,
            at: self.now,
        };
        if self.messages.len() >= MESSAGES_KEPT {
            self.messages.pop_front();
        }
        self.messages.push_back(msg.clone());
        self.status = Some(msg);
    }
}
