//! The file root behind the seam's small traits: its verbs and sweep
//! ([`Claims`]), its one watcher ([`Feed`]), its events log ([`Audit`]) and
//! `doctor --fix` ([`Repair`]). Each is one call into the protocol's own
//! functions, so the wire and the figures stay what they are.

use super::super::backend::{
    Audit, Backend, Claims, Feed, ListEnd, ListSink, MemberListing, Repair, Words,
};
use super::super::cursor::{Cursor, Fence};
use super::super::log::{LogFeed, Tail};
use super::super::registry::{OpenCtx, Opened, Opener, Role};
use super::super::url::{StoreUrl, StoreUrlError};
use super::super::wake::FileKeyWatch;
use super::super::{Changes, Fenced, KeyWatch, StoreError, Wake};
use super::feed::FileFeed;
use super::FileStore;
use crate::claims::{
    self, AcquireOpts, AcquireOutcome, Classifier, Fix, ForceOpts, ForceOutcome, ItemRules,
    ReleaseOutcome, RenewOutcome, Root, Status,
};
use crate::events::history::{History, Log};
use crate::events::range::RangeEnd;
use crate::events::tail::read_last_lines;
use crate::events::Event;
use std::io::{self, Write};
use std::sync::Arc;

/// `file:DIR`: one root.
pub const OPENER: Opener = Opener {
    schemes: &["file"],
    check,
    open,
    hazards: &[],
};

fn check(text: &str) -> Result<(), StoreUrlError> {
    StoreUrl::parse(text).map(|_| ())
}

fn open(text: &str, ctx: &OpenCtx) -> Result<Opened, StoreError> {
    let StoreUrl::File(dir) = StoreUrl::parse(text)? else {
        return Err(StoreUrlError::UnknownScheme(text.to_string()).into());
    };
    let root = Root {
        events_dir: ctx.events_dir.clone().or_else(|| Some(dir.clone())),
        root: dir.clone(),
    };
    Ok(vec![(Role::Root(dir), open_root(root, ctx))])
}

/// One root as a member: told when an acquire waits on a peer's recovery
/// mutex, where the context says whom to tell.
pub fn open_root(root: Root, ctx: &OpenCtx) -> Arc<dyn Backend> {
    let store = FileStore::new(root);
    match &ctx.on_mutex {
        Some(hook) => Arc::new(store.with_mutex_hook(hook.clone())),
        None => Arc::new(store),
    }
}

static WORDS: Words = Words {
    noun: "lockfile",
    archive: "archived to .expired/",
};

impl Claims for FileStore {
    fn url(&self) -> String {
        format!("file:{}", self.root.root.to_string_lossy())
    }

    fn words(&self) -> &'static Words {
        &WORDS
    }

    fn rules(&self) -> ItemRules {
        ItemRules::Lockfile
    }

    fn acquire(
        &self,
        key: &str,
        holder: &str,
        opts: &AcquireOpts,
    ) -> Result<Fenced<AcquireOutcome>, StoreError> {
        Ok(Fenced::plain(claims::acquire_watched(
            &self.root,
            key,
            holder,
            opts,
            self.on_mutex.as_ref(),
        )?))
    }

    /// A lockfile is one tenure: the release re-reads it under the
    /// recovery mutex and ends it only while the holder still has it.
    fn release(
        &self,
        key: &str,
        holder: &str,
        _fence: Option<Fence>,
    ) -> Result<Fenced<ReleaseOutcome>, StoreError> {
        Ok(Fenced::plain(claims::release(&self.root, key, holder)?))
    }

    fn renew(
        &self,
        key: &str,
        holder: &str,
        ttl_ms: i64,
        operator: Option<&str>,
    ) -> Result<Fenced<RenewOutcome>, StoreError> {
        Ok(Fenced::plain(claims::renew_as(
            &self.root, key, holder, ttl_ms, operator,
        )?))
    }

    fn force_release(
        &self,
        key: &str,
        opts: &ForceOpts,
    ) -> Result<Fenced<ForceOutcome>, StoreError> {
        Ok(Fenced::plain(claims::force_release(&self.root, key, opts)?))
    }

    fn status(&self, key: &str, c: &mut Classifier) -> Result<Fenced<Status>, StoreError> {
        Ok(Fenced::plain(Status::of_file(
            key,
            &self.root.lockfile(key),
            c,
        )))
    }

    /// The sweep, as one page. A head (a first screen) lists and sorts every
    /// name but reads only the first files: a root of 100 000 lockfiles
    /// shows its first screen in a tenth of its whole sweep's time.
    fn list(&self, c: &mut Classifier, sink: &mut dyn ListSink) -> Result<ListEnd, StoreError> {
        if let Some(n) = sink.wants() {
            if let Some(head) = claims::sweep_head_with(&self.root, n, c) {
                sink.page(MemberListing::of_sweep(head, ItemRules::Lockfile));
                return Ok(ListEnd {
                    at: None,
                    complete: false,
                });
            }
        }
        // One page, every claim in it, however the sink answers; a claim
        // the sink holds is read only if its lockfile changed since.
        let held = claims::sweep_held(&self.root, c, sink.held());
        let mut page = MemberListing::of_sweep(held.sweep, ItemRules::Lockfile);
        page.stamps = held.stamps;
        page.kept = held.kept;
        sink.page(page);
        Ok(ListEnd {
            at: None,
            complete: true,
        })
    }

    /// The claims dir's stamp: a lockfile made, replaced, archived or
    /// removed is an entry made, renamed or removed there.
    fn mark(&self) -> Option<claims::Stamp> {
        claims::Stamp::of_dir(&self.root.claims_dir(), crate::time::now_ms())
    }

    fn problem(&self) -> Option<crate::claims::root::RootProblem> {
        self.root.problem()
    }

    /// Byte for byte what serde_json makes of the sweep, at a fraction of
    /// its cost (figure 1).
    fn write_list_json(&self, l: &MemberListing, w: &mut dyn Write) -> Option<io::Result<()>> {
        Some(super::list_json::write_sweep(&l.sweep, w))
    }
}

