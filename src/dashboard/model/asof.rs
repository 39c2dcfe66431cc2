//! "As of": the claims table as it stood at one instant, rebuilt from the
//! events log's tenures through the history (`:asof TIME`, or `A` on the
//! timeline's cursor). While it shows, the live table waits underneath.

use crate::events::asof::HeldAt;

#[derive(Debug, Clone, PartialEq)]
pub struct AsOf {
    /// The instant shown (epoch ms).
    pub at: i64,
    /// The window of log asked for: its reply is this view's.
    pub window: (i64, i64),
    /// How many windows were asked (each narrower: see
    /// [`crate::events::asof::SPANS_MS`]).
    pub step: usize,
    /// The keys held then, by key; `None` while the log is being read.
    pub rows: Option<Vec<HeldAt>>,
    pub selected: usize,
}
