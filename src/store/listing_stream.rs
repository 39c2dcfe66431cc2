//! `list --json` written while the store is read: over one named member,
//! each page of its listing goes out as it comes (the first claim's bytes
//! before the last page is read), and the document is byte for byte the
//! one [`Listing::write_json`] writes of the whole listing. Over several
//! origins claims are sorted across them, so the whole listing is read
//! first, as before.
//!
//! What hosts publish is sorted in among the store's own claims: merged
//! as it is read where the store can hand it over so
//! ([`super::copy_merge`]), read whole first otherwise, and when limited
//! to some hosts or roots ([`Only`]).

use super::backend::{list_now_into, Flow, ListSink, MemberListing};
use super::compose::{Listing, Store};
use super::copy_merge::CopyFeed;
use super::fleet::{list_order, tag_store_item, FleetRest, FleetState};
use super::raw_copy::{ListCopy, RawCopy};
use super::StoreError;
use crate::claims::{Counts, Hazard, HazardAt};
use serde_json::{Map, Value};
use std::collections::VecDeque;
use std::io::{self, Write};

/// Which hosts' and roots' published claims a listing keeps (`--host`,
/// `--root-id`); empty: every one. The store's own claims are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Only {
    /// Host labels or ids.
    pub hosts: Vec<String>,
    pub root_ids: Vec<String>,
}

impl Only {
    pub fn everything(&self) -> bool {
        self.hosts.is_empty() && self.root_ids.is_empty()
    }

    fn host(&self, host_id: &str, label: Option<&str>) -> bool {
        self.hosts.is_empty()
            || self
                .hosts
                .iter()
                .any(|h| h == host_id || Some(h.as_str()) == label)
    }

    fn root(&self, root_id: &str) -> bool {
        self.root_ids.is_empty() || self.root_ids.iter().any(|r| r == root_id)
    }

    /// `fleet` with only the hosts, copies and hazards asked for.
    pub fn limit(&self, fleet: &mut FleetState) {
        self.limit_listed(fleet, &mut Vec::new());
    }

    /// [`Only::limit`], and the copies kept as their bytes beside `fleet`.
    pub fn limit_listed(&self, fleet: &mut FleetState, raw: &mut Vec<RawCopy>) {
        if self.everything() {
            return;
        }
        let label = |id: &str| {
            let h = fleet.hosts.iter().find(|h| h.host_id == id);
            h.map(|h| h.label.clone())
        };
        let keep_host: Vec<String> = (fleet.hosts.iter())
            .filter(|h| self.host(&h.host_id, Some(&h.label)))
            .filter(|h| h.roots.iter().any(|r| self.root(&r.id)))
            .map(|h| h.host_id.clone())
            .collect();
        let keeps = |host_id: &str, root_id: &str| {
            keep_host.iter().any(|h| h == host_id)
                && self.host(host_id, label(host_id).as_deref())
                && self.root(root_id)
        };
        raw.retain(|c| keeps(&c.root.host_id, &c.root.root_id));
        fleet.items.retain(|i| keeps(&i.host_id, &i.root.id));
        fleet.last_known.retain(|i| keeps(&i.host_id, &i.root.id));
        fleet.hazards.retain(|h| match &h.at {
            HazardAt::Copy(at) => keeps(&at.host_id, &at.root_id),
            _ => true,
        });
        fleet.hosts.retain(|h| keep_host.contains(&h.host_id));
    }
}

