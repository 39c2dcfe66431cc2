//! `list` and `doctor` over any store, and their `--json`: shapes chosen
//! by how many origins were named and what the listing holds, never by a
//! backend's kind.
//!
//! - One named member: its backend's own writer where it has one (a file
//!   root's, byte for byte the sweep's serde form), else the generic
//!   document: the sweep's shape with `"store"`, the tenure fields and the
//!   store's own hazards added.
//! - Several: the several-roots shape generalized: `"root"` the first
//!   member's, `"roots"` (the file roots, when any) and `"origins"` after
//!   it, and every item and hazard carrying `"origin"` (and `"root"` when it
//!   lives in a root), claims sorted by key, then by the order the origins
//!   were named.
//! - What hosts publish into a site joins either (`"hosts"`,
//!   `"last_known"`, the copies among the claims).

use super::backend::MemberListing;
use super::compose::{Listing, Member, Store};
use super::tenure::Tenure;
use crate::claims::census::Judged;
use crate::claims::{Counts, Hazard, Status};
use serde_json::{Map, Value};
use std::io::{self, Write};

impl MemberListing {
    /// The generic `list --json` of this member alone: the sweep's shape,
    /// each record with its tenure's fields, the store's hazards after the
    /// sweep's, and `"store"` when `store` names one.
    pub fn to_json(&self, store: Option<&str>) -> Value {
        let claims: Vec<Value> = (0..self.sweep.claims.len())
            .map(|i| self.item_json(i))
            .collect();
        let mut v = serde_json::json!({
            "root": self.sweep.root.to_string_lossy(),
            "claims": claims,
            "counts": self.sweep.counts,
            "hazards": self.hazards_json(),
        });
        if let (Some(store), Some(obj)) = (store, v.as_object_mut()) {
            obj.insert("store".into(), Value::from(store));
        }
        v
    }

    /// Claim `i` as an ITEM: the status, its own hazards, its tenure.
    pub fn item_json(&self, i: usize) -> Value {
        let Some(item) = self.sweep.claims.get(i) else {
            return Value::Null;
        };
        let rules = self.rules;
        let mut v = serde_json::to_value(Judged { item, rules }).unwrap_or(Value::Null);
        if let Some(record) = v.get_mut("record") {
            Tenure::extend_record(self.tenures.get(i).and_then(Option::as_ref), record);
        }
        v
    }

    /// Every hazard as HAZARD objects: the sweep's, then the store's own.
    pub fn hazards_json(&self) -> Vec<Value> {
        (self.sweep.hazards.iter())
            .chain(&self.store_hazards)
            .map(hazard_json)
            .collect()
    }

    pub fn hazard_count(&self) -> usize {
        self.sweep.hazards.len() + self.store_hazards.len()
    }
}

fn hazard_json(h: &Hazard) -> Value {
    serde_json::to_value(h).unwrap_or(Value::Null)
}

impl Listing {
    /// The members' listings that speak for named origins (a site's
    /// copies speak through `fleet`).
    pub fn named<'a>(&'a self, store: &'a Store) -> impl Iterator<Item = &'a MemberListing> {
        self.members
            .iter()
            .filter(|l| store.member(l.at).is_some_and(|m| m.named))
    }

    /// Every member's counts added up.
    pub fn counts(&self) -> Counts {
        let mut total = Counts::default();
        for l in &self.members {
            total += l.sweep.counts;
        }
        total
    }

    /// Every claim and its member's listing, by key, then in the order the
    /// origins were named (one key held in two origins shows twice, side
    /// by side).
    pub fn claims(&self) -> Vec<(&MemberListing, &Status)> {
        let mut all: Vec<(&MemberListing, &Status)> = self
            .members
            .iter()
            .flat_map(|l| l.sweep.claims.iter().map(move |s| (l, s)))
            .collect();
        if self.members.len() > 1 {
            all.sort_by(|a, b| a.1.key.cmp(&b.1.key).then(a.0.at.cmp(&b.0.at)));
        }
        all
    }

