//! One store, whatever it is made of: file roots, sites (a store reached by
//! URL), and the copies hosts publish into a site. Each is a [`Member`]
//! with a typed [`Origin`]; a face holds one [`Store`] and never learns a
//! backend's kind. What covers everything (a listing, the logs, repair)
//! covers each member; a verb on one key goes to the one member that takes
//! claims ([`Store::one`]), or to a row's own member.
//!
//! A concrete struct on purpose: the trait objects are the members'
//! backends, the members are flat, and nothing can nest a composite in a
//! composite or ask which composite it holds.

use super::backend::{list_whole, Backend, MemberListing};
use super::copy_merge::CopyFeed;
pub use super::cursor::OriginIx;
use super::fleet::FleetState;
use super::raw_copy::RawCopy;
use super::registry::{OpenCtx, Role, StoreName};
use super::StoreError;
use crate::claims::{now_ms, Classifier, Fix, Loc, Root};
use crate::events::history::{History, Log};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a member is, for words, JSON and routing — never for choosing
/// behaviour (that is the backend's capabilities).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A file root: `"file:" + root` in JSON.
    Root(PathBuf),
    /// A store named by its URL.
    Site { url: String },
    /// What hosts publish into that site (each copy's host and root are in
    /// its place).
    Published { site: OriginIx },
}

/// One origin of a store.
pub struct Member {
    pub ix: OriginIx,
    pub origin: Origin,
    /// The shortest name that tells it apart from the other members.
    pub label: String,
    /// Named on the command line (a site's published copies are not):
    /// JSON names origins only when more than one is named.
    pub named: bool,
    backend: Arc<dyn Backend>,
}

impl Member {
    pub fn backend(&self) -> &dyn Backend {
        &*self.backend
    }

    /// The backend, shared (a thread of its own reads through it).
    pub fn shared(&self) -> Arc<dyn Backend> {
        Arc::clone(&self.backend)
    }

    /// `"origin"` in JSON: the store URL, or `file:` + the root.
    pub fn name(&self) -> String {
        match &self.origin {
            Origin::Root(dir) => format!("file:{}", dir.to_string_lossy()),
            Origin::Site { url } => url.clone(),
            Origin::Published { .. } => self.backend.url(),
        }
    }

    /// The root's directory, for a member that is a file root.
    pub fn root_dir(&self) -> Option<&Path> {
        match &self.origin {
            Origin::Root(dir) => Some(dir),
            _ => None,
        }
    }
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("ix", &self.ix)
            .field("origin", &self.origin)
            .field("label", &self.label)
            .field("named", &self.named)
            .finish()
    }
}

/// One store, whatever it composes.
#[derive(Debug, Default)]
pub struct Store {
    members: Vec<Member>,
}

/// An events log of one member, named for a face ("which log is this?").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRef {
    pub origin: OriginIx,
    pub log: Log,
    /// The log's name where there are several (None: the only one).
    pub name: Option<String>,
}

/// `list` or `doctor` over every member that takes claims, and what hosts
/// publish into a site (its `"hosts"` and `"last_known"`).
#[derive(Debug)]
pub struct Listing {
    pub members: Vec<MemberListing>,
    pub fleet: Option<FleetState>,
}

impl Store {
    /// The stores `names` name (in order), then the `roots`, each opened by
    /// its scheme's opener.
    pub fn open(names: &[StoreName], roots: &[Root], ctx: &OpenCtx) -> Result<Store, StoreError> {
        let mut parts: Vec<(Origin, bool, Arc<dyn Backend>)> = Vec::new();
        for name in names {
            let site = OriginIx(parts.len() as u16);
            for (role, backend) in name.open(ctx)? {
                let (origin, named) = match role {
                    Role::Site => (Origin::Site { url: backend.url() }, true),
                    Role::Published => (Origin::Published { site }, false),
                    Role::Root(dir) => (Origin::Root(dir), true),
                };
                parts.push((origin, named, backend));
            }
        }
        for root in roots {
            let backend = super::file::open_root(root.clone(), ctx);
            parts.push((Origin::Root(root.root.clone()), true, backend));
        }
        Ok(Store::of_parts(parts))
    }

    /// A store of these backends, each a named site (tests; the memory
    /// store).
    pub fn of(backends: Vec<Arc<dyn Backend>>) -> Store {
        Store::of_parts(
            backends
                .into_iter()
                .map(|b| {
                    let origin = Origin::Site { url: b.url() };
                    (origin, true, b)
                })
                .collect(),
        )
    }

