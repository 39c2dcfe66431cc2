//! From a URL scheme to the backend that opens it. A new store is its
//! folder and one line in [`OPENERS`]; its options ride in its URL or in
//! the [`Settings`] it reads by its own names.

use super::backend::Backend;
use super::url::StoreUrlError;
use super::StoreError;
use crate::claims::HazardSpec;
use crate::claims::WaitHook;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The members one name opens, each with its role.
pub type Opened = Vec<(Role, Arc<dyn Backend>)>;

/// How one scheme's stores are opened.
pub struct Opener {
    /// The schemes it answers (`"etcd"` for `etcd://...`).
    pub schemes: &'static [&'static str],
    /// The URL checked at parse time, so a bad one is a usage error
    /// (exit 2) before anything is opened.
    pub check: fn(&str) -> Result<(), StoreUrlError>,
    /// The members one URL opens: a site, and what hosts publish into it,
    /// or one root.
    pub open: fn(&str, &OpenCtx) -> Result<Opened, StoreError>,
    /// The hazard kinds only this backend finds (each spec says whether
    /// `metrics` exports it).
    pub hazards: &'static [&'static HazardSpec],
}

/// What a member an opener returns is in its store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// A file root, by its directory.
    Root(PathBuf),
    /// The store the URL names.
    Site,
    /// What hosts publish into the site opened just before it.
    Published,
}

/// What every opener is handed: the flags that are no one store's, and the
/// settings each reads by its own names.
#[derive(Clone, Default)]
pub struct OpenCtx {
    /// `--events-dir`: where one file root's `.fno/events.jsonl` lives.
    pub events_dir: Option<PathBuf>,
    /// `--timeout`: every call to a store reached over a connection
    /// answers within it.
    pub timeout: Option<Duration>,
    /// Told whenever a file root's acquire waits on a peer's recovery mutex.
    pub on_mutex: Option<WaitHook>,
    pub settings: Settings,
}

/// Named options, each read by the backend that knows the name
/// (`etcd-cacert`, `etcd-user`, `events-retention-ms`...). A name with
/// `password` in it never reaches a log or a panic message.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Settings(BTreeMap<&'static str, String>);

impl Settings {
    pub fn set(&mut self, name: &'static str, value: impl Into<String>) {
        self.0.insert(name, value.into());
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = self.0.iter().map(|(k, v)| {
            let v = if k.contains("password") {
                "<redacted>"
            } else {
                v.as_str()
            };
            (k, v)
        });
        f.debug_map().entries(shown).finish()
    }
}

impl std::fmt::Debug for OpenCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenCtx")
            .field("events_dir", &self.events_dir)
            .field("timeout", &self.timeout)
            .field("settings", &self.settings)
            .finish()
    }
}

/// Every scheme this build knows. A build without a store's feature still
/// knows its scheme, and says what to rebuild with.
pub const OPENERS: &[&Opener] = &[
    &super::file::OPENER,
    #[cfg(feature = "etcd")]
    &super::etcd::OPENER,
    #[cfg(not(feature = "etcd"))]
    &ETCD_NOT_BUILT,
];

/// The etcd schemes in a build without etcd: the URL is checked, and
/// opening it says what to rebuild with.
#[cfg(not(feature = "etcd"))]
pub const ETCD_NOT_BUILT: Opener = Opener {
    schemes: &["etcd", "etcds"],
    check: |text| super::url::check_etcd(text).map(|_| ()),
    open: |text, _| {
        Err(StoreError::NotBuilt {
            scheme: text.split_once(':').map_or("etcd", |(s, _)| s).to_string(),
            feature: "etcd",
        })
    },
    hazards: &[],
};

/// A `--store` value: its text, checked, and the opener of its scheme.
#[derive(Clone)]
pub struct StoreName {
    text: String,
    opener: &'static Opener,
}

impl StoreName {
    /// The opener of `text`'s scheme, its URL checked.
    pub fn parse(text: &str) -> Result<StoreName, StoreUrlError> {
        if text.trim().is_empty() {
            return Err(StoreUrlError::Empty(text.to_string()));
        }
        let scheme = text.split_once(':').map_or("", |(s, _)| s);
        let opener = OPENERS
            .iter()
            .find(|o| o.schemes.contains(&scheme))
            .ok_or_else(|| StoreUrlError::UnknownScheme(text.to_string()))?;
        (opener.check)(text)?;
        Ok(StoreName {
            text: text.to_string(),
            opener,
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Open the members this name stands for.
    pub fn open(&self, ctx: &OpenCtx) -> Result<Opened, StoreError> {
        (self.opener.open)(&self.text, ctx)
    }

    /// The hazard kinds only this name's backend finds.
    pub fn hazards(&self) -> &'static [&'static HazardSpec] {
        self.opener.hazards
    }
}

impl std::fmt::Debug for StoreName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreName({:?})", self.text)
    }
}

impl PartialEq for StoreName {
    fn eq(&self, other: &StoreName) -> bool {
        self.text == other.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheme_finds_its_opener_and_an_unknown_one_is_refused() {
        assert!(StoreName::parse("file:/tmp/r").is_ok());
        assert!(StoreName::parse("etcd://127.0.0.1:2379/fno").is_ok());
        assert!(matches!(
            StoreName::parse("http://x:1"),
            Err(StoreUrlError::UnknownScheme(_))
        ));
        assert!(StoreName::parse("etcd://host").is_err());
        assert!(StoreName::parse("  ").is_err());
    }

    #[test]
    fn a_password_setting_never_shows_in_debug() {
        let mut s = Settings::default();
        s.set("etcd-password", "hunter2");
        s.set("etcd-user", "me");
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("hunter2") && shown.contains("me"),
            "{shown}"
        );
    }
}
