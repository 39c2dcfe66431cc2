//! What a binding is: the panes, the commands, the keys, where a binding
//! applies.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Which pane has the focus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pane {
    Table,
    Detail,
    Events,
}

impl Pane {
    pub fn next(self) -> Pane {
        match self {
            Pane::Table => Pane::Detail,
            Pane::Detail => Pane::Events,
            Pane::Events => Pane::Table,
        }
    }

    pub fn prev(self) -> Pane {
        match self {
            Pane::Table => Pane::Events,
            Pane::Detail => Pane::Table,
            Pane::Events => Pane::Detail,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Pane::Table => "claims",
            Pane::Detail => "detail",
            Pane::Events => "events",
        }
    }
}

/// What a key press asks for, before the model decides what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cmd {
    Up,
    Down,
    Top,
    Bottom,
    PageUp,
    PageDown,
    NextPane,
    PrevPane,
    Filter,
    SortNext,
    SortReverse,
    Acquire,
    Release,
    Renew,
    ForceRelease,
    Pause,
    Hazards,
    EventsForKey,
    Help,
    Open,
    Copy,
    Clean,
    Close,
    Suspend,
    Quit,
    /// The timeline view (`t`).
    Timeline,
    /// Events pane: the next line matching the search, older / newer.
    SearchOlder,
    SearchNewer,
    /// Events pane: the selected line's raw JSON.
    RawEvent,
    /// Timeline: the cursor one column (or ten) back / forward in time.
    TimeBack,
    TimeForward,
    TimeBackFar,
    TimeForwardFar,
    ZoomIn,
    ZoomOut,
    /// The focused pane fills the screen, or shares it again (`z`).
    ZoomPane,
    /// The command line (`:`).
    Prompt,
    /// Forget the selected row's offline host (`fleet forget`).
    ForgetHost,
    /// Timeline: the claims table as it stood at the cursor's instant.
    AsOfCursor,
    /// Mark or unmark the selected row (space): F, r and n then act on
    /// every marked row.
    Mark,
    /// Mark every row the table shows (Ctrl-Space, as k9s over a filter).
    MarkAll,
    /// Drop every mark (Ctrl-\, as k9s; U, as htop).
    ClearMarks,
    /// This session's messages and op results, in full.
    Messages,
}

impl Cmd {
    /// The name `:` knows the command by (`:release`, `:timeline`); none
    /// for the motions and the keys of one view, which mean nothing typed.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Cmd::Filter => "filter",
            Cmd::SortNext => "sort-next",
            Cmd::SortReverse => "sort-reverse",
            Cmd::Acquire => "acquire",
            Cmd::Release => "release",
            Cmd::Renew => "renew",
            Cmd::ForceRelease => "force-release",
            Cmd::Pause => "pause",
            Cmd::Hazards => "hazards",
            Cmd::EventsForKey => "events-for-key",
            Cmd::Help => "help",
            Cmd::Open => "open",
            Cmd::Copy => "copy",
            Cmd::Clean => "clean",
            Cmd::Quit => "quit",
            Cmd::Timeline => "timeline",
            Cmd::ZoomPane => "zoom",
            Cmd::Mark => "mark",
            Cmd::MarkAll => "mark-all",
            Cmd::ClearMarks => "clear-marks",
            Cmd::ForgetHost => "forget-host",
            Cmd::Messages => "messages",
            Cmd::Suspend => "suspend",
            Cmd::Up
            | Cmd::Down
            | Cmd::Top
            | Cmd::Bottom
            | Cmd::PageUp
            | Cmd::PageDown
            | Cmd::NextPane
            | Cmd::PrevPane
            | Cmd::Close
            | Cmd::SearchOlder
            | Cmd::SearchNewer
            | Cmd::RawEvent
            | Cmd::TimeBack
            | Cmd::TimeForward
            | Cmd::TimeBackFar
            | Cmd::TimeForwardFar
            | Cmd::ZoomIn
            | Cmd::ZoomOut
            | Cmd::AsOfCursor
            | Cmd::Prompt => return None,
        })
    }

    /// Commands that write under the root; `--read-only` refuses them.
    pub fn mutates(self) -> bool {
        matches!(
            self,
            Cmd::Acquire
                | Cmd::Release
                | Cmd::Renew
                | Cmd::ForceRelease
                | Cmd::Clean
                | Cmd::ForgetHost
        )
    }
}

/// A key as the table spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Code(KeyCode),
}

impl Key {
    pub(super) fn matches(self, ev: &KeyEvent) -> bool {
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        // Alt-x is another key than x (terminals send it as Esc x), never
        // an accidental x.
        if ev.modifiers.contains(KeyModifiers::ALT) {
            return false;
        }
        match (self, ev.code) {
            (Key::Ctrl(c), KeyCode::Char(got)) => {
                ctrl && (got.eq_ignore_ascii_case(&c) || Some(got) == legacy_ctrl(c))
            }
            (Key::Char(c), KeyCode::Char(got)) => !ctrl && got == c,
            (Key::Code(c), got) => !ctrl && c == got,
            _ => false,
        }
    }
}

/// What a terminal without the kitty protocol reports for Ctrl and `c`:
/// Ctrl-\ sends 0x1C, which reads back as Ctrl-4.
fn legacy_ctrl(c: char) -> Option<char> {
    match c {
        '\\' => Some('4'),
        _ => None,
    }
}

/// Where a binding works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every pane.
    Global,
    /// Only these panes.
    Panes(&'static [Pane]),
    /// Only in the timeline view (which covers every pane).
    Timeline,
}

impl Scope {
    pub fn covers(self, pane: Pane) -> bool {
        match self {
            Scope::Global => true,
            Scope::Panes(ps) => ps.contains(&pane),
            Scope::Timeline => false,
        }
    }
}

pub struct Binding {
    pub keys: &'static [Key],
    /// How the footer and help spell the keys.
    pub label: &'static str,
    /// One or two words for the footer.
    pub short: &'static str,
    /// The help line.
    pub help: &'static str,
    pub cmd: Cmd,
    pub scope: Scope,
    /// Shown in the footer (the movement keys are too obvious to spend
    /// the width on).
    pub in_footer: bool,
}
