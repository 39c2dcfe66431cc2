//! "As of": the claims table as it stood at one instant, rebuilt from the
//! events log's tenures through the history (`:asof TIME`, or `A` on the
//! timeline's cursor). While it shows, the live table waits underneath.

use crate::events::asof::HeldAt;

#[derive(Debug, Clone, PartialEq)]
pub struct AsOf {
    /// The instant shown (epoch ms).
    pub at: i64,
    /// The keys held then, by key (over several roots, each naming its
    /// root); `None` while the logs are being read.
    pub rows: Option<Vec<HeldAt>>,
    /// The logs read can say of every key whether it was held then (see
    /// [`crate::events::asof::complete`]); when not, `span` is what they
    /// were read over.
    pub complete: bool,
    pub span: Option<(i64, i64)>,
    pub selected: usize,
    /// The row to select when the rows come: a key, and over several roots
    /// the label of its root (Enter on an event whose claim is gone).
    pub select: Option<(String, Option<String>)>,
}
