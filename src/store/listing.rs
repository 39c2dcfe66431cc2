//! `list` and `doctor` over any store: the file sweep's shape, with the
//! tenures, store hazards and roots a store adds, and its `--json`.

use super::tenure::Tenure;
use crate::claims::census::Judged;
use crate::claims::{Hazard, ItemRules, Sweep};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `list`: the file sweep's shape, plus per-claim tenures and store hazards.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// On etcd, `root` is the store URL and every `file` is the etcd key.
    pub sweep: Sweep,
    /// Parallel to `sweep.claims`: empty on the file store.
    pub tenures: Vec<Option<Tenure>>,
    /// What only the store finds (etcd's): kept beside the sweep's, which
    /// the mirror counts.
    pub store_hazards: Vec<Hazard>,
    /// The store URL, shown as `"store"` (absent on the file store, whose
    /// JSON is kept byte for byte).
    pub store: Option<String>,
    /// The store revision the listing was read at (etcd), from which a watch
    /// resumes without missing a change.
    pub revision: Option<i64>,
    /// Several roots listed as one ([`super::multi::MultiStore`]): which root each
    /// claim and hazard of `sweep` came from. `None` for one root or store.
    pub origins: Option<Origins>,
}

/// Where each entry of a listing over several roots came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origins {
    /// The roots, in the order they were named.
    pub roots: Vec<PathBuf>,
    /// Parallel to `sweep.claims`: an index into `roots`.
    pub claims: Vec<usize>,
    /// Parallel to `sweep.hazards`: an index into `roots`.
    pub hazards: Vec<usize>,
}

impl Listing {
    pub fn of_sweep(sweep: Sweep) -> Listing {
        Listing {
            sweep,
            tenures: Vec::new(),
            store_hazards: Vec::new(),
            store: None,
            revision: None,
            origins: None,
        }
    }

    /// The root a claim of `sweep.claims` (by index) lives in, when the
    /// listing covers several.
    pub fn claim_root(&self, i: usize) -> Option<&Path> {
        let o = self.origins.as_ref()?;
        o.roots.get(*o.claims.get(i)?).map(PathBuf::as_path)
    }

    /// The root a hazard of `sweep.hazards` (by index) was found in, when
    /// the listing covers several.
    pub fn hazard_root(&self, i: usize) -> Option<&Path> {
        let o = self.origins.as_ref()?;
        o.roots.get(*o.hazards.get(i)?).map(PathBuf::as_path)
    }

    /// How its claims' own hazards are judged: a listing with a store URL
    /// is a store's, else a root's lockfiles.
    pub fn item_rules(&self) -> ItemRules {
        match self.store {
            Some(_) => ItemRules::StoreKey,
            None => ItemRules::Lockfile,
        }
    }

    /// `list --json`: exactly the sweep's JSON on the file store; on etcd the
    /// same with `"store"`, the tenure fields and the store hazards added.
    pub fn to_json(&self) -> Value {
        let rules = self.item_rules();
        let claims: Vec<Value> = self
            .sweep
            .claims
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let mut v = serde_json::to_value(Judged { item, rules }).unwrap_or(Value::Null);
                if let Some(record) = v.get_mut("record") {
                    Tenure::extend_record(self.tenures.get(i).and_then(Option::as_ref), record);
                }
                v
            })
            .collect();
        let mut hazards: Vec<Value> = self
            .sweep
            .hazards
            .iter()
            .filter_map(|h| serde_json::to_value(h).ok())
            .collect();
        hazards.extend(
            self.store_hazards
                .iter()
                .filter_map(|h| serde_json::to_value(h).ok()),
        );
        let mut v = serde_json::json!({
            "root": self.sweep.root.to_string_lossy(),
            "claims": claims,
            "counts": self.sweep.counts,
            "hazards": hazards,
        });
        if let Some(origins) = &self.origins {
            return self.several_json(v, origins);
        }
        if let (Some(store), Some(obj)) = (&self.store, v.as_object_mut()) {
            obj.insert("store".into(), Value::from(store.as_str()));
        }
        v
    }
}

impl Listing {
    /// `list --json` over several roots: the one-root shape with `root`
    /// the first root, a `roots` array after it, and every item and hazard
    /// carrying the root it came from as its last member.
    fn several_json(&self, sweep: Value, origins: &Origins) -> Value {
        let lossy = |p: &Path| Value::from(p.to_string_lossy().into_owned());
        let Value::Object(mut obj) = sweep else {
            return sweep;
        };
        let with_root = |items: Option<Value>, roots: &[usize]| {
            let Some(Value::Array(items)) = items else {
                return Value::Array(Vec::new());
            };
            let items = items.into_iter().zip(roots).map(|(mut item, r)| {
                if let (Some(o), Some(r)) = (item.as_object_mut(), origins.roots.get(*r)) {
                    o.insert("root".into(), lossy(r));
                }
                item
            });
            Value::Array(items.collect())
        };
        let claims = with_root(obj.remove("claims"), &origins.claims);
        let hazards = with_root(obj.remove("hazards"), &origins.hazards);
        let mut out = serde_json::Map::new();
        out.insert("root".into(), obj.remove("root").unwrap_or(Value::Null));
        out.insert(
            "roots".into(),
            Value::Array(origins.roots.iter().map(|r| lossy(r)).collect()),
        );
        out.insert("claims".into(), claims);
        out.insert("counts".into(), obj.remove("counts").unwrap_or(Value::Null));
        out.insert("hazards".into(), hazards);
        Value::Object(out)
    }
}
