//! The one keymap table. Dispatch, the footer and the `?` help all read it,
//! so a key cannot work without being documented, or be documented without
//! working.

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
    /// Forget the selected row's offline host (`fleet forget`).
    ForgetHost,
}

impl Cmd {
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
    fn matches(self, ev: &KeyEvent) -> bool {
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        // Alt-x is another key than x (terminals send it as Esc x), never
        // an accidental x.
        if ev.modifiers.contains(KeyModifiers::ALT) {
            return false;
        }
        match (self, ev.code) {
            (Key::Ctrl(c), KeyCode::Char(got)) => ctrl && got.eq_ignore_ascii_case(&c),
            (Key::Char(c), KeyCode::Char(got)) => !ctrl && got == c,
            (Key::Code(c), got) => !ctrl && c == got,
            _ => false,
        }
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

const ALL: Scope = Scope::Global;
const TABLE: Scope = Scope::Panes(&[Pane::Table]);
const CLAIM: Scope = Scope::Panes(&[Pane::Table, Pane::Detail]);
const EVENTS: Scope = Scope::Panes(&[Pane::Events]);
const TIMELINE: Scope = Scope::Timeline;

/// The keymap. Order is the footer's and the help's order.
pub const KEYMAP: &[Binding] = &[
    Binding {
        keys: &[Key::Char('k'), Key::Code(KeyCode::Up)],
        label: "k/↑",
        short: "up",
        help: "move up (scroll the detail pane; in the events pane, browse the whole log back from its end)",
        cmd: Cmd::Up,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('j'), Key::Code(KeyCode::Down)],
        label: "j/↓",
        short: "down",
        help: "move down",
        cmd: Cmd::Down,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('g'), Key::Code(KeyCode::Home)],
        label: "g/Home",
        short: "top",
        help: "go to the first row",
        cmd: Cmd::Top,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('G'), Key::Code(KeyCode::End)],
        label: "G/End",
        short: "follow",
        help: "go to the last row; in the events pane, resume following",
        cmd: Cmd::Bottom,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Code(KeyCode::PageUp), Key::Ctrl('b')],
        label: "PgUp/C-b",
        short: "page up",
        help: "one page up",
        cmd: Cmd::PageUp,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Code(KeyCode::PageDown), Key::Ctrl('f')],
        label: "PgDn/C-f",
        short: "page down",
        help: "one page down",
        cmd: Cmd::PageDown,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Code(KeyCode::Tab)],
        label: "Tab",
        short: "pane",
        help: "switch pane (claims / detail / events)",
        cmd: Cmd::NextPane,
        scope: ALL,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Code(KeyCode::BackTab)],
        label: "S-Tab",
        short: "pane back",
        help: "switch pane backwards",
        cmd: Cmd::PrevPane,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('/')],
        label: "/",
        short: "filter",
        help: "filter claims: words match key, holder or reason; state:stale holder:… harness:…; in the events pane: search the whole log",
        cmd: Cmd::Filter,
        scope: ALL,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('s')],
        label: "s",
        short: "sort",
        help: "sort by the next column",
        cmd: Cmd::SortNext,
        scope: TABLE,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('S')],
        label: "S",
        short: "reverse",
        help: "reverse the sort order",
        cmd: Cmd::SortReverse,
        scope: TABLE,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('a')],
        label: "a",
        short: "acquire",
        help: "acquire a key (form: key, holder, TTL, reason)",
        cmd: Cmd::Acquire,
        scope: ALL,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('r')],
        label: "r",
        short: "release",
        help: "release the selected claim (only your own holder id)",
        cmd: Cmd::Release,
        scope: CLAIM,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('n')],
        label: "n",
        short: "renew",
        help: "renew the selected TTL claim for its holder",
        cmd: Cmd::Renew,
        scope: CLAIM,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('F')],
        label: "F",
        short: "force",
        help: "force-release the selected claim (archived to .expired/, audited)",
        cmd: Cmd::ForceRelease,
        scope: CLAIM,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('D')],
        label: "D",
        short: "forget host",
        help: "forget the selected row's offline publishing host, as `claimtop fleet forget HOST` does (asks first; refused while the host is online)",
        cmd: Cmd::ForgetHost,
        scope: CLAIM,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('f')],
        label: "f",
        short: "this key",
        help: "events pane: show only the selected claim's key (again: all)",
        cmd: Cmd::EventsForKey,
        scope: ALL,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('h')],
        label: "h",
        short: "hazards",
        help: "list hazards (mutex corpses, temp litter, corrupted, foreign)",
        cmd: Cmd::Hazards,
        scope: ALL,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Code(KeyCode::Enter)],
        label: "Enter",
        short: "open",
        help: "open the selected claim: the whole record, why, file, history",
        cmd: Cmd::Open,
        scope: CLAIM,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('n')],
        label: "n",
        short: "older match",
        help: "the next older line matching the search",
        cmd: Cmd::SearchOlder,
        scope: EVENTS,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('N')],
        label: "N",
        short: "newer match",
        help: "the next newer line matching the search",
        cmd: Cmd::SearchNewer,
        scope: EVENTS,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Code(KeyCode::Enter)],
        label: "Enter",
        short: "raw",
        help: "the selected event's raw JSON (k/↑ first browses the whole log)",
        cmd: Cmd::RawEvent,
        scope: EVENTS,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('t')],
        label: "t",
        short: "timeline",
        help: "timeline: every key's tenures over time, coloured by how each ended",
        cmd: Cmd::Timeline,
        scope: ALL,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('z')],
        label: "z",
        short: "zoom",
        help: "zoom the focused pane to the whole screen (again: all panes); Tab moves the zoom",
        cmd: Cmd::ZoomPane,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('h'), Key::Code(KeyCode::Left)],
        label: "h/←",
        short: "back",
        help: "move the time cursor one column back",
        cmd: Cmd::TimeBack,
        scope: TIMELINE,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('l'), Key::Code(KeyCode::Right)],
        label: "l/→",
        short: "forward",
        help: "move the time cursor one column forward",
        cmd: Cmd::TimeForward,
        scope: TIMELINE,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('H')],
        label: "H",
        short: "far back",
        help: "move the time cursor ten columns back",
        cmd: Cmd::TimeBackFar,
        scope: TIMELINE,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('L')],
        label: "L",
        short: "far forward",
        help: "move the time cursor ten columns forward",
        cmd: Cmd::TimeForwardFar,
        scope: TIMELINE,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('+'), Key::Char('=')],
        label: "+",
        short: "zoom in",
        help: "zoom in around the cursor (half the time across)",
        cmd: Cmd::ZoomIn,
        scope: TIMELINE,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('-')],
        label: "-",
        short: "zoom out",
        help: "zoom out around the cursor (twice the time across); G: back to now",
        cmd: Cmd::ZoomOut,
        scope: TIMELINE,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('y')],
        label: "y",
        short: "copy key",
        help: "copy the selected key to the clipboard (OSC 52: works over ssh and in tmux)",
        cmd: Cmd::Copy,
        scope: CLAIM,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('x')],
        label: "x",
        short: "clean",
        help: "clean what is provably abandoned (doctor --fix): lists it, then asks",
        cmd: Cmd::Clean,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('p')],
        label: "p",
        short: "pause",
        help: "pause / resume the view (data keeps being read)",
        cmd: Cmd::Pause,
        scope: ALL,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Char('?')],
        label: "?",
        short: "help",
        help: "this help",
        cmd: Cmd::Help,
        scope: ALL,
        in_footer: true,
    },
    Binding {
        keys: &[Key::Code(KeyCode::Esc)],
        label: "Esc",
        short: "close",
        help:
            "close a dialog, the help or the hazards list; clear the filter, then the f key filter",
        cmd: Cmd::Close,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Ctrl('z')],
        label: "C-z",
        short: "suspend",
        help: "suspend to the shell (fg resumes)",
        cmd: Cmd::Suspend,
        scope: ALL,
        in_footer: false,
    },
    Binding {
        keys: &[Key::Char('q'), Key::Ctrl('c')],
        label: "q",
        short: "quit",
        help: "quit (Ctrl-C too); asks first when you hold claims taken here",
        cmd: Cmd::Quit,
        scope: ALL,
        in_footer: true,
    },
];

