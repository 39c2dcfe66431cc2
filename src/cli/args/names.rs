//! The stores and roots a command line names, and what every store is
//! opened with: the flags nearer than the environment, a `file:` URL a
//! root, each store's own settings by name.

use super::GlobalArgs;
use crate::claims::{Root, Roots, RootsError, WaitHook};
use crate::store::{OpenCtx, StoreName, StoreUrl, StoreUrlError};
use std::path::PathBuf;

impl GlobalArgs {
    /// The claims roots (and, for one root, the events dir) these flags and
    /// the environment name.
    pub fn roots(&self) -> Result<Roots, RootsError> {
        Roots::resolve(&self.root, self.events_dir.as_deref())
    }

    /// The stores and roots these flags and the environment name: the
    /// `--store`s in order (a `file:DIR` among them is a root), then the
    /// `--root`s. With neither flag, `$FNO_CLAIMS_STORE` (URLs separated by
    /// spaces), else the roots `$FNO_CLAIMS_ROOT` or `$HOME` name. A flag is
    /// nearer than the environment: `--root` alone ignores the environment's
    /// stores, and `--store` alone names no root.
    pub fn names(&self) -> Result<Names, NamesError> {
        let env_stores = || {
            std::env::var("FNO_CLAIMS_STORE")
                .ok()
                .map(|s| s.split_whitespace().map(String::from).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let texts = match (self.store.is_empty(), self.root.is_empty()) {
            (false, _) => self.store.clone(),
            (true, true) => env_stores(),
            (true, false) => Vec::new(),
        };
        let mut stores = Vec::new();
        let mut dirs: Vec<PathBuf> = Vec::new();
        for text in &texts {
            match StoreUrl::parse(text) {
                Ok(StoreUrl::File(dir)) => dirs.push(dir),
                _ => stores.push(StoreName::parse(text)?),
            }
        }
        dirs.extend(self.root.iter().cloned());
        let events_dir = self.events_dir.as_deref();
        let roots = if texts.is_empty() {
            Roots::resolve(&dirs, events_dir)?.as_slice().to_vec()
        } else if dirs.is_empty() {
            Vec::new()
        } else {
            Roots::resolve_from(&dirs, events_dir, None, None)?
                .as_slice()
                .to_vec()
        };
        Ok(Names { stores, roots })
    }

    /// `publish`'s store: `--store`, else `$FNO_CLAIMS_STORE` even when
    /// `--root` is given, since publish reads roots AND writes a store (a
    /// service unit sets the store in its environment).
    pub fn publish_store_url(&self) -> Result<Option<StoreUrl>, StoreUrlError> {
        let text = self.store.first().cloned().or_else(|| {
            std::env::var("FNO_CLAIMS_STORE")
                .ok()
                .filter(|s| !s.trim().is_empty())
        });
        text.map(|t| StoreUrl::parse(t.trim())).transpose()
    }

    /// What every store is opened with: the flags that are no one store's,
    /// and each store's own settings by name (`$ETCD_PASSWORD` read here,
    /// never from a flag).
    pub fn open_ctx(&self, on_mutex: Option<WaitHook>) -> OpenCtx {
        let ms = |v: Option<i64>| v.map(|ms| std::time::Duration::from_millis(ms as u64));
        let mut ctx = OpenCtx {
            events_dir: self.events_dir.clone(),
            timeout: ms(self.timeout),
            on_mutex,
            settings: Default::default(),
        };
        let s = &mut ctx.settings;
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
        for (name, value) in [
            ("etcd-cacert", path(&self.etcd_cacert)),
            ("etcd-cert", path(&self.etcd_cert)),
            ("etcd-key", path(&self.etcd_key)),
            ("etcd-user", self.etcd_user.clone()),
            (
                "etcd-password",
                self.etcd_user
                    .as_ref()
                    .and_then(|_| std::env::var("ETCD_PASSWORD").ok()),
            ),
            (
                "events-retention-ms",
                self.events_retention.map(|ms| ms.to_string()),
            ),
        ] {
            if let Some(v) = value {
                s.set(name, v);
            }
        }
        ctx
    }
}

/// The stores and roots a command line names, in the order they are named.
#[derive(Debug)]
pub struct Names {
    pub stores: Vec<StoreName>,
    pub roots: Vec<Root>,
}

impl Names {
    /// Nothing named at all.
    pub fn is_empty(&self) -> bool {
        self.stores.is_empty() && self.roots.is_empty()
    }
}

/// Why the stores and roots cannot be named: each a usage error.
#[derive(Debug, thiserror::Error)]
pub enum NamesError {
    #[error(transparent)]
    Url(#[from] StoreUrlError),
    #[error(transparent)]
    Roots(#[from] RootsError),
}