    /// `list --json`, written to `w`: a file root alone through its own
    /// fast writer; anything else as [`Listing::to_json`] builds it.
    pub fn write_json(&self, store: &Store, w: &mut dyn Write) -> io::Result<()> {
        if self.fleet.is_none() && !store.several() {
            if let Some(only) = self.members.first().filter(|_| self.members.len() == 1) {
                if let Some(written) = store
                    .backend(only.at)
                    .and_then(|b| b.write_list_json(only, w))
                {
                    return written;
                }
            }
        }
        let doc = self.to_json(store);
        serde_json::to_writer(&mut *w, &doc)?;
        w.write_all(b"\n")?;
        // The process ends right after this: freeing every item one by one
        // is time the exit returns whole.
        std::mem::forget(doc);
        Ok(())
    }

    /// `list --json` as a document.
    pub fn to_json(&self, store: &Store) -> Value {
        let mut doc = if store.several() {
            self.several_json(store)
        } else {
            let only = self.members.first();
            let url = only
                .and_then(|l| store.member(l.at))
                .filter(|m| m.root_dir().is_none())
                .map(|m| m.backend().url());
            only.map_or_else(
                || serde_json::json!({"root": "", "claims": [], "counts": Counts::default(), "hazards": []}),
                |l| l.to_json(url.as_deref()),
            )
        };
        if let Some(fleet) = self.fleet.clone() {
            fleet.into_list_json(&mut doc);
        }
        doc
    }

    /// The several-origins shape (see the module's words).
    fn several_json(&self, store: &Store) -> Value {
        let origin_of = |l: &MemberListing| store.member(l.at);
        let tag = |mut v: Value, m: Option<&Member>| {
            if let (Some(m), Some(o)) = (m, v.as_object_mut()) {
                if let Some(dir) = m.root_dir() {
                    o.insert("root".into(), Value::from(dir.to_string_lossy()));
                }
                o.insert("origin".into(), Value::from(m.name()));
            }
            v
        };
        let mut index: Vec<(usize, usize)> = self
            .members
            .iter()
            .enumerate()
            .flat_map(|(m, l)| (0..l.sweep.claims.len()).map(move |i| (m, i)))
            .collect();
        index.sort_by(|a, b| {
            let key = |(m, i): &(usize, usize)| &self.members[*m].sweep.claims[*i].key;
            key(a).cmp(key(b)).then(a.0.cmp(&b.0))
        });
        let claims: Vec<Value> = index
            .into_iter()
            .map(|(m, i)| {
                let l = &self.members[m];
                tag(l.item_json(i), origin_of(l))
            })
            .collect();
        let hazards: Vec<Value> = self
            .members
            .iter()
            .flat_map(|l| {
                let m = origin_of(l);
                l.hazards_json().into_iter().map(move |h| tag(h, m))
            })
            .collect();
        let named: Vec<&Member> = store.named().collect();
        let first = self
            .members
            .first()
            .map_or_else(String::new, |l| l.sweep.root.to_string_lossy().into_owned());
        let mut out = Map::new();
        out.insert("root".into(), Value::from(first));
        let roots: Vec<Value> = named
            .iter()
            .filter_map(|m| m.root_dir())
            .map(|d| Value::from(d.to_string_lossy()))
            .collect();
        if !roots.is_empty() {
            out.insert("roots".into(), Value::Array(roots));
        }
        out.insert(
            "origins".into(),
            Value::Array(named.iter().map(|m| Value::from(m.name())).collect()),
        );
        out.insert("claims".into(), Value::Array(claims));
        out.insert(
            "counts".into(),
            serde_json::to_value(self.counts()).unwrap_or(Value::Null),
        );
        out.insert("hazards".into(), Value::Array(hazards));
        Value::Object(out)
    }
}