/// The command `ev` means in `pane`, if any.
pub fn lookup(pane: Pane, ev: &KeyEvent) -> Option<Cmd> {
    KEYMAP
        .iter()
        .filter(|b| b.scope.covers(pane))
        .find(|b| b.keys.iter().any(|k| k.matches(ev)))
        .map(|b| b.cmd)
}

/// The command `ev` means in the timeline view: its own keys first, then
/// the movement, close, help and quit keys every view shares.
pub fn lookup_timeline(ev: &KeyEvent) -> Option<Cmd> {
    let own = KEYMAP
        .iter()
        .filter(|b| b.scope == Scope::Timeline)
        .find(|b| b.keys.iter().any(|k| k.matches(ev)))
        .map(|b| b.cmd);
    own.or_else(|| {
        lookup(Pane::Table, ev).filter(|c| {
            matches!(
                c,
                Cmd::Up
                    | Cmd::Down
                    | Cmd::PageUp
                    | Cmd::PageDown
                    | Cmd::Top
                    | Cmd::Bottom
                    | Cmd::Close
                    | Cmd::Help
                    | Cmd::Quit
                    | Cmd::Timeline
                    | Cmd::Pause
                    | Cmd::Suspend
            )
        })
    })
}

/// Is `ev` Ctrl-C? It quits from anywhere, dialogs and text inputs included.
pub fn is_interrupt(ev: &KeyEvent) -> bool {
    Key::Ctrl('c').matches(ev)
}