impl Feed for FileStore {
    /// A root's feed starts from now: its listing is the directory as it
    /// is, and the watch is set before the listing is read.
    fn changes(&self, _after: Option<&Cursor>) -> Result<Box<dyn Changes>, StoreError> {
        Ok(Box::new(FileFeed::start(&self.root, self.feed)))
    }

    /// The root's feed filtered to the key's lockfile, plus the exit of a
    /// local holder's pid, which changes no file.
    fn watch_key(&self, key: &str, wake: Wake) -> Result<Box<dyn KeyWatch>, StoreError> {
        Ok(Box::new(FileKeyWatch::start(&self.root, key, wake)?))
    }
}

impl Audit for FileStore {
    fn logs(&self) -> Result<Vec<(Option<String>, Log)>, StoreError> {
        Ok(vec![(None, Log::Own)])
    }

    fn history(&self, log: &Log) -> Result<Box<dyn History>, StoreError> {
        match log {
            Log::Own => self.own_history(),
            Log::Root(dir) if *dir == self.root.root => self.own_history(),
            other => Err(StoreError::Unsupported(format!(
                "{} keeps no {other:?} events history",
                Claims::url(self)
            ))),
        }
    }

    fn events(&self, n: usize) -> Result<Vec<Event>, StoreError> {
        let chunk =
            read_last_lines(&self.root.events_file(), n).map_err(|e| StoreError::Backend {
                store: Claims::url(self),
                detail: e.to_string(),
            })?;
        // Lines that do not parse are skipped, as `events` always has.
        Ok(chunk.lines.iter().filter_map(|l| l.parse().ok()).collect())
    }

    fn tail(&self, n: usize) -> Result<Tail, StoreError> {
        super::log::tail(&self.root.events_file(), n)
    }

    fn follow(&self, after: Option<&Cursor>) -> Result<Box<dyn LogFeed>, StoreError> {
        super::log::follow(&self.root.events_file(), after)
    }

    /// After the file `end` names, up to its mark (a line's start); the
    /// log's first line when there was no file (every line it gets is new).
    fn resume_after(&self, log: &Log, end: &RangeEnd) -> Option<Cursor> {
        let own = matches!(log, Log::Own) || *log == Log::Root(self.root.root.clone());
        match (end.file_id, end.next) {
            _ if !own => None,
            (Some(id), Some(next)) => Some(super::log::cursor_at(id, next)),
            _ => Some(Cursor::start()),
        }
    }
}

impl Repair for FileStore {
    fn repair(&self) -> Result<Vec<Fix>, StoreError> {
        Ok(claims::doctor_fix(&self.root))
    }
}

impl Backend for FileStore {
    fn audit(&self) -> Option<&dyn Audit> {
        Some(self)
    }

    fn repair(&self) -> Option<&dyn Repair> {
        Some(self)
    }
}