    /// A store of these backends with their origins, in order.
    pub fn of_parts(parts: Vec<(Origin, bool, Arc<dyn Backend>)>) -> Store {
        let labels = labels_of(&parts);
        let members = parts
            .into_iter()
            .zip(labels)
            .enumerate()
            .map(|(i, ((origin, named, backend), label))| Member {
                ix: OriginIx(i as u16),
                origin,
                label,
                named,
                backend,
            })
            .collect();
        Store { members }
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn member(&self, ix: OriginIx) -> Option<&Member> {
        self.members.get(usize::from(ix.0))
    }

    pub fn backend(&self, ix: OriginIx) -> Option<&dyn Backend> {
        self.member(ix).map(Member::backend)
    }

    /// The member a row lives in.
    pub fn of_loc(&self, loc: &Loc) -> Option<&Member> {
        self.member(OriginIx(loc.origin()))
    }

    /// The members named on the command line.
    pub fn named(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| m.named)
    }

    /// More than one origin named: JSON items, hazards and events say
    /// which each came from.
    pub fn several(&self) -> bool {
        self.named().count() > 1
    }

    /// Every member is a file root (several roots keep the words and JSON
    /// they always had).
    pub fn all_roots(&self) -> bool {
        self.members.iter().all(|m| m.root_dir().is_some())
    }

    /// The member a verb on one key goes to: the only one that takes
    /// claims. Several: a usage error naming them (exit 2), since which one
    /// holds the key is the operator's choice, never a guess. A site's
    /// published copies take no claims, so one site is one origin.
    pub fn one(&self, verb: &'static str) -> Result<&Member, StoreError> {
        let takers: Vec<&Member> = self
            .members
            .iter()
            .filter(|m| m.backend.takes_claims())
            .collect();
        match takers.as_slice() {
            [one] => Ok(one),
            [] => Err(StoreError::Unsupported(format!(
                "{verb}: no store here takes claims"
            ))),
            many => Err(StoreError::SeveralOrigins {
                verb,
                all_roots: many.iter().all(|m| m.root_dir().is_some()),
                names: many.iter().map(|m| several_name(m)).collect(),
            }),
        }
    }

    /// Every member that takes claims, listed with one classifier (a pid
    /// probed for one root is not probed again for the next), and what
    /// hosts publish into a site.
    pub fn list(&self) -> Result<Listing, StoreError> {
        let mut c = Classifier::new(now_ms());
        let mut members = Vec::new();
        for m in self.members.iter().filter(|m| m.backend.takes_claims()) {
            let mut l = list_whole(m.backend(), &mut c)?;
            l.at = m.ix;
            members.push(l);
        }
        Ok(Listing {
            members,
            fleet: self.fleet_state()?,
        })
    }

    /// [`Store::list`] and the hazards that cost more to find.
    pub fn doctor(&self) -> Result<Listing, StoreError> {
        let mut listing = self.list()?;
        for l in &mut listing.members {
            if let Some(b) = self.backend(l.at) {
                l.store_hazards.extend(b.deep_hazards()?);
            }
        }
        Ok(listing)
    }

    /// What hosts publish into the sites, when any publishes (None: no
    /// site has a fleet, or no host ever published).
    pub(crate) fn fleet_state(&self) -> Result<Option<FleetState>, StoreError> {
        let mut all: Option<FleetState> = None;
        for f in self.members.iter().filter_map(|m| m.backend.fleet()) {
            let state = f.state()?;
            if state.is_empty() {
                continue;
            }
            match all.as_mut() {
                Some(a) => a.merge(state),
                None => all = Some(state),
            }
        }
        Ok(all)
    }