/// Why a streamed `list --json` stopped.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The store could not be read (some of the document may be out).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store stopped answering after part of the document was out.
    #[error(transparent)]
    Cut(StoreError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl Store {
    /// `list --json` to `w`, streamed where one origin is named.
    pub fn write_list_json(&self, w: &mut dyn Write, only: &Only) -> Result<(), StreamError> {
        self.write_list_json_as(w, only, true)
    }

    /// [`Store::write_list_json`] with every copy hosts publish read
    /// before the first claim goes out, as it was before they were merged
    /// while read: what the merge is held to, byte for byte.
    #[doc(hidden)]
    pub fn write_list_json_read_first(
        &self,
        w: &mut dyn Write,
        only: &Only,
    ) -> Result<(), StreamError> {
        self.write_list_json_as(w, only, false)
    }

    fn write_list_json_as(
        &self,
        w: &mut dyn Write,
        only: &Only,
        merge: bool,
    ) -> Result<(), StreamError> {
        let mut takers = self.members().iter().filter(|m| m.backend().takes_claims());
        let (Some(one), None) = (takers.next(), takers.next()) else {
            return self.write_whole(w, only);
        };
        if self.several() {
            return self.write_whole(w, only);
        }
        let store = one.root_dir().is_none().then(|| one.backend().url());
        // Over a store hosts publish into, the document's opening goes out
        // as soon as the store has answered: its claims are sorted across
        // every host's, so the first of them waits for every host's first.
        let opened = match &store {
            Some(url) if self.may_have_fleet()? => {
                open(w, url)?;
                w.flush()?;
                true
            }
            _ => false,
        };
        // Merged while read, unless limited: what a host counts is
        // counted over all its roots, so every root is read anyway.
        let fed = match (opened && merge && only.everything()).then(|| self.fed()) {
            Some(Ok(fed)) => fed,
            Some(Err(e)) => return Err(StreamError::Cut(e)),
            None => None,
        };
        let mut sink = match fed {
            Some(fed) => JsonSink::fed(w, store, fed),
            None => {
                let mut fleet = match self.fleet_listed() {
                    Ok(f) => f,
                    Err(e) if opened => return Err(StreamError::Cut(e)),
                    Err(e) => return Err(e.into()),
                };
                if let Some((f, raw)) = fleet.as_mut() {
                    only.limit_listed(f, raw);
                }
                JsonSink::new(w, store, fleet)
            }
        };
        sink.begun = opened;
        if let Err(e) = list_now_into(one.backend(), &mut sink) {
            return Err(match sink.begun {
                true => StreamError::Cut(e),
                false => StreamError::Store(e),
            });
        }
        if let Some(e) = sink.failed.take() {
            return Err(e.into());
        }
        if let Some(e) = sink.cut.take() {
            return Err(StreamError::Cut(e));
        }
        match sink.first.take() {
            // One page: the listing whole, which a member may write faster.
            Some(only_page) if sink.copies.is_none() && !opened => {
                let mut l = only_page;
                l.at = one.ix;
                let listing = Listing {
                    members: vec![l],
                    fleet: None,
                };
                listing.write_json(self, sink.w)?;
                std::mem::forget(listing);
                Ok(())
            }
            first => {
                if let Some(page) = first {
                    sink.write_page(page).map_err(cut)?;
                }
                sink.end(one.backend().url()).map_err(cut)
            }
        }
    }

    /// The copies merged as they are read: Some(None) when there is a
    /// merging store but nobody publishes into it (the document is the
    /// store's alone).
    fn fed(&self) -> Result<Option<Option<Box<dyn CopyFeed>>>, StoreError> {
        let Some(mut feed) = self.fleet_feed()? else {
            return Ok(None);
        };
        Ok(Some(feed.any_hosts()?.then_some(feed)))
    }

    /// The whole listing read, then written.
    fn write_whole(&self, w: &mut dyn Write, only: &Only) -> Result<(), StreamError> {
        let mut listing = self.list()?;
        if let Some(f) = listing.fleet.as_mut() {
            only.limit(f);
        }
        listing.write_json(self, w)?;
        std::mem::forget(listing);
        Ok(())
    }
}

/// Past the document's opening, a store that stops answering cuts it.
fn cut(e: StreamError) -> StreamError {
    match e {
        StreamError::Store(e) => StreamError::Cut(e),
        e => e,
    }
}

/// The document's opening, up to its first claim.
fn open(w: &mut dyn Write, root: &str) -> io::Result<()> {
    w.write_all(b"{\"root\":")?;
    serde_json::to_writer(&mut *w, root)?;
    w.write_all(b",\"claims\":[")
}

/// The published items still to go out.
enum Copies {
    /// Read whole and sorted.
    Sorted(VecDeque<ListCopy>),
    /// Merged as they are read.
    Fed(Box<dyn CopyFeed>),
}

/// A listing written as its pages come.
struct JsonSink<'w> {
    w: &'w mut dyn Write,
    /// `"store"`, for a member that is no root.
    store: Option<String>,
    /// The first page, held until a second shows there is more than one
    /// (a member that lists in one page writes it its own way).
    first: Option<MemberListing>,
    begun: bool,
    counts: Counts,
    hazards: Vec<Hazard>,
    store_hazards: Vec<Hazard>,
    /// Published items still to go out, in their order.
    copies: Option<Copies>,
    rest: Option<FleetRest>,
    failed: Option<io::Error>,
    /// The store stopped answering while copies were merged.
    cut: Option<StoreError>,
    /// Items written so far.
    written: usize,
}

