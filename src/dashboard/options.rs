//! How the dashboard was asked to run: the roots, the operator's settings
//! for the first screen, and the switches.

use super::keys::Overrides;
use super::model::table::Sort;
use crate::claims::Root;
use crate::columns::ColumnId;

/// The clock's tick period unless the operator's `refresh` says otherwise.
pub const DEFAULT_TICK_MS: i64 = 1000;

/// How the dashboard was asked to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub root: Root,
    /// Further roots shown in the same view (`--root` given again, or a
    /// `:`-separated `$FNO_CLAIMS_ROOT`); empty for the one-root dashboard.
    pub more_roots: Vec<Root>,
    /// Disable every mutating key (a, r, n, F).
    pub read_only: bool,
    /// No colour (also implied by a non-empty NO_COLOR).
    pub no_color: bool,
    /// Shown in the header when the root is the embedded demo sandbox.
    pub demo: bool,
    /// Show times in the local zone instead of UTC.
    pub local_time: bool,
    /// How the table opens: the operator's settings.
    pub opening: Opening,
}

/// What the claims table opens with, before any key is pressed.
#[derive(Debug, Clone, PartialEq)]
pub struct Opening {
    /// The `/` filter, as typed (empty: every claim).
    pub filter: String,
    pub sort: Sort,
    /// The columns to show (state and key always); empty: as many as the
    /// width fits.
    pub columns: Vec<ColumnId>,
    /// Commands the operator bound to other keys.
    pub keys: Overrides,
    /// How often the clock ticks, in ms (the settings' `refresh`).
    pub refresh_ms: i64,
}

impl Default for Opening {
    fn default() -> Opening {
        Opening {
            filter: String::new(),
            sort: Sort::default(),
            columns: Vec::new(),
            keys: Overrides::default(),
            refresh_ms: DEFAULT_TICK_MS,
        }
    }
}
