//! What sits over the panes: the overlays, the dialogs (forms and
//! confirmations), and the status line's message. Which of them are open
//! is the layer stack's to say ([`super::mode::Modes`]).

use crate::claims::{ClaimState, Hazard};

/// The TTL the acquire form offers, and a renewal when the log does not
/// say what was asked.
pub const DEFAULT_ACQUIRE_TTL: &str = "30m";
/// [`DEFAULT_ACQUIRE_TTL`] in milliseconds.
pub const DEFAULT_ACQUIRE_TTL_MS: i64 = 30 * 60_000;
use crate::dashboard::input::TextInput as Input;

#[derive(Debug, Clone, PartialEq)]
pub struct AcquireForm {
    pub key: Input,
    pub holder: Input,
    /// Empty = PID-bound to this dashboard process.
    pub ttl: Input,
    pub reason: Input,
    /// Which field has the cursor (0..4).
    pub field: usize,
    pub error: Option<String>,
    /// With several roots: which root to acquire in, typed as its label
    /// (a fifth field, offered as the selected row's root). Boxed: most
    /// dashboards have one root and never show it.
    pub root: Option<Box<Input>>,
}

impl AcquireForm {
    pub const LABELS: [&'static str; 4] = ["key", "holder", "ttl", "reason"];

    /// How many fields Tab cycles through.
    pub fn field_count(&self) -> usize {
        4 + usize::from(self.root.is_some())
    }

    pub fn field_mut(&mut self) -> &mut Input {
        match (self.field, &mut self.root) {
            (0, _) => &mut self.key,
            (1, _) => &mut self.holder,
            (2, _) => &mut self.ttl,
            (4, Some(root)) => root,
            _ => &mut self.reason,
        }
    }

    pub fn fields(&self) -> [&Input; 4] {
        [&self.key, &self.holder, &self.ttl, &self.reason]
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RenewForm {
    pub key: String,
    /// The root the claim lives in (an index into the dashboard's roots).
    pub root: usize,
    pub holder: String,
    pub pid: i32,
    pub state: ClaimState,
    pub ttl: Input,
    /// Where the offered TTL comes from, in words.
    pub offered: String,
    /// The holder is not the operator: ask before acting on its behalf.
    pub foreign: bool,
    /// The "not yours, really?" question is showing.
    pub confirming: bool,
    pub error: Option<String>,
}

/// The force-release confirmation: everything the operator is about to
/// archive, and the guard taken from the record shown.
#[derive(Debug, Clone, PartialEq)]
pub struct ForceConfirm {
    pub key: String,
    /// The root the claim lives in (an index into the dashboard's roots).
    pub root: usize,
    pub holder: Option<String>,
    pub pid: Option<i32>,
    pub state: ClaimState,
    pub why: String,
    pub acquired_at: Option<i64>,
    /// A claim that may be held (live, or unreadable) needs the key typed
    /// in full.
    pub typed: Input,
    pub error: Option<String>,
    /// Set for a host's published copy: the force-release is asked of that
    /// host's publisher, which carries it out in its own root.
    pub host: Option<super::fleet::Origin>,
}

impl ForceConfirm {
    pub fn needs_typed_key(&self) -> bool {
        self.state.may_be_held()
    }
}

/// Quitting while holding claims taken here: they are bound to this
/// process, so they turn Suspect or Stale the moment it exits.
#[derive(Debug, Clone, PartialEq)]
pub struct QuitConfirm {
    /// The operator's own claims, by key.
    pub keys: Vec<String>,
    /// The root of each of `keys`, in the same order.
    pub roots: Vec<usize>,
}

/// `doctor --fix` from the dashboard: what it will remove, shown first.
#[derive(Debug, Clone, PartialEq)]
pub struct CleanConfirm {
    pub hazards: Vec<Hazard>,
}

/// F, r or n over the marked rows: every claim it acts on, listed before
/// anything is done, and the ones it leaves alone with the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkConfirm {
    pub verb: BulkVerb,
    pub items: Vec<BulkItem>,
    /// Marked claims the verb does not apply to: (key, why).
    pub skipped: Vec<(String, String)>,
    /// Of `items`, how many the table's filter hides: said first, so a
    /// verb never acts on a claim out of sight without the operator told.
    pub hidden: usize,
    /// When a force-release takes a claim that may be held, the number of
    /// claims is typed in full (the one-key guard of F, for many).
    pub typed: Input,
    pub error: Option<String>,
}

impl BulkConfirm {
    pub fn needs_typed_count(&self) -> bool {
        self.verb == BulkVerb::ForceRelease && self.items.iter().any(|i| i.state.may_be_held())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkVerb {
    Release,
    Renew,
    ForceRelease,
}

impl BulkVerb {
    pub fn words(self) -> &'static str {
        match self {
            BulkVerb::Release => "release",
            BulkVerb::Renew => "renew",
            BulkVerb::ForceRelease => "force-release",
        }
    }
}

/// One claim of a bulk verb, with the guard taken from the row shown.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkItem {
    pub key: String,
    /// The root the claim lives in (an index into the dashboard's roots).
    pub root: usize,
    pub holder: Option<String>,
    pub state: ClaimState,
    pub acquired_at: Option<i64>,
    /// A renewal's TTL: the one last asked for this tenure, or the default.
    pub ttl_ms: Option<i64>,
    /// A host's published copy: the force-release is asked of its host.
    pub host: Option<super::fleet::Origin>,
}

/// Esc with more marks than a screen shows: dropping them is asked first
/// (marking them again may take as many presses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarksConfirm {
    pub marked: usize,
    /// Of them, how many the filter hides.
    pub hidden: usize,
}

/// The question `D` asks before an offline host is forgotten.
#[derive(Debug, Clone, PartialEq)]
pub struct ForgetConfirm {
    pub host_id: String,
    /// As the hosts line names it.
    pub label: String,
    pub last_seen_ms: i64,
    /// Its rows the table shows now (its last known claims).
    pub rows: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Dialog {
    Acquire(AcquireForm),
    Renew(RenewForm),
    ForceRelease(ForceConfirm),
    Quit(QuitConfirm),
    Clean(CleanConfirm),
    /// `x` on one entry of the `h` list: that entry alone.
    CleanOne(Box<Hazard>),
    Bulk(BulkConfirm),
    /// `D`: forget an offline publishing host.
    ForgetHost(ForgetConfirm),
    /// Esc over many marks: drop them all?
    ClearMarks(MarksConfirm),
}

/// What can sit over the panes. A new view is one more variant here, one
/// arm in `view::draw` and a row in the keymap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    Help,
    Hazards,
    /// The selected claim in full (Enter).
    Claim,
    /// Every key's tenures over time (`t`), over the whole screen.
    Timeline,
    /// This session's messages and op results, in full (`m`).
    Messages,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Ok,
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StatusMsg {
    pub text: String,
    pub level: Level,
    /// When it was said (the model's clock): it goes away by itself.
    pub at: i64,
}

impl StatusMsg {
    /// How long a message stays: errors longer, since they may need reading.
    pub fn lifetime_ms(&self) -> i64 {
        match self.level {
            Level::Error => 20_000,
            Level::Info | Level::Ok => 8_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_ttl_in_words_and_in_milliseconds_agree() {
        assert_eq!(
            crate::time::parse_ttl_ms(DEFAULT_ACQUIRE_TTL),
            Some(DEFAULT_ACQUIRE_TTL_MS)
        );
    }
}