/// The bindings the footer shows for `pane`.
pub fn footer(pane: Pane, read_only: bool) -> impl Iterator<Item = &'static Binding> {
    KEYMAP
        .iter()
        .filter(move |b| b.in_footer && b.scope.covers(pane))
        .filter(move |b| !(read_only && b.cmd.mutates()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn every_key_is_bound_once_per_pane() {
        for pane in [Pane::Table, Pane::Detail, Pane::Events] {
            let mut seen: Vec<Key> = Vec::new();
            for b in KEYMAP.iter().filter(|b| b.scope.covers(pane)) {
                for k in b.keys {
                    assert!(!seen.contains(k), "{k:?} bound twice in {pane:?}");
                    seen.push(*k);
                }
            }
        }
    }

    #[test]
    fn release_is_not_a_key_of_the_events_pane() {
        assert_eq!(
            lookup(Pane::Table, &key(KeyCode::Char('r'))),
            Some(Cmd::Release)
        );
        assert_eq!(lookup(Pane::Events, &key(KeyCode::Char('r'))), None);
    }

    #[test]
    fn ctrl_c_quits_but_plain_c_does_nothing() {
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(lookup(Pane::Table, &ctrl_c), Some(Cmd::Quit));
        assert!(is_interrupt(&ctrl_c));
        assert_eq!(lookup(Pane::Table, &key(KeyCode::Char('c'))), None);
    }

    #[test]
    fn alt_slash_is_not_slash() {
        let alt = KeyEvent::new(KeyCode::Char('/'), KeyModifiers::ALT);
        assert_eq!(lookup(Pane::Table, &alt), None);
        assert_eq!(
            lookup(Pane::Table, &key(KeyCode::Char('/'))),
            Some(Cmd::Filter)
        );
    }

    #[test]
    fn every_bound_control_key_is_spelled_in_its_label() {
        for b in KEYMAP {
            for k in b.keys {
                if let Key::Ctrl(c) = k {
                    let spelled = format!("C-{c}");
                    assert!(
                        b.label.contains(&spelled)
                            || b.help.contains(&format!("Ctrl-{}", c.to_ascii_uppercase())),
                        "{:?} is bound to Ctrl-{c} but neither label {:?} nor help says so",
                        b.cmd,
                        b.label
                    );
                }
            }
        }
    }

    #[test]
    fn read_only_footer_hides_the_mutating_keys() {
        assert!(footer(Pane::Table, false).any(|b| b.cmd == Cmd::ForceRelease));
        assert!(!footer(Pane::Table, true).any(|b| b.cmd.mutates()));
    }
}
