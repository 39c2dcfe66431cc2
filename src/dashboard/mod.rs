//! The interactive dashboard: a live view of one claims root and its events
//! log, with acquire / release / renew / force-release going through the same
//! verbs as the CLI.

use crate::claims::Root;

/// How the dashboard was asked to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub root: Root,
    /// Disable every mutating key (a, r, n, F).
    pub read_only: bool,
    /// No colour (also implied by a non-empty NO_COLOR).
    pub no_color: bool,
    /// Shown in the header when the root is the embedded demo sandbox.
    pub demo: bool,
}

/// Run the dashboard until the operator quits.
pub fn run(opts: Options) -> std::io::Result<()> {
    let _ = opts;
    Err(std::io::Error::other("the dashboard is not built yet"))
}