impl ListSink for JsonSink<'_> {
    fn streams(&self) -> bool {
        true
    }

    fn page(&mut self, page: MemberListing) -> Flow {
        let written = match self.first.take() {
            None if !self.begun => {
                self.first = Some(page);
                return Flow::Go;
            }
            None => self.write_page(page),
            Some(first) => self.write_page(first).and_then(|()| self.write_page(page)),
        };
        // Out now: a reader sees the claims while later pages are read.
        match written.and_then(|()| Ok(self.w.flush()?)) {
            Ok(()) => Flow::Go,
            Err(StreamError::Io(e)) => {
                self.failed = Some(e);
                Flow::Stop
            }
            Err(StreamError::Store(e) | StreamError::Cut(e)) => {
                self.cut = Some(e);
                Flow::Stop
            }
        }
    }
}

impl<'w> JsonSink<'w> {
    /// A writer of one member's listing to `w`, with what hosts publish.
    fn new(
        w: &'w mut dyn Write,
        store: Option<String>,
        fleet: Option<(FleetState, Vec<RawCopy>)>,
    ) -> Self {
        let (copies, rest) = match fleet.map(|(f, raw)| f.into_listed(raw)) {
            Some((copies, rest)) => (Some(Copies::Sorted(copies.into())), Some(rest)),
            None => (None, None),
        };
        JsonSink {
            w,
            store,
            first: None,
            begun: false,
            counts: Counts::default(),
            hazards: Vec::new(),
            store_hazards: Vec::new(),
            copies,
            rest,
            failed: None,
            cut: None,
            written: 0,
        }
    }

    /// [`JsonSink::new`] with the copies merged as they are read (`fed`;
    /// None: nobody publishes).
    fn fed(w: &'w mut dyn Write, store: Option<String>, fed: Option<Box<dyn CopyFeed>>) -> Self {
        let mut sink = JsonSink::new(w, store, None);
        sink.copies = fed.map(Copies::Fed);
        sink
    }

    fn write_page(&mut self, page: MemberListing) -> Result<(), StreamError> {
        if !self.begun {
            self.begun = true;
            open(self.w, &page.sweep.root.to_string_lossy())?;
        }
        for i in 0..page.sweep.claims.len() {
            let mut item = page.item_json(i);
            if self.copies.is_some() {
                tag_store_item(&mut item);
                let at = list_order(&item);
                while let Some(copy) = self.next_copy_before(Some(&at))? {
                    self.copy(&copy)?;
                }
            }
            self.item(&item)?;
        }
        self.counts += page.sweep.counts;
        self.hazards.extend(page.sweep.hazards);
        self.store_hazards.extend(page.store_hazards);
        Ok(())
    }

    /// The next published item that goes before a store's item at `at`
    /// (one at the same place goes after it); with no `at`, the next.
    fn next_copy_before(
        &mut self,
        at: Option<&(String, String, String)>,
    ) -> Result<Option<ListCopy>, StoreError> {
        let at = at.map(|at| (at.0.as_bytes(), at.1.as_bytes(), at.2.as_bytes()));
        Ok(match self.copies.as_mut() {
            None => None,
            Some(Copies::Fed(feed)) => feed.next_before(at)?,
            Some(Copies::Sorted(copies)) => match copies.front() {
                Some(c) if at.is_none_or(|at| c.order_bytes() < at) => copies.pop_front(),
                _ => None,
            },
        })
    }

