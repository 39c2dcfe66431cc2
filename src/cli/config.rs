//! Settings from `config.toml`: what the dashboard opens with, so an
//! operator who always filters to `state:stale` or reads local time says so
//! once. Read from `--config FILE`, else `$XDG_CONFIG_HOME/claimtop/config.toml`,
//! else `~/.config/claimtop/config.toml`. A key this version does not know
//! or a value it cannot use is an error naming it, never ignored: a setting
//! that silently does nothing is worse than none.

use crate::columns::{on_screen, ColumnId};
use crate::dashboard::keys::Overrides;
use crate::dashboard::model::{Filter, Sort};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub dashboard: DashboardSettings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DashboardSettings {
    /// The `/` filter the claims table opens with (empty: every claim).
    pub filter: String,
    /// The column the table opens sorted by.
    pub sort: String,
    /// Sorted the other way round.
    pub reverse: bool,
    /// `utc` or `local`: the zone times are shown in (the dashboard) and
    /// `HH:MM` is read in (`events --since`).
    pub time_zone: TimeZone,
    /// As `--read-only`: no key changes anything.
    pub read_only: bool,
    /// As `--no-color`.
    pub no_color: bool,
    /// The claims table's columns (state and key always show); empty: as
    /// many as the width fits. `:columns` changes them for a session.
    pub columns: Vec<String>,
    /// How often the dashboard's clock ticks (countdowns, TTL edges, hosts'
    /// last-seen): `1s` to `60s`, as htop's delay.
    pub refresh: String,
    /// Commands bound to other keys: `release = "R"`, `timeline = "f5 T"`
    /// (the names `:` knows; keys like R, ctrl-r, f5, enter, space).
    pub keys: std::collections::BTreeMap<String, String>,
}

