//! What a row of the claims table is, typed: a claim with a place of its
//! own (a lockfile's path on a file root, its key in a store), or a copy a
//! host publishes (which host, which root, which key). Rows are keyed by
//! it, so a copy is told from a claim by its type, never by the look of a
//! path.

use crate::claims::{ItemRules, Loc};
use std::path::Path;
use std::sync::Arc;

/// One row's identity. Two variants keep it as small as the path it
/// replaced (16 bytes): a table of 100 000 rows pays nothing for the type.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RowId {
    /// A lockfile (file roots) or a store's own key (etcd): which, the
    /// claim set says ([`super::ClaimSet::store_keys`]).
    Claim(Loc),
    /// A host's published copy.
    Copy(Arc<CopyId>),
}

/// A published copy's identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CopyId {
    pub host_id: String,
    pub root_id: String,
    pub key: String,
}

impl RowId {
    /// The row of `key` published by `host_id` from its root `root_id`.
    pub fn copy(host_id: &str, root_id: &str, key: &str) -> RowId {
        RowId::Copy(Arc::new(CopyId {
            host_id: host_id.to_string(),
            root_id: root_id.to_string(),
            key: key.to_string(),
        }))
    }

    /// The row of a mirror's place: a copy's place names its host, root
    /// and key.
    pub fn of(loc: Loc) -> RowId {
        if loc.rules() == ItemRules::Copy {
            // `<host_id>/<root_id>/<key>`: ids never hold a `/`, a key may.
            let place = loc.to_str().and_then(|p| {
                let (host, rest) = p.split_once('/')?;
                let (root, key) = rest.split_once('/')?;
                Some((host, root, key))
            });
            if let Some((h, r, k)) = place {
                return RowId::copy(h, r, k);
            }
        }
        RowId::Claim(loc)
    }

    pub fn claim(path: &Path) -> RowId {
        RowId::Claim(Loc::from(path))
    }

    pub fn is_copy(&self) -> bool {
        matches!(self, RowId::Copy(_))
    }

    /// The claim's own place (lockfile or store key); none for a copy.
    pub fn path(&self) -> Option<&Path> {
        match self {
            RowId::Claim(p) => Some(p),
            RowId::Copy(_) => None,
        }
    }
}