    /// Whether hosts may publish into any member (one cheap read each).
    pub(crate) fn may_have_fleet(&self) -> Result<bool, StoreError> {
        for f in self.members.iter().filter_map(|m| m.backend.fleet()) {
            if f.may_have_hosts()? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The copies hosts publish, in `list --json`'s order as they are read,
    /// where one member holds them all and can hand them over so; None
    /// otherwise ([`Store::fleet_listed`] then).
    pub(crate) fn fleet_feed(&self) -> Result<Option<Box<dyn CopyFeed>>, StoreError> {
        let mut fleets = self.members.iter().filter_map(|m| m.backend.fleet());
        match (fleets.next(), fleets.next()) {
            (Some(one), None) => one.listed_feed(),
            _ => Ok(None),
        }
    }

    /// [`Store::fleet_state`] for `list --json`, with the copies kept as
    /// their bytes ([`super::backend::Fleet::listed_state`]).
    pub(crate) fn fleet_listed(&self) -> Result<Option<(FleetState, Vec<RawCopy>)>, StoreError> {
        let mut all: Option<(FleetState, Vec<RawCopy>)> = None;
        for f in self.members.iter().filter_map(|m| m.backend.fleet()) {
            let (state, raw) = f.listed_state()?;
            if state.is_empty() {
                continue;
            }
            match all.as_mut() {
                Some((a, r)) => {
                    a.merge(state);
                    r.extend(raw);
                }
                None => all = Some((state, raw)),
            }
        }
        Ok(all)
    }

    /// `doctor --fix` on every member that can repair, each member's fixes
    /// apart. None can: [`StoreError::Unsupported`], in the words of the
    /// first member that cannot.
    pub fn repair(&self) -> Result<Vec<(OriginIx, Vec<Fix>)>, StoreError> {
        let mut out = Vec::new();
        for m in self.named() {
            if let Some(r) = m.backend.repair() {
                out.push((m.ix, r.repair()?));
            }
        }
        if out.is_empty() {
            return Err(StoreError::Unsupported(
                "--fix cleans file roots only; over a store with leases, leases and keys \
                 are left to the operator"
                    .into(),
            ));
        }
        Ok(out)
    }

    /// Every events log of every member, named where there are several:
    /// over roots alone each by its root (as always); over one named
    /// member by the names its backend gives; over several, a member's own
    /// log by the member's label.
    pub fn logs(&self) -> Result<Vec<LogRef>, StoreError> {
        let mut out = Vec::new();
        for m in &self.members {
            let Some(audit) = m.backend.audit() else {
                continue;
            };
            for (name, log) in audit.logs()? {
                out.push(LogRef {
                    origin: m.ix,
                    log,
                    name,
                });
            }
        }
        if out.len() <= 1 {
            out.iter_mut().for_each(|r| r.name = None);
            return Ok(out);
        }
        let (roots_only, several) = (self.all_roots(), self.several());
        for r in &mut out {
            let Some(m) = self.member(r.origin) else {
                continue;
            };
            match m.root_dir() {
                Some(dir) if roots_only => r.name = Some(dir.to_string_lossy().into_owned()),
                _ if several && r.log == Log::Own => r.name = Some(m.label.clone()),
                _ if r.name.is_none() => r.name = Some(m.label.clone()),
                _ => {}
            }
        }
        Ok(out)
    }

    /// One log's whole history.
    pub fn history(&self, log: &LogRef) -> Result<Box<dyn History>, StoreError> {
        let audit = self
            .backend(log.origin)
            .and_then(|b| b.audit())
            .ok_or_else(|| StoreError::Unsupported("this store keeps no events log".into()))?;
        audit.history(&log.log)
    }
}

/// How a member is named in a refusal: a root by its directory (as the
/// several-roots refusal always named it), a store by its URL.
fn several_name(m: &Member) -> String {
    match m.root_dir() {
        Some(dir) => dir.to_string_lossy().into_owned(),
        None => m.name(),
    }
}

/// Each member's label: roots by the fewest trailing components that tell
/// them apart, sites by their URL without the scheme, a site's copies by
/// the site's label and what they are.
fn labels_of(parts: &[(Origin, bool, Arc<dyn Backend>)]) -> Vec<String> {
    let dirs: Vec<&Path> = parts
        .iter()
        .filter_map(|(o, _, _)| match o {
            Origin::Root(d) => Some(d.as_path()),
            _ => None,
        })
        .collect();
    let mut root_labels = labels(&dirs).into_iter();
    let mut out: Vec<String> = Vec::with_capacity(parts.len());
    for (origin, _, backend) in parts {
        let label = match origin {
            Origin::Root(_) => root_labels.next().unwrap_or_default(),
            Origin::Site { url } => url
                .split_once("://")
                .map_or(url.as_str(), |(_, rest)| rest)
                .to_string(),
            Origin::Published { site } => {
                let of = out.get(usize::from(site.0)).cloned();
                format!("{} hosts", of.unwrap_or_else(|| backend.url()))
            }
        };
        out.push(label);
    }
    out
}

/// A short label per path: the fewest trailing components that tell it
/// apart from every other path (`/srv/a/repo` and `/srv/b/repo` become
/// `a/repo` and `b/repo`); a path that is a suffix of another gets its
/// full spelling.
pub fn labels(paths: &[&Path]) -> Vec<String> {
    let tail = |p: &Path, n: usize| -> String {
        let parts: Vec<_> = p.components().collect();
        if n >= parts.len() {
            return p.to_string_lossy().into_owned();
        }
        let suffix: PathBuf = parts[parts.len() - n..].iter().collect();
        suffix.to_string_lossy().into_owned()
    };
    let deepest = paths
        .iter()
        .map(|p| p.components().count())
        .max()
        .unwrap_or(0);
    let mut out: Vec<String> = Vec::with_capacity(paths.len());
    for (i, p) in paths.iter().enumerate() {
        let label = (1..=deepest.max(1))
            .map(|n| tail(p, n))
            .find(|l| {
                paths
                    .iter()
                    .enumerate()
                    .all(|(j, q)| j == i || tail(q, l.matches('/').count() + 1) != *l)
            })
            .unwrap_or_else(|| p.to_string_lossy().into_owned());
        out.push(label);
    }
    out
}

#[cfg(test)]
mod tests;