impl Default for DashboardSettings {
    fn default() -> DashboardSettings {
        DashboardSettings {
            filter: String::new(),
            sort: Sort::default().column.title().to_string(),
            reverse: false,
            time_zone: TimeZone::Utc,
            read_only: false,
            no_color: false,
            columns: Vec::new(),
            refresh: "1s".to_string(),
            keys: std::collections::BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeZone {
    #[default]
    Utc,
    Local,
}

impl DashboardSettings {
    /// The columns named (checked by [`parse`]: every one is a column).
    /// The tick, in ms (checked by [`parse`]).
    pub fn refresh_ms(&self) -> i64 {
        refresh_ms(&self.refresh).unwrap_or(1000)
    }

    /// The keys rebound (checked by [`parse`]: every one is usable).
    pub fn key_overrides(&self) -> Overrides {
        Overrides::parse(&self.keys).unwrap_or_default()
    }

    pub fn chosen_columns(&self) -> Vec<ColumnId> {
        self.columns
            .iter()
            .filter_map(|c| ColumnId::named(c))
            .collect()
    }

    /// The sort the table opens with.
    pub fn sort(&self) -> Sort {
        Sort {
            column: ColumnId::named(&self.sort).unwrap_or(Sort::default().column),
            reverse: self.reverse,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the settings file {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("in the settings file {}: {message}", .path.display())]
    Invalid { path: PathBuf, message: String },
}

/// Where the settings were read from, and what they are.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The file read; `None` when no file exists at the default place.
    pub path: Option<PathBuf>,
    /// Where a file would be looked for, when none was read.
    pub looked_at: Option<PathBuf>,
    pub settings: Settings,
}

/// The default place: `$XDG_CONFIG_HOME/claimtop/config.toml`, else
/// `$HOME/.config/claimtop/config.toml` (a set-but-empty variable counts
/// as unset, as the XDG spec says).
pub fn default_path(xdg: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    let base = match (
        xdg.filter(|x| !x.is_empty()),
        home.filter(|h| !h.is_empty()),
    ) {
        (Some(x), _) => PathBuf::from(x),
        (None, Some(h)) => Path::new(h).join(".config"),
        (None, None) => return None,
    };
    Some(base.join("claimtop").join("config.toml"))
}

/// Read the settings: `explicit` must exist; the default file may not
/// (then every setting has its default).
pub fn load(explicit: Option<&Path>) -> Result<Loaded, ConfigError> {
    let (path, required) = match explicit {
        Some(p) => (Some(p.to_path_buf()), true),
        None => {
            let env = |n: &str| std::env::var(n).ok();
            (
                default_path(env("XDG_CONFIG_HOME").as_deref(), env("HOME").as_deref()),
                false,
            )
        }
    };
    let Some(path) = path else {
        return Ok(Loaded {
            path: None,
            looked_at: None,
            settings: Settings::default(),
        });
    };
    let text = match read_settings(&path) {
        Ok(t) => t,
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Loaded {
                path: None,
                looked_at: Some(path),
                settings: Settings::default(),
            })
        }
        Err(source) => return Err(ConfigError::Read { path, source }),
    };
    let settings = parse(&text).map_err(|message| ConfigError::Invalid {
        path: path.clone(),
        message,
    })?;
    Ok(Loaded {
        path: Some(path),
        looked_at: None,
        settings,
    })
}

/// Most bytes a settings file may hold: a handful of keys is a few hundred.
const CONFIG_MAX_BYTES: u64 = 1 << 20;

/// The settings file's text. It may be a link (dotfile managers make them),
/// but what it leads to must be a regular file of sane size: `--config`
/// naming a FIFO used to hang every command in `open(2)`, and
/// `/dev/zero` to read until memory ran out.
fn read_settings(path: &Path) -> std::io::Result<String> {
    use crate::plain_file::{read, Links};
    let bytes = read(path, Links::Follow, CONFIG_MAX_BYTES).map_err(|e| e.into_io())?;
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8"))
}

/// `refresh`: a whole number of seconds from 1 to 60, as a TTL is written.
fn refresh_ms(text: &str) -> Option<i64> {
    crate::time::parse_ttl_ms(text).filter(|ms| (1000..=60_000).contains(ms) && ms % 1000 == 0)
}

/// The settings in `text`, checked: every key known, every value usable.
pub fn parse(text: &str) -> Result<Settings, String> {
    let settings: Settings = toml::from_str(text).map_err(|e| {
        // One line, for a terminal and for a usage error's JSON: where, then what.
        let what = e.message().trim_end();
        let Some(at) = e.span().map(|s| s.start.min(text.len())) else {
            return what.to_string();
        };
        // The line itself names the key whose value was refused.
        let n = text[..at].matches('\n').count() + 1;
        let shown = text.lines().nth(n - 1).unwrap_or_default().trim();
        format!("line {n} ({shown}): {what}")
    })?;
    let d = &settings.dashboard;
    if ColumnId::named(&d.sort).is_none() {
        let names: Vec<&str> = on_screen().map(|c| c.title()).collect();
        return Err(format!(
            "dashboard.sort: no column {:?}; one of {}",
            d.sort,
            names.join(", ")
        ));
    }
    if let Some(bad) = d.columns.iter().find(|c| ColumnId::named(c).is_none()) {
        let names: Vec<&str> = on_screen().map(|c| c.title()).collect();
        return Err(format!(
            "dashboard.columns: no column {bad:?}; any of {}",
            names.join(", ")
        ));
    }
    if refresh_ms(&d.refresh).is_none() {
        return Err(format!(
            "dashboard.refresh: {:?} is not 1s to 60s (1s, 2s, 10s …)",
            d.refresh
        ));
    }
    if let Err(e) = Overrides::parse(&d.keys) {
        return Err(format!("dashboard.keys.{e}"));
    }
    if let Some(problem) = Filter::parse(&d.filter).problem {
        return Err(format!("dashboard.filter: {problem}"));
    }
    Ok(settings)
}

/// The effective settings as TOML, headed by where they came from.
pub fn to_toml(loaded: &Loaded) -> String {
    let source = match (&loaded.path, &loaded.looked_at) {
        (Some(p), _) => format!("# read from {}\n", p.display()),
        (None, Some(p)) => format!("# defaults: no file at {}\n", p.display()),
        (None, None) => "# defaults: neither $XDG_CONFIG_HOME nor $HOME is set\n".to_string(),
    };
    // Plain strings, booleans and tables only: serializing cannot fail.
    let body = toml::to_string_pretty(&loaded.settings).unwrap_or_default();
    format!("{source}{body}")
}

/// `claimtop config --print`: the effective settings, as TOML (or, with
/// `--json`, `{"path": PATH|null, "settings": {...}}`); a file that cannot
/// be used is a usage error naming what is wrong in it.
pub fn print(explicit: Option<&Path>, out: &mut super::output::Out) -> super::output::CmdResult {
    let loaded = match load(explicit) {
        Ok(l) => l,
        Err(e) => return out.usage_error(&e.to_string()),
    };
    if out.json_mode() {
        let settings = serde_json::to_value(&loaded.settings).unwrap_or_default();
        out.json(&serde_json::json!({
            "path": loaded.path.as_ref().map(|p| p.to_string_lossy()),
            "settings": settings,
        }))?;
    } else {
        for line in to_toml(&loaded).lines() {
            out.line(line)?;
        }
    }
    Ok(super::EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settings_file_that_is_a_fifo_or_endless_is_refused_at_once() {
        let td = tempfile::tempdir().expect("tempdir");
        let fifo = td.path().join("fifo.toml");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
        // SAFETY: c is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let zero = td.path().join("zero.toml");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let real = td.path().join("real.toml");
        std::fs::write(&real, "[dashboard]\nfilter = \"x\"\n").expect("write");
        let link = td.path().join("link.toml");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        for (path, what) in [(&fifo, "a FIFO"), (&zero, "a character device")] {
            // On a thread: a hang must fail the test, not stall it.
            let (tx, rx) = std::sync::mpsc::channel();
            let p = path.clone();
            std::thread::spawn(move || {
                let _ = tx.send(load(Some(&p)).map(|l| l.settings));
            });
            let got = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("reading {path:?} hung"));
            match got {
                Err(e @ ConfigError::Read { .. }) => {
                    assert!(e.to_string().contains(what), "{e}")
                }
                other => panic!("{path:?}: {other:?}"),
            }
        }
        // A link to a real file is followed: dotfile managers make them.
        let loaded = load(Some(&link)).expect("a linked settings file");
        assert_eq!(loaded.settings.dashboard.filter, "x");
    }

    #[test]
    fn every_setting_has_a_default_and_an_empty_file_is_the_defaults() {
        assert_eq!(parse("").unwrap(), Settings::default());
        let d = Settings::default().dashboard;
        assert_eq!(d.sort(), Sort::default());
        assert_eq!(d.time_zone, TimeZone::Utc);
    }

    #[test]
    fn the_settings_read_back_from_what_print_writes() {
        let s = parse(
            "[dashboard]\nfilter = \"state:stale holder:codex\"\nsort = \"Age\"\nreverse = true\ntime_zone = \"local\"\nread_only = true\n",
        )
        .unwrap();
        assert_eq!(
            s.dashboard.sort(),
            Sort {
                column: ColumnId::Age,
                reverse: true
            }
        );
        let printed = to_toml(&Loaded {
            path: None,
            looked_at: None,
            settings: s.clone(),
        });
        assert_eq!(parse(&printed).unwrap(), s);
    }

    #[test]
    fn an_unknown_key_or_a_bad_value_is_an_error_naming_it() {
        for (text, named) in [
            ("[dashboard]\nfilterr = \"x\"\n", "filterr"),
            ("[dashbaord]\n", "dashbaord"),
            ("colour = true\n", "colour"),
            ("[dashboard]\nsort = \"size\"\n", "dashboard.sort"),
            ("[dashboard]\ntime_zone = \"mars\"\n", "time_zone"),
            (
                "[dashboard]\nfilter = \"state:sleepy\"\n",
                "dashboard.filter",
            ),
            ("[dashboard]\nread_only = \"yes\"\n", "read_only"),
            ("[dashboard\n", "line 1"),
        ] {
            let e = parse(text).expect_err(text);
            assert!(e.contains(named), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e:?}");
        }
    }

    #[test]
    fn the_default_place_follows_xdg_then_home() {
        assert_eq!(
            default_path(Some("/x"), Some("/h")),
            Some(PathBuf::from("/x/claimtop/config.toml"))
        );
        assert_eq!(
            default_path(Some(""), Some("/h")),
            Some(PathBuf::from("/h/.config/claimtop/config.toml"))
        );
        assert_eq!(default_path(None, None), None);
    }
}