    fn item(&mut self, item: &Value) -> io::Result<()> {
        if self.written > 0 {
            self.w.write_all(b",")?;
        }
        serde_json::to_writer(&mut *self.w, item)?;
        self.written += 1;
        Ok(())
    }

    fn copy(&mut self, copy: &ListCopy) -> io::Result<()> {
        if self.written > 0 {
            self.w.write_all(b",")?;
        }
        copy.write(&mut *self.w)?;
        self.written += 1;
        Ok(())
    }

    /// What follows the claims, as [`Listing::write_json`] has it: the
    /// counts, the hazards (the sweep's, then the store's own, then what
    /// hosts found), `"store"`, and what hosts publish.
    fn end(&mut self, url: String) -> Result<(), StreamError> {
        if !self.begun {
            // Nothing listed: the document of an empty listing.
            self.begun = true;
            open(self.w, &url)?;
        }
        while let Some(copy) = self.next_copy_before(None)? {
            self.copy(&copy)?;
        }
        if let Some(Copies::Fed(feed)) = self.copies.as_mut() {
            self.rest = Some(feed.finish()?);
        }
        self.w.write_all(b"]")?;
        let mut tail = Map::new();
        tail.insert(
            "counts".into(),
            serde_json::to_value(self.counts).unwrap_or(Value::Null),
        );
        let hazards = (self.hazards.iter())
            .chain(&self.store_hazards)
            .map(|h| serde_json::to_value(h).unwrap_or(Value::Null))
            .collect();
        tail.insert("hazards".into(), Value::Array(hazards));
        if let Some(store) = self.store.take() {
            tail.insert("store".into(), Value::from(store));
        }
        if let Some(rest) = self.rest.take() {
            rest.finish(&mut tail);
        }
        for (k, v) in &tail {
            self.w.write_all(b",")?;
            serde_json::to_writer(&mut *self.w, k).map_err(io::Error::from)?;
            self.w.write_all(b":")?;
            serde_json::to_writer(&mut *self.w, v).map_err(io::Error::from)?;
        }
        Ok(self.w.write_all(b"}\n")?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{hazard, ItemRules, Loc, Status, Sweep};
    use crate::store::fleet::{FleetItem, HostInfo, PublishedRoot};
    use crate::store::raw_copy::CopyRoot;
    use serde_json::json;
    use std::sync::Arc;

    fn row(key: &str) -> Status {
        let place = Loc::new(1, ItemRules::StoreKey, std::path::Path::new(key));
        Status::free(key.to_string(), place, "no claim".into())
    }

    fn page(keys: &[&str], hazards: Vec<Hazard>, store_hazards: Vec<Hazard>) -> MemberListing {
        let claims: Vec<Status> = keys.iter().map(|k| row(k)).collect();
        let mut counts = Counts::default();
        claims.iter().for_each(|s| counts.add(s.state));
        let mut l = MemberListing::of_sweep(
            Sweep {
                root: "etcd://x/p".into(),
                claims,
                counts,
                hazards,
            },
            ItemRules::StoreKey,
        );
        l.store_hazards = store_hazards;
        l
    }

    fn fleet() -> FleetState {
        let root = PublishedRoot {
            id: "r1".into(),
            path: "/srv".into(),
            ..PublishedRoot::default()
        };
        let copy = |key: &str, host: &str| FleetItem {
            host_id: host.into(),
            hostname: format!("{host}-name"),
            root: root.clone(),
            item: json!({"key": key, "state": "live", "record": {"holder": "h"}}),
        };
        let host = |id: &str, online: bool| HostInfo {
            host_id: id.into(),
            hostname: format!("{id}-name"),
            label: format!("{id}-name"),
            online,
            last_seen_ms: 7,
            roots: vec![root.clone()],
            counts: Counts::default(),
        };
        FleetState {
            hosts: vec![host("h1", true), host("h2", false)],
            items: vec![copy("c", "h1"), copy("a", "h1"), copy("zz", "h1")],
            hazards: Vec::new(),
            last_known: vec![copy("b", "h2")],
        }
    }

    /// The pages streamed, and the document the whole listing would be.
    fn both(pages: Vec<MemberListing>, fleet: Option<FleetState>) -> (String, String) {
        both_kept(pages, fleet, false)
    }

    /// [`both`], with every other published item (when `raw`) handed to
    /// the sink as the bytes its host stored rather than parsed.
    fn both_kept(
        pages: Vec<MemberListing>,
        fleet: Option<FleetState>,
        raw: bool,
    ) -> (String, String) {
        let mut whole = pages[0].clone();
        for p in pages.iter().skip(1) {
            whole.extend(p.clone());
        }
        let mut doc = whole.to_json(Some("etcd://x/p"));
        if let Some(f) = fleet.clone() {
            f.into_list_json(&mut doc);
        }
        let mut want = serde_json::to_vec(&doc).expect("json");
        want.push(b'\n');
        let mut got = Vec::new();
        let kept = fleet.map(|mut f| {
            let mut copies = Vec::new();
            if raw {
                let items = std::mem::take(&mut f.items);
                for (i, item) in items.into_iter().enumerate() {
                    if i % 2 == 1 {
                        f.items.push(item);
                        continue;
                    }
                    let root = CopyRoot::new(&item.host_id, &item.hostname, &item.root);
                    let bytes = serde_json::to_vec(&item.item).expect("json");
                    copies.push(RawCopy::of(&Arc::new(root), bytes).expect("as it stands"));
                }
            }
            (f, copies)
        });
        let mut sink = JsonSink::new(&mut got, Some("etcd://x/p".into()), kept);
        for p in pages {
            assert_eq!(sink.page(p), Flow::Go);
        }
        if let Some(first) = sink.first.take() {
            sink.write_page(first).expect("write");
        }
        sink.end("etcd://x/p".into()).expect("end");
        let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8");
        (text(got), text(want))
    }

    fn pages() -> Vec<MemberListing> {
        let corrupt = || Hazard::at_key(hazard::CORRUPTED_CLAIM, "k", "bad".into());
        vec![
            page(&["a", "b"], Vec::new(), Vec::new()),
            page(&["b b", "c"], vec![corrupt()], Vec::new()),
            page(&[], vec![corrupt()], vec![corrupt()]),
        ]
    }

    #[test]
    fn pages_streamed_are_the_document_of_the_whole_listing() {
        let (got, want) = both(pages(), None);
        assert_eq!(got, want);
    }

    #[test]
    fn published_items_stream_in_among_the_stores_own_in_the_whole_listings_order() {
        let (got, want) = both(pages(), Some(fleet()));
        assert_eq!(got, want);
        assert!(got.contains("\"last_known\""), "{got}");
    }

    #[test]
    fn published_items_written_as_their_hosts_stored_them_are_the_document_of_the_whole_listing() {
        let (got, want) = both_kept(pages(), Some(fleet()), true);
        assert_eq!(got, want);
        let (got, want) = both_kept(
            Vec::from([page(&["b"], Vec::new(), Vec::new())]),
            Some(fleet()),
            true,
        );
        assert_eq!(got, want);
    }

    #[test]
    fn a_host_or_root_limit_keeps_that_hosts_copies_and_hosts_only() {
        let mut f = fleet();
        let only = Only {
            hosts: vec!["h2-name".into()],
            root_ids: Vec::new(),
        };
        only.limit(&mut f);
        assert!(f.items.is_empty());
        assert_eq!(f.last_known.len(), 1);
        assert_eq!(f.hosts.len(), 1);
        let mut f = fleet();
        let only = Only {
            hosts: Vec::new(),
            root_ids: vec!["elsewhere".into()],
        };
        only.limit(&mut f);
        assert!(f.items.is_empty() && f.last_known.is_empty() && f.hosts.is_empty());
    }
}
